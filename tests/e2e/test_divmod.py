"""divmod(a, b) and np.divmod(x, y) in compiled code (issue 14): the tuple of `//` and `%`,
whose numbers, types and gradients are those two ops'. Compared with CPython and NumPy on
hypothesis' values: Python ints and floats (signed zeros, infinities, NaNs, huge and tiny
numbers; ZeroDivisionError with divmod()'s message), NumPy scalars of every real dtype
(NumPy's wrap-around, its inf and NaN for a zero divisor, NEP 50 promotion with Python
numbers), arrays broadcast together, and the refusal of complex operands (CPython's
TypeError). Results bit for bit (a NaN only as a NaN), types exactly."""
import math
import warnings

import numpy as np
import pytest
from complex_checks import same
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit, vmap
from astjit.errors import CompileError

FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.75, -2.5, 1e-320, 5e-324, 1e308, -1e308,
                     math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True))
INTS = st.one_of(st.integers(-2 ** 63, 2 ** 63 - 1), st.integers(-20, 20))
REAL_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64, np.float32, np.float64, np.bool_]


def python_divmod(a, b):
    return divmod(a, b)


def numpy_divmod(a, b):
    return np.divmod(a, b)


def quotient_and_remainder(a, b):
    q, r = divmod(a, b)
    return q * 2 + r, r


def remainder_only(a, b):
    _, r = divmod(a, b)
    return r


PYTHON, NUMPY, UNPACKED, REMAINDER = map(
    jit, (python_divmod, numpy_divmod, quotient_and_remainder, remainder_only))


def outcome(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, for a zero divisor
        try:
            return fn(*args)
        except ArithmeticError as error:
            return type(error), str(error).split(" (at ")[0]


def same_result(got, expected) -> bool:
    """Equal and of one type: Python numbers by complex_checks.same, NumPy scalars by their
    dtype and bits, arrays by dtype, shape and values (NaN where NaN)."""
    if isinstance(expected, tuple) and not isinstance(expected[0], type):
        return isinstance(got, tuple) and len(got) == len(expected) and \
            all(map(same_result, got, expected))
    if isinstance(expected, (np.ndarray, np.generic)):
        return type(got) is type(expected) and got.dtype == expected.dtype and \
            np.shape(got) == np.shape(expected) and \
            np.array_equal(got, expected, equal_nan=got.dtype.kind == "f") and \
            np.array_equal(np.signbit(got), np.signbit(expected))
    return same(got, expected)


def check(compiled, fn, *args):
    got, expected = outcome(compiled, *args), outcome(fn, *args)
    assert same_result(got, expected), (args, got, expected)


@settings(max_examples=300, deadline=None)
@given(st.one_of(FLOATS, INTS), st.one_of(FLOATS, INTS))
def test_python_numbers_as_cpython(a, b):
    """Floor quotient and remainder with the divisor's sign, -0.0's and inf's corner cases,
    divmod()'s ZeroDivisionError (ints wrap at int64 as `//` does: kept to no overflow)."""
    if isinstance(a, int) and isinstance(b, int) and (a, b) == (-2 ** 63, -1):
        return
    for compiled, fn in ((PYTHON, python_divmod), (UNPACKED, quotient_and_remainder),
                         (REMAINDER, remainder_only)):
        if compiled is UNPACKED and any(isinstance(v, int) for v in (a, b)) and \
                not any(isinstance(v, float) for v in (a, b)):
            continue  # q * 2 of a huge int leaves int64
        check(compiled, fn, a, b)
    check(NUMPY, numpy_divmod, a, b) if _numpy_accepts(a, b) else None


def _numpy_accepts(a, b) -> bool:
    """NumPy converts a Python int operand to int64 (NEP 50): within its range."""
    return all(not isinstance(v, int) or -2 ** 63 <= v < 2 ** 63 for v in (a, b))


@pytest.mark.parametrize("a, b", [(-0.0, 1.0), (0.0, -1.0), (-0.0, -1.0), (5.0, math.inf),
                                  (-5.0, math.inf), (5.0, -math.inf), (math.inf, 2.0),
                                  (math.nan, 1.0), (1.0, math.nan), (1e308, 1e-308),
                                  (-7, 2), (7, -2), (True, 2), (7, 2.5), (-1, 0.3)])
def test_corner_cases_as_cpython(a, b):
    check(PYTHON, python_divmod, a, b)
    check(NUMPY, numpy_divmod, a, b)


@pytest.mark.parametrize("a, b, message", [(1.0, 0.0, "float divmod()"),
                                           (1, 0.0, "float divmod()"),
                                           (1.0, -0, "float divmod()"),
                                           (1, 0, "integer division or modulo by zero"),
                                           (True, False, "integer division or modulo by zero")])
def test_zero_divisor_raises_divmods_error(a, b, message):
    for compiled in (PYTHON, REMAINDER):
        with pytest.raises(ZeroDivisionError) as info:
            compiled(a, b)
        assert str(info.value).split(" (at ")[0] == message


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(REAL_DTYPES), st.sampled_from(REAL_DTYPES), st.data())
def test_numpy_scalars_as_numpy(ta, tb, data):
    """divmod and np.divmod of NumPy scalars: NumPy's types, wrap-around (int8 -128 // -1),
    0 and 0 for an integer zero divisor, inf/NaN for a float one."""
    a, b = (_scalar(t, data) for t in (ta, tb))
    check(PYTHON, python_divmod, a, b)
    check(NUMPY, numpy_divmod, a, b)
    low = 0 if np.dtype(ta).kind in "ub" else -5  # NumPy's OverflowError otherwise
    check(NUMPY, numpy_divmod, a, data.draw(st.integers(low, 5)))
    check(PYTHON, python_divmod, float(data.draw(FLOATS)), b)


