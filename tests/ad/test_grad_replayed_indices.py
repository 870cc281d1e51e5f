"""The reverse sweep indexes without bounds checks only where the forward pass checked the
same index already (ir/ad/sweep.py): the adjoint accumulations (`add_at`, `set_at`) and the
reads a backward loop recomputes carry `boundscheck=False` (negative indices still count
from the end); the forward copy keeps its checks. Gradients against central differences,
with negative indices, gathers and writes; an index out of range still raises."""
import numpy as np
import pytest
from array_checks import central_difference

from astjit import grad


def prefix_loss(x):
    acc = 0.0
    s = 0.0
    for i in range(len(x)):
        acc += x[i]
        s += acc * x[i]
    return s


def from_the_end(x, w):              # x[i - n]: negative indices, replayed from the tape
    s = 0.0
    n = len(x)
    for i in range(n):
        s += w[i] * x[i - n] * x[-1 - i]
    return s


def gather(x, index):                # x[index[k]]: indices read from data, some negative
    s = 0.0
    for k in range(len(index)):
        v = x[index[k]]
        s += v * v * (k + 1)
    return s


def written(x):                      # y[-1 - i] = ...: the write's adjoint (set_at) and undo
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[-1 - i] = y[i - len(x)] * 0.5 + x[i] * x[i]
    return np.sum(y * y)


X = np.random.default_rng(0).standard_normal(7)
INDEX = np.array([0, -1, 3, -7, 6, 2, -2, 0], np.int64)
CASES = [(prefix_loss, (X,)), (from_the_end, (X, X[::-1].copy())), (gather, (X, INDEX)),
         (written, (X,))]


@pytest.mark.parametrize("fn,args", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_gradients_match_finite_differences(fn, args):
    got = grad(fn)(*[a.copy() for a in args])
    np.testing.assert_allclose(got, central_difference(fn, list(args), 0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn,args", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_only_the_forward_copy_checks(fn, args):
    text = grad(fn).ir(*args, stage="optimized")
    backward = text[text.rindex(" = while "):]  # the last loop: the backward one
    unchecked = ("add_at", "set_at", "array_get")
    for line in backward.splitlines():
        if any(f" = {op} " in line for op in unchecked):
            assert "boundscheck=False" in line, line
    forward = text[:text.rindex(" = while ")]  # checked where the loop was not versioned
    assert any(" = array_get " in line and "{" not in line for line in forward.splitlines())


def test_an_index_out_of_range_still_raises():
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 7"):
        grad(gather)(X, np.array([0, 9], np.int64))
