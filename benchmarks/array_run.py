"""Benchmark astjit's array kernels against NumPy, Numba, JAX and C, single-threaded.

Usage: python benchmarks/array_run.py [--quick] [--only NAME]...

Each case of `CASES` (a NumPy expression and its inputs, at several sizes) runs
under every engine: NumPy (the expression as it is), astjit (`jit`), Numba
(`numba.njit` of the same function), JAX (`jax.jit` of its `jnp` version,
float64, `block_until_ready`), and C twice: strict (`gcc -O3 -march=native`)
and fast-math (`-ffast-math -fopenmp-simd`, which calls glibc's libmvec). The
tables give each engine's median time as a multiple of strict C's, the peak
memory a call allocates beyond its result (tracemalloc: NumPy's allocations,
which astjit's arrays are; Numba's and JAX's are not traced), and the first
call's compile time. Every measurement goes to benchmarks/_build/array_results.json.

Noise is handled as in run.py (README.md): one process, interleaved rounds,
medians, samples of at least 50 ms (20 ms with --quick), results checked
against NumPy's first. The "best" column compares each engine's fastest
sample with strict C's fastest: on a shared, loaded machine it is steadier
than the median (the targets are judged on medians, with the best-sample
ratio beside them). Everything runs on one thread: the environment below is
set before NumPy, Numba or JAX is imported.
"""

from __future__ import annotations

import os

for _name, _value in {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                      "NUMBA_NUM_THREADS": "1",
                      "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_name, _value)

import argparse  # noqa: E402
import ctypes  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
import tracemalloc  # noqa: E402
import types  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402

import numpy as np  # noqa: E402
from engines import BUILD_DIR, HERE  # noqa: E402
from measure import describe, relative_iqr  # noqa: E402
from report import fmt_ratio, fmt_time, table  # noqa: E402
from run import environment  # noqa: E402

RESULTS_JSON = BUILD_DIR / "array_results.json"
C_SOURCE = HERE / "c" / "array_kernels.c"
C_BUILDS = {
    "C strict": ["-O3", "-march=native"],
    "C fast-math": ["-O3", "-march=native", "-ffast-math", "-fopenmp-simd"],
}
"""gcc flags of each C engine (plus -shared -fPIC, and -lmvec -lm)."""
ENGINES = ["C strict", "C fast-math", "NumPy", "Numba", "JAX", "astjit"]
"""Timed in this order every round; strict C is the unit of the ratios."""


# ---- the cases -----------------------------------------------------------------------------

def expression(x, y):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x)


def expression_jax(x, y):
    import jax.numpy as jnp

    return jnp.exp(-x * x) * jnp.sin(3.0 * x) + jnp.tanh(y) / (1.0 + x * x)


def two_ramps(n: int) -> tuple[np.ndarray, ...]:
    return np.linspace(-3.0, 3.0, n), np.linspace(-2.0, 2.0, n)[::-1].copy()


@dataclass(frozen=True)
class ArrayCase:
    """One row group of the tables: a NumPy function, its twins, and its inputs."""

    name: str
    fn: Callable
    """The NumPy version: run by NumPy, compiled by astjit and Numba."""
    jax_fn: Callable | None
    """The same with jax.numpy, or None."""
    inputs: Callable[[int], tuple[np.ndarray, ...]]
    sizes: tuple[int, ...]
    c_name: str | None
    """`<name>` / `time_<name>` in c/array_kernels.c, or None."""
    rtol: float = 1e-12
    atol: float = 1e-13
    """How close every engine's result must be to NumPy's (fast-math C included)."""


CASES = [
    ArrayCase("expression", expression, expression_jax, two_ramps, (10 ** 6, 10 ** 7), "expression"),
]
"""More cases (sum of squares, softmax, matmul, an MLP step) are more entries here."""


# ---- engines: a runner calls the case once (`call`) or times `number` calls ----------------

class CallRunner:
    """A Python callable on fixed arguments; `finish` turns its result into an ndarray."""

    def __init__(self, fn: Callable, args: tuple, finish: Callable = np.asarray):
        self.fn, self.args, self.finish = fn, args, finish
        self.timer = timeit.Timer("finish(f(*args))", globals={"f": fn, "args": args,
                                                                "finish": finish})

    def call(self) -> np.ndarray:
        return np.asarray(self.finish(self.fn(*self.args)))

    def time(self, number: int) -> float:
        return self.timer.timeit(number) / number


class CRunner:
    """`time_<name>` of a C build: the loop, allocation and clock are inside C."""

    def __init__(self, library: ctypes.CDLL, name: str, args: tuple[np.ndarray, ...]):
        self.args = [np.ascontiguousarray(a, dtype=np.float64) for a in args]
        self.pointers = (ctypes.c_void_p * len(args))(*[a.ctypes.data for a in self.args])
        self.n = self.args[0].size
        self.kernel = getattr(library, name)
        self.kernel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        self.timed = getattr(library, f"time_{name}")
        self.timed.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        self.timed.restype = ctypes.c_double

    def call(self) -> np.ndarray:
        out = np.empty(self.n)
        self.kernel(self.pointers, out.ctypes.data, self.n)
        return out

    def time(self, number: int) -> float:
        return self.timed(self.pointers, self.n, number)


