"""astjit's own vectorizer for the innermost loops of array kernels (backend/llvm/widen.py):
results equal to NumPy's at every length around the vector's lanes, for every dtype, with
broadcasts, selects, conversions, vector math and in-place reuse; reductions (each lane an
accumulator of its own, folded at the end) and rows ending in masked steps; which loops it
takes and which it leaves to LLVM; and the loops module it makes compiled without LLVM's
optimizer (the `direct` pipeline, jit/split.py: `marks_done`)."""
from __future__ import annotations

import numpy as np
import pytest

from astjit import jit
from astjit.backend.llvm import vecmath

LENGTHS = (0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 130, 1000)
"""Around every lane count a vector of 128 to 512 bits has, for 1- to 8-byte elements."""

DTYPES = (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.float32,
          np.float64)


def affine(x, y):
    return x * y - 3


def mixed(x, y):
    return np.where(x > y, np.sqrt(np.abs(x)), -y) + (x < 0.5)


def floor_division(x, y):
    return x // y, x % y


def math_calls(x):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(x) / (1.0 + x * x)


def converted(x, y):
    return x.astype(np.float64) * y + (y * 0.25).astype(np.float32)


def in_place(x):
    x = x * 2.0
    x = x + 1.0
    return x


def _values(dtype, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)
    return (rng.standard_normal(n) * 3).astype(dtype)


def _vector_math(*names: str) -> None:
    """Skip where libmvec lacks one of `names` (no AVX2, an older glibc): those loops call
    scalar libm, which is LLVM's to vectorize."""
    library = vecmath.host_library()
    if library is None or not all(library.offers(name) for name in names):
        pytest.skip(f"libmvec has no {', '.join(names)} for this CPU")


def _direct(f) -> bool:
    """Whether every compile of `f` had its loops module compiled without LLVM's optimizer."""
    pipelines = {spec.compiled.compiled.pipelines for spec in f.dispatcher.specializations.values()}
    return pipelines == {("direct", "glue")}


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_elementwise_kernels_equal_numpy_at_every_length(dtype):
    f = jit(affine)
    for n in LENGTHS:
        x, y = _values(dtype, n, 1), _values(dtype, n, 2)
        got, want = f(x, y), affine(x, y)
        assert got.dtype == want.dtype and np.array_equal(got, want), n
    assert _direct(f)


@pytest.mark.parametrize("dtype", (np.int8, np.int32, np.int64, np.uint16, np.float32, np.float64),
                         ids=lambda d: np.dtype(d).name)
def test_floor_division_and_remainder_by_zero_as_numpy(dtype):
    """NumPy's // and % (0 for an integer divided by 0, the float rules) on every lane."""
    f = jit(floor_division)
    for n in (0, 5, 64, 67):
        x = _values(dtype, n, 3)
        y = _values(dtype, n, 4)
        y[::3] = 0
        with np.errstate(all="ignore"):
            want = floor_division(x, y)
        for got, expected in zip(f(x, y), want):
            np.testing.assert_array_equal(got, expected)
    assert _direct(f) == np.issubdtype(dtype, np.integer)  # float //: branches, LLVM's


