"""Array views: slices, rows, transpose, reshape and slice assignment, checked against
NumPy through the interpreter (typed and final IR) and compiled code; views share memory
with their base, writes through them reach it, and no reference leaks."""
import gc
import sys

import numpy as np
import pytest
from array_checks import outcome, stages

from astjit import jit
from astjit.errors import CompileError
from astjit.ir.interp import interpret


def same(want, have):
    if want[0] != have[0]:
        return False
    if want[0] == "raised":
        return want[1] is have[1] and have[2].startswith(want[2])
    return same_value(want[1], have[1])


def same_value(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape \
            and np.array_equal(a, b)
    if isinstance(a, np.generic) and isinstance(b, (np.generic, float, int)):
        # compiled code gives NumPy's scalar (test_numpy_scalars.py checks its type), the
        # interpreter the Python number it equals
        a, b = a.item(), b.item() if isinstance(b, np.generic) else b
    return type(a) is type(b) and a == b


def runners(fn, make):
    typed, final = stages(fn, make())
    return [("typed", lambda *a: interpret(typed, list(a))),
            ("final", lambda *a: interpret(final, list(a))), ("jit", jit(fn))]


def check_against_numpy(fn, make):
    """Same results and same effects on the arguments, in every stage."""
    args = make()
    expected = outcome(fn, args)
    for stage, run in runners(fn, make):
        mine = make()
        got = outcome(run, mine)
        assert same(expected, got), f"{fn.__name__} ({stage}): {got} vs {expected}"
        for a, b in zip(args, mine):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b), f"{fn.__name__} ({stage}): arguments differ"
        if expected[0] == "ok" and isinstance(expected[1], np.ndarray) \
                and fn not in COPIES_WHERE_NUMPY_VIEWS:
            shares = [np.shares_memory(expected[1], a) for a in args if isinstance(a, np.ndarray)]
            have = [np.shares_memory(got[1], a) for a in mine if isinstance(a, np.ndarray)]
            assert shares == have, f"{fn.__name__} ({stage}): sharing {have} vs {shares}"


# A reshape of data that is not C-contiguous is a copy in compiled code; NumPy makes a
# view where the strides allow one (x[::2].reshape(2, 2)). Values agree.
COPIES_WHERE_NUMPY_VIEWS = set()


# ---- the functions --------------------------------------------------------------------------

def s_range(x): return x[1:4]
def s_step(x): return x[1:6:2]
def s_every_other(x): return x[::2]
def s_reversed(x): return x[::-1]
def s_negative_step(x): return x[4:0:-2]
def s_clamped(x): return x[-100:100]
def s_clamped_down(x): return x[100:-100:-3]
def s_empty(x): return x[4:2]
def s_negative_bounds(x): return x[-3:-1]
def s_dynamic(x, a, b, c): return x[a:b:c]
def s_zero_step(x, c): return x[::c]
def s_2d(a): return a[1:, :2]
def s_column(a): return a[:, 1]
def s_row_int(a): return a[-1]
def s_row_var(a, i): return a[i]
def s_row_out_of_bounds(a): return a[5]
def s_row_slice(a): return a[1, ::-1]
def s_leading(a): return a[1:]
def s_of_slice(x): return x[1:][::2][1:]
def t_attr(a): return a.T
def t_numpy(a): return np.transpose(a)
def t_1d(x): return x.T
def t_3d(a): return a.T
def r_tuple(a): return a.reshape((2, -1))
def r_args(a): return a.reshape(2, 3)
def r_numpy(a): return np.reshape(a, (3, -1))
def r_numpy_int(a): return np.reshape(a, 6)
def r_packed(a, n): return a.reshape(n)
def r_shape_var(a): return a.reshape(a.shape)
def r_noncontiguous(a): return a.T.reshape(6)
def r_strided(x): return x[::2].reshape((2, 2))
COPIES_WHERE_NUMPY_VIEWS.add(r_strided)
def r_mismatch(a): return a.reshape((4, 2))
def r_mismatch_unknown(a): return a.reshape((4, -1))
def r_two_unknown(a): return a.reshape((-1, -1))


def read_view(x):
    v = x[1:-1]
    total = 0.0
    for i in range(len(v)):
        total += v[i] * (i + 1)
    return total


def read_rows(a):
    total = 0.0
    for i in range(a.shape[0]):
        row = a[i]
        for j in range(len(row)):
            total += row[j] * (i - j)
    return total


