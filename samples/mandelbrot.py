"""The Mandelbrot set with astjit: ASCII art, CPython vs astjit, and the optimized IR.

Run from the repository root:

    python samples/mandelbrot.py

The functions below are plain Python. `jit(mandel_sum)` compiles mandel_sum
and the `escape` function it calls to native code on the first call, for the
argument types of that call.
"""

import math
import time

from astjit import jit

MAX_ITER = 200
PALETTE = " .:-=+*#%@"
"""From few iterations (far outside the set) to MAX_ITER (inside it)."""


def escape(cr, ci, max_iter):
    """Iterations of z -> z^2 + c, from z = 0, before |z| > 2 (at most max_iter)."""
    zr = 0.0
    zi = 0.0
    n = 0
    while n < max_iter and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n += 1
    return n


def mandel_sum(w, h, max_iter):
    """Sum of the escape counts over a w x h grid covering [-2.2, 0.8] x [-1.2, 1.2]."""
    total = 0
    for y in range(h):
        ci = -1.2 + 2.4 * y / h
        for x in range(w):
            cr = -2.2 + 3.0 * x / w
            total += escape(cr, ci, max_iter)
    return total


def render(escape_count, width=70, height=24):
    """ASCII art of the set: one character per grid point, shaded by its escape count."""
    rows = []
    for y in range(height):
        ci = -1.2 + 2.4 * (y + 0.5) / height
        counts = [escape_count(-2.2 + 3.0 * (x + 0.5) / width, ci, MAX_ITER) for x in range(width)]
        rows.append("".join(shade(n) for n in counts))
    return "\n".join(rows)


def shade(count):
    """A palette character for an escape count, on a log scale (most counts are small)."""
    level = math.log(count) / math.log(MAX_ITER) if count > 1 else 0.0
    return PALETTE[round(level * (len(PALETTE) - 1))]


def best_of(repeats, fn, *args):
    """The fastest of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    print(render(jit(escape)))

    kernel = jit(mandel_sum)
    grid = (400, 300, MAX_ITER)
    start = time.perf_counter()
    total = kernel(*grid)
    first_call = time.perf_counter() - start
    assert total == mandel_sum(*grid), "astjit and CPython disagree"

    cpython = best_of(2, mandel_sum, *grid)
    compiled = best_of(10, kernel, *grid)
    print(f"\nmandel_sum{grid} = {total}")
    print(f"  CPython {cpython * 1e3:8.1f} ms")
    print(
        f"  astjit  {compiled * 1e3:8.2f} ms   ({cpython / compiled:.0f}x faster; "
        f"first call, with compilation: {first_call * 1e3:.0f} ms)"
    )

    print("\nOptimized IR of mandel_sum:\n")
    print(kernel.ir(*grid, stage="optimized"))


if __name__ == "__main__":
    main()
