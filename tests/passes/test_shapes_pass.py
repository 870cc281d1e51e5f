"""Symbolic shapes (ir/symbolic_shapes.py, passes/shapes.py): which axes are provably equal,
and the `sum_to_like` nodes of reverse-mode code that they turn into the identity or a
fixed `reduce`.

The analysis is checked on small typed graphs, traps first: two arguments of one type may
still differ in shape at run time (one may have length 1 and stretch). Gradients through
the rewrites match finite differences, the interpreter and the same program compiled
without the pass, for shapes that broadcast and shapes that do not, under one compiled
signature; the MLP training step keeps only the `sum_to_like` nodes whose outcome depends
on the shapes of its arguments."""
import copy

import numpy as np
import pytest
from array_checks import assert_fresh_gradients, central_difference, narrowed, stages
from mlp_case import mlp_arrays, mlp_step

from astjit import autodiff, jit, nn, value_and_grad
from astjit.api import interpret_call
from astjit.frontend import lower_function
from astjit.ir.infer import infer_types
from astjit.ir.passes import pipeline
from astjit.ir.passes.pipeline import optimize
from astjit.ir.passes.shapes import summed_axes
from astjit.ir.shape_algebra import ONE
from astjit.ir.symbolic_shapes import symbolic_shapes
from astjit.ir.types import python_type_of

rng = np.random.default_rng(11)
f32 = np.float32


def typed_graph(fn, args):
    """The entry graph of `fn` for these arguments, optimized but not fused."""
    typed = infer_types(lower_function(fn), [python_type_of(a) for a in args])
    return optimize(copy.deepcopy(typed), fuse=False).entry_graph


def shapes_of(fn, *args):
    """(the parameters' Shapes, the Shapes of the values `fn` returns as a tuple)."""
    graph = typed_graph(fn, args)
    shapes = symbolic_shapes(graph)
    (result,) = [n for n in graph.nodes if n.outputs[0] is graph.outputs[0]]
    return [shapes.get(p) for p in graph.params], [shapes[v] for v in result.inputs]


def all_nodes(graph):
    for node in graph.nodes:
        yield node
        for region in node.regions:
            yield from all_nodes(region)


def count(module, op):
    return sum(1 for g in module.graphs.values() for n in all_nodes(g) if n.op == op)


# ---- the analysis --------------------------------------------------------------------------

def plus(a, b):
    return a + b, a * 2.0 + np.exp(a), a


def test_arguments_of_one_type_are_not_one_shape():
    (a, b), (total, own, _) = shapes_of(plus, np.ones(3), np.ones(3))
    assert a != b  # b may have length 1 at run time, or 3
    assert total != a and total != b  # so a + b may be longer than either
    assert own == a  # an array with numbers keeps its shape


def column_times(x, c):
    return x * c, c


def test_a_runtime_column_is_not_known_to_be_one():
    (x, c), (product, _) = shapes_of(column_times, np.ones((3, 4)), np.ones((3, 1)))
    assert c[1] != ONE  # only its type is known: 2-d
    assert product[0] != x[0] and product[1] != x[1]
    assert product != c


def centered(x):
    m = np.max(x, axis=1, keepdims=True)
    return m, x - m, np.sum(x, axis=0), np.mean(x, keepdims=True), np.sum(x * x, axis=1)


def test_keepdims_reductions_have_constant_ones():
    (x,), (m, shifted, columns, everything, rows) = shapes_of(centered, np.ones((3, 4)))
    assert m == (x[0], ONE)
    assert shifted == x  # a keepdims result stretches along its ones only
    assert columns == (x[1],) and rows == (x[0],)
    assert everything == (ONE, ONE)


def products(a, b, v):
    return a.T, a @ b, b @ v, v @ b.T, a.T @ a


def test_matmul_and_transpose():
    (a, b, v), (at, ab, bv, vbt, ata) = shapes_of(products, np.ones((3, 4)), np.ones((4, 5)),
                                                  np.ones(5))
    assert at == (a[1], a[0])  # made before a @ b checks a's columns against b's rows
    assert ab == (a[0], b[1])
    assert bv == (b[0],)  # after a @ b: a's columns are b's rows, named b[0]
    assert vbt == (b[0],)
    assert ata == (b[0], b[0])


def checked_lengths(w, x):
    W = w[:12].reshape(3, 4)  # w[:12] has 12 elements from here on
    h = x @ W  # x has 3 columns from here on
    return w[:12] * 1.0, x.T, h, w[12:16], np.eye(w.size)[:, 12:16]


def test_checks_teach_the_lengths_after_them():
    (w, x), (first, xt, h, b, eye_columns) = shapes_of(checked_lengths, np.ones(21),
                                                      np.ones((8, 3)))
    assert first == (frozenset({("const", 12)}),)
    assert xt == (frozenset({("const", 3)}), x[0])
    assert h == (x[0], frozenset({("const", 4)}))
    assert eye_columns[1] == b[0]  # the same literal slice of one length


