"""Derivatives through complex numbers, JAX's convention (docs/arrays.md: gradients).

Every result is checked against central differences of the function NumPy computes, on
the real and imaginary parts apart: for real-valued f(z), `grad` is df/dx - i df/dy; with
`holomorphic=True`, f'(z); `jvp` along a complex tangent dz is the difference quotient
along dz; `vjp` of a cotangent ct is the gradient of Re(sum(ct * f(z))).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astjit
from astjit.errors import CompileError

H = 1e-6


def partials(f, args, k, h=H):
    """df/dx - i df/dy of real-valued `f` in argument k (each element of an array)."""
    z = np.asarray(args[k])
    found = np.zeros(z.shape, dtype=complex)
    steps = ((h, 1.0), (1j * h, -1j)) if np.iscomplexobj(z) else ((h, 1.0),)
    for index in np.ndindex(*z.shape):
        for step, weight in steps:
            bump = np.zeros(z.shape, dtype=z.dtype)
            bump[index] = step
            plus, minus = list(args), list(args)
            plus[k], minus[k] = z + bump, z - bump
            if z.ndim == 0:
                plus[k], minus[k] = z.dtype.type(plus[k]), z.dtype.type(minus[k])
            found[index] += weight * (f(*plus) - f(*minus)) / (2 * h)
    if not np.iscomplexobj(z):
        return found.real if z.ndim else float(found.real)
    return found if z.ndim else complex(found)


# ---- real-valued functions of complex scalars ------------------------------------------

def real_of_square(z):
    return np.real(z * z)


def magnitude(z):
    return np.abs(z)


def squared_magnitude_of_exp(z):
    return np.abs(np.exp(z)) ** 2


def imag_of_sin(z):
    return np.imag(np.sin(z))


def argument(z):
    return np.angle(z)


def conj_times_square(z):
    return np.real(np.conj(z) * z * z)


def log_plus_sqrt(z):
    return np.imag(np.log(z) + np.sqrt(z))


def reciprocal(z):
    return np.real(1.0 / (z + 2.0)) + np.imag(z / (z - 3.0))


def cube(z):
    return np.real(z ** 3) + np.abs(np.tanh(z))


def inverse_functions(z):
    return np.real(np.arcsin(z) + np.arccos(z) + np.arctan(z) + np.arcsinh(z) + np.arccosh(z)
                   + np.arctanh(z))


def real_and_complex(z, x):
    return np.abs(z * x + x * x) + np.real(z) * x


SCALAR_FUNCTIONS = [real_of_square, magnitude, squared_magnitude_of_exp, imag_of_sin, argument,
                    conj_times_square, log_plus_sqrt, reciprocal, cube, inverse_functions]
Z = np.complex128(0.7 - 0.4j)


@pytest.mark.parametrize("f", SCALAR_FUNCTIONS, ids=lambda f: f.__name__)
def test_grad_of_real_valued_function(f):
    got = astjit.grad(f)(Z)
    assert isinstance(got, np.complex128)
    np.testing.assert_allclose(got, partials(f, [Z], 0), rtol=1e-6, atol=1e-8)


def test_grad_in_real_and_complex_arguments():
    x = 1.3
    got_z, got_x = astjit.grad(real_and_complex, argnums=(0, 1))(Z, x)
    np.testing.assert_allclose(got_z, partials(real_and_complex, [Z, x], 0), rtol=1e-6)
    np.testing.assert_allclose(got_x, partials(real_and_complex, [Z, x], 1), rtol=1e-6)
    assert isinstance(got_x, float)


def test_magnitude_at_zero_is_zero_as_jax():
    """d|z| at 0: JAX's rule gives conj(0) / 1 = 0, never NaN."""
    assert astjit.grad(magnitude)(np.complex128(0j)) == 0


# ---- arrays ---------------------------------------------------------------------------

def energy(z):
    return np.sum(np.abs(z) ** 2)


def real_of_sum(z):
    return np.real(np.sum(z * z))


def mean_of_imag(z):
    return np.mean(np.imag(np.exp(z)))


def broadcast_with_floats(z, x):
    return np.sum(np.abs(z * x + 1.0)) + np.real(np.sum(z[0] * x))


def element_products(z):
    return np.real(z[0] * z[1]) + np.imag(z[2] * z[2])


def loop_over_elements(z):
    total = 0.0
    for i in range(z.shape[0]):
        total = total + np.abs(z[i] - 0.5) * np.real(z[i])
    return total


def complex_from_floats(x, i):
    w = np.exp(x.astype(np.complex128) * i) * x
    return np.sum(np.real(w) + np.imag(w) ** 2)


