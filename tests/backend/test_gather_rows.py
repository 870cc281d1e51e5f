"""Rows of a gather, a scatter and np.add.at moved in vectors (backend/llvm/indexing.py: the
last trailing axis, where it has unit strides, in steps of 32 bytes, the rest of the row one
element at a time) against NumPy: row lengths on either side of a step (1 to 9 float64),
every element size, tables laid out in C order, strided, transposed and reversed (the
element-by-element rows), negative and repeated indices, int32 index arrays, rows of a 3-d
table, IndexError; a gather's gradient (the scatter-add) against np.add.at and finite
differences."""
import numpy as np
import pytest
from array_checks import central_difference

from astjit import grad, jit

DTYPES = [np.float64, np.float32, np.int8, np.int16, np.int32, np.int64, np.bool_,
          np.complex128]
LAYOUTS = ["c", "strided", "transposed", "reversed"]


def table(rows, width, dtype=np.float64, layout="c", seed=0):
    """A (rows, width) table laid out as named."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, 2 * width) if layout == "strided" else
                                 (width, rows) if layout == "transposed" else (rows, width)) * 50
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(values.shape)
    values = values.astype(dtype)
    return {"c": values, "strided": values[:, ::2], "transposed": values.T,
            "reversed": values[:, ::-1]}[layout]


def lookup(E, idx):
    return E[idx]


def set_rows(x, idx, v):
    y = x.copy()
    y[idx] = v
    return y


def add_rows(x, idx, v):
    y = x.copy()
    np.add.at(y, idx, v)
    return y


def set_number(x, idx, s):
    y = x.copy()
    y[idx] = s
    return y


IDX = np.array([[3, -1, 0], [4, 4, -5], [0, 2, 3]])  # negative and repeated rows


@pytest.mark.parametrize("width", range(1, 10))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gathered_rows_of_every_length_and_layout(width, layout):
    E = table(5, width, layout=layout)
    np.testing.assert_array_equal(jit(lookup)(E, IDX), E[IDX])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("width", [3, 8, 33])
def test_gathered_rows_of_every_element_size(dtype, width):
    E = table(5, width, dtype)
    np.testing.assert_array_equal(jit(lookup)(E, IDX), E[IDX])
    np.testing.assert_array_equal(jit(lookup)(E, IDX.astype(np.int32)), E[IDX])


def test_rows_of_a_three_dimensional_table():
    T = table(5, 24).reshape(5, 3, 8)
    np.testing.assert_array_equal(jit(lookup)(T, IDX), T[IDX])
    np.testing.assert_array_equal(jit(lookup)(T[:, :, 1:6], IDX), T[:, :, 1:6][IDX])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("width", [4, 9])
@pytest.mark.parametrize("layout", ["c", "reversed"])
def test_scattered_rows(dtype, width, layout):
    x = table(5, width, dtype, layout)
    v = table(9, width, dtype, layout, seed=1).reshape(3, 3, width)
    np.testing.assert_array_equal(jit(set_rows)(x, IDX, v), set_rows(x, IDX, v))
    np.testing.assert_array_equal(jit(set_number)(x, IDX, v[0, 0, 0]), set_number(x, IDX, v[0, 0, 0]))
    np.testing.assert_array_equal(jit(set_rows)(x, IDX, v[0, 0]), set_rows(x, IDX, v[0, 0]))
    if dtype != np.bool_:
        np.testing.assert_allclose(jit(add_rows)(x, IDX, v), add_rows(x, IDX, v), rtol=1e-6)


def test_out_of_range_rows_raise():
    E = table(5, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        jit(lookup)(E, np.array([[0, 5]]))
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        jit(add_rows)(E, np.array([1, -6], np.int32), E[:2])


def weighted_lookup(E, idx, w):
    return np.sum(np.sin(E[idx]) * w)


W = np.arange(1.0, 1.0 + IDX.size).reshape(IDX.shape + (1,))


@pytest.mark.parametrize("width", [1, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("layout", ["c", "transposed"])
def test_gradient_of_gathered_rows_adds_repeated_ones(width, layout):
    E = table(5, width, layout=layout) / 50
    got = jit(grad(weighted_lookup))(E, IDX, W)
    expected = np.zeros_like(E)
    np.add.at(expected, IDX, np.cos(E[IDX]) * W)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, central_difference(weighted_lookup, (E, IDX, W), 0),
                               rtol=1e-6, atol=1e-6)


def test_float32_gradient_of_gathered_rows():
    E = table(5, 8, np.float32) / 50
    got = jit(grad(weighted_lookup))(E, IDX, W)
    expected = np.zeros_like(E)
    np.add.at(expected, IDX, np.cos(E[IDX]) * W)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_unit_stride_rows_move_in_vectors():
    llvm = jit(lookup).ir(table(5, 4), IDX, stage="llvm")
    assert "load <4 x double>" in llvm and "store <4 x double>" in llvm
    adjoint = jit(grad(weighted_lookup)).ir(table(5, 4), IDX, W, stage="llvm")
    assert "fadd <4 x double>" in adjoint
