"""Gradients the differential fuzzer (astjit.fuzz) found wrong, against NumPy's answer and
finite differences."""
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
