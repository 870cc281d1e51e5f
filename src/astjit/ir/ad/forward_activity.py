"""Activity analysis for forward mode: which values of a graph carry a tangent.

A value is *active* when it depends on an active parameter and its type can
carry a derivative (`differentiable`). Inactive values get no tangent nodes.
The rules, one per kind of node:

- leaf op: active when some input whose tangent reaches the result is active
  (every input, but a creation's shape: `jvp.tangent_inputs`), unless the op has
  a zero derivative (`ZERO_DERIVATIVE`, `stop_gradient`); a write (an op with the
  'writes' trait) of an active value makes the array it writes into active;
- ``if``: a region parameter is active when its captured value is; an output
  is active when either region's output is;
- ``while``: an invariant's parameters are active when the invariant is; a
  carried slot is active when its initial value or its body update is (a
  fixed point, as the body's update may depend on another carried slot);
- ``call``: the result is active when some argument is, and so is every array
  argument (the callee may write into it).

Memory needs one more rule. A tape is created empty (`tape_new`, a constant)
and then pushed onto; its tangent is a tape of tangents that must hold one
entry per entry of the tape. An array is written into (`y[i] = x`); its
tangent is an array that must see the same writes, and a view of it must
write into its base's tangent. So every value of a *family* (the values one
tape or one array's memory takes as it is threaded through pushes, views,
tuples, loops and branches) is active as soon as one is: the tangent tape or
array is created where the tape or array is, and views of it are views of its
tangent. The analysis repeats until the families and the rules agree.
"""
from __future__ import annotations

from ..core import Graph, Node, Value
from ..ops import OPS, ZERO_DERIVATIVE
from ..types import ArrayType, ScalarType, TapeType, TupleType, Type
from .errors import refuse_complex

CONSTANT_OPS = ZERO_DERIVATIVE | {"stop_gradient"}
"""Leaf ops whose result never carries a tangent."""


def differentiable(t: Type | None) -> bool:
    """Whether a value of type `t` can carry a derivative (a float or a complex somewhere
    inside)."""
    if isinstance(t, ScalarType):
        return t.is_float or t.is_complex
    if isinstance(t, ArrayType):
        return t.dtype.is_float or t.dtype.is_complex
    if isinstance(t, TupleType):
        return any(differentiable(e) for e in t.elements)
    if isinstance(t, TapeType):
        return differentiable(t.element)
    return False


def active_values(graph: Graph, params: list[Value]) -> set[Value]:
    """The values of function graph `graph` (its regions included) that carry a tangent,
    when `params` are the parameters given one."""
    families = memory_families(graph)
    active = set(params)
    while True:
        before = len(active)
        _propagate(graph, active)
        for family in families:
            if not active.isdisjoint(family):
                _mark(family, active)
        if len(active) == before:
            return active


def _propagate(graph: Graph, active: set[Value]) -> None:
    """Mark, in order, what `graph`'s nodes make active; `active` only grows."""
    for node in graph.nodes:
        if node.op == "if":
            _propagate_if(node, active)
        elif node.op == "while":
            _propagate_while(node, active)
        elif node.op in CONSTANT_OPS:
            continue
        elif any(v in active for v in _tangent_inputs(node)):  # a leaf op or a call
            writes = node.op in OPS and "writes" in OPS[node.op].traits
            if node.op in OPS:
                refuse_complex(node)
            _mark(node.outputs, active)
            if node.op == "call":  # the callee may write into any array it is given
                _mark([v for v in node.inputs if isinstance(v.type, ArrayType)], active)
            elif writes:
                _mark(node.inputs[:1], active)


def _tangent_inputs(node: Node) -> list[Value]:
    """The inputs whose tangents reach `node`'s results: all of them, unless the op's forward
    rule names fewer (`jvp.tangent_inputs`: a creation's fill value, not its shape)."""
    opdef = OPS.get(node.op)
    select = getattr(opdef.jvp, "tangent_inputs", None) if opdef is not None else None
    return node.inputs if select is None else select(node.attrs, node.inputs)


def _mark(values: list[Value], active: set[Value]) -> None:
    active.update(v for v in values if differentiable(v.type))


def _propagate_if(node: Node, active: set[Value]) -> None:
    captured = node.inputs[1:]
    for region in node.regions:
        _mark([p for p, v in zip(region.params, captured) if v in active], active)
        _propagate(region, active)
    _mark([out for k, out in enumerate(node.outputs)
           if any(region.outputs[k] in active for region in node.regions)], active)


