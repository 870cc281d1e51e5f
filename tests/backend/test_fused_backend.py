"""The CPU lowering of `fused` (backend/llvm/fused.py): values against NumPy, dtypes,
broadcasting, shape errors, NumPy's no-exception semantics, strided inputs, and no leaks."""
import gc
import itertools
import re
import tracemalloc

import numpy as np
import pytest

from astjit import CompileError, jit


def expression(x, y):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x)


def mix(a, b, s):
    return a * b + s - b / 2.0


def column(a, c):
    return a - c.reshape((c.shape[0], 1))


def arith(a, b):
    return a + b * 2 - a * b


def divisions(a, b):
    return a / b, a // b, a % b


def math_domain(x):
    return np.sqrt(x), np.log(x), np.exp(x * 1000.0)


def compare_where(x, y):
    return np.where(x < y, x, y * 2.0), np.minimum(x, y), np.maximum(x, y)


def bools(p, q):
    return p == q, np.where(p, q, p), p + 1.5, p < q


def add(a, b):
    return a + b


def two_outputs(x, m):
    a = x * 2.0
    return a, a + m


def int_power(a, b):
    return a ** b


RNG = np.random.default_rng(7)


def test_expression_matches_numpy():
    x, y = RNG.standard_normal(10_001), RNG.standard_normal(10_001)
    # atol: libmvec's few-ulp math (backend/llvm/vecmath.py) where the terms cancel
    np.testing.assert_allclose(jit(expression)(x, y), expression(x, y), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [0, 1, 3, 17, 1000])
