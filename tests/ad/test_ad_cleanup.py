"""Reverse-mode gradients without wasted array temporaries: a reduction's adjoint spread over
its operand is one filled array, not zeros plus the adjoint in a loop of its own (passes/
fills.py); gradients returned together are copied only when they may share an array (a
`matmul`, a `sum_to_like` that sums are new arrays: ad/sweep.py). The optimized IR of an
MLP training step shows neither pattern; gradients still match finite differences, the
interpreter, and stay distinct from each other and from the arguments."""
import numpy as np
import pytest
from array_checks import assert_fresh_gradients, central_difference, narrowed, stages
from mlp_case import mlp_arrays, mlp_loss, mlp_step

from astjit import grad, jit, nn, value_and_grad
from astjit.api import interpret_call
from astjit.ir.kernels import kernel_of

rng = np.random.default_rng(7)
f32 = np.float32


# ---- the patterns, found in the optimized IR -------------------------------------------------

def all_nodes(graph):
    for node in graph.nodes:
        yield node
        for region in node.regions:
            yield from all_nodes(region)


def fused_nodes(module):
    return [n for g in module.graphs.values() for n in all_nodes(g) if n.op == "fused"]


def is_identity_copy(node):
    """A `fused` node that only copies its inputs: no reduction, each output a kernel
    parameter as it is."""
    kernel = node.regions[0]
    spec = kernel_of(node)
    return (spec is not None and spec.reduce is None
            and all(v in kernel.params for v in kernel.outputs))


def zero_fill_sums(module):
    """`fused` nodes adding a scalar to a zero-filled array (and nothing else)."""
    defs = {v: n for g in module.graphs.values() for n in all_nodes(g) for v in n.outputs}
    found = []
    for node in fused_nodes(module):
        kernel = node.regions[0]
        zeros = [p for p, v in zip(kernel.params, node.inputs) if v in defs
                 and defs[v].op == "array_new_like" and defs[v].attrs.get("fill") == 0]
        adds = [n for n in kernel.nodes if n.op == "add"]
        if zeros and len(kernel.nodes) == 1 and adds and set(adds[0].inputs) & set(zeros):
            other = [v for p, v in zip(kernel.params, node.inputs) if p not in zeros]
            if all(not hasattr(v.type, "ndim") for v in other):
                found.append(node)
    return found


MLP_NESTS_BEFORE = 21
"""Loop nests of the MLP step before (`fused` nodes, row groups' members included): 3 identity
copies of gradients and a mean's zeros-plus-adjoint loop more."""


def test_mlp_step_has_no_identity_copies_nor_zero_fill_sums():
    args = (*mlp_arrays(seed=7), 0.1)
    _, final = stages(mlp_step, args)
    fused = fused_nodes(final)
    assert [n for n in fused if is_identity_copy(n)] == []
    assert zero_fill_sums(final) == []
    assert all(kernel_of(n) is not None for n in fused)  # row groups are `rowwise` nodes
    assert len(fused) <= MLP_NESTS_BEFORE - 4, len(fused)


def test_mlp_step_matches_numpy_gradients():
    args = mlp_arrays(np.float64, seed=7)
    step = jit(mlp_step)(*args, 0.1)
    for k, (param, new) in enumerate(zip(args[:4], step)):
        g = central_difference(mlp_loss, args, k)
        np.testing.assert_allclose(new, param - 0.1 * g, rtol=1e-5, atol=1e-6)


def test_mlp_gradients_are_distinct_new_arrays():
    args = mlp_arrays(seed=7)
    _, grads = value_and_grad(mlp_loss, argnums=(0, 1, 2, 3))(*args)
    for i, g in enumerate(grads):
        assert g.dtype == f32 and g.shape == args[i].shape
        assert not any(np.shares_memory(g, a) for a in args)
        assert not any(np.shares_memory(g, h) for h in grads if h is not g)


# ---- gradients through the changed paths ---------------------------------------------------

def bias_relu(w, b, x):
    return np.sum(nn.relu(x @ w + b) ** 2)


def bias_twice(w, b, x):
    return np.mean(x @ w + b) + np.sum(b * b)


def keepdims_mean(x, c):
    return np.sum((x - np.mean(x, axis=1, keepdims=True)) ** 2 * c)


def scalar_weight(x, s):
    return np.mean(x * s) + np.sum(np.sum(x, axis=0) * s)


def log_softmax_weighted(x, w):
    return np.sum(nn.log_softmax(x, axis=1) * w)


