"""Writes that compiled code does in place (passes/into.py, backend/llvm/fused.py `into`):
`x[x < c] = v`, `x[m] = v`, `x += y`, `x[...] = expr` against NumPy over random shapes,
dtypes, strided and reversed targets and masks that alias the target; writes whose value
or index arrays share memory with the target (`x[:] = x[::-1]` passed as two arguments,
`x[idx] = x[::-1]`, `a[a] = 0`), which read old elements as NumPy's do; NumPy's errors;
gradients of masked writes against central finite differences."""
import numpy as np
import pytest
from array_checks import central_difference
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit

SETTINGS = settings(max_examples=15, derandomize=True, deadline=None, database=None)
DTYPES = [np.float64, np.uint8]


def values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 4).astype(dtype)
    return rng.integers(0, 9, shape).astype(dtype)


def check(compiled, fn, *args):
    """The result and every argument after the call, compiled against NumPy."""
    want_args = [np.copy(a) for a in args]
    want = fn(*want_args)
    got_args = [np.copy(a) for a in args]
    got = compiled(*got_args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    for a, b in zip(want_args, got_args):
        np.testing.assert_array_equal(b, a)


def fill_below(x, c):
    x[x < c] = 0
    return x


def fill_mask(x, m):
    x[m] = 7
    return x


def fill_kept_first(x, m):
    x[...] = np.where(m, x, 3)
    return x


def fill_both(x, y, c):
    x[x < c] = 0
    z = y[::-1]
    z[z > c + 3] = 1
    return x


def fill_strided_rows(a, c):
    b = a[::2, ::-1]
    b[b < c] = 5
    return a


def fill_columns(a, m):
    a[:, m] = 2
    return a


def add_in_place(x, y):
    x += y * 2
    return x


def assign_view(x, y):
    x[:] = y
    return x


FILL_BELOW, FILL_MASK = jit(fill_below), jit(fill_mask)
FILL_KEPT_FIRST, FILL_BOTH = jit(fill_kept_first), jit(fill_both)
FILL_STRIDED_ROWS, FILL_COLUMNS = jit(fill_strided_rows), jit(fill_columns)
ADD_IN_PLACE, ASSIGN_VIEW = jit(add_in_place), jit(assign_view)


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), shape=st.lists(st.integers(0, 70), min_size=1, max_size=2),
       seed=st.integers(0, 2 ** 16))
def test_fill_where_below(dtype, shape, seed):
    """Blocks of the unit-stride version, their partial last one, empty arrays, 1-2 axes."""
    x = values(dtype, shape, seed)
    check(FILL_BOTH, fill_both, x, values(dtype, shape, seed + 1), x.dtype.type(2))


@SETTINGS
@given(dtype=st.sampled_from(DTYPES), n=st.integers(0, 200), density=st.sampled_from([0, 0.02, 0.5, 1]),
       seed=st.integers(0, 2 ** 16))
def test_fill_mask(dtype, n, density, seed):
    x = values(dtype, n, seed)
    m = np.random.default_rng(seed + 1).random(n) < density
    check(FILL_MASK, fill_mask, x, m)
    check(FILL_KEPT_FIRST, fill_kept_first, x, m)
    check(FILL_MASK, fill_mask, x[::-3], m[::3][:len(x[::-3])])


@SETTINGS
@given(rows=st.integers(0, 9), cols=st.integers(0, 90), seed=st.integers(0, 2 ** 16))
def test_fill_strided_and_column_masks(rows, cols, seed):
    a = values(np.float64, (rows, cols), seed)
    check(FILL_STRIDED_ROWS, fill_strided_rows, a, 0.5)
    check(FILL_COLUMNS, fill_columns, a, np.random.default_rng(seed).random(cols) < 0.3)
    check(FILL_BELOW, fill_below, a.T, 1.0)


def test_mask_aliasing_the_target():
    """`b[b[::-1]] = False`: the mask is the target's memory read in another order, so the
    kernel must not write into the target as it reads the mask. The mask is read whole
    before any write (NumPy's own loop reads it as it writes: this compares with the
    mask copied first, the order NumPy's documentation gives)."""
    b = np.array([True, False, True, True, False, False, True, False, True])
    check(FILL_MASK, fill_mask, b.astype(np.float64), b[::-1])

    def flip_mask(b):
        b[b[::-1]] = False
        return b

    def flip_copied_mask(b):
        b[np.copy(b[::-1])] = False
        return b
    compiled = jit(flip_mask)
    for n in (1, 9, 63, 64, 65, 300):
        bits = np.random.default_rng(n).random(n) < 0.5
        got = compiled(np.copy(bits))
        np.testing.assert_array_equal(got, flip_copied_mask(np.copy(bits)))


