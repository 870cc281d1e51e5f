"""First-call compile time of every benchmark kernel, astjit against Numba and JAX.

Each measurement runs in a fresh child process, so nothing of the kernel is warm:
no trace, no type inference, no machine code of it exists yet (astjit's disk
cache of functions, `cache=True`, is off, as it is by default, and so are Numba's
and JAX's). astjit's runtime cache, on by default (docs/caching.md), keeps the
object code of the runtime's shared helpers (unboxing, allocation, copies, BLAS
calls), as Numba and JAX ship theirs precompiled: `--runtime-cache warm` (the
default) measures astjit as it runs once anything has used those helpers before:
the children share one folder (`_build/runtime_cache`), filled by one untimed child
per kernel first; `cold` gives each astjit child an empty folder, as on the very
first use of an installation (or with ASTJIT_RUNTIME_CACHE=0). The engine is
imported and initialised first by compiling and calling one unrelated trivial
function, on a float and on a small array (`_warm_up`), so what is timed is the
kernel's own compile, not LLVM's or XLA's start-up (nor, for astjit, the first use of
its array pipeline's code generator: its first array compile ran LLVM code no scalar
compile had touched, about 6 ms of a product's first call, docs/benchmarks.md). The
compile is the first call minus the second (JAX's results blocked on), as in run.py and
array_run.py. Children run one at
a time, pinned to one CPU with one thread (array_run.py's settings, applied by
importing it); the median over `--repeats` children is reported, and the ratio
astjit / min(Numba, JAX) against the target of issue 15 (≤ 0.5).

Kernels: the scalar kernels of kernels.py (Numba only: they have no JAX
version), every array case of array_kernels.py at its first size (softmax at
2048 rows, where XLA generates code; at 4096 it calls YNNPACK's library
kernel instead), the gradient cases of grad_kernels.py and the transforms of
transforms_run.py issue 14 sets targets for (`hessian`, `vmap(grad)`) (JAX only:
Numba has no automatic differentiation). Where a case has no Numba or JAX version of its
own, the child tries `numba.njit` of astjit's function and `jax.jit` of it with
`np` bound to `jax.numpy`; an engine that refuses is shown as n/a with why.

astjit's modules are byte-compiled first (`byte_compile_astjit`), as an installation has
them and as Numba's and JAX's are: a first call imports the compiler's modules it has
not used yet (the AD transforms for a gradient), and with `PYTHONDONTWRITEBYTECODE` set
in a checkout being edited, every child compiled those from source (about 50 ms of CPU
of a gradient's first call). `--installed` times astjit laid out as pip installs a wheel
(cache_run.py's `install`, first on the children's path): its runtime cache is keyed on
the wheel's RECORD, where a development checkout's is keyed on each source file's
modification time, so that in a checkout others edit while this runs, an edit between
the untimed child that fills the runtime cache and the timed ones makes them compile the
runtime afresh (docs/caching.md).
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable

from engines import BUILD_DIR, HERE

ENGINES = ("astjit", "Numba", "JAX")
TARGET = 0.5
SOFTMAX_ROWS = 2048
"""At 4096 rows XLA hands the whole softmax to YNNPACK and generates no code."""
RESULTS_JSON = BUILD_DIR / "compile_latency.json"
RUNTIME_CACHE = BUILD_DIR / "runtime_cache"
"""The astjit children's cache folder in `--runtime-cache warm` runs."""
SITE: str | None = None
"""The folder astjit is installed into with `--installed` (first on the children's path)."""


def _warm(x):
    return x * 2.0 + 1.0


def _warm_up(engine: str) -> None:
    """Import the engine and compile one unrelated trivial function, called on a float and
    on a small array: the engine's whole pipeline initialised. XLA compiles a scalar as a
    0-d array, so JAX's float call alone runs its whole pipeline; astjit compiles scalar
    code and array code by different LLVM pipelines (jit/engine.py), and Numba
    specializes array code apart too, so each is warmed on both, as JAX is."""
    import numpy as np

    warm_args = (1.0, np.ones(2))
    if engine == "astjit":
        import astjit

        warm = astjit.jit(_warm)
        for arg in warm_args:
            warm(arg)
    elif engine == "Numba":
        import numba

        warm = numba.njit(_warm)
        for arg in warm_args:
            warm(arg)
    else:
        import jax

        jax.config.update("jax_enable_x64", True)
        warm = jax.jit(_warm)
        for arg in warm_args:
            jax.block_until_ready(warm(arg))


def with_jax_numpy(fn: types.FunctionType) -> Callable:
    """`fn` over a copy of its globals in which `np` is `jax.numpy`."""
    import jax.numpy as jnp

    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": jnp}, fn.__name__)


