"""Reverse mode through scatter writes (issue 14): `x[idx] = v` (NumPy's: the last of
repeated indices wins, so only its value reaches the result), `x[idx] += v` (the same,
non-accumulating), `np.add.at` (accumulating), `x[mask] = array`, `x[x > 0] = 0`, mixed
basic and advanced indices. Central finite differences, compiled and interpreted, f64
and f32, hypothesis-made shapes and indices (repeated, negative; masks all true and all
false); JAX's gradients where its semantics are NumPy's (unique indices, add.at, masks);
vjp, jacrev, hessian and jvp; the arrays passed in left as they were."""
import numpy as np
import pytest
from array_checks import assert_gradient_of_writes, assert_interpreter_agrees_on_gradient, float_copies
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import DifferentiationError, grad, hessian, jacrev, jvp, value_and_grad, vjp


def weighted(y):
    """A loss that tells every element of y apart."""
    flat = y.ravel()
    return np.sum(np.sin(flat) * np.linspace(0.5, 2.0, flat.shape[0]))


# ---- the corpus ------------------------------------------------------------------------


def set_repeated(x, v, idx):             # the last of repeated indices wins
    y = x * 1.5
    y[idx] = v * v
    return weighted(y)


def set_number(x, s, idx):               # one number written at every place
    y = np.cos(x)
    y[idx] = s * 2.0
    return weighted(y)


def set_rows(a, v, idx):                 # whole rows, v broadcast along the rows
    y = a * 1.0
    y[idx] = v
    return weighted(y)


def set_rows_by_matrix(a, v, idx):       # a 2-d index array; v of the gather's shape
    y = a * a
    y[idx] = v
    return weighted(y)


def set_mixed(a, v, idx):                # y[1:, idx]: a slice, then the index
    y = a * 2.0
    y[1:, idx] = v
    return weighted(y)


def set_apart(t, v, i, j):               # t[i, :, j]: indices apart, their axis leads
    y = t * 1.0
    y[i, :, j] = v
    return weighted(y)


def set_int_and_array(a, v, idx):        # an int is an advanced index too
    y = a * 1.0
    y[1, idx] = v
    return weighted(y)


def iadd_repeated(x, v, idx):            # x[idx] += v: read, add, write once per place
    y = x * 1.0
    y[idx] += v * x[:v.shape[0]]
    return weighted(y)


def add_at(x, v, idx):                   # np.add.at: every occurrence adds
    y = x * 1.0
    np.add.at(y, idx, v * v)
    return weighted(y)


def add_at_number(x, s, idx):
    y = x * 1.0
    np.add.at(y, idx, s)
    return weighted(y)


def mask_array(x, v):                    # y[m] = v[m], m from the values
    y = x * 1.0
    m = x > 0.2
    y[m] = v[m] * 3.0
    return weighted(y)


def mask_2d(a, b):
    y = a * 1.0
    m = a > 0.0
    y[m] = b[m]
    return weighted(y)


def mask_zero(x):                        # x[x > 0] = 0 (a `where`)
    y = x * 1.0
    y[y > 0] = 0
    return weighted(y)


def into_argument(x, v, idx):            # the gradient is with respect to x on entry
    x[idx] = v * x[0]
    return weighted(x)


def written_then_read(x, v, idx):        # a gather after the scatter reads the new values
    y = x * 1.0
    y[idx] = v
    z = y[idx[::-1]]
    return weighted(y) + np.sum(z * z)


def read_before_written(x, v, idx):      # y * w read before the write: y is put back
    y = x * 1.0
    w = y * y
    y[idx] = v
    return weighted(y) + np.sum(w * y)


def twice(x, v, idx):                    # two scatters into one array
    y = x * 1.0
    y[idx] = v
    y[idx[:2]] = v[1:3] * 2.0
    return weighted(y)


