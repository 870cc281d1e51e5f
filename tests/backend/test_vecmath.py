"""Vector math in fused kernels (backend/llvm/vecmath.py): glibc's libmvec variants.

Compiled kernels against NumPy within a bound in ulps, over many inputs
including special values (NaN, ±inf, ±0, denormals, huge arguments of sin/cos,
arguments outside the domain); the optimized LLVM IR calls the `_ZGV...`
variants; `ASTJIT_VECMATH=0` (the scalar fallback) calls none and agrees; and
Python-semantics scalar math keeps its error checks.

The bounds: libmvec is within 4 ulp of the exact result, libm and NumPy's own
loops within 1-4 ulp (NumPy's float32 loops use their own SIMD code), so the
vectorized kernel is within `ULPS_VS_NUMPY` of NumPy and `ULPS_VS_LIBM` of the
scalar fallback.
"""
import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest

from astjit import jit
from astjit.backend.llvm import vecmath
from astjit.backend.llvm.jit.host import host_features

ULPS_VS_NUMPY = 8
ULPS_VS_LIBM = 5
N = 4099
"""Odd, so the vectorized loop's last step is a masked one."""


def k_sin(x):
    return np.sin(x)


def k_cos(x):
    return np.cos(x)


def k_tan(x):
    return np.tan(x)


def k_arcsin(x):
    return np.arcsin(x)


def k_arccos(x):
    return np.arccos(x)


def k_arctan(x):
    return np.arctan(x)


def k_sinh(x):
    return np.sinh(x)


def k_cosh(x):
    return np.cosh(x)


def k_tanh(x):
    return np.tanh(x)


def k_arcsinh(x):
    return np.arcsinh(x)


def k_arccosh(x):
    return np.arccosh(x)


def k_arctanh(x):
    return np.arctanh(x)


def k_exp(x):
    return np.exp(x)


def k_expm1(x):
    return np.expm1(x)


def k_log(x):
    return np.log(x)


def k_log2(x):
    return np.log2(x)


def k_log10(x):
    return np.log10(x)


def k_log1p(x):
    return np.log1p(x)


def k_arctan2(x, y):
    return np.arctan2(x, y)


def k_hypot(x, y):
    return np.hypot(x, y)


def k_power(x, y):
    return np.power(x, y)


def k_pow_operator(x, y):
    return x ** y


def expression(x, y):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x)


UNARY = [k_sin, k_cos, k_tan, k_arcsin, k_arccos, k_arctan, k_sinh, k_cosh, k_tanh, k_arcsinh,
         k_arccosh, k_arctanh, k_exp, k_expm1, k_log, k_log2, k_log10, k_log1p]
BINARY = [k_arctan2, k_hypot, k_power, k_pow_operator]
C_NAMES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "power": "pow",
           "pow_operator": "pow"}

SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-310, -2.5e-308,
            1e-300, 1e-45, 1.0, -1.0, 0.5, -0.5, 2.0, 1e22, -1e22, 1e300, -1e300, 1e15,
            8.5e37, 3e38, 710.0, -745.0, -740.0, 89.0, -104.0, 1.0000001, -1.0000001, 1e-8,
            math.pi, -math.pi / 2, 1e6 * math.pi]


def c_name(fn) -> str:
    name = fn.__name__.removeprefix("k_")
    return C_NAMES.get(name, name)


