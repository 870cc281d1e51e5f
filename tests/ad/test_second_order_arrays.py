"""Second derivatives of array programs: grad of a function that calls grad (reverse over
forward: the call's rule is a Hessian-vector product), grad(grad(f)), value_and_grad
inside, gradients with respect to the other arguments of the inner gradient, and jvp of
a gradient (forward over reverse) -- each against central differences of the first
derivative, which astjit computes and test_grad_arrays.py checks."""
import numpy as np
import pytest

from astjit import grad, jit, jvp, value_and_grad

rng = np.random.default_rng(11)


def randn(*shape):
    return rng.standard_normal(shape)


def tanh_features(t, w):
    return np.sum(np.tanh(t * w))


def log_sum_exp(x, w):
    m = np.max(x * w)
    return m + np.log(np.sum(np.exp(x * w - m)))


def iterated(x, w):
    y = x * w
    for _ in range(3):
        y = np.sin(y) + 0.5 * y
    return np.mean(y * y)


def relax(x, w):                     # a while loop: the inner gradient records a tape
    y = x * w
    while np.max(np.abs(y)) > 0.1:
        y = 0.5 * y + 0.01 * np.sin(y)
    return np.sum(y * x)


INNER = [tanh_features, log_sum_exp, iterated, relax]


def numeric_gradient(fn, args, argnum, h=1e-5):
    x = np.array(args[argnum], dtype=np.float64)
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        moved = []
        for s in (1, -1):
            y = x.copy()
            y[k] += s * h
            moved.append(fn(*args[:argnum], y, *args[argnum + 1:]))
        out[k] = (moved[0] - moved[1]) / (2 * h)
    return out


def penalty_of(inner):
    def penalty(x, w):
        g = grad(inner)(x, w)
        return np.sum(g * g)
    return penalty


@pytest.mark.parametrize("inner", INNER, ids=lambda f: f.__name__)
@pytest.mark.parametrize("argnum", [0, 1])
def test_gradient_of_a_gradient_penalty(inner, argnum):
    x, w = randn(5) * 0.5, randn(5)
    penalty = penalty_of(inner)
    got = grad(penalty, argnums=argnum)(x, w)
    np.testing.assert_allclose(got, numeric_gradient(penalty, (x, w), argnum),
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(grad(penalty, argnums=argnum))(x, w), got, rtol=1e-12)


@pytest.mark.parametrize("inner", INNER, ids=lambda f: f.__name__)
def test_grad_of_grad_of_a_scalar_argument(inner):
    t, w = 0.7, randn(4)
    got = grad(grad(inner))(t, w)
    h = 1e-5
    expected = (grad(inner)(t + h, w) - grad(inner)(t - h, w)) / (2 * h)
    assert np.isclose(got, expected, rtol=1e-6, atol=1e-8), (got, expected)


def with_value(x):
    value, g = value_and_grad(tanh_features)(x, x)
    return value * 2.0 + np.sum(g ** 3)


def test_value_and_grad_inside():
    x = randn(4)
    np.testing.assert_allclose(grad(with_value)(x), numeric_gradient(with_value, (x,), 0),
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("inner", INNER, ids=lambda f: f.__name__)
def test_hessian_vector_product_by_jvp_of_grad(inner):
    x, w, v = randn(5) * 0.5, randn(5), randn(5)
    _, hv = jvp(grad(inner), (x, w), (v, np.zeros(5)))
    h = 1e-5
    expected = (grad(inner)(x + h * v, w) - grad(inner)(x - h * v, w)) / (2 * h)
    np.testing.assert_allclose(hv, expected, rtol=1e-5, atol=1e-7)
