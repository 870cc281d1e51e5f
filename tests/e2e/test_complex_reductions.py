"""np.prod, np.cumsum/cumprod and the NaN-skipping reductions of complex arrays (issue 14),
against NumPy: complex64 and complex128, axes, keepdims, strides, NaN in either part (a
complex is NaN where either part is, as np.isnan says), empty arrays."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from astjit import jit


def reductions(z):
    return (np.prod(z), np.prod(z, axis=1, keepdims=True), z.prod(axis=0),
            np.cumsum(z), np.cumprod(z, axis=1), z.cumsum(axis=0),
            np.nansum(z, axis=0), np.nanprod(z), np.nanmean(z, axis=1), np.nanvar(z),
            np.nanstd(z, axis=0, ddof=1))


REDUCTIONS_JIT = jit(reductions)


def numpy_quietly(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


def assert_like(got, want, dtype):
    rtol = 2e-5 if dtype == np.complex64 else 1e-12
    for g, w in zip(got, want):
        assert type(g) is type(w)
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)


def with_nans(dtype):
    z = (np.arange(12).reshape(3, 4) * (0.3 + 0.2j) + 1 - 0.5j).astype(dtype)
    z[1, 2] = complex(np.nan, 1.0)
    z[2, 0] = complex(1.0, np.nan)
    return z


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_reductions_like_numpy(dtype):
    """A NaN in either part is skipped by the nan* kinds (NumPy's isnan), kept by the rest;
    a strided and a transposed operand too."""
    z = with_nans(dtype)
    for x in (z, z[:, ::-2], z.T, np.ones((3, 4), dtype)):
        assert_like(REDUCTIONS_JIT(x), numpy_quietly(reductions, x), dtype)


def empty(z):
    return np.prod(z), np.cumprod(z), np.nansum(z), np.nanmean(z), np.nanprod(z)


def test_empty_reductions_like_numpy():
    """prod of nothing is 1 + 0j, a sum 0j, the mean of nothing NaN + NaN j."""
    z = np.zeros(0, np.complex128)
    assert_like(jit(empty)(z), numpy_quietly(empty, z), np.complex128)


def parts():
    return st.one_of(st.floats(-4, 4, width=32), st.just(np.nan))


@settings(max_examples=25, deadline=None)
@given(hnp.arrays(np.complex128, hnp.array_shapes(min_dims=2, max_dims=2, max_side=5),
                  elements=st.builds(complex, parts(), parts())))
def test_random_arrays_like_numpy(z):
    assert_like(REDUCTIONS_JIT(z), numpy_quietly(reductions, z), np.complex128)


def cumsum_to_float(z):
    return np.cumsum(z, dtype=np.float64)


def test_cumsum_of_complex_to_a_float_is_refused():
    """NumPy drops the imaginary parts (ComplexWarning): refused, saying to take np.real."""
    from astjit.errors import CompileError

    with pytest.raises(CompileError, match="np.real"):
        jit(cumsum_to_float)(np.array([1 + 1j]))


def argmax_of_complex(z):
    return np.argmax(z)


def test_orderings_of_complex_are_refused():
    """NumPy orders complexes lexicographically (np.max, np.argmax): refused, by name (argmax
    was an internal crash)."""
    from astjit.errors import CompileError

    with pytest.raises(CompileError, match="argmax"):
        jit(argmax_of_complex)(np.array([1 + 1j, 2j]))
