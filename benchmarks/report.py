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


def fmt_time(seconds: float) -> str:
    """3 significant digits in the largest unit that keeps the number ≥ 1."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.0f}×" if ratio >= 100 else f"{ratio:.3g}×"


def ratio(result: KernelResult, engine: str, base: str) -> float | None:
    times = result.median
    return times[engine] / times[base] if engine in times and base in times else None


def table(header: list[str], rows: list[list[str]]) -> str:
    """A plain text table, first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        first, rest = cells[0].ljust(widths[0]), [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first, *rest])

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
        rows.append([result.kernel, *(engine_cell(result, e, True) for e in ENGINES),
                     fmt_ratio(astjit_numba) if astjit_numba is not None else "n/a"])
    return table(["kernel", "CPython ×C", "astjit ×C", "Numba ×C", "C (time)", "astjit/Numba"],
                 rows)


def dispatch_table(result: KernelResult) -> str:
    astjit_numba = ratio(result, "astjit", "Numba")
    row = [engine_cell(result, e, False) for e in ENGINES]
    row.append(fmt_ratio(astjit_numba) if astjit_numba is not None else "n/a")
    return table(["dispatch", *ENGINES, "astjit/Numba"], [["ns per call", *row]])


def compile_table(report: Report) -> str:
    rows = [[r.kernel, *(fmt_time(r.compile[e]) if e in r.compile else "n/a"
                         for e in ("astjit", "Numba"))] for r in report.kernels]
    startup = [fmt_time(report.startup[e]) if e in report.startup else "n/a"
               for e in ("astjit", "Numba")]
    rows.append(["import + first compile", *startup])
    return table(["compile time", "astjit", "Numba"], rows)
