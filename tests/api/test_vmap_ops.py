"""vmap of the ops given batching rules for issue 14 (sorting and searching, LAPACK,
np.diag, boolean selections by one mask, Python's scalar functions with their errors,
writes into arrays, loops): whole-batch programs, no loop over the examples, against a
Python loop over the examples (NumPy and the compiled function), with in_axes/out_axes
and vmap(grad) against a loop of gradients; what a batch cannot hold (a length per
example) loops, and says why where the results' shapes differ."""
import math

import hypothesis
import numpy as np
import pytest
from hypothesis import strategies as st

from astjit import grad, jit, vmap

rng = np.random.default_rng(14)


def randn(*shape):
    return rng.standard_normal(shape)


def by_loop(fn, args, in_axes, out_axes=0):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [fn(*[a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, in_axes)])
            for i in range(n)]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(parts, axis=out_axes) for parts in zip(*outs))
    return np.stack(outs, axis=out_axes)


def assert_matches(got, expected, rtol=1e-12):
    got = got if isinstance(got, tuple) else (got,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert np.shape(a) == np.shape(b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


def loops_over_examples(fn, *args) -> bool:
    """Whether vmap's IR is its loop over the examples (example 0 a call kept out of line)."""
    text = jit(fn).ir(*args, stage="optimized")
    return "call @vmap[" in text and "noinline=True" in text


def check(fn, args, in_axes, out_axes=0, rtol=1e-12):
    """vmap(fn) against a loop of NumPy and a loop of the compiled fn; no loop in the IR."""
    batched = vmap(fn, in_axes=in_axes, out_axes=out_axes)
    got = batched(*args)
    assert_matches(got, by_loop(fn, args, in_axes, out_axes), rtol)
    assert_matches(got, by_loop(jit(fn), args, in_axes, out_axes), rtol)
    assert not loops_over_examples(batched, *args)


# ---- sorting and searching ----------------------------------------------------------------

def orders(x, table):  # x: (m, n), table: sorted (k,)
    return (np.sort(x, axis=0), np.argsort(x, axis=-1), np.median(x), np.percentile(x, 30.0),
            np.searchsorted(table, x), np.searchsorted(table, x[0], side="right"))


def rows_searched(row, v):  # a sorted row per example
    return np.searchsorted(row, v), np.searchsorted(row, v, side="right")


@pytest.mark.parametrize("in_axes,out_axes", [((0, None), 0), ((2, None), -1)])
def test_sorting_and_searching(in_axes, out_axes):
    x = np.moveaxis(randn(4, 3, 5), 0, in_axes[0])
    table = np.sort(np.concatenate([randn(6), [np.nan]]))
    x[(slice(None),) * 2 + (1,)] = table[2]  # ties with the table's elements
    check(orders, (x, table), in_axes, out_axes)


def test_searching_rows_of_each_example():
    rows = np.sort(randn(5, 6), axis=1)
    rows[1, -1] = np.nan
    v = np.concatenate([randn(5, 3), rows[:, 2:3], np.full((5, 1), np.nan)], axis=1)
    check(rows_searched, (rows, v), (0, 0))
    check(rows_searched, (rows, v[0]), (0, None))


def sorted_loss(w, x):  # the sort's gradient is take_along's scatter of the permutation
    return np.sum(np.sort(x * w) * np.arange(1.0, x.shape[0] + 1))


@hypothesis.settings(max_examples=6, deadline=None, database=None, derandomize=True)
@hypothesis.given(b=st.integers(1, 4), n=st.integers(1, 5))
def test_gradient_of_a_sort_batches(b, n):
    w, x = randn(n), randn(b, n)
    fn = vmap(grad(sorted_loss), in_axes=(None, 0))
    np.testing.assert_allclose(fn(w, x), np.stack([grad(sorted_loss)(w, e) for e in x]),
                               rtol=1e-12)
    assert not loops_over_examples(fn, w, x)


# ---- LAPACK, np.diag ----------------------------------------------------------------------

def solved(a, b):
    return np.linalg.solve(a, b)


def matrix_functions(a):
    return np.linalg.inv(a), np.linalg.det(a), np.linalg.cholesky(a), np.diag(a), \
        np.diag(a, 1), np.diag(np.diag(a), -1), np.trace(a)


def spd(*shape):
    m = randn(*shape)
    return m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1])


SOLVES = [((spd(4, 3, 3), randn(4, 3)), (0, 0)), ((spd(4, 3, 3), randn(3)), (0, None)),
          ((spd(3, 3), randn(4, 3)), (None, 0)), ((spd(4, 2, 3, 3), randn(4, 3)), (0, 0)),
          ((spd(2, 3, 3), randn(4, 3)), (None, 0)), ((spd(4, 3, 3), randn(4, 3, 2)), (0, 0)),
          ((spd(3, 3), randn(3, 2, 4)), (None, 2)), ((spd(4, 2, 3, 3), randn(3, 2)), (0, None)),
          ((np.moveaxis(spd(4, 3, 3), 0, 1), randn(2, 3, 2)), (1, None))]