def _scalar(t, data):
    info = np.iinfo(t) if np.dtype(t).kind in "iu" else None
    if info is not None:
        value = data.draw(st.one_of(st.integers(int(info.min), int(info.max)),
                                    st.sampled_from([0, 1, int(info.min), int(info.max)])))
        return t(value)
    if np.dtype(t) == np.bool_:
        return np.bool_(data.draw(st.booleans()))
    with np.errstate(over="ignore"):  # a float64 beyond float32's range: +-inf
        return t(data.draw(FLOATS))


def test_wrap_around_and_zero_divisors_as_numpy():
    for a, b in [(np.int64(-2 ** 63), np.int64(-1)), (np.int8(-128), np.int8(-1)),
                 (np.int64(5), np.int64(0)), (np.uint8(5), np.uint8(0)),
                 (np.float64(1.0), np.float64(0.0)), (np.float64(-0.0), np.float64(0.0)),
                 (np.float32(3.0), 2.0), (np.int32(7), 2), (np.float64(1.0), 0)]:
        check(PYTHON, python_divmod, a, b)
        check(NUMPY, numpy_divmod, a, b)


ARRAYS = [np.arange(-6, 6), np.arange(-6.0, 6.0) * 0.75, np.array([0.0, -0.0, np.inf, -np.inf,
                                                                    np.nan, 1e308, 5e-324])]


@pytest.mark.parametrize("x", ARRAYS)
@pytest.mark.parametrize("y", [3, -2.5, 0, -0.0, np.float32(2.0), np.array([[2], [-3]]),
                               np.array([0.5, -0.0, np.inf]).reshape(3, 1)])
def test_arrays_as_numpy(x, y):
    """np.divmod and divmod of arrays (ndarray.__divmod__ is np.divmod), broadcasting."""
    check(NUMPY, numpy_divmod, x, y)
    check(PYTHON, python_divmod, x, y)
    check(NUMPY, numpy_divmod, y, x)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(REAL_DTYPES), st.sampled_from(REAL_DTYPES),
       st.integers(1, 7), st.data())
def test_array_dtypes_as_numpy(ta, tb, n, data):
    x = np.array([_scalar(ta, data) for _ in range(n)], dtype=ta)
    y = np.array([_scalar(tb, data) for _ in range(n)], dtype=tb)
    check(NUMPY, numpy_divmod, x, y)
    check(PYTHON, python_divmod, x, y)


@pytest.mark.parametrize("a, b", [(1j, 1), (1, 1j), (2.0, 1 + 1j), (1j, 0)])
def test_complex_refused_as_cpython(a, b):
    """CPython's TypeError, at compile time, with what to write instead."""
    with pytest.raises(TypeError) as expected:
        divmod(a, b)
    with pytest.raises(CompileError) as refused:
        jit(python_divmod)(a, b)
    assert str(expected.value) in str(refused.value)
    assert "(z / w).real // 1" in str(refused.value)


def test_numpy_refuses_complex_arrays():
    with pytest.raises(TypeError):
        np.divmod(np.array([1j]), 1)
    with pytest.raises(CompileError):
        jit(numpy_divmod)(np.array([1j, 2.0]), 1.0)


def mixed_loss(x, y):
    q, r = divmod(x, y)
    return q * 0.5 + r * r + r * y


def numpy_loss(x, y):
    q, r = np.divmod(x, y)
    return np.sum(q + r * r * y)


H = 1e-6


@pytest.mark.parametrize("x, y", [(7.3, 2.0), (-7.3, 2.0), (7.3, -2.0), (0.4, 0.75),
                                  (-5.1, -1.3)])
def test_gradient_as_finite_differences(x, y):
    """d/dx divmod's remainder is 1, d/dy -floor(x / y); the quotient's derivative is 0."""
    dx, dy = grad(mixed_loss, argnums=(0, 1))(x, y)
    assert dx == pytest.approx((mixed_loss(x + H, y) - mixed_loss(x - H, y)) / (2 * H), rel=1e-6)
    assert dy == pytest.approx((mixed_loss(x, y + H) - mixed_loss(x, y - H)) / (2 * H), rel=1e-6)


def test_array_gradient_as_finite_differences():
    x, y = np.array([7.3, -7.3, 0.4, 5.9]), np.array([2.0, 2.0, -0.75, 1.3])
    dx = grad(numpy_loss)(x, y)
    dy = grad(numpy_loss, argnums=1)(x, y)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = H
        assert dx[i] == pytest.approx((numpy_loss(x + e, y) - numpy_loss(x - e, y)) / (2 * H),
                                      rel=1e-6)
        assert dy[i] == pytest.approx((numpy_loss(x, y + e) - numpy_loss(x, y - e)) / (2 * H),
                                      rel=1e-6)


def python_float_divmod(a, b):
    return divmod(float(a), float(b))


def test_vmap_raises_divmods_error():
    """vmap computes every example at once and raises what the first failing one would
    (an array's elements are NumPy scalars: Python floats made of them)."""
    batched = vmap(python_float_divmod)
    got = batched(np.array([7.5, -3.0]), np.array([2.0, -0.5]))
    assert all(same_result(g, e) for g, e in zip(got, np.divmod([7.5, -3.0], [2.0, -0.5])))
    with pytest.raises(ZeroDivisionError, match="float divmod()"):
        jit(batched)(np.array([7.5, -3.0]), np.array([2.0, 0.0]))
