"""Strided copies whose last axis is short (backend/llvm/copies.py unrolls lengths 2 to 4:
np.repeat's copy of a broadcast view, (n, 2) and (n, 3) point arrays) against NumPy, for
every element size, source layout and destination layout, lengths 1 to 5 on either side of
the unrolled ones; and the gradient of a repeat against finite differences."""
import numpy as np
from array_checks import central_difference
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit

DTYPES = [np.float64, np.float32, np.int8, np.int16, np.int32, np.int64, np.bool_, np.complex128,
          np.complex64]


def repeat_last(a):
    return np.repeat(a, 2, axis=-1), np.repeat(a, 3, axis=-1), np.repeat(a, 4, axis=-1)


def contiguous(a):
    return np.ascontiguousarray(a), np.copy(a.T), a.flatten()


def assign_into(dest, src):
    dest[:, ::2] = src
    dest[:, 1::2] = src[:1]
    return dest


def _made(shape, dtype, layout, seed=0):
    """An array of `shape` laid out as named: C order, transposed, every other element, or
    with its last axis reversed."""
    rng = np.random.default_rng(seed)
    full = (2 * np.array(shape)).tolist() if layout == "strided" else list(shape)
    values = rng.standard_normal(full[::-1] if layout == "transposed" else full) * 50
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(values.shape)
    values = values.astype(dtype)
    if layout == "transposed":
        return values.T
    if layout == "strided":
        return values[tuple(slice(None, None, 2) for _ in shape)]
    return values[..., ::-1] if layout == "reversed" else values


def _same(expected, got):
    for e, g in zip(expected, got):
        assert (g.shape, g.dtype) == (e.shape, e.dtype)
        np.testing.assert_array_equal(g, e)


JITTED = {fn: jit(fn) for fn in (repeat_last, contiguous, assign_into)}
"""One compiled function each for all examples: each dtype and layout compiles once."""
SHAPES = st.tuples(st.integers(0, 5), st.integers(1, 5)) | \
    st.tuples(st.integers(1, 3), st.integers(0, 3), st.integers(1, 5))
LAYOUTS = st.sampled_from(["c", "transposed", "strided", "reversed"])


@settings(max_examples=30, deadline=None, derandomize=True)
@given(shape=SHAPES, dtype=st.sampled_from(DTYPES), layout=LAYOUTS)
def test_repeats_and_copies_match_numpy(shape, dtype, layout):
    a = _made(shape, dtype, layout)
    _same(repeat_last(a), JITTED[repeat_last](a))
    _same(contiguous(a), JITTED[contiguous](a))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(rows=st.integers(1, 4), half=st.integers(1, 5), dtype=st.sampled_from(DTYPES),
       layout=LAYOUTS)
def test_writes_into_strided_views_match_numpy(rows, half, dtype, layout):
    dest = _made((rows, 2 * half), dtype, "c", seed=1)
    src = _made((rows, half), dtype, layout, seed=2)
    expected = assign_into(dest.copy(), src)
    got = JITTED[assign_into](dest, src)
    _same([expected], [got])
    _same([expected], [dest])


def repeated_loss(a, w):
    return np.sum(np.repeat(a, 2, axis=-1) * w) + np.sum(np.repeat(a, 3, axis=-1) ** 2)


def test_gradient_of_a_repeat_matches_finite_differences():
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((4, 3)), rng.standard_normal((4, 6)))
    for i, g in enumerate(grad(repeated_loss, argnums=(0, 1))(*args)):
        np.testing.assert_allclose(g, central_difference(repeated_loss, args, i), rtol=1e-5,
                                   atol=1e-6)
