"""Jacobians (jacfwd, jacrev, jacobian), Hessians and vjp pullbacks of array programs,
against central differences; inside jit; a function writing into its argument; refusals."""
import numpy as np
import pytest

import astjit
from astjit import DifferentiationError, hessian, jacfwd, jacobian, jacrev, jit, vjp

rng = np.random.default_rng(5)


def randn(*shape):
    return rng.standard_normal(shape)


def numeric_jacobian(fn, args, argnum, h=1e-6):
    x = np.asarray(args[argnum], dtype=np.float64)
    columns = []
    for k in np.ndindex(x.shape or ()):
        moved = []
        for s in (1, -1):
            y = x.copy()
            y[k] += s * h
            moved.append(np.asarray(fn(*args[:argnum], y if x.shape else float(y),
                                       *args[argnum + 1:]), dtype=np.float64))
        columns.append((moved[0] - moved[1]) / (2 * h))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def field(x, W):                      # R^4 -> R^3
    return np.tanh(W @ x) * np.sum(x ** 2)


def matrix_valued(x, s):              # R^3 x R -> R^(2 x 3)
    return np.sin(x[:2]).reshape(2, 1) * x.reshape(1, 3) * s


def scalar_valued(x, W):
    return np.sum(np.tanh(W @ x))


def of_a_float(s, x):                 # R -> R^3
    return np.exp(s * x)


def writes_into_argument(x):
    x[0] = x[1] * x[2]
    return x * x


CASES = [
    (field, lambda: (randn(4), randn(3, 4)), 0),
    (field, lambda: (randn(4), randn(3, 4)), 1),
    (matrix_valued, lambda: (randn(3), 0.7), 0),
    (matrix_valued, lambda: (randn(3), 0.7), 1),
    (scalar_valued, lambda: (randn(4), randn(2, 4)), 0),
    (of_a_float, lambda: (0.3, randn(3)), 0),
]


@pytest.mark.parametrize("transform", [jacfwd, jacrev, jacobian], ids=lambda t: t.__name__)
@pytest.mark.parametrize("fn,make,argnum", CASES,
                         ids=[f"{c[0].__name__}-{c[2]}" for c in CASES])
def test_jacobian_matches_finite_differences(transform, fn, make, argnum):
    args = make()
    got = transform(fn, argnums=argnum)(*args)
    expected = numeric_jacobian(fn, args, argnum)
    assert np.shape(got) == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("transform", [jacfwd, jacrev], ids=lambda t: t.__name__)
def test_several_argnums_give_a_tuple(transform):
    args = (randn(4), randn(3, 4))
    jx, jw = transform(field, argnums=(0, 1))(*args)
    np.testing.assert_allclose(jx, numeric_jacobian(field, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jw, numeric_jacobian(field, args, 1), rtol=1e-6, atol=1e-8)


def test_a_function_writing_into_its_argument():
    x = randn(4)
    expected = numeric_jacobian(lambda y: writes_into_argument(y.copy()), (x,), 0)
    for transform in (jacfwd, jacrev):
        given = x.copy()
        np.testing.assert_allclose(transform(writes_into_argument)(given), expected,
                                   rtol=1e-6, atol=1e-8)


def branches_on_what_it_overwrites(x):
    c = float(x[0])
    if c > 0.5:
        return x * 100.0
    x[0] = 1.0
    return x * c


def reads_what_it_overwrote(x):
    c = float(x[0])
    x[0] = 1.0
    return float(np.sum(x)) * c


@pytest.mark.parametrize("fn", [branches_on_what_it_overwrites, reads_what_it_overwrote])
@pytest.mark.parametrize("transform", [jacfwd, jacrev], ids=lambda t: t.__name__)
def test_every_pass_sees_the_arguments_as_given(transform, fn):
    """The pass that found the result's shape (and jacfwd's batched pass) wrote into the
    caller's array, so the next passes took the other branch or read the value written:
    [[100, 0], [0, 100]] for [[1, 0], [2, -3]], and the gradient [3, 1] for [3, -3]
    (fuzz seed 41324, program 3371). The caller's array is left as it was, as after grad."""
    x = np.array([-3.0, 2.0])
    given = x.copy()
    expected = numeric_jacobian(lambda y: fn(y.copy()), (x,), 0)
    np.testing.assert_allclose(transform(fn)(given), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(given, x)


def quadratic(x, A):
    return x @ A @ x + np.sum(np.sin(x))


def loop_loss(x):
    for _ in range(2):
        x = x - 0.3 * np.tanh(x) * x
    return np.sum(np.cos(x) * x)


def test_hessian():
    x, A = randn(4), randn(4, 4)
    H = hessian(quadratic)(x, A)
    np.testing.assert_allclose(H, A + A.T - np.diag(np.sin(x)), rtol=1e-10, atol=1e-12)
    x = randn(3)
    H = hessian(loop_loss)(x)
    gradient = jacrev(loop_loss)
    np.testing.assert_allclose(H, numeric_jacobian(gradient, (x,), 0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12)


def biased_layer(w, x):
    return np.sum(np.tanh(x @ w[:6].reshape((2, 3)) + w[6:]) ** 2)


def test_hessian_of_a_biased_layer_stays_on_the_first_tier():
    """jacfwd of a bias's gradient sums a batch of (n, 1, k) adjoints (`sum_to_like`), which
    the first tier's unit-stride version takes: compiled once, not again for the general tier."""
    w, x = randn(9), randn(5, 2)
    f = jit(hessian(biased_layer))
    H = f(w, x)
    np.testing.assert_allclose(H, numeric_jacobian(jacrev(biased_layer), (w, x), 0),
                               rtol=1e-5, atol=1e-7)
    types = f.dispatcher.signature.types_of(f.dispatcher.signature.bind((w, x), {}))
    assert not f.dispatcher.specializations[types].compiled.general


def jacobian_inside(x, W):
    return np.sum(jacfwd(field)(x, W) ** 2) + np.sum(jacrev(field, argnums=1)(x, W))


def test_inside_jit_and_jitted():
    x, W = randn(4), randn(3, 4)
    expected = np.sum(numeric_jacobian(field, (x, W), 0) ** 2) \
        + np.sum(numeric_jacobian(field, (x, W), 1))
    assert np.isclose(jit(jacobian_inside)(x, W), expected, rtol=1e-6)
    np.testing.assert_allclose(jit(jacrev(field))(x, W), jacrev(field)(x, W), rtol=1e-12)


def dense(W, x, b):
    return np.tanh(W @ x + b)


def test_vjp_pullback():
    args = (randn(3, 4), randn(4), randn(3))
    out, pullback = vjp(dense, *args)
    np.testing.assert_allclose(out, dense(*args), rtol=1e-12)
    ct = randn(3)
    cotangents = pullback(ct)
    assert isinstance(cotangents, tuple) and len(cotangents) == 3
    for i, c in enumerate(cotangents):
        expected = np.tensordot(ct, numeric_jacobian(dense, args, i), axes=1)
        np.testing.assert_allclose(c, expected, rtol=1e-6, atol=1e-8)
    ds, dx = vjp(of_a_float, 0.5, randn(3))[1](np.ones(3))  # a float's cotangent is a float
    assert np.ndim(ds) == 0 and np.shape(dx) == (3,)


def pair(x):
    return x, x * 2.0


def test_refusals():
    with pytest.raises(DifferentiationError, match="float"):
        jacfwd(pair)(randn(3))
    with pytest.raises(DifferentiationError, match="float"):
        jacrev(field)(np.arange(4), randn(3, 4))
    assert astjit.jacobian is jacrev
