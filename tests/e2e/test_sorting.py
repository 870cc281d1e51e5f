"""Sorting and searching (issue 14): np.sort, x.sort(), np.argsort, x.argsort(),
np.searchsorted, np.unique, np.nonzero, x.nonzero(), np.where(cond), np.median,
np.percentile, np.quantile against NumPy: random shapes (empty ones too), dtypes, strides,
transposes, axes, kinds, NaNs, ties and signed zeros (hypothesis, the same examples on
every run), bit for bit where NumPy's kernels decide (sorted values, the order of -0.0
and 0.0, argsort's order of ties for every kind); the in-place sort seen by the caller;
NumPy's errors; the GPU simulator; gradients (reverse and forward) against central finite
differences away from ties."""
import functools
import types
import warnings

import numpy as np
import pytest

from astjit import grad, jit, jvp
from astjit.errors import CompileError

F = AXIS = KIND = KEEP = Q = SIDE = None
"""Placeholders: `specialize` binds them per function object (read at compile time)."""
DTYPES = (np.float64, np.float32, np.int64, np.bool_)


def specialize(template, **constants):
    scope = dict(template.__globals__)
    scope.update(constants)
    return types.FunctionType(template.__code__, scope, template.__name__)


def sort(x):
    return np.sort(x, axis=AXIS, kind=KIND)


def argsort(x):
    return np.argsort(x, axis=AXIS, kind=KIND)


def order_statistic(x):
    return F(x, Q, axis=AXIS, keepdims=KEEP)


def median(x):
    return np.median(x, axis=AXIS, keepdims=KEEP)


def unique(x):
    return np.unique(x)


def nonzero(x):
    return np.nonzero(x), np.where(x), x.nonzero()


def searchsorted(x):
    edges = np.sort(x.ravel())[::2]
    return np.searchsorted(edges, x, side=SIDE), np.searchsorted(edges, 0.0, side=SIDE)


def run_numpy(fn, x):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(x)


def assert_same(want, got, where, exact=True):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), where
        for i, (w, g) in enumerate(zip(want, got)):
            assert_same(w, g, f"{where}[{i}]", exact)
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)}"
        assert (got.dtype, got.shape) == (want.dtype, want.shape), \
            f"{where}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    else:
        assert not isinstance(got, np.ndarray), f"{where}: an array, NumPy gives a scalar"
        assert np.asarray(got).dtype == np.asarray(want).dtype, f"{where}: {got!r} vs {want!r}"
    want, got = np.asarray(want), np.asarray(got)
    if exact or want.dtype.kind in "bi":
        assert np.array_equal(want, got, equal_nan=want.dtype.kind == "f"), \
            f"{where}: {got} vs {want}"
        if want.dtype.kind == "f":
            assert np.array_equal(np.signbit(want), np.signbit(got)), f"{where}: signs of zeros"
    else:
        tol = 1e-6 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=where)


compiled = functools.cache(jit)
"""One compiled function per function and target for all of the file's checks: each signature
compiles once."""


def check(fn, x, target="cpu", exact=True):
    """fn compiled against NumPy: the same result, or the same error."""
    try:
        want = run_numpy(fn, x.copy())
    except (ValueError, TypeError, IndexError) as error:
        with pytest.raises((type(error), CompileError)):
            compiled(fn, target=target)(x.copy())
        return
    assert_same(want, compiled(fn, target=target)(x.copy()), f"{fn.__name__} {x.dtype}{x.shape}", exact)


