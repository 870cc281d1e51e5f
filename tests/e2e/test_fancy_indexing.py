"""Integer-array and boolean-mask indexing, None/np.newaxis, `...` and mixed basic/advanced
indexing (issue 14) against NumPy: reads and writes (`x[idx] = v`, `x[mask] = v`,
`x[idx] += v` writing repeated indices once, `np.add.at` accumulating) over random shapes,
index arrays (negative, repeated, empty) and masks (all false, all true), values that
broadcast (hypothesis, the same examples on every run); the arrays the caller sees after
a write; NumPy's IndexErrors; the interpreter; the GPU simulator; gradients (reverse and
forward) against central finite differences."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit, jvp
from astjit.api import interpret_call
from astjit.errors import CompileError

SETTINGS = settings(max_examples=12, derandomize=True, deadline=None, database=None)


def assert_same(expected, got, where=""):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), where
        for k, (e, g) in enumerate(zip(expected, got)):
            assert_same(e, g, f"{where}[{k}]")
        return
    assert np.shape(got) == np.shape(expected), f"{where}: {np.shape(got)} != {np.shape(expected)}"
    assert np.asarray(got).dtype == np.asarray(expected).dtype, where
    np.testing.assert_array_equal(got, expected, err_msg=where)


compiled = functools.cache(jit)
"""One compiled function per function for all of a file's checks (hypothesis' examples above all):
each signature compiles once."""


def check(fn, *args, interpret=False):
    """fn compiled (and interpreted) against NumPy, results and arguments after the call."""
    ref_args = [np.copy(a) for a in args]
    expected = fn(*ref_args)
    runs = [("jit", compiled(fn))] + ([("interp", lambda *a: interpret_call(fn, a, {}))]
                                 if interpret else [])
    for name, run in runs:
        got_args = [np.copy(a) for a in args]
        assert_same(expected, run(*got_args), f"{fn.__name__} {name}")
        for k, (a, b) in enumerate(zip(ref_args, got_args)):
            assert_same(a, b, f"{fn.__name__} {name}: argument {k} after the call")


def raises_like_numpy(fn, *args):
    with pytest.raises(Exception) as numpy_error:
        fn(*[np.copy(a) for a in args])
    with pytest.raises(type(numpy_error.value)) as ours:
        jit(fn)(*[np.copy(a) for a in args])
    # a mask written into names the axis only (its sizes are known at run time only)
    ours, theirs = str(ours.value).split(" (at ")[0], str(numpy_error.value)
    assert ours == theirs or ours == theirs.split(";")[0], ours


# ---- the forms, one function each ---------------------------------------------------------

def gather(x, idx):
    return x[idx], x[idx[::-1]] * 2.0, np.sum(x[idx])


def gather_2d(a, idx):
    return a[idx], a[:, idx], a[idx, 1], a[idx, idx], a[idx][:, 0], a[-1, idx]


def gather_index_2d(x, idx):
    i2 = idx.reshape((1, -1))
    return x[i2], x[i2.T], x[i2 * 0]


def mixed(a, i, j):
    return (a[1:, i], a[i, :, j], a[:, i, j], a[i, 1], a[..., i], a[i, None], a[None, i, 1],
            a[i, ..., j], a[i[:, None], 0, j[None, :]], a[::2, i, 1:])


def none_and_ellipsis(x, a):
    return (x[:, None], x[None], x[None, :, None], x[..., None], x[...], a[..., 0], a[1, ...],
            a[..., 1:], a[0, ..., 2], a[:, None, 1], a[np.newaxis, ..., np.newaxis])


def mask_reads(x, m):
    return x[m], x[x > 0.0], np.sum(x[m]), x[x <= 0.0]


def mask_reads_2d(a, m):
    return (a[a > 0.0], a[m], a[:, m[0]], a[m[:, 0]], a[m[:, 0], 1:], a[1:, m[0]] * 2.0)


def scatter_set(x, idx, v):
    x[idx] = v
    return x


def scatter_update(x, idx, v):
    x[idx] += v
    return x


def scatter_add_at(x, idx, v):
    np.add.at(x, idx, v)
    return x


def rows_set(a, idx, row):
    a[idx] = row
    a[idx, 0] = -1.0
    a[:, idx[:1]] = 7.0
    return a


def masked_set(x, m, v):
    x[m] = v
    return x


def masked_fill(x, m):
    x[m] = 0.5
    x[x < 0.0] = 0.0
    return x


def masked_fill_2d(a, m):
    a[m[:, 0]] = -2.0
    a[:, m[0]] *= 3.0
    a[..., None][a > 1.0] = 1.0
    return a


def slice_and_ellipsis_writes(a, idx):
    a[..., 0] = 9.0
    a[1:, idx] += 1.0
    a[None, 0] = 4.0
    return a


def add_at_2d(a, i, j, v):
    np.add.at(a, (i, j), v)
    np.add.at(a, i, 1.0)
    return a


# ---- hypothesis: shapes, index arrays, masks ------------------------------------------------

@st.composite
def vectors_and_indices(draw):
    n = draw(st.integers(1, 7))
    k = draw(st.integers(0, 6))
    idx = draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k))
    x = np.arange(n, dtype=np.float64) * 1.5 - 2.0
    return x, np.array(idx, dtype=np.int64)


@st.composite
def matrices_and_indices(draw):
    rows, cols = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    k = draw(st.integers(0, 5))
    n = min(rows, cols)
    idx = draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k))
    a = np.arange(rows * cols, dtype=np.float64).reshape((rows, cols)) - 3.0
    if draw(st.booleans()):
        a = np.asfortranarray(a)
    return a, np.array(idx, dtype=np.int64)


@st.composite
def masks(draw, shape):
    kind = draw(st.sampled_from(["random", "none", "all"]))
    if kind == "none":
        return np.zeros(shape, bool)
    if kind == "all":
        return np.ones(shape, bool)
    bits = draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array(bits, bool).reshape(shape)


@SETTINGS
@given(vectors_and_indices())
def test_gather_and_scatter_of_vectors(case):
    x, idx = case
    check(gather, x, idx)
    check(gather_index_2d, x, idx)
    v = np.arange(idx.size, dtype=np.float64) + 10.0
    check(scatter_set, x, idx, v)
    check(scatter_set, x, idx, 3.5)
    check(scatter_update, x, idx, v)
    check(scatter_add_at, x, idx, v)
    check(scatter_add_at, x, idx, 0.25)


@SETTINGS
@given(matrices_and_indices())
def test_gather_and_scatter_of_matrices(case):
    a, idx = case
    check(gather_2d, a, idx)
    check(rows_set, a, idx, np.arange(a.shape[1], dtype=np.float64))
    check(add_at_2d, a, idx, idx[::-1], np.float64(2.0))


@SETTINGS
@given(st.data())
def test_masks(data):
    n = data.draw(st.integers(1, 8))
    x = np.linspace(-2.0, 2.0, n)
    m = data.draw(masks((n,)))
    check(mask_reads, x, m)
    check(masked_set, x, m, np.arange(float(m.sum())))
    check(masked_set, x, m, -1.0)
    check(masked_fill, x, m)
    rows, cols = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    a = np.linspace(-3.0, 3.0, rows * cols).reshape((rows, cols))
    m2 = data.draw(masks((rows, cols)))
    check(mask_reads_2d, a, m2)
    check(masked_fill_2d, a, m2)


def test_mixed_basic_and_advanced():
    a = np.arange(24.0).reshape((2, 3, 4))
    check(mixed, a, np.array([0, 1, 1]), np.array([2, 0, -1]), interpret=True)
    check(none_and_ellipsis, np.arange(3.0), a, interpret=True)
    check(slice_and_ellipsis_writes, np.arange(12.0).reshape((3, 4)), np.array([3, 0, 3]),
          interpret=True)


def test_other_dtypes():
    check(gather, np.arange(6, dtype=np.int64), np.array([5, 0, 0, -2]))
    check(gather_2d, np.arange(20.0, dtype=np.float32).reshape((5, 4)), np.array([3, 0, -1]))
    check(mask_reads, np.arange(5) > 2, np.array([True, False, True, True, False]))
    check(scatter_update, np.zeros(5, np.int64), np.array([0, 3, 0]), np.array([1, 2, 3]))
    check(scatter_add_at, np.zeros(5, np.int64), np.array([0, 3, 0]), np.array([1, 2, 3]))
    check(masked_fill, np.linspace(-1, 1, 5).astype(np.float32), np.arange(5) % 2 == 0)


def test_strided_and_empty():
    x = np.arange(20.0)[::-3]
    check(gather, x, np.array([0, -1, 2]))
    check(gather, x, np.array([], np.int64))
    check(mask_reads, x, np.zeros(x.shape, bool))
    check(scatter_update, x, np.array([], np.int64), np.array([]))
    check(gather_2d, np.arange(12.0).reshape((3, 4)).T, np.array([2, 0]))


def test_duplicates_write_once_add_at_accumulates():
    idx = np.array([0, 0, 2])
    x, y = np.zeros(4), np.zeros(4)
    jit(scatter_update)(x, idx, 1.0)
    jit(scatter_add_at)(y, idx, 1.0)
    assert x.tolist() == [1.0, 0.0, 1.0, 0.0] and y.tolist() == [2.0, 0.0, 1.0, 0.0]


# ---- NumPy's errors -------------------------------------------------------------------------

@pytest.mark.parametrize("fn,args", [
    (gather, (np.arange(5.0), np.array([0, 5]))),
    (gather, (np.arange(5.0), np.array([-6, 0]))),
    (gather_2d, (np.zeros((3, 2)), np.array([1, 3]))),
    (rows_set, (np.zeros((3, 2)), np.array([1, 3]), np.ones(2))),
    (scatter_add_at, (np.zeros(3), np.array([0, 3]), 1.0)),
    (mask_reads, (np.arange(5.0), np.array([True, False, True, False]))),
    (masked_set, (np.arange(5.0), np.array([True, False]), 1.0)),
], ids=["too-large", "too-negative", "axis-1", "write", "add-at", "mask-read", "mask-write"])
def test_index_errors_are_numpys(fn, args):
    raises_like_numpy(fn, *args)


def broadcast_mismatch(a, i, j):
    return a[i, j]


def test_shape_mismatch_of_index_arrays_is_an_index_error():
    with pytest.raises(IndexError, match="shape mismatch"):
        jit(broadcast_mismatch)(np.zeros((3, 3)), np.array([0, 1]), np.array([0, 1, 2]))


def too_many(x):
    return x[0, None, 1]


def float_index(x, f):
    return x[f]


def test_refused_at_compile_time():
    with pytest.raises(CompileError, match="too many indices"):
        jit(too_many)(np.zeros(3))
    with pytest.raises(CompileError, match="valid indices"):
        jit(float_index)(np.zeros(3), np.zeros(2))


# ---- the GPU simulator ----------------------------------------------------------------------

def everything(x, a, idx, m):
    y = x.copy()
    y[idx] += 1.0
    np.add.at(y, idx, 2.0)
    y[m] = -1.0
    return x[idx], a[:, idx], a[idx, None], x[m], a[a > 0.0], y, a[..., None][0]


def test_on_the_gpu_simulator():
    x, a = np.linspace(-1.0, 1.0, 6), np.linspace(-2.0, 2.0, 12).reshape((3, 4))
    args = (x, a, np.array([0, 2, 2, -1]), x > 0.0)
    assert_same(everything(*args), jit(everything, target="cuda-sim")(*args), "cuda-sim")


# ---- gradients against central finite differences -----------------------------------------

def gather_loss(x, idx):
    return np.sum(x[idx] ** 2) + np.sum(np.sin(x[x > 0.0])) + np.sum(x[:, None] * x[None, 1:3])


def rows_loss(a, idx):
    return np.sum(a[idx] ** 2) + np.sum(a[:, idx] * a[0, idx]) + np.sum(a[a > 0.0] ** 3) + \
        np.sum(a[idx[:, None], idx[None, :]])


def masked_write_loss(x, m):
    y = x * 2.0
    y[m] = 0.5
    y[y < -1.0] = -1.0
    return np.sum(y * y * x)


def numeric_gradient(fn, x, other, h=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (fn(x + e, other) - fn(x - e, other)) / (2 * h)
    return g


@pytest.mark.parametrize("fn,x,other", [
    (gather_loss, np.linspace(-1.2, 1.1, 6), np.array([0, 2, 2, 5, -1])),
    (rows_loss, np.linspace(-1.3, 1.4, 12).reshape((3, 4)), np.array([2, 0, 2])),
    (masked_write_loss, np.linspace(-0.9, 0.8, 5), np.array([True, False, False, True, False])),
], ids=["gather", "rows", "masked-write"])
def test_gradients(fn, x, other):
    expected = numeric_gradient(fn, x, other)
    np.testing.assert_allclose(grad(fn)(x, other), expected, rtol=1e-6, atol=1e-7)
    t = np.cos(np.arange(x.size)).reshape(x.shape)
    _, tangent = jvp(fn, (x, other), (t, np.zeros_like(other)))
    np.testing.assert_allclose(tangent, np.sum(expected * t), rtol=1e-6, atol=1e-7)


def scatter_loss(x, idx):
    y = np.zeros(4)
    y[idx] = x[:3] * 2.0
    np.add.at(y, idx, x[1:4])
    return np.sum(y * np.arange(4.0))


def test_scatter_writes_forward_and_reverse_mode():
    x, idx = np.linspace(-1.0, 1.0, 5), np.array([1, 3, 1])
    t = np.sin(np.arange(5.0))
    expected = numeric_gradient(scatter_loss, x, idx)
    _, tangent = jvp(scatter_loss, (x, idx), (t, np.zeros(3, np.int64)))
    np.testing.assert_allclose(tangent, np.sum(expected * t), rtol=1e-6)
    np.testing.assert_allclose(grad(scatter_loss)(x, idx), expected, rtol=1e-6, atol=1e-7)
