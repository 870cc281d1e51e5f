"""Benchmark astjit's array kernels against NumPy, Numba, JAX and C, single-threaded.

Usage: python benchmarks/array_run.py [--quick] [--only NAME]...

Each case of `array_kernels.CASES` (a NumPy function and its inputs, at one or
more sizes) runs under every engine that has a version of it: NumPy (the
function as it is, or a hand-written twin), astjit (`jit`), Numba
(`numba.njit` of the same function, or of explicit loops where Numba lacks a
NumPy feature), JAX (`jax.jit` of its `jnp` version, float64 enabled,
`block_until_ready`), and C twice: strict (`gcc -O3 -march=native`) and
fast-math (`-ffast-math -fopenmp-simd`, which calls glibc's libmvec). The
tables give each engine's median time as a multiple of the case's unit (strict
C where the case has a C version, NumPy otherwise), the peak memory a call
allocates beyond its result (tracemalloc: NumPy's allocations, which astjit's
arrays are; Numba's and JAX's are not traced), and the first call's compile
time (at a shape not compiled before: `measure_compile`). Each case lists
astjit's targets (its median over a reference engine's); every case has the
compile target too. Every measurement goes to
benchmarks/_build/array_results.json.

Noise is handled as in run.py (README.md): one process, interleaved rounds,
medians, samples of at least 50 ms (20 ms with --quick), results checked
against NumPy's first (shape, dtype, values within the case's tolerance). The
"best" column compares each engine's fastest sample with the unit's fastest:
on a shared, loaded machine it is steadier than the median (the targets are
judged on medians, with the best-sample ratio beside them). Everything runs on
one thread: the environment below is set, and the process is pinned to one CPU,
before NumPy, Numba or JAX is imported.
"""

from __future__ import annotations

import os

for _name, _value in {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                      "NUMBA_NUM_THREADS": "1",
                      "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1"}.items():
    os.environ.setdefault(_name, _value)
if hasattr(os, "sched_setaffinity"):
    # XLA's CPU runtime ignores the flags above for its intra-op pool (a 1024² dot ran on
    # two threads) but sizes the pool from the CPUs the process may use: allow one.
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

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
from collections.abc import Callable  # noqa: E402
from dataclasses import asdict, dataclass, field  # noqa: E402

import numpy as np  # noqa: E402
from array_kernels import CASES, ArrayCase  # noqa: E402
from engines import BUILD_DIR, HERE  # noqa: E402
from grad_run import fresh_copy  # noqa: E402
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
"""Timed in this order every round."""


# ---- engines: a runner calls the case once (`call`) or times `number` calls ----------------

def as_arrays(result: object) -> list[np.ndarray]:
    """A result as ndarrays: one for an array or a scalar, one per item of a tuple."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [np.asarray(item) for item in items]


class CallRunner:
    """A Python callable on fixed arguments; `finish` (JAX's block_until_ready) ends each call."""

    def __init__(self, fn: Callable, args: tuple, finish: Callable | None = None):
        self.fn, self.args, self.finish = fn, args, finish or (lambda result: result)
        self.timer = timeit.Timer("finish(f(*args))" if finish else "f(*args)",
                                  globals={"f": fn, "args": args, "finish": finish})

    def call(self) -> list[np.ndarray]:
        return as_arrays(self.finish(self.fn(*self.args)))

    def time(self, number: int) -> float:
        return self.timer.timeit(number) / number


class CRunner:
    """`time_<name>` of a C build: the loop, allocation and clock are inside C.

    The inputs go to C as float64 `rows` × `cols` (1 × n for a vector); the
    result is a double (`scalar`) or an array shaped like the first input.
    """

    def __init__(self, library: ctypes.CDLL, name: str, args: tuple[np.ndarray, ...], scalar: bool):
        self.args = [np.ascontiguousarray(a, dtype=np.float64) for a in args]
        self.pointers = (ctypes.c_void_p * len(args))(*[a.ctypes.data for a in self.args])
        shape = self.args[0].shape
        self.dims = (1, shape[0]) if len(shape) == 1 else shape
        self.scalar = scalar
        self.kernel = getattr(library, name)
        self.kernel.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                *([] if scalar else [ctypes.c_void_p])]
        self.kernel.restype = ctypes.c_double if scalar else None
        self.timed = getattr(library, f"time_{name}")
        self.timed.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
        self.timed.restype = ctypes.c_double

    def call(self) -> list[np.ndarray]:
        if self.scalar:
            return [np.asarray(self.kernel(self.pointers, *self.dims))]
        out = np.empty(self.args[0].shape)
        self.kernel(self.pointers, *self.dims, out.ctypes.data)
        return [out]

    def time(self, number: int) -> float:
        return self.timed(self.pointers, *self.dims, number)


