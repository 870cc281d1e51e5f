"""NumPy's float powers with one exponent for every element and NumPy's integer shifts,
compiled, against NumPy itself.

NumPy's float power loop computes an exponent of stride 0 (a scalar, a 0-d array) equal
to 0.5 as sqrt, which differs from pow at -0.0 and -inf; an array exponent, and `**` of
NumPy scalars, are pow. Shifts follow npy_lshift/npy_rshift: a count at or past the
width (or negative, read as unsigned) gives 0, or the sign for `>>` of a signed int.
"""
import numpy as np
import pytest

from astjit import jit

SPECIAL = [-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0, -4.0, 4.0, 2.0, 5e-324, -5e-324,
           1e-310, 1e308, 0.25]


def _values(dtype):
    with np.errstate(over="ignore"):  # 1e308 is inf in float32
        return np.array(SPECIAL, dtype=dtype)


def _same(got, want):
    """Equal bit for bit up to NaN payloads: values, signed zeros, dtype."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    if got.dtype.kind == "c":
        got, want = np.stack([got.real, got.imag]), np.stack([want.real, want.imag])
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


def _close(got, want):
    """`_same` but within 1 ulp: NumPy's float32 power on a CPU with AVX512_SKX is its own
    SIMD powf (SVML's), which can differ from C's powf, the one compiled code calls (and
    NumPy's on other CPUs), in the last bit: 0.25 ** (1 / 3) is 0.62996048 there and
    0.62996054 (correctly rounded) from powf."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=1)
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


def _numpy_powf_is_simd() -> bool:
    from numpy._core._multiarray_umath import __cpu_features__
    return bool(__cpu_features__.get("AVX512_SKX"))


def _half(x):
    return x ** 0.5


def _np_half(x):
    return np.power(x, 0.5)


def _power(x, p):
    return x ** p


def _np_power(x, p):
    return np.power(x, p)


def _half_then(x):
    return x ** 0.5 + 1.0


JITTED = {fn: jit(fn) for fn in (_half, _np_half, _power, _np_power, _half_then)}
"""One dispatcher per function for the whole file: an exponent or a value is a run-time
argument, so the cases that differ only by it share a compilation (as the shifts below do).
Only contiguous arrays are passed to these, so every call runs the first tier."""
STRIDED = {fn: jit(fn) for fn in (_power, _np_power)}
"""The dispatchers of strided arguments: the first such call leaves the first tier (its unit
stride version) for the general one, which runs every later call (docs/arrays.md)."""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [_half, _np_half, _half_then])
def test_constant_half_is_numpy_sqrt(fn, dtype):
    x = _values(dtype)
    with np.errstate(all="ignore"):
        _same(JITTED[fn](x), fn(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [_power, _np_power])
@pytest.mark.parametrize("p", [0.5, -0.5, 1.5, 0.25, 1 / 3, 2.0, 3.0, -2.0, 0.0, 1.0, -1.0])
def test_run_time_exponent(fn, p, dtype):
    x = _values(dtype)
    exact = dtype is np.float64 or p in (0.5, 2.0, 1.0, -1.0, 0.0) or not _numpy_powf_is_simd()
    check = _same if exact else _close
    with np.errstate(all="ignore"):
        check(JITTED[fn](x, p), fn(x, p))
        check(JITTED[fn](x, dtype(p)), fn(x, dtype(p)))
        check(STRIDED[fn](x[::-2], p), fn(x[::-2], p))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [_power, _np_power])
def test_array_exponent_is_pow(fn, dtype):
    x = _values(dtype)
    p = np.full(len(SPECIAL), 0.5, dtype=dtype)
    with np.errstate(all="ignore"):
        _same(JITTED[fn](x, p), fn(x, p))
        _same(JITTED[fn](np.array(-0.0, dtype), p), fn(np.array(-0.0, dtype), p))


@pytest.mark.parametrize("value", [-0.0, -np.inf, np.inf, 4.0, -1.0, np.nan])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_scalars(value, dtype):
    """`**` of a NumPy scalar is its scalar math (pow); np.power is the ufunc (sqrt)."""
    x = dtype(value)
    with np.errstate(all="ignore"):
        for fn in (_half, _np_half):
            _same(JITTED[fn](x), fn(x))
        for fn in (_power, _np_power):
            _same(JITTED[fn](x, 0.5), fn(x, 0.5))


def _power_into(x, p):
    x **= p
    return x


def test_in_place_power():
    x = np.array(SPECIAL)
    with np.errstate(all="ignore"):
        _same(jit(_power_into)(x.copy(), 0.5), _power_into(x.copy(), 0.5))


def test_gpu_kernel_half():
    x = np.array(SPECIAL)
    with np.errstate(all="ignore"):
        _same(jit(_half, target="cuda-sim")(x), _half(x))
        _same(jit(_power, target="cuda-sim")(x, 0.5), _power(x, 0.5))
        _same(jit(_power, target="cuda-sim")(x, np.full(len(x), 0.5)),
              _power(x, np.full(len(x), 0.5)))


COMPLEX = [-4 + 0j, -0.0 - 0.0j, 1j, -1j, complex(-np.inf, 0.0), complex(np.inf, np.nan),
           complex(np.nan, 1.0), 3 - 4j, complex(-0.0, -2.0)]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_array_to_python_half_is_csqrt(dtype):
    """NumPy's `**` of an array to a Python float 0.5 is np.sqrt; np.power and an array
    exponent are npy_cpow."""
    z = np.array(COMPLEX, dtype=dtype)
    with np.errstate(all="ignore"):
        for fn in (_half, _np_half):
            _same(JITTED[fn](z), fn(z))
        for p in (0.5, 1.5, 2.0):
            _same(JITTED[_power](z, p), _power(z, p))
            _same(JITTED[_np_power](z, p), _np_power(z, p))
        _same(JITTED[_power](z, np.full(len(z), 0.5)), _power(z, np.full(len(z), 0.5)))


# ---- shifts -------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def _lshift(a, b):
    return a << b


def _rshift(a, b):
    return a >> b


def _np_lshift(a, b):
    return np.left_shift(a, b)


def _np_rshift(a, b):
    return np.right_shift(a, b)


def _lshift_three(a):
    return a << 3


def _lshift_into(a, b):
    a <<= b
    return a


def _rshift_into(a, b):
    a >>= b
    return a


SHIFTS = [_lshift, _rshift, _np_lshift, _np_rshift]
_COMPILED = {fn: jit(fn) for fn in SHIFTS}


def _counts(dtype):
    """Shift counts around the width, and negative ones for signed dtypes."""
    width = np.dtype(dtype).itemsize * 8
    low = -width - 2 if np.dtype(dtype).kind == "i" else 0
    return st.integers(low, width + 2)


@st.composite
def _shift_case(draw):
    dtype = draw(st.sampled_from(INTS))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=5))
    a = draw(hnp.arrays(dtype, shape))
    b = draw(hnp.arrays(dtype, draw(hnp.broadcastable_shapes(shape, max_dims=2)),
                        elements=_counts(dtype)))
    if draw(st.booleans()) and a.ndim == 2:
        a = a[:, ::-1]
    return a, b


