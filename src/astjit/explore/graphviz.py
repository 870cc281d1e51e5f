"""The explorer's drawing through Graphviz (`dot -Tsvg`), where it is installed.

The DOT is the IR's own export (ir/dot.py), each operator classed `lineN` by its source
line; the SVG Graphviz writes is made fit to sit inline in the page: its XML prologue
and comments dropped, its element ids (the same in every graph Graphviz draws) removed,
and each located node's group given the `data-line` the page's script selects on.
"""
from __future__ import annotations

import re
import shutil
import subprocess

from ..ir.core import Module, Node
from ..ir.dot import format_dot

TIMEOUT_S = 60
"""A graph Graphviz takes longer than this to lay out is drawn by layout.py instead."""


def graphviz_svg(module: Module, located: str) -> str | None:
    """The module drawn by `dot -Tsvg` as one inline `<svg>` element, or None where Graphviz
    is not installed or fails (the caller then draws it itself)."""
    dot = shutil.which("dot")
    if dot is None:
        return None

    def line_class(node: Node) -> str | None:
        located_here = node.loc is not None and node.loc.filename == located
        return f"line{node.loc.line}" if located_here else None

    try:
        done = subprocess.run([dot, "-Tsvg"], input=format_dot(module, line_class),
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or "<svg" not in done.stdout:
        return None
    return inline(done.stdout)


def inline(svg: str) -> str:
    """Graphviz's SVG document as an element of the page."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.DOTALL)
    svg = re.sub(r'\s id="[^"]*"', "", svg)
    svg = svg.replace("<svg ", '<svg class="ir-svg graphviz" ', 1)
    svg = re.sub(r'class="node line(\d+)"', r'class="ir-node node" data-line="\1"', svg)
    return svg.replace('class="node"', 'class="ir-node node"')