@SETTINGS
@given(n=st.integers(1, 150), shift=st.integers(-5, 5), seed=st.integers(0, 2 ** 16))
def test_in_place_update_with_overlapping_arguments(n, shift, seed):
    """x += y and x[:] = y where y is a view of x passed as a second argument: NumPy
    reads the old elements, which the kernel writing into x (or a copy straight into x)
    would overwrite first."""
    base = values(np.float64, n + 10, seed)
    for y_of in (lambda x: x[::-1], lambda x: np.roll(x, 0), lambda x: x):
        want = np.copy(base)
        wx = want[5:5 + n]
        wx += y_of(want[5 + shift:5 + shift + n]) * 2
        got = np.copy(base)
        gx = got[5:5 + n]
        ADD_IN_PLACE(gx, y_of(got[5 + shift:5 + shift + n]))
        np.testing.assert_array_equal(got, want)
        want, got = np.copy(base), np.copy(base)
        want[5:5 + n] = np.copy(y_of(want[5 + shift:5 + shift + n]))
        ASSIGN_VIEW(got[5:5 + n], y_of(got[5 + shift:5 + shift + n]))
        np.testing.assert_array_equal(got, want)


def test_scatter_values_and_indices_sharing_the_target():
    def reversed_into(x, idx):
        x[idx] = x[::-1]
        return x

    def values_given(x, y, idx):
        x[idx] = y
        return x

    def own_indices(a):
        a[a] = 0
        return a

    def own_indices_added(a):
        a[a[::-1]] += a
        return a
    x = np.arange(7.0)
    check(jit(reversed_into), reversed_into, x, np.arange(7)[::-1].copy())
    x = np.arange(7.0)
    want = np.copy(x)
    want[np.arange(7)] = np.copy(want[::-1])
    jit(values_given)(x, x[::-1], np.arange(7))
    np.testing.assert_array_equal(x, want)
    a = np.array([3, 0, 4, 1, 2])
    check(jit(own_indices), own_indices, a)
    check(jit(own_indices_added), own_indices_added, a)


def test_errors_as_numpy():
    with pytest.raises(IndexError, match="boolean index did not match"):
        FILL_MASK(np.zeros(4), np.zeros(5, dtype=bool))
    with pytest.raises(ValueError, match="could not broadcast"):
        ASSIGN_VIEW(np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError):
        ADD_IN_PLACE(np.zeros(4), np.zeros(3))

    def negative_power(x, y):
        x[...] = x ** y
        return x
    x = np.arange(6)
    with pytest.raises(ValueError, match="negative"):
        jit(negative_power)(x, np.array([1, 2, 3, -1, 1, 1]))
    np.testing.assert_array_equal(x, np.arange(6))  # raised before writing, as NumPy does


def test_one_kernel_writes_the_target():
    """`x[x < c] = 0` is one kernel writing into x: the mask and the where fused, no
    new array."""
    x = np.linspace(-1, 1, 10)
    text = FILL_BELOW.ir(x, 0.0, stage="optimized")
    assert text.count("fused") == 1 and "into=%x" in text, text
    assert "array_new" not in text and "raise_if" not in text, text


def masked_loss(x, c):
    y = x * x
    y[y > c] = 0.0
    return np.sum(y * x)


def masked_value_loss(x, v):
    y = np.copy(x)
    y[x < 0.0] = v[:2]
    return np.sum(y * y)


def test_masked_write_gradients():
    """The adjoints of the writes (ad/writes.py, ad/scatters.py): zero where written for
    the target, the cotangent gathered for the value; the gradient program's own updates
    of its adjoints are in-place kernels too."""
    x = np.array([0.3, -1.2, 2.1, 0.7, -0.4, 1.6])
    got = grad(masked_loss)(x, 1.5)
    np.testing.assert_allclose(got, central_difference(masked_loss, (x, 1.5), 0), rtol=1e-6)
    v = np.array([0.5, -2.0, 3.0])
    gx, gv = grad(masked_value_loss, argnums=(0, 1))(x, v)
    np.testing.assert_allclose(gx, central_difference(masked_value_loss, (x, v), 0), rtol=1e-6)
    np.testing.assert_allclose(gv, central_difference(masked_value_loss, (x, v), 1), rtol=1e-6,
                               atol=1e-9)


def test_parallel_kernels_write_in_place(monkeypatch):
    """jit(parallel=True): each chunk runs its own blocks (a chunk per few points)."""
    monkeypatch.setenv("ASTJIT_MIN_CHUNK_WORK", "1")

    def fills(x, a, y):
        x[x < 0.5] = 0.0
        a[a > 0.2] = 2.0
        x += y
        return x, a
    compiled = jit(fills, parallel=True)
    for n, shape in ((5, (3, 7)), (300, (5, 130)), (1000, (2, 64))):
        args = [values(np.float64, s, n) for s in (n, shape, n)]
        want, got = fills(*[np.copy(v) for v in args]), compiled(*[np.copy(v) for v in args])
        for w, g in zip(want, got):
            np.testing.assert_array_equal(g, w)