def fresh(fn: Callable) -> Callable:
    """A new function object over the same code: no JIT finds it in a cache."""
    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__)


def make_runner(engine: str, case: ArrayCase, args: tuple, c_libraries: dict) -> CallRunner | CRunner:
    """The runner of `engine` for `case`; raises if the engine cannot run it."""
    if engine == "NumPy":
        return CallRunner(case.fn, args)
    if engine == "astjit":
        import astjit

        return CallRunner(astjit.jit(fresh(case.fn)), args)
    if engine == "Numba":
        import numba

        return CallRunner(numba.njit(fresh(case.fn)), args)
    if engine == "JAX":
        if case.jax_fn is None:
            raise NotImplementedError("no JAX version")
        import jax

        jax.config.update("jax_enable_x64", True)
        device_args = tuple(jax.device_put(a) for a in args)
        return CallRunner(jax.jit(fresh(case.jax_fn)), device_args,
                          finish=lambda r: r.block_until_ready())
    if case.c_name is None:
        raise NotImplementedError("no C version")
    library = c_libraries[engine]
    if isinstance(library, Exception):
        raise library
    return CRunner(library, case.c_name, args)


def build_c_libraries() -> dict[str, ctypes.CDLL | Exception]:
    """Compile c/array_kernels.c once per entry of C_BUILDS into _build/."""
    libraries: dict[str, ctypes.CDLL | Exception] = {}
    gcc = shutil.which("gcc")
    BUILD_DIR.mkdir(exist_ok=True)
    for engine, flags in C_BUILDS.items():
        target = BUILD_DIR / f"array_kernels_{engine.split()[-1].replace('-', '_')}.so"
        command = [gcc or "gcc", *flags, "-shared", "-fPIC", str(C_SOURCE), "-o", str(target),
                   "-lmvec", "-lm"]
        try:
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"gcc failed: {done.stderr.strip()[:200]}")
            libraries[engine] = ctypes.CDLL(str(target))
        except (OSError, RuntimeError) as error:
            libraries[engine] = error
    return libraries


# ---- measuring ---------------------------------------------------------------------------

@dataclass
class SizeResult:
    """Everything measured for one case at one size."""

    case: str
    n: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    median: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    extra_bytes: dict[str, int] = field(default_factory=dict)
    """Peak bytes allocated during one call beyond its result (traced engines only)."""
    compile: dict[str, float] = field(default_factory=dict)
    """First call of a fresh jit object minus the steady-state call, in seconds."""
    errors: dict[str, str] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)


