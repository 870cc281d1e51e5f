"""Filled arrays plus a scalar become filled arrays: `np.full_like(a, c) + s` -> `np.full_like(a, c + s)`.

A reduction's gradient spreads its adjoint over the operand this way
(`zeros_like(x) + g / n` for a mean: ops/reductions.py), and fusion would make
that a loop nest of its own that reads a zeroed array. Filling the array with
the one scalar `c + s` gives every element the same value, with no loop: the
sum is computed once in the array's dtype, as each element's was, so the rule
is exact (the sign of zero included).

It applies only where nothing can have written into the filled array: its
uses are all reads (elementwise ops, shape queries, `sum_to_like`, a release,
`array_new_like` taking its shape), so it still holds `c` when the sum reads it.
Both arrays are new either way. A filled array the sum alone read goes too
(DCE keeps allocations, which may raise MemoryError: the new one allocates as
much). Runs once, before fusion (pipeline.py).
"""
from __future__ import annotations

from collections import Counter

from ..core import Graph, Module, Node, Value
from ..ops.elementwise import is_array_elementwise
from .rewrite import make_const

READERS = frozenset({"array_dim", "array_shape", "array_size", "array_ndim", "array_release",
                     "array_new_like", "sum_to_like"})
"""Ops that only read an array operand (or take its shape), never write into it."""


def fold_fills(module: Module) -> Module:
    """Rewrite `full_like(a, c) + s` in every graph of `module` and all their regions."""
    for graph in module.graphs.values():
        _fold_graph(graph)
    return module


def _fold_graph(graph: Graph) -> None:
    for node in graph.nodes:
        for region in node.regions:
            _fold_graph(region)
    defs = {v: n for n in graph.nodes for v in n.outputs}
    written = _maybe_written(graph)
    uses = Counter(v for n in graph.nodes for v in n.inputs) + Counter(graph.outputs)
    nodes: list[Node] = []
    read: set[Node] = set()  # the filled arrays a rewritten sum read
    for node in graph.nodes:
        replacement = None
        if node.op == "add" and is_array_elementwise(node):
            replacement = _filled_plus_scalar(node, defs, written)
        if replacement is None:
            nodes.append(node)
            continue
        nodes.extend(replacement)
        uses.subtract(node.inputs)
        read.update(defs[v] for v in node.inputs if v in defs and _constant_fill(defs[v]))
    graph.nodes = [n for n in nodes if not (n in read and uses[n.outputs[0]] == 0)]


def _filled_plus_scalar(node: Node, defs: dict[Value, Node], written: set[Value]
                        ) -> list[Node] | None:
    """The nodes computing `node`, an array `add`, as one `array_new_like` filled with a
    scalar, when one operand is a constant-filled array nothing writes into and the other a
    scalar of its dtype; None otherwise."""
    for filled, scalar in (node.inputs, node.inputs[::-1]):
        made = defs.get(filled)
        if (made is None or not _constant_fill(made)
                or filled in written or filled.type != node.outputs[0].type
                or scalar.type != filled.type.dtype):
            continue
        fill = Node("const", [], [Value("", scalar.type)], loc=node.loc)
        make_const(fill, made.attrs["fill"])
        value = Node("add", [fill.outputs[0], scalar], [Value("", scalar.type)], loc=node.loc)
        full = Node("array_new_like", [made.inputs[0], value.outputs[0]], node.outputs,
                    {**made.attrs, "fill": "value"}, loc=node.loc)
        return [fill, value, full]
    return None


def _constant_fill(node: Node) -> bool:
    """Whether `node` is an `array_new_like` filling its array with a constant (a number)."""
    fill = node.attrs.get("fill")
    return (node.op == "array_new_like" and isinstance(fill, (int, float))
            and not isinstance(fill, bool))


def _maybe_written(graph: Graph) -> set[Value]:
    """The values of `graph` some node may write into: every operand of a node that is not
    an elementwise op or a reader (a write, a view, a call, a region's capture ...)."""
    written = set()
    for node in graph.nodes:
        if node.op not in READERS and not is_array_elementwise(node):
            written.update(node.inputs)
    return written
