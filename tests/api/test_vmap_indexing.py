"""vmap of integer-array indexing (gathers, scatters, np.add.at) and of their gradients:
whole-batch programs, no loop over the examples, for a batched array with unbatched
indices, batched indices into an unbatched array, both, indices after a slice and indices
apart; against a Python loop over the examples; `hessian` of a gather batches its basis;
a scatter into an array the function makes batches it, into an argument every example
shares loops."""
import numpy as np
import pytest

from astjit import grad, hessian, jit, vmap

rng = np.random.default_rng(11)


def by_loop(fn, args, in_axes):
    n = next(a.shape[0] for a, ax in zip(args, in_axes) if ax is not None)
    return np.stack([fn(*[a if ax is None else a[k] for a, ax in zip(args, in_axes)])
                     for k in range(n)])


def lookup(x, idx):                  # repeated and negative indices add up in the gradient
    return np.sum(np.sin(x[idx]) * np.arange(1.0, idx.shape[0] + 1))


def after_slice(a, idx):             # a[1:, idx]: the indices at axis 1 of the example
    return np.sum(np.tanh(a[1:, idx]) ** 2)


def apart(t, i, j):                  # t[i, :, j]: the indexed axes lead the result
    return np.sum(t[i, :, j] ** 3)


def table_rows(E, idx, y):           # rows of a table by a matrix of indices
    return (np.sum(np.tanh(E[idx])) - y) ** 2


X = rng.standard_normal((5, 6))
IDX = rng.integers(-6, 6, (5, 4))
A = rng.standard_normal((5, 3, 4))
J = rng.integers(-4, 4, (5, 2))
T = rng.standard_normal((5, 2, 3, 4))
II, JJ = rng.integers(-2, 2, (5, 3)), rng.integers(0, 4, (5, 3))
E, R, Y = rng.standard_normal((7, 3)), rng.integers(-7, 7, (5, 2, 2)), rng.standard_normal(5)
CASES = [
    (lookup, (X, IDX[0]), (0, None)),
    (lookup, (X, IDX), (0, 0)),
    (lookup, (X[0], IDX), (None, 0)),
    (after_slice, (A, J), (0, 0)),
    (after_slice, (A, J[0]), (0, None)),
    (after_slice, (A[0], J), (None, 0)),
    (apart, (T, II, JJ), (0, 0, 0)),
    (apart, (T, II[0], JJ), (0, None, 0)),
    (apart, (T[0], II, JJ[0]), (None, 0, None)),
    (table_rows, (E, R, Y), (None, 0, 0)),
]
IDS = [f"{c[0].__name__}-{''.join('b' if a is not None else 'u' for a in c[2])}" for c in CASES]


@pytest.mark.parametrize("fn,args,in_axes", CASES, ids=IDS)
@pytest.mark.parametrize("transform", [lambda f: f, grad], ids=["value", "grad"])
def test_gathers_batch_without_a_loop(fn, args, in_axes, transform):
    f = transform(fn)
    batched = vmap(f, in_axes=in_axes)
    np.testing.assert_allclose(batched(*args), by_loop(f, args, in_axes), rtol=1e-12,
                               atol=1e-12)
    assert "while" not in jit(batched).ir(*args, stage="optimized")


def test_out_of_bounds_index_of_one_example_raises():
    bad = IDX.copy()
    bad[3, 1] = 6
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        vmap(lookup, in_axes=(0, 0))(X, bad)


def rows_of(E, idx):
    return E[idx]


def test_a_batch_of_indices_into_one_table_is_one_gather():
    """No example numbers as a second index, no copy of the table per example: the batch of
    indices gathers from the table once (int32 ones too); one example's bad index raises."""
    batched = vmap(rows_of, in_axes=(None, 0))
    text = jit(batched).ir(E, R, stage="optimized")
    assert "array_arange" not in text and "array_broadcast_to %E" not in text
    for idx in (R, R.astype(np.int32), R[:, ::-1, 1:]):
        np.testing.assert_array_equal(batched(E, idx), E[idx])
    bad = R.copy()
    bad[2, 1, 0] = -8
    with pytest.raises(IndexError, match="index -8 is out of bounds for axis 0 with size 7"):
        batched(E, bad)


