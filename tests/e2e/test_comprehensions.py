"""Starred unpacking, comprehensions of known length and iteration over dicts, each against
plain Python; what is refused (an unknown length, an `if` clause) with its message; grad
through a comprehension against finite differences; hypothesis over random tuple lengths."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astjit
from astjit import grad, jit


def head_mid_tail(t):
    a, *mid, b = t
    return a, mid, b


def all_but_last(t):
    *init, last = t
    return init, last + 1.0


def rest_loop(ws, x):
    first, *rest = ws
    h = first * x
    for i, w in enumerate(rest):
        h = h + w / (i + 1)
    return h, len(rest)


def squares(xs):
    return [v * v for v in xs], tuple(v + 1 for v in xs)


def over_range(a):
    return [i * a for i in range(4)], tuple(j for j in range(5, 1, -2))


def nested(xs):
    return [[a * b for b in xs] for a in xs], [a + b for a in xs for b in (10.0, 20.0)]


def zipped(xs, ys):
    return [a * b for a, b in zip(xs, ys)], [i * v for i, v in enumerate(xs)]


def shadowing(xs):
    v = 5.0
    doubled = [2.0 * v for v in xs]
    return doubled, v          # the comprehension's v is its own


def copies(t):
    return tuple(t), list(t), list(), tuple([a, b] for a, b in zip(t, t))


def constant_if(xs):
    return [v for v in xs if True], [v for v in xs if 0]


def dict_walk(d, lam):
    total, count = 0.0, 0
    for name, p in d.items():
        total += lam * np.sum(p * p)
    for name in d:
        count += d[name].size
    keyed = [d[k] for k in d.keys()]
    return total / count, len(d), keyed, tuple(d.values())


def scaled_dict(d, lam):
    return {name: (1.0 - lam) * p for name, p in d.items()}


def arrays_of(xs):
    return tuple(v / np.sqrt(np.sum(v * v)) for v in xs), [np.sum(v) for v in xs]


CASES = [
    (head_mid_tail, ((1.0, 2, 3.0, 4),)),
    (head_mid_tail, ([1.0, 2.0],)),
    (all_but_last, ((1.0, 2.0, 3.0),)),
    (rest_loop, ((1.0, 2.0, 3.0, 4.0), 0.5)),
    (rest_loop, ((np.ones(3),), np.arange(3.0))),
    (squares, ((1.0, 2.0, 3),)),
    (squares, ([1.0, np.arange(2.0)],)),
    (over_range, (1.5,)),
    (nested, ((1.0, 2.0),)),
    (zipped, ((1.0, 2.0), (3.0, 4.0, 5.0))),
    (shadowing, ((1.0, 2.0),)),
    (copies, ((1.0, 2.0),)),
    (constant_if, ((1.0, 2.0),)),
    (dict_walk, ({"b": np.arange(2.0), "w": np.ones((3, 2)), "z": np.arange(4.0)}, 0.01)),
    (scaled_dict, ({"b": np.arange(2.0), "w": np.ones((3, 2))}, 0.1)),
    (arrays_of, ((np.arange(1.0, 4.0), np.ones((2, 2)), np.arange(5.0)),)),
]


def assert_same(got, ref):
    assert type(got) is type(ref) or np.isscalar(ref), (got, ref)
    if isinstance(ref, dict):
        assert list(got) == sorted(ref)     # a dict's keys in sorted order, as astjit.tree
        for k in ref:
            assert_same(got[k], ref[k])
    elif isinstance(ref, (tuple, list)):
        assert len(got) == len(ref), (got, ref)
        for g, r in zip(got, ref):
            assert_same(g, r)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("fn,args", CASES,
                         ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_matches_python(fn, args):
    assert_same(jit(fn)(*args), fn(*args))


def test_a_comprehension_over_a_tuple_is_unrolled():
    typed = jit(squares).ir((1.0, 2.0, 3.0), stage="typed")
    assert "while" not in typed and "tuple_append" not in typed


def over_array(x):
    return [v for v in x]


def over_unknown_range(n):
    return [i for i in range(n)]


def with_condition(xs):
    return [v for v in xs if v > 0.0]


def generator_alone(xs):
    g = (v for v in xs)
    return g


def too_short(t):
    a, b, *rest = t
    return a


def set_comp(xs):
    return {v for v in xs}


@pytest.mark.parametrize("fn,args,words", [
    (over_array, (np.ones(3),), "comprehension over a 1-d array: its length is not known"),
    (over_unknown_range, (3,), "comprehension over 'range\\(n\\)': its length is not known"),
    (with_condition, ((1.0, -1.0),), "if clause is not supported: its length is not known"),
    (generator_alone, ((1.0,),), "generator expression is supported only as the argument"),
    (too_short, ((1.0,),), "not enough values to unpack \\(expected at least 2, got 1\\)"),
    (too_short, ([1.0],), "not enough values to unpack \\(expected at least 2, got 1\\)"),
    (set_comp, ((1.0,),), "set comprehension is not supported"),
])
def test_refused_with_a_reason(fn, args, words):
    with pytest.raises(astjit.CompileError, match=words) as info:
        jit(fn)(*args)
    assert "test_comprehensions.py" in str(info.value)


def comprehension_loss(w, xs):
    total = 0.0
    for s in [np.sum(np.tanh(w * v)) for v in xs]:
        total = total + s
    for v in scaled_dict({"a": w * xs[0], "b": xs[1]}, 0.5).values():
        total = total + np.sum(v * v)
    return total


def test_grad_through_a_comprehension_matches_finite_differences():
    xs = (np.linspace(-1.0, 1.0, 4), np.arange(3.0))
    h = 1e-6
    fd = (comprehension_loss(0.7 + h, xs) - comprehension_loss(0.7 - h, xs)) / (2 * h)
    assert np.isclose(grad(comprehension_loss)(0.7, xs), fd, rtol=1e-6, atol=1e-8)


compiled = functools.cache(jit)
"""One compiled function per function for the whole file: the tests that run the same
function on arguments of the same types share its compilation."""


floats = st.floats(-1e3, 1e3, allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(st.lists(floats, min_size=0, max_size=6), st.booleans())
def test_starred_unpacking_over_random_lengths(values, as_list):
    t = list(values) if as_list else tuple(values)
    if len(t) < 2:
        with pytest.raises(astjit.TypingError, match="not enough values to unpack"):
            compiled(head_mid_tail)(t)
        return
    assert_same(compiled(head_mid_tail)(t), head_mid_tail(t))
    assert_same(compiled(all_but_last)(t), all_but_last(t))
