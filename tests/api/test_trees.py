"""Containers ("trees", docs/trees.md) as arguments, locals and results; astjit.tree; grad
over trees against central finite differences; random structures (hypothesis)."""
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astjit
from astjit import grad, jit


@dataclass
class Params:
    w: np.ndarray
    b: np.ndarray


Pair = namedtuple("Pair", ["x", "y"])


def predict(p, x):
    return x @ p.w + p.b


def loss(p, x):
    return np.sum(np.tanh(predict(p, x)) ** 2)


def rebuild(d, s):
    return {"b": d["b"] * s, "w": d["w"] * s}, Pair(s, 2 * s), [d["w"], s]


def carried(p, n):
    for _ in range(n):
        p = Params(p.w * 0.5, p.b + 1.0)
    return p


def chosen(p, q, first):
    if first:
        best = p
    else:
        best = q
    return best


def test_containers_as_arguments_locals_and_results():
    rng = np.random.default_rng(0)
    p, x = Params(rng.standard_normal((3, 2)), rng.standard_normal(2)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(jit(predict)(p, x), predict(p, x))
    d = {"b": np.ones(2), "w": np.ones((2, 2))}
    got, want = jit(rebuild)(d, 3.0), rebuild(d, 3.0)
    assert type(got[1]) is Pair and got[1] == want[1] and type(got[2]) is list
    np.testing.assert_allclose(got[0]["w"], want[0]["w"])
    got = jit(carried)(p, 3)
    assert type(got) is Params
    np.testing.assert_allclose(got.b, carried(p, 3).b)
    q = Params(p.w + 1.0, p.b + 1.0)
    assert jit(chosen)(p, q, False).w is q.w


def test_a_missing_field_and_a_mismatched_join_are_typing_errors():
    with pytest.raises(astjit.TypingError, match="Params has no field 'z'"):
        jit(lambda_free_field)(Params(np.ones(1), np.ones(1)))
    with pytest.raises(astjit.TypingError):
        jit(chosen)(Params(np.ones(1), np.ones(1)), Pair(np.ones(1), np.ones(1)), True)


def lambda_free_field(p):
    return p.z


def test_grad_of_a_dataclass_matches_finite_differences():
    rng = np.random.default_rng(1)
    p, x = Params(rng.standard_normal((3, 2)), rng.standard_normal(2)), rng.standard_normal((4, 3))
    g = grad(loss)(p, x)
    assert type(g) is Params
    h = 1e-6
    for name in ("w", "b"):
        leaf = getattr(p, name)
        for idx in np.ndindex(leaf.shape):
            up, down = leaf.copy(), leaf.copy()
            up[idx] += h
            down[idx] -= h
            fd = (loss(Params(**{**vars(p), name: up}), x)
                  - loss(Params(**{**vars(p), name: down}), x)) / (2 * h)
            assert np.isclose(getattr(g, name)[idx], fd, rtol=1e-5, atol=1e-7)


def _trees(leaf):
    return st.recursive(leaf, lambda inner: st.one_of(
        st.tuples(inner, inner).map(tuple),
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(st.sampled_from("abcd"), inner, min_size=1, max_size=3),
        st.tuples(inner, inner).map(lambda t: Pair(*t)),
        st.tuples(inner, inner).map(lambda t: Params(*t))), max_leaves=6)


LEAVES = st.one_of(st.floats(-10, 10), st.integers(0, 5).map(lambda n: np.arange(float(n))))


@settings(max_examples=40, deadline=None)
@given(_trees(LEAVES))
def test_random_trees_round_trip_and_compile(t):
    leaves, treedef = astjit.tree.flatten(t)
    again, treedef2 = astjit.tree.flatten(astjit.tree.unflatten(treedef, leaves))
    assert treedef2 == treedef and all(a is b for a, b in zip(leaves, again))
    got, s = jit(rebuilt)(t, 2.0)
    assert astjit.tree.flatten(got)[1] == treedef and s == 2.0
    for a, b in zip(astjit.tree.leaves(got), leaves):
        np.testing.assert_array_equal(a, b)


def rebuilt(t, s):
    leaves, treedef = astjit.tree.flatten(t)
    return astjit.tree.unflatten(treedef, leaves), s


def momentum(p, lr, steps):
    v = (np.zeros_like(p[0]),)
    for _ in range(steps):
        v = (v[0] + p[0],)
        p = (p[0] - lr * v[0],)        # v[0] is still carried: its buffer is not reused
    return p, v


def test_an_array_a_carried_tuple_holds_is_not_overwritten():
    got, want = jit(momentum)((np.ones(3),), 0.5, 3), momentum((np.ones(3),), 0.5, 3)
    np.testing.assert_allclose(got[0][0], want[0][0])
    np.testing.assert_allclose(got[1][0], want[1][0])


def axpy(u, v):
    return u + 0.5 * v


def mapped(p, g, s):
    doubled = astjit.tree.map(lambda v: v * s, p)
    return astjit.tree.map(axpy, doubled, g)


def test_tree_map_inside_compiled_code():
    p, g = Params(np.ones((2, 2)), np.ones(2)), Params(np.full((2, 2), 2.0), np.zeros(2))
    got = jit(mapped)(p, g, 3.0)
    assert type(got) is Params
    np.testing.assert_allclose(got.w, 4.0)
    np.testing.assert_allclose(got.b, 3.0)
    with pytest.raises(astjit.TypingError, match="different structures"):
        jit(mapped)(p, Pair(g.w, g.b), 3.0)


def test_jvp_of_a_float_function_of_a_tree():
    p, x = Params(np.ones((3, 2)) * 0.3, np.ones(2) * 0.1), np.linspace(-1, 1, 12).reshape(4, 3)
    t = Params(np.full((3, 2), 0.5), np.full(2, -1.0))
    value, tangent = astjit.jvp(loss, (p, x), (t, np.zeros_like(x)))
    h = 1e-6
    fd = (loss(Params(p.w + h * t.w, p.b + h * t.b), x)
          - loss(Params(p.w - h * t.w, p.b - h * t.b), x)) / (2 * h)
    assert np.isclose(value, loss(p, x)) and np.isclose(tangent, fd, rtol=1e-6)


def scaled(p, s):
    return Params(p.w * s, p.b + s), {"n": s}


def test_a_container_result_of_the_cuda_simulator_is_rebuilt():
    got = jit(scaled, target="cuda-sim")(Params(np.ones(3), np.zeros(3)), 2.0)
    assert type(got[0]) is Params and got[1] == {"n": 2.0}
    np.testing.assert_allclose(got[0].w, 2.0)
