"""Elementwise kernels and astype of transposed arrays run in memory order (passes/transposes.py):
f(a.T) compiles as f(a).T. Against NumPy: the values, and the layout NumPy's order='K' gives
(a Fortran-ordered result for C-ordered operands transposed); what must stay as it was
(reductions, operands broadcast or not transposed, copies in C order); writes into the
result; gradients through it."""
import numpy as np
import pytest

from astjit import grad, jit


def astype_t(a):
    return a.T.astype(np.float32)


def add_t(a, b):
    return a.T + 2.0 * b.T


def chained(a):
    c = np.exp(a.T) * 2.0
    return c - a.T


def three_d(x):
    return np.sqrt(np.abs(x.T)) + 1.0


def mixed(a, b):
    return a.T + b  # b is not transposed: the kernel stays


def broadcast_row(a, r):
    return a.T * r  # r broadcasts along the trailing axis: the kernel stays


def reduced(a):
    return np.sum(a.T * 2.0, axis=1)


def copied(a):
    return (a.T * 1.0).copy()  # x.copy() is C-ordered, as NumPy's


def written(a):
    r = a.T * 2.0
    r[0, 1] = -1.0
    return r


def rng_arrays(*shapes):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(shape) for shape in shapes]


CASES = [
    (astype_t, rng_arrays((3, 5))),
    (add_t, rng_arrays((4, 6), (4, 6))),
    (chained, rng_arrays((5, 2))),
    (three_d, rng_arrays((2, 3, 4))),
    (mixed, rng_arrays((4, 3), (3, 4))),
    (broadcast_row, rng_arrays((4, 3), (4,))),
    (reduced, rng_arrays((3, 7))),
    (copied, rng_arrays((3, 7))),
    (written, rng_arrays((3, 4))),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_values_and_layout_as_numpy(fn, args):
    """The layout too, but where an operand broadcasts (`a.T * row`): the kernel stays, and
    its result is C-ordered where NumPy's follows the transposed operand."""
    expected, got = fn(*args), jit(fn)(*args)
    assert got.dtype == expected.dtype and np.allclose(got, expected, rtol=1e-12)
    if fn is not broadcast_row:
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == \
            (expected.flags.c_contiguous, expected.flags.f_contiguous)


@pytest.mark.parametrize("fn,commuted", [(astype_t, True), (add_t, True), (chained, True),
                                         (three_d, True), (mixed, False),
                                         (broadcast_row, False), (reduced, False)])
def test_which_kernels_read_memory_in_order(fn, commuted):
    args = dict((f.__name__, a) for f, a in CASES)[fn.__name__]
    text = jit(fn).ir(*args, stage="optimized")
    reads_transpose = any(("fused (%" in line or "array_astype %" in line)
                          and "array_transpose" not in line and _reads_a_transpose(text, line)
                          for line in text.splitlines())
    assert reads_transpose != commuted, text


def _reads_a_transpose(text: str, line: str) -> bool:
    """Whether the kernel or astype on `line` takes a value defined by array_transpose."""
    transposed = {row.split(" = ")[0].strip() for row in text.splitlines()
                  if "= array_transpose" in row}
    operands = line.split("(", 1)[1].split(")", 1)[0] if "fused (" in line \
        else line.split("array_astype ", 1)[1].split(" ", 1)[0]
    return any(op.strip() in transposed for op in operands.split(","))


def loss(a):
    return np.sum(np.sin(a.T) * 2.0)


def test_gradients_through_commuted_kernels():
    (a,) = rng_arrays((3, 4))
    assert np.allclose(grad(loss)(a), 2.0 * np.cos(a))
