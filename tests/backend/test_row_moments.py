"""np.var / np.std along the last axis of a float array: the row group of the rows' means
and squared deviations is one call of the runtime's `astjit.rows.squares.<dtype>`
(backend/llvm/row_moments.py) where the rows are unit-stride and evenly spaced, else the
row loop or the graph (rowwise.py) in the general tier. Against NumPy over layouts,
shapes (empty, one column, 3-d), NaN rows and ddof; the same bits as the row loop."""
import numpy as np
import pytest

from astjit import jit


def var_rows(x):
    return np.var(x, axis=1, ddof=1)


def std_last(x):
    return np.std(x, axis=-1, keepdims=True)


def var_planes(x):  # two inner axes: the row loop's nest, not the call
    return np.var(x, axis=(1, 2))


def var_of_contiguous_rows(x):  # only ever called with C-contiguous rows: the first tier
    return np.var(x, axis=1, ddof=1)


def _check(fn, f, x):
    with np.errstate(all="ignore"):
        want, got = fn(x), f(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    rtol = 1e-5 if x.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_layout_like_numpy(dtype):
    x = (np.random.default_rng(1).standard_normal((6, 40)) * 30 + 5).astype(dtype)
    x[2, 7] = np.nan
    f, g = jit(var_rows), jit(std_last)
    for view in (x, x[::-1], x[:, ::2], x[:, ::-1], x.T.copy().T, x[1:4], x[:0], x[:, :1],
                 x[:, :0], x[None, 0][:, 3:]):
        _check(var_rows, f, view)
        _check(std_last, g, view)
    cube = x.reshape(2, 3, 40)
    for view in (cube, cube[:, ::-1], cube.transpose(1, 0, 2), cube[..., ::3]):
        _check(std_last, g, view)


def test_the_call_stands_for_the_row_group():
    """The contiguous first tier calls the runtime's function and holds no row loop; two
    inner axes keep the row loop."""
    x = np.random.default_rng(2).standard_normal((8, 100))
    f = jit(var_of_contiguous_rows)
    _check(var_of_contiguous_rows, f, x)
    text = f.ir(x, stage="llvm")
    assert 'call void @"astjit.rows.squares.f64"' in text and "rows.head" not in text
    g = jit(var_planes)
    _check(var_planes, g, x.reshape(2, 4, 100))
    assert "astjit.rows.squares" not in g.ir(x.reshape(2, 4, 100), stage="llvm")


def test_integers_keep_the_row_loop():
    x = np.arange(60, dtype=np.int32).reshape(3, 20) ** 2
    f = jit(var_rows)
    _check(var_rows, f, x)
    assert "astjit.rows.squares" not in f.ir(x, stage="llvm")
