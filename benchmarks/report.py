"""Turning measurements into the printed tables, the target checks and results.json."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from measure import KernelResult

ENGINES = ["CPython", "astjit", "Numba", "C"]
TARGETS = [
    # (name, measured quantity, limit, unit)
    ("loop kernels ≤ 1.0× Numba", "astjit/Numba", 1.0, "×"),
    ("loop kernels ≤ 1.2× C", "astjit/C", 1.2, "×"),
    ("dispatch ≤ 50 ns", "dispatch", 50e-9, "s"),
    ("first-call compile ≤ 30 ms per kernel", "compile", 30e-3, "s"),
    ("import + first compile ≤ 150 ms", "startup", 150e-3, "s"),
]


@dataclass
class Report:
    """One run of the suite: per-kernel results, cold-start times and the settings used."""

    kernels: list[KernelResult]
    startup: dict[str, float] = field(default_factory=dict)
    startup_errors: dict[str, str] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    element_loops: dict = field(default_factory=dict)
    """boundscheck.py's loops: name -> engine -> median seconds per call."""


def fmt_time(seconds: float) -> str:
    """3 significant digits in the largest unit that keeps the number ≥ 1."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.0f}×" if ratio >= 100 else f"{ratio:.1f}×" if ratio >= 10 else f"{ratio:.2f}×"


def ratio(result: KernelResult, engine: str, base: str) -> float | None:
    times = result.median
    return times[engine] / times[base] if engine in times and base in times else None


def table(header: list[str], rows: list[list[str]]) -> str:
    """A plain text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        aligned = [cell.rjust(width) for cell, width in zip(cells, widths, strict=True)]
        aligned[0] = cells[0].ljust(widths[0])
        return "  ".join(aligned)

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def engine_cell(result: KernelResult, engine: str, as_ratio: bool) -> str:
    """Time relative to C (absolute for C itself, or when C is missing); ✗ if wrong."""
    if engine not in result.median:
        return "n/a"
    mark = "" if result.correct.get(engine, True) else " ✗"
    if as_ratio and engine != "C" and "C" in result.median:
        return fmt_ratio(ratio(result, engine, "C")) + mark
    return fmt_time(result.median[engine]) + mark


def steady_state_table(report: Report) -> str:
    rows = []
    for result in report.kernels:
        if result.kernel == "dispatch":
            continue
        astjit_numba = ratio(result, "astjit", "Numba")
        rows.append(
            [
                result.kernel,
                *(engine_cell(result, e, True) for e in ENGINES),
                fmt_ratio(astjit_numba) if astjit_numba is not None else "n/a",
            ]
        )
    header = ["kernel", "CPython ×C", "astjit ×C", "Numba ×C", "C (time)", "astjit/Numba"]
    return table(header, rows)


def noise_line(report: Report) -> str:
    """The noisiest cell of the run, so a reader knows how far to trust a difference."""
    spreads = [
        (spread, engine, r.kernel) for r in report.kernels for engine, spread in r.spread.items()
    ]
    if not spreads:
        return ""
    spread, engine, kernel = max(spreads)
    return (
        f"(noise: interquartile range / median ≤ {spread:.1%} in every cell; "
        f"largest: {engine} on {kernel})"
    )


def dispatch_table(result: KernelResult) -> str:
    astjit_numba = ratio(result, "astjit", "Numba")
    row = [engine_cell(result, e, False) for e in ENGINES]
    row.append(fmt_ratio(astjit_numba) if astjit_numba is not None else "n/a")
    return table(["dispatch", *ENGINES, "astjit/Numba"], [["per call", *row]])


def compile_table(report: Report) -> str:
    rows = [
        [
            r.kernel,
            *(fmt_time(r.compile[e]) if e in r.compile else "n/a" for e in ("astjit", "Numba")),
        ]
        for r in report.kernels
    ]
    if report.startup or report.startup_errors:
        startup = [
            fmt_time(report.startup[e]) if e in report.startup else "n/a"
            for e in ("astjit", "Numba")
        ]
        rows.append(["import + first compile", *startup])
    return table(["compile time", "astjit", "Numba"], rows)