def test_lengths(n):
    x, y = RNG.standard_normal(n), RNG.standard_normal(n)
    got = jit(expression)(x, y)
    assert got.shape == (n,) and got.dtype == np.float64 and got.flags.c_contiguous
    np.testing.assert_allclose(got, expression(x, y), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("da, db", [("float64", "float64"), ("float32", "float32"),
                                    ("int64", "int64"), ("int64", "float64"),
                                    ("float32", "float64"), ("int64", "float32")])
def test_dtypes(da, db):
    a = (RNG.standard_normal(50) * 10).astype(da)
    b = (RNG.standard_normal(50) * 10).astype(db)
    got, want = jit(arith)(a, b), arith(a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if "float32" in (da, db) else 1e-12)


def test_broadcasting():
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal(5)
    np.testing.assert_allclose(jit(mix)(a, b, 2.5), mix(a, b, 2.5), rtol=1e-12)
    c = RNG.standard_normal(4)
    np.testing.assert_allclose(jit(column)(a, c), column(a, c), rtol=1e-12)
    # size-1 axes stretch on either side
    p, q = RNG.standard_normal((3, 1)), RNG.standard_normal((1, 6))
    np.testing.assert_allclose(jit(arith)(p, q), arith(p, q), rtol=1e-12)
    np.testing.assert_allclose(jit(arith)(np.ones(1), np.arange(4.0)),
                               arith(np.ones(1), np.arange(4.0)))


def test_strided_inputs():
    a = RNG.standard_normal((6, 8))
    b = RNG.standard_normal((8, 6))
    np.testing.assert_allclose(jit(arith)(a[:, ::2], b[::2].T), arith(a[:, ::2], b[::2].T))
    np.testing.assert_allclose(jit(arith)(a.T, b), arith(a.T, b))
    np.testing.assert_allclose(jit(arith)(a[::-1], a), arith(a[::-1], a))


def tanh_rows(x, y):
    t = np.tanh(x) + y
    return t, np.sum(t, axis=(1, 2)), np.mean(t)


def clipped_into(x, y):
    x[x > y] = 0.0
    x += y
    return x


def test_last_axes_run_as_one_loop_only_where_every_operand_allows():
    """fused.py `_merged`: the last axes run as one loop where every operand steps through
    them as through one axis; a sliced, transposed or broadcast operand keeps the nest."""
    f, g = jit(tanh_rows), jit(clipped_into)
    x = RNG.standard_normal((5, 6, 8))
    cases = [(x, x), (x, x[:, :1]), (x, x[0]), (x, x[:, :, :1]), (x[:, ::2], x[:, 1::2]),
             (x[:, :, ::2], x[:, :, 1::2]), (x[:4:2, :, :4], x[1::2, :, 4:]),
             (x.transpose(0, 2, 1), x[0, 0, :6]), (x[:, :1], x[:, :1]), (x[:, :0], x[:, :0])]
    for a, b in cases:
        for got, want in zip(f(a, b), tanh_rows(a, b)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        mine, theirs = a.copy(), a.copy()
        np.testing.assert_array_equal(g(mine, b), clipped_into(theirs, b))
        np.testing.assert_array_equal(mine, theirs)
    into_view = x.copy()
    g(into_view[:, ::2], x[0, ::2])
    want = x.copy()
    clipped_into(want[:, ::2], x[0, ::2])
    np.testing.assert_array_equal(into_view, want)


def test_shape_mismatch_raises_value_error_with_shapes():
    with pytest.raises(ValueError, match=r"operands could not be broadcast together with "
                                         r"shapes \(3,\) \(4,\)"):
        jit(add)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match=r"with shapes \(3, 4\) \(5,\)"):
        jit(mix)(np.ones((3, 4)), np.ones(5), 1.0)
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        jit(arith)(np.ones((2, 3)), np.ones((3, 2)))


def test_numpy_semantics_no_exceptions():
    a = np.array([1.0, -1.0, 0.0, 5.5, -7.0])
    b = np.array([0.0, 0.0, 0.0, 2.0, 2.0])
    with np.errstate(all="ignore"):
        want = divisions(a, b)
    for got, w in zip(jit(divisions)(a, b), want):
        np.testing.assert_array_equal(got, w)
    i = np.array([7, -7, 5, 0, -2**63], dtype=np.int64)
    j = np.array([0, 2, -3, 0, -1], dtype=np.int64)
    with np.errstate(all="ignore"):
        want = divisions(i, j)
    for got, w in zip(jit(divisions)(i, j), want):
        assert got.dtype == w.dtype
        np.testing.assert_array_equal(got, w)
    x = np.array([-1.0, 0.0, 4.0, np.nan, np.inf])
    with np.errstate(all="ignore"):
        want = math_domain(x)
    for got, w in zip(jit(math_domain)(x), want):
        np.testing.assert_array_equal(got, w)


def test_where_minimum_maximum():
    x = np.array([1.0, np.nan, 3.0, -0.5, 2.0])
    y = np.array([2.0, 1.0, np.nan, -1.5, 2.0])
    for got, want in zip(jit(compare_where)(x, y), compare_where(x, y)):
        np.testing.assert_array_equal(got, want)
    k = np.array([3, -1, 4], dtype=np.int64)
    m = np.array([2, 5, 4], dtype=np.int64)
    for got, want in zip(jit(compare_where)(k, m), compare_where(k, m)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def clipped(x, lo, hi):
    return np.clip(x, lo, hi)


def test_clip_keeps_numpys_zero_signs():
    """NumPy's loop for scalar bounds keeps the clipped value on a tie, its loop for array
    bounds the bound (fuzz seed 20261206, program 9918: np.clip(x, 0.0, -0.0))."""
    values = [5.5, -6.3, 0.0, -0.0, np.nan, 1.0, -1.0]
    x = np.array(values)
    f = jit(clipped)
    for lo, hi in itertools.product(values, repeat=2):
        for bounds in [(lo, hi), (np.float64(lo), np.array(hi)), (np.full(7, lo), hi),
                       (np.full(7, lo), np.full(7, hi))]:
            got, want = f(x, *bounds), clipped(x, *bounds)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
            np.testing.assert_array_equal(got, want)
        for v in values:
            got, want = f(v, lo, hi), clipped(v, lo, hi)
            assert type(got) is type(want) and np.signbit(got) == np.signbit(want), (v, lo, hi)
            np.testing.assert_array_equal(got, want)


def clip_spellings(x):
    return (np.clip(x, None, 0.0), np.clip(x, -0.0, None), np.clip(x, a_min=-1, a_max=1),
            np.clip(x, min=0.0, max=1.0), np.clip(x, max=1.0), np.clip(x, 0.5, a_max=1.0),
            x.clip(0.0, 1.0), x.clip(max=0.5), x.clip(min=-0.5), x.clip(-0.0))


def clip_upper(x):
    return x.clip(max=0.5)


def clip_twice(x):
    return x.clip(0.0, min=1.0)


def clip_half(x):
    return np.clip(x, 0.0, max=1.0)


def clip_nothing(x):
    return np.clip(x, None, None)


def test_clip_bounds_by_keyword_absent_and_as_a_method():
    """NumPy's binding of np.clip(a, a_min, a_max, *, min, max) and ndarray.clip(min, max);
    an absent (None) bound is np.maximum or np.minimum alone, as NumPy computes it."""
    x = np.array([-2.0, -0.0, 0.0, 0.5, 2.0, np.nan])
    for got, want in zip(jit(clip_spellings)(x), clip_spellings(x), strict=True):
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)
    one = np.float64(1.5)
    assert jit(clip_spellings)(one) == clip_spellings(one)
    with pytest.raises(CompileError, match="'clip' of f64 is not a method"):
        jit(clip_spellings)(1.5)  # a Python float has no method clip (AttributeError)
    with pytest.raises(CompileError, match="a Python number has no attribute 'clip'"):
        jit(clip_upper)(1.5)
    for function in (clip_twice, clip_half):  # NumPy's TypeError, astjit's when compiling
        with pytest.raises(TypeError):
            function(x)
    for function, message in [(clip_twice, "multiple values for argument 'min'"),
                              (clip_half, "missing 1 required positional argument: 'a_max'"),
                              (clip_nothing, "write np.copy(x)")]:
        with pytest.raises(CompileError, match=re.escape(message)):
            jit(function)(x)


def test_bool_arrays():
    p = np.array([True, False, True, False])
    q = np.array([True, True, False, False])
    for got, want in zip(jit(bools)(p, q), bools(p, q)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_int_arrays_wrap():
    a = np.array([2**62, -(2**63), 5], dtype=np.int64)
    np.testing.assert_array_equal(jit(arith)(a, a), arith(a, a))
    np.testing.assert_array_equal(jit(int_power)(a, np.array([2, 1, 3])), a ** np.array([2, 1, 3]))


def test_intermediate_outputs_and_split_groups():
    x, m = RNG.standard_normal(5), RNG.standard_normal((3, 5))
    for got, want in zip(jit(two_outputs)(x, m), two_outputs(x, m)):
        np.testing.assert_allclose(got, want)


def test_results_are_fresh_arrays():
    x = np.ones(4)
    got = jit(arith)(x, x)
    assert got.base is None and not np.shares_memory(got, x)
    got[0] = 9.0  # writeable, and the inputs are untouched
    assert x[0] == 1.0



def scaled_in_place(a, b, c):
    t = a * b
    k = np.sum(t)  # t stored by the reduction's nest, then its memory taken by the next
    return (t * c + k) * a


def row_softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def relu_pair(x, b):
    s = x + b
    return s, np.maximum(s, 0.0)  # one nest storing two new arrays


def test_stores_into_new_memory_are_not_checked_against_the_reads():
    """A nest's outputs are new arrays (or a donor no view of which is alive, read at the
    address it is written): each output's stores carry an alias scope of their own, which
    the other reads and the other outputs' stores do not alias, and a donor's reads are in
    its output's scope, so LLVM vectorizes the nest with no run-time overlap check of
    their addresses. So does a row group's loop (rowwise.py), for each array it writes."""
    a, b = RNG.standard_normal((3, 40)), RNG.standard_normal((3, 40))
    mixed = jit(mix)
    np.testing.assert_allclose(mixed(a, b, 2.0), mix(a, b, 2.0))
    text = mixed.ir(a, b, 2.0, stage="llvm-opt")
    assert "!noalias" in text and "found.conflict" not in text
    c = RNG.standard_normal((3, 40))
    in_place = jit(scaled_in_place)
    assert "reuse=" in in_place.ir(a, b, c)
    assert "found.conflict" not in in_place.ir(a, b, c, stage="llvm-opt")
    for _ in range(2):  # the donor's memory is free at the second call too
        np.testing.assert_allclose(in_place(a, b, c), scaled_in_place(a, b, c), rtol=1e-13)
    pair = jit(relu_pair)
    for got, want in zip(pair(a, b[0]), relu_pair(a, b[0])):
        np.testing.assert_array_equal(got, want)
    assert "found.conflict" not in pair.ir(a, b[0], stage="llvm-opt")
    rows = jit(row_softmax)  # a row group (rowwise.py): its outputs and scratch rows too
    np.testing.assert_allclose(rows(a), row_softmax(a), rtol=1e-14)
    assert "found.conflict" not in rows.ir(a, stage="llvm-opt")


def _traced(fn, args, calls=300):
    for _ in range(2):
        try:
            fn(*args)
        except ValueError:
            pass
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(calls):
            try:
                fn(*args)
            except ValueError:
                pass
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


def test_no_leaks_over_many_calls():
    x, y = RNG.standard_normal(10_000), RNG.standard_normal(10_000)
    assert _traced(jit(expression), (x, y)) < 100_000  # 300 leaked results would be 24 MB
    m = RNG.standard_normal((3, 10_000))
    assert _traced(jit(two_outputs), (x, m)) < 100_000


def test_no_leaks_on_errors():
    a = np.arange(10_000, dtype=np.int64)
    b = np.full(10_000, 2, dtype=np.int64)
    b[-1] = -1  # NumPy: ValueError for a negative integer power, after the allocation
    assert _traced(jit(int_power), (a, b)) < 100_000
    assert _traced(jit(arith), (np.ones(10_000), np.ones(9_999))) < 100_000