ZS = np.array([1 + 1j, 0.5 - 2j, -0.3 + 0.2j])
XS = np.array([0.3, -1.2, 2.0])


def products(z):
    m = np.stack((z, z * z, np.conj(z)))
    return np.real(np.sum(m @ m)) + np.abs(np.dot(z, z)) + np.imag(np.sum(m @ z))


def scans(z):
    return np.real(np.sum(np.cumsum(z) ** 2)) + np.imag(np.sum(np.cumprod(z)))


def created_arrays(z):
    w = np.zeros_like(z)
    w[1] = z[0] * z[2]
    return np.abs(np.sum(w + np.full_like(z, z[1]) * z))


def packed(z):
    w = np.array((z[0] * z[1], z[2]))
    return np.abs(np.sum(w * w))


@pytest.mark.parametrize("f", [energy, real_of_sum, mean_of_imag, element_products,
                               loop_over_elements, products, scans, created_arrays, packed],
                         ids=lambda f: f.__name__)
def test_grad_of_complex_array(f):
    got = astjit.grad(f)(ZS)
    assert got.dtype == np.complex128 and got.shape == ZS.shape
    np.testing.assert_allclose(got, partials(f, [ZS], 0), rtol=1e-6, atol=1e-8)


def test_grad_through_broadcasting_with_a_float_array():
    got_z, got_x = astjit.grad(broadcast_with_floats, argnums=(0, 1))(ZS, XS)
    np.testing.assert_allclose(got_z, partials(broadcast_with_floats, [ZS, XS], 0), rtol=1e-6)
    np.testing.assert_allclose(got_x, partials(broadcast_with_floats, [ZS, XS], 1), rtol=1e-6)
    assert got_x.dtype == np.float64


def test_grad_of_float_function_with_complex_values_inside():
    i = np.complex128(1j)
    got = astjit.grad(complex_from_floats)(XS, i)
    np.testing.assert_allclose(got, partials(complex_from_floats, [XS, i], 0), rtol=1e-6)


def test_complex64_gradient_keeps_its_dtype():
    z = ZS.astype(np.complex64)
    got = astjit.grad(energy)(z)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, 2 * np.conj(z), rtol=1e-5)


# ---- holomorphic=True ----------------------------------------------------------------

def exp_times(z):
    return np.exp(z) * z


def sin_times(z):
    return np.sin(z) * z


def rational(z):
    return (z * z + 1.0) / (z - 2.0) + np.log(z) ** 2


def test_holomorphic_derivative():
    for f in (exp_times, sin_times, rational):
        got = astjit.grad(f, holomorphic=True)(Z)
        numeric = (f(Z + H) - f(Z - H)) / (2 * H)
        np.testing.assert_allclose(got, numeric, rtol=1e-6)
        value, derivative = astjit.value_and_grad(f, holomorphic=True)(Z)
        np.testing.assert_allclose(value, f(Z), rtol=1e-12)
        np.testing.assert_allclose(derivative, got, rtol=1e-12)


def test_second_holomorphic_derivative():
    got = astjit.grad(astjit.grad(sin_times, holomorphic=True), holomorphic=True)(Z)
    np.testing.assert_allclose(got, 2 * np.cos(Z) - Z * np.sin(Z), rtol=1e-9)


def conj_of(z):
    return np.conj(z) * 2.0


def test_non_holomorphic_function_gives_what_jax_gives():
    """holomorphic=True does not check holomorphy (JAX does not): the VJP of 1, here the
    transpose of conj (1, not NaN or an error)."""
    assert astjit.grad(conj_of, holomorphic=True)(Z) == 2


def second_derivative_through_complex(x, i):
    return np.abs(np.exp(i * x + x)) * x


def test_grad_of_grad_with_complex_values_inside():
    """f(x) = |e^(ix + x)| x = x e^x: f'' = (x + 2) e^x."""
    x = 0.3
    got = astjit.grad(astjit.grad(second_derivative_through_complex))(x, np.complex128(1j))
    np.testing.assert_allclose(got, (x + 2) * np.exp(x), rtol=1e-9)


# ---- jvp and vjp with complex tangents and cotangents ---------------------------------

def exp_of_array(z):
    return np.exp(z) * z[0]


def mixed_result(z, x):
    return np.abs(z) * x