def _scalar(engine: str, name: str) -> tuple[Callable, tuple, Callable]:
    import engines
    from kernels import KERNELS

    kernel = next(k for k in KERNELS if k.name == name)
    if engine == "JAX":
        raise NotImplementedError("no JAX version (Python control flow on scalars)")
    maker = engines.make_astjit if engine == "astjit" else engines.make_numba
    runner = maker(kernel)
    return runner.fn, kernel.args, lambda r: r


def _array(engine: str, name: str) -> tuple[Callable, tuple, Callable]:
    import numpy as np
    from array_kernels import CASES, NUMPY_ONLY

    case = next(c for c in CASES if c.name == name)
    if engine in case.missing and case.missing[engine] != NUMPY_ONLY[engine]:
        raise NotImplementedError(case.missing[engine])
    args = case.inputs(SOFTMAX_ROWS if name == "softmax" else case.sizes[0])
    if engine == "astjit":
        import astjit

        return astjit.jit(case.fn), args, lambda r: r
    if engine == "Numba":
        import numba

        return numba.njit(case.numba_fn or case.fn), args, lambda r: r
    import jax

    fn = case.jax_fn or with_jax_numpy(case.fn)
    device_args = tuple(jax.device_put(a) if isinstance(a, np.ndarray) else a for a in args)
    return jax.jit(fn), device_args, jax.block_until_ready


def _grad(engine: str, name: str) -> tuple[Callable, tuple, Callable]:
    from grad_kernels import GRAD_CASES, jax_version

    case = next(c for c in GRAD_CASES if c.name == name)
    if engine == "astjit":
        import astjit

        return astjit.grad(case.fn, argnums=case.argnums), case.args, lambda r: r
    if engine == "Numba":
        raise NotImplementedError("no automatic differentiation")
    import jax
    from grad_run import jax_gradient

    return jax_gradient(case, jax_version(name), "grad"), case.args, jax.block_until_ready


def _transform(engine: str, name: str) -> tuple[Callable, tuple, Callable]:
    from transforms_run import jax_versions, transform_cases

    fn, args, _ = transform_cases()[name]
    if engine == "astjit":
        return fn, args, lambda r: r
    if engine == "Numba":
        raise NotImplementedError("no automatic differentiation")
    return jax_versions()[name], args, lambda r: r  # its results are NumPy arrays: blocked on


TRANSFORMS = ("hessian", "vmap(grad)")
"""transforms_run.py's cases whose first call is measured: issue 14's two targets."""
GROUPS = {"scalar": _scalar, "array": _array, "grad": _grad, "transforms": _transform}


def child(engine: str, group: str, name: str) -> dict:
    """One first call in this (fresh) process: {'seconds': ...} or {'error': ...}."""
    import array_run  # noqa: F401  (one CPU, one thread: its settings, set on import)

    _warm_up(engine)
    try:
        fn, args, block = GROUPS[group](engine, name)
        first = _timed(fn, args, block)
        second = _timed(fn, args, block)
    except Exception as error:  # the engine's refusal is a result: shown as n/a
        lines = str(error).strip().splitlines()
        return {"error": f"{type(error).__name__}: {lines[0] if lines else ''}"[:160]}
    return {"seconds": first[0] - second[0], "cpu": first[1] - second[1]}