def vector_matmul(v, m):
    return np.sum((v @ m) * (m.T @ v)) + np.sum(m @ (v[:3] * 2.0))


def means(x):
    return np.mean(x) * np.mean(x, axis=0)[1] + np.sum(np.mean(x, axis=1))


CASES = [
    (bias_relu, lambda: (rng.standard_normal((4, 3)), rng.standard_normal(3),
                         rng.standard_normal((5, 4))), (0, 1)),
    (bias_twice, lambda: (rng.standard_normal((4, 3)), rng.standard_normal(3),
                          rng.standard_normal((5, 4))), (1, 0, 1)),
    (keepdims_mean, lambda: (rng.standard_normal((3, 4)), rng.standard_normal(4)), (0, 1)),
    (scalar_weight, lambda: (rng.standard_normal((3, 4)), 0.7), (0, 1)),
    (log_softmax_weighted, lambda: (rng.standard_normal((4, 5)), rng.standard_normal((4, 5))),
     (0, 1)),
    (vector_matmul, lambda: (rng.standard_normal(4), rng.standard_normal((4, 3))), (0, 1)),
    (means, lambda: (rng.standard_normal((3, 4)),), (0,)),
]
IDS = [fn.__name__ for fn, _, _ in CASES]


def check(fn, args, argnums, got, rtol=1e-5, atol=1e-6):
    for i, g in zip(argnums, got):
        ref = central_difference(fn, args, i)
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, err_msg=f"{fn.__name__} {i}")


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_gradients_match_finite_differences_and_interpreter(fn, make, argnums):
    args = make()
    compiled = grad(fn, argnums=argnums)(*args)
    check(fn, args, argnums, compiled)
    interpreted = interpret_call(grad(fn, argnums=argnums), args, {})
    for a, b in zip(interpreted, compiled):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert_fresh_gradients(compiled, args)


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_float32_gradients(fn, make, argnums):
    args = make()
    narrow = narrowed(args, f32)
    got = grad(fn, argnums=argnums)(*narrow)
    for i, g in zip(argnums, got):
        if isinstance(args[i], np.ndarray):
            assert g.dtype == f32 and g.shape == args[i].shape
    wide = narrowed(narrow, np.float64)
    check(fn, wide, argnums, got, rtol=2e-4, atol=2e-4)


# ---- the fills pass on user code -------------------------------------------------------------

def zeros_plus(x, s):
    return np.zeros_like(x) + s


def ones_plus(x, s):
    return s + np.ones_like(x)


def written_then_plus(x, s):
    z = np.zeros_like(x)
    z[0] = 5.0
    return z + s


def returned_and_plus(x, s):
    z = np.zeros_like(x)
    y = z + s
    y[1] = 3.0
    return y, z


@pytest.mark.parametrize("fn", [zeros_plus, ones_plus, written_then_plus, returned_and_plus])
@pytest.mark.parametrize("dtype", [np.float64, f32])
def test_filled_plus_scalar_matches_numpy(fn, dtype):
    x = rng.standard_normal((3, 2)).astype(dtype)
    s = dtype(-0.0) if fn is zeros_plus else dtype(1.5)
    got, want = jit(fn)(x, s), fn(x, s)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple)
                    else [want]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_filled_plus_scalar_is_one_filled_array():
    _, final = stages(zeros_plus, (np.ones((3, 2)), 1.5))
    assert fused_nodes(final) == []
    _, final = stages(written_then_plus, (np.ones((3, 2)), 1.5))
    assert len(fused_nodes(final)) == 1  # written before the sum: it reads the array


def spread_times(x, b):              # a sum's gradient: zeros + adjoint, read with x's shape
    return (np.zeros_like(x) + b) * np.tanh(x)


def ones_spread_times(x, b):
    return np.cos(x) - (b + np.ones_like(x))


def filled_plus_filled(x, b):        # the other operand filled too: still read
    return (np.zeros_like(x) + np.ones_like(x)) * np.tanh(x) + b


def two_spreads(x, b):               # two sums, each the other's reader's full operand
    z, rows = np.zeros_like(x), np.sum(x, axis=1, keepdims=True)
    return (z + rows) * (z + rows * 2.0) + b


def spread_times_itself(x, b):       # the reader's other operand is b's shape: stays full
    return (np.zeros_like(x) + b) * b


def spread_returned(x, b):
    y = np.zeros_like(x) + b
    return y, y * x


def spread_summed(x, b):             # a reduction reads it: stays full
    return np.sum(np.zeros_like(x) + b, axis=1) * 2.0