def reshapes(v, b, y):
    return (v.reshape(b.shape[0], 1), v.reshape(-1, 1), np.zeros((2, y.shape[0], y.shape[1])) + y,
            y[0], y[:, 1], y[1:])


def test_reshape_and_creation_take_named_dims():
    (v, b, y), (column, inferred, stacked, row, col, rest) = shapes_of(
        reshapes, np.ones(3), np.ones(3), np.ones((3, 4)))
    assert column == (b[0], ONE)  # the reshape checked the sizes
    assert inferred[0] not in (v[0], b[0]) and inferred[1] == ONE  # -1: computed, unknown
    assert stacked[1:] == y and stacked[0] not in (ONE, y[0], y[1])
    assert row == (y[1],) and col == (y[0],)
    assert rest[1] == y[1] and rest[0] != y[0]


# ---- the rewrites on reverse-mode code ------------------------------------------------------

def same_shape(x, y):
    return np.sum(x * np.exp(x) * np.tanh(y))


def with_column(x, c):
    return np.sum(np.sin(x * c) * x)


def centered_squares(x):
    return np.sum((x - np.mean(x, axis=1, keepdims=True)) ** 2 * x)


def stacked(y):
    z = np.zeros((2, y.shape[0], y.shape[1])) + y
    return np.sum(np.cos(z * np.mean(y, axis=1, keepdims=True)))


def scaled(x, s):
    return np.sum(np.tanh(x * s))


def biased(x, w, b):
    return np.sum(nn.relu(x @ w + b) ** 2) + np.sum(np.tanh(w))


def d_same_shape(x, y):
    return value_and_grad(same_shape, argnums=(0, 1))(x, y)


def d_with_column(x, c):
    return value_and_grad(with_column, argnums=(0, 1))(x, c)


def d_centered_squares(x):
    return value_and_grad(centered_squares)(x)


def d_stacked(y):
    return value_and_grad(stacked)(y)


def d_scaled(x, s):
    return value_and_grad(scaled, argnums=(0, 1))(x, s)


def d_biased(x, w, b):
    return value_and_grad(biased, argnums=(1, 2))(x, w, b)


def without_pass(monkeypatch):
    monkeypatch.setattr(pipeline, "FINAL", [p for p in pipeline.FINAL if p[0] != "shapes"])


@pytest.mark.parametrize("derived,args,before,after", [
    (d_same_shape, (np.ones((3, 4)), np.ones((3, 4))), 4, 2),  # onto x: gone; y may stretch
    (d_with_column, (np.ones((3, 4)), np.ones((3, 1))), 4, 3),  # onto sin(x * c): gone
    (d_centered_squares, (np.ones((3, 4)),), 4, 0),  # a row sum onto the mean
    (d_stacked, (np.ones((3, 4)),), 3, 0),  # a sum over the stack, and a reshaped one
    (d_scaled, (np.ones((3, 4)), 0.5), 1, 0),  # onto the scalar: a sum of everything
    (d_biased, (np.ones((5, 3)), np.ones((3, 4)), np.ones(4)), 2, 2),  # b may be (1,)
], ids=["same_shape", "with_column", "centered_squares", "stacked", "scaled", "biased"])
def test_sum_to_like_left_only_where_run_time_decides(derived, args, before, after, monkeypatch):
    _, final = stages(derived, args)
    with monkeypatch.context() as patch:
        without_pass(patch)
        _, unresolved = stages(derived, args)
    assert (count(unresolved, "sum_to_like"), count(final, "sum_to_like")) == (before, after)


# ---- gradients through the rewrites ---------------------------------------------------------

def bias_and_scale(x, w, b, s):
    return np.sum(np.tanh(x @ w + b) * s) + np.sum(b * b)


def row_offsets(x, r):
    return np.sum((x - np.max(x, axis=1, keepdims=True) + r) ** 2)


def normalized(x):
    return np.sum(x / np.sum(x * x, axis=1, keepdims=True) - np.mean(x, axis=0, keepdims=True))


