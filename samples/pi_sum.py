"""pi by the Basel series with astjit: the result, CPython vs astjit, and the optimized IR.

Run from the repository root:

    python samples/pi_sum.py
"""

import math
import time

from astjit import jit


def pi_sum(n):
    """Partial sum of 1/k^2 for k = 1..n; it tends to pi^2 / 6."""
    s = 0.0
    for k in range(1, n + 1):
        s += 1.0 / (k * k)
    return s


def best_of(repeats, fn, *args):
    """The fastest of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    n = 1_000_000
    kernel = jit(pi_sum)
    s = kernel(n)
    assert math.isclose(s, pi_sum(n), rel_tol=1e-12), "astjit and CPython disagree"
    print(f"pi ~ sqrt(6 * pi_sum({n})) = {math.sqrt(6 * s):.10f}   (math.pi = {math.pi:.10f})")

    cpython = best_of(3, pi_sum, n)
    compiled = best_of(20, kernel, n)
    print(f"  CPython {cpython * 1e3:7.1f} ms")
    print(f"  astjit  {compiled * 1e3:7.2f} ms   ({cpython / compiled:.0f}x faster)")

    print("\nOptimized IR of pi_sum:\n")
    print(kernel.ir(n, stage="optimized"))


if __name__ == "__main__":
    main()
