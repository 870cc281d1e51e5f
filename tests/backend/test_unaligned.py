"""Unaligned arrays (Dask hands them out): compiled code takes them through an aligned copy
(dispatch.call_aligned), reads and writes reach the caller's array, and a returned
argument, or a view of it, is the caller's array or the same view of it."""
import numpy as np
import pytest

from astjit import jit


def unaligned(values, dtype=np.float64, writeable=True):
    """A copy of `values` whose data address is one byte past an aligned one."""
    values = np.asarray(values, dtype)
    raw = bytearray(values.nbytes + 1) if writeable else bytes(values.nbytes + 1)
    a = np.frombuffer(raw, dtype, count=values.size, offset=1).reshape(values.shape)
    if writeable:
        a[...] = values
    else:
        a = np.frombuffer(b"\0" + values.tobytes(), dtype, count=values.size, offset=1)
        a = a.reshape(values.shape)
    assert a.ctypes.data % a.itemsize and not a.flags.aligned
    return a


def sum_of_squares(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def scale_into(a, out):
    for i in range(a.shape[0]):
        out[i] = a[i] * 2.0 + 1.0
    return out


def rows_total(m):
    return m.sum(axis=1) * 2


def tail(a):
    return a[1:]


def fill_then_fail(out, k):
    out[0] = 5.0
    return out[k]


def integer_sum(a):
    total = 0
    for i in range(a.shape[0]):
        total += a[i] * 3
    return total


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_reads(n):
    x = np.arange(n, dtype=np.float64) - 2.5
    assert jit(sum_of_squares)(unaligned(x)) == sum_of_squares(x)
    assert jit(sum_of_squares)(unaligned(x, writeable=False)) == sum_of_squares(x)
    i = np.arange(n) * 7 - 3
    assert jit(integer_sum)(unaligned(i, np.int64)) == integer_sum(i)
    m = np.arange(3.0 * n).reshape(3, n)
    np.testing.assert_array_equal(jit(rows_total)(unaligned(m)), rows_total(m))
    np.testing.assert_array_equal(jit(rows_total)(unaligned(m.T)), rows_total(m.T))


def test_writes_reach_the_callers_array_and_a_returned_argument_is_it():
    x = np.linspace(-1.0, 1.0, 9)
    out = unaligned(np.zeros(9))
    got = jit(scale_into)(unaligned(x), out)
    assert got is out
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)
    strided = unaligned(np.zeros(18))[::2]
    assert jit(scale_into)(x, strided) is strided
    np.testing.assert_array_equal(strided, x * 2.0 + 1.0)


def test_a_returned_view_is_a_view_of_the_callers_array():
    a = unaligned(np.arange(6.0))
    view = jit(tail)(a)
    np.testing.assert_array_equal(view, np.arange(1.0, 6.0))
    view[0] = 42.0
    assert a[1] == 42.0 and np.shares_memory(view, a)


def test_writes_before_an_error_are_kept_and_read_only_arrays_refused():
    out = unaligned(np.zeros(3))
    with pytest.raises(IndexError):
        jit(fill_then_fail)(out, 10)
    assert out[0] == 5.0
    with pytest.raises(ValueError, match="read-only"):
        jit(scale_into)(np.ones(3), unaligned(np.zeros(3), writeable=False))


def test_strides_that_are_not_multiples_of_the_item_size():
    packed = np.zeros(5, dtype=[("tag", "i1"), ("value", "f8")])
    values = packed["value"]  # stride 9
    assert values.strides == (9,)
    jit(scale_into)(np.arange(5.0), values)
    np.testing.assert_array_equal(packed["value"], np.arange(5.0) * 2.0 + 1.0)
    assert jit(sum_of_squares)(values) == sum_of_squares(values)
    with pytest.raises(TypeError, match="np.array"):
        jit(tail)(values)