def make_runner(engine: str, case: ArrayCase, args: tuple, c_libraries: dict,
                scalar: bool = False) -> CallRunner | CRunner:
    """The runner of `engine` for `case` (fresh jit objects: nothing cached); raises if none."""
    if engine.startswith("C "):
        if case.c_name is None or engine in case.missing:
            raise NotImplementedError(case.missing.get(engine, "no C version"))
        library = c_libraries[engine]
        if isinstance(library, Exception):
            raise library
        return CRunner(library, case.c_name, args, scalar)
    fn = case.version(engine)
    if engine == "NumPy":
        return CallRunner(fn, args)
    if engine == "astjit":
        import astjit

        return CallRunner(astjit.jit(fresh_copy(fn)), args)
    if engine == "Numba":
        import numba

        return CallRunner(numba.njit(fresh_copy(fn)), args)
    import jax

    jax.config.update("jax_enable_x64", True)
    # Arrays only: a Python float stays weakly typed (lr keeps float32 parameters float32).
    device_args = tuple(jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args)
    return CallRunner(jax.jit(fresh_copy(fn)), device_args, finish=jax.block_until_ready)


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
    label: str
    """The case and its size, as the tables name them."""
    unit: str
    """The engine whose median every ratio divides by."""
    dtype: str
    """The first input's."""
    samples: dict[str, list[float]] = field(default_factory=dict)
    median: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    extra_bytes: dict[str, int] = field(default_factory=dict)
    """Peak bytes allocated during one call beyond its result (traced engines only)."""
    compile: dict[str, float] = field(default_factory=dict)
    compile_seen: dict[str, float] = field(default_factory=dict)
    """First call of a fresh jit object minus the steady-state call, in seconds."""
    errors: dict[str, str] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)


def same_result(expected: list[np.ndarray], got: list[np.ndarray], case: ArrayCase) -> bool:
    """As many arrays, each of NumPy's shape and dtype and within the case's tolerance."""
    return len(got) == len(expected) and all(
        g.shape == e.shape and g.dtype == e.dtype and np.allclose(g, e, case.rtol, case.atol)
        for g, e in zip(got, expected, strict=False))


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
    return peak - base - sum(array.nbytes for array in result)


def measure_size(case: ArrayCase, n: int, settings: dict, c_libraries: dict) -> SizeResult:
    """Warm up and check every engine, calibrate, then time them in interleaved rounds."""
    args = case.inputs(n)
    out = SizeResult(case.name, n, f"{case.name} {case.label(n)}", case.unit, str(args[0].dtype))
    expected = as_arrays(case.version("NumPy")(*args))
    scalar = len(expected) == 1 and expected[0].ndim == 0
    runners = {}
    for engine in ENGINES:
        if engine in case.missing:
            continue
        try:
            runner = make_runner(engine, case, args, c_libraries, scalar)
            result = runner.call()
        except Exception as error:  # one engine's failure must not stop the others
            out.errors[engine] = describe(error)
            continue
        if not same_result(expected, result, case):
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
    """First call of fresh jit objects (astjit, Numba, JAX) minus a second call; median.

    Each call is at a size not compiled before in the process (`out.n` plus 1, 2, ...):
    JAX caches traces per shape (jax.numpy's own jitted functions among them), so a
    fresh `jax.jit` of a copy of the function at a shape already traced traces in a
    fraction of the time (softmax here, `jax_log_compiles`: 0.6-0.8 ms of tracing at a
    shape seen, 3-11 ms at a new one; lowering and XLA's compile ran either way). A
    function compiled for the first time gets no such help. astjit and Numba compile per dtype and ndim, not
    shape: for them the size changes nothing. JAX's figure at the measured size, with
    its trace reused, is kept beside (`compile_seen`).
    """
    for engine in ("astjit", "Numba", "JAX"):
        if engine not in out.median:
            continue
        firsts, seen = [], []
        for k in range(repeats):
            firsts.append(_first_call(engine, case, case.inputs(out.n + 1 + k), c_libraries))
            seen.append(_first_call(engine, case, case.inputs(out.n), c_libraries))
        out.compile[engine] = statistics.median(firsts)
        out.compile_seen[engine] = statistics.median(seen)


def _first_call(engine: str, case: ArrayCase, args: tuple, c_libraries: dict) -> float:
    """A fresh runner's first call minus its second: the compile, in seconds."""
    runner = make_runner(engine, case, args, c_libraries)
    start = time.perf_counter()
    runner.call()
    first = time.perf_counter() - start
    start = time.perf_counter()
    runner.call()
    return first - (time.perf_counter() - start)


# ---- report --------------------------------------------------------------------------------

COMPILE_TARGETS = [("JAX", 1.0)]
"""(reference, limit) for every case's first-call compile: astjit's over the reference's."""
COMPILERS = ["astjit", "Numba", "JAX"]


