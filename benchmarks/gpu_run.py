"""astjit's GPU target against CuPy array code (and JAX on the GPU), on a real CUDA GPU.

Usage: python benchmarks/gpu_run.py [--quick] [--only NAME]...
       python benchmarks/gpu_run.py --sim     # the same code paths at tiny sizes, no GPU

Needs CuPy and a CUDA device; without one it says so and exits 0 (gpu_launches.py
counts launches and bytes without a GPU). benchmarks/gpu_check.sh sets up a venv and
runs this after the GPU tests.

The cases, each astjit against the same program as CuPy array operations (one CuPy
kernel per elementwise op or reduction) and, where JAX sees a GPU, `jax.jit` of its
`jnp` twin:

| case | size | astjit |
|---|---|---|
| expression | `exp(-x*x)*sin(3x) + tanh(y)/(1+x*x)`, 10^8 float32 | `jit(f, target="gpu")` |
| softmax | rows of 16384×4096 float32 | `jit(f, target="gpu")` |
| mlp_step | SGD step of a 784→256→10 ReLU MLP, float32, batch 256, 8192 | `jit` (value_and_grad) |
| mandelbrot | escape counts, 4096×4096 points, 200 iterations, float64 | `vectorize(escape)` |

CuPy's MLP step is the backward pass written by hand (array_kernels.mlp_step_numpy);
its mandelbrot is the NumPy-style array loop (`where` over the whole grid each
iteration), no hand-written kernel.

Timing: every engine is called once first (compile, NVRTC, autotuning), its result
checked against CuPy's; then interleaved rounds, each timing a batch of calls of
every engine: `cupy.cuda.Device().synchronize()`, `time.perf_counter()`, the calls,
synchronize (JAX: `block_until_ready` on the last result), `perf_counter()`. A batch
lasts at least 20 ms (calibrated once). The tables give medians over the rounds, the
ratio to CuPy, and for the memory-bound cases the achieved bandwidth: the minimum
bytes (inputs read once, outputs written once) / median time (GB/s, for astjit and
CuPy alike: CuPy's own traffic is larger, see gpu_launches.py), and that as a % of the
card's peak: memoryClockRate (kHz) × 2 × memoryBusWidth / 8 from the device
properties (or the same device attributes where the properties lack them, as on
CUDA 13); if neither is known, a measured device-to-device copy stands in for the
peak, and the table says which.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside CuPy's pool

import numpy as np  # noqa: E402
from array_kernels import (  # noqa: E402
    MLP_LAYERS,
    expression,
    expression_jax,
    mlp_batch,
    mlp_step,
    mlp_step_jax,
    softmax,
    softmax_jax,
)
from kernels import escape  # noqa: E402
from report import fmt_ratio, fmt_time  # noqa: E402

EXPRESSION_N = 10 ** 8
SOFTMAX_SHAPE = (16384, 4096)
MLP_BATCHES = (256, 8192)
MANDEL_SIDE, MANDEL_ITERATIONS = 4096, 200
SIM_SIZES = {"expression": 4096, "softmax": (64, 256), "mlp": (32,), "mandel": 64}
"""--sim: tiny sizes, for checking the script's code paths on the host simulator."""


# ---- the CuPy array code (xp: cupy, or numpy for --sim) --------------------------------------

def expression_xp(xp):
    def expression_arrays(x, y):
        return xp.exp(-x * x) * xp.sin(3.0 * x) + xp.tanh(y) / (1.0 + x * x)
    return expression_arrays


def softmax_xp(xp):
    def softmax_arrays(x):
        e = xp.exp(x - xp.max(x, axis=1, keepdims=True))
        return e / xp.sum(e, axis=1, keepdims=True)
    return softmax_arrays


