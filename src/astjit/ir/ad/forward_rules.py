"""Tangent rules of the leaf ops, derived from the reverse-mode rules of `ops/`.

Every VJP rule is linear in its cotangent `g`: component i is g * d(out)/d(x_i).
Called with the tangent `dx_i` in place of `g`, component i is that input's
contribution to the output's tangent, so the tangent of a leaf op is

    d(out) = sum over active inputs i of vjp(e, dx_i, inputs, out, needs=[j == i])[i]

and there is no second table of rules. The ops that only move values around
have structural rules here: `tuple` and `getitem` build and take apart
tangents as they do values, and the tape ops keep a tape of tangents beside
each active tape (`tape_new` makes one, `tape_push` pushes the value's tangent,
`tape_get` reads it back; `tape_free` is mirrored by the transform itself).
The VJP rules are written for float scalars, so an op they would see on a
tuple or a tape (`select` of two tuples) is reported, not differentiated.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core import Node, Value
from ..ops import OPS, zero_of
from ..types import ScalarType, TapeType, TupleType, Type
from .builder import GraphBuilder
from .errors import NotDifferentiableError


def zeros(e: GraphBuilder, t: Type) -> Value:
    """The zero tangent of type `t`: 0.0 for floats, 0 / False for ints and bools, elementwise
    for tuples."""
    if isinstance(t, TupleType):
        return e.op("tuple", *(zeros(e, element) for element in t.elements))
    if isinstance(t, TapeType):
        raise NotDifferentiableError(f"a {t} has no zero tangent: its tangent tape is made "
                                     "where the tape is")
    return e.const(zero_of(t), t)


TangentRule = Callable[[GraphBuilder, Node, list[Value], Value, list[Value | None]], Value]
"""rule(e, node, inputs, out, tangents) -> the tangent of `out`; `inputs` and `out` are the
node's values in the new graph, `tangents[i]` is input i's tangent or None when inactive."""


def _or_zeros(e: GraphBuilder, value: Value, tangent: Value | None) -> Value:
    return tangent if tangent is not None else zeros(e, value.type)


def _tuple_tangent(e, node, inputs, out, tangents):
    return e.op("tuple", *(_or_zeros(e, v, d) for v, d in zip(inputs, tangents)))


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


def linear_tangent(e: GraphBuilder, node: Node, inputs: list[Value], out: Value,
                   tangents: list[Value | None]) -> Value:
    """The tangent of a leaf op from its VJP rule: one call per active input, summed."""
    rule = OPS[node.op].vjp
    if not (isinstance(out.type, ScalarType) and out.type.is_float):
        raise NotDifferentiableError(f"forward mode differentiates '{node.op}' on float scalars "
                                     f"only, not on {out.type}", node.op, node.loc)
    if rule is None:
        raise NotDifferentiableError(f"'{node.op}' has no derivative rule", node.op, node.loc)
    total = None
    for i, tangent in enumerate(tangents):
        if tangent is None:
            continue
        part = rule(e, tangent, inputs, out, [j == i for j in range(len(inputs))])[i]
        if part is None:
            continue
        if part.type != out.type:
            part = e.op("cast", part, to=out.type)
        total = part if total is None else e.op("add", total, part)
    return total if total is not None else zeros(e, out.type)


def leaf_tangent(e: GraphBuilder, node: Node, inputs: list[Value], out: Value,
                 tangents: list[Value | None]) -> Value:
    """The tangent of an active leaf op's result, emitted with `e`."""
    rule = STRUCTURAL_RULES.get(node.op, linear_tangent)
    return rule(e, node, inputs, out, tangents)
