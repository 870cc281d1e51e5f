"""Gradients of array programs (reverse mode): every rule against central finite differences,
compiled and interpreted; broadcasting in every direction; f32 and f64; element reads, views,
reductions and matrix products; loops over elements (adjoints accumulated in place), loops
carrying arrays (tapes of arrays), no leaks (forward mode: test_forward_arrays.py)."""
import gc
import sys
import time
import tracemalloc

import numpy as np
import pytest
from array_checks import assert_no_leaks
from array_checks import central_difference as numeric_grad

from astjit import DifferentiationError, grad, jit, value_and_grad
from astjit.api import interpret_call

# ---- the corpus -------------------------------------------------------------------------------

def ew_unary(x):
    return np.sum(np.exp(x) * np.sin(x) + np.tanh(x) - np.cos(x) / 3.0)


def ew_sqrt_log(x):
    return np.sum(np.sqrt(x) + np.log(x) * x)


def ew_abs_div(x, y):
    return np.sum(np.abs(x) / (y * y + 1.0) - x / y)


def relu_where(x, w):
    h = np.maximum(x * w, 0.0)
    return np.sum(np.where(x > 0.1, h, -x) + np.minimum(x, 0.2 * w))


def pow_const(y, t):
    return np.mean((y - t) ** 2) + np.sum(y ** 3.0)


def pow_array_exponent(x, p):
    return np.sum(x ** p)


def bcast_row(a, v):                 # (m, n) with (n,)
    return np.sum(np.tanh(a * v + v))


def bcast_column_row(c, r):          # (m, 1) with (1, n): both stretched
    return np.sum((c - r) ** 2 * c)


def bcast_scalar(x, s):              # a scalar with an array, both ways
    return np.sum(s * x + x / s - s)


def bcast_stretched_same_ndim(a, b):  # (3, 4) with (1, 4) and (3, 1)
    return np.sum(a * b + b)


def mixed_dtypes(x32, x64, s):       # f32 array with f64 array and an f64 scalar
    return np.sum(x32 * x64) + np.sum(x32 * s)


def reductions(x):
    return (np.sum(np.sum(x, axis=0) ** 2) + np.sum(np.mean(x, axis=1, keepdims=True) * x)
            + np.sum(np.max(x, axis=1) * 2.0) + np.min(x) + np.mean(x ** 2))


def reductions_negative_axes(x):
    return np.sum(np.sum(x * x, axis=(-1, 0)) ** 2)


def matmul_all(a, b, u, v):           # (3,4)@(4,2), (3,4)@(4,), (3,)@(3,4), (4,)@(4,)
    return (np.sum((a @ b) ** 2) + np.sum(np.tanh(a @ u)) + np.sum((v @ a) ** 2)
            + (u @ u) * 0.5)


def element_reads(x):
    return x[2] * x[3] + np.sum(x[1:4] ** 2) + x[-1]


def rows_and_slices(a):
    return np.sum(a[1] * a[0]) + np.sum(a[:, 1:3] ** 2) + np.sum(a[::2, ::-1] * 0.5) + a[2, 0]


def transpose_reshape(a):
    return np.sum(a.T * np.arange(3.0)) + np.sum(a.reshape(2, 6) ** 2 * 0.25)


def fill_value(w, x):
    return np.sum(np.full(3, w) * x + np.full_like(x, w * w))


def loop_over_elements(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * w
    return s


def loop_reads_two_arrays(x, y):
    s = 0.0
    for i in range(1, x.shape[0]):
        s += np.sin(x[i] - x[i - 1]) * y[i]
    return s


def gradient_descent(a, b, steps):
    x = np.zeros_like(b)
    for k in range(steps):
        x = x - 0.1 * (a @ x - b)
    return np.sum(x * x)


def until_small(x):
    n = 0
    while np.sum(x * x) > 0.01:
        x = 0.5 * x + 0.01 * np.sin(x)
        n += 1
    return np.sum(x) * n


def loop_carries_two_arrays(x, y, n):
    for k in range(n):
        x, y = np.tanh(y) + x * 0.5, x * y
    return np.sum(x + y)


def if_with_arrays(x, w):
    if w > 0.0:
        y = x * w
    else:
        y = np.exp(x)
    return np.sum(y * y)


def array_param_unused(x, w):
    return w * 2.0


def log_softmax_rows(z):
    s = z - np.max(z, axis=1, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))


def mlp_xent(x, w1, b1, w2, b2, onehot):
    h = np.maximum(x @ w1 + b1, 0.0)
    return -np.mean(np.sum(log_softmax_rows(h @ w2 + b2) * onehot, axis=1))


def sigmoid_softmax(x):
    e = np.exp(x - np.max(x))
    return np.sum(1.0 / (1.0 + np.exp(-x)) * (e / np.sum(e)))


rng = np.random.default_rng(11)
A = rng.standard_normal((4, 4)) * 0.2 + np.eye(4)

