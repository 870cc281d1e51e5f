"""np.max(x, initial=v) and its kin at 10^6 float64, alone and fused into an expression:
astjit's median time per call over NumPy's (the target: within 1.2x alone, faster fused),
beside np.max(x) without one. initial= is np.maximum(v, max_or_identity(x)): x is read
once and not copied.

    python benchmarks/initial_run.py          # every case, a few seconds
    python benchmarks/initial_run.py --cpu    # CPU time, not wall time (a loaded machine)

Single-threaded, like array_run.py; each case is checked against NumPy's result first.
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


def max_plain(x, v): return np.max(x)
def max_initial(x, v): return np.max(x, initial=v)
def min_initial(x, v): return np.min(x, initial=v)
def nanmax_initial(x, v): return np.nanmax(x, initial=v)
def rows_initial(x, v): return np.max(x.reshape(1000, 1000), axis=1, initial=v)
def fused_initial(x, v): return np.max(np.abs(x) * 2.0 + 1.0, initial=v)


CASES = [max_plain, max_initial, min_initial, nanmax_initial, rows_initial, fused_initial]


def main(only: list[str]) -> None:
    clock = time.perf_counter
    if "--cpu" in only:  # CPU time: steadier than wall time on a loaded machine
        only, clock = [name for name in only if name != "--cpu"], time.process_time
    args = (np.random.default_rng(0).standard_normal(N), 0.5)
    print(f"{'case':16s} {'NumPy':>10s} {'astjit':>10s} {'astjit/NumPy':>13s}")
    for fn in CASES:
        if only and fn.__name__ not in only:
            continue
        compiled = jit(fn)
        np.testing.assert_array_equal(compiled(*args), fn(*args), err_msg=fn.__name__)
        print(ratio_line(fn.__name__, 16, *interleaved_medians(fn, compiled, args, clock=clock)))


if __name__ == "__main__":
    main(sys.argv[1:])
