"""Row groups (ir/passes/rowfuse.py, backend/llvm/rowwise.py): reductions over the last axes
fused with their consumers and run row by row. Checked against NumPy through the interpreter
(typed and final IR) and compiled code, over shapes (1 x n, n x 1, empty, 3-d), dtypes,
strided, reversed and transposed inputs (the fallback), NaN rows and broadcast errors; the
optimized dump shows the grouping; no leaks."""
import gc
import tracemalloc
import warnings

import numpy as np
import pytest
from array_checks import stages

from astjit import grad, jit, nn
from astjit.api import interpret_call
from astjit.ir.core import REGION_ROLES, STRUCTURAL_OPS
from astjit.ir.interp import interpret
from astjit.ir.kernels import Kernel, RowGroup, kernel_of, row_group_of
from astjit.ir.verify import IRVerificationError, verify_module

RNG = np.random.default_rng(5)


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def softmax_last(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def log_softmax(x):
    s = x - np.max(x, axis=1, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))


def center(x):
    return x - np.mean(x, axis=-1, keepdims=True)


def normalize(x):
    return x / np.sum(x, axis=1, keepdims=True)


def standardize(x):
    c = x - np.mean(x, axis=1, keepdims=True)
    return c / np.sqrt(np.mean(c * c, axis=1, keepdims=True) + 1e-5)


def center_planes(x):  # 3-d, two inner axes
    return x - np.mean(x, axis=(1, 2), keepdims=True)


def logsumexp(x):
    return nn.logsumexp(x, axis=1)


def nn_log_softmax(x):
    return nn.log_softmax(x, axis=-1)


def with_parts(x):  # members' values used outside: the group's outputs
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    s = np.sum(e, axis=1, keepdims=True)
    return e / s, e, s, m


def row_totals(x):  # a non-keepdims row reduction as the group's output
    return np.sum(x - np.max(x, axis=1, keepdims=True), axis=1)


def offset(x, y):  # y's shape decides whether the spaces agree
    return (y - np.max(x, axis=1, keepdims=True)) * 2.0


def scaled(x, a):  # a scalar operand
    return x * a / np.sum(x * a, axis=1, keepdims=True)


def columns(x):  # not row-wise: left alone
    return x / np.sum(x, axis=0, keepdims=True)


ROW_FUNCTIONS = [softmax, softmax_last, log_softmax, center, normalize, standardize, logsumexp,
                 nn_log_softmax, with_parts, row_totals, columns]
SHAPES = [(4, 7), (1, 9), (9, 1), (0, 5), (64, 33)]


def runners(fn, args):
    """The interpreter on the typed and on the final IR, and compiled code."""
    typed, final = stages(fn, args)
    return {"typed": lambda *a: interpret(typed, list(a)),
            "final": lambda *a: interpret(final, list(a)), "jit": jit(fn)}


def assert_same(want, got, where, rtol):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), where
        for k, (w, g) in enumerate(zip(want, got)):
            assert_same(w, g, f"{where}[{k}]", rtol)
        return
    want, got = np.asarray(want), np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{where}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True, err_msg=where)


def check_all(fn, *args, rtol=1e-12):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of an empty row
        want = fn(*args)
    for name, run in runners(fn, args).items():
        assert_same(want, run(*args), f"{fn.__name__} {name}", rtol)


@pytest.mark.parametrize("fn", ROW_FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_numpy(fn, shape):
    check_all(fn, RNG.standard_normal(shape))


@pytest.mark.parametrize("fn", [softmax, log_softmax, center, standardize], ids=lambda f: f.__name__)
def test_float32(fn):
    check_all(fn, RNG.standard_normal((6, 40)).astype(np.float32), rtol=2e-5)


def test_int_input():
    check_all(center, np.arange(20, dtype=np.int64).reshape(4, 5))
    check_all(normalize, np.arange(1, 21, dtype=np.int64).reshape(4, 5))


@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 1, 6), (0, 3, 4), (3, 0, 4)], ids=str)
def test_three_dims(shape):
    x = RNG.standard_normal(shape)
    check_all(softmax_last, x) if 0 not in shape[2:] else None
    check_all(center, x)
    check_all(center_planes, x)