def mlp_step_xp(xp):
    def mlp_step_arrays(w1, b1, w2, b2, x, onehot, lr):
        """array_kernels.mlp_step_numpy with xp: the backward pass by hand."""
        pre = x @ w1 + b1
        h = xp.maximum(pre, 0)
        logits = h @ w2 + b2
        e = xp.exp(logits - logits.max(axis=1, keepdims=True))
        d_logits = (e / e.sum(axis=1, keepdims=True) - onehot) / x.shape[0]
        d_h = (d_logits @ w2.T) * (pre > 0)
        return (w1 - lr * (x.T @ d_h), b1 - lr * d_h.sum(axis=0),
                w2 - lr * (h.T @ d_logits), b2 - lr * d_logits.sum(axis=0))
    return mlp_step_arrays


def mandel_xp(xp):
    def mandel_arrays(cr, ci, max_iter):
        """`escape` over the grid as array code: every point steps each iteration, the
        escaped ones frozen by `where`, their count no longer incremented."""
        shape = xp.broadcast_shapes(cr.shape, ci.shape)
        zr, zi = xp.zeros(shape), xp.zeros(shape)
        n = xp.zeros(shape, dtype=xp.int64)
        for _ in range(max_iter):
            active = zr * zr + zi * zi <= 4.0
            zr, zi = (xp.where(active, zr * zr - zi * zi + cr, zr),
                      xp.where(active, 2.0 * zr * zi + ci, zi))
            n += active
        return n
    return mandel_arrays


def mandel_jax(cr, ci, max_iter):
    import jax
    import jax.numpy as jnp

    shape = jnp.broadcast_shapes(cr.shape, ci.shape)

    def body(_, state):
        zr, zi, n = state
        active = zr * zr + zi * zi <= 4.0
        return (jnp.where(active, zr * zr - zi * zi + cr, zr),
                jnp.where(active, 2.0 * zr * zi + ci, zi), n + active)
    zero = jnp.zeros(shape, cr.dtype)
    return jax.lax.fori_loop(0, max_iter, body, (zero, zero, jnp.zeros(shape, jnp.int32)))[2]


# ---- engines and timing ----------------------------------------------------------------------

@dataclass
class Engine:
    name: str
    call: Callable[[], object]
    finish: Callable[[object], None]
    times: list[float] = field(default_factory=list)
    number: int = 1
    problem: str = ""


@dataclass
class CaseResult:
    name: str
    label: str
    engines: list[Engine]
    minimum_bytes: int | None = None
    """Inputs read once + outputs written once (memory-bound cases)."""

    def median(self, engine: str) -> float | None:
        for e in self.engines:
            if e.name == engine and e.times:
                return statistics.median(e.times)
        return None


