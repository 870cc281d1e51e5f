"""Every NumPy dtype through compiled code, against NumPy: the boundary (arrays and NumPy
scalars in and out), NEP 50 promotion (against np.result_type), wrap-around arithmetic
at the extremes, integer division and modulo (by zero too), comparisons, casts,
reductions, element reads and writes, creation with dtype=, complex arithmetic and
bool arithmetic. Values from hypothesis (derandomized: the same examples every run),
the extremes of each integer dtype always among them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astjit import CompileError, jit
from astjit.ir.types import NUMPY_DTYPES, ScalarType, numpy_promote

INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [np.float32, np.float64]
COMPLEX = [np.complex64, np.complex128]
ALL = [*INTS, *FLOATS, *COMPLEX, np.bool_]
SETTINGS = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


def name(dtype) -> str:
    return np.dtype(dtype).name


def values(dtype, n: int = 6):
    """Arrays of `dtype` of length n, the dtype's extremes among the drawn values."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        element = st.one_of(st.sampled_from([info.min, info.max, 0, 1, -1 if dt.kind == "i" else 2]),
                            st.integers(int(info.min), int(info.max)))
    elif dt.kind == "b":
        element = st.booleans()
    elif dt.kind == "f":
        element = st.floats(-1e3, 1e3, width=dt.itemsize * 8)
    else:
        part = st.floats(-1e3, 1e3, width=dt.itemsize * 4)
        element = st.builds(complex, part, part)
    return st.lists(element, min_size=n, max_size=n).map(lambda xs: np.array(xs, dtype=dt))


