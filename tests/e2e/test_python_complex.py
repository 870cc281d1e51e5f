"""Python's `complex` in compiled code (issue 14): arguments and results, `1j` literals,
`complex()`, `.real`/`.imag`/`.conjugate()`, `abs`, the operators with CPython's algorithms
(`/` and `**` of Objects/complexobject.c, their ZeroDivisionError and OverflowError), NEP 50's
weak complex beside NumPy scalars and arrays, and the refusals (ordering, `int()`/`float()`).
Results are compared with CPython's bit for bit (a NaN part only as a NaN), errors by type and
message, on hypothesis' values with infinities, NaNs, signed zeros, huge and tiny parts."""
import cmath
import math

import numpy as np
import pytest
from complex_checks import COMPLEXES, check
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.errors import CompileError

EXPONENTS = st.one_of(COMPLEXES, st.builds(complex, st.integers(-120, 120), st.just(0.0)),
                      st.builds(complex, st.sampled_from([0.5, -0.5, 2.5, 100.0, -100.0]),
                                st.sampled_from([0.0, -0.0])))


def arithmetic(z, w):
    return z + w, z - w, z * w, -z, +z, z == w, z != w, 2 * z, z - 1.5, 1j * z


def divide(z, w):
    return z / w


def power(z, w):
    return z ** w


def magnitude(z):
    return abs(z)


def parts(z):
    return z.real, z.imag, z.conjugate(), complex(z.real, z.imag), bool(z), not z


ARITHMETIC, DIVIDE, POWER, MAGNITUDE, PARTS_JIT = map(
    jit, (arithmetic, divide, power, magnitude, parts))


@settings(max_examples=300, deadline=None)
@given(COMPLEXES, COMPLEXES)
def test_arithmetic_and_division_as_cpython(z, w):
    check(ARITHMETIC, arithmetic, z, w)
    check(DIVIDE, divide, z, w)
    check(DIVIDE, divide, z, complex(0.0, -0.0))


@settings(max_examples=400, deadline=None)
@given(COMPLEXES, EXPONENTS)
def test_power_as_cpython(z, w):
    """c_powi for integral exponents up to 100 in magnitude, _Py_c_pow otherwise; the
    ZeroDivisionError of 0 to a negative or complex power, OverflowError of an infinite part."""
    check(POWER, power, z, w)


@settings(max_examples=200, deadline=None)
@given(COMPLEXES)
def test_abs_and_parts_as_cpython(z):
    check(MAGNITUDE, magnitude, z)
    check(PARTS_JIT, parts, z)


def test_errors_name_cpython_messages():
    with pytest.raises(ZeroDivisionError, match="complex division by zero"):
        DIVIDE(1j, 0j)
    with pytest.raises(ZeroDivisionError, match="0.0 to a negative or complex power"):
        POWER(0j, -2 + 0j)
    with pytest.raises(OverflowError, match="complex exponentiation"):
        POWER(1e300 + 0j, 2 + 0j)
    with pytest.raises(OverflowError, match="absolute value too large"):
        MAGNITUDE(1.5e308 + 1.5e308j)


def literal_and_complex(a, b):
    return complex(a, b), complex(a), complex(), 3 + 4j, complex(b, a) * 1j  # noqa: UP018


def test_literals_and_complex_builtin():
    fn = jit(literal_and_complex)
    for a, b in [(1.0, 2.0), (-0.0, math.inf), (3, True)]:
        check(fn, literal_and_complex, a, b)


def mixed(x, c):
    return x * c, x + 1j, x / c


# (argument, the other, expected result type) of NEP 50 with a weak complex
PROMOTIONS = [
    (np.ones(2, np.complex64), 1j, np.complex64),
    (np.ones(2, np.float32), 1j, np.complex64),
    (np.ones(2, np.float64), 1j, np.complex128),
    (np.ones(2, np.int64), 1j, np.complex128),
    (np.float64(1), 1j, np.complex128),
    (np.float32(1), 1j, np.complex64),
    (np.complex64(1), 1j, np.complex64),
    (np.int32(1), 1j, np.complex128),
    (np.complex128(1), 1j, np.complex128),
    (1, 1j, complex),
    (1.5, 1j, complex),
    (True, 1j, complex),
    (1 + 2j, np.float32(2), np.complex64),
    (1 + 2j, np.float64(2), complex),  # np.float64 is a float: Python's complex takes it
]


