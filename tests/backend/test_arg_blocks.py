"""np.argmax / np.argmin of unit-stride rows, which backend/llvm/arg_search.py searches in
steps of vectors and blocks of steps, against NumPy: rows shorter and longer than a step
and a block, the extremum (ties, NaNs, infinities, signed zeros, an unsigned dtype's
largest values) planted at and around the steps' and blocks' ends, for axis=None, along
either axis, kept dimensions and strided views, every dtype."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.backend.llvm import arg_search
from astjit.ir.types import NUMPY_DTYPES, ScalarType


def flat(x):
    return np.argmax(x), np.argmin(x)


def rows(a):
    return np.argmax(a, axis=1), np.argmin(a, axis=-1)


def columns(a):
    return np.argmax(a, axis=0, keepdims=True), np.argmin(a, axis=-2)


JITTED = {fn: jit(fn) for fn in (flat, rows, columns)}
"""One compiled function each for all examples: each dtype and layout compiles once."""
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32,
          np.uint16, np.uint8, np.bool_]
PLANTED = st.sampled_from([np.nan, np.inf, -np.inf, 9.0, -9.0, 0.0, -0.0, "top", "bottom"])


def _edges(dtype) -> list[int]:
    """Positions around a vector's, a step's and a block's ends."""
    t = ScalarType(NUMPY_DTYPES[np.dtype(dtype).name])
    if t.kind == "b":  # element by element: the edges of int8's vectors
        t = ScalarType("i8")
    lanes, step, block = arg_search.row_lanes(t), arg_search.row_length(t), arg_search.block_length(t)
    return sorted({0, 1, lanes - 1, lanes, step - 1, step, step + 1, 2 * step + 3, block - 1,
                   block, block + 1, block + step - 1, 2 * block + 5})


def _planted(value, dtype):
    info = np.finfo(dtype) if np.issubdtype(dtype, np.floating) else np.iinfo(dtype) \
        if dtype != np.bool_ else None
    if value == "top":
        return True if info is None else info.max
    if value == "bottom":
        return False if info is None else info.min
    if info is None:
        return bool(value == value and value > 0)
    if isinstance(info, np.iinfo):
        value = np.nan_to_num(value, posinf=100, neginf=-100)
        return max(value, info.min)
    return value


@settings(max_examples=60, deadline=None, derandomize=True)
@given(dtype=st.sampled_from(DTYPES), data=st.data(), count=st.integers(1, 3))
def test_first_extremum_like_numpy(dtype, data, count):
    edges = _edges(dtype)
    n = data.draw(st.sampled_from([2, 7, *[e for e in edges if e > 1]]))
    spots = data.draw(st.lists(st.tuples(st.sampled_from(edges), PLANTED), max_size=4))
    x = np.random.default_rng(n).standard_normal(count * n) * 4
    if dtype == np.bool_:
        x = x > 0
    elif not np.issubdtype(dtype, np.floating):
        x = np.round(x) if np.issubdtype(dtype, np.signedinteger) else np.abs(np.round(x))
    x = x.astype(dtype)
    for at, value in spots:
        # the same value in every row at `at` and as far from the row's end: ties and NaNs
        # in more than one step and block
        for row in range(count):
            for k in (at, n - 1 - at):
                if 0 <= k < n:
                    x[row * n + k] = _planted(value, dtype)
    a = x.reshape(count, n)
    for fn, arg in ((flat, x), (rows, a), (rows, a[::-1]), (rows, a[:, ::2]),
                    (columns, np.ascontiguousarray(a.T))):
        expected, got = fn(arg), JITTED[fn](arg)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e)
            assert np.asarray(g).dtype == np.asarray(e).dtype


@pytest.mark.parametrize("dtype", DTYPES[:-1])
def test_step_numbers_fit_their_lanes(dtype):
    """A lane counts a block's steps (and its overlapping last one) in an integer of its
    element's width."""
    t = ScalarType(NUMPY_DTYPES[np.dtype(dtype).name])
    steps = arg_search.block_length(t) // arg_search.row_length(t) + 1
    assert steps < 2 ** (t.bits - 1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [16, 32, 100, 1000, 5000])
def test_a_nan_first_in_a_row_or_block(dtype, n):
    """A block whose first element is NaN: its lanes start from that NaN and none holds the
    block's best element."""
    a = np.random.default_rng(n).standard_normal((3, n)).astype(dtype)
    a[0, 0] = a[1, n // 2] = np.nan
    a[2, min(n - 1, arg_search.block_length(ScalarType(NUMPY_DTYPES[np.dtype(dtype).name])))] = np.nan
    for fn, arg in ((rows, a), (flat, a[1:].ravel()), (flat, a[2])):
        for e, g in zip(fn(arg), JITTED[fn](arg)):
            np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint16])
def test_every_row_shorter_than_a_step(dtype):
    """Rows from a vector to a step long are one step whose vectors overlap from the row's
    start: many ties (few distinct values), and a NaN, anywhere in them."""
    t = ScalarType(NUMPY_DTYPES[np.dtype(dtype).name])
    lanes, step = arg_search.row_lanes(t), arg_search.row_length(t)
    rng = np.random.default_rng(lanes)
    for n in range(lanes, step + 2):
        a = rng.integers(0, 4, (3, n)).astype(dtype)
        if np.issubdtype(dtype, np.floating):
            a[2, rng.integers(n)] = np.nan
        for fn, arg in ((rows, a), (flat, a[0]), (flat, a[1])):
            for e, g in zip(fn(arg), JITTED[fn](arg)):
                np.testing.assert_array_equal(g, e)


def last_axis(a):
    return np.argmax(a, axis=-1), np.argmin(a, axis=-1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_])
def test_rows_of_every_layout(dtype):
    """The rows of a result array: one call of the runtime's `astjit.arg.rows` where they
    are unit-stride and evenly spaced (a 3-d C-contiguous array, its rows reversed, one
    row of a 1-d array), else a loop over rows in the general tier (rows not evenly
    spaced, transposed outer axes, strided rows, a kept axis of length 1)."""
    a = np.random.default_rng(7).standard_normal((4, 6, 50)) * 4
    a = (a > 0 if dtype == np.bool_ else a).astype(dtype)
    f = jit(last_axis)
    for arg in (a, a[:, ::-1], a[:, :3], a.transpose(1, 0, 2), a[..., ::3], a[:, :1],
                a[:, 2], a[0, 0], a[0, 0, ::2], a[:0], a[:, :, :1]):
        for e, g in zip(last_axis(arg), f(arg)):
            np.testing.assert_array_equal(g, e)
            assert g.shape == e.shape