def _timed(fn: Callable, args: tuple, block: Callable) -> tuple[float, float]:
    """Wall and process CPU seconds of one call (CPU time is steadier on a loaded machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    block(fn(*args))
    return time.perf_counter() - wall, time.process_time() - cpu


def kernels() -> list[tuple[str, str]]:
    """(group, name) of every kernel measured, in report order."""
    from array_kernels import CASES
    from grad_kernels import GRAD_CASES
    from kernels import KERNELS

    return ([("scalar", k.name) for k in KERNELS] + [("array", c.name) for c in CASES]
            + [("grad", c.name) for c in GRAD_CASES] + [("transforms", n) for n in TRANSFORMS])


def run_child(engine: str, group: str, name: str, timeout: float, runtime_cache: str) -> dict:
    """One child's result; astjit's with the cache folder `--runtime-cache` asks for."""
    command = [sys.executable, str(HERE / "compile_latency.py"), "--child", engine, group, name]
    with tempfile.TemporaryDirectory(prefix="astjit-cold-") as empty:
        folder = RUNTIME_CACHE if runtime_cache == "warm" else empty
        environment = dict(os.environ, ASTJIT_CACHE_DIR=str(folder))
        if SITE is not None:
            environment["PYTHONPATH"] = os.pathsep.join(
                [SITE, *filter(None, [environment.get("PYTHONPATH")])])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  cwd=HERE, env=environment)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:g} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"child exited {done.returncode}: {tail}"[:160]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(group: str, name: str, repeats: int, timeout: float, runtime_cache: str) -> dict:
    """Median first-call compile per engine over `repeats` children, engines interleaved
    (after one untimed astjit child, which fills a warm runtime cache)."""
    seconds: dict[str, list[float]] = {e: [] for e in ENGINES}
    cpu: dict[str, list[float]] = {e: [] for e in ENGINES}
    errors: dict[str, str] = {}
    if runtime_cache == "warm":
        run_child("astjit", group, name, timeout, runtime_cache)
    for _ in range(repeats):
        for engine in ENGINES:
            if engine in errors:
                continue
            got = run_child(engine, group, name, timeout, runtime_cache)
            if "error" in got:
                errors[engine] = got["error"]
            else:
                seconds[engine].append(got["seconds"])
                cpu[engine].append(got["cpu"])
    medians = {e: statistics.median(s) for e, s in seconds.items() if s and e not in errors}
    cpu_medians = {e: statistics.median(s) for e, s in cpu.items() if s and e not in errors}
    return {"group": group, "kernel": name, "median": medians, "samples": seconds,
            "cpu_median": cpu_medians, "cpu_samples": cpu, "errors": errors,
            "ratio": _ratio(medians), "cpu_ratio": _ratio(cpu_medians)}


def _ratio(medians: dict[str, float]) -> float | None:
    """astjit's over the faster peer's, or None where either is missing."""
    peers = [medians[e] for e in ("Numba", "JAX") if e in medians]
    return medians["astjit"] / min(peers) if "astjit" in medians and peers else None


def fmt_ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.1f} ms"


def report(rows: list[dict], runtime_cache: str) -> str:
    lines = [f"{'kernel':<24}{'astjit':>11}{'Numba':>11}{'JAX':>11}  astjit/min  (CPU time)"
             f"  target ≤ {TARGET}"]
    for r in rows:
        cells = "".join(f"{fmt_ms(r['median'].get(e)):>11}" for e in ENGINES)
        ratio, cpu_ratio = ("n/a" if x is None else f"{x:.2f}" for x in (r["ratio"], r["cpu_ratio"]))
        verdict = "" if r["ratio"] is None else ("met" if r["ratio"] <= TARGET else "NOT met")
        lines.append(f"{r['group'] + ':' + r['kernel']:<24}{cells}  {ratio:>10}  {cpu_ratio:>10}"
                     f"  {verdict}")
    lines.append("")
    lines.append("n/a, why:")
    for r in rows:
        for engine, why in r["errors"].items():
            lines.append(f"  {r['kernel']} {engine}: {why}")
    lines.append("")
    lines.append(f"Each figure: median over fresh child processes of (first call - second call) in "
                 f"wall time (the ratio in process CPU time beside it), "
                 f"after the engine compiled one unrelated trivial function; softmax at "
                 f"{SOFTMAX_ROWS} rows, where JAX generates code (at 4096 it calls a library). "
                 f"astjit's runtime cache {RUNTIME_NOTE[runtime_cache]}.")
    return "\n".join(lines)


RUNTIME_NOTE = {
    "warm": "warm: the runtime's helpers linked from object code an earlier process made",
    "cold": "cold: every child compiles the runtime's helpers it calls",
}


def byte_compile_astjit() -> None:
    """Write the `.pyc` files of the children's astjit's modules that are missing or stale."""
    if SITE is not None:
        folder = os.path.join(SITE, "astjit")
    else:
        folder = os.path.dirname(importlib.util.find_spec("astjit").origin)
    compileall.compile_dir(folder, quiet=1)


def main() -> None:
    global SITE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("ENGINE", "GROUP", "NAME"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=3, help="children per engine and kernel")
    parser.add_argument("--only", metavar="NAME", action="append",
                        help="measure only this kernel (repeatable)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per child")
    parser.add_argument("--runtime-cache", choices=tuple(RUNTIME_NOTE), default="warm",
                        help="astjit's runtime cache: shared and filled first, or empty")
    parser.add_argument("--installed", action="store_true",
                        help="astjit installed as from a wheel (see above)")
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(*options.child)))
        return
    if options.installed:
        from cache_run import install

        keep = tempfile.TemporaryDirectory()
        SITE = install(keep.name)
    byte_compile_astjit()
    rows = []
    for group, name in kernels():
        if options.only and name not in options.only:
            continue
        print(f"  {group}:{name} ...", file=sys.stderr)
        rows.append(measure(group, name, options.repeats, options.timeout,
                            options.runtime_cache))
    print(report(rows, options.runtime_cache))
    if SITE is not None:
        print("astjit installed as from a wheel (--installed).")
    BUILD_DIR.mkdir(exist_ok=True)
    results = RESULTS_JSON.with_name("compile_latency_cold.json") if \
        options.runtime_cache == "cold" else RESULTS_JSON
    results.write_text(json.dumps({"target": TARGET, "runtime_cache": options.runtime_cache,
                                   "installed": options.installed, "results": rows}, indent=1))


if __name__ == "__main__":
    main()
