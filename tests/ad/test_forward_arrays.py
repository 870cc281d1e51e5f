"""Forward mode (jvp) of array programs: every tangent against central finite differences,
compiled and interpreted; broadcasting, matrix products, reductions, views, writes into
arrays (new ones, arguments, through views, in loops and branches, in callees), loops
carrying arrays, containers of arrays, f32; the caller's tangents are never written."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jvp
from astjit.api import interpret_call
from astjit.frontend import lower_function
from astjit.ir.ad.forward_activity import active_values
from astjit.ir.infer import infer_types
from astjit.ir.types import F64, ArrayType

rng = np.random.default_rng(7)


def randn(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# ---- the corpus -------------------------------------------------------------------------------

def elementwise(x, y):
    return np.exp(x) * np.sin(y) + np.tanh(x) / (y * y + 1.0) - x ** 3


def broadcast_both(c, r):            # (m, 1) with (1, n): the result is larger than each
    return c - r + c * 2.0


def broadcast_scalar(x, s):
    return s * x + s


def scalar_of_arrays(x, w):
    return np.sum(np.tanh(x * w)) + np.max(x) * np.min(w)


def products(a, b, v):
    return (a @ b) @ v + np.dot(v, v) * (b.T @ a.T)[0, 0]


def vector_matrix(v, a):
    return v @ a + a @ a.T @ v


def reductions(x):
    return (np.sum(x, axis=0), np.mean(x, axis=1, keepdims=True), np.max(x, axis=1),
            np.min(x, axis=(0, 1)), x.sum())


def views(x):
    y = x[1:, ::2] * 2.0
    return y.T + x[0, 1] - x.reshape(x.shape[1], x.shape[0])[:, 0].sum()


def writes_into_new(x):
    out = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i - 1]
    out[1:] *= 2.0
    out[0] = 5.0
    return out


def writes_into_argument(x, s):
    x[0] = s * x[1]
    x[1:] += s
    return x * x


def full_of_scalar(s, x):
    y = np.full(x.shape[0], s)
    y[0] = 1.0
    return y * x + np.ones(x.shape[0]) * s


def like_of_active(x):               # *_like arrays of an active x: constants, but one written
    c = np.full_like(x, 2.0)
    e = np.zeros_like(x)
    e[0] = x[1]
    return c * x + e + np.ones_like(x)


def relax(x):                        # a while loop with a data-dependent trip count
    while np.max(np.abs(x)) > 0.1:
        x = 0.5 * x + 0.01 * np.sin(x)
    return x


def branches(x, s):
    if s > 0.0:
        y = x * s
    else:
        y = np.sin(x)
    y[0] = s
    return y


def scale_into(out, x, s):
    for i in range(out.shape[0]):
        out[i] = s * x[i]


def callee_writes(x, s):
    out = np.zeros_like(x)
    scale_into(out, x, s)
    return out + x


def dense(params, x):                # a dict of a tuple and a dataclass-like tuple
    w, b = params["layer"]
    return np.tanh(x @ w + b) * params["scale"]


def f32_program(x, y):
    return np.sum(x * y, axis=0) + np.tanh(x)[0]


CASES = [
    (elementwise, lambda: (randn(3, 4), randn(3, 4))),
    (broadcast_both, lambda: (randn(3, 1), randn(1, 4))),
    (broadcast_scalar, lambda: (randn(5), 1.5)),
    (scalar_of_arrays, lambda: (randn(4, 3), randn(4, 3))),
    (products, lambda: (randn(3, 4), randn(4, 2), randn(2))),
    (vector_matrix, lambda: (randn(3), randn(3, 3))),
    (reductions, lambda: (randn(3, 4),)),
    (views, lambda: (randn(3, 4),)),
    (writes_into_new, lambda: (randn(6),)),
    (writes_into_argument, lambda: (randn(5), 0.7)),
    (full_of_scalar, lambda: (0.3, randn(4))),
    (like_of_active, lambda: (randn(4),)),
    (relax, lambda: (randn(5) * 3,)),
    (branches, lambda: (randn(4), 0.5)),
    (branches, lambda: (randn(4), -0.5)),
    (callee_writes, lambda: (randn(5), 1.3)),
    (dense, lambda: ({"layer": (randn(3, 2), randn(2)), "scale": 0.5}, randn(4, 3))),
    (f32_program, lambda: (randn(3, 2, dtype=np.float32), randn(3, 2, dtype=np.float32))),
]
IDS = [f"{fn.__name__}-{k}" for k, (fn, _) in enumerate(CASES)]


def leaves(tree):
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


def moved(tree, direction, h):
    """`tree` plus h times `direction` (of the same structure), leaf by leaf."""
    if isinstance(tree, dict):
        return {k: moved(tree[k], direction[k], h) for k in tree}
    if isinstance(tree, (tuple, list)):
        return type(tree)(moved(a, b, h) for a, b in zip(tree, direction))
    if isinstance(tree, np.ndarray):
        return (tree + h * direction).astype(tree.dtype)
    return tree + h * direction


def tangents_like(tree):
    if isinstance(tree, dict):
        return {k: tangents_like(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(tangents_like(v) for v in tree)
    if isinstance(tree, np.ndarray):
        return randn(*tree.shape, dtype=tree.dtype)
    return float(rng.standard_normal())


def copied(tree):
    return moved(tree, tree, 0.0)


def numeric_tangent(fn, primals, tangents):
    h = 1e-3 if any(getattr(leaf, "dtype", None) == np.float32 for leaf in leaves(primals)) \
        else 1e-6
    up = fn(*(moved(p, t, h) for p, t in zip(primals, tangents)))
    down = fn(*(moved(p, t, -h) for p, t in zip(primals, tangents)))
    return [(np.asarray(a, np.float64) - b) / (2 * h) for a, b in zip(leaves(up), leaves(down))]


def check(fn, primals, tangents, got):
    out, tangent_out = got
    f32 = any(getattr(leaf, "dtype", None) == np.float32 for leaf in leaves(primals))
    expected = fn(*copied(primals))
    # atol: libmvec's sin and exp are within a few ulp of NumPy's (docs/arrays.md); a sum
    # that cancels leaves that in its last digits (sum_all at seed 804: 4.4e-16 of 1.7e-4)
    for a, b in zip(leaves(out), leaves(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-6 if f32 else 1e-12,
                                   atol=1e-6 if f32 else 1e-14, err_msg="primal")
    for a, b in zip(leaves(tangent_out), numeric_tangent(fn, primals, tangents)):
        assert np.shape(a) == np.shape(b), (np.shape(a), np.shape(b))
        np.testing.assert_allclose(a, b, rtol=2e-2 if f32 else 1e-5, atol=2e-2 if f32 else 1e-7,
                                   err_msg="tangent")


@pytest.mark.parametrize("fn,make", CASES, ids=IDS)
def test_tangent_matches_finite_differences(fn, make):
    primals = make()
    tangents = tangents_like(primals)
    given_tangents = copied(tangents)
    got = jvp(fn, copied(primals), tangents)
    for a, b in zip(leaves(tangents), leaves(given_tangents)):  # the caller's: unchanged
        np.testing.assert_array_equal(a, b)
    check(fn, primals, tangents, got)


@pytest.mark.parametrize("fn,make", CASES[:10], ids=IDS[:10])
def test_interpreter_agrees(fn, make):
    primals = make()
    tangents = tangents_like(primals)
    derived = jvp.__astjit_jvp__(fn)
    interpreted = interpret_call(derived, (*copied(primals), *copied(tangents)), {})
    compiled = jvp(fn, copied(primals), copied(tangents))
    for a, b in zip(leaves(interpreted), leaves(compiled)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_dtype_and_shape_of_tangents():
    x32 = randn(4, dtype=np.float32)
    out, tangent = jvp(f32_program, (x32.reshape(2, 2), x32.reshape(2, 2)),
                       (x32.reshape(2, 2), x32.reshape(2, 2)))
    assert tangent.dtype == np.float32 and tangent.shape == out.shape == (2,)
    out, tangent = jvp(broadcast_both, (randn(3, 1), randn(1, 4)), (randn(3, 1), randn(1, 4)))
    assert tangent.shape == out.shape == (3, 4)


def test_an_array_like_an_active_one_has_no_tangent():
    """np.full_like(x, c) and np.ones_like(x) of an active x are constants: forward mode gave
    them a tangent of zeros, which kernels then computed with (the hessian of an MLP loss had a
    kernel reading it). np.zeros_like(x) written with x[1] has one (its memory family)."""
    module = infer_types(lower_function(like_of_active), [ArrayType(F64, 1)])
    graph = module.graphs[module.entry]
    active = active_values(graph, graph.params)
    creations = {n.attrs["what"]: n.outputs[0] in active
                 for n in graph.walk() if n.op == "array_new_like"}
    assert creations == {"np.full_like": False, "np.zeros_like": True, "np.ones_like": False}


def mixed(x, n):
    return x * n


def test_int_arguments_take_no_tangent():
    x = randn(3)
    out, tangent = jvp(mixed, (x, 3), (np.ones(3), 0))
    np.testing.assert_allclose(tangent, 3.0 * np.ones(3))


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 4), axis=st.sampled_from([None, 0, 1]),
       seed=st.integers(0, 2 ** 16))
def test_random_shapes(rows, cols, axis, seed):
    local = np.random.default_rng(seed)
    x, w = local.standard_normal((rows, cols)), local.standard_normal(cols)
    primals, tangents = (x, w), (local.standard_normal((rows, cols)), local.standard_normal(cols))
    fn = {None: sum_all, 0: sum_rows, 1: sum_columns}[axis]
    check(fn, primals, tangents, jvp(fn, copied(primals), copied(tangents)))


def sum_all(x, w):
    return np.sum(np.sin(x * w) @ w.reshape(w.shape[0], 1))


def sum_rows(x, w):
    return np.mean(np.exp(x) - w, axis=0) * np.max(w)


def sum_columns(x, w):
    return np.max(x * w + 1.0, axis=1) + np.min(x, axis=1)