def target_values(report: Report, quantity: str) -> tuple[list[str], dict[str, float]]:
    """For one target: the labels it should cover and astjit's measured values by label."""
    loops = [r for r in report.kernels if r.kernel != "dispatch"]
    if quantity in ("astjit/Numba", "astjit/C"):
        base = quantity.split("/")[1]
        values = {r.kernel: ratio(r, "astjit", base) for r in loops}
        return [r.kernel for r in loops], {k: v for k, v in values.items() if v is not None}
    if quantity == "dispatch":
        probes = [r for r in report.kernels if r.kernel == "dispatch"]
        return ["dispatch"] if probes else [], {
            r.kernel: r.median["astjit"] for r in probes if "astjit" in r.median
        }
    if quantity == "compile":
        return [r.kernel for r in report.kernels], {
            r.kernel: r.compile["astjit"] for r in report.kernels if "astjit" in r.compile
        }
    if not report.startup and not report.startup_errors:
        return [], {}  # not measured in this run (--only)
    return ["startup"], (
        {"startup": report.startup["astjit"]} if "astjit" in report.startup else {}
    )


def check_targets(report: Report) -> list[dict]:
    """Each target with status 'pass', 'fail' or 'n/a' and astjit's values."""
    checks = []
    for name, quantity, limit, unit in TARGETS:
        labels, values = target_values(report, quantity)
        if not labels:
            continue
        over = {k: v for k, v in values.items() if v > limit}
        status = "fail" if over else "pass" if len(values) == len(labels) else "n/a"
        checks.append(
            {
                "target": name,
                "limit": limit,
                "unit": unit,
                "status": status,
                "values": values,
                "over": over,
            }
        )
    return checks


def targets_section(checks: list[dict]) -> str:
    marks = {"pass": "✓", "fail": "✗", "n/a": "–"}
    lines = []
    for check in checks:
        fmt = fmt_ratio if check["unit"] == "×" else fmt_time
        shown = check["over"] or check["values"]
        detail = ", ".join(f"{k} {fmt(v)}" for k, v in shown.items()) or "astjit not measured"
        lines.append(f"{marks[check['status']]} {check['target']:<38} {detail}")
    return "\n".join(lines)


def problems_section(report: Report) -> str:
    """Why cells say n/a (grouped by engine and reason), and every wrong result."""
    failures: dict[tuple[str, str], list[str]] = {}
    for result in report.kernels:
        for engine, reason in result.errors.items():
            failures.setdefault((engine, reason), []).append(result.kernel)
    for engine, reason in report.startup_errors.items():
        failures.setdefault((engine, reason), []).append("import + first compile")
    lines = [
        f"{engine}: n/a ({reason}) — {', '.join(kernels)}"
        for (engine, reason), kernels in failures.items()
    ]
    for result in report.kernels:
        lines += [
            f"✗ {engine} on {result.kernel}: got {result.results[engine]!r}, "
            f"CPython gave {result.expected!r}"
            for engine, ok in result.correct.items()
            if not ok
        ]
    return "\n".join(lines)


def format_report(report: Report) -> str:
    """The full printed report: tables, target checks, then problems if any."""
    sections = [
        "Steady state: median time per call, as a multiple of C's time (C: absolute).",
        steady_state_table(report),
    ]
    dispatch = [r for r in report.kernels if r.kernel == "dispatch"]
    if dispatch:
        sections += [
            "Dispatch: raw time per call of f(1.0), f(x) = x + 1, from timeit "
            "(timeit's loop overhead included; C: a non-inlined call in a C loop).",
            dispatch_table(dispatch[0]),
        ]
    sections.append(noise_line(report))
    sections += [
        "Compile: first call of a fresh jit object minus the steady-state call.",
        compile_table(report),
        "astjit targets:",
        targets_section(check_targets(report)),
    ]
    problems = problems_section(report)
    if problems:
        sections += ["Problems:", problems]
    return "\n\n".join(sections)


def write_json(report: Report, path: Path) -> None:
    """Everything measured, with all samples, plus the target checks."""
    data = asdict(report)
    data["targets"] = check_targets(report)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=repr) + "\n")
