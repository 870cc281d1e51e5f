"""Cold compile vs warm load of jit(cache=True), each in a fresh process (issue 15).

Usage: python benchmarks/cache_run.py [--repeats N]

For the scalar kernels of kernels.py and the MLP training step of array_kernels.py, a
child process times two spans: `import astjit` + the kernel's module + `jit(f,
cache=True)` + the first call ("import to result"), and the first call alone. Cold: an
empty cache folder (the call compiles and writes the entry; a fresh folder each time).
Warm: the folder the cold runs filled (the call loads). Beside them, Numba's own
`njit(cache=True)` for the kernels Numba caches by themselves (those calling no other
Python function). Medians over N processes each; the machine is shared and noisy, so
the ratios matter more than the times. Writes _build/cache_results.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from engines import BUILD_DIR, HERE

ASTJIT_CHILD = """
import time
start = time.perf_counter()
import astjit
from {module} import {function}{setup}
begin = time.perf_counter()
astjit.jit({function}, cache=True)(*ARGS)
end = time.perf_counter()
print(end - start, end - begin)
"""

NUMBA_CHILD = """
import time
start = time.perf_counter()
import numba
from {module} import {function}{setup}
begin = time.perf_counter()
numba.njit(cache=True)({function})(*ARGS)
end = time.perf_counter()
print(end - start, end - begin)
"""

CASES = [
    ("pi_sum", "kernels", "pi_sum", "\nARGS = (1_000_000,)", True),
    ("mandelbrot", "kernels", "mandel_grid", "\nARGS = (200, 150, 200)", False),
    ("fib", "kernels", "fib", "\nARGS = (25,)", False),
    ("newton_sqrt", "kernels", "newton_sum", "\nARGS = (100_000,)", False),
    ("collatz", "kernels", "collatz", "\nARGS = (30_000,)", True),
    ("mlp_step", "array_kernels", "mlp_step",
     ", mlp_batch\nARGS = mlp_batch(64)", False),
]
"""(name, module, function, setup code defining ARGS, whether Numba caches it alone)."""


def run(template: str, case: tuple, folder: str, variable: str) -> tuple[float, float]:
    _, module, function, setup, _ = case
    code = template.format(module=module, function=function, setup=setup)
    env = dict(os.environ, **{variable: folder})
    done = subprocess.run([sys.executable, "-c", code], cwd=HERE, env=env, capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    total, call = map(float, done.stdout.split())
    return total, call


def measure(template: str, case: tuple, variable: str, repeats: int) -> dict[str, float]:
    """Median cold and warm (import to result, first call) over `repeats` processes each."""
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as keep:
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as fresh:
                cold.append(run(template, case, fresh, variable))
        run(template, case, keep, variable)  # fills the folder the warm runs load from
        for _ in range(repeats):
            warm.append(run(template, case, keep, variable))
    return {"cold_total": statistics.median(t for t, _ in cold),
            "cold_call": statistics.median(c for _, c in cold),
            "warm_total": statistics.median(t for t, _ in warm),
            "warm_call": statistics.median(c for _, c in warm)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    results = {}
    print(f"{'kernel':<12} {'engine':<7} {'cold ms':>9} {'warm ms':>9} {'ratio':>6}"
          f" {'cold call':>10} {'warm call':>10} {'ratio':>6}")
    for case in CASES:
        engines = [("astjit", ASTJIT_CHILD, "ASTJIT_CACHE_DIR")]
        if case[4]:
            engines.append(("Numba", NUMBA_CHILD, "NUMBA_CACHE_DIR"))
        for engine, template, variable in engines:
            r = measure(template, case, variable, args.repeats)
            results[f"{case[0]}/{engine}"] = r
            print(f"{case[0]:<12} {engine:<7} {r['cold_total'] * 1e3:9.1f}"
                  f" {r['warm_total'] * 1e3:9.1f} {r['cold_total'] / r['warm_total']:6.1f}"
                  f" {r['cold_call'] * 1e3:10.1f} {r['warm_call'] * 1e3:10.1f}"
                  f" {r['cold_call'] / r['warm_call']:6.1f}", flush=True)
    BUILD_DIR.mkdir(exist_ok=True)
    out = Path(BUILD_DIR) / "cache_results.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