def data(rng, shape, dtype, nans: bool):
    """Few distinct values (ties), signed zeros, and NaNs where asked."""
    x = np.round(rng.standard_normal(shape) * 2)
    if dtype == np.int64:
        return x.astype(np.int64)
    if dtype == np.bool_:
        return x > 0
    x[x == 0] = rng.choice([0.0, -0.0], size=int(np.sum(x == 0)))
    x += rng.choice([0.0, 0.25], size=shape) * (rng.random(shape) < 0.3)
    if nans and x.size:
        x.flat[rng.integers(0, x.size, max(1, x.size // 4))] = np.nan
    return x.astype(dtype)


def test_random_cases_match_numpy():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @st.composite
    def cases(draw):
        ndim = draw(st.integers(1, 3))
        shape = tuple(draw(st.integers(0 if draw(st.booleans()) else 1, 5)) for _ in range(ndim))
        dtype = draw(st.sampled_from(DTYPES))
        steps = [draw(st.sampled_from((1, 2, -1))) for _ in shape]
        rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
        base = data(rng, tuple(n * abs(k) for n, k in zip(shape, steps)), dtype,
                    draw(st.booleans()))
        x = base[tuple(slice(None, None, k) for k in steps)]
        if ndim > 1 and draw(st.booleans()):
            x = x.T
        axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
        name = draw(st.sampled_from(("sort", "argsort", "median", "percentile", "quantile",
                                     "unique", "nonzero", "searchsorted")))
        if name in ("sort", "argsort"):
            kind = draw(st.sampled_from((None, "quicksort", "heapsort", "stable", "mergesort")))
            return specialize(sort if name == "sort" else argsort, AXIS=axis, KIND=kind), x, True
        if name in ("median", "percentile", "quantile"):
            q = draw(st.sampled_from((0.0, 0.3, 0.5, 0.75, 1.0))) * (100 if name == "percentile"
                                                                     else 1)
            keep = draw(st.booleans())
            if name == "median":
                return specialize(median, AXIS=axis, KEEP=keep), x, False
            return specialize(order_statistic, F=getattr(np, name), AXIS=axis, Q=q,
                              KEEP=keep), x, False
        if name == "searchsorted":
            return specialize(searchsorted, SIDE=draw(st.sampled_from(("left", "right")))), x, True
        return {"unique": unique, "nonzero": nonzero}[name], x, True

    @hypothesis.settings(max_examples=80, deadline=None, database=None, derandomize=True)
    @hypothesis.given(cases())
    def check_case(case):
        fn, x, exact = case
        if fn.__name__ == "order_statistic" and x.dtype == np.bool_:
            return  # NumPy's TypeError; compiled code's compile error: test_errors_are_numpys
        check(fn, x, exact=exact)

    check_case()


def methods(x):
    y = x.copy()
    y.sort(axis=0)
    return y, x.argsort(), x.argsort(axis=0, kind="stable"), np.sort(x, axis=None), \
        np.argsort(x, axis=None, stable=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_methods_kinds_and_dtypes(dtype):
    x = data(np.random.default_rng(1), (4, 6), dtype, True)
    check(methods, x)
    for kind in ("quicksort", "heapsort", "stable"):
        check(specialize(argsort, AXIS=-1, KIND=kind), np.tile(x.ravel(), 40))
    check(unique, x)
    check(nonzero, x)


def sort_in_place(x, rows):
    x.sort()
    rows.sort(axis=0)
    return x[0] + rows[0, 0]


def test_in_place_sort_is_seen_by_the_caller():
    rng = np.random.default_rng(2)
    for x, rows in ((rng.standard_normal(9), rng.standard_normal((5, 3))),
                    (rng.standard_normal(18)[::2], rng.standard_normal((3, 5)).T)):
        want_x, want_rows = np.sort(x), np.sort(rows, axis=0)
        base = rows.base
        jit(sort_in_place)(x, rows)
        assert np.array_equal(x, want_x) and np.array_equal(rows, want_rows)
        if base is not None:
            assert np.array_equal(base.T, want_rows)


def long_searches(a, v):
    return np.searchsorted(a, v), np.searchsorted(a, v, side="right"), np.searchsorted(a, 3)


def test_searchsorted_edges_and_promotion():
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 0.0, 2.5, np.inf, np.nan, np.nan])
    v = np.array([[np.nan, 0.0, -0.0], [np.inf, -np.inf, 9.0]])
    assert_same(long_searches(a, v), jit(long_searches)(a, v), "floats")
    ints = np.array([1, 3, 3, 3, 7])
    assert_same(long_searches(ints, v), jit(long_searches)(ints, v), "ints in floats")
    unsorted = np.array([5.0, 1.0, 4.0, 2.0])  # NumPy's answers, whatever they mean
    keys = np.array([3.0, 0.5, 4.5, 4.5, 1.0])
    assert_same(long_searches(unsorted, keys), jit(long_searches)(unsorted, keys), "unsorted")


def quantiles(x):
    return (np.median(x), np.median(x, axis=1, keepdims=True), np.quantile(x, 0.37, axis=0),
            np.percentile(x, 12.5), np.quantile(x, 1), np.quantile(x, np.sum(np.ones(1)) * 0.5),
            np.percentile(x, 100.0, axis=-1))


@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int64))
def test_order_statistics(dtype):
    x = data(np.random.default_rng(4), (5, 6), dtype, False)
    check(quantiles, x, exact=False)
    y = x.astype(np.float64)
    y[1, 2] = np.nan
    check(quantiles, y, exact=False)
    check(quantiles, np.array([[1e308, 1e308, -np.inf, np.inf, 3.0, 1.0]]), exact=False)


