"""Filled arrays plus a scalar become filled arrays: `np.full_like(a, c) + s` -> `np.full_like(a, c + s)`;
plus a smaller array that elementwise readers broadcast anyway, that array: `(full_like(a, c) + b) * t`
-> `(c + b) * t` where `t` has `a`'s shape.

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

A sum's gradient spreads its adjoint `g` (length 1 along the summed axes) as
`zeros_like(x) + g`, which the next elementwise op reads with an operand of `x`'s
shape (a derivative such as `1 - t * t`, `t` of `x`'s shape). When every reader of the
sum is such an op, with another operand of the filled array's shape (symbolic shapes),
the sum becomes `c + b`, of `b`'s shape: each reader broadcasts it to the same elements,
so the rule is exact too, and fusion reads `b` with stride 0 instead of a zeroed array of the whole shape.

A filled array broadcast and copied is a new array of the broadcast's shape filled with the
same constant: `np.broadcast_to(np.zeros_like(w), (n, k)).copy()` -> `np.zeros((n, k))`.
vmap and jacfwd make one of each accumulator reverse mode fills (ops/batching.py
`materialized`: a copy per example to write into). Where symbolic shapes prove the
broadcast cannot raise, and nothing but readers uses the filled array and its broadcast,
one allocation replaces three ops (the small filled array, the view, the copy); DCE drops
what is left unused.
"""
from __future__ import annotations

from collections import Counter

from ..core import Graph, Module, Node, Value
from ..ops.elementwise import is_array_elementwise
from ..ops.table import OPS
from ..symbolic_shapes import symbolic_shapes
from ..types import ArrayType
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
    readers = _readers(graph)
    shapes = None
    smaller: set[Value] = set()  # sums rewritten to less than their symbolic shape
    nodes: list[Node] = []
    read: set[Node] = set()  # the filled arrays a rewritten sum read
    for node in graph.nodes:
        replacement = None
        if node.op == "add" and is_array_elementwise(node):
            replacement = _filled_plus_scalar(node, defs, written)
            if replacement is None and readers.get(node.outputs[0]):
                shapes = shapes or symbolic_shapes(graph)
                replacement = _filled_plus_broadcast(node, defs, written, readers, shapes,
                                                     smaller)
                if replacement is not None:
                    smaller.add(node.outputs[0])
        elif node.op == "array_copy":
            shapes = shapes or symbolic_shapes(graph)
            replacement = _filled_copy(node, defs, readers, shapes)
        if replacement is None:
            nodes.append(node)
            continue
        nodes.extend(replacement)
        uses.subtract(node.inputs)
        uses.update(v for n in replacement for v in n.inputs)
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


def _filled_plus_broadcast(node: Node, defs: dict[Value, Node], written: set[Value],
                           readers: dict[Value, list[Node]], shapes, smaller: set[Value]
                           ) -> list[Node] | None:
    """`node`, an array `add` of a constant-filled array nothing writes into and an array `b`
    of its type, as `c + b` where each reader of the sum is elementwise and broadcasts
    another operand of the filled array's shape (known symbolically, and not a sum this
    rule made `smaller`: two such sums must not vouch for each other); None otherwise."""
    for filled, other in (node.inputs, node.inputs[::-1]):
        made = defs.get(filled)
        full = shapes.get(filled)
        if (made is None or not _constant_fill(made) or filled in written or full is None
                or filled.type != node.outputs[0].type or other.type != filled.type
                or not all(is_array_elementwise(r) and any(
                    v is not node.outputs[0] and v not in smaller
                    and isinstance(v.type, ArrayType) and shapes.get(v) == full
                    for v in r.inputs)
                    for r in readers[node.outputs[0]])):
            continue
        fill = Node("const", [], [Value("", filled.type.dtype)], loc=node.loc)
        make_const(fill, made.attrs["fill"])
        return [fill, Node("add", [fill.outputs[0], other], node.outputs, loc=node.loc)]
    return None


def _filled_copy(node: Node, defs: dict[Value, Node], readers: dict[Value, list[Node]],
                 shapes) -> list[Node] | None:
    """`node`, an `array_copy` of a broadcast of a constant-filled array, as one `array_new` of
    the broadcast's dims filled with that constant, when `shapes` prove the broadcast cannot
    raise and every other use of the two is a read (so the filled array still holds the
    constant); None otherwise."""
    view = defs.get(node.inputs[0])
    made = defs.get(view.inputs[0]) if view is not None and view.op == "array_broadcast_to" \
        else None
    if (made is None or not _constant_fill(made)
            or not OPS["array_broadcast_to"].cannot_raise(view, lambda: shapes)
            or any(r is not view and r.op not in READERS for r in readers[made.outputs[0]])
            or any(r is not node and r.op not in READERS for r in readers[view.outputs[0]])):
        return None
    return [Node("array_new", view.inputs[1:], node.outputs,
                 {"dtype": node.outputs[0].type.dtype, "fill": made.attrs["fill"]},
                 loc=node.loc)]


def _readers(graph: Graph) -> dict[Value, list[Node]]:
    """Value -> the nodes of `graph` reading it; a value the graph returns maps to []."""
    readers: dict[Value, list[Node]] = {}
    for n in graph.nodes:
        for v in n.inputs:
            readers.setdefault(v, []).append(n)
    for v in graph.outputs:
        readers[v] = []
    return readers


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
