"""NumPy's functions of complex numbers (issue 14): np.exp ... np.arctanh, log2/log10/log1p/
expm1/exp2, np.power and `**`, np.isnan/isinf/isfinite, compiled against NumPy on complex64
and complex128 arrays and NumPy scalars: special values (signed zeros, infinities, NaNs in
either part, the branch cuts' sides), random values (hypothesis), shapes and strides; and the
refusals of Python's `math` functions of a complex."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from astjit import jit
from astjit.errors import CompileError

UNARY = ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos",
         "arctan", "arcsinh", "arccosh", "arctanh", "log10", "log2", "log1p", "expm1", "exp2")
PREDICATES = ("isnan", "isinf", "isfinite")
PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.0, 1e-300, 89.0, -89.0, 710.0, -710.0,
         1e300, np.inf, -np.inf, np.nan]
SPECIAL = np.array([complex(a, b) for a in PARTS for b in PARTS])
"""Every pair of these parts: zeros of both signs on and off the branch cuts (the real axis
beyond +-1, the imaginary axis beyond +-i), past exp's overflow, the infinities and NaNs."""


def unary_all(z):
    return (np.exp(z), np.log(z), np.sqrt(z), np.sin(z), np.cos(z), np.tan(z), np.sinh(z),
            np.cosh(z), np.tanh(z), np.arcsin(z), np.arccos(z), np.arctan(z), np.arcsinh(z),
            np.arccosh(z), np.arctanh(z), np.log10(z), np.log2(z), np.log1p(z), np.expm1(z),
            np.exp2(z))


def unary_of_element(z, i):
    return unary_all(z[i])


def predicates(z):
    return np.isnan(z), np.isinf(z), np.isfinite(z)


def power(z, w):
    return z ** w, np.power(z, w)


def power_of_element(z, w, i):
    return z[i] ** w[i]


def integer_powers(z):
    return np.power(z, 3), z ** 7, z ** -3.0, np.power(z, 1), z ** 0


UNARY_JIT = jit(unary_all)
ELEMENT_JIT = jit(unary_of_element)
PREDICATES_JIT = jit(predicates)
POWER_JIT = jit(power)
POWER_ELEMENT_JIT = jit(power_of_element)
INTEGER_POWERS_JIT = jit(integer_powers)