@pytest.mark.parametrize("args,in_axes", SOLVES, ids=[str(k) for k in range(len(SOLVES))])
def test_solve(args, in_axes):
    check(solved, args, in_axes, rtol=1e-10)


@pytest.mark.parametrize("in_axes,out_axes", [(0, 0), (2, -1)])
def test_matrix_functions(in_axes, out_axes):
    a = np.moveaxis(spd(4, 3, 3), 0, in_axes)
    check(matrix_functions, (a,), (in_axes,), out_axes, rtol=1e-10)


def logdet_loss(w, a):
    return np.log(np.linalg.det(a * w)) + np.sum(np.linalg.solve(a, np.diag(a)))


def test_gradients_of_matrix_functions_batch():
    w, a = 1.3, spd(4, 3, 3)
    fn = vmap(grad(logdet_loss, argnums=1), in_axes=(None, 0))
    expected = np.stack([grad(logdet_loss, argnums=1)(w, e) for e in a])
    np.testing.assert_allclose(fn(w, a), expected, rtol=1e-9, atol=1e-12)
    assert not loops_over_examples(fn, w, a)


# ---- boolean selections -------------------------------------------------------------------

def selected(x, m):  # one mask for every example
    return x[:, m] * 2.0, np.sum(x[:, m] ** 2)


def selected_sum(x, m):
    return selected(x, m)[1]


def test_a_mask_for_every_example_and_its_gradient():
    x, m = randn(5, 3, 4), np.array([True, False, True, True])
    check(selected, (x, m), (0, None))
    g = grad(selected_sum)
    fn = vmap(g, in_axes=(0, None))
    np.testing.assert_allclose(fn(x, m), np.stack([g(e, m) for e in x]), rtol=1e-12)
    assert not loops_over_examples(fn, x, m)


def positives(x):
    return x[x > 0]


def positive_sum(x):
    return np.sum(x[x > 0])


def test_a_length_per_example_loops_or_says_why():
    x = np.array([[1.0, -1.0, 2.0], [3.0, 4.0, -5.0], [-1.0, -2.0, -3.0]])
    np.testing.assert_allclose(vmap(positive_sum)(x), [3.0, 7.0, 0.0])  # one shape: the loop
    assert loops_over_examples(vmap(positive_sum), x)
    with pytest.raises(ValueError, match="results differ in shape.*np.where"):
        vmap(positives)(x)
    np.testing.assert_allclose(vmap(positives)(x[:2]), [[1.0, 2.0], [3.0, 4.0]])


def made(s, t):  # arrays made of numbers per example
    return (np.array((s, t * 2.0, 3.0)), np.array(((s, t), (t, s))), np.linspace(s, t, 5),
            np.linspace(0.0, t, 4, endpoint=False), np.linspace(s, 10.0, 1),
            np.linspace(s * 10.0, t * 10.0, 4, dtype=np.int64), np.linspace(s, s, 3))


def test_arrays_made_of_numbers_per_example():
    check(made, (randn(5), randn(5)), (0, 0))
    check(made, (randn(5), 0.25), (0, None), out_axes=-1)


# ---- numbers with Python's semantics ------------------------------------------------------

def python_numbers(s, t):  # s, t: numbers per example, made Python floats
    r, t = math.sqrt(abs(s)) + 1.0, float(t)
    q = t / r + t // r + t % r
    return (math.log(r) * math.tanh(t) + math.fmod(t, r) + r ** 1.5, q, math.floor(t),
            math.ceil(t), round(t), math.trunc(r), int(q * 3.0), not t, float(int(r)))


def test_python_scalar_functions_batch():
    check(python_numbers, (randn(6) * 3.0, randn(6) * 3.0), (0, 0))
    check(python_numbers, (randn(6), 2.5), (0, None))


def error_functions(s, x):  # NumPy has no erf: the table's array form is math.erf's
    return math.erf(s) - math.erfc(x[0] * s), np.sum(x * math.erf(s))


