"""The first tier: array nests compiled in their fast versions only, the general tier on demand.

A function that writes into none of its arguments is first compiled with only
the fast version of each nest (unit strides, the row layout, a reusable
buffer); a call that needs another version leaves it and runs on the general
tier, compiled then and used from then on (codegen.FunctionEmitter.fast_only).
These tests check that the way out is invisible: same results and exceptions
as NumPy for calls on either side of it, no leak, and that only calls needing
it take it.
"""
from __future__ import annotations

import numpy as np
import pytest
from array_checks import assert_no_leaks
from mlp_case import mlp_loss

from astjit import grad, jit, stop_gradient, value_and_grad
from astjit.api import Dispatcher
from astjit.ir.passes.fuse import _known_ones
from astjit.ir.symbolic_shapes import symbolic_shapes


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def scaled(x, y):
    return np.sin(x) * 2.0 + y


def fill(out, x):
    out[:] = x * 2.0
    return out


def compiled_of(f, *args):
    values = f.dispatcher.signature.bind(args, {})
    return f.dispatcher.specializations[f.dispatcher.signature.types_of(values)].compiled


def test_contiguous_calls_stay_on_the_first_tier():
    f = jit(softmax)
    x = np.random.default_rng(0).standard_normal((6, 5))
    np.testing.assert_allclose(f(x), softmax(x), rtol=1e-13)
    assert not compiled_of(f, x).general
    np.testing.assert_allclose(f(x[::2]), softmax(x[::2]), rtol=1e-13)  # rows apart: still unit
    assert not compiled_of(f, x).general


@pytest.mark.parametrize("layout", ["transposed", "strided", "broadcast"])
def test_a_call_the_first_tier_does_not_fit_runs_on_the_general_tier(layout):
    f = jit(scaled)
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    np.testing.assert_allclose(f(x, y), scaled(x, y), rtol=1e-14)
    first = compiled_of(f, x, y)
    assert not first.general and "Deoptimize" in {site.exc for site in first.errors}
    other = {"transposed": rng.standard_normal((6, 4)).T, "strided": rng.standard_normal((4, 12))[:, ::2],
             "broadcast": rng.standard_normal((4, 1))}[layout]
    np.testing.assert_allclose(f(other, y), scaled(other, y), rtol=1e-14)
    general = compiled_of(f, x, y)
    assert general.general and general is not first
    assert len(general.llvm_ir) > len(first.llvm_ir)
    # from then on every call of the signature runs the general tier, which has both versions
    np.testing.assert_allclose(f(x, y), scaled(x, y), rtol=1e-14)
    np.testing.assert_allclose(f(other, y), scaled(other, y), rtol=1e-14)
    assert compiled_of(f, x, y) is general



def row_sums(x):
    return np.sum(x * 2.0, axis=1)


@pytest.mark.parametrize("shape", [(5, 1), (1, 1), (1,)])
@pytest.mark.parametrize("fn", [scaled, row_sums])
def test_a_last_axis_of_length_one_stays_on_the_first_tier(fn, shape):
    """Such an axis's stride reads as 0 (`kernel.space_strides`): the nest's one point per
    row is the same at any stride, so the call fits the unit-stride version."""
    f = jit(fn)
    rng = np.random.default_rng(2)
    args = (rng.standard_normal(shape), rng.standard_normal(shape))[:fn.__code__.co_argcount]
    if fn is row_sums and len(shape) == 1:
        args = (args[0].reshape(1, 1),)
    np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-14)
    assert not compiled_of(f, *args).general


def middle(x):
    return np.median(x)


def test_a_median_runs_on_the_first_tier():
    """Its middle elements are reductions over one-element views of the sorted array: no
    call leaves for a general tier (where the views' layouts fold to contiguous, the one
    compiled has no way out)."""
    f = jit(middle)
    entries = []
    for n in (7, 8, 1):
        x = np.random.default_rng(n).standard_normal(n)
        assert f(x) == np.median(x)
        entries.append(compiled_of(f, x))
    assert all(entry is entries[0] for entry in entries)