@pytest.mark.parametrize("x, c, expected", PROMOTIONS, ids=range(len(PROMOTIONS)))
def test_weak_complex_promotes_as_numpy(x, c, expected):
    """Each row as NumPy 2 itself computes it: x * c of the expected type, and every
    result of `mixed` of NumPy's (or Python's) type and value."""
    product = x * c
    assert (product.dtype.type if isinstance(product, np.ndarray) else type(product)) is expected
    got, reference = jit(mixed)(x, c), mixed(x, c)
    for g, r in zip(got, reference):
        assert type(g) is type(r) and getattr(g, "dtype", None) == getattr(r, "dtype", None)
        np.testing.assert_array_equal(g, r)


def containers(pair, z):
    a, b = pair
    return (a * z, (b, z.imag)), [z]


def test_complex_in_tuples_and_lists():
    fn = jit(containers)
    assert fn((1j, 2 + 0j), 3 - 1j) == containers((1j, 2 + 0j), 3 - 1j)


def ordered(z, w):
    return z < w


def to_float(z):
    return float(z)


def to_int(z):
    return int(z)


def largest(z, w):
    return max(z, w)


def floor_quotient(z, w):
    return z // w


def remainder(z, w):
    return z % w


def rounded(z):
    return round(z)


def floored(z):
    return math.floor(z)


@pytest.mark.parametrize("fn, pattern", [
    (ordered, "'<' not supported between instances of 'complex' and 'complex'"),
    (largest, r"max\(\) of a Python complex"), (to_float, "float"), (to_int, "int"),
    (floor_quotient, r"unsupported operand type\(s\) for //: 'complex' and 'complex' "
                     r"\(complex numbers have no floor division or remainder: .*\(z / w\)"),
    (remainder, r"unsupported operand type\(s\) for %: 'complex' and 'complex'"),
    (rounded, r"type complex doesn't define __round__ method \(round the parts"),
    (floored, "must be real number, not complex")])
def test_python_type_errors_are_compile_errors(fn, pattern):
    """CPython's TypeError, at compile time, with what to write instead."""
    with pytest.raises(CompileError, match=pattern):
        jit(fn)(1j, 2j) if fn in (ordered, largest, floor_quotient, remainder) else jit(fn)(1j)


def test_numpy_complex_refusals_name_numpy_types():
    """NumPy's complex scalars as Python names them; arrays keep NumPy's ufunc message."""
    with pytest.raises(CompileError, match="for //: 'numpy.complex128' and 'int'"):
        jit(floor_quotient)(np.complex128(1j), 2)
    with pytest.raises(CompileError, match="type numpy.complex64 doesn't define __round__"):
        jit(rounded)(np.complex64(1j))
    with pytest.raises(CompileError, match="ufunc 'remainder' not supported"):
        jit(remainder)(np.ones(2, np.complex128), 2.0)


def cmath_functions(z, r, phi):
    return (cmath.phase(z), cmath.polar(z), cmath.rect(r, phi), cmath.isnan(z),
            cmath.isinf(z), cmath.isfinite(z), cmath.sqrt(z))


def exponential(z):
    return cmath.exp(z)


def logarithms(z, w):
    return cmath.log(z), cmath.log10(z), cmath.log(z, w), cmath.log(w, 2)


CMATH, EXP, LOGS = jit(cmath_functions), jit(exponential), jit(logarithms)
REALS = st.one_of(st.sampled_from([0.0, -0.0, 2.5, -2.5, 1e308, math.inf, -math.inf, math.nan]),
                  st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=300, deadline=None)