def same(got, expected):
    """Equal values of the same type: arrays by dtype, shape and value (floats closely),
    NumPy scalars by dtype."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
        return
    assert type(got) is type(expected), (got, expected)
    e, g = np.asarray(expected), np.asarray(got)
    assert g.dtype == e.dtype and g.shape == e.shape, (got, expected)
    if e.dtype.kind in "fc":
        tol = 1e-5 if e.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True)
    else:
        assert np.array_equal(g, e), (got, expected)


def numpy_quietly(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


# ---- the boundary -----------------------------------------------------------------------

def identity_and_first(x):
    return x, x[0], x[::-1]


@pytest.mark.parametrize("dtype", ALL, ids=name)
def test_arrays_and_scalars_cross_the_boundary(dtype):
    x = np.array([1, 0, 1, 1], dtype=dtype)
    same(jit(identity_and_first)(x), identity_and_first(x))
    scalar = x[0]
    same(jit(lambda_free_identity)(scalar), scalar)


def lambda_free_identity(s):
    return s


# ---- promotion ----------------------------------------------------------------------------

@pytest.mark.parametrize("a", ALL, ids=name)
def test_promotion_table_is_numpys(a):
    for b in ALL:
        ours = numpy_promote([ScalarType(NUMPY_DTYPES[name(a)]), ScalarType(NUMPY_DTYPES[name(b)])], [])
        assert NUMPY_DTYPES[name(np.result_type(a, b))] == ours.name, (a, b)


@pytest.mark.parametrize("a", ALL, ids=name)
def test_python_scalars_are_weak(a):
    arr = ScalarType(NUMPY_DTYPES[name(a)])
    for weak, sample in [(ScalarType("bool"), True), (ScalarType("i64"), 1), (ScalarType("f64"), 1.0)]:
        expected = (np.ones(1, a) + sample).dtype
        assert numpy_promote([arr], [weak]).name == NUMPY_DTYPES[expected.name], (a, sample)


def add_mul_eq(a, b):
    return a + b, a * b, a == b, a < b


@pytest.mark.parametrize("a", INTS + FLOATS, ids=name)
def test_mixed_arrays_compute_as_numpy(a):
    x = np.array([1, 2, 3], dtype=a)
    for b in INTS + FLOATS + [np.bool_]:
        y = np.array([3, 0, 1], dtype=b)
        same(jit(add_mul_eq)(x, y), numpy_quietly(add_mul_eq, x, y))


# ---- arithmetic that wraps around, division by zero --------------------------------------

def int_arithmetic(x, y):
    return (x + y, x - y, x * y, -x, x // y, x % y, x + 1, x * 3, x == y, x < y, x >= y,
            x & y, x | y, x ^ y, ~x, abs(x))


@pytest.mark.parametrize("dtype", INTS, ids=name)
def test_integer_arithmetic_wraps_as_numpys(dtype):
    f = jit(int_arithmetic)

    @SETTINGS
    @given(values(dtype), values(dtype))
    def check(x, y):
        same(f(x, y), numpy_quietly(int_arithmetic, x, y))
    check()


def scalar_arithmetic(a, b):
    return a + b, a * b, a - b, a // b, a % b, a < b


@pytest.mark.parametrize("dtype", INTS, ids=name)
def test_numpy_scalars_wrap_too(dtype):
    info = np.iinfo(dtype)
    for a, b in [(info.max, 1), (info.min, info.max), (info.max, 0), (5, 3)]:
        x, y = dtype(a), dtype(b)
        same(jit(scalar_arithmetic)(x, y), numpy_quietly(scalar_arithmetic, x, y))


# ---- casts ------------------------------------------------------------------------------

def casts(x):
    return (x.astype(np.int8), x.astype(np.uint8), x.astype(np.int16), x.astype(np.uint16),
            x.astype(np.int32), x.astype(np.uint32), x.astype(np.int64), x.astype(np.float32),
            x.astype(np.float64), x.astype(np.complex128), x.astype(np.bool_))


@pytest.mark.parametrize("dtype", [*INTS, *FLOATS, np.bool_], ids=name)
def test_astype_between_every_dtype(dtype):
    f = jit(casts)

    @SETTINGS
    @given(values(dtype))
    def check(x):
        if x.dtype.kind == "f":
            x = np.clip(x, -100, 100)  # C leaves out-of-range float -> int conversions undefined
        same(f(x), numpy_quietly(casts, x))
    check()


# ---- reductions, element reads and writes, creation ------------------------------------------

def reductions(x):
    return np.sum(x), np.max(x), np.min(x), np.prod(x), np.mean(x), x.sum(axis=0)


@pytest.mark.parametrize("dtype", [*INTS, *FLOATS], ids=name)
def test_reductions_have_numpys_dtypes(dtype):
    f = jit(reductions)

    @SETTINGS
    @given(values(dtype, 5))
    def check(x):
        got, want = f(x), numpy_quietly(reductions, x)
        same(got[:4] + got[5:], want[:4] + want[5:])
        # the mean: float adds in another order than NumPy's (documented, ops/reductions.py),
        # so to rounding of the terms: mean([-2**63, 2**63-1, 0, 1, 0]) is exactly 0, NumPy's 0.2
        assert type(got[4]) is type(want[4])
        scale = np.mean(np.abs(x.astype(np.float64))) * np.finfo(np.asarray(want[4]).dtype).eps
        assert abs(got[4] - want[4]) <= 1e-12 * abs(want[4]) + 8 * scale, (got[4], want[4])
    check()


def write_elements(x, v):
    x[0] = v
    x[1] = x[2] + x[3]
    s = x[0]
    for i in range(x.shape[0]):
        s = s + x[i]
    return s


@pytest.mark.parametrize("dtype", INTS, ids=name)
def test_element_reads_and_writes(dtype):
    x, y = np.arange(6).astype(dtype), np.arange(6).astype(dtype)
    v = dtype(7)
    same(jit(write_elements)(x, v), numpy_quietly(write_elements, y, v))
    same(x, y)


def created(n):
    return (np.zeros(n, dtype=np.int8), np.ones(n, dtype=np.uint16), np.full(n, 7, dtype=np.uint32),
            np.zeros((2, n), dtype=np.complex64), np.sum(np.ones(n, dtype=np.int8), dtype=np.int8))


def test_creation_with_dtype():
    same(jit(created)(300), created(300))


# ---- complex and bool ------------------------------------------------------------------------

def complex_ops(z, w):
    return (z + w, z - w, z * w, z / w, -z, np.abs(z), np.real(z), np.imag(z), np.conj(z),
            np.angle(z), z == w, z != z, np.sum(z), np.mean(w), z * 2.0, z.astype(np.complex64))


@pytest.mark.parametrize("dtype", COMPLEX, ids=name)
def test_complex_arithmetic(dtype):
    f = jit(complex_ops)

    @SETTINGS
    @given(values(dtype), values(dtype))
    def check(z, w):
        w = np.where(w == 0, 1, w).astype(dtype)
        same(f(z, w), numpy_quietly(complex_ops, z, w))
    check()


def test_complex_division_by_zero_is_numpys():
    z, w = np.array([1 + 1j, 0j, -2 + 0j]), np.zeros(3, np.complex128)
    same(jit(complex_ops)(z, w + 1), complex_ops(z, w + 1))
    divide = jit(lambda_free_divide)
    same(divide(z, w), numpy_quietly(lambda_free_divide, z, w))


def lambda_free_divide(z, w):
    return z / w


def bool_ops(a, b):
    return a + b, a * b, a & b, a | b, a ^ b, ~a, np.sum(a), a + 1, a * 1.5, np.mean(b), a == b


def test_bool_arithmetic_is_numpys_logic():
    f = jit(bool_ops)

    @SETTINGS
    @given(values(np.bool_), values(np.bool_))
    def check(a, b):
        same(f(a, b), bool_ops(a, b))
    check()


def bool_subtract(a, b):
    return a - b


def test_bool_subtraction_is_refused_as_numpy_refuses_it():
    with pytest.raises(Exception, match="not supported|TypeError"):
        jit(bool_subtract)(np.array([True]), np.array([False]))


# ---- the GPU's kernels (run on the host by the simulator) --------------------------------------

def affine_and_reductions(x, y):
    return x * 3 + y, np.sum(x), np.max(y), x // y, x < y


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint32, np.uint64], ids=name)
def test_gpu_kernels_wrap_as_numpys(dtype):
    x = np.arange(-5, 300).astype(dtype)
    y = np.arange(1, 306).astype(dtype)[::-1].copy()
    same(jit(affine_and_reductions, target="cuda-sim")(x, y),
         numpy_quietly(affine_and_reductions, x, y))


def add_300(x):
    return x + 300


def add_n(x, n):
    return x + n


def put(x, n):
    x[0] = n
    return x


def test_a_python_int_out_of_a_narrow_dtype_is_numpys_overflow_error():
    u = np.arange(3, dtype=np.uint8)
    with pytest.raises(CompileError, match="Python integer 300 out of bounds for uint8"):
        jit(add_300)(u)
    for n in (256, -1):
        with pytest.raises(OverflowError):
            add_n(u, n)  # NumPy's
        with pytest.raises(OverflowError, match="out of bounds for uint8"):
            jit(add_n)(u, n)
        with pytest.raises(OverflowError, match="out of bounds for uint8"):
            jit(put)(u.copy(), n)
    np.testing.assert_array_equal(jit(add_n)(u, 255), add_n(u, 255))
    np.testing.assert_array_equal(jit(add_n)(np.int8([0, 1]), -128), add_n(np.int8([0, 1]), -128))
    np.testing.assert_array_equal(jit(add_n)(u, np.int64(300)), add_n(u, np.int64(300)))