def trace(a):
    return np.trace(a)


def diagonal_terms(a, v):
    return np.diag(a) * 2.0 + v


def doubled_diagonal(a):
    return np.diag(a) * 2.0


@pytest.mark.parametrize("fn", [trace, diagonal_terms, doubled_diagonal])
def test_a_diagonal_is_read_at_its_stride_in_the_first_compile(fn, monkeypatch):
    """np.diag of a matrix steps by a row and a column, so its nests read it at that
    stride in the first tier too (`FunctionEmitter.strided`): no call leaves for the
    general tier, not even one whose diagonal happens to be unit-stride (a broadcast
    row's). Where nothing else steps along the last axis (np.trace), the nest has no
    fast version to leave out: one compile, no way out; nor does its reduction call the
    runtime's whole-array reduction, which a first tier would leave on every call."""
    left = []
    general = Dispatcher.call_general
    monkeypatch.setattr(Dispatcher, "call_general",
                        lambda self, *args: left.append(args) or general(self, *args))
    rng = np.random.default_rng(3)
    f = jit(fn)
    first = None
    for a in (rng.standard_normal((5, 4)), rng.standard_normal((4, 5))[:, ::-1],
              np.broadcast_to(rng.standard_normal(4), (4, 4)), rng.standard_normal((1, 1))):
        args = (a, rng.standard_normal(min(a.shape)))[:fn.__code__.co_argcount]
        np.testing.assert_allclose(f(*args), fn(*args), rtol=1e-14)
        first = first or compiled_of(f, *args)
        assert compiled_of(f, *args) is first
    assert not left, "a call left for the general tier"
    assert (fn is not diagonal_terms) == ("Deoptimize" not in {site.exc for site in first.errors})


def inverse_squares(a, b):
    s = 0.0
    for k in range(a, b):
        s += 1.0 / (k * k)
    return s


def stepped_sum(a, b):
    s = 0
    for k in range(a, b):
        s += k * 3 - (k & 7)
    return s


def test_a_counted_loop_leaves_the_first_tier_where_its_counter_is_not_small():
    """A flat counted loop's first tier has only the chunks told their counter stays in
    [1, 2^31 - 1] (interrupts.LongTrip.assume_small, codegen.emit_while); a call counting
    from below 1 or past 2^31 - 1 runs on the general tier, with the same results and
    exceptions as CPython."""
    f, g = jit(inverse_squares), jit(stepped_sum)
    assert f(1, 1000) == inverse_squares(1, 1000) and f(5, 3) == inverse_squares(5, 3)
    assert g(1, 1000) == stepped_sum(1, 1000)
    first = compiled_of(f, 1, 1000)
    assert not first.general and "Deoptimize" in {site.exc for site in first.errors}
    assert not compiled_of(g, 1, 1000).general
    with pytest.raises(ZeroDivisionError):  # 1.0 / (0 * 0), as CPython raises it
        f(0, 10)
    general = compiled_of(f, 1, 1000)
    assert general.general and len(general.llvm_ir) > len(first.llvm_ir)
    assert f(1, 1000) == inverse_squares(1, 1000) and f(-3, -1) == inverse_squares(-3, -1)
    top = 2 ** 31
    for a, b in ((-5, 20), (top - 6, top + 6), (top + 3, top + 9), (7, 40)):
        assert g(a, b) == stepped_sum(a, b)
    assert compiled_of(g, 1, 1000).general


def horner(x, n):
    s = 0.0
    for k in range(n):
        s = s * x + 1.0 / (k + 1)
    return s


def d_horner(x, n):  # horner's derivative by hand
    s = ds = 0.0
    for k in range(n):
        s, ds = s * x + 1.0 / (k + 1), ds * x + s
    return ds


