"""vmap: a function applied to each example of a batch, compiled as whole-batch array
operations (the batching rules) or, for a function some op of which has none, as a loop;
against a Python loop over the examples (np.stack); in_axes/out_axes, containers,
nesting, grad inside and around, jit, the path taken, errors."""
import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

from astjit import DifferentiationError, grad, hessian, jacfwd, jit, vmap

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


def test_errors():
    with pytest.raises(ValueError, match="different lengths"):
        vmap(scaled)(randn(3, 2), randn(4))
    assert vmap(scaled)(np.zeros((0, 2)), np.zeros(0)).shape == (0, 2)  # batched: no example run
    with pytest.raises(ValueError, match="at least one example"):  # the loop runs one
        vmap(shared, in_axes=(None, 0))(np.zeros(3), np.zeros((0, 3)))
    with pytest.raises(DifferentiationError, match="names no axis"):
        vmap(scaled, in_axes=(2, None))(randn(3, 2), 1.0)
    with pytest.raises(ValueError, match="entries"):
        vmap(scaled, in_axes=(0,))


# ---- the batched path: every op rewritten for the batch, no loop ---------------------------

def optimized(fn, *args) -> str:
    return jit(fn).ir(*args, stage="optimized")


def loops_over_examples(text: str) -> bool:
    """Whether vmap's IR is its loop over the examples: example 0 is a call of the
    function kept out of line (it gives the results' shapes), then a loop calls it."""
    return "call @vmap[" in text and "noinline=True" in text


def assert_matches(got, expected):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def mixed(x, a, s, c):  # x: (m, n) per example; a: (n,) for all; s: a number per example
    return np.tanh(x * a + s) * c - np.max(x, axis=0), np.sum(x * s) + c, s * 2.0, c + 1.0


@hypothesis.settings(max_examples=15, deadline=None, database=None, derandomize=True)
@hypothesis.given(b=st.integers(1, 5), m=st.integers(1, 4), n=st.integers(1, 4),
                  axis=st.sampled_from([0, 1, 2, -1, -2]), out_axes=st.sampled_from([0, -1]))
def test_broadcasting_examples_match_a_loop(b, m, n, axis, out_axes):
    args = (np.moveaxis(randn(b, m, n), 0, axis), randn(n), randn(b), 0.7)
    in_axes = (axis, None, 0, None)
    got = vmap(mixed, in_axes=in_axes, out_axes=out_axes)(*args)
    assert_matches(got, by_loop(mixed, args, in_axes, out_axes))


def outer(x, y):  # a (m, n) result per example
    return x.reshape((-1, 1)) * y + 1.0


@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -2, -3])
def test_out_axes_of_a_matrix_per_example(out_axes):
    args = (randn(4, 3), randn(2))
    fn = vmap(outer, in_axes=(0, None), out_axes=out_axes)
    assert_matches(fn(*args), by_loop(outer, args, (0, None), out_axes))
    assert "while" not in optimized(fn, *args)


def product(x, y):
    return x @ y


SHAPES = {"x": {1: (4,), 2: (3, 4), 3: (2, 3, 4)}, "y": {1: (4,), 2: (4, 2), 3: (2, 4, 2)}}
PRODUCTS = [(rx, ry, fx, fy) for rx in (1, 2) for ry in (1, 2)
            for fx, fy in ((True, False), (False, True), (True, True))] + [
    (3, 2, True, False), (2, 3, False, True), (3, 3, True, True), (3, 1, True, True)]


@pytest.mark.parametrize("rx,ry,fx,fy", PRODUCTS, ids=[f"{p[0]}{'b' if p[2] else ''}@{p[1]}"
                                                      f"{'b' if p[3] else ''}" for p in PRODUCTS])
def test_matrix_products_of_batches(rx, ry, fx, fy):
    x = randn(5, *SHAPES["x"][rx]) if fx else randn(*SHAPES["x"][rx])
    y = randn(5, *SHAPES["y"][ry]) if fy else randn(*SHAPES["y"][ry])
    in_axes = (0 if fx else None, 0 if fy else None)
    fn = vmap(product, in_axes=in_axes)
    assert_matches(fn(x, y), by_loop(product, (x, y), in_axes))
    assert "while" not in optimized(fn, x, y)