def test_jvp_along_complex_tangents():
    dz = np.array([1 + 0.5j, -0.2j, 0.3 + 0j])
    value, tangent = astjit.jvp(exp_of_array, (ZS,), (dz,))
    numeric = (exp_of_array(ZS + H * dz) - exp_of_array(ZS - H * dz)) / (2 * H)
    np.testing.assert_allclose(value, exp_of_array(ZS))
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    value, tangent = astjit.jvp(mixed_result, (ZS, XS), (dz, np.ones(3)))
    numeric = (mixed_result(ZS + H * dz, XS + H) - mixed_result(ZS - H * dz, XS - H)) / (2 * H)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    assert tangent.dtype == np.float64


def test_vjp_of_complex_cotangents():
    """vjp(ct) is the gradient of Re(sum(ct * f(z))) (the transpose, no conjugate)."""
    ct = np.array([0.5 - 1j, 2j, 1.0 + 0j])
    out, pullback = astjit.vjp(exp_of_array, ZS)
    (got,) = pullback(ct)
    np.testing.assert_allclose(out, exp_of_array(ZS))
    np.testing.assert_allclose(
        got, partials(lambda z: np.real(np.sum(ct * exp_of_array(z))), [ZS], 0), rtol=1e-6)
    got_z, got_x = astjit.vjp(mixed_result, ZS, XS)[1](XS)
    np.testing.assert_allclose(got_z, partials(lambda z: np.sum(XS * mixed_result(z, XS)),
                                               [ZS], 0), rtol=1e-6)
    np.testing.assert_allclose(got_x, partials(lambda x: np.sum(XS * mixed_result(ZS, x)),
                                               [XS], 0), rtol=1e-6)


# ---- hypothesis: random points ----------------------------------------------------------

def a_bit_of_everything(z, x):
    w = np.exp(z * x) + np.conj(z) * np.sqrt(z) - np.abs(z - x) / (z + 3.0)
    return np.real(w) * np.imag(w) + np.angle(w + 4.0)


parts = st.floats(-2.0, 2.0).filter(lambda t: abs(t) > 0.05)


@settings(max_examples=25, deadline=None)
@given(re=parts, im=parts, x=st.floats(0.1, 2.0))
def test_random_points(re, im, x):
    z = np.complex128(complex(re, im))
    got_z, got_x = astjit.grad(a_bit_of_everything, argnums=(0, 1))(z, x)
    np.testing.assert_allclose(got_z, partials(a_bit_of_everything, [z, x], 0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_x, partials(a_bit_of_everything, [z, x], 1),
                               rtol=1e-5, atol=1e-6)


# ---- refusals, JAX's ----------------------------------------------------------------

def test_complex_result_needs_holomorphic():
    with pytest.raises(CompileError, match="must be a float") as info:
        astjit.grad(exp_times)(Z)
    assert "holomorphic=True" in str(info.value)


def test_holomorphic_needs_complex_argument_and_result():
    with pytest.raises(CompileError, match="needs complex arguments"):
        astjit.grad(exp_times, holomorphic=True)(0.5)
    with pytest.raises(CompileError, match="needs a complex result"):
        astjit.grad(magnitude, holomorphic=True)(Z)


def repeated_squaring(z, n):
    while n > 0:
        z = z * z * 0.5 + np.sin(z)
        n -= 1
    return z


def magnitude_after_loop(z, n):
    return np.abs(repeated_squaring(z, n))


def test_second_holomorphic_derivative_through_a_loop():
    """grad of a gradient whose loop records a tape is taken in forward mode, along 1 for a
    holomorphic function."""
    def first(z):
        return (repeated_squaring(z + H, 3) - repeated_squaring(z - H, 3)) / (2 * H)

    second = astjit.grad(astjit.grad(repeated_squaring, holomorphic=True), holomorphic=True)
    np.testing.assert_allclose(second(Z, 3), (first(Z + 1e-4) - first(Z - 1e-4)) / 2e-4,
                               rtol=1e-5)


def test_gradient_of_a_loop_gradient_with_a_complex_argument():
    """... and along 1 and along i for a real result: JAX's df/dx - i df/dy."""
    real_of_gradient = astjit.jit(_real_of_gradient)
    got = astjit.grad(real_of_gradient)(Z, 3)
    # differences of the first derivative, which the first check holds to differences
    np.testing.assert_allclose(astjit.grad(magnitude_after_loop)(Z, 3),
                               partials(magnitude_after_loop, [Z, 3], 0), rtol=1e-6)
    numeric = partials(lambda z: real_of_gradient(np.complex128(z), 3), [Z], 0, h=1e-4)
    np.testing.assert_allclose(got, numeric, rtol=1e-6)


def _real_of_gradient(z, n):
    return np.real(astjit.grad(magnitude_after_loop)(z, n))


def parts_of_array(z):
    return np.real(z) * np.imag(z) + np.real(z) ** 2


def test_jvp_of_the_part_views():
    dz = np.array([1 + 0.5j, -0.2j, 0.3 + 0j])
    _, tangent = astjit.jvp(parts_of_array, (ZS,), (dz,))
    numeric = (parts_of_array(ZS + H * dz) - parts_of_array(ZS - H * dz)) / (2 * H)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)


