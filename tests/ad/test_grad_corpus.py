"""Gradients of the whole scalar corpus and of random programs against finite differences.

A central difference is only a trustworthy reference where the function is
smooth, so a point is checked when differences with two step sizes agree; the
points that are not (a branch boundary, a floor) are counted, not checked.
"""
import math
import os

import pytest
from corpus import CASE_IDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from program_gen import load, programs

from astjit import grad, value_and_grad

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "100")) // 4

# Generic points only: at 0.0 a test like `x == x + x` holds on a single point, where the
# path taken (and so AD's derivative) differs from every neighbour's; no finite
# difference can see that.
GENERIC_FLOATS = st.floats(-5, 5).filter(lambda v: abs(v) > 1e-3)


def central_difference(fn, args, i, h):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (fn(*up) - fn(*down)) / (2 * h)


def one_sided_difference(fn, args, i, h):
    moved = list(args)
    moved[i] += h
    return (fn(*moved) - fn(*args)) / h


def smooth_reference(fn, args, i):
    """The derivative by finite differences, or None where the function is not smooth."""
    scale = max(1.0, abs(args[i]))
    h = 1e-6 * scale
    try:
        coarse = central_difference(fn, args, i, 1e-4 * scale)
        fine = central_difference(fn, args, i, h)
        right = one_sided_difference(fn, args, i, h)
        left = one_sided_difference(fn, args, i, -h)
    except (ArithmeticError, ValueError):
        return None
    if not all(math.isfinite(e) for e in (coarse, fine, right, left)):
        return None
    scale = max(1.0, abs(fine))
    if abs(right - left) > 1e-5 * scale or abs(coarse - fine) > 1e-4 * scale:
        return None  # a kink or a jump: the left and right derivatives differ
    return fine


def float_argnums(args):
    return tuple(i for i, a in enumerate(args) if type(a) is float)


def differentiable(fn, args):
    try:
        return type(fn(*args)) is float and float_argnums(args)
    except (ArithmeticError, ValueError):
        return False


# AD differentiates the path the program takes. At newton_sqrt(1.0) that path
# is `y = 1.0` and a loop that runs zero times: derivative 0, while sqrt's
# derivative there is 0.5 (any nearby x takes the loop). Documented in the README.
PATH_DEPENDENT = {("newton_sqrt", (1.0,))}

GRAD_CASES = [(fn, args) for fn, args in CASE_IDS if differentiable(fn, args)
              and (fn.__name__, args) not in PATH_DEPENDENT]


@pytest.mark.parametrize("fn,args", GRAD_CASES,
                         ids=[f"{fn.__name__}{args}" for fn, args in GRAD_CASES])
def test_corpus_gradient_matches_finite_differences(fn, args):
    argnums = float_argnums(args)
    value, gradient = value_and_grad(fn, argnums=argnums)(*args)
    assert value == fn(*args)
    for i, g in zip(argnums, gradient):
        reference = smooth_reference(fn, args, i)
        if reference is not None:
            assert math.isclose(g, reference, rel_tol=1e-5, abs_tol=1e-6), (i, g, reference)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(source=programs(), a=st.integers(-20, 20), b=st.integers(-20, 20),
       x=GENERIC_FLOATS, y=GENERIC_FLOATS)
def test_random_program_gradient_matches_finite_differences(tmp_path_factory, source, a, b, x, y):
    fn = load(source, tmp_path_factory.mktemp("grads"))
    args = (a, b, x, y)
    try:
        fn(*args)
    except (ArithmeticError, ValueError):
        return
    gx, gy = grad(fn, argnums=(2, 3))(*args)
    for i, g in ((2, gx), (3, gy)):
        reference = smooth_reference(fn, args, i)
        if reference is not None:
            assert math.isclose(g, reference, rel_tol=1e-4, abs_tol=1e-5), \
                f"\n{source}\nargs={args}: d/darg{i} {g} vs {reference}"


def linear_square(x, w, b):
    z = w * x + b
    return z ** 2


def seed_graph(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def test_reference_examples():
    assert grad(linear_square, argnums=(0, 1, 2))(2.0, 3.0, 1.0) == (42.0, 28.0, 14.0)
    gx1, gx2 = grad(seed_graph, argnums=(0, 1))(2.0, 5.0)
    assert math.isclose(gx1, 0.5 + 5.0) and math.isclose(gx2, 2.0 - math.cos(5.0))


def test_grad_objects_are_cached():
    assert grad(seed_graph, argnums=(0, 1)) is grad(seed_graph, argnums=(0, 1))
    assert grad(seed_graph) is not grad(seed_graph, argnums=1)
