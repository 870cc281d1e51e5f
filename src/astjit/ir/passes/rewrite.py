"""The forward walk the rewriting passes share, and the edits made through it.

`rewrite_graph` visits the nodes of one graph in order. Before a node is
visited its inputs are renamed through every replacement made so far, so a
visit always sees final operands. A visit keeps the node (possibly changed in
place), or replaces it by other nodes — spliced in its place and visited in
turn — and renames its outputs. Replacement nodes stand where the replaced
node stood, so definitions still come before uses (SSA), and renames stay
inside the graph being walked (regions have no free variables). Each pass
recurses into regions itself, with a walk of their own.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import Graph, Node, Value
from ..interp import coercion


@dataclass
class Replacement:
    """What a visited node becomes: nodes put in its place, and values renamed."""

    nodes: list[Node] = field(default_factory=list)
    """Spliced where the node stood, then visited like any other node."""
    renames: dict[Value, Value] = field(default_factory=dict)
    """Each key's uses, from here on, use the value instead (chains are followed)."""


def forward(node: Node, values: list[Value]) -> Replacement:
    """Drop `node`; its outputs' uses take `values` instead."""
    return Replacement([], dict(zip(node.outputs, values)))


def rewrite_graph(graph: Graph, visit: Callable[[Node], Replacement | None]) -> None:
    """Visit `graph`'s nodes in order, applying each visit's Replacement (None: keep)."""
    renames: dict[Value, Value] = {}
    pending = deque(graph.nodes)
    kept: list[Node] = []
    while pending:
        node = pending.popleft()
        node.inputs = [_resolve(renames, v) for v in node.inputs]
        replacement = visit(node)
        if replacement is None:
            kept.append(node)
            continue
        renames.update(replacement.renames)
        pending.extendleft(reversed(replacement.nodes))
    graph.nodes = kept
    graph.outputs = [_resolve(renames, v) for v in graph.outputs]


def _resolve(renames: dict[Value, Value], value: Value) -> Value:
    while value in renames:
        value = renames[value]
    return value


def make_const(node: Node, value: Any) -> None:
    """Turn `node` in place into a `const` of its output's type holding `value`.

    The value is converted as compiled code represents the type (ints wrap to
    64 bits, bools are bools); the output Value, its uses and the loc stay.
    """
    (out,) = node.outputs
    convert = coercion(out.type)
    node.op, node.inputs, node.regions = "const", [], []
    node.attrs = {"value": value if convert is None else convert(value), "type": out.type}