V6 = np.array([0.3, -0.8, 1.1, 0.5, -0.2, 0.9])
V3 = np.array([0.7, -1.3, 0.4])
M34 = np.linspace(-1.05, 1.15, 12).reshape(3, 4)
T234 = np.linspace(-0.9, 1.3, 24).reshape(2, 3, 4)
IDX = np.array([1, -5, 3])               # 1 and -5 name one place: the second wins
CASES = [
    (set_repeated, (V6, V3, IDX), (0, 1)),
    (set_number, (V6, 0.6, IDX), (0, 1)),
    (set_rows, (M34, np.array([0.1, 0.2, -0.3, 0.4]), np.array([2, 0, -1])), (0, 1)),
    (set_rows_by_matrix, (M34, np.linspace(0.1, 1.0, 16).reshape(2, 2, 4),
                          np.array([[0, 2], [2, 1]])), (0, 1)),
    (set_mixed, (M34, np.array([[0.5, -0.5, 0.6], [0.7, 0.1, 0.2]]), np.array([3, 0, 3])),
     (0, 1)),
    (set_apart, (T234, np.array([[0.5, 0.6, 0.7], [0.1, 0.2, 0.3]]), np.array([1, -1]),
                 np.array([0, 0])), (0, 1)),
    (set_int_and_array, (M34, np.array([0.5, 0.25]), np.array([2, 2])), (0, 1)),
    (iadd_repeated, (V6, V3, IDX), (0, 1)),
    (add_at, (V6, V3, IDX), (0, 1)),
    (add_at_number, (V6, 0.6, np.array([2, 2, -1])), (0, 1)),
    (mask_array, (V6, V6[::-1].copy()), (0, 1)),
    (mask_2d, (M34, M34[::-1].copy()), (0, 1)),
    (mask_zero, (V6,), (0,)),
    (into_argument, (V6, V3, IDX), (0, 1)),
    (written_then_read, (V6, V3, IDX), (0, 1)),
    (read_before_written, (V6, V3, IDX), (0, 1)),
    (twice, (V6, V3, IDX), (0, 1)),
]
IDS = [c[0].__name__ for c in CASES]


def copies(args):
    return float_copies(args, np.float64)


def check_gradient(fn, args, argnums, dtype=np.float64):
    return assert_gradient_of_writes(grad, fn, args, argnums, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn,args,argnums", CASES, ids=IDS)
def test_gradient_matches_finite_differences(fn, args, argnums, dtype):
    check_gradient(fn, args, argnums, dtype)


@pytest.mark.parametrize("fn,args,argnums", CASES, ids=IDS)
def test_interpreter_agrees(fn, args, argnums):
    assert_interpreter_agrees_on_gradient(grad, fn, args, argnums)


@pytest.mark.parametrize("fn,args,argnums", CASES[:3] + CASES[8:9], ids=IDS[:3] + IDS[8:9])
def test_value_is_the_forward_result(fn, args, argnums):
    value, _ = value_and_grad(fn, argnums=argnums)(*copies(args))
    assert value == pytest.approx(fn(*copies(args)), rel=1e-12)


def test_last_write_wins_exactly():
    """Of a place written three times only the last value gets the adjoint; the others,
    and what was there before, get zero."""
    def f(x, v):
        y = x * 1.0
        y[np.array([2, 2, -1, 2])] = v
        return np.sum(y * np.array([1.0, 2.0, 3.0]))
    gx, gv = grad(f, argnums=(0, 1))(np.ones(3), np.ones(4))
    np.testing.assert_array_equal(gx, [1.0, 2.0, 0.0])
    np.testing.assert_array_equal(gv, [0.0, 0.0, 0.0, 3.0])


def test_out_of_bounds_index_raises_as_numpy():
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        grad(set_repeated)(V6.copy(), V3.copy(), np.array([0, 6, 1]))


# ---- hypothesis: shapes, repeated and negative indices, masks ----------------------------

@st.composite
def scatter_cases(draw):
    n = draw(st.integers(1, 7))
    k = draw(st.integers(1, 9))
    idx = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k)))
    x = np.array(draw(st.lists(st.floats(-2, 2), min_size=n, max_size=n)))
    v = np.array(draw(st.lists(st.floats(-2, 2), min_size=k, max_size=k)))
    trailing = draw(st.integers(0, 2))
    if trailing:
        x = np.repeat(x[:, None], trailing, axis=1) * np.linspace(0.5, 1.5, trailing)
        v = np.repeat(v[:, None], trailing, axis=1) - 0.25
    return x, v, idx


@settings(max_examples=30, deadline=None)
@given(scatter_cases())
def test_set_and_add_at_match_finite_differences(case):
    x, v, idx = case
    for fn in (set_repeated, add_at):
        check_gradient(fn, (x, v, idx), (0, 1))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["all", "none", "some"]),
       st.integers(0, 2 ** 16))