def fmt_bytes(count: int | None) -> str:
    if count is None:
        return "–"
    return f"{count / 2 ** 20:.1f} MiB" if abs(count) >= 2 ** 20 else f"{count / 1024:.0f} KiB"


def median_ratio(result: SizeResult, engine: str, reference: str) -> float | None:
    times = result.median
    return times[engine] / times[reference] if engine in times and reference in times else None


def best_ratio(result: SizeResult, engine: str, reference: str) -> float | None:
    """The same with each engine's fastest sample: steadier on a loaded machine."""
    samples = result.samples
    if engine not in samples or reference not in samples:
        return None
    return min(samples[engine]) / min(samples[reference])


def fmt_optional(ratio: float | None) -> str:
    return "–" if ratio is None else fmt_ratio(ratio)


def format_size(result: SizeResult, case: ArrayCase) -> str:
    rows = []
    for engine in ENGINES:
        if engine not in result.median:
            rows.append([engine, "n/a", "", "", "", ""])
            continue
        mark = " ✗" if engine in result.wrong else ""
        rows.append([engine + mark, fmt_time(result.median[engine]),
                     fmt_optional(median_ratio(result, engine, result.unit)),
                     f"{result.spread[engine]:.0%}",
                     fmt_optional(best_ratio(result, engine, result.unit)),
                     fmt_bytes(result.extra_bytes.get(engine))])
    header = ["engine", "time", f"× {result.unit}", "spread", f"best × {result.unit}", "extra memory"]
    notes = "".join(f"\n  {note}" for note in case.notes())
    return f"{result.label} ({result.dtype})\n" + table(header, rows) + notes


def target_line(what: str, result: SizeResult, value: float | None, best: float | None,
                limit: float) -> str:
    if value is None:
        return f"  – {result.label}: {what}: not measured"
    mark = "✓" if value <= limit else "✗"
    best_text = f" (best samples: {best:.2f}×)" if best is not None else ""
    return f"  {mark} {result.label}: {what}: {value:.2f}×{best_text}"


def target_lines(results: list[SizeResult]) -> list[str]:
    """Every case's targets at every size (medians, best samples beside), then compile."""
    cases = {case.name: case for case in CASES}
    lines = []
    for r in results:
        for reference, limit in cases[r.case].targets:
            lines.append(target_line(f"astjit ≤ {limit:g}× {reference}", r,
                                     median_ratio(r, "astjit", reference),
                                     best_ratio(r, "astjit", reference), limit))
    for r in results:
        if not r.compile:
            continue
        for reference, limit in COMPILE_TARGETS:
            value = (r.compile["astjit"] / r.compile[reference]
                     if "astjit" in r.compile and reference in r.compile else None)
            lines.append(target_line(f"compile ≤ {limit:g}× {reference}'s", r, value, None, limit))
    return lines


def format_report(results: list[SizeResult]) -> str:
    cases = {case.name: case for case in CASES}
    parts = ["Steady state (median per call, single thread; best: fastest sample over the unit's "
             "fastest; extra memory: peak traced allocation beyond the result)"]
    parts += [format_size(r, cases[r.case]) for r in results]
    rows = [[r.label, *[fmt_time(r.compile[e]) if e in r.compile else "–" for e in COMPILERS],
             fmt_time(r.compile_seen["JAX"]) if "JAX" in r.compile_seen else "–"]
            for r in results if r.compile]
    if rows:
        parts.append("First-call compile (a fresh jit object's first call minus its second, at a "
                     "shape not compiled before; JAX seen: at the shape it already traced, where it "
                     "reuses the trace)\n"
                     + table(["case", *COMPILERS, "JAX seen"], rows))
    parts.append("\n".join(["Targets", *target_lines(results)]))
    problems = [f"  {r.label}: {engine}: {why}" for r in results for engine, why in r.errors.items()]
    problems += [f"  {r.label}: {engine}: result differs from NumPy's"
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
            print(f"  {case.name} {case.label(n)} ...", end="", file=sys.stderr, flush=True)
            start = time.perf_counter()
            result = measure_size(case, n, settings, c_libraries)
            if n in (case.compile_sizes or case.sizes[:1]):
                measure_compile(case, result, settings["compile_repeats"], c_libraries)
            print(f" {time.perf_counter() - start:.1f} s", file=sys.stderr)
            results.append(result)
    print(format_report(results))
    print(f"\nC fast-math calls: {vector_calls(c_libraries)}")
    settings |= environment() | {"c_builds": C_BUILDS, "total_s": round(time.perf_counter() - started, 1),
                                 "threads": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "XLA_FLAGS")},
                                 "cpu_affinity": sorted(os.sched_getaffinity(0))}
    BUILD_DIR.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps({"settings": settings, "targets": target_lines(results),
                                        "results": [asdict(r) for r in results]}, indent=1))
    print(f"({settings['total_s']} s in all; details in {RESULTS_JSON})")


if __name__ == "__main__":
    main()