def assert_complex_like(got, want, ulps, what=""):
    """`got` is NumPy's `want`: its dtype; NaN and infinities in the same parts, a zero of the
    same sign; finite parts within `ulps` units in the last place of the part's type (NumPy
    takes these from the C library, as compiled code does: mostly bit for bit)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind == "b":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    for g, w, part in ((got.real, want.real, "real"), (got.imag, want.imag, "imag")):
        nan = np.isnan(w)
        assert (np.isnan(g) == nan).all(), (what, part, g[np.isnan(g) != nan], w[np.isnan(g) != nan])
        finite = np.isfinite(w)
        assert (g[~finite & ~nan] == w[~finite & ~nan]).all(), (what, part, "infinities")
        zero = w == 0
        assert (np.signbit(g[zero]) == np.signbit(w[zero])).all(), (what, part, "sign of zero")
        spacing = np.spacing(np.maximum(np.abs(w[finite]), np.finfo(w.dtype).tiny))
        off = np.abs(g[finite].astype(np.float64) - w[finite]) / spacing
        assert (off <= ulps).all(), (what, part, off.max())


def check_unary(got, z):
    """Each result within 2 ulps of NumPy's; for complex64, an element may instead be within
    2 ulps of NumPy's result in complex128 rounded to complex64, where NumPy's own float32
    formula lost digits to cancellation (expm1's real part `expm1(x) cos(y) - 2 sin(y/2)^2`
    at 1.75+23.75j: NumPy 6 ulps from the exact value, compiled code 2)."""
    with np.errstate(all="ignore"):
        want = unary_all(z)
        wide = unary_all(z.astype(np.complex128)) if z.dtype == np.complex64 else None
    for k, (name, g, w) in enumerate(zip(UNARY, got, want)):
        if wide is None:
            assert_complex_like(g, w, ulps=2, what=name)
            continue
        with np.errstate(all="ignore"):
            exact = np.asarray(wide[k]).astype(np.complex64)
        for i in np.ndindex(np.shape(w)):
            try:
                assert_complex_like(np.asarray(g)[i], np.asarray(w)[i], ulps=2, what=name)
            except AssertionError:
                assert_complex_like(np.asarray(g)[i], exact[i], ulps=2, what=f"{name} (exact)")


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_special_values_like_numpy(dtype):
    with np.errstate(over="ignore"):  # 1e300 is inf in complex64
        z = SPECIAL.astype(dtype)
    check_unary(UNARY_JIT(z), z)
    with np.errstate(all="ignore"):
        for name, g, w in zip(PREDICATES, PREDICATES_JIT(z), predicates(z)):
            assert_complex_like(g, w, 0, name)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_numpy_scalars_like_numpy(dtype):
    """An element is a NumPy scalar: the same functions, computed outside a kernel."""
    with np.errstate(over="ignore"):
        z = SPECIAL[::5].astype(dtype)
    for i in range(len(z)):
        got = ELEMENT_JIT(z, i)
        with np.errstate(all="ignore"):
            want = unary_all(z[i])
        for name, g, w in zip(UNARY, got, want):
            assert type(g) is type(w), (name, type(g), type(w))
            assert_complex_like(g, w, ulps=2, what=f"{name}({z[i]})")


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_arrays_like_numpy(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, max_side=4))
    part = st.floats(-30, 30, width=32 if dtype == np.complex64 else 64)
    re, im = (data.draw(hnp.arrays(np.float64, shape, elements=part)) for _ in range(2))
    z = (re + 1j * im).astype(dtype)
    check_unary(UNARY_JIT(z), z)
    if z.ndim > 1:  # a strided view
        check_unary(UNARY_JIT(z[..., ::-1].T), z[..., ::-1].T)


def expm1(z):
    return np.expm1(z)


EXPM1_JIT = jit(expm1)


def test_complex64_expm1_where_its_real_part_cancels():
    """expm1's real part, expm1(re) cos(im) - 2 sin(im/2)^2, in double for complex64: within
    half an ulp of the exact value where the two terms cancel (NumPy's float formula is 4
    and 6 ulps off at the first two points); NumPy's own values where expm1(re) overflows
    float (an infinity of cos(im)'s sign, NaN for a NaN im) and where the result rounds
    to zero (+0 at 1e-30j, where the double difference is a tiny negative number)."""
    z = np.array([1.9 + 23.75j, 1.75 + 23.75j, 0.3 + 2.2j, 1e-30j, -1e-30j, 0j, -0.0 + 0j],
                 dtype=np.complex64)
    got = EXPM1_JIT(z)
    exact = np.expm1(z.astype(np.complex128)).astype(np.complex64)
    np.testing.assert_array_equal(got[:3].real, exact[:3].real)
    assert_complex_like(got[2:], np.expm1(z[2:]), ulps=2)
    with np.errstate(all="ignore"):
        edge = np.array([complex(x, y) for x in (88.72283, 88.72284, 88.8, 100.0, np.inf)
                         for y in (0.0, 1.5, 1.5707964, -3.0, np.inf, np.nan)], dtype=np.complex64)
        assert_complex_like(EXPM1_JIT(edge), np.expm1(edge), ulps=2)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_power_like_numpy(dtype):
    """npy_cpow: 1 for a zero exponent, 0 or NaN for a zero base, square and multiply for a
    real integer exponent in (-100, 100), the C library's cpow for the rest."""
    exponents = np.array([2, 3, -2, 7, 0.5, 1, -1, 99, -99, 100, 2.5, 0, 1.5 + 0.5j, -1j],
                         dtype=dtype)
    w = np.tile(exponents, len(SPECIAL[::3]))
    with np.errstate(all="ignore"):
        z = np.repeat(SPECIAL[::3], len(exponents)).astype(dtype)
        want = power(z, w)
        for got, expected in zip(POWER_JIT(z, w), want):
            assert_complex_like(got, expected, ulps=4, what="power")
        for i in range(0, len(z), 11):
            assert_complex_like(POWER_ELEMENT_JIT(z, w, i), z[i] ** w[i], ulps=4,
                                what=f"{z[i]} ** {w[i]}")


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_integer_powers_like_numpy(dtype):
    z = (np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j, 0j, 1e-3j]) + 0).astype(dtype)
    with np.errstate(all="ignore"):
        for got, want in zip(INTEGER_POWERS_JIT(z), integer_powers(z)):
            assert_complex_like(got, want, ulps=4, what="integer power")


def test_mixed_precision_promotes_as_numpy():
    """complex64 with float64 is complex128 (NEP 50); with a Python float stays complex64."""
    def mixed(z, x):
        return np.exp(z * x), np.sqrt(z + 1.5), np.power(z, 2.0)

    z = np.array([1 + 1j, -2 - 0.5j], dtype=np.complex64)
    x = np.array([0.5, 2.0])
    for got, want in zip(jit(mixed)(z, x), mixed(z, x)):
        assert_complex_like(got, want, ulps=2)


def math_exp(z):
    return math.exp(z[0])


def math_isnan(z):
    return math.isnan(z[0])


def math_erf(z):
    return math.erf(z[0])


def math_atan2(z):
    return math.atan2(z[0], 1.0)