def sample(dtype, seed: int) -> np.ndarray:
    """Signed values from 1e-10 to 1e3 (log-uniform), the special values at the start and
    spread through the array (so some land in the vector body, some in the last step)."""
    rng = np.random.default_rng(seed)
    x = 10.0 ** rng.uniform(-10, 3, N) * rng.choice([-1.0, 1.0], N)
    with np.errstate(over="ignore"):
        specials = np.array(SPECIALS).astype(dtype)
    x = x.astype(dtype)
    x[::53] = np.resize(specials, x[::53].size)
    x[:len(specials)] = specials
    x[-3:] = specials[:3]
    return x


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units in the last place; NaN against NaN is 0, NaN against a number huge."""
    signed = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = (v.view(signed).astype(np.int64) for v in (a, b))
    low = np.int64(np.iinfo(signed).min)
    ia, ib = (np.where(i < 0, low - i, i) for i in (ia, ib))
    distance = np.abs(ia - ib)
    distance[np.isnan(a) & np.isnan(b)] = 0
    distance[np.isnan(a) != np.isnan(b)] = 2 ** 40
    return distance


def assert_close_in_ulps(got: np.ndarray, want: np.ndarray, bound: int, inputs) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    distance = ulps(got, want)
    worst = int(np.argmax(distance))
    assert distance[worst] <= bound, (
        f"{distance[worst]} ulps at {[a[worst] for a in inputs]}: {got[worst]!r} vs {want[worst]!r}")
    # Exact results stay exact: infinities, and zeros with their sign.
    exact = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))


def has_variant(name: str) -> bool:
    library = vecmath.host_library()
    return library is not None and library.offers(name)


def numpy_result(fn, args):
    with np.errstate(all="ignore"):
        return fn(*args)


def cases() -> list:
    """Every kernel at both float widths (a list: pytest deprecates generators in parametrize)."""
    return [pytest.param(fn, dtype, id=f"{fn.__name__[2:]}-{np.dtype(dtype).name}")
            for dtype in (np.float64, np.float32) for fn in UNARY + BINARY]


def arguments(fn, dtype):
    x = sample(dtype, 1)
    return (x,) if fn in UNARY else (x, sample(dtype, 2)[::-1].copy())


@pytest.mark.parametrize("fn, dtype", cases())
def test_kernels_match_numpy_within_ulps(fn, dtype):
    args = arguments(fn, dtype)
    assert_close_in_ulps(jit(fn)(*args), numpy_result(fn, args), ULPS_VS_NUMPY, args)


@pytest.mark.parametrize("fn, dtype", cases())
def test_scalar_fallback_agrees(fn, dtype, monkeypatch):
    args = arguments(fn, dtype)
    vectorized = jit(fn)(*args)
    monkeypatch.setenv(vecmath.ENV_SWITCH, "0")
    scalar = jit(fn)
    assert_close_in_ulps(scalar(*args), vectorized, ULPS_VS_LIBM, args)
    assert "_ZGV" not in scalar.ir(*args, stage="llvm-opt")


@pytest.mark.parametrize("fn, dtype", cases())
def test_optimized_ir_calls_the_vector_variant(fn, dtype):
    name = c_name(fn) + ("f" if dtype == np.float32 else "")
    if not has_variant(name):
        pytest.skip(f"libmvec has no {name} for this CPU")
    text = jit(fn).ir(*arguments(fn, dtype), stage="llvm-opt")
    assert re.search(rf"call [^\n]*@_ZGV[de]N\d+v+_{name}\(", text), name


def test_the_expression_calls_every_variant():
    x = np.linspace(-3.0, 3.0, 1001)
    text = jit(expression).ir(x, x, stage="llvm-opt")
    for name in ("exp", "sin", "tanh"):
        if has_variant(name):
            assert re.search(rf"call [^\n]*@_ZGV[de]N\d+v_{name}\(", text), name


@pytest.mark.parametrize("n", [0, 1, 3, 7, 17, 1000])
def test_lengths_around_the_vector_width(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n) * 4, rng.standard_normal(n)
    got = jit(expression)(x, y)
    assert got.shape == (n,) and got.dtype == np.float64
    np.testing.assert_allclose(got, expression(x, y), rtol=1e-13, atol=1e-15)


def test_strided_and_broadcast_inputs():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((40, 31)) * 3
    row = rng.standard_normal(31)
    got = jit(expression)(a[::2, ::3], row[::3])
    np.testing.assert_allclose(got, expression(a[::2, ::3], row[::3]), rtol=1e-13, atol=1e-15)
    got = jit(expression)(a, row)
    np.testing.assert_allclose(got, expression(a, row), rtol=1e-13, atol=1e-15)


def python_log(x):
    return math.log(x)


def scalar_numpy_sin(x):
    return np.sin(x)


def test_scalar_code_keeps_its_semantics_and_scalar_calls():
    """math.log keeps Python's check; np.sin of a number is NumPy's (nan, no exception);
    neither is a vector call."""
    with pytest.raises(ValueError, match="math domain error"):
        jit(python_log)(-1.0)
    f = jit(scalar_numpy_sin)
    with np.errstate(invalid="ignore"):
        assert math.isnan(f(math.inf)) and np.isnan(np.sin(math.inf))
    assert "_ZGV" not in f.ir(1.0, stage="llvm-opt")


def test_host_library_matches_the_cpu():
    library = vecmath.host_library()
    if library is None:
        pytest.skip("no libmvec or no AVX2 here")
    assert library.isas[0] == ("d", 256)
    assert all(map(library.offers, ["sin", "exp", "log", "pow", "sinf", "expf"]))
    assert library.variants("powf")[0] == ("_ZGVdN8vv_powf", 8)


def test_host_features_are_llvms():
    """The features read once from the engine's CPU string are those LLVM reports."""
    assert host_features() == {name for name, on in llvm.get_host_cpu_features().items() if on}


def test_functions_libmvec_lacks_stay_scalar(monkeypatch):
    library = vecmath.host_library()
    if library is None:
        pytest.skip("no libmvec or no AVX2 here")
    probe = vecmath._exports_all
    monkeypatch.setattr(vecmath, "_exports_all", lambda lib, name: name != "tanh" and probe(lib, name))
    x = np.linspace(-3.0, 3.0, 1001)
    f = jit(expression)
    text = f.ir(x, x, stage="llvm-opt")
    assert "_ZGV" in text and not re.search(r"@_ZGV\w+_tanh\(", text)
    np.testing.assert_allclose(f(x, x), expression(x, x), rtol=1e-13, atol=1e-15)


def test_no_library_means_scalar_calls(monkeypatch):
    monkeypatch.setattr(vecmath, "host_library", lambda: None)
    x = np.linspace(-3.0, 3.0, 1001)
    f = jit(expression)
    assert "_ZGV" not in f.ir(x, x, stage="llvm-opt")
    np.testing.assert_allclose(f(x, x), expression(x, x), rtol=1e-13, atol=1e-15)


