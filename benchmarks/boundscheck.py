"""Bounds checks in element loops: astjit checked, astjit `boundscheck=False`, Numba and C.

    python benchmarks/boundscheck.py            # about 30 s
    python benchmarks/boundscheck.py --quick    # 25 rounds, about 10 s

Each loop runs as `jit(fn)` (every index checked: the affine ones once, before the loop,
ir/passes/versioning.py), `jit(fn, boundscheck=False)`, `numba.njit(fn)` (no checks) and
the same loop in C (`c/loop_kernels.c`, gcc -O3 -march=native, no checks), results
checked equal first, then timed in interleaved rounds of one call each (a call lasts
0.2-2 ms: on a shared machine a short sample is seldom preempted, and the median skips
those that are); the table gives the median time per call and the ratios. An engine
that is not there (Numba, gcc) shows n/a.

A second table times the gradients of two element loops (`grad`, whose backward loop
replays the indices from the tape without checks) against the forward `jit(fn)`: the
median and the 10th percentile, since the tape's allocation makes the gradient's time
bimodal from call to call (about 1.7 against 6 ms at 10^6 elements on the 2-core
machines: whether its pages are fresh).
"""
from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from astjit import jit

HERE = Path(__file__).resolve().parent
N = 1_000_000
MATRIX = 1000
BINS = 64


def prefix_sum(x, out):
    """`out` is not known to be as long as `x`: its check needs the hoisted range check."""
    acc = 0.0
    for i in range(len(x)):
        acc += x[i]
        out[i] = acc
    return acc


def matvec(a, x, y):
    """Two loops, a[i, j] and x[j]: the nest is checked once, before the outer loop."""
    for i in range(a.shape[0]):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j] * x[j]
        y[i] = s
    return y


def histogram(x, counts, nbins):
    """An index computed from data (and a float -> int conversion): no check can be hoisted."""
    for i in range(len(x)):
        counts[int(x[i] * nbins)] += 1
    return counts


def stencil(x, y):
    """Shifted indices, x[i - 1] and x[i + 1]."""
    for i in range(1, len(x) - 1):
        y[i] = x[i - 1] - 2.0 * x[i] + x[i + 1]
    return y


def cases() -> dict:
    """name -> (function, arguments, C call)."""
    rng = np.random.default_rng(0)
    x, out, y_stencil = rng.random(N), np.zeros(N), np.zeros(N)
    a, v, y = rng.random((MATRIX, MATRIX)), rng.random(MATRIX), np.zeros(MATRIX)
    counts = np.zeros(BINS, np.int64)

    def c(name, *args):  # the arrays' addresses: each array is kept alive by the case
        return name, [arg.ctypes.data if isinstance(arg, np.ndarray) else arg for arg in args]
    return {"prefix_sum": (prefix_sum, (x, out), c("prefix_sum", x, N, out)),
            "matvec": (matvec, (a, v, y), c("matvec", a, MATRIX, MATRIX, v, y)),
            "histogram": (histogram, (x, counts, BINS), c("histogram", x, N, counts, BINS)),
            "stencil": (stencil, (x, y_stencil), c("stencil", x, N, y_stencil))}


def c_library():
    """c/loop_kernels.c built into _build/ and loaded; None without gcc."""
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    (HERE / "_build").mkdir(exist_ok=True)
    library = HERE / "_build" / "loop_kernels.so"
    subprocess.run([gcc, "-O3", "-march=native", "-shared", "-fPIC", "-ffp-contract=off",
                    str(HERE / "c" / "loop_kernels.c"), "-o", str(library)], check=True)
    return ctypes.CDLL(str(library))


def c_call(library, name: str, args: list):
    entry = getattr(library, name)
    entry.argtypes = [ctypes.c_void_p if isinstance(a, int) and a > 1 << 20 else ctypes.c_int64
                      for a in args]
    entry.restype = ctypes.c_double if name == "prefix_sum" else None
    return lambda: entry(*args)


def engines(fn, args, c_entry, library) -> dict:
    """Engine name -> a call with no arguments (None: not available)."""
    def calling(compiled):
        return lambda: compiled(*args)
    calls = {"astjit": calling(jit(fn)), "unchecked": calling(jit(fn, boundscheck=False))}
    try:
        import numba

        calls["Numba"] = calling(numba.njit(fn))
    except ImportError:
        calls["Numba"] = None
    calls["C"] = c_call(library, *c_entry) if library is not None else None
    return calls


