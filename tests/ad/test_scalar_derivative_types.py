"""The type of a derivative of a scalar function is its primal's kind (docs/guide.md: Python
complex numbers): of a Python float a float, of an np.float64 an np.float64, of a Python
complex a complex, of an np.complex128 an np.complex128 - for grad, jacfwd, jacrev, hessian
(a derived graph inlined into another keeps the strength), jvp's tangent and vjp's cotangent.
JAX returns 0-d arrays here; the values are checked against central differences."""
import numpy as np
import pytest

import astjit
from astjit import jit


def cubic(x):
    return x * x * x - 2.5 * x


ARGUMENTS = [1.25, np.float64(1.25), 0.75 - 0.5j, np.complex128(0.75 - 0.5j)]
H = 1e-5


def derivative(x):
    """f'(x) by central differences (along the real axis: f is holomorphic)."""
    return (cubic(x + H) - cubic(x - H)) / (2 * H)


def second_derivative(x):
    return (derivative(x + H) - derivative(x - H)) / (2 * H)


@pytest.mark.parametrize("x", ARGUMENTS, ids=lambda x: type(x).__name__)
def test_derivatives_have_the_arguments_type(x):
    holomorphic = isinstance(x, complex)
    first = [astjit.grad(cubic, holomorphic=holomorphic)(x),
             astjit.jacfwd(cubic, holomorphic=holomorphic)(x),
             astjit.jacrev(cubic, holomorphic=holomorphic)(x)]
    hessian = astjit.hessian(cubic, holomorphic=holomorphic)(x)
    out, tangent = astjit.jvp(cubic, (x,), (type(x)(0.5),))
    value, pullback = astjit.vjp(cubic, x)
    (cotangent,) = pullback(type(x)(1.5))
    assert [type(r) for r in (*first, hessian, out, tangent, value, cotangent)] == [type(x)] * 8
    for got in first:
        assert abs(got - derivative(x)) < 1e-6
    assert abs(hessian - second_derivative(x)) < 1e-4
    assert out == value == jit(cubic)(x) and abs(out - cubic(x)) < 1e-12
    assert abs(tangent - 0.5 * derivative(x)) < 1e-6
    assert abs(cotangent - 1.5 * derivative(x)) < 1e-6