def _angle_of_sum(z, w):
    return np.angle(z * 0.5 + z - w) * 2.0


def _complex_select(z, w):
    return np.where(z.real > 0, -z + w, z - w)


def test_complex_arithmetic_keeps_a_kernel_vectorized():
    """Complex `+`, `-`, unary `-` and `select` are lowered part by part: one `<2 x double>`
    instruction in the loop had kept the whole kernel scalar, np.angle's atan2 calls too."""
    rng = np.random.default_rng(5)
    z, w = (rng.standard_normal(1001) + 1j * rng.standard_normal(1001) for _ in range(2))
    for fn in (_angle_of_sum, _complex_select):
        f = jit(fn)
        np.testing.assert_allclose(f(z, w), fn(z, w), rtol=1e-15, atol=1e-15)
        text = f.ir(z, w, stage="llvm-opt")
        assert "vector.body" in text, fn.__name__
    if has_variant("atan2"):
        assert re.search(r"call [^\n]*@_ZGV[de]N\d+vv_atan2\(", jit(_angle_of_sum).ir(z, w, stage="llvm-opt"))


# ---- short rows: a loop's last elements as a masked vector step --------------------------

def rows_sum(x):                     # reduced axes (1, 2): rows of 12 where x is contiguous
    return np.sum(np.tanh(x), axis=(1, 2))


def rows_sum_kept(x):
    return np.sum(np.tanh(x), axis=(1, 2), keepdims=True)


def rows_mean(x):
    return np.mean(np.exp(x), axis=-1)


def rows_max(x):
    return np.max(np.sin(x), axis=-1)


def apart_sum(x):                    # reduced axes apart: the output accumulates
    return np.sum(np.tanh(x), axis=(0, 2))


def values_and_sums(x):              # the kernel's values stored at every point beside
    t = np.tanh(x)
    return t, np.sum(t, axis=(1, 2))


def sliced_rows(x):                  # elementwise, rows of 13 that are not one loop
    return np.sin(x[:, :, :13]) * 2.0


ROWS = [rows_sum, rows_sum_kept, rows_mean, rows_max, apart_sum, values_and_sums, sliced_rows]


def layouts(dtype) -> list:
    """(name, array): odd shapes, contiguous ones whose reduced axes run as one row, and views
    that must not (a step along the last axis, a transpose, a slice of the middle axis)."""
    rng = np.random.default_rng(8)
    big = (rng.standard_normal((9, 6, 26)) * 2).astype(dtype)
    arrays = {f"{shape}": (rng.standard_normal(shape) * 2).astype(dtype)
              for shape in [(1000, 3, 4), (5, 3, 5), (7, 1, 13), (3, 17, 1), (2, 2, 8)]}
    arrays.update({"step": big[:, :, ::2], "transposed": big.transpose(0, 2, 1),
                   "middle": big[:, :5, :13], "reversed": big[::-1, :, ::-1]})
    return list(arrays.items())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", ROWS, ids=lambda fn: fn.__name__)
def test_short_rows_match_numpy(fn, dtype):
    """Kernels calling vector math over rows of a few elements, each row mostly the loop's
    last, masked step: NaN in a row's last element (where the masked step reads it) too."""
    f = jit(fn)
    tolerance = {"rtol": 1e-12, "atol": 1e-12} if dtype == np.float64 else \
        {"rtol": 1e-5, "atol": 1e-5}
    for name, x in layouts(dtype):
        if fn is sliced_rows and x.shape[2] < 13:
            continue
        x = x.copy() if name.startswith("(") else x
        if name.startswith("("):
            x[-1, -1, -1] = np.nan
        got, want = f(x), fn(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            assert g.shape == w.shape and g.dtype == w.dtype, name
            np.testing.assert_allclose(g, w, **tolerance, err_msg=name)


def test_empty_rows():
    x = np.ones((4, 0, 3))
    np.testing.assert_array_equal(jit(rows_sum)(x), np.zeros(4))
    with pytest.raises(ValueError, match="zero-size array"):
        jit(rows_max)(np.ones((4, 0)))


def sum_of_squares_rows(x):
    return np.sum(x * x, axis=-1)


def test_short_rows_call_no_scalar_libm():
    """A loop calling vector math runs its last elements as masked vector steps
    (nests.count_up): the rows of 12 of `rows_sum` and the rows of 13 of
    `sliced_rows` call no scalar tanh or sin in either version of their nests. A loop
    without vector math keeps its scalar remainder."""
    x = np.ones((10, 3, 13))
    for fn, name in ((rows_sum, "tanh"), (sliced_rows, "sin")):
        if not has_variant(name):
            pytest.skip(f"libmvec has no {name} for this CPU")
        text = jit(fn).ir(x, stage="llvm-opt")
        assert "@llvm.masked.load" in text, fn.__name__
        assert not re.search(rf"call [^\n]*double @{name}\(", text), fn.__name__
    assert "@llvm.masked.load" not in jit(sum_of_squares_rows).ir(x, stage="llvm-opt")
