"""How run.py measures: steady state, first-call compile time, and cold start.

Steady state: every engine is warmed up (its first call compiles and is
checked against CPython's result), then calibrated so that one sample lasts
at least `min_sample_s`, then timed in interleaved rounds (A, B, C, D, A, B,
...) so that slow drifts of the machine hit every engine alike; the median of
the rounds is reported. The dispatch probe always uses 10**5 calls per sample.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

from engines import HERE, Engine, Runner
from kernels import Kernel

DISPATCH_CALLS = 100_000


@dataclass
class KernelResult:
    """Everything measured for one kernel; engines that failed appear in `errors` only."""

    kernel: str
    expected: object
    results: dict[str, object] = field(default_factory=dict)
    correct: dict[str, bool] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)
    """Calls per sample, per engine."""
    samples: dict[str, list[float]] = field(default_factory=dict)
    """Seconds per call, one entry per round."""
    median: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    """Interquartile range of the samples over their median: the noise of a cell."""
    compile: dict[str, float] = field(default_factory=dict)
    """First call on a fresh jit object minus the steady-state call, in seconds."""
    errors: dict[str, str] = field(default_factory=dict)


def describe(error: BaseException) -> str:
    """A one-line reason, e.g. 'NotImplementedError' or 'TypingError: bad operand'."""
    lines = str(error).strip().splitlines()
    message = lines[0] if lines else ""
    return f"{type(error).__name__}: {message}"[:160] if message else type(error).__name__


def same_result(expected: object, got: object) -> bool:
    """Same type and value; floats may differ in the last few bits."""
    if type(got) is not type(expected):
        return False
    if isinstance(expected, float):
        return math.isclose(got, expected, rel_tol=1e-12)
    return got == expected


def relative_iqr(samples: list[float]) -> float:
    """(Q3 - Q1) / median; 0 for fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(samples, n=4)
    return (q3 - q1) / statistics.median(samples)


def warm_up(engines: list[Engine], kernel: Kernel, out: KernelResult) -> dict[str, Runner]:
    """Make and call each engine's runner once, checking its result; drop those that fail."""
    runners = {}
    for engine in engines:
        try:
            runner = engine.make(kernel)
            result = runner.call()
        except Exception as error:  # an engine's failure must not stop the others
            out.errors[engine.name] = describe(error)
            continue
        out.results[engine.name] = result
        out.correct[engine.name] = same_result(out.expected, result)
        runners[engine.name] = runner
    return runners


def calls_per_sample(runner: Runner, kernel: Kernel, min_sample_s: float) -> int:
    """Enough calls for one sample to last min_sample_s (a second warm-up, too)."""
    if kernel.is_dispatch:
        return DISPATCH_CALLS
    per_call = runner.time(1)
    return max(1, math.ceil(min_sample_s / max(per_call, 1e-9)))


def time_kernel(
    engines: list[Engine], kernel: Kernel, rounds: int, min_sample_s: float
) -> KernelResult:
    """Warm up, calibrate, then time all engines in interleaved rounds."""
    out = KernelResult(kernel.name, expected=kernel.fn(*kernel.args))
    runners = warm_up(engines, kernel, out)
    out.samples = {name: [] for name in runners}
    for round_index in range(-1, rounds):  # round -1 calibrates
        for name, runner in list(runners.items()):
            try:
                if round_index < 0:
                    out.numbers[name] = calls_per_sample(runner, kernel, min_sample_s)
                else:
                    out.samples[name].append(runner.time(out.numbers[name]))
            except Exception as error:  # e.g. a later call raising: drop this engine
                out.errors[name] = describe(error)
                del runners[name], out.samples[name]
    out.median = {name: statistics.median(s) for name, s in out.samples.items()}
    out.spread = {name: relative_iqr(s) for name, s in out.samples.items()}
    return out


def measure_compile(engines: list[Engine], kernel: Kernel, out: KernelResult, repeats: int) -> None:
    """First-call time of fresh jit objects minus the steady-state time; the median."""
    for engine in engines:
        if not engine.compiles or engine.name not in out.median:
            continue
        firsts = []
        try:
            for _ in range(repeats):
                runner = engine.make(kernel)
                start = time.perf_counter()
                runner.call()
                firsts.append(time.perf_counter() - start)
        except Exception as error:
            out.errors[f"{engine.name} compile"] = describe(error)
            continue
        out.compile[engine.name] = statistics.median(firsts) - out.median[engine.name]


STARTUP_SCRIPT = """\
import time
start = time.perf_counter()
import {module}
from kernels import pi_sum
{module}.{jit}(pi_sum)(10)
print(time.perf_counter() - start)
"""

STARTUP_JITS = {"astjit": ("astjit", "jit"), "Numba": ("numba", "njit")}
"""Per engine: the module to import and its jit decorator."""


class StartupFailed(Exception):
    """The cold-start subprocess failed; the message is its last line of stderr."""


def measure_startup(engine: str, repeats: int) -> float:
    """`import <engine>` + the first compile and call of pi_sum(10) in a fresh interpreter.

    The median over `repeats` subprocesses, in seconds.
    """
    module, jit = STARTUP_JITS[engine]
    script = STARTUP_SCRIPT.format(module=module, jit=jit)
    times = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=HERE, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
            raise StartupFailed(lines[-1][:160])
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times)
