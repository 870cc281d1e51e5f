"""Activity analysis: which values of a graph carry a derivative with respect to chosen parameters.

A value is *active* when its type holds floats (a float scalar, a float array,
or a tuple with one somewhere inside) and it depends on an active parameter through ops
that propagate derivatives. Only active values get adjoints; integers, bools
and tapes never do. Ops with zero derivative (`ops.ZERO_DERIVATIVE`) and
`stop_gradient` produce inactive values whatever they read.

Regions are analysed in place, so one set holds the answer for a graph and all
its regions (Values are unique across a module):

- `if`: a region parameter is active when the captured value it receives is;
  an output is active when either region's matching output is.
- `while`: the carried slots that are active form a fixed point (a slot becomes
  active when the body's output for it is), iterated until it stops growing.
  The `cond` region yields a bool and is never differentiated, so it is skipped.
- `call`: the result is active when any argument is; the callee is analysed on
  its own when its vjp graph is built.

Writes (`writes.py`): writing an active value into an array makes the array
active — the array written, what it is a view of, and the outer values a
region parameter receives, all the way out — and the analysis runs again until
no write makes anything new active.

The analysis is also where a missing rule is found: a leaf op that reads an
active value and has neither a `vjp` rule nor zero derivative raises
`NotDifferentiableError` naming the op and its source location, before any IR
is built.
"""
from __future__ import annotations

from ..core import Graph, Node, Value
from ..ops import OPS, ZERO_DERIVATIVE
from ..types import ArrayType, ScalarType, TupleType, Type
from .errors import NotDifferentiableError, refuse_complex
from .writes import READ_VIEW_OPS, VIEW_OPS, WRITE_OPS, region_bindings

TUPLE_OPS = frozenset({"tuple", "getitem"})
"""Leaf ops the reverse sweep differentiates by hand: they move values, not numbers."""
CUT_OPS = ZERO_DERIVATIVE | {"stop_gradient"}
"""Leaf ops whose result is inactive whatever they read."""


def is_differentiable(t: Type | None) -> bool:
    """Whether values of type `t` hold floats or complex numbers, and so can have an adjoint."""
    if isinstance(t, ScalarType):
        return t.is_float or t.is_complex
    if isinstance(t, ArrayType):
        return t.dtype.is_float or t.dtype.is_complex
    if isinstance(t, TupleType):
        return any(is_differentiable(e) for e in t.elements)
    return False


def active_values(graph: Graph, active_params: list[Value]) -> set[Value]:
    """The values of `graph` and its regions that depend on `active_params` and hold floats."""
    active = {p for p in active_params if is_differentiable(p.type)}
    parents = _alias_parents(graph, {})
    while True:
        _mark_body(graph, active)
        grown = {a for dest in _written_with_active(graph, active)
                 for a in _ancestors(dest, parents) if is_differentiable(a.type)} - active
        if not grown:
            return active
        active |= grown


def _alias_parents(graph: Graph, parents: dict[Value, Value]) -> dict[Value, Value]:
    """Each view -> the array it views, each region parameter -> the value it receives."""
    for node in graph.nodes:
        if node.op in VIEW_OPS or node.op in READ_VIEW_OPS:
            parents[node.outputs[0]] = node.inputs[0]
        for region, params, inputs in region_bindings(node):
            parents.update(zip(params, inputs))
            _alias_parents(region, parents)
    return parents


def _ancestors(value: Value, parents: dict[Value, Value]) -> list[Value]:
    found = [value]
    while found[-1] in parents:
        found.append(parents[found[-1]])
    return found


def _written_with_active(graph: Graph, active: set[Value]) -> list[Value]:
    """The arrays into which `graph` or its regions write an active value."""
    written = []
    for node in graph.nodes:
        if node.op in WRITE_OPS and node.inputs[1] in active:
            written.append(node.inputs[0])
        for region in node.regions:
            written += _written_with_active(region, active)
    return written


def _mark_body(graph: Graph, active: set[Value]) -> None:
    for node in graph.nodes:
        if node.op == "if":
            _mark_if(node, active)
        elif node.op == "while":
            _mark_while(node, active)
        elif node.op == "call":
            _mark_outputs(node.outputs, active, any(v in active for v in node.inputs))
        else:
            _mark_leaf(node, active)


def _mark_outputs(values: list[Value], active: set[Value], flows: bool) -> None:
    """Make the float-holding `values` active when a derivative `flows` into them."""
    if flows:
        active.update(v for v in values if is_differentiable(v.type))


def _mark_leaf(node: Node, active: set[Value]) -> None:
    if not any(v in active for v in node.inputs):
        return
    opdef = OPS.get(node.op)
    has_rule = node.op in TUPLE_OPS or node.op in WRITE_OPS or node.op in ZERO_DERIVATIVE or (
        opdef is not None and opdef.vjp is not None)
    if not has_rule:
        why = opdef.no_vjp if opdef is not None and opdef.no_vjp else "it has no derivative rule"
        raise NotDifferentiableError(f"cannot differentiate '{node.op}' in reverse mode: {why}",
                                     node.op, node.loc)
    if node.op not in CUT_OPS:
        refuse_complex(node)
    _mark_outputs(node.outputs, active, node.op not in CUT_OPS)


def _mark_if(node: Node, active: set[Value]) -> None:
    captured = node.inputs[1:]
    for region in node.regions:
        for param, value in zip(region.params, captured):
            _mark_outputs([param], active, value in active)
        _mark_body(region, active)
    for j, out in enumerate(node.outputs):
        _mark_outputs([out], active, any(r.outputs[j] in active for r in node.regions))


def _mark_while(node: Node, active: set[Value]) -> None:
    """Grow the set of active carried slots until the body adds no new one."""
    n_invariants = node.attrs["n_invariants"]
    body = node.regions[1]
    entering = [v in active for v in node.inputs]
    while True:
        for param, flows in zip(body.params, entering):
            _mark_outputs([param], active, flows)
        _mark_body(body, active)
        leaving = entering[:n_invariants] + [
            was or out in active for was, out in zip(entering[n_invariants:], body.outputs)]
        if leaving == entering:
            break
        entering = leaving
    for out, flows in zip(node.outputs, entering[n_invariants:]):
        _mark_outputs([out], active, flows)