CASES = [
    (ew_unary, lambda: (rng.standard_normal(5),), (0,)),
    (ew_sqrt_log, lambda: (rng.uniform(0.5, 2.0, (2, 3)),), (0,)),
    (ew_abs_div, lambda: (rng.standard_normal(4), rng.standard_normal(4) + 2.0), (0, 1)),
    (relu_where, lambda: (rng.standard_normal(6), 1.3), (0, 1)),
    (pow_const, lambda: (rng.standard_normal((2, 3)), rng.standard_normal((2, 3))), (0, 1)),
    (pow_array_exponent, lambda: (rng.uniform(0.5, 2.0, 4), rng.uniform(0.5, 2.0, 4)), (0, 1)),
    (bcast_row, lambda: (rng.standard_normal((3, 4)), rng.standard_normal(4)), (0, 1)),
    (bcast_column_row, lambda: (rng.standard_normal((3, 1)), rng.standard_normal((1, 4))), (0, 1)),
    (bcast_scalar, lambda: (rng.standard_normal((2, 3)), 1.7), (0, 1)),
    (bcast_stretched_same_ndim, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((1, 4))),
     (0, 1)),
    (bcast_stretched_same_ndim, lambda: (rng.standard_normal((1, 4)), rng.standard_normal((3, 1))),
     (0, 1)),
    (reductions, lambda: (rng.permutation(12).reshape(3, 4) * 0.31,), (0,)),
    (reductions_negative_axes, lambda: (rng.standard_normal((2, 3, 4)),), (0,)),
    (matmul_all, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)),
                          rng.standard_normal(4), rng.standard_normal(3)), (0, 1, 2, 3)),
    (element_reads, lambda: (rng.standard_normal(6),), (0,)),
    (rows_and_slices, lambda: (rng.standard_normal((3, 4)),), (0,)),
    (transpose_reshape, lambda: (rng.standard_normal((3, 4)),), (0,)),
    (fill_value, lambda: (0.7, rng.standard_normal(3)), (0, 1)),
    (loop_over_elements, lambda: (rng.standard_normal(8), 1.7), (0, 1)),
    (loop_reads_two_arrays, lambda: (rng.standard_normal(7), rng.standard_normal(7)), (0, 1)),
    (gradient_descent, lambda: (A.copy(), rng.standard_normal(4), 12), (0, 1)),
    (until_small, lambda: (rng.standard_normal(5),), (0,)),
    (loop_carries_two_arrays, lambda: (rng.standard_normal(3) * 0.5, rng.standard_normal(3) * 0.5,
                                       4), (0, 1)),
    (if_with_arrays, lambda: (rng.standard_normal(4), 0.8), (0, 1)),
    (if_with_arrays, lambda: (rng.standard_normal(4), -0.8), (0, 1)),
    (array_param_unused, lambda: (rng.standard_normal(3), 0.5), (0, 1)),
    (mlp_xent, lambda: (rng.standard_normal((6, 5)), rng.standard_normal((5, 7)) * 0.5,
                        rng.standard_normal(7) * 0.1, rng.standard_normal((7, 3)) * 0.5,
                        rng.standard_normal(3) * 0.1, np.eye(3)[[0, 1, 2, 0, 1, 2]]),
     (0, 1, 2, 3, 4)),
    (sigmoid_softmax, lambda: (rng.standard_normal(7),), (0,)),
]
IDS = [f"{fn.__name__}{k}" for k, (fn, _, _) in enumerate(CASES)]


def check(fn, args, argnums, got, rtol=1e-5, atol=1e-6):
    assert isinstance(got, tuple) and len(got) == len(argnums)
    for i, g in zip(argnums, got):
        ref = numeric_grad(fn, args, i)
        if isinstance(args[i], np.ndarray):
            assert isinstance(g, np.ndarray), (fn.__name__, i, type(g))
            assert g.shape == args[i].shape and g.dtype == args[i].dtype, (fn.__name__, i)
        else:
            assert isinstance(g, float), (fn.__name__, i, type(g))
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, err_msg=f"{fn.__name__} arg {i}")


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_compiled_gradient_matches_finite_differences(fn, make, argnums):
    args = make()
    check(fn, args, argnums, grad(fn, argnums=argnums)(*args))


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_interpreted_gradient_matches_compiled(fn, make, argnums):
    args = make()
    got = interpret_call(grad(fn, argnums=argnums), args, {})
    check(fn, args, argnums, got)
    compiled = grad(fn, argnums=argnums)(*args)
    for a, b in zip(got, compiled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_arguments_are_not_written():
    x = rng.standard_normal(6)
    before = x.copy()
    grad(element_reads)(x)
    grad(until_small)(x)
    np.testing.assert_array_equal(x, before)


# ---- dtypes -------------------------------------------------------------------------------------

def sum_sq(x):
    return np.sum(x * x)


def test_float32_gradients_stay_float32():
    x = np.linspace(-1, 1, 10, dtype=np.float32)
    g = grad(sum_sq)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)


