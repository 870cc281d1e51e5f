"""Jacobians and Hessians of complex functions, JAX's rules (docs/arrays.md: gradients):
`holomorphic=True` gives df/dz of complex arguments and result; without it, jacfwd takes
float arguments (a complex result's Jacobian is complex) and jacrev a float result (of a
complex argument, df/dx - i df/dy per element, as `grad`). Checked against central
differences in both the real and the imaginary direction."""
from __future__ import annotations

import numpy as np
import pytest

import astjit
from astjit.errors import CompileError

H = 1e-6
ZS = np.array([1 + 1j, 0.5 - 2j, -0.3 + 0.2j])
XS = np.array([0.3, -1.2, 2.0])
C = np.complex128(0.5 - 2j)


def differences(fn, args, k, step, h=H):
    """The derivative of `fn`'s result along `step` times each basis vector of argument k,
    by central differences: the result's shape followed by the argument's."""
    x = np.asarray(args[k])
    columns = []
    for index in np.ndindex(*x.shape):
        bump = np.zeros(x.shape, dtype=x.dtype)
        bump[index] = step * h
        plus, minus = list(args), list(args)
        plus[k], minus[k] = x + bump, x - bump
        if x.ndim == 0:
            plus[k], minus[k] = x.dtype.type(plus[k]), x.dtype.type(minus[k])
        columns.append((np.asarray(fn(*plus)) - np.asarray(fn(*minus))) / (2 * h))
    found = np.stack(columns, axis=-1)
    return found.reshape(found.shape[:-1] + x.shape)


def holomorphic(z):
    w = z * 1.0
    w[0] = z[1] ** 2  # a write: jacfwd's passes take copies
    return np.exp(w) * z[2] + np.sin(z) * w


def real_valued(z, x):
    return np.abs(z) ** 2 * np.real(z[::-1]) + x * np.imag(z)


def of_a_real(x):
    return np.exp(x * C) + x[0]


def cubes(z):
    return np.sum(z ** 3 * np.exp(z[1]))


@pytest.mark.parametrize("transform", [astjit.jacfwd, astjit.jacrev])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_holomorphic_jacobian(transform, dtype):
    """df/dz: the difference quotient along 1, and along i divided by i."""
    z = ZS.astype(dtype)
    got = transform(holomorphic, holomorphic=True)(z)
    assert got.dtype == dtype and got.shape == (3, 3)
    tol = 1e-6 if dtype == np.complex128 else 1e-3
    for step in (1.0, 1j):
        numeric = differences(holomorphic, [ZS], 0, step) / step
        np.testing.assert_allclose(got, numeric, rtol=tol, atol=tol)


def test_jacrev_of_a_float_result_of_complex_and_float_arguments():
    jz, jx = astjit.jacrev(real_valued, argnums=(0, 1))(ZS, XS)
    assert jz.dtype == np.complex128 and jx.dtype == np.float64
    numeric = differences(real_valued, [ZS, XS], 0, 1.0) - 1j * differences(real_valued,
                                                                           [ZS, XS], 0, 1j)
    np.testing.assert_allclose(jz, numeric, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jx, differences(real_valued, [ZS, XS], 1, 1.0), rtol=1e-6,
                               atol=1e-8)


def test_jacfwd_of_a_complex_result_of_a_float_argument():
    got = astjit.jacfwd(of_a_real)(XS)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, differences(of_a_real, [XS], 0, 1.0), rtol=1e-6, atol=1e-8)


def test_holomorphic_hessian():
    """jacfwd(jacrev): forward mode through the reverse pass's un-broadcasting sums."""
    got = astjit.hessian(cubes, holomorphic=True)(ZS)
    first = astjit.grad(cubes, holomorphic=True)
    for step in (1.0, 1j):
        numeric = differences(first, [ZS], 0, step, h=1e-5) / step
        np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def broadcast(z, w):
    return np.sum((z * w) ** 2 + np.exp(w) / (z + 3.0))


def test_holomorphic_hessian_through_broadcasting():
    """The reverse pass sums adjoints to the operands' shapes (sum_to_like), and forward
    mode differentiates those sums of complex adjoints."""
    w = np.array([[0.2 - 1j], [1.5 + 0.3j]])
    got = astjit.hessian(broadcast, holomorphic=True)(ZS, w)
    first = astjit.grad(broadcast, holomorphic=True)
    numeric = differences(lambda z: first(z, w), [ZS], 0, 1.0, h=1e-5)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def sum_of_squares(z):
    return np.sum(np.abs(z) ** 2)


def conjugate(z):
    return np.conj(z)


@pytest.mark.parametrize("call, message", [
    (lambda: astjit.jacfwd(sum_of_squares)(ZS), "jacfwd needs float arguments"),
    (lambda: astjit.hessian(sum_of_squares)(ZS), "jacfwd needs float arguments"),
    (lambda: astjit.jacrev(conjugate)(ZS), "jacrev needs a float result"),
    (lambda: astjit.jacrev(of_a_real)(XS), "jacrev needs a float result"),
    (lambda: astjit.jacfwd(of_a_real, holomorphic=True)(XS), "needs complex arguments"),
    (lambda: astjit.hessian(sum_of_squares, holomorphic=True)(ZS), "needs a complex result"),
])
def test_refusals_are_jaxs(call, message):
    """A TypeError where JAX raises one, saying what to pass."""
    with pytest.raises(CompileError, match=message) as info:
        call()
    assert isinstance(info.value, TypeError)


def test_holomorphic_is_not_checked():
    """As JAX: of np.conj the transpose's and the tangent's 1, not an error."""
    for transform in (astjit.jacfwd, astjit.jacrev):
        np.testing.assert_array_equal(transform(conjugate, holomorphic=True)(ZS), np.eye(3))
