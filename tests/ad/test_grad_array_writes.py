"""Gradients through element writes (`y[i] = v`) and slice assignment (`y[a:b] = v`), in
straight-line code and in loops (undo logs): central finite differences, compiled and
interpreted, f64 and f32; the forward value unchanged; the arrays passed in left as they
were; no leaks; a million-element recurrence in milliseconds; clear errors for what is not
supported."""
import gc
import os
import sys
import time

import numpy as np
import pytest
from array_checks import (
    assert_gradient_of_writes,
    assert_interpreter_agrees_on_gradient,
    assert_no_leaks,
    central_difference,
)

from astjit import DifferentiationError, grad, jacfwd, jit, value_and_grad

# ---- the corpus -------------------------------------------------------------------------------


def recurrence(x, a):                # y[i] = f(y[i-1], x[i])
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + np.sin(x[i])
    return np.sum(y * y)


def overwrite(x):                    # the same element written several times
    y = np.zeros(3, dtype=x.dtype)
    for i in range(x.shape[0]):
        y[i % 3] = y[i % 3] * x[i] + 1.0
    return y[0] + 2.0 * y[1] + 3.0 * y[2]


def prefix(x):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return np.sum(out * x)


def loop_2d(a, b):                   # nested loops writing out[i, j]
    m, n = a.shape
    out = np.zeros((m, n), dtype=a.dtype)
    for i in range(m):
        out[i, 0] = a[i, 0] * b[0]
        for j in range(1, n):
            out[i, j] = out[i, j - 1] * a[i, j] + b[j]
    return np.sum(out * out)


def nested_overwrite(x, sweeps):     # inner loop writes, outer loop repeats: logs nested
    y = np.zeros(4, dtype=x.dtype)
    for k in range(sweeps):
        for i in range(x.shape[0]):
            y[i % 4] = np.tanh(y[i % 4] + x[i] * y[(i + 1) % 4]) + 0.1
    return np.sum(y)


def slice_write(x):                  # slices, a column, a row, a number into a row
    y = np.zeros((3, 4), dtype=x.dtype)
    y[1, 1:3] = x[0:2] * 2.0
    y[:, 0] = x[1:4]
    s = np.sum(y * y)
    y[2] = np.sin(x[:4])
    y[0, :] = 1.5
    return s + np.sum(y * np.cos(y))


def writes_into_argument(x, w):      # the gradient is with respect to x on entry
    x[0] = x[0] * w
    x[1] = x[0] + x[2]
    return np.sum(x * x)


def read_then_overwritten(x):        # y * x reads y before the write: y is put back
    y = np.ones_like(x)
    z = y * x
    y[0] = 5.0
    y[1] = x[1] * x[0]
    return np.sum(z * x) + np.sum(y * x)


def write_constant(x):               # a constant overwrites an active element: zero adjoint
    y = x * 2.0
    y[1] = 3.0
    return np.sum(y * y)


def loop_with_scalar_state(x, a):    # writes and a carried float; the loss reads one element
    y = np.zeros_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s = a * s + x[i]
        y[i] = s * s
    return y[x.shape[0] - 1] + np.sum(y) * 0.5


def write_in_if(x):                 # the `if` logs its writes; its backward undoes them
    y = np.zeros(3, dtype=x.dtype)
    if x[0] > 0:
        y[1] = x[1] * y[1] + x[2]
        y[0] = y[1] * 2.0
    return np.sum(y * y)


def if_in_loop(x):                   # branches of a loop body write (logs threaded through)
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            y[i] = np.sin(x[i]) + y[i - 1]
        else:
            y[i] = y[i - 1] * x[i]
    return np.sum(y * y)


def if_overwrites_in_loop(x):
    y = np.ones(2, dtype=x.dtype)
    for i in range(x.shape[0]):
        if i % 2 == 0:
            y[0] = y[0] * x[i] + y[1]
        y[1] = y[1] + y[0] * 0.5
    return y[0] * y[1]


