"""Tangent rules of the leaf ops, read from the op table (`ops/`).

Which rule gives an op's tangent, first match:

- the structural ops here: `tuple` and `getitem` build and take apart tangents
  as they do values, and the tape ops keep a tape of tangents beside each
  active tape (`tape_new` makes one, `tape_push` pushes the value's tangent,
  `tape_get` reads it back; `tape_free` is mirrored by the transform itself);
- the op's own forward rule, `OpDef.jvp` (matmul is bilinear, a reduction's
  row says its own, a creation gives zeros or an array of its fill value's
  tangent);
- the 'linear' trait: the op itself applied to the tangents of its float
  operands, its other operands as they are (`x[i]` of the tangent, a view or a
  reshape of it; a write into an array writes its value's tangent into the
  array's tangent);
- the VJP rule. Every VJP rule is linear in its cotangent `g`: component i is
  g * d(out)/d(x_i). Called with the tangent `dx_i` in place of `g`, component
  i is that input's contribution to the output's tangent, so

      d(out) = sum over active inputs i of vjp(e, dx_i, inputs, out, needs=[j == i])[i]

  and there is no second table of rules. An elementwise op's rule is called
  without its un-broadcasting (`OpDef.vjp.pointwise`): a contribution of an
  operand smaller than the result is spread to the result's shape and dtype
  instead, by adding it to zeros of the result (NumPy's broadcasting).

An array's tangent is an array too, and a write into the array is mirrored
into it (forward.py), so a tangent an op would merely pass on (`x + 0`) is
copied where the graph writes into arrays at all: two arrays never share one
tangent's memory unless they share memory.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core import Node, Value
from ..ops import OPS, zero_of
from ..types import ArrayType, ScalarType, TapeType, TupleType
from .builder import GraphBuilder
from .errors import NotDifferentiableError


def zeros_like(e: GraphBuilder, value: Value) -> Value:
    """The zero tangent of `value` (a value of the new graph): 0.0 for floats, 0 / False for
    ints and bools, a new array of zeros for an array, elementwise for tuples."""
    t = value.type
    if isinstance(t, TupleType):
        return e.op("tuple", *(zeros_like(e, e.op("getitem", value, index=k))
                               for k in range(len(t.elements))), **_node_attrs(t))
    if isinstance(t, ArrayType):
        return e.op("array_new_like", value, fill=0, dtype=t.dtype)
    if isinstance(t, TapeType):
        raise NotDifferentiableError(f"a {t} has no zero tangent: its tangent tape is made "
                                     "where the tape is")
    return e.const(zero_of(t), t)


def _node_attrs(t: TupleType) -> dict:
    return {"node": t.node} if t.node is not None else {}


def copy_array(e: GraphBuilder, value: Value) -> Value:
    """A new array holding `value`'s elements."""
    return e.op("array_copy", value)


TangentRule = Callable[[GraphBuilder, Node, list[Value], Value, list[Value | None]], Value]
"""rule(e, node, inputs, out, tangents) -> the tangent of `out`; `inputs` and `out` are the
node's values in the new graph, `tangents[i]` is input i's tangent or None when inactive."""


def _or_zeros(e: GraphBuilder, value: Value, tangent: Value | None) -> Value:
    return tangent if tangent is not None else zeros_like(e, value)


def _tuple_tangent(e, node, inputs, out, tangents):
    return e.op("tuple", *(_or_zeros(e, v, d) for v, d in zip(inputs, tangents)),
                **_node_attrs(out.type))


def _getitem_tangent(e, node, inputs, out, tangents):
    return e.op("getitem", tangents[0], index=node.attrs["index"])


def _fresh_tangent(e, node, inputs, out, tangents):
    """A tape made or left undefined here (active as its tape family is): the same for its
    tangent tape."""
    return e.op(node.op, **node.attrs)


def _tape_push_tangent(e, node, inputs, out, tangents):
    tape, value = tangents
    return e.op("tape_push", tape, _or_zeros(e, inputs[1], value))


def _tape_get_tangent(e, node, inputs, out, tangents):
    return e.op("tape_get", tangents[0], inputs[1])


STRUCTURAL_RULES: dict[str, TangentRule] = {
    "tuple": _tuple_tangent,
    "getitem": _getitem_tangent,
    "tape_new": _fresh_tangent,
    "undef": _fresh_tangent,
    "tape_push": _tape_push_tangent,
    "tape_get": _tape_get_tangent,
    "tape_clear": lambda e, node, inputs, out, tangents: e.op("tape_clear", tangents[0]),
}
"""Ops whose tangent is built the way their value is (the tape's tangent is a tape)."""


