"""cmath's trigonometric and hyperbolic functions, their inverses and `isclose` in compiled
code (issue 14): bit for bit as CPython 3.11's Modules/cmathmodule.c computes them, with its
ValueError and OverflowError, on hypothesis' complexes with special, huge, tiny and subnormal
parts; their derivatives (holomorphic) against central differences."""
import cmath
import math

import numpy as np
import pytest
from complex_checks import COMPLEXES, PARTS, check
from hypothesis import given, settings
from hypothesis import strategies as st

import astjit
from astjit import jit
from astjit.errors import CompileError

NAMES = ("sin", "cos", "tan", "sinh", "cosh", "tanh",
         "asin", "acos", "atan", "asinh", "acosh", "atanh")


def one_of(z, k):
    """cmath's function NAMES[k] of z: one compiled function for all, each raising alone."""
    if k == 0:
        return cmath.sin(z)
    if k == 1:
        return cmath.cos(z)
    if k == 2:
        return cmath.tan(z)
    if k == 3:
        return cmath.sinh(z)
    if k == 4:
        return cmath.cosh(z)
    if k == 5:
        return cmath.tanh(z)
    if k == 6:
        return cmath.asin(z)
    if k == 7:
        return cmath.acos(z)
    if k == 8:
        return cmath.atan(z)
    if k == 9:
        return cmath.asinh(z)
    if k == 10:
        return cmath.acosh(z)
    return cmath.atanh(z)


ONE_OF = jit(one_of)
NEAR = st.sampled_from([1.0, -1.0, 709.0, -710.5, 711.0, 1e-300, -1e-155, 1.34e154, 4.5e307,
                        math.pi / 2, 1 + 2 ** -52, 1 - 2 ** -53, 0.71, 1.73])
"""Parts at cmath's thresholds: log(DBL_MAX / 4), sqrt(DBL_MIN), sqrt(DBL_MAX / 4),
DBL_MAX / 4, atanh's x = 1, log's 0.71 and 1.73."""


@settings(max_examples=250, deadline=None)
@given(st.one_of(COMPLEXES, st.builds(complex, st.one_of(NEAR, PARTS), st.one_of(NEAR, PARTS))))
def test_functions_as_cpython(z):
    """Every function on every example: values bit for bit, errors by type and message."""
    for k, name in enumerate(NAMES):
        check(ONE_OF, lambda z, k: getattr(cmath, name)(z), z, k)


def of_numbers(x):
    return cmath.sin(x), cmath.acosh(x), cmath.atanh(x / 4)


def test_real_arguments_convert_as_cmath():
    fn = jit(of_numbers)
    for x in (3, -2.5, True):
        check(fn, of_numbers, x)


def close(a, b, rel_tol, abs_tol):
    return (cmath.isclose(a, b), cmath.isclose(a, b, rel_tol=rel_tol),
            cmath.isclose(a, b, abs_tol=abs_tol, rel_tol=rel_tol), cmath.isclose(a, 1, abs_tol=2))


CLOSE = jit(close)
TOLERANCES = st.one_of(st.sampled_from([0.0, 1e-9, 1e-3, 0.5, math.inf, math.nan, -1e-9]),
                       st.floats(0, 1))


@settings(max_examples=300, deadline=None)
@given(COMPLEXES, st.one_of(COMPLEXES, st.floats(-1e-6, 1e-6)), TOLERANCES, TOLERANCES)
def test_isclose_as_cpython(a, offset, rel_tol, abs_tol):
    """Equal parts (infinities too), an infinite part, the three tolerances; ValueError for a
    negative one. `offset` a small change of a or another complex."""
    b = offset if isinstance(offset, complex) else a * (1 + offset)
    check(CLOSE, close, a, b, rel_tol, abs_tol)
    check(CLOSE, close, a, a, rel_tol, abs_tol)


def misused_isclose(a, b):
    return cmath.isclose(a, b, 1e-3)


def test_isclose_tolerances_are_keywords():
    with pytest.raises(CompileError, match="rel_tol=..., abs_tol="):
        jit(misused_isclose)(1j, 1j)


# ---- derivatives: f'(z) (holomorphic) against central differences ----------------

def mixture(z):
    """Each function weighted apart, so that every derivative rule counts."""
    w = (cmath.sin(z) + 2j * cmath.cos(z) - 0.5 * cmath.tan(z) + 0.25j * cmath.sinh(z)
         + 3 * cmath.cosh(z) - 1j * cmath.tanh(z))
    return w + (0.7 * cmath.asin(z) + 1.5j * cmath.acos(z) - 2 * cmath.atan(z)
                + 0.5j * cmath.asinh(z) + 1.25 * cmath.acosh(z) - 0.75j * cmath.atanh(z))


def derivative(z, h=1e-6):
    return (mixture(z + h) - mixture(z - h)) / (2 * h)


@pytest.mark.parametrize("z", [0.3 + 0.4j, -0.6 + 0.2j, 1.7 - 0.9j])
def test_derivatives_against_central_differences(z):
    """grad(holomorphic=True) and jvp give f'(z) as a Python complex."""
    got = astjit.grad(mixture, holomorphic=True)(z)
    assert type(got) is complex and abs(got - derivative(z)) < 1e-6 * abs(got)
    value, tangent = astjit.jvp(mixture, (z,), (1 + 0j,))
    assert type(tangent) is complex and abs(tangent - got) < 1e-12 * abs(got)
    assert value == mixture(z)


def test_gpu_host_program_runs_cmath_and_vectorize_refuses_it():
    """On the GPU targets a cmath function of a Python complex runs in the host program
    (cmath itself, CPython's by construction); a GPU-vectorized function refuses it, as it
    refuses cmath.sqrt (its device code has no CPython errno)."""
    z = 0.3 + 0.2j
    got = jit(mixture, target="cuda-sim")(z)
    assert type(got) is complex and got == mixture(z)
    with pytest.raises(CompileError, match="'cmath_sin' raises in Python; not supported in a "
                                           "GPU-vectorized function"):
        astjit.vectorize(sine, target="cuda-sim")(np.array([1 + 1j]))


def sine(z):
    return cmath.sin(z)
