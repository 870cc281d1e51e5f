"""`jit(boundscheck=False)`: every element index of a module is trusted to be in range.

Marks each `array_get`, `array_set`, `array_view` (its integer indices), `gather`,
`scatter` (their index arrays) and
the reverse sweep's `add_at` / `set_at` (an element read's adjoint) with
`boundscheck=False`, which the backends read: they emit no bounds check for it.
A negative index still counts from the end of its axis (that is semantics, not
a check); an index outside its axis is undefined behaviour, as in C. Runs on
the typed module, before the optimizer, so every graph (derived ones included)
is covered.
"""
from __future__ import annotations

from ..core import Module, Node

INDEXING = frozenset({"array_get", "array_set", "array_view", "add_at", "set_at", "gather",
                      "scatter"})
"""The ops whose indices a bounds check guards."""


def drop_bounds_checks(module: Module) -> Module:
    """Mark every indexing node in every graph of `module` (regions included) unchecked."""
    for graph in module.graphs.values():
        for node in graph.walk():
            if node.op in INDEXING:
                node.attrs["boundscheck"] = False
    return module


def drop_bounds_checks_in(node: Node) -> None:
    """Mark `node`, and the indexing nodes of its regions, unchecked: code that ran
    already with the same indices (a loop body the reverse sweep recomputes)."""
    if node.op in INDEXING:
        node.attrs["boundscheck"] = False
    for region in node.regions:
        for inner in region.walk():
            if inner.op in INDEXING:
                inner.attrs["boundscheck"] = False
