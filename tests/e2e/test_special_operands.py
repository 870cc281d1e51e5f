"""Math functions of special values (NaN, ±inf, ±0) that the program picks at run time
among constants, as CPython and NumPy compute them.

LLVM folds a library call over a `select` of constants and reasons about the classes of
values it may see (never NaN, never infinite): its fmod rewrite made `p + fmod(nan, y)`
poison (fuzz seed 41320, program 6580; test_python_semantics.py has that program). A
constant picked at run time reaches folds of that kind; each result is used twice, added
to a number and tested for NaN, as that program used it. Values compare by their bits'
meaning: NaN equals NaN (its sign is not promised, README), 0.0 differs from -0.0. Found
on the way: np.power of scalars had C's bits where NumPy's loop has its own.
"""
import math
import warnings

import numpy as np
import pytest

from astjit import jit

NAN, INF = math.nan, math.inf
SPECIALS = (NAN, INF, -INF, 0.0, -0.0, 2.5, -3.75)


def special(k):
    return (NAN if k == 0 else INF if k == 1 else -INF if k == 2 else 0.0 if k == 3
            else -0.0 if k == 4 else 2.5 if k == 5 else -3.75)


def of_one(fn):
    def one(k, p):
        r = fn(special(k))
        return p + r, math.isnan(r)
    return one


def of_two(fn):
    def two(k, j, p):
        r = fn(special(k), special(j))
        return p + r, math.isnan(r)
    return two


MATH_ONE = (math.sin, math.cos, math.tan, math.atan, math.sinh, math.cosh, math.tanh,
            math.asinh, math.acosh, math.exp, math.expm1, math.log, math.log1p, math.log2,
            math.log10, math.sqrt, math.erf, math.erfc, math.floor, math.ceil, math.trunc,
            math.fabs, math.exp2, math.asin, math.acos, math.atanh)
NUMPY_ONE = (np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh,
             np.tanh, np.arcsinh, np.arccosh, np.arctanh, np.exp, np.expm1, np.exp2, np.log,
             np.log1p, np.log2, np.log10, np.sqrt, np.floor, np.ceil, np.trunc, np.fabs,
             np.absolute, np.sign, np.negative)
MATH_TWO = (math.fmod, math.atan2, math.pow, math.copysign, math.hypot)
NUMPY_TWO = (np.fmod, np.arctan2, np.power, np.copysign, np.hypot, np.maximum, np.minimum,
             np.remainder, np.floor_divide, np.divide)


def outcome(fn, args):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            total, nan = fn(*args)
    except Exception as error:  # noqa: BLE001 - the class is compared
        return "raises", type(error)
    return "value", (math.nan if math.isnan(total) else total,
                     None if math.isnan(total) else math.copysign(1.0, total), nan)


def same(a, b):
    return a == b or (a[0] == b[0] == "value" and math.isnan(a[1][0]) and math.isnan(b[1][0])
                      and a[1][2] == b[1][2])


@pytest.mark.parametrize("fn", MATH_ONE + NUMPY_ONE, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_one_operand(fn):
    plain = of_one(fn)
    compiled = jit(plain)
    for k in range(len(SPECIALS)):
        for p in (1.5, -0.0):
            want, got = outcome(plain, (k, p)), outcome(compiled, (k, p))
            assert same(got, want), (SPECIALS[k], p, got, want)


@pytest.mark.parametrize("fn", MATH_TWO + NUMPY_TWO, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_two_operands(fn):
    plain = of_two(fn)
    compiled = jit(plain)
    for k in range(len(SPECIALS)):
        for j in range(len(SPECIALS)):
            want, got = outcome(plain, (k, j, 1.5)), outcome(compiled, (k, j, 1.5))
            assert same(got, want), (SPECIALS[k], SPECIALS[j], got, want)


def powers_in_a_loop(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.power(x[i], y[i])
    return out, np.power(x[0], y[0]), np.power(float(x[1]), 2.5)


def test_numpy_power_of_scalars_has_numpys_bits():
    """np.power of scalars runs NumPy's loop, which on a CPU with AVX512_SKX is SVML's pow,
    not C's: about one result in twenty differed in the last bit (2.5 ** 2.5)."""
    rng = np.random.default_rng(7)
    x, y = rng.uniform(0.1, 10.0, 2000), rng.uniform(-5.0, 5.0, 2000)
    x[1] = 2.5
    for want, got in zip(powers_in_a_loop(x, y), jit(powers_in_a_loop)(x, y)):
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
