"""vmap: a function applied to each example of a batch, compiled as one loop; against a
Python loop over the examples (np.stack); in_axes/out_axes, containers, nesting, grad
inside and around, jit, errors."""
import numpy as np
import pytest

from astjit import DifferentiationError, grad, jit, vmap

rng = np.random.default_rng(3)


def randn(*shape):
    return rng.standard_normal(shape)


def by_loop(fn, args, in_axes, out_axes=0):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    n = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [fn(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)])
            for i in range(n)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(parts, axis=out_axes) for parts in zip(*outs))
    return np.stack(outs, axis=out_axes)


def predict(w, b, x):
    return np.tanh(x @ w + b)


def embed(W, x):
    return np.tanh(W @ x)


def stats(x):
    return np.mean(x), x - np.max(x)


def scaled(x, s):
    return x * s


CASES = [
    (predict, (None, None, 0), 0, lambda: (randn(3), 0.3, randn(5, 3))),
    (embed, (None, 1), 0, lambda: (randn(2, 3), randn(3, 5))),
    (embed, (None, 0), 1, lambda: (randn(2, 3), randn(5, 3))),
    (embed, (None, 0), -1, lambda: (randn(2, 3), randn(4, 3))),
    (stats, 0, 0, lambda: (randn(4, 6),)),
    (scaled, (0, 0), 0, lambda: (randn(5, 2), randn(5))),
    (scaled, (1, None), 1, lambda: (randn(2, 5), 2.0)),
]


@pytest.mark.parametrize("fn,in_axes,out_axes,make", CASES,
                         ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_matches_a_python_loop(fn, in_axes, out_axes, make):
    args = make()
    got = vmap(fn, in_axes=in_axes, out_axes=out_axes)(*args)
    expected = by_loop(fn, args, in_axes, out_axes)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def cosine(x, y):
    return x @ y / np.sqrt((x @ x) * (y @ y))


def test_nested_gives_pairwise_values():
    X, Y = randn(4, 3), randn(6, 3)
    got = vmap(vmap(cosine, in_axes=(None, 0)), in_axes=(0, None))(X, Y)
    np.testing.assert_allclose(got, [[cosine(x, y) for y in Y] for x in X], rtol=1e-12)


def example_loss(w, x, y):
    return (np.tanh(x @ w) - y) ** 2


def per_example_grads(w, X, Y):
    return vmap(grad(example_loss), in_axes=(None, 0, 0))(w, X, Y)


def batch_loss(w, X, Y):
    return np.sum(vmap(example_loss, in_axes=(None, 0, 0))(w, X, Y))


def test_with_grad_and_jit():
    w, X, Y = randn(3), randn(5, 3), randn(5)
    loop = np.stack([grad(example_loss)(w, X[i], Y[i]) for i in range(5)])
    batched = vmap(grad(example_loss), in_axes=(None, 0, 0))
    for fn in (batched, jit(batched), jit(per_example_grads)):
        np.testing.assert_allclose(fn(w, X, Y), loop, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad(batch_loss)(w, X, Y), loop.sum(axis=0), rtol=1e-10)


def halvings(x):  # a loop on each example's own condition: vmap loops over the examples
    n = 0
    while x > 1.0:
        x = x / 2.0
        n += 1
    return n


def test_errors():
    with pytest.raises(ValueError, match="different lengths"):
        vmap(scaled)(randn(3, 2), randn(4))
    assert vmap(scaled)(np.zeros((0, 2)), np.zeros(0)).shape == (0, 2)  # batched: no example run
    with pytest.raises(ValueError, match="at least one example"):  # the loop runs one
        vmap(halvings)(np.zeros(0))
    with pytest.raises(DifferentiationError, match="names no axis"):
        vmap(scaled, in_axes=(2, None))(randn(3, 2), 1.0)
    with pytest.raises(ValueError, match="entries"):
        vmap(scaled, in_axes=(0,))
