"""x.reshape(...) of strided data: a view exactly where NumPy's reshape makes one (its
`_attempt_nocopy_reshape`), with NumPy's strides, else a copy; np.ravel and x.ravel() a
view of C-contiguous data only, as NumPy's ravel (backend/llvm/views.py). Compared with
NumPy on the same arrays: values, whether the result shares the argument's memory, its
strides, and what a write through the result does to the argument."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit


def to1(x, a):
    return x.reshape(a)


def to2(x, a, b):
    return x.reshape(a, b)


def to3(x, a, b, c):
    return x.reshape(a, b, c)


def to4(x, a, b, c, d):
    return np.reshape(x, (a, b, c, d))


def raveled(x):
    return np.ravel(x), x.ravel()


def written(x, a, b):
    r = x.reshape(a, b)
    r[...] = -1.0
    return x


RESHAPES = {n: jit(fn) for n, fn in ((1, to1), (2, to2), (3, to3), (4, to4))}
RAVELED, WRITTEN = jit(raveled), jit(written)


@st.composite
def strided(draw):
    """A float64 array: a random slicing (steps of either sign) of a random shape,
    perhaps transposed; lengths of 0 and 1 included."""
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    base = np.arange(float(np.prod(shape) * 6)).reshape([*shape[:-1], shape[-1] * 6])
    index = []
    for n in base.shape:
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        start = draw(st.integers(0, n - 1))
        stop = draw(st.sampled_from([None, start + 1, start]))  # whole, one, none
        index.append(slice(start, stop, step) if step > 0 else slice(None, None, step))
    x = base[tuple(index)]
    if draw(st.booleans()):
        x = x.T
    return x


def _factors(draw, size: int) -> tuple[int, ...]:
    """A shape of `size` elements: its prime factors grouped, with 1s put in."""
    factors, n, p = [], size, 2
    while n > 1 and p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    ndim = draw(st.integers(1, 4))
    dims = [1] * ndim
    for f in factors:
        dims[draw(st.integers(0, ndim - 1))] *= f
    if size == 0:
        dims[draw(st.integers(0, ndim - 1))] = 0
    return tuple(dims)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(x=strided(), data=st.data())
def test_reshape_views_where_numpy_does(x, data):
    dims = _factors(data.draw, x.size)
    if x.size and data.draw(st.booleans()):  # one length inferred (of none: ambiguous)
        k = data.draw(st.integers(0, len(dims) - 1))
        asked = dims[:k] + (-1,) + dims[k + 1:]
    else:
        asked = dims
    expected = x.reshape(asked)
    got = RESHAPES[len(dims)](x, *asked)
    np.testing.assert_array_equal(got, expected)
    assert np.shares_memory(got, x) == np.shares_memory(expected, x)
    if x.size and got is not x:
        assert got.strides == expected.strides
    elif x.size:  # the argument itself (README: a view covering it exactly)
        assert all(g == e for g, e, n in zip(got.strides, expected.strides, got.shape) if n > 1)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(x=strided())
def test_ravel_copies_unless_c_contiguous(x):
    for got in RAVELED(x):
        expected = np.ravel(x)
        np.testing.assert_array_equal(got, expected)
        assert np.shares_memory(got, x) == np.shares_memory(expected, x)


@pytest.mark.parametrize("make, rows, cols", [
    (lambda a: a[:, ::2], 12, 2),   # every other column: one run of stride 2, a view
    (lambda a: a[:, ::2], 2, 12),   # the same run, other rows: a view
    (lambda a: a[::2], 3, 8),       # every other row, each contiguous: a view
    (lambda a: a[:, :1], 2, 3),     # a column: its rows step as one axis, a view
    (lambda a: a.T, 4, 12),         # Fortran order: a copy
    (lambda a: a[::-1], 12, 4),     # reversed rows: rows split, a copy
])
def test_a_write_through_the_reshape_reaches_the_argument_as_numpys(make, rows, cols):
    a, b = np.arange(48.0).reshape(6, 8), np.arange(48.0).reshape(6, 8)
    expected = written(make(a), rows, cols)
    got = WRITTEN(make(b), rows, cols)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(b, a)


def test_every_other_element_reshaped_is_a_view():
    """The case an earlier version copied: a write through it was lost."""
    def first_set(v):
        r = v.reshape(-1)
        r[0] = 99.0
        return v

    v, w = np.arange(10.0)[::2], np.arange(10.0)[::2]
    np.testing.assert_array_equal(jit(first_set)(w), first_set(v))
    assert w[0] == 99.0


def test_the_interpreter_makes_the_same_choices():
    """The reference interpreter's ravel (np.ravel's choice, of a batch under vmap too) and
    reshape (NumPy's own)."""
    from astjit import vmap
    from astjit.api import interpret_call

    def doubled_ravel(x):
        return np.ravel(x) * 2.0

    v = np.arange(10.0)[::2]
    for got, expected in zip(interpret_call(RAVELED, (v,), {}), raveled(v)):
        assert np.shares_memory(got, v) == np.shares_memory(expected, v)
    assert np.shares_memory(interpret_call(RESHAPES[1], (v, -1), {}), v)
    batch = np.arange(24.0).reshape(4, 3, 2)[:, ::2]
    np.testing.assert_array_equal(interpret_call(vmap(doubled_ravel), (batch,), {}),
                                  np.stack([doubled_ravel(e) for e in batch]))
