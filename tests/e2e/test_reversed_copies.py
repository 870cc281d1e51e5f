"""Copies whose source steps back along the last axis (backend/llvm/copies.py: a version of
the copy with those strides constant, which LLVM vectorizes): `np.ascontiguousarray` of a
reversed view, `.copy()`, `np.flip`, a slice assignment from one and a broadcast one,
against NumPy over random shapes and dtypes, and the forward copies beside them."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit

SETTINGS = settings(max_examples=15, derandomize=True, deadline=None, database=None)
DTYPES = [np.float64, np.int16, np.bool_]


def reversed_copies(a, b):
    """Every form at once (one compile per dtype)."""
    c = np.copy(a)
    c[1:, :] = b[1:, ::-1]
    return (np.ascontiguousarray(a[:, ::-1]), a[..., ::-1].copy(), np.flip(a, axis=-1) * 1,
            a[::-1, ::-2].copy(), a[:, ::-1].T.copy(), c,
            np.broadcast_to(a[0, ::-1], (3, a.shape[1])).copy(),
            np.ascontiguousarray(a[:, ::2]))


COMPILED = jit(reversed_copies)


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), rows=st.integers(1, 7), cols=st.integers(0, 70),
       seed=st.integers(0, 2 ** 16))
def test_reversed_copies_as_numpy(dtype, rows, cols, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(0, 100, (rows, cols)).astype(dtype) for _ in range(2))
    want, got = reversed_copies(a, b), COMPILED(a, b)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