def spread_apart(x, b, t):           # t of x's shape at run time only
    return (np.zeros_like(x) + b) * t


SPREADS = [(spread_times, True), (ones_spread_times, True), (filled_plus_filled, None),
           (two_spreads, None), (spread_times_itself, False), (spread_returned, False),
           (spread_summed, False), (spread_apart, False)]


@pytest.mark.parametrize("fn,folded", SPREADS, ids=[f.__name__ for f, _ in SPREADS])
@pytest.mark.parametrize("dtype", [np.float64, f32])
def test_filled_plus_broadcast_matches_numpy(fn, folded, dtype):
    """`full_like(x, c) + b` read only by elementwise ops with an operand of x's shape is
    `c + b` of b's shape (no filled array): the same elements, signs of zero included."""
    x = rng.standard_normal((3, 4)).astype(dtype)
    b = np.array([[-0.0], [1.5], [0.0]], dtype)
    args = (x, b, np.tanh(x)) if fn is spread_apart else (x, b)
    got, want = jit(fn)(*args), fn(*args)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple)
                    else [want]):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == f32 else 1e-15)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    _, final = stages(fn, args)
    filled = [n for g in final.graphs.values() for n in all_nodes(g)
              if n.op == "array_new_like" and n.attrs.get("fill") in (0, 1)]
    if folded is not None:
        assert (filled == []) == folded


def test_gradient_spread_over_a_lookup_reads_the_adjoint_as_it_is():
    """vmap(grad) of sum(tanh(E[idx])): the sum's adjoint, one number per example, goes into
    tanh's derivative kernel with stride 0, no zeroed (1000, 3, 4) array; per-example
    gradients match finite differences."""
    from astjit import vmap

    def loss(E, idx, y):
        return (np.sum(np.tanh(E[idx])) - y) ** 2

    E, idx, y = rng.standard_normal((6, 4)), rng.integers(-6, 6, (5, 3)), rng.standard_normal(5)
    per_example = jit(vmap(grad(loss), in_axes=(None, 0, 0)))
    assert "fill=0" not in per_example.ir(E, idx, y, stage="optimized").split("gather_adjoint")[0]
    got = per_example(E, idx, y)
    for k in range(5):
        np.testing.assert_allclose(got[k], central_difference(loss, (E, idx[k], y[k]), 0),
                                   rtol=1e-6, atol=1e-7)


def broadcast_zeros(w, n):           # a filled array repeated and copied: np.zeros((n, k))
    return np.broadcast_to(np.zeros_like(w), (w.shape[0] + n * 0, w.shape[0])).copy()


def broadcast_ones_written(w, n):    # the copy written into: still a new array of its own
    y = np.broadcast_to(np.ones_like(w), (w.shape[0], w.shape[0])).copy()
    y[0] = w
    return y


def broadcast_to_unknown(w, n):      # a length of unknown sign: the broadcast may raise
    return np.broadcast_to(np.zeros_like(w), (n, w.shape[0])).copy()


@pytest.mark.parametrize("fn,folded", [(broadcast_zeros, True), (broadcast_ones_written, True),
                                       (broadcast_to_unknown, False)])
def test_a_filled_array_broadcast_and_copied_is_one_new_array(fn, folded):
    w = rng.standard_normal(3)
    for n in (2, 0):
        got, want = jit(fn)(w, n), fn(w, n)
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        jit(broadcast_to_unknown)(w, -1)
    _, final = stages(fn, (w, 2))
    ops = [n.op for g in final.graphs.values() for n in all_nodes(g)]
    assert ("array_copy" not in ops and "array_broadcast_to" not in ops) == folded


def test_a_hessians_accumulator_is_one_new_array():
    """jacfwd of a gradient copies the gradient's zeroed accumulator once per column: a zeroed
    (21, 21) array, not zeros(21) broadcast and copied; the hessian matches the gradient's
    finite differences."""
    from astjit import hessian

    def loss(w, x):
        return np.sum(np.tanh(x @ w[:6].reshape((3, 2)) + w[6:8]) * w[8])

    w, x = rng.standard_normal(9), rng.standard_normal((4, 3))
    h = jit(hessian(loss))
    text = h.ir(w, x, stage="optimized")
    assert "array_copy" not in text and "array_new %" in text
    g = jit(grad(loss))
    for i in range(9):
        step = np.zeros(9)
        step[i] = 1e-6
        np.testing.assert_allclose(h(w, x)[i], (g(w + step, x) - g(w - step, x)) / 2e-6,
                                   rtol=1e-5, atol=1e-7)
