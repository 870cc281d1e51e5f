"""Common subexpression elimination, graph by graph and region by region.

A pure leaf node equal to an earlier node of the same graph — same op, same
inputs (in any order for commutative ops), same attrs (constants by value and
type, floats by their bits so 0.0 and -0.0 stay apart), same result types —
is replaced by the earlier node's outputs. Ops that may raise are merged too:
the earlier node, in the same straight-line list, runs first on the same
operands, so it raises first or the later one would not have raised either.
Each region gets its own table: regions see no values of the enclosing graph.
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..core import Graph, Module, Node
from ..ops import OPS
from ..ops.elementwise import is_array_elementwise
from .rewrite import Replacement, forward, rewrite_graph


def eliminate_common_subexpressions(module: Module) -> Module:
    """Merge equal pure leaf nodes in every graph of `module` and all their regions."""
    for graph in module.graphs.values():
        _cse_graph(graph)
    return module


def _cse_graph(graph: Graph) -> None:
    seen: dict[Hashable, Node] = {}

    def visit(node: Node) -> Replacement | None:
        for region in node.regions:
            _cse_graph(region)
        if node.op not in OPS or "pure" not in OPS[node.op].traits or is_array_elementwise(node):
            return None  # an elementwise op on arrays makes a new array each time
        earlier = seen.setdefault(_key(node), node)
        return None if earlier is node else forward(node, earlier.outputs)

    rewrite_graph(graph, visit)


def _key(node: Node) -> Hashable:
    """What makes two leaf nodes compute the same values."""
    inputs = node.inputs
    if "commutative" in OPS[node.op].traits:
        inputs = sorted(inputs, key=lambda v: v.id)
    attrs = tuple(sorted((name, _frozen(value)) for name, value in node.attrs.items()))
    return node.op, tuple(inputs), attrs, tuple(v.type for v in node.outputs)


def _frozen(value: Any) -> Hashable:
    """A hashable stand-in for an attribute, equal only for the same value of the same type."""
    if isinstance(value, float):
        return "float", value.hex()
    if isinstance(value, (tuple, list)):
        return type(value).__name__, tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return "dict", tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return "repr", repr(value)
    return type(value).__name__, value
