"""The array corpus: NumPy functions that @jit must compile with NumPy's semantics.

test_frontend_arrays and test_array_creation compile them. Each entry of CASES
is (function, argument factory). A factory returns a fresh tuple of arguments,
so functions that write into their arguments can be compared. Results are
compared with NumPy's own (values, dtype, shape). The functions match the
issues' acceptance corpus; they live here so that the tests need nothing
outside the repository.
"""
import numpy as np

RNG_SEED = 1234


def _rng():
    return np.random.default_rng(RNG_SEED)


def fused_expression(x, y):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x)


def broadcast_mix(a, b, s):
    return a * b + s - b / 2.0


def column_broadcast(a, c):
    return a - c.reshape((c.shape[0], 1))


def reductions(x):
    return np.sum(x), np.mean(x), np.max(x), np.min(x), x.sum()


def axis_reductions(x):
    return np.sum(x, axis=0), x.sum(axis=1), np.max(x, axis=1), np.mean(x, axis=0), np.min(x, axis=-1)


def keepdims_softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def matmuls(a, b, v):
    return a @ b, np.dot(a, v), a.T @ a, np.dot(v, v)


def mlp_forward(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def where_and_compare(x):
    leaky = np.where(x > 0.0, x, 0.1 * x)
    return leaky, x > 0.5, np.sum(x > 0.0), np.abs(x), np.sqrt(np.abs(x))


def prefix_sum(x):
    out = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc
    return out


def loop_2d(a, b):
    n, m = a.shape
    out = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            out[i, j] = a[i, j] * 2.0 + b[j]
    return out


def running_max_index(x):
    best = x[0]
    k = 0
    for i in range(1, len(x)):
        if x[i] > best:
            best = x[i]
            k = i
    return k, best


def creation(n, x):
    return np.zeros(n), np.ones((2, n)), np.zeros_like(x), np.full((2, 3), 7.0), np.arange(n)


def attributes(a):
    return a.shape[0] * 10 + a.shape[1], a.size, a.ndim, len(a)


def slicing(x, a):
    return x[1:-1] - x[:-2], x[::2], a[1:, :2], a[:, 1], a[-1]


def transpose_reshape(a):
    return a.T, a.reshape((2, -1)), a.T.reshape((a.size,)), np.transpose(a) * 2.0


def float32_stays_float32(x):
    return x * 2.0 + 1.0, np.sum(x)


def int_arrays(k):
    return k * 3 + 1, np.sum(k), k // 2, k % 3


def scale_in_place(x, s):
    for i in range(x.shape[0]):
        x[i] = x[i] * s


def axpy_in_place(a, x, y):
    y[:] = a * x + y
    return y


def strided_input(a):
    return np.sum(a * a, axis=1)


def jacobi_steps(A, b, steps):
    x = np.zeros_like(b)
    d = np.diag(A)
    for k in range(steps):
        x = x + (b - A @ x) / d
    return x


def _arr(*shape):
    return _rng().standard_normal(shape)


CASES = [
    (fused_expression, lambda: (_arr(1000), _arr(1000))),
    (broadcast_mix, lambda: (_arr(3, 4), _arr(4), 2.5)),
    (column_broadcast, lambda: (_arr(3, 4), _arr(3))),
    (reductions, lambda: (_arr(5, 6),)),
    (axis_reductions, lambda: (_arr(5, 6),)),
    (keepdims_softmax, lambda: (_arr(4, 7),)),
    (matmuls, lambda: (_arr(6, 6), _arr(6, 3), _arr(6))),
    (mlp_forward, lambda: (_arr(8, 5), _arr(5, 16), _arr(16), _arr(16, 3), _arr(3))),
    (where_and_compare, lambda: (_arr(20),)),
    (prefix_sum, lambda: (_arr(50),)),
    (loop_2d, lambda: (_arr(4, 5), _arr(5))),
    (running_max_index, lambda: (_arr(40),)),
    (creation, lambda: (4, _arr(3, 2))),
    (attributes, lambda: (_arr(3, 7),)),
    (slicing, lambda: (_arr(10), _arr(4, 5))),
    (transpose_reshape, lambda: (_arr(4, 6),)),
    (float32_stays_float32, lambda: (_arr(100).astype(np.float32),)),
    (int_arrays, lambda: (np.arange(-6, 18, dtype=np.int64).reshape(4, 6),)),
    (axpy_in_place, lambda: (1.5, _arr(9), _arr(9))),
    (strided_input, lambda: (_arr(6, 8)[:, ::2],)),
    (jacobi_steps, lambda: (_arr(5, 5) + 10.0 * np.eye(5), _arr(5), 25)),
]
