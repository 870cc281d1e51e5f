"""Reproducers of the issue 14 audit that no breadth test covered, against NumPy."""
from __future__ import annotations

import numpy as np

from astjit import jit


def power(a, b):
    return np.power(a, b), a ** b


def test_unsigned_exponents_are_never_negative():
    """uint8 255 is 255, not -1: NumPy wraps the power; it was NumPy's negative-power error."""
    cases = [(np.array([255, 3, 0], np.uint8), np.uint8(255)), (np.uint8(3), np.uint8(200)),
             (np.array([3, 2], np.uint64), np.uint64(2**63 + 1)),
             (np.array([3, 2], np.uint32), np.array([4000000000, 7], np.uint32))]
    for a, b in cases:
        got, want = jit(power)(a, b), power(a, b)
        for g, w in zip(got, want):
            assert type(g) is type(w) and np.asarray(g).dtype == np.asarray(w).dtype
            assert np.array_equal(g, w), (a, b, g, w)
