"""Constant folding: compute at compile time what depends only on constants.

- A pure leaf op of constant operands becomes a `const` holding what its
  `evaluate` gives, converted to the result type as compiled code would (ints
  wrap to 64 bits). When evaluation raises, the node stays: the error belongs
  to run time.
- `raise_if(False)` does nothing and goes; `raise_if(True)` stays.
- `getitem` of a `tuple` node is that element; `len` of a tuple is its length.
- `if` on a constant condition is replaced by the branch it takes.
- `while` whose condition region returns the constant False, with no effects,
  never runs: its results are the initial carried values.
- Constants entering a region (captured by an `if`, loop invariants of a
  `while`) are copied into it, so folding continues inside; dead parameters
  are left for DCE.

Only values of types bool, i64 and f64 are folded.
"""
from __future__ import annotations

from typing import Any

from ..core import Graph, Module, Node, Value
from ..interp import coercion
from ..ops import OPS
from ..ops.strong import evaluate_numpy
from ..types import BOOL, F64, I64, TupleType
from .effects import has_effects
from .rewrite import Replacement, forward, make_const, rewrite_graph

FOLDED_TYPES = (BOOL, I64, F64)
MAX_SHIFT = 63
"""`x << n` is folded only up to here: Python would build a huge int, and run time decides."""


def fold_constants(module: Module) -> Module:
    """Fold every graph of `module` and all their regions."""
    for graph in module.graphs.values():
        _fold_graph(graph)
    return module


def _fold_graph(graph: Graph) -> None:
    consts: dict[Value, Any] = {}
    tuples: dict[Value, list[Value]] = {}

    def visit(node: Node) -> Replacement | None:
        if node.op == "if":
            return _fold_if(node, consts)
        if node.op == "while":
            return _fold_while(node, consts)
        if node.op == "getitem" and node.inputs[0] in tuples:
            return forward(node, [tuples[node.inputs[0]][node.attrs["index"]]])
        if node.op == "tuple":
            tuples[node.outputs[0]] = node.inputs
        elif node.op == "len" and isinstance(node.inputs[0].type, TupleType):
            make_const(node, len(node.inputs[0].type.elements))
        elif node.op in OPS and node.inputs and all(v in consts for v in node.inputs):
            _fold_leaf(node, [consts[v] for v in node.inputs])
        if node.op == "const":
            convert = coercion(node.outputs[0].type) or (lambda value: value)
            consts[node.outputs[0]] = convert(node.attrs["value"])
        return None

    rewrite_graph(graph, visit)


def _fold_leaf(node: Node, args: list[Any]) -> None:
    """Turn `node`, whose operands are the constants `args`, into a const if that is safe."""
    if "pure" not in OPS[node.op].traits:
        if node.op == "raise_if" and not args[0]:
            make_const(node, None)
        return
    if node.outputs[0].type not in FOLDED_TYPES:
        return
    value = _evaluate(node, args)
    if value is not None:
        make_const(node, value)


def _evaluate(node: Node, args: list[Any]) -> Any:
    """What `node` computes from `args`, or None when it must be left to run time."""
    is_int = node.outputs[0].type == I64
    if node.op == "pow" and is_int and args[1] >= 0:
        return pow(args[0], args[1], 2 ** 64)  # the wrapped power, without the huge int
    if node.op == "lshift" and not 0 <= args[1] <= MAX_SHIFT:
        return None
    try:
        if node.attrs.get("numpy"):
            types = [v.type for v in node.inputs]
            return evaluate_numpy(node.op, types, node.outputs[0].type)(*args)
        return OPS[node.op].evaluate(*args, **node.attrs)
    except Exception:  # noqa: BLE001 - any error is the program's, raised at run time
        return None


def _fold_if(node: Node, consts: dict[Value, Any]) -> Replacement | None:
    """An `if` on a constant is its taken branch; otherwise fold inside both branches."""
    cond, captured = node.inputs[0], node.inputs[1:]
    if cond in consts:
        region = node.regions[0 if consts[cond] else 1]
        renames = dict(zip(region.params, captured))
        renames.update(zip(node.outputs, region.outputs))
        return Replacement(list(region.nodes), renames)
    _sink_constants(node, captured, consts)
    for region in node.regions:
        _fold_graph(region)
    return None


def _fold_while(node: Node, consts: dict[Value, Any]) -> Replacement | None:
    """Fold inside the loop; a loop whose condition is a plain False never runs."""
    n_invariants = node.attrs["n_invariants"]
    _sink_constants(node, node.inputs[:n_invariants], consts)
    for region in node.regions:
        _fold_graph(region)
    cond = node.regions[0]
    if _is_false(cond) and not any(has_effects(inner) for inner in cond.nodes):
        return forward(node, node.inputs[n_invariants:])
    return None


def _is_false(region: Graph) -> bool:
    """Whether `region`'s single output is a `const` False defined in it."""
    (out,) = region.outputs
    return any(n.op == "const" and n.outputs[0] is out and not n.attrs["value"]
               for n in region.nodes)


def _sink_constants(node: Node, inputs: list[Value], consts: dict[Value, Any]) -> None:
    """Copy the constants among `inputs` into each region whose matching parameter is used."""
    for k, value in enumerate(inputs):
        if value not in consts:
            continue
        for region in node.regions:
            param = region.params[k]
            if _is_used(region, param):
                copy = Node("const", [], [Value(param.name, param.type)],
                            {"value": consts[value], "type": param.type}, [], node.loc)
                region.nodes.insert(0, copy)
                _replace_uses(region, param, copy.outputs[0])


def _is_used(graph: Graph, value: Value) -> bool:
    return value in graph.outputs or any(value in n.inputs for n in graph.nodes)


def _replace_uses(graph: Graph, old: Value, new: Value) -> None:
    """Make `graph`'s own nodes and outputs use `new` for `old` (regions cannot see it)."""
    for node in graph.nodes:
        node.inputs = [new if v is old else v for v in node.inputs]
    graph.outputs = [new if v is old else v for v in graph.outputs]