def test_f64_scalar_mixed_with_f32_array_gets_an_f64_adjoint():
    x32 = np.linspace(-1, 1, 5, dtype=np.float32)
    x64 = np.linspace(0, 2, 5)
    g32, g64, gs = grad(mixed_dtypes, argnums=(0, 1, 2))(x32, x64, 1.5)
    assert g32.dtype == np.float32 and g64.dtype == np.float64 and isinstance(gs, float)
    np.testing.assert_allclose(g32, x64 + 1.5, rtol=1e-6)
    np.testing.assert_allclose(g64, x32, rtol=1e-6)
    np.testing.assert_allclose(gs, np.sum(x32), rtol=1e-5)


def test_float32_matmul_and_reductions():
    def loss(w, x):
        return np.mean(np.tanh(x @ w) ** 2)
    w = rng.standard_normal((3, 2)).astype(np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    g = grad(loss)(w, x)
    assert g.dtype == np.float32
    ref = numeric_grad(lambda w, x: float(loss(w.astype(np.float64), x.astype(np.float64))),
                       [w.astype(np.float64), x.astype(np.float64)], 0)
    np.testing.assert_allclose(g, ref, rtol=1e-4, atol=1e-5)


# ---- API forms ----------------------------------------------------------------------------------

def test_value_and_grad_of_arrays():
    x = rng.standard_normal(5)
    value, g = value_and_grad(sum_sq)(x)
    assert value == pytest.approx(np.sum(x * x))
    np.testing.assert_allclose(g, 2 * x)


def linear_mse(x, w, b, t):
    return np.mean((x @ w + b - t) ** 2)


def sgd(w, b, x, t, lr, steps):
    for s in range(steps):
        gw, gb = grad(linear_mse, argnums=(1, 2))(x, w, b, t)
        w = w - lr * gw
        b = b - lr * gb
    return w, b


def test_grad_inside_jit_trains():
    r = np.random.default_rng(3)
    x = r.standard_normal((32, 3))
    true_w = np.array([[1.5], [-2.0], [0.5]])
    t = x @ true_w + 0.25
    w, b = jit(sgd)(np.zeros((3, 1)), np.zeros(1), x, t, 0.1, 300)
    np.testing.assert_allclose(w, true_w, atol=1e-6)
    np.testing.assert_allclose(b, [0.25], atol=1e-6)


def test_integer_arrays_have_no_gradient():
    with pytest.raises(DifferentiationError, match="float"):
        grad(sum_sq)(np.arange(3))


# ---- costs and memory ---------------------------------------------------------------------------

def test_loop_over_elements_is_linear():
    """The adjoint of x[i] is added in place: a million iterations take milliseconds."""
    x = rng.standard_normal(1_000_000)
    g = grad(loop_over_elements, argnums=(0, 1))
    g(x[:10], 1.0)
    start = time.perf_counter()
    gx, gw = g(x, 1.5)
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(gx, 3.0 * x)
    assert elapsed < 10.0, elapsed  # a quadratic adjoint would take hours, not seconds


LEAK_CASES = [
    (bcast_row, lambda: (rng.standard_normal((3, 4)), rng.standard_normal(4)), (0, 1)),
    (rows_and_slices, lambda: (rng.standard_normal((3, 4)),), (0,)),
    (loop_over_elements, lambda: (rng.standard_normal(8), 1.7), (0, 1)),
    (gradient_descent, lambda: (A.copy(), rng.standard_normal(4), 12), (0, 1)),
    (until_small, lambda: (rng.standard_normal(5),), (0,)),
    (loop_carries_two_arrays, lambda: (rng.standard_normal(3), rng.standard_normal(3), 4), (0, 1)),
]


@pytest.mark.parametrize("fn,make,argnums", LEAK_CASES, ids=[c[0].__name__ for c in LEAK_CASES])
def test_no_leaks(fn, make, argnums):
    args = make()
    g = grad(fn, argnums=argnums)
    # the arrays' counts: a small int's (a loop count) is shared with the whole interpreter,
    # and moves with the garbage collector's work on unrelated objects
    assert_no_leaks(lambda: g(*args), [a for a in args if isinstance(a, np.ndarray)])


def fails_after_a_loop(x, k):
    while np.sum(x * x) > 0.01:
        x = 0.5 * x
    return x[k] * 2.0


def test_error_exit_after_a_taped_loop_releases_everything():
    x = rng.standard_normal(5)
    g = grad(fails_after_a_loop)
    assert g(x, 1).shape == (5,)
    count = sys.getrefcount(x)
    tracemalloc.start()
    try:
        for _ in range(50):
            with pytest.raises(IndexError):
                g(x, 7)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(500):
            with pytest.raises(IndexError):
                g(x, 7)
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 20_000, second - first
    assert sys.getrefcount(x) == count


def add_two(x, y):
    return np.sum(x + y)


def test_gradients_returned_together_are_distinct_arrays():
    x, y = np.ones(3), np.ones(3)
    gx, gy = grad(add_two, argnums=(0, 1))(x, y)
    assert not np.shares_memory(gx, gy)
    a, b = grad(sum_sq, argnums=(0, 0))(x)
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, 2 * x)
