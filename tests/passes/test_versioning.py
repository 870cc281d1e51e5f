"""Loop versioning for bounds checks (passes/versioning.py): one check before a loop.

Each loop below runs on random sizes, in range and not (an `out` shorter than `x`,
negative indices, which count from the end, empty ranges), under CPython, compiled, and
in the interpreter before and after the pass (which asserts every `inbounds` claim): the
same result, or the same IndexError at the same iteration, after the same writes.
"""
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.api import clone_module
from astjit.dispatch import Signature
from astjit.frontend import lower_function
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.passes.pipeline import optimize
from astjit.ir.passes.versioning import version_loops
from astjit.ir.verify import verify_module


def prefix(x, out):
    acc = 0.0
    for i in range(len(x)):
        acc += x[i]
        out[i] = acc
    return acc


def stencil(x, y, lo, hi):
    for i in range(lo, hi):
        y[i] = x[i - 1] - 2.0 * x[i] + x[i + 1]
    return 0


def strided(x, y, k):
    for i in range(0, len(y), 3):
        y[i] = x[2 * i + k]
    return 0


def backwards(x, y, k):
    for i in range(len(y) - 1, k, -2):
        y[i] = x[-i + len(y) - 1]
    return 0


def matvec(a, x, y):
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * x[j]
        y[i] = s
    return 0


def triangular(a, y):
    for i in range(len(y)):
        s = 0.0
        for j in range(i + 1):
            s += a[i, j]
        y[i] = s
    return 0


def rows(a, y, k):
    for i in range(len(y)):
        row = a[i + k]
        y[i] = row[0] + row[len(row) - 1]
    return 0


def early_exit(x, y, stop):
    for i in range(len(x)):
        if x[i] > stop:
            break
        y[i] = x[i]
    return 0


def counted_while(x, y):
    i = 1
    while i < len(x):
        y[i - 1] = x[i] * 2.0
        i += 1
    return 0


def windows(x, out, k):
    """Views the loop makes and indexes: checked once where their slices are not clamped."""
    for i in range(len(out)):
        w = x[i + k:i + k + 3]
        v = x[:i + 1]
        out[i] = w[0] + w[2] + v[i]
    return 0


def blocks(a, out, k):
    for i in range(len(out)):
        b = a[i:i + 2, k]
        out[i] = b[0] - b[1]
    return 0


def binned(x, counts, nbins):
    for i in range(len(x)):
        counts[int(x[i] * nbins)] += 1
    return 0


def float_arrays(n):
    return np.random.default_rng(n).standard_normal(n)


SIZES = st.integers(0, 9)
SHIFTS = st.integers(-12, 12)


def cases(draw):
    """(fn, args) for each loop, with sizes that put the indices in range or not."""
    n, m, k = draw(SIZES), draw(SIZES), draw(SHIFTS)
    lo, hi = draw(SHIFTS), draw(SHIFTS)
    x, y = float_arrays(n), np.zeros(m)
    a = np.arange(float(n * m)).reshape(n, m)
    # A data-dependent index into a contiguous array or a strided view (the checked loop).
    counts = np.zeros(max(m, 1) * 2, np.int64)[::draw(st.sampled_from([1, 2]))]
    return [(prefix, (x, y)), (stencil, (x, y, lo, hi)), (strided, (x, y, k)),
            (backwards, (x, y, k)), (matvec, (a, float_arrays(draw(SIZES)), y)),
            (triangular, (a, y)), (rows, (a, y, k)), (early_exit, (x, y, float(k) / 4)),
            (counted_while, (x, y)), (binned, (x / 2, counts, draw(SIZES))),
            (windows, (x, y, k)), (blocks, (a, y, k))]


