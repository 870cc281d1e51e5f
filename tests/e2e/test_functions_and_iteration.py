"""Functions as values (local defs, lambdas, functools.partial) and loops over elements
(tuples unrolled by type inference, arrays by their first axis; enumerate, zip,
reversed), each against plain Python; grad through a closure against finite differences."""
import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astjit
from astjit import grad, jit


def scaled_sum(x, s):
    half = 0.5 * s

    def piece(v):
        return half * v + s
    return piece(x) + piece(2.0 * x)


def late_binding(x):
    k = 1.0
    f = lambda v: v * k      # noqa: E731
    k = 3.0                  # a closure reads k when it is called, as Python's does
    return f(x)


def lambda_of_lambda(x, a):
    inner = lambda v: a * v  # noqa: E731
    outer = lambda v: inner(v) + inner(1.0)  # noqa: E731
    return outer(x)


def poly(x, a, b):
    return a * x * x + b


def partial_inside(x, b):
    f = functools.partial(poly, b=b)
    g = functools.partial(f, a=2.0)
    return f(x, 3.0) + g(x)


def closure_in_loop(x, n):
    total = 0.0
    for i in range(n):
        step = lambda v: v + i   # noqa: E731
        total = step(total) * x
    return total


def closure_on_arrays(x, alpha):
    act = lambda v: np.maximum(v, alpha * v)  # noqa: E731
    return np.sum(act(x) * act(-x))


def loss_through_closure(w, x):
    sq = lambda v: v * v  # noqa: E731

    def err(v):
        return sq(v - 1.0)
    return np.sum(err(x * w))


CASES = [
    (scaled_sum, (1.5, 2.0)),
    (late_binding, (2.0,)),
    (lambda_of_lambda, (2.0, -1.5)),
    (partial_inside, (1.25, 0.5)),
    (closure_in_loop, (0.5, 4)),
    (closure_on_arrays, (np.linspace(-1.0, 1.0, 7), 0.1)),
    (loss_through_closure, (0.7, np.linspace(-1.0, 2.0, 5))),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_function_values_match_python(fn, args):
    assert np.isclose(jit(fn)(*args), fn(*args), rtol=1e-12)


@pytest.mark.parametrize("fn,args", [(scaled_sum, (1.5, 2.0)), (lambda_of_lambda, (2.0, -1.5)),
                                     (loss_through_closure, (0.7, np.linspace(-1.0, 2.0, 5)))])
def test_grad_through_a_closure_matches_finite_differences(fn, args):
    h = 1e-6
    fd = (fn(args[0] + h, *args[1:]) - fn(args[0] - h, *args[1:])) / (2 * h)
    assert np.isclose(grad(fn)(*args), fd, rtol=1e-6, atol=1e-8)


def make_adder(a):
    def add(v):
        return v + a
    return add


def stores_lambda(x):
    t = (lambda v: v, x)     # the lambda in a tuple
    return t[1]


def nonlocal_counter(x):
    n = 0

    def bump():
        nonlocal n
        n += 1
    bump()
    return x + n


@pytest.mark.parametrize("fn,words", [(make_adder, "'add' used as a value"),
                                      (stores_lambda, "'<lambda>' used as a value"),
                                      (nonlocal_counter, "nonlocal n is not supported")])
def test_function_values_that_escape_are_refused(fn, words):
    with pytest.raises(astjit.CompileError, match=words) as info:
        jit(fn)(1.0)
    assert "test_functions_and_iteration.py" in str(info.value) and "^" in str(info.value)


# ---- loops over elements -------------------------------------------------------------

def tuple_sum(t):
    total = 0.0
    for v in t:
        total = total + v
    return total


def weighted(t):
    total = 0.0
    for i, v in enumerate(t):
        total += (i + 1) * v
    return total


def weighted_from(t, first):
    total = 0.0
    for i, v in enumerate(t, first):
        total += i * v
    return total


def positions_from(x):
    return [i * v for i, v in enumerate(x, start=-2)]


def dot_zip(a, b):
    total = 0.0
    for u, v in zip(a, b):
        total += u * v
    return total


def horner(coefs, x):
    acc = 0.0
    for c in reversed(coefs):
        acc = acc * x + c
    return acc


def first_negative(t):
    for i, v in enumerate(t):
        if v < 0.0:
            return i
    return -1


def sum_until_big(t):
    total = 0.0
    for v in t:
        if total > 2.0:
            break
        total += v
    return total


def mixed_types(t):
    out = 0
    for v in t:          # an int, then arrays: a different type per element
        out = out + v
    return out


def rows(x):
    best = 0.0
    for row in x:
        best = max(best, np.sum(row * row))
    return best


def reversed_rows(x):
    acc = np.zeros(x.shape[1])
    for row in reversed(x):
        acc = 0.5 * acc + row
    return acc


def elements(x):
    s = 0.0
    for v in x:
        s += v * v
    return s


ITERATION = [
    (tuple_sum, ((1.0, 2, 3.5),)),
    (weighted, ((1.0, -2.0, 0.5),)),
    (weighted_from, ((1.0, -2.0, 0.5), 3)),
    (weighted_from, (np.arange(4.0), -1)),
    (positions_from, ((1.5, 2.5, 4.0),)),
    (dot_zip, ((1.0, 2.0, 3.0), (4.0, 5.0))),
    (horner, ((1.0, -2.0, 0.5), 1.5)),
    (first_negative, ((1.0, 2.0, -0.5, -3.0),)),
    (first_negative, ((1.0, 2.0),)),
    (sum_until_big, ((1.0, 1.5, 2.0, 4.0),)),
    (mixed_types, ((1, np.ones(3), np.arange(3.0)),)),
    (rows, (np.arange(12.0).reshape(4, 3),)),
    (reversed_rows, (np.arange(12.0).reshape(4, 3),)),
    (elements, (np.linspace(-2.0, 2.0, 9),)),
    (elements, (np.zeros(0),)),
]


@pytest.mark.parametrize("fn,args", ITERATION,
                         ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(ITERATION)])
def test_iteration_matches_python(fn, args):
    np.testing.assert_allclose(jit(fn)(*args), fn(*args), rtol=1e-12)


floats = st.floats(-1e3, 1e3, allow_nan=False)


compiled = functools.cache(jit)
"""One compiled function per function: the cases below that run the same function on
arguments of the same types share its compilation."""


@settings(max_examples=25, deadline=None)
@given(st.lists(floats, min_size=0, max_size=5), st.lists(floats, min_size=0, max_size=5),
       floats)
def test_enumerate_zip_reversed_over_random_tuples(a, b, x):
    a, b = tuple(a), tuple(b)
    assert compiled(weighted)(a) == pytest.approx(weighted(a), rel=1e-12, abs=1e-9)
    assert compiled(dot_zip)(a, b) == pytest.approx(dot_zip(a, b), rel=1e-12, abs=1e-9)
    assert compiled(horner)(a, x / 1e3) == pytest.approx(horner(a, x / 1e3), rel=1e-9, abs=1e-9)


def test_enumerate_start_must_be_an_int():
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        weighted_from((1.0,), 1.5)
    with pytest.raises(astjit.errors.TypingError, match="cannot be interpreted as an integer"):
        jit(weighted_from)((1.0,), 1.5)


def test_a_tuple_loop_is_unrolled_and_an_array_loop_is_a_loop():
    typed = jit(tuple_sum).ir((1.0, 2.0, 3.0), stage="typed")
    assert "while" not in typed
    assert "while" in jit(elements).ir(np.ones(3), stage="typed")