def test_hessian_of_a_gather_batches_its_basis():
    idx = np.array([0, 3, -1, 3])
    assert "while" not in jit(hessian(lookup)).ir(X[0], idx, stage="optimized")
    weights = np.zeros(6)
    np.add.at(weights, idx, np.arange(1.0, 5.0))
    np.testing.assert_allclose(hessian(lookup)(X[0], idx), np.diag(-np.sin(X[0]) * weights),
                               rtol=1e-12, atol=1e-12)


# ---- scatters: into a batched array ------------------------------------------------------

def set_repeated(x, v, idx):         # the last of repeated indices wins, per example
    y = x * 1.5
    y[idx] = v * v
    return np.sum(np.sin(y) * np.arange(1.0, y.shape[0] + 1))


def set_number(x, s, idx):
    y = np.cos(x)
    y[idx] = s * 2.0
    return np.sum(np.sin(y) * np.arange(1.0, y.shape[0] + 1))


def add_at(x, v, idx):
    y = x * 1.0
    np.add.at(y, idx, v * v)
    return np.sum(np.sin(y) * np.arange(1.0, y.shape[0] + 1))


def set_after_slice(a, v, idx):
    y = a * 1.0
    y[1:, idx] = v
    return np.sum(np.tanh(y))


V, S = rng.standard_normal((5, 3)), rng.standard_normal(5)
K = np.array([[1, -5, 3], [0, 0, 0], [5, -1, 2], [2, 3, 2], [-6, 4, 4]])
VA = rng.standard_normal((5, 2, 2))
SCATTERS = [
    (set_repeated, (X, V, K[0]), (0, 0, None)),
    (set_repeated, (X, V, K), (0, 0, 0)),
    (set_repeated, (X, V[0], K), (0, None, 0)),
    (set_number, (X, S, K), (0, 0, 0)),
    (add_at, (X, V, K), (0, 0, 0)),
    (add_at, (X, V[0], K[0]), (0, None, None)),
    (set_after_slice, (A, VA, J), (0, 0, 0)),
    (set_after_slice, (A, VA[0], J[0]), (0, None, None)),
]


def stacked(f, args, in_axes):
    parts = [f(*[a if ax is None else a[k] for a, ax in zip(args, in_axes)]) for k in range(5)]
    return tuple(np.stack(p) for p in zip(*parts))


@pytest.mark.parametrize("fn,args,in_axes", SCATTERS,
                         ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(SCATTERS)])
def test_scatters_and_their_gradients_batch_without_a_loop(fn, args, in_axes):
    np.testing.assert_allclose(vmap(fn, in_axes=in_axes)(*args), by_loop(fn, args, in_axes),
                               rtol=1e-12, atol=1e-12)
    g = grad(fn, argnums=(0, 1))
    for got, want in zip(vmap(g, in_axes=in_axes)(*args), stacked(g, args, in_axes)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert "while" not in jit(vmap(g, in_axes=in_axes)).ir(*args, stage="optimized")


def shared_destination(x, v, idx):   # y made by the function: one per example
    y = x * 1.0
    y[idx] = v
    return y


def shared_argument(x, v, idx):      # x itself, every example's: written in turn
    x[idx] = v
    return x * 1.0


def test_scatter_into_an_array_the_function_makes_batches_it_per_example():
    args, in_axes = (X[0], V, K), (None, 0, 0)
    text = jit(vmap(shared_destination, in_axes=in_axes)).ir(*args, stage="optimized")
    assert "while" not in text
    np.testing.assert_array_equal(vmap(shared_destination, in_axes=in_axes)(*args),
                                  by_loop(shared_destination, args, in_axes))
    x, x_loop = X[0].copy(), X[0].copy()
    got = vmap(shared_argument, in_axes=in_axes)(x, V, K)
    np.testing.assert_array_equal(got, by_loop(shared_argument, (x_loop, V, K), in_axes))
    np.testing.assert_array_equal(x, x_loop)