def run(fn, args):
    """The result, or the exception's type and message; with the arrays as left."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        result = ("value", fn(*args))
    except IndexError as error:
        result = ("IndexError", str(error).split(" (at ")[0])
    return result, [a for a in args if isinstance(a, np.ndarray)]


def same(expected, got):
    (result, arrays), (result2, arrays2) = expected, got
    return result == result2 and all(np.array_equal(a, b) for a, b in zip(arrays, arrays2))


def typed_module(fn, args):
    signature = Signature(fn)
    values = signature.bind(args, {})
    return infer_types(lower_function(fn), list(signature.types_of(values))), values


jitted = functools.cache(jit)
"""One compiled function each for all examples: each signature compiles once."""


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.data())
def test_versioned_loops_raise_where_and_as_the_checked_ones(data):
    for fn, args in cases(data.draw):
        expected = run(fn, args)
        got = run(jitted(fn), args)
        assert same(expected, got), f"{fn.__name__}{args}: CPython {expected}, jit {got}"


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.data())
def test_the_interpreter_checks_every_claim_of_the_pass(data):
    for fn, args in cases(data.draw):
        typed, values = typed_module(fn, args)
        optimized = optimize(clone_module(typed), verify=verify_module)
        before = run(lambda *a: interpret(typed, list(a)), values)
        after = run(lambda *a: interpret(optimized, list(a)), values)
        assert same(before, after), f"{fn.__name__}{args}: before {before}, after {after}"


@pytest.mark.parametrize("fn,args,hoisted", [
    (prefix, (np.ones(4), np.ones(4)), ["x", "out"]),
    (stencil, (np.ones(4), np.ones(4), 1, 3), ["y", "x"]),
    (matvec, (np.ones((2, 3)), np.ones(3), np.ones(2)), ["a", "x", "y"]),
    (rows, (np.ones((2, 3)), np.ones(2), 0), ["a", "y"]),
    (counted_while, (np.ones(4), np.ones(4)), ["y", "x"]),
    (windows, (np.ones(6), np.ones(3), 1), ["w", "v", "out"]),
    (blocks, (np.ones((4, 3)), np.ones(3), 1), ["b", "out"]),
])
def test_the_dumps_say_which_checks_were_hoisted(fn, args, hoisted):
    optimized = jit(fn).ir(*args, stage="optimized")
    assert "inbounds=True" in optimized
    llvm = jit(fn).ir(*args, stage="llvm-opt")
    assert "checks.hoisted: " in llvm
    for name in hoisted:
        assert f"{name}[] line" in optimized and f"{name}[] line" in llvm


def gather(x, index, out):
    for k in range(len(index)):
        out[k] = x[index[k]]
    return 0


def test_indices_not_affine_keep_their_checks():
    """x[index[k]] stays checked; the fast loop only takes x's stride to be 1 (checked
    before the loop with the ranges), so that its address needs no multiplication."""
    args = (np.ones(3), np.zeros(3, np.int64), np.ones(3))
    text = jit(gather).ir(*args, stage="optimized")
    assert "index[] line" in text and "out[] line" in text
    line = gather.__code__.co_firstlineno + 2
    assert f"x[] line {line} (stride 1)" in text and "array_unit_stride %x" in text
    typed, _ = typed_module(gather, args)
    module = optimize(clone_module(typed))
    fast = next(n for n in module.entry_graph.nodes if n.op == "if").regions[0]
    (read,) = [n for n in fast.walk() if n.op == "array_get" and n.inputs[0].name.startswith("x")]
    assert read.attrs == {"unit_stride": True}
    for x in (np.arange(5.0), np.arange(10.0)[::2], np.arange(10.0)[::-2]):
        index, got, expected = np.array([4, -1, 0, 2]), np.zeros(4), np.zeros(4)
        gather(x, index, expected)
        jit(gather)(x, index, got)
        assert np.array_equal(got, expected)


def test_a_nest_is_checked_once_before_the_outer_loop():
    typed, _ = typed_module(matvec, (np.ones((2, 3)), np.ones(3), np.ones(2)))
    module = version_loops(optimize(clone_module(typed), fuse=False))
    verify_module(module)
    top = [node.op for node in module.entry_graph.nodes]
    assert top.count("if") == 1 and "while" not in top  # the outer loop, versioned whole
    fast = next(n for n in module.entry_graph.nodes if n.op == "if").regions[0]
    accesses = [n for n in fast.walk() if n.op in ("array_get", "array_set")]
    assert accesses and all(n.attrs.get("inbounds") for n in accesses)


def shifted(x, y, k):
    for i in range(k, len(y)):
        y[i] = 2.0 * x[i - k]
    return 0


def test_unchecked_loops_are_versioned_too():
    """boundscheck=False keeps the negative-index wrap; the fast loop drops it as well, and
    vectorizes where LLVM could not prove i - k non-negative."""
    text = jit(shifted, boundscheck=False).ir(np.ones(8), np.ones(8), 2, stage="llvm-opt")
    assert "x double>" in text
    x, args = float_arrays(6), (1, 5)
    assert "inbounds=True" in jit(stencil, boundscheck=False).ir(x, np.zeros(6), *args,
                                                                   stage="optimized")
    expected, got = np.zeros(6), np.zeros(6)
    stencil(x, expected, *args)
    jit(stencil, boundscheck=False)(x, got, *args)
    assert np.array_equal(expected, got)


def clamp_sum_printing(x, n):
    s = 0.0
    for i in range(n):
        v = x * i - 3.0
        if v > 10.0:
            v = 10.0
        elif v < -10.0:
            print("here")
            v = -10.0
        s += v
    return s


def test_a_loop_with_a_print_compiles():
    """A node without inputs (print) in a loop: the pass read its first input (IndexError);
    found by tests/e2e/test_mutants.py."""
    assert jit(clamp_sum_printing)(1.5, 12) == clamp_sum_printing(1.5, 12)
