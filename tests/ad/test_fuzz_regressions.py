"""Gradients the differential fuzzer (astjit.fuzz) found wrong, against NumPy's answer and
finite differences."""
import math

import numpy as np
import pytest

import astjit


def remainder(x, y):
    return x % y


def remainder_of_array(a, y):
    return np.sum(np.remainder(a, y) * a)


@pytest.mark.parametrize("x, y, expected", [
    (1e300, -1.0, (1.0, 1e300)),   # floor(x / y) past int64: Python's int floor raised OverflowError
    (7.5, 2.0, (1.0, -3.0)),
    (-7.5, 2.0, (1.0, 4.0)),
])
def test_remainder_gradient_takes_a_float_floor(x, y, expected):
    assert astjit.grad(remainder, argnums=(0, 1))(x, y) == expected


def test_remainder_gradient_of_arrays():
    a, y = np.array([7.5, -3.0, 4.25]), 2.0
    da, dy = astjit.grad(remainder_of_array, argnums=(0, 1))(a, y)
    np.testing.assert_array_equal(da, np.remainder(a, y) + a)   # d/da (a mod y) a = 1 * a + (a mod y)
    assert dy == -np.sum(np.floor(a / y) * a)


def power(a, b):
    return a ** b


def power_of_array(a, b):
    return np.sum(a ** b)


def test_power_gradient_in_the_exponent_at_a_zero_base_is_zero():
    # 0 ** b is flat in b (0 for b > 0): JAX's convention; 0 * log(0) gave NaN
    assert astjit.grad(power, argnums=(0, 1))(0.0, 26.35) == (0.0, 0.0)
    assert astjit.grad(power, argnums=1)(0, 2.5) == 0.0
    assert astjit.grad(power, argnums=1)(2.0, 3.0) == 8.0 * np.log(2.0)
    da, db = astjit.grad(power_of_array, argnums=(0, 1))(np.array([0.0, 2.0]), np.array([3.0, 0.5]))
    np.testing.assert_allclose(da, [0.0, 0.5 / np.sqrt(2.0)])
    np.testing.assert_allclose(db, [0.0, np.sqrt(2.0) * np.log(2.0)])


def fmod(x, y):
    return math.fmod(x, y)


def fmod_of_array(a, y):
    return np.sum(np.fmod(a, y) * a)


@pytest.mark.parametrize("x, y, expected", [
    (1e56, -0.1, (1.0, 1e57)),   # trunc(x / y) past int64: Python's int trunc raised OverflowError
    (7.5, 2.0, (1.0, -3.0)),
    (-7.5, 2.0, (1.0, 3.0)),
])
def test_fmod_gradient_takes_a_float_trunc(x, y, expected):
    dx, dy = astjit.grad(fmod, argnums=(0, 1))(x, y)
    assert dx == expected[0] and dy == pytest.approx(expected[1], rel=1e-15)


def test_fmod_gradient_of_arrays():
    a, y = np.array([7.5, -3.0, 4.25]), 2.0
    da, dy = astjit.grad(fmod_of_array, argnums=(0, 1))(a, y)
    np.testing.assert_array_equal(da, np.fmod(a, y) + a)
    assert dy == -np.sum(np.trunc(a / y) * a)
