"""Parallel loops: serial astjit, `jit(parallel=True)`, NumPy and Numba `parallel=True`.

Issue 15's target: the fused expression `exp(-x*x)*sin(y) + x/(1+y*y)` over 10^7 doubles
at least 1.8x faster with `parallel=True` than serially on 2 cores. Also its sum (a
reduction) and the same sum written as a `prange` loop. Every engine's result is checked
against NumPy's first; then interleaved rounds (each engine once per round), medians,
ratios to serial astjit. Threads: ASTJIT_NUM_THREADS and NUMBA_NUM_THREADS (default: the
CPUs this process may run on; run under `taskset -c 0,1` for 2 cores).

    python benchmarks/parallel_run.py [--quick] [--n 10000000] [--fifo]

A second table reads the CPU time of each thread of the process (Linux's /proc, in
nanoseconds where the kernel keeps schedstat): serial astjit's per call against the
calling thread's and the busiest other thread's in a parallel call. The serial time over
the busier of the two is the speed-up the work's split allows on idle cores (memory
bandwidth aside); the serial time over their sum, halved, says how much more CPU the
parallel call spends. On a loaded machine, where wall times say little, they show whether
the work divides evenly and what the hand-off costs. The threads' CPU over those calls'
wall time (times the threads) says how much of it they ran: what is missing is time the
threads waited (for each other, for the pool's hand-off) or were kept from a CPU (other
processes, the hypervisor).

`--fifo` runs the process (and the threads it starts) under the real-time SCHED_FIFO
policy (Linux; root or CAP_SYS_NICE): it then takes the CPUs from the machine's ordinary
processes, so that wall times are those of idle cores even on a loaded machine (the
kernel still leaves ordinary processes 5% of each second). Keep such runs short.

The medians go to benchmarks/_build/parallel_results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from astjit import jit, prange

RESULTS_JSON = Path(__file__).resolve().parent / "_build" / "parallel_results.json"


def fused(x, y):
    return np.exp(-x * x) * np.sin(y) + x / (1.0 + y * y)


def reduction(x, y):
    return np.sum(np.exp(-x * x) * np.sin(y) + x / (1.0 + y * y))


def prange_sum(x, y):
    s = 0.0
    for i in prange(x.shape[0]):
        s += np.exp(-x[i] * x[i]) * np.sin(y[i]) + x[i] / (1.0 + y[i] * y[i])
    return s


def numba_versions() -> dict:
    """Numba's `njit(parallel=True)` of the same functions (prange as numba.prange)."""
    try:
        import numba
    except ImportError:
        return {}

    def numba_prange_sum(x, y):
        s = 0.0
        for i in numba.prange(x.shape[0]):
            s += np.exp(-x[i] * x[i]) * np.sin(y[i]) + x[i] / (1.0 + y[i] * y[i])
        return s

    return {"fused": numba.njit(parallel=True)(fused),
            "reduction": numba.njit(parallel=True)(reduction),
            "prange_sum": numba.njit(parallel=True)(numba_prange_sum)}


def thread_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process, by thread id (/proc/self/task): the
    scheduler's nanoseconds (schedstat), else utime + stime in clock ticks (which the
    kernel samples: coarse over few calls)."""
    tick, times = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as stat:
                times[int(tid)] = int(stat.read().split()[0]) / 1e9
            continue
        except (OSError, ValueError, IndexError):
            pass
        with open(f"/proc/self/task/{tid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        times[int(tid)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return times


def cpu_split(serial, parallel, calls: int, threads: int) -> tuple[float, float, float, float]:
    """Serial CPU per call; the calling thread's, the busiest other thread's and all
    threads' CPU per parallel call over the calls' wall time and `threads` (the share of
    the wall time the threads ran)."""
    import threading

    start = time.thread_time()
    for _ in range(calls):
        serial()
    serial_cpu = (time.thread_time() - start) / calls
    before, wall = thread_cpu(), time.perf_counter()
    for _ in range(calls):
        parallel()
    wall, after = time.perf_counter() - wall, thread_cpu()
    main = threading.get_native_id()
    per = {t: (after[t] - before.get(t, 0.0)) / calls for t in after}
    return (serial_cpu, per[main], max((v for t, v in per.items() if t != main), default=0.0),
            sum(per.values()) * calls / (threads * wall))


def timed(call, seconds: float) -> float:
    """Seconds per call, over at least `seconds` of calls."""
    count, start = 0, time.perf_counter()
    while True:
        call()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--n", type=int, default=10_000_000, help="elements per array")
    parser.add_argument("--fifo", action="store_true",
                        help="run under SCHED_FIFO: wall times of idle cores on a loaded machine")
    options = parser.parse_args()
    if options.fifo:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    rounds, seconds = (6, 0.1) if options.quick else (25, 0.15)  # short rounds: drift-robust
    x, y = np.linspace(-2.0, 2.0, options.n), np.linspace(3.0, -1.0, options.n)
    numba = numba_versions()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = int(os.environ.get("ASTJIT_NUM_THREADS") or cpus)
    print(f"{options.n:.0e} doubles, {cpus} CPUs, ASTJIT_NUM_THREADS="
          f"{os.environ.get('ASTJIT_NUM_THREADS', '(all)')}{', SCHED_FIFO' if options.fifo else ''}"
          f"; median per call, ratio to serial astjit")
    results = {}
    for fn in (fused, reduction, prange_sum):
        expected = reduction(x, y) if fn is prange_sum else fn(x, y)
        engines = {"astjit serial": jit(fn), "astjit parallel": jit(fn, parallel=True),
                   "NumPy": reduction if fn is prange_sum else fn}
        if fn.__name__ in numba:
            engines["Numba parallel"] = numba[fn.__name__]
        for name, f in engines.items():
            got = f(x, y)  # compiles
            assert np.allclose(got, expected, rtol=1e-9), (fn.__name__, name)
        samples = {name: [] for name in engines}
        for _ in range(rounds):
            for name, f in engines.items():
                samples[name].append(timed(lambda f=f: f(x, y), seconds))
        medians = {name: statistics.median(s) for name, s in samples.items()}
        base = medians["astjit serial"]
        print(f"{fn.__name__}")
        for name, t in medians.items():
            print(f"  {name:16s} {t * 1e3:8.2f} ms   {base / t:5.2f}x")
        serial_cpu, main, worker, busy = cpu_split(lambda: engines["astjit serial"](x, y),
                                                   lambda: engines["astjit parallel"](x, y),
                                                   5 if options.quick else 20, threads)
        print(f"  CPU per call: serial {serial_cpu * 1e3:.1f} ms; parallel: calling thread "
              f"{main * 1e3:.1f} ms, busiest other {worker * 1e3:.1f} ms -> "
              f"{serial_cpu / max(main, worker, 1e-9):.2f}x on idle cores, "
              f"{2 * serial_cpu / max(main + worker, 1e-9):.2f}x if it split evenly; "
              f"the threads ran {busy:.1%} of those calls' wall time")
        results[fn.__name__] = {**medians, "cpu": {"serial": serial_cpu, "main": main,
                                                   "busiest other": worker, "busy": busy}}
    RESULTS_JSON.parent.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps({"n": options.n, "cpus": cpus, "fifo": options.fifo,
                                        "medians": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