def median_times(calls: dict, rounds: int, number: int) -> dict:
    """Median seconds per call of each available call, timed in interleaved rounds."""
    live = {name: call for name, call in calls.items() if call is not None}
    for call in live.values():
        call()  # compile and warm up
    samples: dict = {name: [] for name in live}
    for _ in range(rounds):
        for name, call in live.items():
            start = time.perf_counter()
            for _ in range(number):
                call()
            samples[name].append((time.perf_counter() - start) / number)
    return {name: statistics.median(s) for name, s in samples.items()}


def same_results(fn, args, calls) -> bool:
    """astjit, unchecked and Numba give what CPython gives (on copies: they write)."""
    def run(call_fn):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        return call_fn(*copies), copies
    expected = run(fn)
    others = [jit(fn), jit(fn, boundscheck=False)]
    if calls["Numba"] is not None:
        import numba

        others.append(numba.njit(fn))
    for other in others:
        got = run(other)
        if not all(np.allclose(a, b) for a, b in zip(expected[1], got[1])):
            return False
    return True


HEADER = ["astjit", "unchecked", "Numba", "C", "astjit/Numba", "unchecked/Numba", "astjit/C",
          "Numba/C"]


def loop_times(rounds: int) -> dict:
    """Loop name -> engine -> median seconds per call, the results first checked equal."""
    library = c_library()
    times = {}
    for name, (fn, args, c_entry) in cases().items():
        calls = engines(fn, args, c_entry, library)
        if not same_results(fn, args, calls):
            sys.exit(f"{name}: the results differ")
        times[name] = median_times(calls, rounds, 1)
    return times


def loop_table(times: dict) -> str:
    """The table of `loop_times`: ms per call and the ratios."""
    lines = [f"n = {N} (matvec {MATRIX}x{MATRIX}, histogram {BINS} bins); median ms per call\n",
             f"{'loop':11}" + "".join(f"{h:>16}" for h in HEADER)]
    for name, t in times.items():
        def ratio(a, b, t=t):
            return f"{t[a] / t[b]:.2f}x" if a in t and b in t else "n/a"
        cells = [f"{t[e] * 1e3:.3f}" if e in t else "n/a" for e in HEADER[:4]]
        cells += [ratio("astjit", "Numba"), ratio("unchecked", "Numba"), ratio("astjit", "C"),
                  ratio("Numba", "C")]
        lines.append(f"{name:11}" + "".join(f"{c:>16}" for c in cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args(argv)
    rounds = 25 if options.quick else 101
    print(loop_table(loop_times(rounds)))
    gradients(rounds)


def prefix_loss(x):
    """A running sum read back: the tape holds i and acc; the backward loop adds into dx."""
    acc = 0.0
    s = 0.0
    for i in range(len(x)):
        acc += x[i]
        s += acc * x[i]
    return s


def weighted_pairs(x, w):
    """Three reads per element, two of them accumulated into dx by the backward loop."""
    s = 0.0
    for i in range(1, len(x)):
        s += w[i] * x[i] * x[i - 1]
    return s


def gradients(rounds: int) -> None:
    """grad(fn) against jit(fn), per call, at N elements."""
    from astjit import grad

    rng = np.random.default_rng(1)
    x, w = rng.random(N) / N, rng.random(N)
    print(f"\ngradients at n = {N}: ms per call (median, 10th percentile)\n")
    print(f"{'loop':15}{'jit(f)':>16}{'grad(f)':>16}{'grad/f':>16}{'grad/f p10':>16}")
    for fn, args in ((prefix_loss, (x,)), (weighted_pairs, (x, w))):
        forward, backward = jit(fn), grad(fn)
        calls = {"f": (lambda f=forward, a=args: f(*a)), "grad": (lambda g=backward, a=args: g(*a))}
        samples = {name: [] for name in calls}
        for call in calls.values():
            call()
        for _ in range(rounds):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                samples[name].append(time.perf_counter() - start)
        med = {k: statistics.median(v) for k, v in samples.items()}
        low = {k: sorted(v)[len(v) // 10] for k, v in samples.items()}
        print(f"{fn.__name__:15}{med['f'] * 1e3:>16.3f}{med['grad'] * 1e3:>16.3f}"
              f"{med['grad'] / med['f']:>15.2f}x{low['grad'] / low['f']:>15.2f}x")


if __name__ == "__main__":
    main()