@pytest.mark.parametrize("view", ["cols", "rows", "reversed", "transposed", "both"])
def test_strided_inputs(view):
    base = RNG.standard_normal((12, 20))
    x = {"cols": base[:, ::2], "rows": base[::3], "reversed": base[::-1, ::-1],
         "transposed": base.T, "both": base.T[::2, 1::3]}[view]
    for fn in (softmax, log_softmax, standardize, with_parts):
        check_all(fn, x)


def test_nan_and_inf_rows():
    x = RNG.standard_normal((5, 8))
    x[1, 3] = np.nan
    x[2, :] = -np.inf
    x[3, 0] = np.inf
    for fn in (softmax, log_softmax, center, with_parts, row_totals):
        check_all(fn, x)


def test_empty_rows_raise_as_numpy():
    f = jit(softmax)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        f(np.zeros((3, 0)))
    assert jit(normalize)(np.zeros((3, 0))).shape == (3, 0)


def test_spaces_that_differ_fall_back():
    x = RNG.standard_normal((4, 5))
    for y in (RNG.standard_normal((4, 5)), RNG.standard_normal((1, 5)), RNG.standard_normal((4, 1)),
              RNG.standard_normal(5), RNG.standard_normal((3, 4, 5))):
        check_all(offset, x, y)


def test_broadcast_errors_name_the_shapes():
    f = jit(offset)
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes "
                                         r"\(3, 5\) \(4, 1\)"):
        f(RNG.standard_normal((4, 5)), RNG.standard_normal((3, 5)))


def test_scalar_operand():
    check_all(scaled, RNG.standard_normal((5, 6)), 3.0)


# ---- the optimized dump ------------------------------------------------------------------------

def test_dump_shows_the_row_group():
    text = jit(softmax).ir(RNG.standard_normal((2, 3)), stage="optimized")
    assert "rowwise (%x) {ndim=2, rows=1, stages=('full', 'full', 'full')} {" in text
    assert "    rows (%x.1: array<f64, 2>) {" in text
    assert text.count("rowwise (") == 1 and text.count("fused (") == 3, text  # 3 members
    text = jit(center_planes).ir(RNG.standard_normal((2, 3, 4)), stage="optimized")
    assert "rowwise (%x) {ndim=3, rows=1," in text, text
    text = jit(softmax_last).ir(RNG.standard_normal((2, 3, 4)), stage="optimized")
    assert "rowwise (%x) {ndim=3, rows=2," in text, text
    text = jit(columns).ir(RNG.standard_normal((2, 3)), stage="optimized")
    assert "rowwise" not in text and "rows=" not in text, text


def test_rowwise_is_its_own_structural_op():
    """A row group is a `rowwise` node holding a RowGroup; its members are `fused` nodes
    holding Kernels; the verifier refuses the one attribute on the other op."""
    assert "rowwise" in STRUCTURAL_OPS and REGION_ROLES["rowwise"] == ("rows",)
    _, final = stages(softmax, (RNG.standard_normal((2, 3)),))
    (group,) = [n for n in final.entry_graph.nodes if n.op == "rowwise"]
    assert isinstance(group.attrs["rowwise"], RowGroup) and row_group_of(group).rows == 1
    assert kernel_of(group) is None
    members = [m for m in group.regions[0].nodes if m.op == "fused"]
    assert len(members) == 3 and all(isinstance(kernel_of(m), Kernel) for m in members)
    assert all(row_group_of(m) is None for m in members)
    group.attrs = {"fused": group.attrs.pop("rowwise")}
    with pytest.raises(IRVerificationError, match="'rowwise' needs attrs\\['rowwise'\\]"):
        verify_module(final)
    group.attrs = {"rowwise": members[0].attrs["fused"]}
    with pytest.raises(IRVerificationError, match="a RowGroup"):
        verify_module(final)


