"""Whole-graph optimizations on array code: CSE of array expressions (only where no one can
tell), algebraic simplification, dead kernel code; each checked against NumPy and in the dump."""
import numpy as np

from astjit import jit


def repeated(x, y):
    a = -(-x) * 1.0  # noqa: B002 - a double negation to simplify away
    b = (a.T).T
    return np.sum(b * y) + np.sum(b * y)


def test_repeated_array_expressions_become_one_kernel():
    x, y = np.arange(12.0).reshape(3, 4), np.ones((3, 4)) * 0.5
    assert jit(repeated)(x, y) == repeated(x, y)
    text = jit(repeated).ir(x, y, stage="optimized")
    assert text.count("fused") == 1 and "array_transpose" not in text
    assert "neg" not in text  # -(-x) went, and the dead kernel code with it


def sums_around_a_write(y):
    before = np.sum(y)
    y[0] = 5.0
    return before, np.sum(y)


def test_no_merging_across_a_write():
    y = np.zeros(3)
    assert jit(sums_around_a_write)(y) == (0.0, 5.0)


def both_returned(x):
    return x * 2.0, x * 2.0


def one_written(x):
    a = x * 2.0
    b = x * 2.0
    a[0] = -1.0
    return np.sum(b)


def test_arrays_someone_can_tell_apart_stay_apart():
    x = np.arange(3.0)
    a, b = jit(both_returned)(x)
    assert a is not b
    a[0] = 99.0
    assert b[0] == 0.0
    assert jit(one_written)(x) == 6.0