def np_arctan2(z):
    return np.arctan2(z, z)


@pytest.mark.parametrize("fn", [math_exp, math_isnan, math_erf, math_atan2, np_arctan2],
                         ids=lambda f: f.__name__)
def test_real_functions_refuse_complex(fn):
    """Python's math functions raise TypeError for a complex, as NumPy's real-only ones
    (np.arctan2) do: compiling one on a complex is a CompileError (never its real part);
    math.exp's names the NumPy function that computes it."""
    with pytest.raises(CompileError, match="real numbers"):
        jit(fn)(np.array([1 + 1j]))


def statistics(z):
    return (np.mean(z, axis=0), np.mean(z, axis=1, keepdims=True), np.sum(z, axis=0),
            np.var(z), np.std(z, axis=0), np.var(z, axis=1, ddof=1), np.mean(z))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_statistics_like_numpy(dtype):
    """Means along an axis (the count divides both parts), var and std (NumPy's |d|^2, the
    real part of d * conj(d): a float of the complex's precision)."""
    z = (np.arange(12).reshape(3, 4) * (1 + 0.5j) - 2j + np.sin(np.arange(12)).reshape(3, 4)
         ).astype(dtype)
    for got, want in zip(jit(statistics)(z), statistics(z)):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.complex64 else 1e-12)


# ---- derivatives through complex numbers: JAX's (docs/arrays.md, tests/ad/test_complex_grad.py)

def real_of_product(z, x):
    return np.sum(np.real(z * x))


def exp_of_element(x):
    w = np.exp(x.astype(np.complex128))
    return np.real(w[0])


def abs_of_complex(z):
    return np.sum(np.abs(np.exp(z)))


def floats_beside_a_complex(x, z):
    return np.sum(x * x) + np.real(np.sum(z * z))


Z = np.array([1 + 1j, 0.5 - 2j])
X = np.array([1.0, 2.0])


@pytest.mark.parametrize("transform", ["grad", "jvp", "vjp"])
def test_derivative_through_a_complex(transform):
    """A derivative flowing through complex values (they were refused, before that dropped)."""
    import astjit

    if transform == "grad":
        np.testing.assert_allclose(astjit.grad(real_of_product, argnums=1)(Z, X), Z.real)
    elif transform == "jvp":
        np.testing.assert_allclose(astjit.jvp(exp_of_element, (X,), (np.ones(2),))[1],
                                   math.exp(X[0]))
    else:
        np.testing.assert_allclose(astjit.vjp(exp_of_element, X)[1](1.0)[0],
                                   [math.exp(X[0]), 0.0])


@pytest.mark.parametrize("transform", ["grad", "jvp", "vjp"])
def test_complex_arguments(transform):
    """With respect to a complex argument: of sum |e^z| = sum e^x, df/dx - i df/dy = e^x
    (grad, vjp of 1); along dz, Re(dz) e^x (jvp)."""
    import astjit

    if transform == "grad":
        got = astjit.grad(abs_of_complex)(Z)
    elif transform == "jvp":
        got = astjit.jvp(abs_of_complex, (Z,), (np.array([1 + 5j, 1 - 3j]),))[1]
        np.testing.assert_allclose(got, np.sum(np.exp(Z.real)))
        return
    else:
        (got,) = astjit.vjp(abs_of_complex, Z)[1](1.0)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.exp(Z.real), atol=1e-12)


def test_float_gradient_beside_complex_values():
    """A complex argument left out of argnums, and complex values the derivative does not
    flow through, are fine: the gradient of the float part, checked by finite differences."""
    import astjit

    got = astjit.grad(floats_beside_a_complex)(X, Z)
    h = 1e-6
    numeric = [(floats_beside_a_complex(X + h * e, Z) - floats_beside_a_complex(X - h * e, Z))
               / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


def magnitudes(z, i):
    return np.abs(z), np.abs(z[::3]), np.abs(z[i])


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_abs_is_numpys_bit_for_bit(dtype):
    """np.abs of a complex is NumPy 2's formula (its SIMD loop's, not hypot's), bit for bit:
    on the special values (an infinite part is inf beside a NaN too), on magnitudes near
    overflow and underflow, on arrays, strided arrays and NumPy scalars."""
    rng = np.random.default_rng(3)
    scale = np.exp(rng.uniform(-80, 80, (2, 300)))
    with np.errstate(all="ignore"):  # complex64: the largest magnitudes overflow to inf
        z = np.concatenate([SPECIAL, [1, 1j] @ (rng.standard_normal((2, 300)) * scale)]).astype(dtype)
        want = magnitudes(z, 5)
    got = jit(magnitudes)(z, 5)
    for g, w in zip(got, want):
        assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
