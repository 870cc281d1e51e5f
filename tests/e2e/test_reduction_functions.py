"""NumPy's other reductions (issue 14): np.prod, any, all, argmax, argmin, std, var, cumsum,
cumprod, nansum, nanmean, nanmax, nanmin, nanprod, nanstd, nanvar, ptp, count_nonzero, in
their function and method forms, against NumPy: random shapes (empty ones too), dtypes,
strides, transposes, axes, keepdims, ddof and NaNs (hypothesis, the same examples on every
run), NumPy's errors, the GPU's kernels on the simulator, and every gradient against
central finite differences."""
import functools
import types
import warnings

import numpy as np
import pytest

from astjit import grad, jit
from astjit.errors import CompileError, UnsupportedCallError

F = AXIS = KEEP = DDOF = None
"""Placeholders: `specialize` binds them per function object (read at compile time)."""

REDUCING = {name: getattr(np, name) for name in (
    "prod", "any", "all", "nanmax", "nanmin", "nansum", "nanprod", "nanmean", "ptp",
    "count_nonzero", "var", "std", "nanvar", "nanstd")}
"""Functions taking axis (an int or a tuple) and keepdims."""
WITH_DDOF = ("var", "std", "nanvar", "nanstd")
ONE_AXIS = {"argmax": np.argmax, "argmin": np.argmin}
SCANS = {"cumsum": np.cumsum, "cumprod": np.cumprod}
DTYPES = (np.float64, np.float32, np.int64, np.bool_)


def specialize(template, **constants):
    """`template` with its globals extended by `constants` (read at compile time)."""
    scope = dict(template.__globals__)
    scope.update(constants)
    return types.FunctionType(template.__code__, scope, template.__name__)


def reducing(x):
    return F(x, axis=AXIS, keepdims=KEEP)


def with_ddof(x):
    return F(x, AXIS, ddof=DDOF, keepdims=KEEP)


def one_axis(x):
    return F(x, axis=AXIS, keepdims=KEEP)


def scanning(x):
    return F(x, AXIS)


def of_square_plus_one(x):
    return F(x * x + 1.0, axis=AXIS)


def methods(x):
    return (x.prod(axis=AXIS), x.any(AXIS, keepdims=True), x.all(), x.var(ddof=1),
            x.std(axis=AXIS, keepdims=True))


def index_methods(x):
    return x.argmax(), x.argmin(axis=-1), x.cumsum(), x.cumprod(axis=0)


def with_dtype(x):
    return (np.prod(x, dtype=np.float64), np.cumsum(x, dtype=np.float32, axis=0),
            np.sum(x, axis=0, dtype=np.float32), np.mean(x, dtype=np.float32),
            np.var(x, dtype=np.float32), np.nansum(x, dtype=np.float64))


def run_numpy(fn, x):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(x)


def assert_same(want, got, where):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), where
        for i, (w, g) in enumerate(zip(want, got)):
            assert_same(w, g, f"{where}[{i}]")
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)}"
        assert (got.dtype, got.shape) == (want.dtype, want.shape), \
            f"{where}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    else:
        assert not isinstance(got, np.ndarray), f"{where}: an array, NumPy gives a scalar"
        assert np.asarray(got).dtype.kind == np.asarray(want).dtype.kind, f"{where}: {got!r}"
    if np.asarray(want).dtype.kind in "bi":
        assert np.array_equal(want, got), f"{where}: {got} vs {want}"
    else:
        tol = 1e-4 if np.asarray(want).dtype == np.float32 else 1e-9
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=where)


compiled = functools.cache(jit)
"""One compiled function per function and target for all of the file's checks: each signature
compiles once."""


def check(fn, x, target="cpu"):
    """fn compiled against NumPy: the same result, or the same error."""
    try:
        want = run_numpy(fn, x)
    except (ValueError, TypeError) as error:
        # NumPy's TypeErrors (np.ptp of bools subtracts them) are found at compile time
        with pytest.raises((type(error), CompileError) if isinstance(error, TypeError)
                           else type(error)) as info:
            compiled(fn, target=target)(x)
        if isinstance(error, ValueError):
            assert str(error) in str(info.value)
        return
    assert_same(want, compiled(fn, target=target)(x), f"{fn.__name__} {x.dtype}{x.shape}")