@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
def test_selects_comparisons_and_intrinsics(dtype):
    f = jit(mixed)
    for n in LENGTHS:
        x, y = _values(dtype, n, 5), _values(dtype, n, 6)
        if n > 4:
            x[1], y[2], x[3] = np.nan, np.inf, -0.0
        got, want = f(x, y), mixed(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert _direct(f)


def test_math_calls_take_the_vector_library_within_its_accuracy():
    """exp, sin and tanh by libmvec's variants in the vector loop (vecmath.py: within 4 ulp),
    libm's in the scalar loop after it. (An empty array's call compiles the general
    version too, whose strided loop LLVM vectorizes: `loop_metadata.scalar_loops`.)"""
    _vector_math("exp", "sin", "tanh", "expf", "sinf", "tanhf")
    for dtype in (np.float64, np.float32):
        f = jit(math_calls)
        x = np.linspace(-4.0, 4.0, 70).astype(dtype)
        np.testing.assert_allclose(f(x), math_calls(x), rtol=4e-6 if dtype == np.float32 else 4e-15)
        assert _direct(f)
    f = jit(math_calls)
    for n in LENGTHS:
        x = np.linspace(-4.0, 4.0, n)
        np.testing.assert_allclose(f(x), math_calls(x), rtol=4e-15, atol=1e-300)
        x32 = x.astype(np.float32)
        np.testing.assert_allclose(f(x32), math_calls(x32), rtol=4e-6, atol=1e-30)


def test_conversions_and_mixed_widths():
    f = jit(converted)
    for n in LENGTHS:
        x, y = _values(np.int16, n, 7), _values(np.float32, n, 8)
        got, want = f(x, y), converted(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert _direct(f)


def test_broadcasts_scalars_and_rows():
    """A row broadcast along the columns (stride 0 on the inner loop: one element per
    row, the same in every lane), a column along the rows, a scalar, and rows too far
    apart to merge: the inner loop of a two-loop nest widened."""
    f = jit(affine)
    a = _values(np.float64, 12 * 37, 9).reshape(12, 37)
    for x, y in ((a, a[0]), (a, a[:, :1]), (a, 2.5), (a[:, 3:30], a[:, 2:29]), (a[::2], a[1::2])):
        np.testing.assert_array_equal(f(x, y), affine(x, y))
    assert _direct(f)


def test_in_place_reuse():
    f = jit(in_place)
    for n in LENGTHS:
        x = _values(np.float64, n, 10)
        np.testing.assert_array_equal(f(x.copy()), in_place(x))
    assert _direct(f)


def test_strided_views_keep_their_own_loops():
    """A view read at its own stride in the unit version (np.diag of a matrix) is no
    lane-by-lane read: its loop is not widened (but scalar on purpose, so compiled
    without LLVM's optimizer all the same), and its results are NumPy's."""
    def diagonal_scaled(a):
        return np.diag(a) * 2.0 + 1.0

    f = jit(diagonal_scaled)
    a = _values(np.float64, 49, 11).reshape(7, 7)
    np.testing.assert_array_equal(f(a), diagonal_scaled(a))
    assert ".widened" not in f.ir(a, stage="llvm") and _direct(f)


def total(x):
    return np.sum(x * 2)


def largest(x):
    return np.max(x * 2)


def smallest(x):
    return np.min(x - 1)


def largest_not_nan(x):
    return np.nanmax(x + 1.0)


def product(x):
    return np.prod(1.0 + x * 1e-4)


def anything(x):
    return np.any(x > 1), np.all(x != 7), np.count_nonzero(x > 0)


def row_means(x):
    return np.mean(x * 3, axis=1)


def column_sums(x):
    return np.sum(x * 2, axis=0)


def spread(x):
    return np.var(x), np.std(x)


def _same(got, want, dtype) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    if not np.issubdtype(want.dtype, np.floating):
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-5 if np.float32 in (dtype, want.dtype) else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("fn", (total, largest, smallest, largest_not_nan, product, anything,
                                spread), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", (np.int8, np.int32, np.int64, np.uint16, np.float32, np.float64),
                         ids=lambda d: np.dtype(d).name)
def test_reductions_of_a_vector_equal_numpy(fn, dtype):
    """Each lane accumulates from the reduction's identity, folded into the scalar loop's
    accumulator where the vector steps end (widen._Accumulator)."""
    f = jit(fn)
    for n in LENGTHS[1:]:
        x = _values(dtype, n, 12)
        if n > 10 and np.issubdtype(dtype, np.floating) and fn is not product:
            x[n // 3] = np.nan
        with np.errstate(all="ignore"):
            want = fn(x)
        got = f(x)
        for g, w in zip(got if isinstance(want, tuple) else [got],
                        want if isinstance(want, tuple) else [want]):
            _same(g, w, dtype)
    assert _direct(f)


@pytest.mark.parametrize("fn", (row_means, column_sums), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", (np.int16, np.float32, np.float64), ids=lambda d: np.dtype(d).name)
def test_reductions_along_an_axis(fn, dtype):
    f = jit(fn)
    for rows, n in ((1, 1), (3, 7), (5, 16), (4, 33), (7, 130)):
        x = _values(dtype, rows * n, 13).reshape(rows, n)
        _same(f(x), fn(x), dtype)
    assert _direct(f)


def test_a_nan_anywhere_makes_the_max_nan():
    f = jit(largest)
    for n in (9, 16, 40):
        for at in range(n):
            x = np.arange(float(n))
            x[at] = np.nan
            assert np.isnan(f(x))
        x = -np.arange(float(n))
        assert f(x) == 0.0 and f(x[::-1].copy()) == 0.0


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def row_exp_sums(x):
    return np.sum(np.exp(x), axis=(1, 2))


@pytest.mark.parametrize("fn", (softmax, row_exp_sums), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", (np.float32, np.float64), ids=lambda d: np.dtype(d).name)
def test_rows_of_vector_math_end_in_masked_steps(fn, dtype):
    """A row's points past its last multiple of 16 (nests.count_up's tail) run as masked
    vector steps: loads and stores past the row's end masked off, the accumulators'
    lanes there kept at the identity. Each shape compiled afresh: its first tier alone,
    which is all widened (but for rows of one column: the general tier, whose strided
    version LLVM vectorizes)."""
    _vector_math("exp", "expf")
    rng = np.random.default_rng(14)
    for rows, n in ((3, 1), (4, 7), (5, 12), (6, 16), (3, 17), (20, 31), (64, 512)):
        f = jit(fn)
        shape = (rows, 3, n) if fn is row_exp_sums else (rows, n)
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        got, want = f(x), fn(x)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == np.float32 else 1e-14)
        assert _direct(f) or n == 1, shape
