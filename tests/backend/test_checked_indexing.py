"""float -> int conversions and element indices on their hot paths (conversions.py,
array_layout.element_pointer): compiled against CPython at the edges.

The conversion tests one thing per value (on x86-64 the instruction's answer, elsewhere
|x| against 2**63) and sorts NaN, the infinities and the range out on a cold path; an
index takes one unsigned compare, the negative-index rule and the IndexError on a cold
path, and `a[k] += 1` checks `k` once. Each case compares the result, or the exception's
type and message, and the arrays as the loop left them.
"""
import math
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astjit import jit

TOP = 2.0 ** 63
EDGES = [TOP, -TOP, math.nextafter(TOP, 0), math.nextafter(TOP, math.inf),
         math.nextafter(-TOP, 0), math.nextafter(-TOP, -math.inf), 2.0 ** 62, -(2.0 ** 62),
         0.0, -0.0, 5e-324, -5e-324, math.nextafter(1.0, 0), -math.nextafter(1.0, 0), 1.0,
         -1.0, 0.5, -0.5, 1e300, -1e300, math.inf, -math.inf, math.nan, -math.nan]


def outcome(fn, *args):
    """The result, or the exception's type and message (without the source location);
    with the arrays as left (on copies)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        result = ("value", fn(*args))
    except (ValueError, OverflowError, IndexError) as error:
        result = (type(error).__name__, str(error).split(" (at ")[0])
    return result, [a for a in args if isinstance(a, np.ndarray)]


def same(expected, got):
    (result, arrays), (result2, arrays2) = expected, got
    return result == result2 and all(np.array_equal(a, b, equal_nan=True) for a, b in zip(arrays, arrays2))


def int64(v):
    """Python's int(v), where compiled code's int64 has room for it."""
    if isinstance(v, (float, np.floating)) and math.isfinite(v) and not -TOP <= v < TOP:
        raise OverflowError("float too large to convert to int64")
    return int(v)


def with_int64(fn):
    """`fn` in CPython, its int() being int64()."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, "int": int64})


def to_int(v):
    return int(v)


def test_int_of_a_float_at_the_edges():
    """What CPython gives; past int64 compiled code's OverflowError (docs/semantics.md)."""
    compiled = jit(to_int)
    for v in EDGES:
        assert same(outcome(with_int64(to_int), v), outcome(compiled, v)), v


def histogram(x, counts, nbins):
    for i in range(len(x)):
        counts[int(x[i] * nbins)] += 1
    return 0


def truncate(x, out):
    for i in range(len(x)):
        out[i] = int(x[i])
    return 0


def bump(counts, keys):
    for k in range(len(keys)):
        counts[keys[k]] += 1
    return 0


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.integers(0, 12), st.integers(1, 8), st.data())
def test_a_loop_raises_where_and_as_cpython(n, nbins, data):
    """A bad value (NaN, infinite, past int64, a bin past the end or below -len) at a random
    iteration: the same error after the same writes; negative bins count from the end."""
    x = np.array(data.draw(st.lists(st.sampled_from([*EDGES, 0.25, -0.25, 0.99, -0.6]),
                                    min_size=n, max_size=n)), dtype=np.float64)
    keys = np.array(data.draw(st.lists(st.integers(-2 * nbins, 2 * nbins), min_size=n,
                                       max_size=n)), dtype=np.int64)
    counts = np.zeros(nbins, np.int64)
    for fn, args in [(histogram, (x / 1e300, counts, nbins)), (histogram, (x, counts, nbins)),
                     (truncate, (x, np.zeros(n, np.int64))), (bump, (counts, keys)),
                     (truncate, (x.astype(np.float32), np.zeros(n, np.int64)))]:
        expected, got = outcome(with_int64(fn), *args), outcome(jit(fn), *args)
        assert same(expected, got), f"{fn.__name__}{args}: CPython {expected}, jit {got}"


def test_unchecked_indices_still_count_from_the_end():
    keys = np.array([-1, 0, -3, 2, -2, 1, -1], np.int64)
    expected, got = np.zeros(3, np.int64), np.zeros(3, np.int64)
    bump(expected, keys)
    jit(bump, boundscheck=False)(got, keys)
    assert np.array_equal(got, expected)


def bump_one(counts, k):
    counts[k] += 1
    return 0


@pytest.mark.parametrize("boundscheck", [True, False])
def test_a_read_modify_write_finds_its_element_once(boundscheck):
    text = jit(bump_one, boundscheck=boundscheck).ir(np.zeros(3, np.int64), 1, stage="llvm")
    assert text.count('icmp uge i64 %"k"') == 1  # the read's `k <u len`; the write reuses it
    compiled = jit(bump_one, boundscheck=boundscheck)
    for k in range(-3, 3):
        counts = np.zeros(3, np.int64)
        compiled(counts, k)
        assert counts[k] == 1 and counts.sum() == 1