def data(rng, shape, dtype, nans: bool):
    x = rng.standard_normal(shape) * 2
    if dtype == np.int64:
        return np.round(x * 2).astype(np.int64)
    if dtype == np.bool_:
        return x > 0
    if nans and x.size:
        x.flat[rng.integers(0, x.size, max(1, x.size // 4))] = np.nan
    return x.astype(dtype)


# ---- random cases --------------------------------------------------------------------------

def test_random_cases_match_numpy():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @st.composite
    def cases(draw):
        ndim = draw(st.integers(1, 3))
        shape = tuple(draw(st.integers(0 if draw(st.booleans()) else 1, 4)) for _ in range(ndim))
        dtype = draw(st.sampled_from(DTYPES))
        steps = [draw(st.sampled_from((1, 2, -1))) for _ in shape]
        rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
        base = data(rng, tuple(n * abs(k) for n, k in zip(shape, steps)), dtype,
                    draw(st.booleans()))
        x = base[tuple(slice(None, None, k) for k in steps)]
        if ndim > 1 and draw(st.booleans()):
            x = x.T
        one = st.one_of(st.none(), st.integers(-ndim, ndim - 1).map(lambda a: a))
        name = draw(st.sampled_from(sorted({**REDUCING, **ONE_AXIS, **SCANS})))
        keep = draw(st.booleans())
        if name in ONE_AXIS:
            return specialize(one_axis, F=ONE_AXIS[name], AXIS=draw(one), KEEP=keep), x
        if name in SCANS:
            return specialize(scanning, F=SCANS[name], AXIS=draw(one)), x
        axis = draw(st.one_of(one, st.sets(st.integers(0, ndim - 1)).map(tuple)))
        if name in WITH_DDOF and draw(st.booleans()):
            return specialize(with_ddof, F=REDUCING[name], AXIS=axis, KEEP=keep,
                              DDOF=draw(st.integers(0, 2))), x
        return specialize(reducing, F=REDUCING[name], AXIS=axis, KEEP=keep), x

    @hypothesis.settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @hypothesis.given(cases())
    def check_case(case):
        fn, x = case
        check(fn, x)

    check_case()


@pytest.mark.parametrize("dtype", DTYPES)
def test_methods_and_dtypes(dtype):
    rng = np.random.default_rng(3)
    x = data(rng, (3, 4), dtype, False)
    for axis in (0, -1):
        check(specialize(methods, AXIS=axis), x)
    check(index_methods, x)
    check(with_dtype, x)
    if dtype != np.bool_:
        for name, f in [*REDUCING.items(), ("cumsum", np.cumsum)]:
            check(specialize(of_square_plus_one, F=f, AXIS=1), x)


def test_nan_positions_and_ties():
    nan = np.nan
    for x in (np.array([1.0, nan, 3.0, -nan, -2.0]), np.array([2.0, 5.0, 5.0, -1.0, -1.0]),
              np.array([-np.inf, -np.inf]), np.array([nan, nan]), np.arange(5000.0) % 7):
        for f in (np.argmax, np.argmin, np.nanmax, np.nanmin, np.nanmean, np.cumsum, np.ptp):
            check(specialize(reducing if f in (np.nanmax, np.nanmin, np.nanmean, np.ptp)
                             else one_axis if f in (np.argmax, np.argmin) else scanning,
                             F=f, AXIS=None, KEEP=False), x)
    long = np.random.default_rng(0).standard_normal(3000)
    long[[1700, 2900]] = 9.0
    long[[2100, 2500]] = nan  # the first NaN wins, past the first block of the search
    check(specialize(one_axis, F=np.argmax, AXIS=None, KEEP=False), long)
    check(specialize(one_axis, F=np.argmin, AXIS=None, KEEP=False), np.nan_to_num(long))


@pytest.mark.parametrize("name", ["argmax", "nanmax", "ptp", "var", "cumsum", "prod"])
def test_empty_arrays_like_numpy(name):
    f = {**REDUCING, **ONE_AXIS, **SCANS}[name]
    template = one_axis if name in ONE_AXIS else scanning if name in SCANS else reducing
    for shape, axis in (((0,), None), ((0, 3), 0), ((0, 3), 1), ((3, 0), 1)):
        check(specialize(template, F=f, AXIS=axis, KEEP=False), np.zeros(shape))


def test_on_the_gpu_simulator():
    x = np.where(np.eye(4, 5) > 0, np.nan, np.random.default_rng(1).standard_normal((4, 5)))
    for name, f in REDUCING.items():
        check(specialize(reducing, F=f, AXIS=(1,), KEEP=name == "var"), x, "cuda-sim")
    for f in (np.argmax, np.cumprod):
        check(specialize(scanning, F=f, AXIS=0), x, "cuda-sim")
    check(specialize(methods, AXIS=0), x > 0, "cuda-sim")


# ---- refusals --------------------------------------------------------------------------------

def nanmedian_of(x):
    return np.nanmedian(x)


def test_nan_order_statistics_are_refused_clearly():
    with pytest.raises(UnsupportedCallError, match="np.nanmedian is not supported yet"):
        jit(nanmedian_of)(np.ones(3))


# ---- gradients against central finite differences ------------------------------------------

def products(a):
    return np.sum(np.prod(a, axis=1)) + np.prod(a[0]) + np.sum(np.cumprod(a, axis=1)) + \
        np.sum(np.cumprod(a) ** 2)


def sums(a):
    return np.sum(np.cumsum(a, axis=0) ** 2) + np.sum(np.cumsum(a) * np.arange(12.0)) + \
        np.sum(np.cumsum(a.T, axis=1) ** 2)


def spreads(a):
    return np.sum(np.std(a, axis=0, ddof=1)) + np.var(a) + np.std(a) + \
        np.sum(np.var(a, axis=1, keepdims=True) * a)


def nan_ignoring(a):
    return np.nansum(a) * 2.0 + np.nanmean(a) + np.sum(np.nanvar(a, axis=1)) + np.nanstd(a) + \
        np.nanmax(a) + np.sum(np.nanmin(a, axis=0)) + np.nanprod(a[2])


def extremes(a):
    return np.sum(np.ptp(a, axis=1)) + np.ptp(a) + \
        np.sum(a * np.argmax(a, axis=1, keepdims=True)) + np.count_nonzero(a) * 1.0 + \
        np.sum(np.where(np.any(a > 0, axis=0), a, 0.0)) + np.sum(np.where(np.all(a > -1.0), a, 0.0))


def numeric_gradient(fn, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        g[i] = (fn(up) - fn(down)) / (2 * h)
    return g


@pytest.mark.parametrize("fn", [products, sums, spreads, nan_ignoring, extremes],
                         ids=lambda f: f.__name__)
def test_gradients_match_finite_differences(fn):
    x = np.random.default_rng(5).standard_normal((3, 4)) + 0.2
    if fn is nan_ignoring:
        x[1, 2] = x[0, 3] = np.nan
    got = grad(fn)(x)
    want = numeric_gradient(fn, x)
    np.testing.assert_allclose(got, np.where(np.isnan(x), 0.0, want), rtol=1e-5, atol=1e-6)


def prod_rows(a):
    return np.sum(np.prod(a, axis=1))


def test_gradient_of_prod_is_exact_at_zeros():
    x = np.random.default_rng(6).standard_normal((4, 5))
    x[1, 2] = x[3, 1] = x[3, 4] = 0.0  # a row with one zero, a row with two
    want = np.array([[np.prod(np.delete(r, j)) for j in range(5)] for r in x])
    np.testing.assert_allclose(grad(prod_rows)(x), want, rtol=1e-12, atol=1e-12)
