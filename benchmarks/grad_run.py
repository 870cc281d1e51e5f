"""Benchmark astjit's gradients against f, a hand-written derivative, JAX and autograd.

Usage: python benchmarks/grad_run.py [--quick] [--only NAME]...

Prints the ratio tables (see README.md, "Gradients", for what each column
means) and writes every measurement to benchmarks/_build/grad_results.json.
Uses the same conventions as run.py: every runner's first call is checked,
then all runners of a case are timed in interleaved rounds and the medians
are compared; the noise of the run is printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import timeit
import types
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # CPU against CPU; no accelerator probing

from engines import BUILD_DIR
from grad_kernels import GRAD_CASES, GradCase, autograd_version, jax_version
from measure import describe, relative_iqr
from report import fmt_ratio, fmt_time, table

RESULTS_JSON = BUILD_DIR / "grad_results.json"
REL_TOL = 1e-9
"""Every engine's gradient must agree with astjit's within this relative tolerance."""

RUNNERS = ["f", "grad", "jit(grad)", "grad()(x)", "hand", "JAX", "autograd"]
"""Timed in this order in every round; see README.md for what each one calls."""
GRADIENTS = RUNNERS[1:]
"""The runners whose result is a gradient (checked against astjit's grad)."""

TARGET = 3.0


# ---------------------------------------------------------------------------
# Runners: `call()` runs once and returns the result as Python floats;
# `time(number)` returns seconds per call, timed with timeit on a literal call.


def as_floats(result: object) -> float | tuple[float, ...]:
    """A gradient as Python floats: JAX gives arrays, autograd numpy scalars."""
    if isinstance(result, (tuple, list)):
        return tuple(float(r) for r in result)
    return float(result)


class TimedCall:
    """`callee(*args)`, timed as the literal statement `callee(2.0, 5.0)` (or `block(...)`)."""

    def __init__(
        self,
        fn: Callable,
        args: tuple,
        *,
        block: Callable | None = None,
        callee: str = "f",
        names: dict | None = None,
    ):
        self.fn = fn
        self.args = args
        self.block = block
        call = f"{callee}({', '.join(repr(a) for a in args)})"
        namespace = {"f": fn, "block": block, **(names or {})}
        self.call_once = eval(f"lambda: {call}", namespace)
        self.timer = timeit.Timer(f"block({call})" if block else call, globals=namespace)

    def call(self) -> object:
        result = self.call_once()
        return as_floats(self.block(result) if self.block else result)

    def time(self, number: int) -> float:
        return self.timer.timeit(number) / number


def jax_gradient(case: GradCase, fn: Callable, mode: str) -> Callable:
    """jax.jit(jax.grad(fn)) for mode 'grad', jax.jit(jax.jacfwd(fn)) for 'jacfwd'."""
    import jax

    transform = jax.grad if mode == "grad" else jax.jacfwd
    return jax.jit(transform(fn, argnums=case.argnums), static_argnums=case.static_argnums)


class JaxRunner(TimedCall):
    """jax.jit(jax.grad(f)); where reverse mode raises, jax.jit(jax.jacfwd(f)) instead."""

    def __init__(self, case: GradCase):
        import jax

        self.mode = "grad"
        self.reverse_error = None
        try:
            fn = jax_gradient(case, jax_version(case.name), "grad")
            jax.block_until_ready(fn(*case.args))
        except Exception as error:  # JAX's own limitation: record it, measure forward mode
            self.mode = "jacfwd"
            self.reverse_error = f"{type(error).__name__}: {str(error).strip()}"  # in full
            fn = jax_gradient(case, jax_version(case.name), "jacfwd")
        super().__init__(fn, case.args, block=jax.block_until_ready)


def make_runner(name: str, case: GradCase):
    """The runner called `name` (one of RUNNERS) for this case; may raise."""
    from astjit import grad, jit

    if name == "f":
        return TimedCall(jit(case.fn), case.args)
    if name == "grad":
        return TimedCall(grad(case.fn, case.argnums), case.args)
    if name == "jit(grad)":
        return TimedCall(jit(grad(case.fn, case.argnums)), case.args)
    if name == "grad()(x)":
        return TimedCall(
            case.fn, case.args, callee=f"grad(f, argnums={case.argnums!r})", names={"grad": grad}
        )
    if name == "hand":
        return TimedCall(case.hand, case.args)
    if name == "JAX":
        return JaxRunner(case)
    if name == "autograd":
        import autograd

        return TimedCall(autograd.grad(autograd_version(case.name), case.argnums), case.args)
    raise ValueError(name)


# ---------------------------------------------------------------------------
# Measuring.


@dataclass
class CaseResult:
    """Everything measured for one case; runners that failed appear in `errors` only."""

    case: str
    heavy: bool
    expected_f: object = None
    """CPython's f(*args), what jit(f) must give."""
    expected_grad: object = None
    """astjit's grad(f)(*args) (the hand-written derivative's if astjit's failed)."""
    results: dict[str, object] = field(default_factory=dict)
    correct: dict[str, bool] = field(default_factory=dict)
    numbers: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    median: dict[str, float] = field(default_factory=dict)
    spread: dict[str, float] = field(default_factory=dict)
    compile: dict[str, float] = field(default_factory=dict)
    """First call on a fresh function object minus the steady-state call, in seconds."""
    jax_mode: str | None = None
    """'grad', or 'jacfwd' where JAX's reverse mode raised."""
    jax_reverse_error: str | None = None
    errors: dict[str, str] = field(default_factory=dict)


def agrees(expected: object, got: object) -> bool:
    """Same shape (float or tuple of floats), each within REL_TOL."""
    if isinstance(expected, tuple):
        return (
            isinstance(got, tuple)
            and len(got) == len(expected)
            and all(agrees(e, g) for e, g in zip(expected, got))
        )
    return isinstance(got, float) and math.isclose(got, expected, rel_tol=REL_TOL)


def warm_up(case: GradCase, names: list[str], out: CaseResult) -> dict:
    """Make and call each runner once, checking its result; drop those that fail."""
    out.expected_f = as_floats(case.fn(*case.args))
    runners = {}
    for name in names:
        try:
            runner = make_runner(name, case)
            out.results[name] = runner.call()
        except Exception as error:  # one engine's failure must not stop the others
            out.errors[name] = describe(error)
            continue
        runners[name] = runner
        if isinstance(runner, JaxRunner):
            out.jax_mode, out.jax_reverse_error = runner.mode, runner.reverse_error
    reference = next((n for n in ("grad", "jit(grad)", "hand") if n in out.results), None)
    out.expected_grad = out.results.get(reference)
    for name, result in out.results.items():
        expected = out.expected_f if name == "f" else out.expected_grad
        out.correct[name] = agrees(expected, result)
    return runners


def time_case(case: GradCase, rounds: int, min_sample_s: float) -> CaseResult:
    """Warm up, calibrate, then time every runner in interleaved rounds (as measure.py)."""
    out = CaseResult(case.name, case.heavy)
    runners = warm_up(case, RUNNERS, out)
    out.samples = {name: [] for name in runners}
    for round_index in range(-1, rounds):  # round -1 calibrates (and warms up again)
        for name, runner in list(runners.items()):
            try:
                if round_index < 0:
                    per_call = runner.time(1)
                    out.numbers[name] = max(1, math.ceil(min_sample_s / max(per_call, 1e-9)))
                else:
                    out.samples[name].append(runner.time(out.numbers[name]))
            except Exception as error:
                out.errors[name] = describe(error)
                del runners[name], out.samples[name]
    out.median = {name: statistics.median(s) for name, s in out.samples.items()}
    out.spread = {name: relative_iqr(s) for name, s in out.samples.items()}
    return out


def fresh_copy(fn: types.FunctionType) -> types.FunctionType:
    """`fn` re-made over a private copy of its globals, its module's functions re-made too.

    A new function object (same code, so astjit can still read its source) whose
    callees are new objects as well: no cache keyed by function can hide a compile.
    """
    namespace = dict(fn.__globals__)
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == fn.__module__:
            namespace[name] = types.FunctionType(
                value.__code__, namespace, value.__name__, value.__defaults__, value.__closure__
            )
    return namespace[fn.__name__]


def first_call(make: Callable[[], Callable[[], object]], repeats: int) -> float:
    """The median over `repeats` of: make a fresh callable, time its first call."""
    times = []
    for _ in range(repeats):
        call = make()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_compile(case: GradCase, out: CaseResult, repeats: int) -> None:
    """First call of grad / jit / JAX on fresh function objects, minus the steady state."""
    from astjit import grad, jit

    def astjit_grad():
        g = grad(fresh_copy(case.fn), case.argnums)
        return lambda: g(*case.args)

    def astjit_jit():
        f = jit(fresh_copy(case.fn))
        return lambda: f(*case.args)

    def jax_first():
        import jax

        fn = jax_gradient(case, jax_version(case.name), out.jax_mode)
        return lambda: jax.block_until_ready(fn(*case.args))

    for name, make, steady in (
        ("grad", astjit_grad, "grad"),
        ("jit", astjit_jit, "f"),
        ("JAX", jax_first, "JAX"),
    ):
        if steady not in out.median:
            continue
        try:
            out.compile[name] = first_call(make, repeats) - out.median[steady]
        except Exception as error:
            out.errors[f"{name} compile"] = describe(error)


# ---------------------------------------------------------------------------
# Reporting.


def fmt_ratio_small(value: float) -> str:
    """As report.fmt_ratio, but two significant digits below 0.1 (autograd is far off)."""
    return f"{value:.2g}×" if value < 0.1 else fmt_ratio(value)


def ratio(result: CaseResult, name: str, base: str) -> float | None:
    times = result.median
    return times[name] / times[base] if name in times and base in times else None


def mark(result: CaseResult, name: str) -> str:
    return "" if result.correct.get(name, True) else " ✗"


def ratio_cell(result: CaseResult, name: str, base: str) -> str:
    value = ratio(result, name, base)
    if value is None:
        return "n/a"
    forward = " fwd" if name == "JAX" and result.jax_mode == "jacfwd" else ""
    return fmt_ratio_small(value) + forward + mark(result, name)


def time_cell(result: CaseResult, name: str) -> str:
    if name not in result.median:
        return "n/a"
    return fmt_time(result.median[name]) + mark(result, name)


def work_label(result: CaseResult) -> str:
    case = next(c for c in GRAD_CASES if c.name == result.case)
    return f"loop n={case.args[-1]}" if case.heavy else "one call"


def grad_vs_f_table(results: list[CaseResult]) -> str:
    rows = [
        [
            r.case,
            work_label(r),
            time_cell(r, "f"),
            time_cell(r, "grad"),
            ratio_cell(r, "grad", "f"),
            time_cell(r, "jit(grad)"),
            ratio_cell(r, "jit(grad)", "f"),
        ]
        for r in results
    ]
    header = ["case", "work", "f", "grad(f)", "grad/f", "jit(grad f)", "jit(grad)/f"]
    return table(header, rows)


def engines_table(results: list[CaseResult]) -> str:
    rows = [
        [
            r.case,
            time_cell(r, "hand"),
            *(ratio_cell(r, n, "hand") for n in ("grad", "jit(grad)", "JAX", "autograd")),
            ratio_cell(r, "grad", "JAX"),
            ratio_cell(r, "grad", "autograd"),
        ]
        for r in results
    ]
    header = [
        "case",
        "hand (time)",
        "astjit ×hand",
        "jit(grad) ×hand",
        "JAX ×hand",
        "autograd ×hand",
        "astjit/JAX",
        "astjit/autograd",
    ]
    return table(header, rows)


def call_path_table(results: list[CaseResult]) -> str:
    rows = [
        [r.case, *(time_cell(r, n) for n in ("f", "jit(grad)", "grad", "grad()(x)", "hand"))]
        for r in results
        if not r.heavy
    ]
    header = ["case", "jit(f)(x)", "jit(grad(f))(x)", "g(x), g=grad(f)", "grad(f)(x)", "hand(x)"]
    return table(header, rows)


def compile_table(results: list[CaseResult]) -> str:
    def cell(r: CaseResult, name: str) -> str:
        if name not in r.compile:
            return "n/a"
        forward = " fwd" if name == "JAX" and r.jax_mode == "jacfwd" else ""
        return fmt_time(r.compile[name]) + forward

    def quotient(r: CaseResult, a: str, b: str) -> str:
        return fmt_ratio(r.compile[a] / r.compile[b]) if a in r.compile and b in r.compile else "n/a"

    rows = [
        [
            r.case,
            cell(r, "jit"),
            cell(r, "grad"),
            quotient(r, "grad", "jit"),
            cell(r, "JAX"),
            quotient(r, "grad", "JAX"),
        ]
        for r in results
    ]
    header = ["compile time", "astjit jit(f)", "astjit grad(f)", "grad/jit", "JAX", "astjit/JAX"]
    return table(header, rows)


def noise_line(results: list[CaseResult]) -> str:
    spreads = [(s, name, r.case) for r in results for name, s in r.spread.items()]
    if not spreads:
        return ""
    spread, name, case = max(spreads)
    return f"(noise: interquartile range / median ≤ {spread:.1%} in every cell; largest: {name} on {case})"


TARGETS = [
    # (name, quantity, base, limit): quantity/base must stay ≤ limit for every case
    ("grad(f) ≤ 3× f", "grad", "f", TARGET),
    ("jit(grad(f)) ≤ 3× f (no Derived.__call__)", "jit(grad)", "f", TARGET),
    ("grad ≤ 3× hand-written Python", "grad", "hand", TARGET),
    ("grad faster than JAX", "grad", "JAX", 1.0),
    ("grad faster than autograd", "grad", "autograd", 1.0),
]


def check_targets(results: list[CaseResult]) -> list[dict]:
    checks = []
    for target, name, base, limit in TARGETS:
        values = {r.case: ratio(r, name, base) for r in results}
        measured = {k: v for k, v in values.items() if v is not None}
        over = {k: v for k, v in measured.items() if v > limit}
        # a wrong gradient fails the target whatever its speed
        wrong = [r.case for r in results if not r.correct.get(name, True)]
        status = "fail" if over or wrong else "pass" if len(measured) == len(results) else "n/a"
        checks.append(
            {
                "target": target,
                "limit": limit,
                "status": status,
                "values": measured,
                "over": over,
                "wrong": wrong,
            }
        )
    return checks


def targets_section(checks: list[dict]) -> str:
    marks = {"pass": "✓", "fail": "✗", "n/a": "–"}
    lines = []
    for check in checks:
        shown = check["over"] or check["values"]
        detail = ", ".join(f"{k} {fmt_ratio_small(v)}" for k, v in shown.items()) or "not measured"
        if check["wrong"]:
            detail += f"; wrong result: {', '.join(check['wrong'])}"
        lines.append(f"{marks[check['status']]} {check['target']:<44} {detail}")
    return "\n".join(lines)


def notes_section(results: list[CaseResult]) -> str:
    """JAX's reverse-mode refusals, failures (n/a cells) and wrong results."""
    lines = []
    refused = [r for r in results if r.jax_mode == "jacfwd"]
    if refused:
        lines.append(
            f"fwd: jax.grad raises on {', '.join(r.case for r in refused)}, so "
            "JAX is jax.jit(jax.jacfwd(f)) there (forward mode):"
        )
        lines += sorted({f"  {r.jax_reverse_error}" for r in refused})
    failures: dict[tuple[str, str], list[str]] = {}
    for r in results:
        for name, reason in r.errors.items():
            failures.setdefault((name, reason), []).append(r.case)
    lines += [f"{name}: n/a ({reason}) — {', '.join(cases)}" for (name, reason), cases in failures.items()]
    for r in results:
        for name, ok in r.correct.items():
            if not ok:
                expected = r.expected_f if name == "f" else r.expected_grad
                lines.append(
                    f"✗ {name} on {r.case}: got {r.results[name]!r}, expected {expected!r} (rel {REL_TOL:g})"
                )
    return "\n".join(lines)


def format_report(results: list[CaseResult]) -> str:
    checks = check_targets(results)
    sections = [
        "grad(f) against f, both compiled by astjit: median time per call.\n"
        "grad(f) is the object grad returns, called as users call it; jit(grad f) is its\n"
        "compiled entry, called directly (the same call path as jit(f)).",
        grad_vs_f_table(results),
        "Gradient per call, as a multiple of the hand-written Python derivative (hand: absolute).",
        engines_table(results),
        "Call path of the one-call cases: raw time per call of each way to call.",
        call_path_table(results),
        noise_line(results),
        "Compile: first call on a fresh function object minus the steady-state call.",
        compile_table(results),
        "astjit gradient targets:",
        targets_section(checks),
    ]
    notes = notes_section(results)
    if notes:
        sections += ["Notes:", notes]
    return "\n\n".join(s for s in sections if s)


def environment() -> dict:
    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    from run import cpu_name

    return {
        "python": sys.version.split()[0],
        **{p: version(p) for p in ("astjit", "jax", "jaxlib", "autograd", "numpy")},
        "cpu": cpu_name(),
        "date": time.strftime("%F %T"),
    }


def write_json(results: list[CaseResult], settings: dict) -> None:
    data = {
        "settings": settings,
        "cases": [asdict(r) for r in results],
        "targets": check_targets(results),
    }
    RESULTS_JSON.parent.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(data, indent=2, default=repr) + "\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer rounds and shorter samples (noisier, ~4x faster)"
    )
    parser.add_argument(
        "--only",
        metavar="NAME",
        action="append",
        choices=[c.name for c in GRAD_CASES],
        help="run only this case (repeatable)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = {
        "rounds": 5 if args.quick else 15,
        "min_sample_s": 0.02 if args.quick else 0.05,
        "compile_repeats": 1 if args.quick else 3,
        "rel_tol": REL_TOL,
    }
    cases = [c for c in GRAD_CASES if not args.only or c.name in args.only]
    warnings.filterwarnings("ignore", module="jax")
    try:
        import jax

        jax.config.update("jax_enable_x64", True)  # float64, comparable with astjit
    except ImportError:
        pass  # the JAX column shows n/a
    started = time.perf_counter()
    print(f"Benchmarking {len(cases)} gradient case(s), {settings['rounds']} rounds:", file=sys.stderr)
    results = []
    for case in cases:
        start = time.perf_counter()
        print(f"  {case.name} ...", end="", file=sys.stderr, flush=True)
        result = time_case(case, settings["rounds"], settings["min_sample_s"])
        measure_compile(case, result, settings["compile_repeats"])
        print(f" {time.perf_counter() - start:.1f} s", file=sys.stderr)
        results.append(result)
    settings |= environment()
    settings["total_s"] = round(time.perf_counter() - started, 1)
    print(format_report(results))
    write_json(results, settings)
    print(f"\n({settings['total_s']} s in all; details in {RESULTS_JSON})")


if __name__ == "__main__":
    main()