@given(COMPLEXES, REALS, REALS)
def test_cmath_as_cpython(z, r, phi):
    """phase, polar (its OverflowError), rect (its special values and ValueError), the
    predicates, sqrt (subnormal scaling, special values), exp (past log(DBL_MAX / 4), its
    ValueError and OverflowError), log (scaled, log1p near |z| = 1, ValueError at 0; to a
    base: Python's division, errno as CPython leaves it); every pair of special classes
    comes up."""
    check(CMATH, cmath_functions, z, r, phi)
    check(EXP, exponential, z)
    check(EXP, exponential, complex(r, phi))
    check(LOGS, logarithms, z, complex(r, phi))
    check(LOGS, logarithms, z, 1 + 0j)


def cmath_constants_and_conversions(x):
    return cmath.pi, cmath.e, cmath.tau, cmath.inf, cmath.infj, cmath.nanj, cmath.phase(x)


def test_cmath_constants_and_real_arguments():
    fn = jit(cmath_constants_and_conversions)
    for x in (-1, 2.5, np.float32(-0.0), np.float64(-3), True):
        check(fn, cmath_constants_and_conversions, x)


# ---- gradients: JAX's convention on Python complex arguments ------------------------

def energy(z, x):
    w = z * z / (1.5 - 0.5j) + x * cmath.rect(1.0, 0.3) + complex(x, 2.0 * x)
    w = cmath.sqrt(w) + cmath.exp(0.5 * w)
    return abs(w) + (w ** 2).real + cmath.phase(w + 3.0) - w.conjugate().imag


def holomorphic(z):
    return z ** 3 / (2.0 + 1j) - 1j * z


def central(f, args, k, h=1e-6):
    """df/dx - i df/dy at args[k] (a complex) by central differences, or df/dx of a float."""
    def moved(step):
        return f(*[a + step if i == k else a for i, a in enumerate(args)])
    dx = (moved(h) - moved(-h)) / (2 * h)
    if not isinstance(args[k], complex):
        return dx
    return dx - 1j * (moved(1j * h) - moved(-1j * h)) / (2 * h)


def test_grad_of_python_complex_arguments():
    """grad of a real-valued f(z, x) is df/dx - i df/dy (a Python complex) for z and df/dx
    for x; holomorphic=True gives f'(z)."""
    import astjit

    z, x = 0.7 - 0.4j, 0.9
    got_z, got_x = astjit.grad(energy, argnums=(0, 1))(z, x)
    assert type(got_z) is complex and type(got_x) is float
    assert abs(got_z - central(energy, [z, x], 0)) < 1e-6
    assert abs(got_x - central(energy, [z, x], 1)) < 1e-6
    derivative = astjit.grad(holomorphic, holomorphic=True)(z)
    assert abs(derivative - (3 * z ** 2 / (2.0 + 1j) - 1j)) < 1e-12


def tangent_path(z, x):
    w = cmath.sqrt(z) * cmath.exp(0.3 * z) + cmath.log(z) - cmath.log10(z) + complex(x, 2 * x)
    return w, cmath.phase(w)


def test_jvp_of_python_complex_arguments():
    """Forward mode along a complex tangent dz (and a float dx) is the difference quotient
    of f(z + h dz, x + h dx)."""
    import astjit

    z, x, dz, dx, h = 0.7 - 0.4j, 0.9, 0.3 + 0.2j, 0.5, 1e-7
    out, tangent = astjit.jvp(tangent_path, (z, x), (dz, dx))
    assert out == tangent_path(z, x)
    quotients = [(a - b) / (2 * h) for a, b in zip(tangent_path(z + h * dz, x + h * dx),
                                                   tangent_path(z - h * dz, x - h * dx))]
    for got, expected in zip(tangent, quotients):
        assert abs(got - expected) < 1e-6


def parts_of_numbers(z):
    return z.real, z.imag, np.real(z), np.imag(z)


@pytest.mark.parametrize("z", [np.complex128(1 - 2j), np.complex64(1 - 2j), 1 - 2j, 2.5,
                               np.float64(3), np.float32(1), True, 3])
def test_parts_keep_numpy_and_python_types(z):
    """np.complex128's `.real` is an np.float64, a Python complex's a float, True's an int."""
    got, expected = jit(parts_of_numbers)(z), parts_of_numbers(z)
    assert [type(g) for g in got] == [type(e) for e in expected] and got == expected