def if_in_nested_loops(a):
    m, n = a.shape
    out = np.zeros((m, n), dtype=a.dtype)
    for i in range(m):
        for j in range(n):
            if a[i, j] > 0.5:
                out[i, j] = out[i, j - 1] + a[i, j]
            else:
                out[i, j] = out[i - 1, j] * a[i, j]
    return np.sum(out * out)


def read_through_written_view(x, w):  # reads of the view after the write see what it wrote
    y = x * 1.0
    r = y[1:]
    r[0] = w * 3.0
    return np.sum(r * r) + np.sum(y * x)


rng = np.random.default_rng(7)
V6 = rng.uniform(0.2, 1.0, 6)
M34 = rng.uniform(0.2, 1.0, (3, 4))
V4 = rng.uniform(0.2, 1.0, 4)

CASES = [
    (recurrence, (V6, 0.7), (0, 1)),
    (overwrite, (V6,), (0,)),
    (prefix, (V6,), (0,)),
    (loop_2d, (M34, V4), (0, 1)),
    (nested_overwrite, (V6, 3), (0,)),
    (slice_write, (V6,), (0,)),
    (writes_into_argument, (V6, 0.7), (0, 1)),
    (read_then_overwritten, (V6,), (0,)),
    (write_constant, (V6,), (0,)),
    (loop_with_scalar_state, (V6, 0.6), (0, 1)),
    (write_in_if, (V6,), (0,)),
    (if_in_loop, (V6,), (0,)),
    (if_overwrites_in_loop, (V6,), (0,)),
    (if_in_nested_loops, (M34,), (0,)),
    (read_through_written_view, (V6, 0.7), (0, 1)),
]
IDS = [c[0].__name__ for c in CASES]


def copies(args, dtype=np.float64):
    return [a.astype(dtype) if isinstance(a, np.ndarray) else a for a in args]


def numeric_grad(fn, args, i, h=1e-6):
    """Central differences of `fn` w.r.t. argument i, in float64."""
    return central_difference(fn, copies(args), i, h)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn,args,argnums", CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, args, argnums, dtype):
    assert_gradient_of_writes(grad, fn, args, argnums, dtype)


@pytest.mark.parametrize("fn,args,argnums", CASES, ids=IDS)
def test_interpreter_agrees(fn, args, argnums):
    assert_interpreter_agrees_on_gradient(grad, fn, args, argnums)


@pytest.mark.parametrize("fn,args,argnums", CASES, ids=IDS)
def test_value_is_the_forward_result(fn, args, argnums):
    # value_and_grad's forward is its own compiled program: LLVM may vectorize its sums with
    # another width than jit(fn)'s on some CPUs (an AMD EPYC: the last bit), as README's
    # "Sums may round differently" allows, so both are compared with CPython's to rounding
    value, _ = value_and_grad(fn, argnums=argnums)(*copies(args))
    want = fn(*copies(args))
    assert value == pytest.approx(want, rel=1e-12)
    assert jit(fn)(*copies(args)) == pytest.approx(want, rel=1e-12)


def test_forward_still_writes_into_the_argument():
    x = V6.copy()
    jit(writes_into_argument)(x, 0.7)
    want = V6.copy()
    writes_into_argument(want, 0.7)
    assert np.array_equal(x, want)


@pytest.mark.skipif(os.environ.get("ASTJIT_DISABLE_JIT", "") not in ("", "0"),
                    reason="times compiled code")
def test_million_element_recurrence_takes_milliseconds():
    """Undo logs cost O(1) per write: the gradient of a 10^6-step recurrence is linear."""
    x = rng.uniform(-1.0, 1.0, 1_000_000)
    g = grad(recurrence, argnums=(0, 1))
    g(x[:10], 0.5)
    start = time.perf_counter()
    gx, ga = g(x, 0.5)
    elapsed = time.perf_counter() - start
    assert np.all(np.isfinite(gx)) and np.isfinite(ga)
    small = x[:50]
    np.testing.assert_allclose(g(small, 0.5)[0], numeric_grad(recurrence, (small, 0.5), 0),
                               rtol=1e-6, atol=1e-6)
    assert elapsed < 10.0, elapsed  # a quadratic undo log would take hours, not seconds