CASES = [
    (same_shape, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((3, 4))), (0, 1)),
    (same_shape, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((1, 4))), (0, 1)),
    (with_column, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((3, 1))), (0, 1)),
    (with_column, lambda: (rng.standard_normal((3, 1)), rng.standard_normal((3, 4))), (0, 1)),
    (with_column, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((3, 4))), (0, 1)),
    (centered_squares, lambda: (rng.standard_normal((3, 4)),), (0,)),
    (centered_squares, lambda: (rng.standard_normal((3, 1)),), (0,)),
    (stacked, lambda: (rng.standard_normal((3, 4)),), (0,)),
    (stacked, lambda: (rng.standard_normal((1, 4)),), (0,)),
    (scaled, lambda: (rng.standard_normal((3, 4)), 0.7), (0, 1)),
    (biased, lambda: (rng.standard_normal((5, 3)), rng.standard_normal((3, 4)),
                      rng.standard_normal(4)), (1, 2)),
    (biased, lambda: (rng.standard_normal((5, 3)), rng.standard_normal((3, 4)),
                      rng.standard_normal(1)), (1, 2)),
    (bias_and_scale, lambda: (rng.standard_normal((5, 3)), rng.standard_normal((3, 4)),
                              rng.standard_normal(4), 1.3), (1, 2, 3)),
    (row_offsets, lambda: (rng.standard_normal((3, 4)), rng.standard_normal((3, 1))), (0, 1)),
    (row_offsets, lambda: (rng.standard_normal((3, 4)), rng.standard_normal(4)), (0, 1)),
    (normalized, lambda: (rng.standard_normal((3, 4)) + 2.0,), (0,)),
]
IDS = [f"{fn.__name__}-" + "x".join(str(np.shape(a)) for a in make()) for fn, make, _ in CASES]


def _gradients(fn, args, argnums):
    """The gradients from a new derived function (`value_and_grad` caches them), compiled
    with the pipeline as it is now."""
    return autodiff._derive.__wrapped__(fn, "value_and_grad", argnums)(*args)[1]


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_gradients_match_differences_interpreter_and_unresolved(fn, make, argnums, monkeypatch):
    args = make()
    got = _gradients(fn, args, argnums)
    for i, g in zip(argnums, got):
        assert np.shape(g) == np.shape(args[i])
        np.testing.assert_allclose(g, central_difference(fn, args, i), rtol=1e-5, atol=1e-6)
    interpreted = interpret_call(value_and_grad(fn, argnums=argnums), args, {})[1]
    with monkeypatch.context() as patch:
        without_pass(patch)
        unresolved = _gradients(fn, args, argnums)
    for a, b, c in zip(got, interpreted, unresolved):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    assert_fresh_gradients(got, args)


@pytest.mark.parametrize("fn,make,argnums", CASES, ids=IDS)
def test_float32_gradients(fn, make, argnums):
    wide = make()
    narrow = narrowed(wide, f32)
    got = _gradients(fn, narrow, argnums)
    for i, g in zip(argnums, got):
        if isinstance(wide[i], np.ndarray):
            assert g.dtype == f32 and g.shape == wide[i].shape
        wide_args = narrowed(narrow, np.float64)
        np.testing.assert_allclose(g, central_difference(fn, wide_args, i), rtol=2e-4, atol=2e-4)


def test_one_signature_serves_every_broadcast():
    """The rewrites hold for the signature, not for the first call's shapes."""
    derived = value_and_grad(with_column, argnums=(0, 1))
    for shapes in [((3, 4), (3, 4)), ((3, 4), (3, 1)), ((3, 1), (3, 4)), ((1, 4), (3, 1))]:
        args = tuple(rng.standard_normal(s) for s in shapes)
        got = derived(*args)[1]
        for i in (0, 1):
            assert got[i].shape == args[i].shape
            np.testing.assert_allclose(got[i], central_difference(with_column, args, i),
                                       rtol=1e-5, atol=1e-6)


# ---- the MLP training step -------------------------------------------------------------------

MLP_SUMS_LEFT = 5
"""Of the step's 8 `sum_to_like` nodes, the ones run-time shapes decide: onto the product with
`onehot` (either may stretch), onto `x @ w1` and `h @ w2` (a bias may be longer), onto `b1`
and `b2` (a bias may have length 1). Two were the identity, one a row sum."""


def test_mlp_step_keeps_only_the_sums_shapes_decide(monkeypatch):
    _, final = stages(mlp_step, (*mlp_arrays(seed=11), 0.1))
    assert count(final, "sum_to_like") == MLP_SUMS_LEFT
    with monkeypatch.context() as patch:  # before fusion, where the analysis sees every op
        patch.setattr(pipeline, "FINAL", [p for p in pipeline.FINAL if p[0] == "shapes"])
        _, unfused = stages(mlp_step, (*mlp_arrays(seed=11), 0.1))
    graph = unfused.entry_graph
    shapes = symbolic_shapes(graph)
    left = [n for n in graph.nodes if n.op == "sum_to_like"]
    assert len(left) == MLP_SUMS_LEFT
    assert [summed_axes(n, shapes) for n in left] == [None] * MLP_SUMS_LEFT


def test_mlp_step_float32_matches_unresolved_and_interpreter(monkeypatch):
    args = (*mlp_arrays(seed=11), 0.1)
    got = jit(mlp_step)(*args)
    with monkeypatch.context() as patch:
        without_pass(patch)
        unresolved = jit(mlp_step)(*args)
    interpreted = interpret_call(mlp_step, args, {})
    for a, b, c in zip(got, unresolved, interpreted):
        assert a.dtype == f32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