def _linear_tangent(e, node, inputs, out, tangents):
    """The op applied to its float operands' tangents (zeros where inactive)."""
    operands = [_or_zeros(e, v, d) if _is_float(v) else v for v, d in zip(inputs, tangents)]
    return e.op(node.op, *operands, **node.attrs)


def _is_float(value: Value) -> bool:
    """Whether `value` carries a tangent of its own: a float or complex, or an array of them."""
    t = value.type
    t = t.dtype if isinstance(t, ArrayType) else t
    return isinstance(t, ScalarType) and (t.is_float or t.is_complex)


def _own_tangent(e, node, inputs, out, tangents):
    return OPS[node.op].jvp(e, tangents, inputs, out, node.attrs)


def _vjp_tangent(e: GraphBuilder, node: Node, inputs: list[Value], out: Value,
                 tangents: list[Value | None]) -> Value:
    """The tangent of a leaf op from its VJP rule: one call per active input, summed."""
    op = OPS[node.op]
    rule = op.vjp
    if rule is None:
        raise NotDifferentiableError(f"'{node.op}' has no derivative rule", node.op, node.loc)
    rule = getattr(rule, "pointwise", rule)
    if getattr(rule, "takes_attrs", False):
        call = rule
        rule = lambda e, g, ins, out, needs: call(e, g, ins, out, needs, node.attrs)  # noqa: E731
    total = None
    for i, tangent in enumerate(tangents):
        if tangent is None:
            continue
        part = rule(e, tangent, inputs, out, [j == i for j in range(len(inputs))])[i]
        if part is None:
            continue
        if not isinstance(part, Value):
            raise NotDifferentiableError(f"forward mode has no tangent rule for '{node.op}'",
                                         node.op, node.loc)
        total = part if total is None else e.op("add", total, part)
    if total is None:
        return zeros_like(e, out)
    if isinstance(out.type, ArrayType):
        if not isinstance(total.type, ArrayType):  # a float operand's share alone
            return e.op("array_new_like", out, _as(e, total, out.type.dtype), fill="value",
                        dtype=out.type.dtype)
        if total.type.dtype != out.type.dtype:
            total = e.op("array_astype", total, dtype=out.type.dtype)
        if total.type.ndim != out.type.ndim or sum(isinstance(v.type, ArrayType)
                                                     for v in inputs) > 1:
            dims = [e.op("array_dim", out, axis=k) for k in range(out.type.ndim)]
            total = e.op("array_broadcast_to", total, *dims)  # a smaller operand's share
        return total
    return _as(e, total, out.type)


def _as(e: GraphBuilder, value: Value, t: ScalarType) -> Value:
    return value if value.type == t else e.op("cast", value, to=t)


def leaf_tangent(e: GraphBuilder, node: Node, inputs: list[Value], out: Value,
                 tangents: list[Value | None], fresh: bool = False) -> Value:
    """The tangent of an active leaf op's result (or of the array a write writes into),
    emitted with `e`; `fresh`: an array result's tangent must be memory of its own (the
    graph writes into arrays), not an input's tangent or a view of one."""
    tangent = _rule_tangent(e, node, inputs, out, tangents)
    if fresh and isinstance(out.type, ArrayType) and (tangent in tangents or _is_view(e, tangent)):
        tangent = copy_array(e, tangent)
    return tangent


def _is_view(e: GraphBuilder, value: Value) -> bool:
    """Whether `value` is the view the last node emitted made."""
    last = e.graph.nodes[-1] if e.graph.nodes else None
    return last is not None and value in last.outputs and "view" in OPS[last.op].traits


def _rule_tangent(e: GraphBuilder, node: Node, inputs: list[Value], out: Value,
                  tangents: list[Value | None]) -> Value:
    op = OPS[node.op]
    if node.op in STRUCTURAL_RULES:
        rule = STRUCTURAL_RULES[node.op]
    elif op.jvp is not None:
        rule = _own_tangent
    elif "linear" in op.traits:
        rule = _linear_tangent
    elif op.zero_derivative is not None or node.op == "stop_gradient":
        return zeros_like(e, out)
    else:
        rule = _vjp_tangent
    with e.derivative_of(node):
        return rule(e, node, inputs, out, tangents)
