"""np.sign of complex numbers, NumPy 2's definition z / |z| bit for bit: its loop divides
the parts by C's hypot (hypotf for complex64), a NaN magnitude gives NaN, an infinite one
(an infinite part, or finite parts whose hypot overflows) +-1 along the infinite part,
and 0 gives 0. Checked on hypothesis' parts: infinities, NaNs, signed zeros, subnormal and
huge ones, on arrays (a kernel) and on NumPy scalars."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astjit


@astjit.jit
def signs(z):
    return np.sign(z)


@astjit.jit
def sign_of_first(z):
    return np.sign(z[0])


SPECIAL = [1e308 + 1e308j, 1.5e308 - 1.7e308j, -1.5e308 + 1.5e308j, 5e-324 + 5e-324j,
           complex("inf+1j"), complex("-inf+nanj"), complex("nan-infj"), complex("inf+infj"),
           complex("nan+1j"), complex(-0.0, -1e-320), complex(-0.0, -0.0), 0j, 3 + 4j]


def bits(values: np.ndarray) -> np.ndarray:
    return values.view(np.uint64 if values.dtype == np.complex128 else np.uint32)


def numpy_sign(z):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # hypot's overflow (NumPy warns)
        return np.sign(z)


def check(parts: list[tuple[float, float]], dtype) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # parts too large for complex64
        z = np.array([complex(a, b) for a, b in parts]).astype(dtype)
    expected = numpy_sign(z)
    got = signs(z)
    assert got.dtype == dtype
    np.testing.assert_array_equal(bits(got), bits(expected), err_msg=str(z))
    first = sign_of_first(z)
    assert type(first) is type(expected[0])
    np.testing.assert_array_equal(bits(np.array([first])), bits(expected[:1]), err_msg=str(z))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_special_values(dtype):
    check([(z.real, z.imag) for z in SPECIAL], dtype)


part = st.one_of(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
                 st.sampled_from([0.0, -0.0, 1e308, -1.7e308, 5e-324, 1e-310]))


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.tuples(part, part), min_size=1, max_size=12),
       dtype=st.sampled_from([np.complex128, np.complex64]))
def test_bit_for_bit_as_numpy(parts, dtype):
    check(parts, dtype)


def test_complex64_signaling_nans_beside_infinities():
    """complex64's magnitude is glibc's hypotf written out: an infinite part gives inf, unless
    the other is a signaling NaN (then NaN: np.sign is NaN, NaN), as glibc's hypotf."""
    signaling = np.array([0x7F800001, 0xFFA00000], np.uint32).view(np.float32)
    others = np.array([np.inf, -np.inf, np.nan, 2.0], np.float32)
    parts = [(a, b) for s in signaling for o in others for a, b in ((s, o), (o, s))]
    z = np.array(parts, np.float32).view(np.complex64).ravel()
    np.testing.assert_array_equal(bits(signs(z)), bits(numpy_sign(z)), err_msg=str(z))