def peak_extra_bytes(runner: CallRunner) -> int:
    """The peak traced allocation of one call, less the result it returns."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = runner.call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - base - result.nbytes


def measure_size(case: ArrayCase, n: int, settings: dict, c_libraries: dict) -> SizeResult:
    """Warm up and check every engine, calibrate, then time them in interleaved rounds."""
    out = SizeResult(case.name, n)
    args = case.inputs(n)
    expected = case.fn(*args)
    runners = {}
    for engine in ENGINES:
        try:
            runner = make_runner(engine, case, args, c_libraries)
            result = runner.call()
        except Exception as error:  # one engine's failure must not stop the others
            out.errors[engine] = describe(error)
            continue
        if result.shape != expected.shape or not np.allclose(result, expected, case.rtol, case.atol):
            out.wrong.append(engine)
        runners[engine] = runner
    numbers = {name: max(1, math.ceil(settings["min_sample_s"] / max(r.time(1), 1e-9)))
               for name, r in runners.items()}
    out.samples = {name: [] for name in runners}
    for _ in range(settings["rounds"]):
        for name, runner in runners.items():
            out.samples[name].append(runner.time(numbers[name]))
    out.median = {name: statistics.median(s) for name, s in out.samples.items()}
    out.spread = {name: relative_iqr(s) for name, s in out.samples.items()}
    for name in ("NumPy", "astjit"):
        if name in runners:
            out.extra_bytes[name] = peak_extra_bytes(runners[name])
    return out


def measure_compile(case: ArrayCase, out: SizeResult, repeats: int, c_libraries: dict) -> None:
    """First call of fresh jit objects (astjit, Numba, JAX) minus the steady state; median."""
    args = case.inputs(out.n)
    for engine in ("astjit", "Numba", "JAX"):
        if engine not in out.median:
            continue
        firsts = []
        for _ in range(repeats):
            runner = make_runner(engine, case, args, c_libraries)
            start = time.perf_counter()
            runner.call()
            firsts.append(time.perf_counter() - start)
        out.compile[engine] = statistics.median(firsts) - out.median[engine]


# ---- report --------------------------------------------------------------------------------

TARGETS = [
    # (what, engine, reference, limit): astjit's time over the reference's at most `limit`
    ("astjit ≤ 0.5× JAX", "JAX", 0.5),
    ("astjit ≤ 1.5× C fast-math", "C fast-math", 1.5),
]


def fmt_bytes(count: int | None) -> str:
    if count is None:
        return "–"
    return f"{count / 2 ** 20:.1f} MiB" if abs(count) >= 2 ** 20 else f"{count / 1024:.0f} KiB"


def format_size(result: SizeResult) -> str:
    strict = result.median.get("C strict")
    rows = []
    for engine in ENGINES:
        if engine not in result.median:
            rows.append([engine, "n/a", "", "", "", ""])
            continue
        t, best = result.median[engine], min(result.samples[engine])
        mark = " ✗" if engine in result.wrong else ""
        best_strict = min(result.samples["C strict"]) if strict else None
        rows.append([engine + mark, fmt_time(t), fmt_ratio(t / strict) if strict else "–",
                     f"{result.spread[engine]:.0%}",
                     fmt_ratio(best / best_strict) if best_strict else "–",
                     fmt_bytes(result.extra_bytes.get(engine))])
    title = f"{result.case}, n = 10^{round(math.log10(result.n))} (float64)"
    header = ["engine", "time", "× C strict", "spread", "best × C strict", "extra memory"]
    return title + "\n" + table(header, rows)


def format_report(results: list[SizeResult]) -> str:
    parts = ["Steady state (median per call, single thread; extra memory: peak traced "
             "allocation beyond the result)"]
    parts += [format_size(r) for r in results]
    rows = [[f"{r.case} 10^{round(math.log10(r.n))}",
             *[fmt_time(r.compile[e]) if e in r.compile else "–" for e in ("astjit", "Numba", "JAX")]]
            for r in results if r.compile]
    if rows:
        parts.append("First-call compile (fresh jit object, minus one steady call)\n"
                     + table(["case", "astjit", "Numba", "JAX"], rows))
    lines = ["Targets"]
    for what, reference, limit in TARGETS:
        for r in results:
            if "astjit" in r.median and reference in r.median:
                value = r.median["astjit"] / r.median[reference]
                best = min(r.samples["astjit"]) / min(r.samples[reference])
                ok = "✓" if value <= limit else "✗"
                lines.append(f"  {ok} {what}: {r.case} 10^{round(math.log10(r.n))}: "
                             f"{value:.2f}× (best samples: {best:.2f}×)")
    parts.append("\n".join(lines))
    problems = [f"  {r.case} 10^{round(math.log10(r.n))}: {engine}: {why}"
                for r in results for engine, why in r.errors.items()]
    problems += [f"  {r.case} 10^{round(math.log10(r.n))}: {engine}: result differs from NumPy's"
                 for r in results for engine in r.wrong]
    if problems:
        parts.append("Problems\n" + "\n".join(problems))
    return "\n\n".join(parts)


def vector_calls(c_libraries: dict) -> str:
    """Which libmvec functions the fast-math C build calls (proof it vectorized its math)."""
    library = c_libraries.get("C fast-math")
    if isinstance(library, Exception) or library is None:
        return "n/a"
    try:
        symbols = subprocess.run(["nm", "-D", library._name], capture_output=True, text=True).stdout
    except OSError:
        return "n/a"
    return " ".join(sorted({line.split()[-1].split("@")[0] for line in symbols.splitlines()
                            if "_ZGV" in line})) or "none"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds, 20 ms samples")
    parser.add_argument("--only", metavar="NAME", action="append",
                        choices=[c.name for c in CASES], help="run only this case (repeatable)")
    args = parser.parse_args(argv)
    settings = {"rounds": 5 if args.quick else 15, "min_sample_s": 0.02 if args.quick else 0.05,
                "compile_repeats": 1 if args.quick else 3}
    started = time.perf_counter()
    c_libraries = build_c_libraries()
    results = []
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        for n in case.sizes:
            print(f"  {case.name} n={n} ...", end="", file=sys.stderr, flush=True)
            start = time.perf_counter()
            result = measure_size(case, n, settings, c_libraries)
            if n == case.sizes[0]:
                measure_compile(case, result, settings["compile_repeats"], c_libraries)
            print(f" {time.perf_counter() - start:.1f} s", file=sys.stderr)
            results.append(result)
    print(format_report(results))
    print(f"\nC fast-math calls: {vector_calls(c_libraries)}")
    settings |= environment() | {"c_builds": C_BUILDS, "total_s": round(time.perf_counter() - started, 1),
                                 "threads": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "XLA_FLAGS")}}
    BUILD_DIR.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps({"settings": settings,
                                        "results": [asdict(r) for r in results]}, indent=1))
    print(f"({settings['total_s']} s in all; details in {RESULTS_JSON})")


if __name__ == "__main__":
    main()