def write_through_the_real_part(z, x):
    w = z * 1.0
    np.real(w)[:] = x
    return np.sum(np.abs(w))


def add_into_the_imaginary_part(z, x):
    w = z * z
    np.imag(w)[1:] += x[:2] ** 2
    w.imag[0] = x[2]
    return np.sum(np.angle(w) * np.real(w)) + np.abs(w[1])


def parts_of_a_slice_by_masks_and_indices(z, x):
    w = z * 1.0
    w[1:].real[0] = x[1]
    w.imag[x > 0] = x[x > 0] * 2.0
    w.real[np.array([0, 2])] = x[0]
    return np.sum(np.abs(w) ** 2 * np.imag(w))


def read_through_the_written_view(z, x):
    w = z * 1.0
    r = np.imag(w)
    r[0] = x[0] * 3.0
    return np.sum(r ** 2) + np.sum(np.abs(w))


def written_argument(z, x):
    np.imag(z)[2] = x[1]
    return np.sum(np.abs(z) ** 2 * np.real(z))


@pytest.mark.parametrize("fn", [write_through_the_real_part, add_into_the_imaginary_part,
                                parts_of_a_slice_by_masks_and_indices,
                                read_through_the_written_view, written_argument])
def test_grad_of_writes_through_part_views(fn):
    """The written value's adjoint is the real part of the array's there, or minus its
    imaginary part (dL/dy of dL/dx - i dL/dy); both zeroed there."""
    got_z, got_x = astjit.grad(fn, argnums=(0, 1))(ZS.copy(), XS)
    np.testing.assert_allclose(got_z, partials(fn, [ZS.copy(), XS], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_x, partials(fn, [ZS.copy(), XS], 1), rtol=1e-6, atol=1e-8)


def test_jvp_of_a_write_through_a_part_view():
    """Forward mode: the view's tangent is the same view of the array's tangent."""
    dz, dx = np.array([1 + 0.5j, -0.2j, 0.3 + 0j]), np.array([0.5, 1.0, -2.0])
    _, tangent = astjit.jvp(write_through_the_real_part, (ZS, XS), (dz, dx))
    numeric = (write_through_the_real_part(ZS + H * dz, XS + H * dx)
               - write_through_the_real_part(ZS - H * dz, XS - H * dx)) / (2 * H)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)


SORTABLE = np.array([[1 + 1j, 0.5 - 2j, -0.3 + 0.2j], [0.7 + 1j, 1.2 - 1j, -0.8 - 0.1j]])


def weighted_sorted_magnitudes(z):
    weights = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    return (np.sum(np.abs(np.sort(z)) * weights) + np.real(np.sort(z * z, axis=0)[1, 2])
            + np.abs(np.median(z)))


def test_grad_through_complex_sort():
    """NumPy sorts complex numbers by real, then imaginary part: the derivative is the
    permutation's, as of a real sort (distinct real parts here: no tie to cross)."""
    got = astjit.grad(weighted_sorted_magnitudes)(SORTABLE)
    np.testing.assert_allclose(got, partials(weighted_sorted_magnitudes, [SORTABLE], 0),
                               rtol=1e-6, atol=1e-8)


def turned_signs(z):
    s = np.sign(z)
    turned = np.real(s) * np.array([1.0, 0.5, 0.0]) - np.imag(s) * np.array([2.0, -1.0, 1.0])
    return np.sum(turned + np.imag(s) ** 2)


def test_grad_and_jvp_of_complex_sign():
    """np.sign(z) = z / |z| changes across z's ray: ds = i s Im(conj(s) dz) / |z| (a real
    sign is a step); at 0 the derivative is taken as 0."""
    np.testing.assert_allclose(astjit.grad(turned_signs)(ZS), partials(turned_signs, [ZS], 0),
                               rtol=1e-6, atol=1e-8)
    dz = np.array([1 + 0.5j, -0.2j, 0.3 + 0j])
    _, tangent = astjit.jvp(turned_signs, (ZS,), (dz,))
    numeric = (turned_signs(ZS + H * dz) - turned_signs(ZS - H * dz)) / (2 * H)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    np.testing.assert_array_equal(astjit.grad(turned_signs)(np.zeros(3, complex)), 0)