def test_a_loop_counting_from_zero_leaves_the_first_tier_where_it_runs_long():
    """A first tier's flat counted loop whose counter is not known to be small (`range(n)`
    counts from 0; a gradient's reverse sweep counts down) has only its unchecked short
    version (codegen.emit_while); a call running it more than 2^20 iterations runs on the
    general tier, in checked chunks, with the same results."""
    f, g = jit(horner), jit(grad(horner))
    for n in (0, 1, 1000):
        assert f(0.5, n) == horner(0.5, n)
        assert g(0.5, n) == pytest.approx(d_horner(0.5, n), rel=1e-13, abs=0.0)
    first, first_gradient = compiled_of(f, 0.5, 1000), compiled_of(g, 0.5, 1000)
    assert not first.general and "Deoptimize" in {site.exc for site in first.errors}
    assert not first_gradient.general
    long = (1 << 20) + 5
    assert f(0.5, long) == horner(0.5, long)
    assert g(0.5, long) == pytest.approx(d_horner(0.5, long), rel=1e-13, abs=0.0)
    assert compiled_of(f, 0.5, 1000).general and compiled_of(g, 0.5, 1000).general
    assert f(0.5, 1000) == horner(0.5, 1000)


def test_the_row_group_leaves_for_a_transposed_input():
    f = jit(softmax)
    x = np.random.default_rng(2).standard_normal((5, 7))
    f(x)
    assert "rows.head.1" not in compiled_of(f, x).llvm_ir  # no strided row loop
    np.testing.assert_allclose(f(x.T.copy().T), softmax(x), rtol=1e-13)
    np.testing.assert_allclose(f(np.asfortranarray(x)), softmax(x), rtol=1e-13)
    assert compiled_of(f, x).general


def test_errors_before_the_way_out_are_raised_as_numpy_raises():
    f = jit(scaled)
    x = np.ones((3, 4))
    f(x, x)
    with pytest.raises(ValueError, match=r"shapes \(3, 4\) \(5, 4\)"):
        f(x.T.copy().T, np.ones((5, 4)))


def test_a_function_writing_into_an_argument_has_the_general_tier_only():
    f = jit(fill)
    out, x = np.zeros((3, 4)), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(f(out, x), 2 * x)
    assert compiled_of(f, out, x).general
    np.testing.assert_array_equal(f(np.zeros((4, 3)).T, x), 2 * x)


def test_leaving_the_first_tier_releases_what_the_call_made():
    f = jit(scaled)
    x = np.random.default_rng(3).standard_normal((4, 6))
    f(x, x)
    t = x.T.copy().T
    assert_no_leaks(lambda: f(t, x), [t, x])


def mlp_step(w1, b1, w2, b2, x, onehot):
    return value_and_grad(mlp_loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, onehot)


def test_a_training_step_on_contiguous_data_never_leaves_the_first_tier():
    """The keepdims results a gradient broadcasts back ((batch, 1) arrays) are known to have
    length 1 there, through stop_gradient, sum_to_like and elementwise ops, so their nests stay
    unit-stride; and a (batch, 1) buffer is never chosen to hold a (batch, classes) result."""
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((12, 8)), np.zeros(8), rng.standard_normal((8, 3)), np.zeros(3),
            rng.random((5, 12)), np.eye(3)[[0, 1, 2, 0, 1]])
    f = jit(mlp_step)
    value, grads = f(*args)
    want_value, want_grads = mlp_step(*args)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-14)
    assert not compiled_of(f, *args).general


def keepdims_chain(x, y):
    m = stop_gradient(np.max(x, axis=1, keepdims=True))
    d = m * 2.0 + np.sum(y, axis=1, keepdims=True)
    return x - d, d - y


def test_known_length_one_axes_follow_stop_gradient_and_elementwise_ops():
    from array_checks import stages

    typed, _ = stages(keepdims_chain, (np.ones((3, 4)), np.ones((3, 4))))
    graph = typed.entry_graph
    ones = _known_ones(symbolic_shapes(graph))
    by_op = {n.op: n.outputs[0] for n in graph.nodes}
    assert ones[by_op["stop_gradient"]] == (1,)
    assert ones[by_op["add"]] == (1,)  # m * 2 + sum(y, keepdims): both (3, 1)
    assert by_op["sub"] not in ones  # d - y: (3, 4)


