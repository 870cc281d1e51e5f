"""The IR explorer: one self-contained HTML page showing a function's source beside every
stage of its compilation, drawn as graphs, where selecting a source line highlights the
IR nodes it produced in each stage (`python -m astjit explore FILE.py:FUNC`).

stages.py collects the stages, layout.py and graphviz.py draw IR graphs as SVG, page.py
writes the page.
"""
from __future__ import annotations

from collections.abc import Callable

from .page import render_page
from .stages import collect_stages, source_span


def explore(function: Callable, args: tuple, *, graphviz: bool = True) -> str:
    """The explorer page of `function` (a Python function, or one `jit` made) compiled for
    the example `args`, as HTML text.

    `graphviz=False` draws the graphs with the built-in layout even where Graphviz's `dot`
    is installed. A CompileError of the function itself propagates; a stage that cannot
    be made (grad of a function that is not differentiable, CUDA C the GPU backend
    refuses) is shown with the reason in its place.
    """
    function = getattr(function, "py_func", None) or function  # a jitted function's own
    stages = collect_stages(function, args)
    filename, first, lines = source_span(function, stages)
    title = f"{function.__name__}({', '.join(map(describe, args))})"
    return render_page(title, filename, first, lines, stages, graphviz=graphviz)


def describe(value: object) -> str:
    """An example argument as the page's title shows it: an array by dtype and shape, any
    other value by its repr, clipped."""
    if hasattr(value, "dtype") and hasattr(value, "shape") and getattr(value, "ndim", 0):
        return f"{type(value).__name__}[{value.dtype}, shape {tuple(value.shape)}]"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


__all__ = ["explore"]
