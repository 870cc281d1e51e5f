"""Common subexpression elimination, graph by graph and region by region.

A pure leaf node equal to an earlier node of the same graph — same op, same
inputs (in any order for commutative ops), same attrs (constants by value and
type, floats by their bits so 0.0 and -0.0 stay apart, and NaNs of either sign),
same result types — is replaced by the earlier node's outputs. Ops that may
raise are merged too: the earlier node, in the same straight-line list, runs
first on the same operands, so it raises first or the later one would not have
raised either.
Each region gets its own table: regions see no values of the enclosing graph.

A pure op that makes a new array (`x * y`, `np.sum(x, axis=0)`) is merged only
when neither array can be told apart from the other afterwards: no write
reaches it or a view of it, and it does not leave the graph (returned,
yielded, carried, passed to a call). `_private_arrays` finds those: every use
of the array and of its views is a read (`READERS`). And a node that may write
into an array (`_may_write`) ends the life of every earlier entry that reads
an array it may write: `np.sum(y)` before `y[0] = 5.0` is not `np.sum(y)` after it.
A leaf op writes only into its array operands, and a new array that only leaf ops
touch (`_apart`: read, viewed or written, never returned, captured or passed on) is
memory no other array shares; the writes of a structural op are not looked into.
"""
from __future__ import annotations

import struct
from collections.abc import Hashable
from typing import Any

from ..core import STRUCTURAL_OPS, Graph, Module, Node, Value
from ..ops import OPS
from ..types import ArrayType
from .dce import drop_region_params
from .rewrite import Replacement, forward, rewrite_graph


def eliminate_common_subexpressions(module: Module) -> Module:
    """Merge equal pure leaf nodes in every graph of `module` and all their regions."""
    for graph in module.graphs.values():
        _cse_graph(graph)
    return module


VIEWS = frozenset(name for name, op in OPS.items() if "view" in op.traits)
"""Ops whose array result may share memory with their first input."""
READERS = frozenset(name for name, op in OPS.items() if op.traits & {"reads", "view"})
"""Ops that only read their array inputs (besides the elementwise ones)."""
WRITERS = frozenset(name for name, op in OPS.items() if "writes" in op.traits)
"""Ops that may write into their array inputs (an array they return is one of those)."""


def _cse_graph(graph: Graph) -> None:
    seen: dict[Hashable, Node] = {}
    roots = _roots(graph)
    private = _private_arrays(graph, roots)
    apart = _apart(graph, roots)

    def may_alias(a: Value, b: Value) -> bool:
        a, b = roots.get(a, a), roots.get(b, b)
        return a is b or (a not in apart and b not in apart)

    def visit(node: Node) -> Replacement | None:
        _one_param_per_input(node)
        for region in node.regions:
            _cse_graph(region)
        if _may_write(node):  # what read arrays before may read other values after
            written = _arrays(node)
            for key in [k for k, n in seen.items() if node.op in STRUCTURAL_OPS and _arrays(n)
                        or any(may_alias(r, w) for r in _arrays(n) for w in written)]:
                del seen[key]
        if node.op not in OPS or "pure" not in OPS[node.op].traits:
            return None
        if any(isinstance(v.type, ArrayType) and v not in private for v in node.outputs):
            return None  # a new array someone may write into or hold on to
        earlier = seen.setdefault(_key(node), node)
        return None if earlier is node else forward(node, earlier.outputs)

    rewrite_graph(graph, visit)


def _one_param_per_input(node: Node) -> None:
    """Give a value that a loop receives twice as an invariant, or a branch twice as a
    capture, one parameter in each region (after inlining `h(x, x)`). The regions compute
    the same, and reverse mode follows the writes into an array by its one name
    (ad/derive.py refuses an array written through one name and read through another). A
    loop's sequences (`iterate`: what type inference unrolled over) keep their slots."""
    if node.op == "if":
        first, stop, fixed = 1, len(node.inputs), 0
    elif node.op == "while":
        first, stop = 0, node.attrs["n_invariants"]
        fixed = node.attrs.get("iterate", {}).get("sequences", 0)
    else:
        return
    slot_of: dict[Value, int] = {}
    merged: dict[int, int] = {}
    for k, value in enumerate(node.inputs[first:stop]):
        j = slot_of.setdefault(value, k)
        if j != k and k >= fixed:
            merged[k] = j
    if not merged:
        return
    for region in node.regions:
        renames = {region.params[k]: region.params[j] for k, j in merged.items()}
        for inner in region.nodes:
            inner.inputs = [renames.get(v, v) for v in inner.inputs]
        region.outputs = [renames.get(v, v) for v in region.outputs]
    drop_region_params(node, set(merged), first_input=first)
    if node.op == "while":
        node.attrs["n_invariants"] -= len(merged)