def _propagate_while(node: Node, active: set[Value]) -> None:
    """The carried slots' fixed point: a slot is active if its init or its update is."""
    n_invariants = node.attrs["n_invariants"]
    cond, body = node.regions
    while True:
        before = len(active)
        for region in (cond, body):
            _mark([p for p, v in zip(region.params, node.inputs) if v in active], active)
        for k, out in enumerate(node.outputs):
            if body.outputs[k] in active or body.params[n_invariants + k] in active:
                _mark([out, cond.params[n_invariants + k], body.params[n_invariants + k]], active)
        _propagate(cond, active)
        _propagate(body, active)
        if len(active) == before:
            return


def memory_families(graph: Graph) -> list[set[Value]]:
    """The tape and float array values of `graph` grouped by the memory they are or share:
    linked by `tape_push`, views, accumulating writes, tuples, and across loop and branch
    boundaries (conservatively: a value a branch may return is linked to both)."""
    families = _Families()
    root, link = families.root, families.link

    for node in graph.walk():
        if node.op in ("tape_push", "tape_clear", "getitem") or node.op in SHARING_OPS:
            link(node.inputs[0], node.outputs[0])
        elif node.op == "tuple":
            link(node.outputs[0], *node.inputs)
        elif node.op == "if":
            for k, v in enumerate(node.inputs[1:]):
                link(v, *(region.params[k] for region in node.regions))
            for k, out in enumerate(node.outputs):
                link(out, *(region.outputs[k] for region in node.regions))
        elif node.op == "while":
            n_invariants = node.attrs["n_invariants"]
            cond, body = node.regions
            for j, v in enumerate(node.inputs):
                link(v, cond.params[j], body.params[j])
            for k, out in enumerate(node.outputs):
                link(out, node.inputs[n_invariants + k], body.outputs[k])
    grouped: dict[Value, set[Value]] = {}
    for v in families.parent:
        grouped.setdefault(root(v), set()).add(v)
    return list(grouped.values())


def written_memory(graph: Graph) -> set[Value]:
    """The array values of `graph` whose memory a write of it may change: the families of
    the arrays written into and of those given to a call, where a family also links what a
    leaf op's result may be, every op but those that make a new array (`sum_to_like` may
    return its operand). A tangent shared with none of them need not be copied: nothing
    writes into it."""
    families = _Families()
    root, link = families.root, families.link

    for family in memory_families(graph):
        link(*family)
    targets = []
    for node in graph.walk():
        opdef = OPS.get(node.op)
        if node.op == "call":
            targets += node.inputs
        elif opdef is not None and "writes" in opdef.traits:
            targets.append(node.inputs[0])
        if opdef is not None and not _makes_new_arrays(opdef) and node.op not in SHARING_OPS:
            link(*node.outputs, *node.inputs)
    written = {root(v) for v in targets if _is_memory(v.type)}
    return {v for v in families.parent if root(v) in written}


class _Families:
    """Memory values grouped by union-find: `link` puts values sharing memory in one
    family (values of other types are left out), `root` names a value's family."""

    def __init__(self) -> None:
        self.parent: dict[Value, Value] = {}

    def root(self, v: Value) -> Value:
        while self.parent.setdefault(v, v) is not v:
            v = self.parent[v]
        return v

    def link(self, *values: Value) -> None:
        memory = [v for v in values if _is_memory(v.type)]
        for v in memory[1:]:
            self.parent[self.root(v)] = self.root(memory[0])


def _makes_new_arrays(opdef) -> bool:
    """Whether the op's array result is always a new array (`array_astype` may be its
    operand)."""
    return ("allocates" in opdef.traits or "elementwise" in opdef.traits) \
        and opdef.name != "array_astype"


SHARING_OPS = frozenset({"array_view", "array_transpose", "array_reshape", "diag",
                         "add_at", "add_into", "set_at", "zero_into", "complex_part"})
"""Leaf ops whose result may be (a view of) their first input's memory."""


def _is_memory(t: Type | None) -> bool:
    if isinstance(t, TapeType):
        return True
    if isinstance(t, TupleType):
        return any(_is_memory(e) for e in t.elements)
    return isinstance(t, ArrayType) and (t.dtype.is_float or t.dtype.is_complex)
