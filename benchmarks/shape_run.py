"""NumPy's shape, joining, copy and conversion functions, each alone at 10^6 elements:
astjit's median time per call over NumPy's (issue 14: each within 1.2x NumPy's time).

    python benchmarks/shape_run.py                  # every function, about 20 s
    python benchmarks/shape_run.py roll repeat      # some of them
    python benchmarks/shape_run.py --cpu            # CPU time, not wall time (a loaded machine)

Single-threaded, like array_run.py. Each function is checked against NumPy's result
(shape, dtype, values) before timing; views cost no copy in either engine.
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


def concatenate(a, b): return np.concatenate((a, b))
def concatenate_axis1(a, b): return np.concatenate((a, b), axis=1)
def stack(a, b): return np.stack((a, b))
def hstack(a, b): return np.hstack((a, b))
def vstack(a, b): return np.vstack((a, b))
def split(x): return np.split(x, 2)[1]
def squeeze(a): return np.squeeze(a[:1])
def expand_dims(a): return np.expand_dims(a, 1)
def ravel(a): return a.ravel()
def ravel_transposed(a): return np.ravel(a.T)
def flatten(a): return a.flatten()
def flip(a): return np.flip(a, axis=1)
def roll(x): return np.roll(x, 1000)
def roll_axis1(a): return np.roll(a, 3, axis=1)
def tile(x): return np.tile(x[:1000], 1000)
def tile_rows(a): return np.tile(a[:500], (2, 1))
def repeat(x): return np.repeat(x[:500_000], 2)
def repeat_axis1(a): return np.repeat(a[:, :500], 2, axis=1)
def broadcast_to(x): return np.broadcast_to(x[:1000], (1000, 1000))
def swapaxes(a): return np.swapaxes(a, 0, 1)
def moveaxis(a): return np.moveaxis(a, 0, -1)
def linspace(n): return np.linspace(0.0, 1.0, n)
def zeros_float32(n): return np.zeros(n, dtype=np.float32)
def astype_float32(x): return x.astype(np.float32)
def astype_int64(x): return x.astype(np.int64)
def astype_transposed(a): return a.T.astype(np.float32)
def copy(x): return np.copy(x)
def copy_transposed(a): return a.T.copy()
def ascontiguousarray(a): return np.ascontiguousarray(a[:, ::-1])
def array(a, b): return np.array((a, b, a * b))


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N)
    a, b = rng.standard_normal((1000, 1000)), rng.standard_normal((1000, 1000))
    return {"x": (x,), "ab": (a, b), "a": (a,), "n": (N,), "scalars": (1.0, 2.0)}


CASES = [(concatenate, "ab"), (concatenate_axis1, "ab"), (stack, "ab"), (hstack, "ab"),
         (vstack, "ab"), (split, "x"), (squeeze, "a"), (expand_dims, "a"), (ravel, "a"),
         (ravel_transposed, "a"), (flatten, "a"), (flip, "a"), (roll, "x"), (roll_axis1, "a"),
         (tile, "x"), (tile_rows, "a"), (repeat, "x"), (repeat_axis1, "a"), (broadcast_to, "x"),
         (swapaxes, "a"), (moveaxis, "a"), (linspace, "n"), (zeros_float32, "n"),
         (astype_float32, "x"), (astype_int64, "x"), (astype_transposed, "a"), (copy, "x"),
         (copy_transposed, "a"), (ascontiguousarray, "a"), (array, "scalars")]


def main(only: list[str]) -> None:
    clock = time.perf_counter
    if "--cpu" in only:  # CPU time: steadier than wall time on a loaded machine
        only, clock = [name for name in only if name != "--cpu"], time.process_time
    inputs = _inputs()
    print(f"{'function':20s} {'NumPy':>10s} {'astjit':>10s} {'astjit/NumPy':>13s}")
    for fn, kind in CASES:
        if only and fn.__name__ not in only:
            continue
        args = inputs[kind]
        compiled = jit(fn)
        want, got = fn(*args), compiled(*args)
        assert got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want), \
            fn.__name__
        print(ratio_line(fn.__name__, 20, *interleaved_medians(fn, compiled, args, clock=clock)))


if __name__ == "__main__":
    main(sys.argv[1:])