def shapes(x):  # reductions, scans, views, reshapes of an (m, n) example
    t = x.T
    return (np.sum(x, axis=1), np.mean(x), np.argmax(x), np.argmin(x, axis=0),
            np.cumsum(x, axis=-1), np.cumsum(x), np.max(x, axis=(0, 1), keepdims=True),
            x[1:, 0], t.reshape((-1,)), np.expand_dims(x, 0), x[0, 1], x.shape[0] * 1.0,
            np.concatenate((x, t.T), axis=1), np.broadcast_to(x[0], (2, x.shape[1])))


def test_reductions_and_views_match_a_loop():
    x = randn(3, 4, 5)
    for axis in (0, 2):
        args = (np.moveaxis(x, 0, axis),)
        assert_matches(vmap(shapes, in_axes=axis)(*args), by_loop(shapes, args, axis))
    assert "while" not in optimized(vmap(shapes), x)


def named(x, s):
    return {"scaled": x * s, "total": np.sum(x) + s}


def test_containers_and_nesting_stay_batched():
    x, s = randn(3, 4), randn(3)
    got = vmap(named)(x, s)
    assert set(got) == {"scaled", "total"}
    np.testing.assert_allclose(got["scaled"], x * s[:, None], rtol=1e-14)
    np.testing.assert_allclose(got["total"], x.sum(axis=1) + s, rtol=1e-14)
    X, Y = randn(4, 3), randn(6, 3)
    pairwise = vmap(vmap(cosine, in_axes=(None, 0)), in_axes=(0, None))
    assert "while" not in optimized(pairwise, X, Y)


def test_gradients_inside_and_around_stay_batched():
    w, X, Y = randn(3), randn(5, 3), randn(5)
    assert "while" not in optimized(vmap(grad(example_loss), in_axes=(None, 0, 0)), w, X, Y)
    assert "while" not in optimized(grad(batch_loss), w, X, Y)
    assert "while" not in optimized(per_example_grads, w, X, Y)


def mlp(w, x):
    h = np.tanh(x @ w[:6].reshape((3, 2)) + w[6:8])
    return np.mean((h @ w[8:10]) ** 2)


def first_three(w, x):
    return np.tanh(x @ w[:3])


def test_jacfwd_and_hessian_batch_the_basis():
    w, x = randn(10), randn(4, 3)
    text = optimized(hessian(mlp), w, x)
    assert "while" not in text
    h = hessian(mlp)(w, x)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)
    j = jacfwd(first_three)(w, x)
    np.testing.assert_allclose(j[:, :3], (1 - np.tanh(x @ w[:3]) ** 2)[:, None] * x, rtol=1e-12)
    np.testing.assert_allclose(j[:, 3:], 0.0)


# ---- writes, loops; the loop over the examples where a batch cannot hold them ----------

def written(x):  # writes into an array the function makes: one array per example
    y = np.zeros(2)
    y[0] = x[0]
    y[1] = np.sum(x)
    return y


def accumulated(w, x):  # a for loop carrying a number per example, a write in the loop
    t, y = 0.0, np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        t += np.tanh(w[i] * x[i]) ** 2
        y[i] = t
    return y * 2.0


def shared(w, x):  # writes into the argument every example shares: once per example
    for i in range(2):
        w[i] = w[i] + x[i]
    return np.sum(w)


def test_writes_and_loops_batch_without_a_loop_over_the_examples():
    x, w = randn(4, 3), randn(3)
    assert "while" not in optimized(vmap(written), x)
    assert_matches(vmap(written)(x), by_loop(written, (x,), 0))
    fn = vmap(accumulated, in_axes=(None, 0))
    assert_matches(fn(w, x), by_loop(accumulated, (w, x), (None, 0)))
    assert not loops_over_examples(optimized(fn, w, x))  # the function's own loop only


def test_what_a_batch_cannot_hold_loops_over_the_examples():
    w, w_loop, x = np.zeros(3), np.zeros(3), randn(4, 3)
    got = vmap(shared, in_axes=(None, 0))(w, x)
    np.testing.assert_allclose(got, [shared(w_loop, e) for e in x], rtol=1e-14)
    np.testing.assert_allclose(w, w_loop, rtol=1e-14)  # written once per example, in order
