"""np.real/np.imag and `.real`/`.imag` of complex arrays are NumPy's views (issue 14): they
share the complex array's memory, a write through one reaches the complex array, and their
strides are the complex array's doubled; of a real array `.real` is the array itself."""
import numpy as np
import pytest

from astjit import jit


def parts(z):
    return np.real(z), np.imag(z), z.real * 2.0, z.imag + 1.0


def zero_real_part(z):
    np.real(z)[:] = 0.0
    return z


def set_imag_attribute(z, v):
    z.imag[1:] = v
    return z.real


def real_of_real(x):
    return x.real


def scalar_parts(x, b):
    return x.real, x.imag, b.real, b.imag


PARTS_JIT = jit(parts)


def complex_array(dtype, shape=(3, 4)):
    n = int(np.prod(shape))
    return (np.arange(n) - 2.5 + 1j * np.sin(np.arange(n))).reshape(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_parts_are_views_like_numpy(dtype):
    z = complex_array(dtype)
    for source in (z, z[:, ::2], z.T, z[1]):
        got, want = PARTS_JIT(source), parts(source)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
        real, imag = got[:2]
        assert np.shares_memory(real, source) and np.shares_memory(imag, source)
        assert real.strides == source.real.strides and imag.strides == source.imag.strides


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_writes_through_the_views_reach_the_complex_array(dtype):
    z, want = complex_array(dtype), complex_array(dtype)
    got = jit(zero_real_part)(z)
    want.real[:] = 0.0
    assert got is z
    np.testing.assert_array_equal(z, want)
    z, want = complex_array(dtype, (5,)), complex_array(dtype, (5,))
    real = jit(set_imag_attribute)(z, 7.0)
    want.imag[1:] = 7.0
    np.testing.assert_array_equal(z, want)
    assert np.shares_memory(real, z)


def test_real_of_a_real_array_is_the_array():
    x = np.arange(4.0)
    assert jit(real_of_real)(x) is x


def test_parts_of_python_numbers_are_pythons():
    got = jit(scalar_parts)(2.5, True)
    assert got == (2.5, 0.0, 1, 0) and [type(v) for v in got] == [float, float, int, int]