class Gpu:
    """CuPy and the device: synchronisation, transfers, the peak bandwidth."""

    def __init__(self, sim: bool):
        self.sim = sim
        if sim:
            self.xp, self.target = np, "cuda-sim"
            self.name = "cuda-sim (host simulator)"
            return
        import cupy

        self.xp, self.target = cupy, "gpu"
        self.device = cupy.cuda.Device()
        self.properties = cupy.cuda.runtime.getDeviceProperties(self.device.id)
        name = self.properties.get("name", b"?")
        self.name = name.decode() if isinstance(name, bytes) else str(name)

    def synchronize(self, _result=None) -> None:
        if not self.sim:
            self.device.synchronize()

    def put(self, value):
        return self.xp.asarray(value) if isinstance(value, np.ndarray) else value

    def get(self, value) -> np.ndarray:
        if self.sim:
            return np.asarray(value)
        return value.get() if hasattr(value, "get") else np.asarray(value)

    def peak_bandwidth(self) -> tuple[float | None, str]:
        """Bytes per second: the memory's peak from the device, else None; and where from."""
        if self.sim:
            return None, "no device"
        import cupy

        runtime = cupy.cuda.runtime
        clock = self.properties.get("memoryClockRate", 0) or 0
        width = self.properties.get("memoryBusWidth", 0) or 0
        source = "device properties memoryClockRate × 2 × memoryBusWidth/8"
        if not (clock and width):
            try:
                clock = runtime.deviceGetAttribute(
                    getattr(runtime, "cudaDevAttrMemoryClockRate", 36), self.device.id)
                width = runtime.deviceGetAttribute(
                    getattr(runtime, "cudaDevAttrGlobalMemoryBusWidth", 37), self.device.id)
                source = "device attributes MemoryClockRate × 2 × GlobalMemoryBusWidth/8"
            except Exception:  # noqa: BLE001 - any failure: fall back to a measured copy
                clock = width = 0
        if clock and width:
            return clock * 1e3 * 2 * width / 8, source
        return None, "not reported by the device"

    def copy_bandwidth(self, nbytes: int = 1 << 31, repeats: int = 10) -> float:
        """A device-to-device copy of `nbytes`, read + written, per second (median)."""
        xp = self.xp
        a = xp.ones(nbytes // 4, dtype=xp.float32)
        b = xp.empty_like(a)
        times = []
        for _ in range(repeats + 1):
            self.synchronize()
            start = time.perf_counter()
            b[...] = a
            self.synchronize()
            times.append(time.perf_counter() - start)
        del a, b
        return 2 * nbytes / statistics.median(times[1:])


def run_case(name: str, label: str, engines: list[Engine], check: Callable[[object, object], str],
             rounds: int, sample_s: float, gpu: Gpu, minimum_bytes: int | None = None) -> CaseResult:
    """First calls (checked against the first engine's result), then interleaved rounds."""
    reference = None
    for engine in engines:
        try:
            result = engine.call()
            engine.finish(result)
            if reference is None:
                reference = result
            else:
                engine.problem = check(reference, result)
        except Exception as error:  # noqa: BLE001 - report, go on with the other engines
            engine.problem = f"failed: {type(error).__name__}: {error}"[:300]
    running = [e for e in engines if not e.problem.startswith("failed")]
    for engine in running:  # calibrate: a batch lasts at least sample_s
        while True:
            took = batch(engine, gpu)
            if took * engine.number >= sample_s or engine.number >= 1 << 16:
                break
            wanted = int(sample_s / max(took, 1e-9)) + 1
            engine.number = max(engine.number * 2, wanted)
    for _ in range(rounds):
        for engine in running:
            engine.times.append(batch(engine, gpu))
    return CaseResult(name, label, engines, minimum_bytes)


def batch(engine: Engine, gpu: Gpu) -> float:
    """Seconds per call over a batch of `engine.number` calls, synchronised at both ends."""
    gpu.synchronize()
    start = time.perf_counter()
    result = None
    for _ in range(engine.number):
        result = engine.call()
    engine.finish(result)
    gpu.synchronize()
    return (time.perf_counter() - start) / engine.number


def close(rtol: float, atol: float, gpu: Gpu) -> Callable[[object, object], str]:
    def check(expected, got) -> str:
        pairs = list(zip(_items(expected), _items(got)))
        if len(pairs) != len(_items(expected)) or len(_items(got)) != len(pairs):
            return "✗ a different number of results"
        for e, g in pairs:
            e, g = gpu.get(e), np.asarray(gpu.get(g))
            if e.shape != g.shape:
                return f"✗ shape {g.shape}, CuPy's {e.shape}"
            if not np.allclose(g, e, rtol=rtol, atol=atol):
                return f"✗ differs from CuPy's result (max |Δ| {np.max(np.abs(g - e)):.3g})"
        return ""
    return check


def counts_agree(gpu: Gpu) -> Callable[[object, object], str]:
    """Escape counts: FMA contraction in CuPy's kernels may move a boundary point."""
    def check(expected, got) -> str:
        e, g = gpu.get(expected), np.asarray(gpu.get(got))
        if e.shape != g.shape:
            return "✗ shape differs"
        differ = float(np.mean(e != g))
        return "" if differ == 0 else (f"{differ:.2e} of the counts differ"
                                       + (" ✗" if differ > 1e-3 else ""))
    return check


def _items(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


# ---- the cases -------------------------------------------------------------------------------

def jax_gpu():
    """jax with a GPU device, or None (and why)."""
    try:
        import jax

        jax.config.update("jax_enable_x64", True)  # float64 mandelbrot; float32 stays float32
        # float32 matrix products in float32, as CuPy's and astjit's (JAX's GPU default is
        # TF32, whose results differ from theirs in the fourth digit)
        jax.config.update("jax_default_matmul_precision", "highest")
        jax.devices("gpu")
        return jax, ""
    except Exception as error:  # noqa: BLE001 - not installed, or no GPU backend
        return None, f"JAX on the GPU: n/a ({type(error).__name__}: {str(error).splitlines()[0][:120]})"


def engines_for(gpu: Gpu, astjit_fn: Callable, xp_fn: Callable, jax_fn: Callable | None,
                args: tuple, notes: list[str]) -> list[Engine]:
    on_device = tuple(gpu.put(a) for a in args)
    engines = [Engine("CuPy", lambda: xp_fn(*on_device), gpu.synchronize),
               Engine("astjit", lambda: astjit_fn(*on_device), gpu.synchronize)]
    if jax_fn is not None and not gpu.sim:
        jax, why = jax_gpu()
        if jax is None:
            if why not in notes:
                notes.append(why)
        else:
            jitted = jax.jit(jax_fn, static_argnums=tuple(i for i, a in enumerate(args)
                                                           if isinstance(a, int)))
            on_jax = tuple(jax.device_put(a, jax.devices("gpu")[0]) if isinstance(a, np.ndarray)
                           else a for a in args)
            engines.append(Engine("JAX", lambda: jitted(*on_jax), jax.block_until_ready))
    return engines


def cases(gpu: Gpu, only: list[str], rounds: int, sample_s: float, notes: list[str]) -> list[CaseResult]:
    import astjit

    xp, sim, found = gpu.xp, gpu.sim, []

    def wanted(name: str) -> bool:
        return not only or name in only

    if wanted("expression"):
        n = SIM_SIZES["expression"] if sim else EXPRESSION_N
        x = np.linspace(-3.0, 3.0, n, dtype=np.float32)
        y = np.linspace(2.0, -2.0, n, dtype=np.float32)
        engines = engines_for(gpu, astjit.jit(expression, target=gpu.target), expression_xp(xp),
                              expression_jax, (x, y), notes)
        del x, y
        found.append(run_case("expression", f"n = {n:.0e}, float32", engines,
                              close(1e-5, 1e-6, gpu), rounds, sample_s, gpu,
                              minimum_bytes=3 * n * 4))
    if wanted("softmax"):
        rows, cols = SIM_SIZES["softmax"] if sim else SOFTMAX_SHAPE
        x = (np.random.default_rng(2).standard_normal((rows, cols)) * 3.0).astype(np.float32)
        engines = engines_for(gpu, astjit.jit(softmax, target=gpu.target), softmax_xp(xp),
                              softmax_jax, (x,), notes)
        found.append(run_case("softmax", f"{rows}×{cols}, float32", engines, close(1e-5, 1e-7, gpu),
                              rounds, sample_s, gpu, minimum_bytes=2 * x.nbytes))
    if wanted("mlp_step"):
        for batch_size in SIM_SIZES["mlp"] if sim else MLP_BATCHES:
            args = mlp_batch(batch_size)
            engines = engines_for(gpu, astjit.jit(mlp_step, target=gpu.target), mlp_step_xp(xp),
                                  mlp_step_jax, args, notes)
            label = "→".join(map(str, MLP_LAYERS)) + f", batch {batch_size}"
            found.append(run_case("mlp_step", label, engines, close(1e-4, 1e-6, gpu), rounds,
                                  sample_s, gpu))
    if wanted("mandelbrot"):
        side = SIM_SIZES["mandel"] if sim else MANDEL_SIDE
        iterations = 20 if sim else MANDEL_ITERATIONS
        cr = np.linspace(-2.0, 1.0, side, endpoint=False)[None, :]
        ci = np.linspace(-1.2, 1.2, side, endpoint=False)[:, None]
        engines = engines_for(gpu, astjit.vectorize(escape, target=gpu.target), mandel_xp(xp),
                              mandel_jax, (cr, ci, iterations), notes)
        found.append(run_case("mandelbrot", f"{side}×{side}, {iterations} iterations, float64",
                              engines, counts_agree(gpu), rounds, sample_s, gpu))
    return found


# ---- the report ------------------------------------------------------------------------------

def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def report(results: list[CaseResult], peak: float | None, peak_source: str, copy: float | None) -> str:
    names = ["CuPy", "astjit", "JAX"]
    rows = []
    for r in results:
        cupy_time = r.median("CuPy")
        cells = [r.name, r.label]
        for engine in names:
            t = r.median(engine)
            problem = next((e.problem for e in r.engines if e.name == engine and e.problem), "")
            cells.append("n/a" if t is None and not problem.startswith("failed")
                         else "failed" if t is None else fmt_time(t) + (f" ({problem})" if problem else ""))
        for engine in ("astjit", "JAX"):
            t = r.median(engine)
            cells.append(fmt_ratio(t / cupy_time) if t and cupy_time else "n/a")
        reference = peak or copy
        for engine in ("astjit", "CuPy"):
            t = r.median(engine)
            if r.minimum_bytes and t:
                rate = r.minimum_bytes / t
                cells += [f"{rate / 1e9:.0f} GB/s",
                          f"{100 * rate / reference:.0f}%" if reference else "n/a"]
            else:
                cells += ["", ""]
        rows.append(cells)
    against = "peak" if peak else "copy"
    return markdown(["case", "size", "CuPy", "astjit", "JAX", "astjit / CuPy", "JAX / CuPy",
                     "astjit GB/s", f"astjit % of {against}", "CuPy GB/s", f"CuPy % of {against}"],
                    rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds instead of 15")
    parser.add_argument("--only", action="append", default=[],
                        choices=["expression", "softmax", "mlp_step", "mandelbrot"])
    parser.add_argument("--sim", action="store_true",
                        help="no GPU: NumPy for CuPy, target='cuda-sim', tiny sizes (checks the script)")
    options = parser.parse_args(argv)
    if not options.sim:
        why = no_gpu()
        if why:
            print(f"gpu_run.py: no CUDA GPU ({why}); nothing measured. "
                  "benchmarks/gpu_launches.py counts launches and bytes without one.")
            return 0
    gpu = Gpu(options.sim)
    rounds = 2 if options.sim else 5 if options.quick else 15
    sample_s = 0.0 if options.sim else 0.02
    peak, peak_source = gpu.peak_bandwidth()
    copy = None if options.sim else gpu.copy_bandwidth()
    notes: list[str] = []
    results = cases(gpu, options.only, rounds, sample_s, notes)
    print(f"device: {gpu.name}")
    if peak:
        print(f"peak memory bandwidth: {peak / 1e9:.0f} GB/s ({peak_source})")
    else:
        print(f"peak memory bandwidth: {peak_source}; the % column is of the measured copy")
    if copy:
        print(f"measured device-to-device copy: {copy / 1e9:.0f} GB/s (read + written)")
    print(f"medians of {rounds} rounds, each a batch of ≥ {sample_s * 1e3:.0f} ms of calls\n")
    print(report(results, peak, peak_source, copy))
    problems = [f"{r.name} ({r.label}) {e.name}: {e.problem}" for r in results for e in r.engines
                if e.problem]
    for line in notes + problems:
        print("- " + line)
    return 0


def no_gpu() -> str:
    """Why this machine cannot run the benchmark, or "" if it can."""
    try:
        import cupy
    except Exception as error:  # noqa: BLE001 - not installed or a broken install
        return f"cannot import cupy: {type(error).__name__}: {error}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - no driver, no device
        return f"{type(error).__name__}: {error}"
    return "" if count else "no CUDA device"


if __name__ == "__main__":
    sys.exit(main())
