"""What `jit(boundscheck=False)` buys: element loops compiled with and without checks.

    python benchmarks/boundscheck.py            # about 10 s
    python benchmarks/boundscheck.py --quick    # 5 rounds, about 3 s

Each kernel is compiled twice, `jit(fn)` and `jit(fn, boundscheck=False)`,
their results checked equal, then timed in interleaved rounds (checked,
unchecked, checked, ...); the table gives the median time per call of each and
checked / unchecked (above 1: the checks cost that much). LLVM removes or
hoists the checks it can reason about (indices that follow the loop's counter),
so what remains to save is mostly the checks of indices read from memory.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from astjit import jit

N = 100_000


def dot(x, y):
    """y[i]'s check stays (the loop runs to len(x)), beside the sum's chain of adds."""
    s = 0.0
    for i in range(len(x)):
        s += x[i] * y[i]
    return s


def axpy(a, x, y, out):
    """x[i]'s and y[i]'s lengths are not the loop's (len(out)), yet LLVM vectorizes the
    checked loop too."""
    for i in range(len(out)):
        out[i] = a * x[i] + y[i]
    return out


def stencil(x, out):
    """Shifted indices: x[i - 1] and x[i + 1], and a write into another array."""
    for i in range(1, len(x) - 1):
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0
    return out


def gather(x, index, out):
    """Indices read from memory: no check can be proved."""
    for k in range(len(index)):
        out[k] = x[index[k]]
    return out


def arguments() -> dict:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N), rng.standard_normal(N)
    return {"dot": (dot, (x, y)), "axpy": (axpy, (2.0, x, y, np.zeros(N))),
            "stencil": (stencil, (x, np.zeros(N))),
            "gather": (gather, (x, rng.integers(-N, N, N), np.zeros(N)))}


def median_times(calls: list, rounds: int, number: int) -> list[float]:
    """Median seconds per call of each of `calls`, timed in interleaved rounds."""
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(rounds):
        for call, out in zip(calls, samples):
            start = time.perf_counter()
            for _ in range(number):
                call()
            out.append((time.perf_counter() - start) / number)
    return [statistics.median(s) for s in samples]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args(argv)
    rounds, number = (5, 20) if options.quick else (21, 50)
    print(f"n = {N}\n")
    print(f"{'kernel':8}  {'checked':>10}  {'unchecked':>10}  {'checked/unchecked':>17}")
    for name, (fn, args) in arguments().items():
        checked, unchecked = jit(fn), jit(fn, boundscheck=False)
        if not np.array_equal(checked(*args), unchecked(*args)):
            sys.exit(f"{name}: the results differ")
        times = median_times([lambda: checked(*args), lambda: unchecked(*args)], rounds, number)
        print(f"{name:8}  {times[0] * 1e6:8.1f} µs  {times[1] * 1e6:8.1f} µs  "
              f"{times[0] / times[1]:16.2f}×")


if __name__ == "__main__":
    main()