def weighted(x, y):
    return np.sum(x * y)


def test_a_gradient_broadcasting_at_run_time_leaves_the_first_tier():
    """`sum_to_like` onto an argument of the adjoint's ndim is a pass-through in the first
    tier; a (3, 1) argument broadcast at run time needs the sum of the general tier."""
    f = jit(value_and_grad(weighted, argnums=(0, 1)))
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    _, (gx, gy) = f(x, y)
    np.testing.assert_allclose(gy, x, rtol=1e-15)
    assert not compiled_of(f, x, y).general
    column = rng.standard_normal((3, 1))
    value, (gx, gy) = f(x, column)
    np.testing.assert_allclose(value, np.sum(x * column), rtol=1e-14)
    np.testing.assert_allclose(gx, np.broadcast_to(column, (3, 4)), rtol=1e-15)
    np.testing.assert_allclose(gy, x.sum(axis=1, keepdims=True), rtol=1e-14)
    assert compiled_of(f, x, y).general


def biased(x, b):
    return np.sum(np.tanh(x + b) * x)


def biased_transposed(x, b, w):
    return np.sum((x + b).T * w)  # the adjoint of `x + b` is a transposed view of w


@pytest.mark.parametrize("case", ["contiguous", "row", "column", "strided adjoint"])
def test_a_bias_gradient_sums_the_leading_axes_in_either_version(case):
    """`sum_to_like` onto a bias (the sum over the batch axis): a unit-stride version for
    a contiguous adjoint (vectorized), the general one where the adjoint is strided or
    the bias broadcasts along an axis of its own; the same sums either way."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 5))
    if case == "strided adjoint":
        b, w = rng.standard_normal(5), rng.standard_normal((5, 6))
        _, gb = jit(value_and_grad(biased_transposed, argnums=1))(x, b, w)
        np.testing.assert_allclose(gb, w.sum(axis=1), rtol=1e-13)
        return
    b = {"contiguous": rng.standard_normal(5), "row": rng.standard_normal((1, 5)),
         "column": rng.standard_normal((6, 1))}[case]
    value, gb = jit(value_and_grad(biased, argnums=1))(x, b)
    t = np.tanh(x + b)
    summed = (0,) if b.ndim == 1 else tuple(k for k in range(2) if b.shape[k] == 1)
    expected = np.sum((1 - t * t) * x, axis=summed, keepdims=b.ndim == 2)
    np.testing.assert_allclose(value, biased(x, b), rtol=1e-13)
    np.testing.assert_allclose(gb, expected, rtol=1e-12)
    assert gb.shape == b.shape


def accumulate(x, w, n):
    acc = w * 0.0
    for _ in range(n):
        acc = np.tanh(acc * w + x)
    return np.sum(acc)


def test_leaving_the_first_tier_inside_a_differentiated_loop():
    """A gradient whose loop carries arrays on a tape leaves part-way through its first
    iteration for a transposed argument: the tape is freed, the general tier's gradient is
    the finite difference's, and nothing leaks."""
    from array_checks import central_difference

    f = jit(value_and_grad(accumulate, argnums=(0, 1)))
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    f(x, w, 3)
    assert not compiled_of(f, x, w, 3).general
    xt = rng.standard_normal((4, 3)).T
    value, (gx, gw) = f(xt, w, 3)
    assert compiled_of(f, x, w, 3).general
    np.testing.assert_allclose(value, accumulate(xt, w, 3), rtol=1e-13)
    np.testing.assert_allclose(gx, central_difference(accumulate, (xt, w, 3), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw, central_difference(accumulate, (xt, w, 3), 1), rtol=1e-6, atol=1e-8)
    assert_no_leaks(lambda: f(xt, w, 3), [xt, w])