@settings(max_examples=60, deadline=None)
@given(_shift_case(), st.sampled_from(SHIFTS))
def test_shifts_of_arrays(case, fn):
    a, b = case
    _same(_COMPILED[fn](a, b), fn(a, b))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("fn", SHIFTS)
def test_shifts_of_numpy_scalars(fn, dtype):
    t = np.dtype(dtype).type
    width = np.dtype(dtype).itemsize * 8
    counts = [0, 1, width - 1, width, width + 1]
    if np.dtype(dtype).kind == "i":
        counts += [-1, -width]
    for a in (t(np.iinfo(dtype).min), t(np.iinfo(dtype).max), t(5)):
        for count in counts:
            _same(_COMPILED[fn](a, t(count)), fn(a, t(count)))
            _same(_COMPILED[fn](a, np.array(count, dtype)), fn(a, np.array(count, dtype)))
        _same(_COMPILED[fn](a, 3), fn(a, 3))
        _same(_COMPILED[fn](np.array([a, a]), 3), fn(np.array([a, a]), 3))


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64", "uint64"])
def test_shifts_in_place_and_constants(dtype):
    a = np.arange(12, dtype=dtype).reshape(3, 4)
    counts = np.array([0, 1, 7, 63], dtype=dtype)
    _same(jit(_lshift_into)(a.copy(), counts), _lshift_into(a.copy(), counts))
    _same(jit(_rshift_into)(a.copy(), counts), _rshift_into(a.copy(), counts))
    _same(jit(_lshift_three)(a), _lshift_three(a))


def test_shifts_of_bools():
    """NumPy shifts bools as int8: bool << bool is int8."""
    a, b = np.array([True, False, True]), np.array([True, True, False])
    for fn in SHIFTS:
        _same(_COMPILED[fn](a, b), fn(a, b))
        _same(_COMPILED[fn](np.True_, np.True_), fn(np.True_, np.True_))


def test_python_int_shifts_keep_python_semantics():
    with pytest.raises(ValueError, match="negative shift count"):
        _COMPILED[_lshift](3, -1)
    assert _COMPILED[_rshift](-7, 1) == -4


def test_shifts_of_floats_are_refused():
    from astjit.errors import CompileError

    for fn in SHIFTS:
        with pytest.raises(CompileError, match="shifts need integer"):
            jit(fn)(np.ones(3), 2)
        with pytest.raises(TypeError):
            fn(np.ones(3), 2)


def test_gpu_kernel_shifts():
    a = np.array([-128, -3, 5, 127], dtype=np.int8)
    b = np.array([1, 8, -1, 7], dtype=np.int8)
    for fn in (_lshift, _rshift):
        _same(jit(fn, target="cuda-sim")(a, b), fn(a, b))
    u = np.array([200, 1, 255, 7], dtype=np.uint8)
    _same(jit(_rshift, target="cuda-sim")(u, np.array([1, 8, 9, 2], np.uint8)),
          _rshift(u, np.array([1, 8, 9, 2], np.uint8)))
