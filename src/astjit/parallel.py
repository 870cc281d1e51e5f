"""`astjit.prange`: `range` that marks a loop whose iterations may run in parallel.

Under `jit(parallel=True)` a `for i in prange(...)` loop is split over threads where its
body allows (ir/passes/parallel.py: `s += x` a reduction, `out[i] = x` a parallel write);
under a serial `jit`, and in plain Python, it is `range`, as Numba's `prange` is.
"""
from __future__ import annotations


class prange:  # noqa: N801 (spelled as the builtin it stands for)
    """`prange(stop)`, `prange(start, stop[, step])`: a `range` (the object it makes is one);
    in a function compiled with `jit(parallel=True)`, a loop over it may run in parallel."""

    def __new__(cls, *args: int) -> range:
        return range(*args)
