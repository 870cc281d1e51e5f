"""The benchmark kernels: plain Python scalar functions shared by every engine.

Each engine runs exactly these functions (CPython as they are, astjit via
`jit(fn)`, Numba via `numba.njit`); `c/kernels.c` holds the same algorithms
in C. `KERNELS` lists what `run.py` measures: the entry function and the
arguments it is called with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def pi_sum(n):
    """Partial sum of 1/k^2 for k = 1..n (tends to pi^2 / 6)."""
    s = 0.0
    for k in range(1, n + 1):
        s += 1.0 / (k * k)
    return s


def escape(cr, ci, max_iter):
    """Mandelbrot escape count of the point cr + i*ci, capped at max_iter."""
    zr = 0.0
    zi = 0.0
    n = 0
    while n < max_iter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n += 1
    return n


def mandel_grid(w, h, max_iter):
    """Sum of the escape counts over a w x h grid covering [-2, 1] x [-1.2, 1.2]."""
    total = 0
    for y in range(h):
        ci = -1.2 + 2.4 * y / h
        for x in range(w):
            cr = -2.0 + 3.0 * x / w
            total += escape(cr, ci, max_iter)
    return total


def fib(n):
    """The n-th Fibonacci number, by naive recursion."""
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def newton_sqrt(x):
    """Square root of x > 0 by Newton's method, to a relative residual of 1e-12."""
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-12 * x:
        y = 0.5 * (y + x / y)
    return y


def newton_sum(n):
    """Sum of newton_sqrt(i) for i = 1..n."""
    s = 0.0
    for i in range(1, n + 1):
        s += newton_sqrt(float(i))
    return s


def collatz(limit):
    """Total number of Collatz steps to reach 1, over every start in range(1, limit)."""
    total = 0
    for start in range(1, limit):
        n = start
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            total += 1
    return total


def add_one(x):
    """The dispatch-cost probe: almost no work, so a call measures the call path."""
    return x + 1


@dataclass(frozen=True)
class Kernel:
    """One benchmark: `fn(*args)`, also available as `time_<name>` in c/kernels.c."""

    name: str
    fn: Callable
    args: tuple
    returns: type
    """float or int: the result type, which the C entry point needs to know."""
    is_dispatch: bool = False
    """True for the call-overhead probe, reported in ns per call rather than as a ratio."""


KERNELS = [
    Kernel("pi_sum", pi_sum, (1_000_000,), float),
    Kernel("mandelbrot", mandel_grid, (200, 150, 200), int),
    Kernel("fib", fib, (25,), int),
    Kernel("newton_sqrt", newton_sum, (100_000,), float),
    Kernel("collatz", collatz, (30_000,), int),
    Kernel("dispatch", add_one, (1.0,), float, is_dispatch=True),
]

HELPERS = [escape, newton_sqrt]
"""Functions the kernels call: Numba needs them compiled too (see engines.py)."""