LEAK_CASES = [(fn, args, argnums) for fn, args, argnums in CASES
              if fn in (recurrence, loop_2d, nested_overwrite, slice_write, writes_into_argument,
                        write_in_if, if_in_nested_loops)]


@pytest.mark.parametrize("fn,args,argnums", LEAK_CASES, ids=[c[0].__name__ for c in LEAK_CASES])
def test_no_leaks(fn, args, argnums):
    inputs = copies(args)
    g = grad(fn, argnums=argnums)
    assert_no_leaks(lambda: g(*inputs), [a for a in inputs if isinstance(a, np.ndarray)])


def write_out_of_bounds(x, k):
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
    y[k] = 1.0
    return np.sum(y)


def test_error_exit_releases_everything():
    x = rng.standard_normal(5)
    g = grad(write_out_of_bounds)
    np.testing.assert_allclose(g(x, 1), [2.0, 0.0, 2.0, 2.0, 2.0])
    count = sys.getrefcount(x)
    for _ in range(20):
        with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
            g(x, 7)
    gc.collect()
    assert sys.getrefcount(x) == count


# ---- what is refused, with the construct and the line -------------------------------------


def view_written_in_if(x):
    y = np.zeros(4)
    v = y[1:3]
    if x[0] > 0:
        v[0] = x[1]
    return np.sum(y)


def slice_in_loop(x):
    y = np.zeros(4)
    for i in range(2):
        y[i:i + 2] = x[i:i + 2]
    return np.sum(y)


def writes_carried(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = x[i]
        y = y * 2.0
    return np.sum(y)


def stale_view(x):
    y = np.zeros(3)
    v = y[0:2]
    y[0] = x[0] * 2.0
    return np.sum(v)


def through_reshape(x):
    q = x.reshape(2, 2)
    q[0, 0] = 3.0
    return np.sum(x * x)


def through_contiguous(x):           # x itself when contiguous: jacfwd copied its tangent
    q = np.ascontiguousarray(x)
    q[0] = 3.0
    return np.sum(x * x)


@pytest.mark.parametrize("fn,words", [
    (view_written_in_if, "inside an `if` into a view taken outside it"),
    (slice_in_loop, "slice assignment"),
    (writes_carried, "rebinds"),
    (stale_view, "view 'v' after its array was written"),
    (through_reshape, "write through a reshape: it is a view or a copy"),
    (through_contiguous, "write through np.ascontiguousarray: it is a view or a copy"),
], ids=lambda v: getattr(v, "__name__", ""))
def test_unsupported_writes_are_refused_clearly(fn, words):
    with pytest.raises(DifferentiationError, match=words) as info:
        grad(fn)(np.array([0.5, 0.7, 0.9, 1.1]))
    assert "test_grad_array_writes.py" in str(info.value)
    if fn is through_contiguous:
        with pytest.raises(DifferentiationError, match=words):
            jacfwd(fn)(np.array([0.5, 0.7, 0.9, 1.1]))


def rebinds_a_fresh_array(x):        # writes into the array the body makes: supported
    y = np.zeros(3)
    for i in range(3):
        y = y * 2.0
        y[i] = x[i]
    return np.sum(y)


def view_after_write(x):             # a view taken after the write: supported
    y = np.zeros(3)
    y[0] = x[0] * 2.0
    v = y[0:2]
    return np.sum(v * x[1])


@pytest.mark.parametrize("fn", [rebinds_a_fresh_array, view_after_write])
def test_supported_neighbours_of_refused_cases(fn):
    x = np.array([0.5, 0.7, 0.9])
    np.testing.assert_allclose(grad(fn)(x.copy()), numeric_grad(fn, (x,), 0), rtol=1e-6)
