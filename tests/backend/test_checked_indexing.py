"""float -> int conversions and element indices on their hot paths (conversions.py,
array_layout.element_pointer): compiled against CPython at the edges.

The conversion tests one thing per value (on x86-64 the instruction's answer, elsewhere
|x| against 2**63) and sorts NaN, the infinities and the range out on a cold path; an
index takes one unsigned compare, the negative-index rule and the IndexError on a cold
path, and `a[k] += 1` checks `k` once. Each case compares the result, or the exception's
type and message, and the arrays as the loop left them.
"""
import math
import re
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


JITTED = {fn: jit(fn) for fn in (histogram, truncate, bump)}
"""One compiled function each for all examples: each signature compiles once."""


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck),
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
        expected, got = outcome(with_int64(fn), *args), outcome(JITTED[fn], *args)
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


def blocks_converting(text: str) -> list[str]:
    """The LLVM blocks (unoptimized) holding a conversion instruction."""
    blocks = re.split(r"\n(?=\S+:\n)", text.split("\ndeclare", 1)[0])
    return [b for b in blocks if re.search(r"call i64 @\S*cvttsd2si64", b)]


@pytest.mark.skipif(not jit(to_int).ir(1.0, stage="llvm").count("cvttsd2si64"),
                    reason="the conversion's one-test form is x86-64's")
@pytest.mark.parametrize("boundscheck", [True, False])
def test_an_index_from_int_of_a_float_is_tested_once(boundscheck):
    """`counts[int(x)]`: the conversion's test waits on the index check's cold path, so the
    hot path compares the index with the length only (the lowest int fails that too)."""
    text = jit(histogram, boundscheck=boundscheck).ir(np.zeros(3), np.zeros(4, np.int64), 4,
                                                      stage="llvm")
    blocks = blocks_converting(text)
    # the loop and its checked version (passes/versioning.py), each in the two versions of
    # a flat counted loop (backend/llvm/interrupts.py `long_trip`)
    assert len(blocks) == 4
    for block in blocks:
        assert "-9223372036854775808" not in block and "icmp uge" in block, block


def test_a_failed_index_reports_its_numbers_off_the_hot_path():
    """The IndexError's index travels to the wrapper from the cold path: the loop extractor
    stores a value passed out of a loop where it is defined (emitter.fail_with_values)."""
    text = jit(histogram).ir(np.zeros(3), np.zeros(4, np.int64), 4, stage="llvm-opt")
    # Not the hot path: the loops that run past 2^20 iterations, which check for signals, and
    # a loop's exit passing its counter out to the merge of both versions (interrupts.py).
    text = "\ndefine ".join(f for f in text.split("\ndefine ") if "astjit.signals" not in f)
    stores = [b for b in re.split(r"\n(?=\S+:)", text) if re.search(r"store i64 .*\.out,", b)
              and not b.startswith("common.ret:")]
    # Where the index was outside [0, len): with the negative-index rule's compare.
    assert stores and all("icmp slt" in b for b in stores), stores


UNCHECKED_SAFE = [TOP, math.nextafter(TOP, math.inf), math.nextafter(-TOP, -math.inf), 1e300,
                  -1e300, math.inf, -math.inf, math.nan, 0.25, -0.25, 0.99, -0.6, 0.0, -0.0]
"""Values whose int(x * nbins) is a conversion error or an index within [-nbins, nbins):
with boundscheck=False an index outside is undefined, a conversion error is not."""


UNCHECKED_HISTOGRAM = jit(histogram, boundscheck=False)
"""Compiled once for all examples."""


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.integers(0, 12), st.integers(1, 8), st.data())
def test_unchecked_indices_keep_the_conversion_errors(n, nbins, data):
    """boundscheck=False trusts indices, not floats: int(NaN) as an index is still
    ValueError, an infinity or past int64 OverflowError, at the same iteration."""
    x = np.array(data.draw(st.lists(st.sampled_from(UNCHECKED_SAFE), min_size=n, max_size=n)))
    args = (x, np.zeros(nbins, np.int64), 1)
    expected = outcome(with_int64(histogram), *args)
    assert same(expected, outcome(UNCHECKED_HISTOGRAM, *args))


def convert_then_read(x, a, j, counts):
    k = int(x)
    v = a[j]
    counts[k] += v
    return k


def convert_two(grid, x, y):
    grid[int(x), int(y)] += 1.0
    return 0


@pytest.mark.parametrize("boundscheck", [True, False])
def test_a_conversion_error_comes_before_what_follows_it(boundscheck):
    """int(x)'s check waits only for nodes that cannot raise or act: a read of another
    array, or a second conversion, has it emitted first, as Python raises it first."""
    compiled = jit(convert_then_read, boundscheck=boundscheck)
    a, counts = np.arange(3), np.zeros(3, np.int64)
    for x, j in [(math.nan, 7), (math.inf, 7), (1.5, 1), (-1.5, 2), (math.nan, 1)]:
        if not boundscheck and -3 <= j < 3 or math.isnan(x) or math.isinf(x):
            assert same(outcome(with_int64(convert_then_read), x, a, j, counts),
                        outcome(compiled, x, a, j, counts)), (x, j)
    grid = np.zeros((2, 3))
    two = jit(convert_two, boundscheck=boundscheck)
    for x, y in [(math.nan, 1.0), (1.0, math.nan), (5.0, math.nan), (math.inf, 9.0),
                 (-1.0, -2.0), (1.0, 2.5)]:
        assert same(outcome(with_int64(convert_two), grid, x, y), outcome(two, grid, x, y)), (x, y)
