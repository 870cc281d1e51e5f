"""Two graphs side by side, lined up by source line: a primal graph and its gradient.

Each node of either graph carries the source line it came from; this view
groups the printed nodes of both by that line, so what the gradient does for
`z = w * x + b` stands next to `z = w * x + b`'s own forward code.
"""
from __future__ import annotations

import re

from .core import Module
from .printer import format_module

_LOCATION = re.compile(r"\s+#\s*(?P<file>[^:#]+):(?P<line>\d+)\s*$")


def _by_line(text: str) -> dict[int, list[str]]:
    lines: dict[int, list[str]] = {}
    for row in text.splitlines():
        found = _LOCATION.search(row)
        if found:
            lines.setdefault(int(found["line"]), []).append(row[:found.start()].strip())
    return lines


def format_side_by_side(left: Module, right: Module, *, titles=("primal", "gradient"),
                        width: int = 60) -> str:
    """A table: source line | the left module's nodes from it | the right module's."""
    lefts, rights = _by_line(format_module(left)), _by_line(format_module(right))
    rows = [f"{'line':>5} | {titles[0]:<{width}} | {titles[1]}",
            f"{'-' * 5}-+-{'-' * width}-+-{'-' * width}"]
    for number in sorted(set(lefts) | set(rights)):
        a, b = lefts.get(number, []), rights.get(number, [])
        for k in range(max(len(a), len(b))):
            label = str(number) if k == 0 else ""
            cell_a = _clip(a[k], width) if k < len(a) else ""
            cell_b = b[k] if k < len(b) else ""
            rows.append(f"{label:>5} | {cell_a:<{width}} | {cell_b}")
    return "\n".join(rows)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