def test_erf_batches_as_math_erf():
    """math.erf/erfc batch as whole arrays (no loop); the interpreter's array form is
    math.erf itself, element by element (libm's on Linux, which compiled code calls), the
    float32 form float32 as np.sin's; the gradient batches too."""
    s = np.concatenate([randn(6) * 3.0, [0.0, -0.0, 27.0, -6.0, np.inf, -np.inf, np.nan]])
    x = randn(13, 3)
    check(error_functions, (s, x), (0, 0), rtol=1e-14)  # libmvec's erf in a kernel: <= 4 ulp
    check(error_functions, (s, x[0]), (0, None), rtol=1e-14)
    from astjit.ir.ops.elementwise import numpy_function
    for dtype in (np.float64, np.float32):
        got = numpy_function("erf")(s.astype(dtype))
        assert got.dtype == dtype
        assert np.array_equal(got, [dtype(math.erf(v)) for v in s.astype(dtype)], equal_nan=True)
    fn = vmap(grad(erf_product))
    np.testing.assert_allclose(fn(s[:6]), [grad(erf_product)(v) for v in s[:6]], rtol=1e-14)
    assert not loops_over_examples(fn, s[:6])


def erf_product(s):
    return math.erfc(s * 0.5) * math.erf(s)


def domain(s):
    return math.sqrt(float(s) - 1.0)


def converted(s):
    return int(float(s) * 2.0)


def divided(s):
    return 1.0 / float(s) + 7 // int(s)


@pytest.mark.parametrize("fn,bad,exc,message", [
    (domain, 0.5, ValueError, "math domain error"),
    (divided, 0.0, ZeroDivisionError, "division by zero"),
    (converted, np.nan, ValueError, "cannot convert float NaN to integer"),
    (converted, np.inf, OverflowError, "cannot convert float infinity to integer"),
    (converted, 1e300, OverflowError, "too large")])
def test_python_errors_of_one_example_raise(fn, bad, exc, message):
    v = np.array([2.0, 5.0, bad, 3.0])
    with pytest.raises(exc, match=message):
        vmap(fn)(v)
    with pytest.raises(exc, match=message):
        jit(fn)(float(bad))
    assert not loops_over_examples(vmap(fn), v)


# ---- writes and loops ---------------------------------------------------------------------

def filled(x, k):  # writes into arrays the function makes, by an index per example too
    y = np.zeros((2, x.shape[0]))
    y[0] = x
    y[1, 1:] = x[:-1] * 2.0
    y[1, k] = -1.0
    z = y[1]
    z += 1.0
    for i in range(1, x.shape[0]):
        z[i] = z[i - 1] * 0.5 + x[i]
    return y


@pytest.mark.parametrize("in_axes,out_axes", [((0, 0), 0), ((1, None), 2)])
def test_writes_into_arrays_made_per_example(in_axes, out_axes):
    x = randn(4, 5) if in_axes[0] == 0 else randn(5, 4)
    k = np.array([0, 4, -1, 2]) if in_axes[1] == 0 else 3
    check(filled, (x, k), in_axes, out_axes)


def recurrence(w, x):  # a loop carrying numbers and an array, one trip count for all
    h, t = np.zeros(w.shape[0]), 0.0
    for k in range(x.shape[0]):
        h = np.tanh(w * h + x[k])
        t += np.sum(h) * k
    return t


def halvings(x):  # a condition per example: it runs while one holds, the others kept
    n = 0
    while x > 1.0:
        x = x / 2.0
        n += 1
    return n, x


def branches(x, s):  # a condition per example: both branches, each example's chosen
    if s > 0.5:
        y = np.tanh(x) * 2.0
    else:
        y = x - s
    return np.sum(y)


def guarded(x, i):  # a branch that would raise for the examples not taking it
    if i < x.shape[0]:
        return x[i]
    return -1.0


def test_conditions_per_example():
    v = np.array([0.5, 3.0, 17.0, 1.0, 1e6])
    check(halvings, (v,), (0,))
    check(branches, (randn(5, 3), np.array([0.1, 0.9, 0.5, 0.7, -2.0])), (0, 0))
    x, i = randn(4, 3), np.array([0, 2, 3, 7])
    check(guarded, (x, i), (0, 0))  # the read checks the indices of the examples taking it


def summed_to(x, n):  # a trip count per example: the reads past an example's own end not run
    s, i = 0.0, 0
    while i < n:
        s += x[i]
        i += 1
    return s


def test_a_loop_per_example_reads_only_for_the_examples_still_running():
    x, n = randn(5, 4), np.array([0, 3, 4, 1, 2])
    check(summed_to, (x, n), (0, 0))
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        vmap(summed_to)(x, np.array([0, 3, 5, 1, 2]))


def read_at(x, i, j):  # an element read at an index per example
    return x[i, j] * 2.0 + x[j, -1]


def test_element_reads_at_an_index_per_example():
    x, i, j = randn(5, 3, 3), np.array([0, 2, -1, 1, -3]), np.array([1, 0, 2, 2, 0])
    check(read_at, (x, i, j), (0, 0, 0))
    check(read_at, (x[0], i, j), (None, 0, 0))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        vmap(read_at)(x, np.array([0, 3, 0, 0, 0]), j)