def test_masks_match_finite_differences(m, n, kind, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.1, 1.0, (m, n)) * (1.0 if kind == "all" else -1.0)
    if kind == "some":
        a *= rng.choice([-1.0, 1.0], (m, n))
    got = check_gradient(mask_2d, (a, rng.uniform(-1, 1, (m, n))), (0, 1))
    selected = a > 0
    assert np.all(got[0][selected] == 0) and np.all(got[1][~selected] == 0)


# ---- against JAX, where its semantics are NumPy's ----------------------------------------

def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def jax_weighted(y):
        flat = y.ravel()
        return jnp.sum(jnp.sin(flat) * jnp.linspace(0.5, 2.0, flat.shape[0]))

    unique = np.array([4, -1, 0])
    pairs = [
        (set_repeated, lambda x, v: jax_weighted((x * 1.5).at[unique].set(v * v))),
        (add_at, lambda x, v: jax_weighted(x.at[IDX].add(v * v))),
    ]
    for fn, jfn in pairs:
        index = unique if fn is set_repeated else IDX
        got = grad(fn, argnums=(0, 1))(V6.copy(), V3.copy(), index)
        want = jax.grad(jfn, argnums=(0, 1))(V6, V3)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-12)
    got = grad(mask_2d, argnums=(0, 1))(M34.copy(), M34[::-1].copy())
    want = jax.grad(lambda a, b: jax_weighted(jnp.where(a > 0, b, a)), argnums=(0, 1))(
        M34, M34[::-1])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-12)


# ---- the other transforms ----------------------------------------------------------------

def scatter_vector(x, v):
    y = x * x
    y[np.array([0, 2, 0])] = v * 2.0
    return np.sin(y)


def test_vjp_and_jacrev_against_jacobian_by_differences():
    x, v = V6[:4].copy(), V3.copy()
    jx, jv = jacrev(scatter_vector, argnums=(0, 1))(x, v)
    h = 1e-6
    for j, (arg, got) in enumerate(((x, jx), (v, jv))):
        want = np.empty_like(got)
        for k in range(arg.shape[0]):
            up, down = [x.copy(), v.copy()], [x.copy(), v.copy()]
            up[j][k] += h
            down[j][k] -= h
            want[:, k] = (scatter_vector(*up) - scatter_vector(*down)) / (2 * h)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    out, pullback = vjp(scatter_vector, x, v)
    np.testing.assert_allclose(out, scatter_vector(x, v))
    g = np.linspace(-1, 1, 4)
    gx, gv = pullback(g)
    np.testing.assert_allclose(gx, g @ jx, rtol=1e-12)
    np.testing.assert_allclose(gv, g @ jv, rtol=1e-12)


def test_hessian_and_jvp():
    x, v = V6.copy(), V3.copy()
    hx = hessian(set_repeated)(x, v, IDX)
    gradient = grad(set_repeated)
    h = 1e-5
    want = np.empty((6, 6))
    for k in range(6):
        up, down = x.copy(), x.copy()
        up[k] += h
        down[k] -= h
        want[:, k] = (gradient(up, v, IDX) - gradient(down, v, IDX)) / (2 * h)
    np.testing.assert_allclose(hx, want, rtol=1e-5, atol=1e-7)
    dx, dv = np.linspace(0.1, 0.6, 6), np.array([0.3, -0.2, 0.5])
    value, derivative = jvp(set_repeated, (x, v, IDX), (dx, dv, np.zeros(3, dtype=IDX.dtype)))
    gx, gv = grad(set_repeated, argnums=(0, 1))(x, v, IDX)
    assert value == pytest.approx(set_repeated(x, v, IDX))
    assert derivative == pytest.approx(gx @ dx + gv @ dv, rel=1e-10)


def scatter_in_loop(x, v, idx):
    y = x * 1.0
    for _ in range(2):
        y[idx] = v
    return np.sum(y)


def test_scatter_inside_a_loop_is_refused_clearly():
    with pytest.raises(DifferentiationError, match="index array or mask") as info:
        grad(scatter_in_loop)(V6.copy(), V3.copy(), IDX)
    assert "test_grad_scatter.py" in str(info.value)