def write_through_view(x):
    v = x[::2]
    for i in range(len(v)):
        v[i] = -1.0
    return x


def write_through_transpose(a):
    t = a.T
    t[0, 1] = 9.0
    return a


def write_through_row(a):
    r = a[1]
    r[0] = 5.0
    return 0


def view_in_loop(x, n):
    total = 0.0
    for k in range(n):
        v = x[k:]
        total += v[0]
    return total


def view_in_branch(x, flag):
    if flag:
        v = x[1:]
    else:
        v = x[::-1]
    return v


def view_of_new(n):
    a = np.arange(n * 2.0)
    return a[1::2]


def views_in_tuple(a):
    return a[0], a.T, a[:, 1:]


def assign_array(y, x):
    y[1:3] = x
    return y


def assign_scalar(y):
    y[:] = 2.0
    return y


def assign_int_into_float(y):
    y[::2] = 7
    return y


def assign_2d(a, b):
    a[1:, :2] = b
    return a


def assign_broadcast_row(a, r):
    a[:, :] = r
    return a


def assign_row(a, r):
    a[0] = r
    return a


def assign_overlap(x):
    x[1:] = x[:-1]
    return x


def assign_mismatch(y, x):
    y[:2] = x
    return 0


def assign_return_none(y):
    y[1:] = 0.5


# ---- the inputs -------------------------------------------------------------------------------

def vec(n=6):
    return np.arange(n, dtype=np.float64) * 1.5 - 2.0


def mat(n=3, m=4):
    return np.arange(n * m, dtype=np.float64).reshape(n, m) - 3.0


CASES = [
    (s_range, lambda: (vec(),)), (s_step, lambda: (vec(),)), (s_every_other, lambda: (vec(7),)),
    (s_reversed, lambda: (vec(),)), (s_negative_step, lambda: (vec(),)),
    (s_clamped, lambda: (vec(),)), (s_clamped_down, lambda: (vec(),)), (s_empty, lambda: (vec(),)),
    (s_negative_bounds, lambda: (vec(),)),
    (s_dynamic, lambda: (vec(), 1, 5, 2)), (s_dynamic, lambda: (vec(), 5, -7, -2)),
    (s_dynamic, lambda: (vec(), -2, 100, 3)), (s_dynamic, lambda: (vec(0), 0, 3, -1)),
    (s_dynamic, lambda: (np.arange(5), 0, 5, 1)),
    (s_zero_step, lambda: (vec(), 0)),
    (s_2d, lambda: (mat(),)), (s_column, lambda: (mat(),)), (s_row_int, lambda: (mat(),)),
    (s_row_var, lambda: (mat(), 1)), (s_row_var, lambda: (mat(), -3)),
    (s_row_var, lambda: (mat(), 3)), (s_row_out_of_bounds, lambda: (mat(),)),
    (s_row_slice, lambda: (mat(),)), (s_leading, lambda: (mat(),)),
    (s_of_slice, lambda: (vec(12),)),
    (t_attr, lambda: (mat(),)), (t_numpy, lambda: (mat(2, 3),)), (t_1d, lambda: (vec(),)),
    (t_3d, lambda: (np.arange(24.0).reshape(2, 3, 4),)),
    (t_attr, lambda: (np.arange(6).reshape(2, 3) > 2,)),
    (r_tuple, lambda: (vec(),)), (r_args, lambda: (vec(),)), (r_numpy, lambda: (mat(2, 3),)),
    (r_numpy_int, lambda: (mat(2, 3),)), (r_packed, lambda: (mat(2, 3), 6)),
    (r_packed, lambda: (mat(2, 3), -1)), (r_shape_var, lambda: (mat(),)),
    (r_noncontiguous, lambda: (mat(2, 3),)), (r_strided, lambda: (vec(8),)),
    (r_tuple, lambda: (np.zeros((0, 3)),)),
    (r_mismatch, lambda: (mat(2, 3),)), (r_mismatch_unknown, lambda: (mat(2, 3),)),
    (r_two_unknown, lambda: (mat(2, 3),)),
    (read_view, lambda: (vec(),)), (read_rows, lambda: (mat(),)),
    (write_through_view, lambda: (vec(),)), (write_through_transpose, lambda: (mat(),)),
    (write_through_row, lambda: (mat(),)),
    (view_in_loop, lambda: (vec(), 4)), (view_in_loop, lambda: (vec(3), 4)),
    (view_in_branch, lambda: (vec(), True)), (view_in_branch, lambda: (vec(), False)),
    (view_of_new, lambda: (5,)), (views_in_tuple, lambda: (mat(),)),
    (assign_array, lambda: (vec(), np.array([7.0, 8.0]))), (assign_scalar, lambda: (vec(),)),
    (assign_int_into_float, lambda: (vec(),)),
    (assign_2d, lambda: (mat(), np.ones((2, 2)))),
    (assign_broadcast_row, lambda: (mat(), np.arange(4.0))),
    (assign_broadcast_row, lambda: (mat(), np.arange(4.0).reshape(1, 4))),
    (assign_row, lambda: (mat(), np.arange(4.0))),
    (assign_overlap, lambda: (vec(),)),
    (assign_mismatch, lambda: (vec(), np.ones(3))),
    (assign_return_none, lambda: (vec(),)),
]