def test_an_outside_use_between_members_splits_the_group():
    def used_between(x):
        m = np.max(x, axis=1, keepdims=True)
        k = m.shape[0]  # a use of m outside the group, before its consumer
        return (x - m) * k
    text = jit(used_between).ir(RNG.standard_normal((2, 3)), stage="optimized")
    check_all(used_between, RNG.standard_normal((3, 4)))
    assert "rowwise (" in text or text.count("fused (") == 2, text


# ---- gradients ------------------------------------------------------------------------------

def mlp_xent(x, w1, b1, w2, b2, onehot):
    h = np.maximum(x @ w1 + b1, 0.0)
    z = h @ w2 + b2
    s = z - np.max(z, axis=1, keepdims=True)
    logp = s - np.log(np.sum(np.exp(s), axis=1, keepdims=True))
    return -np.sum(onehot * logp) / x.shape[0]


def mlp_args():
    x = RNG.standard_normal((8, 5))
    w1, b1 = RNG.standard_normal((5, 6)), RNG.standard_normal(6)
    w2, b2 = RNG.standard_normal((6, 4)), RNG.standard_normal(4)
    return x, w1, b1, w2, b2, np.eye(4)[RNG.integers(0, 4, 8)]


def softmax_rows_loss(z, w):
    return np.sum(softmax(z) * w)


@pytest.mark.parametrize("view", ["plain", "transposed"])
def test_gradient_of_a_softmax_loss(view):
    args = list(mlp_args())
    if view == "transposed":  # the forward and backward groups take their fallback
        args[5] = np.ascontiguousarray(args[5].T).T
    g = grad(mlp_xent, argnums=(1, 2, 3, 4))
    text = g.ir(*args, stage="optimized")
    assert text.count("rowwise (") == text.count("rows=1") == 2, text  # forward and backward
    assert "sum_to_like" in text.split("rowwise (")[2], text
    got = g(*args)
    for k, want in enumerate(interpret_call(g, tuple(args), {})):
        np.testing.assert_allclose(got[k], want, rtol=1e-10)
    h = 1e-6
    for k, i in enumerate((1, 2, 3, 4)):
        flat = args[i].reshape(-1)
        for j in range(0, flat.size, 3):
            plus = [a.copy() for a in args]
            minus = [a.copy() for a in args]
            plus[i].reshape(-1)[j] += h
            minus[i].reshape(-1)[j] -= h
            numeric = (mlp_xent(*plus) - mlp_xent(*minus)) / (2 * h)
            assert abs(got[k].reshape(-1)[j] - numeric) < 1e-5


def test_gradient_of_softmax_rows():
    z, w = RNG.standard_normal((6, 9)), RNG.standard_normal((6, 9))
    g = grad(softmax_rows_loss)
    assert g.ir(z, w, stage="optimized").count("rowwise (") == 2
    p = softmax(z)
    want = p * (w - np.sum(w * p, axis=1, keepdims=True))
    np.testing.assert_allclose(g(z, w), want, rtol=1e-10)
    np.testing.assert_allclose(g(z.T.copy().T, w), want, rtol=1e-10)


# ---- no leaks -------------------------------------------------------------------------------

def traced(calls, count=40):
    for call in calls:
        call()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(count):
            for call in calls:
                call()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


def test_no_leaks():
    x = RNG.standard_normal((64, 32))
    fs = {f: jit(f) for f in (softmax, log_softmax, standardize, with_parts, row_totals, offset)}
    empty = jit(softmax)
    loss = grad(softmax_rows_loss)

    def failing():
        with pytest.raises(ValueError):
            empty(np.zeros((4, 0)))
        with pytest.raises(ValueError):
            fs[offset](x, np.zeros((3, 32)))
    calls = [lambda: fs[softmax](x), lambda: fs[log_softmax](x.T),  # row loop, fallback
             lambda: fs[standardize](x), lambda: fs[with_parts](x), lambda: fs[row_totals](x),
             lambda: fs[offset](x, x[:, :1]), failing,
             lambda: loss(x, x), lambda: loss(x.T, x.T)]
    assert traced(calls) < 64 * 32 * 8  # less than one array: nothing per call