def medians(x):
    return np.median(x), np.median(x, axis=0), np.median(x, axis=-1, keepdims=True)


def complex_percentile(x):
    return np.percentile(x, 50.0)


def complex_quantile(x):
    return np.quantile(x, 0.5, axis=0)


@pytest.mark.parametrize("dtype", (np.complex128, np.complex64))
def test_complex_medians_and_refused_quantiles(dtype):
    rng = np.random.default_rng(5)
    for shape in ((3, 5), (4, 4)):
        z = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        check(medians, z, exact=False)  # complex, of z's dtype: the middle ones' mean
    for fn in (complex_percentile, complex_quantile):
        with pytest.raises(TypeError):
            fn(z)  # NumPy's "a must be an array of real numbers"
        with pytest.raises(CompileError, match="NumPy raises TypeError"):
            jit(fn)(z)


def out_of_range(x):
    return np.quantile(x, 1.5)


def percentile_out_of_range(x):
    return np.percentile(x, -1.0)


def sort_0d(x):
    return np.sort(x[0, 0])


def nonzero_0d(x):
    return np.nonzero(np.sum(x))


def bad_kind(x):
    return np.sort(x, kind="bubble")


def deep_search(x):
    return np.searchsorted(x, 1.0)


def median_of_tuple_axes(x):
    return np.median(x, axis=(0, 1))


def test_errors_are_numpys():
    x = np.ones((2, 3))
    for fn in (out_of_range, percentile_out_of_range):
        with pytest.raises(ValueError, match="must be in the range"):
            jit(fn)(x)
    for fn in (sort_0d, nonzero_0d, bad_kind, deep_search, median_of_tuple_axes):
        with pytest.raises(CompileError):
            jit(fn)(x)
    with pytest.raises(IndexError):
        jit(out_of_range.__wrapped__ if hasattr(out_of_range, "__wrapped__")
            else specialize(order_statistic, F=np.quantile, AXIS=None, Q=0.5, KEEP=False))(
            np.zeros(0))


def everything(x):
    return (np.sort(x, axis=0), np.argsort(x), np.median(x, axis=1), np.unique(x),
            np.nonzero(x > 0.0), np.searchsorted(np.sort(x[0]), x))


def test_on_the_gpu_simulator():
    x = data(np.random.default_rng(6), (4, 5), np.float64, False)
    assert_same(everything(x), jit(everything, target="cuda-sim")(x), "cuda-sim")


# ---- gradients against central finite differences ------------------------------------------

def sorted_weights(x):
    return np.sum(np.sort(x, axis=1) * np.arange(5.0)) + np.sum(np.sort(x, axis=None) ** 2 *
                                                                 np.arange(15.0))


def statistics(x):
    return (np.median(x) ** 2 + np.sum(np.median(x, axis=0)) + np.sum(np.median(x, axis=1) ** 2)
            + np.percentile(x, 30.0) + np.sum(np.quantile(x, 0.8, axis=1, keepdims=True) * x))


def numeric_gradient(fn, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (fn(up) - fn(down)) / (2 * h)
    return g


@pytest.mark.parametrize("fn", [sorted_weights, statistics], ids=lambda f: f.__name__)
def test_gradients_match_finite_differences(fn):
    x = np.random.default_rng(7).standard_normal((3, 5))  # distinct: away from ties
    want = numeric_gradient(fn, x)
    np.testing.assert_allclose(grad(fn)(x), want, rtol=1e-6, atol=1e-7)
    direction = np.random.default_rng(8).standard_normal(x.shape)
    _, tangent = jvp(fn, (x,), (direction,))
    np.testing.assert_allclose(tangent, np.sum(want * direction), rtol=1e-6, atol=1e-7)


def indices_only(x):
    return np.sum(x * np.argsort(x)) + np.sum(x * np.searchsorted(np.sort(x), x)) + \
        x[0] * np.nonzero(x > 0.0)[0].size


def test_indices_have_zero_derivative():
    x = np.random.default_rng(9).standard_normal(6)
    np.testing.assert_allclose(grad(indices_only)(x), numeric_gradient(indices_only, x),
                               rtol=1e-6, atol=1e-7)
