"""Integer-array and boolean-mask indexing, each alone at 10^6 elements, and two fused into
an expression: astjit's median time per call over NumPy's (issue 14: each within 1.2x
NumPy's time alone, faster fused).

    python benchmarks/index_run.py                  # every case, about 20 s
    python benchmarks/index_run.py gather add_at    # some of them
    python benchmarks/index_run.py --cpu            # CPU time, not wall time (a loaded machine)

Single-threaded, like array_run.py. Each case is checked against NumPy's result on fresh
copies of its arguments before timing; the writes then run again and again on the same
arrays in both engines (the same work each time).
"""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from interleaved import interleaved_medians, ratio_line  # noqa: E402

from astjit import jit  # noqa: E402

N = 10 ** 6


def gather(x, idx): return x[idx]
def gather_sum(x, idx): return np.sum(x[idx] * 2.0)
def gather_rows(a, rows): return a[rows]
def gather_columns(a, rows): return a[:, rows]
def mask_read(x, m): return x[m]
def mask_of_expression(x, m): return x[x > 0.0]
def mask_sum(x, m): return np.sum(x[x > 0.0] * 2.0)


def mask_fill(x, m):
    x[m] = 0.0
    return x


def mask_fill_expression(x, m):
    x[x < -3.0] = 0.0
    return x


def scatter(x, idx):
    x[idx] = 1.5
    return x


def scatter_update(x, idx):
    x[idx] += 1.0
    return x


def add_at(x, idx):
    np.add.at(x, idx, 1.0)
    return x


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N)
    idx = rng.integers(-N, N, N)
    a = rng.standard_normal((1000, 1000))
    rows = rng.integers(0, 1000, 1000)
    return {"x": (x, idx), "m": (x, x > 0.0), "a": (a, rows)}


CASES = [(gather, "x"), (gather_sum, "x"), (gather_rows, "a"), (gather_columns, "a"),
         (mask_read, "m"), (mask_of_expression, "m"), (mask_sum, "m"), (mask_fill, "m"),
         (mask_fill_expression, "m"), (scatter, "x"), (scatter_update, "x"), (add_at, "x")]


def main(only: list[str]) -> None:
    clock = time.perf_counter
    if "--cpu" in only:  # CPU time: steadier than wall time on a loaded machine
        only, clock = [name for name in only if name != "--cpu"], time.process_time
    inputs = _inputs()
    print(f"{'case':22s} {'NumPy':>10s} {'astjit':>10s} {'astjit/NumPy':>13s}")
    for fn, kind in CASES:
        if only and fn.__name__ not in only:
            continue
        compiled = jit(fn)
        want = fn(*[np.copy(a) for a in inputs[kind]])
        got = compiled(*[np.copy(a) for a in inputs[kind]])
        assert np.shape(got) == np.shape(want) and np.allclose(got, want), fn.__name__
        args = [np.copy(a) for a in inputs[kind]]
        print(ratio_line(fn.__name__, 22, *interleaved_medians(fn, compiled, args, clock=clock)))


if __name__ == "__main__":
    main(sys.argv[1:])