def test_a_branch_reads_only_where_an_example_takes_it():
    """Python's IndexError where an example's own condition holds and its index is out of
    bounds; none for the examples that do not take the branch, even from an empty axis."""
    x = randn(4, 3)
    with pytest.raises(IndexError, match="index -9 is out of bounds for axis 0 with size 3"):
        vmap(guarded)(x, np.array([0, -9, 5, 1]))
    empty = np.zeros((3, 0))
    np.testing.assert_array_equal(vmap(guarded)(empty, np.array([0, 1, 2])), [-1.0] * 3)
    shared = vmap(guarded, in_axes=(None, 0))
    i = np.array([0, 7, 2, -1])
    assert_matches(shared(x[0], i), by_loop(guarded, (x[0], i), (None, 0)))
    assert not loops_over_examples(shared, x[0], i)


def guarded_loss(x, i):  # reads at an index per example, in a branch per example
    s = 0.0
    if i < x.shape[0] and i > -5:
        s = x[i, 0] * x[i - 1, 1] + np.sin(x[0, 1])
    return s


def numeric_gradient(fn, x, i, step=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[k] = step
        g[k] = (fn(x + d, i) - fn(x - d, i)) / (2 * step)
    return g


def test_gradients_of_reads_in_a_branch_per_example_batch():
    """vmap(grad) of reads guarded by a condition per example: each read's adjoint is a
    scatter-add at the example's index, run for the examples taking the branch (the others'
    indices not read, so an index out of bounds for them raises nothing); no loop over the
    examples; the gradients are a loop's and the finite differences'."""
    x, i = randn(5, 3, 2), np.array([0, 2, -1, 7, -5])
    fn = vmap(grad(guarded_loss))
    got = fn(x, i)
    # the batch's sin and cos are libmvec's (within 4 ulp), an example's libm's
    np.testing.assert_allclose(got, np.stack([grad(guarded_loss)(a, k) for a, k in zip(x, i)]),
                               rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(got, [numeric_gradient(guarded_loss, a, k) for a, k in zip(x, i)],
                               rtol=1e-6, atol=1e-9)
    assert not loops_over_examples(fn, x, i)
    shared = vmap(grad(guarded_loss), in_axes=(None, 0))  # one x, an accumulator per example
    np.testing.assert_allclose(shared(x[0], i), np.stack([grad(guarded_loss)(x[0], k) for k in i]),
                               rtol=1e-15, atol=1e-15)
    assert not loops_over_examples(shared, x[0], i)
    np.testing.assert_array_equal(fn(np.zeros((3, 0, 2)), np.array([0, 1, 2])), np.zeros((3, 0, 2)))
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 0 with size 3"):
        fn(x[:3], np.array([9, 1, -3]))  # x[i - 1]'s, of an example taking the branch


def rnn(w, xs):  # a number carried, recorded per example by its gradient's tape
    h = 0.0
    for t in range(xs.shape[0]):
        h = math.tanh(w * h + xs[t])
    return h * h


def central_difference(fn, w, x, step=1e-6):
    return (fn(w + step, x) - fn(w - step, x)) / (2 * step)


def test_a_tape_of_per_example_values_batches():
    """vmap(grad) of a loop whose tape records a value per example: the tape records one
    batch per iteration; the gradients are the finite differences'."""
    ws, xs = randn(5), randn(5, 6)
    fn = vmap(grad(rnn))
    got = fn(ws, xs)
    np.testing.assert_allclose(got, [central_difference(rnn, w, x) for w, x in zip(ws, xs)],
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got, [grad(rnn)(w, x) for w, x in zip(ws, xs)], rtol=1e-12)
    assert not loops_over_examples(fn, ws, xs)


def summed(w, x):
    t = 0.0
    for i in range(x.shape[0]):
        t += np.tanh(w[i] * x[i]) ** 2
    return t


def test_loops_and_their_gradients_batch():
    w, x = randn(3), randn(4, 6, 3)
    check(recurrence, (w, x), (None, 0))
    g = grad(recurrence)  # its tape records h, a value per example: a tape of batches
    fn = vmap(g, in_axes=(None, 0))
    np.testing.assert_allclose(fn(w, x), np.stack([g(w, e) for e in x]), rtol=1e-10)
    assert not loops_over_examples(fn, w, x)
    g = grad(summed)
    fn = vmap(g, in_axes=(None, 0))
    np.testing.assert_allclose(fn(w, x[:, 0]), np.stack([g(w, e) for e in x[:, 0]]),
                               rtol=1e-12)
    assert not loops_over_examples(fn, w, x[:, 0])  # its tape records the counter only