def _may_write(node: Node) -> bool:
    """Whether `node` may write into an array: a write, or a structural op (a call, a loop,
    a branch, a kernel reusing a buffer), whose insides are not looked at here."""
    return node.op in STRUCTURAL_OPS or node.op in WRITERS


def _arrays(node: Node) -> list[Value]:
    """The array operands of `node`."""
    return [v for v in node.inputs if isinstance(v.type, ArrayType)]


def _roots(graph: Graph) -> dict[Value, Value]:
    """For each value a node of `graph` makes, the value whose memory it is: itself, or
    for a view (or the array a write returns) the root of its first operand."""
    root: dict[Value, Value] = {}
    for node in graph.nodes:
        shares = node.inputs and (node.op in VIEWS or node.op in WRITERS)
        for v in node.outputs:
            root[v] = root.get(node.inputs[0], node.inputs[0]) if shares else v
    return root


def _apart(graph: Graph, root: dict[Value, Value]) -> set[Value]:
    """The new arrays (of allocating and elementwise ops) no other array value of `graph`
    may share memory with but their views and the arrays writes into them return: those
    are used only by leaf ops that make no other alias of them (`_keeps_apart`), and
    never leave the graph."""
    made = {v for node in graph.nodes if node.op in OPS and node.op != "callback"  # fn's own
            and OPS[node.op].traits & {"allocates", "elementwise"}
            for v in node.outputs if isinstance(v.type, ArrayType)}
    escaped = {root.get(v, v) for v in graph.outputs}
    for node in graph.nodes:
        if not _keeps_apart(node):
            escaped.update(root.get(v, v) for v in _arrays(node))
    return made - escaped


def _keeps_apart(node: Node) -> bool:
    """Whether every array `node` makes is a new one, a view of its first operand or what a
    write into it returns (`_roots` follows those): `sum_to_like` may return its operand."""
    if node.op not in OPS:
        return False
    traits = OPS[node.op].traits
    if node.op in VIEWS or node.op in WRITERS or "elementwise" in traits:
        return True
    return "reads" in traits and ("allocates" in traits or not any(
        isinstance(v.type, ArrayType) for v in node.outputs))


def _private_arrays(graph: Graph, root: dict[Value, Value]) -> set[Value]:
    """The array values of `graph`'s nodes that are only ever read, directly or through views."""
    shared = {root.get(v, v) for v in graph.outputs}
    for node in graph.nodes:
        reads = node.op in READERS or (node.op in OPS and "elementwise" in OPS[node.op].traits)
        if not reads:
            shared.update(root.get(v, v) for v in node.inputs if isinstance(v.type, ArrayType))
    return {v for v, r in root.items() if isinstance(v.type, ArrayType) and r not in shared}


def _key(node: Node) -> Hashable:
    """What makes two leaf nodes compute the same values."""
    inputs = node.inputs
    if "commutative" in OPS[node.op].traits:
        inputs = sorted(inputs, key=lambda v: v.id)
    attrs = tuple(sorted((name, _frozen(value)) for name, value in node.attrs.items()))
    return node.op, tuple(inputs), attrs, tuple(v.type for v in node.outputs)


def _frozen(value: Any) -> Hashable:
    """A hashable stand-in for an attribute, equal only for the same value of the same type."""
    if isinstance(value, float):  # by its bits: 0.0 and -0.0 apart, and NaNs of each sign
        return "float", struct.pack("<d", value)
    if isinstance(value, complex):
        return "complex", struct.pack("<dd", value.real, value.imag)
    if isinstance(value, (tuple, list)):
        return type(value).__name__, tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return "dict", tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return "repr", repr(value)
    return type(value).__name__, value