def case_id(case):
    return case[0].__name__


@pytest.mark.parametrize("fn,make", CASES, ids=[case_id(c) for c in CASES])
def test_views_match_numpy(fn, make):
    check_against_numpy(fn, make)


def test_slices_of_every_shape_match_numpy():
    bounds = [None, -9, -4, -1, 0, 2, 5, 9]
    f = jit(s_dynamic)
    for n in (0, 1, 5):
        x = vec(n)
        for start in bounds:
            for stop in bounds:
                for step in (-3, -1, 1, 2):
                    if start is None or stop is None:
                        continue
                    want = x[start:stop:step]
                    got = f(x, start, stop, step)
                    assert got.shape == want.shape and np.array_equal(got, want), \
                        (n, start, stop, step)
                    assert got.size == 0 or np.shares_memory(got, x)


def test_reshape_message_names_size_and_shape():
    with pytest.raises(ValueError, match=r"cannot reshape array of size 6 into shape \(4,2\)"):
        jit(r_mismatch)(mat(2, 3))
    with pytest.raises(ValueError, match=r"cannot reshape array of size 6 into shape \(4,newaxis\)"):
        jit(r_mismatch_unknown)(mat(2, 3))


def test_a_view_keeps_its_base_alive():
    view = jit(s_range)(vec())
    gc.collect()
    assert view.base is not None and np.array_equal(view, vec()[1:4])
    made = jit(view_of_new)(4)
    gc.collect()
    assert np.array_equal(made, np.arange(8.0)[1::2])


def test_reshape_of_contiguous_is_a_view_and_of_strided_a_copy():
    a = mat(2, 3)
    assert np.shares_memory(jit(r_tuple)(a.reshape(6)), a)
    assert not np.shares_memory(jit(r_noncontiguous)(a), a)


def test_views_leak_no_reference():
    for fn, make in [(s_range, lambda: (vec(),)), (views_in_tuple, lambda: (mat(),)),
                     (view_in_loop, lambda: (vec(), 4)), (r_noncontiguous, lambda: (mat(2, 3),)),
                     (assign_overlap, lambda: (vec(),)), (s_row_out_of_bounds, lambda: (mat(),)),
                     (view_in_branch, lambda: (vec(), False)), (r_tuple, lambda: (vec(),))]:
        args = make()
        f = jit(fn)
        outcome(f, args)
        before = [sys.getrefcount(a) for a in args if isinstance(a, np.ndarray)]
        for _ in range(200):
            outcome(f, args)
        gc.collect()
        after = [sys.getrefcount(a) for a in args if isinstance(a, np.ndarray)]
        assert after == before, fn.__name__


def test_a_read_only_argument_is_refused_for_slice_assignment():
    x = vec()
    x.flags.writeable = False
    with pytest.raises(ValueError):
        jit(assign_scalar)(x)


def augment_slices(x, a, v):
    x[1:3] += 1.0
    x[::2] *= v
    x[1:] -= x[:-1]  # overlapping: reads the old values, as NumPy does
    a[0, :] /= v
    a[:, 1] += x[:2]
    return x, a


def test_augmented_slice_assignment_matches_numpy():
    make = lambda: (np.arange(6.0), np.arange(6.0).reshape(2, 3) + 1.0, 3.0)
    expected = augment_slices(*make())
    got = jit(augment_slices)(*make())
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)


def test_slicing_a_tuple_is_reported():
    def f(x):
        t = (1, 2, 3)
        return t[1:]
    with pytest.raises(CompileError, match="slicing a tuple is not supported"):
        jit(f)(vec())
