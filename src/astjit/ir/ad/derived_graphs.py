"""Small graph-building helpers the derived graphs share (ad/cores.py, ad/derive.py): a
call, a tuple element, a tuple (a container), float and complex tests, a strength cast, and the
leaves of a container value read, mapped, made into parameters and gathered back."""
from __future__ import annotations

from ..core import Graph, Value
from ..types import (
    F32,
    F64,
    I64,
    NONE,
    ArrayType,
    ScalarType,
    TupleType,
    Type,
    strong,
    weak,
)


def call(graph: Graph, callee: Graph, args: list[Value]) -> Value:
    return graph.add("call", args, attrs={"callee": callee.name}, loc=callee.loc,
                     types=[callee.outputs[0].type]).outputs[0]


def item(graph: Graph, value: Value, index: int, like: Type | None = None) -> Value:
    """Element `index` of a tuple; with `like`, of `like`'s strength (ir/types.py): the
    gradient with respect to a Python float is a Python float, to a NumPy scalar one of those.
    The strength changes by a `cast`, which the optimizer keeps (simplify.py compares exact
    types); a getitem typed otherwise than its element would be folded to the element, of
    the old strength, inside a derived graph inlined into another (hessian's jacrev)."""
    t = value.type.elements[index]
    element = graph.add("getitem", [value], attrs={"index": index}, loc=graph.loc,
                        types=[t]).outputs[0]
    if not (isinstance(like, ScalarType) and isinstance(t, ScalarType)) or like.strong == t.strong:
        return element
    to = strong(t) if like.strong else weak(t)
    return graph.add("cast", [element], attrs={"to": to}, loc=graph.loc, types=[to]).outputs[0]


def tuple_of(graph: Graph, parts: list[Value], like: TupleType | None = None) -> Value:
    """A tuple of `parts`; with `like`, the container `like` is (its node)."""
    node = like.node if like is not None else None
    return graph.add("tuple", parts, attrs={"node": node} if node else {}, loc=graph.loc,
                     types=[TupleType(tuple(p.type for p in parts), node)]).outputs[0]


def is_float(t: Type) -> bool:
    return t in (F64, F32) or (isinstance(t, ArrayType) and t.dtype in (F64, F32))


def is_inexact(t: Type) -> bool:
    """A float or a complex, or an array of them: what has a derivative (docs/arrays.md)."""
    t = t.dtype if isinstance(t, ArrayType) else t
    return isinstance(t, ScalarType) and (t.is_float or t.is_complex)


def cast_to(e, value: Value, t: Type) -> Value:
    """`value` as type `t` (a float of the other strength: a gradient's type is its
    argument's, but a NumPy scalar's and a Python float's differ)."""
    return value if value.type == t or not isinstance(t, ScalarType) else e.op("cast", value, to=t)


def mapped_leaves(graph: Graph, value: Value, fn) -> Value:
    """`value` with `fn` applied to each of its leaves (itself, when not a container)."""
    if not isinstance(value.type, TupleType):
        return fn(value)
    parts = [mapped_leaves(graph, item(graph, value, k), fn)
             for k in range(len(value.type.elements))]
    return tuple_of(graph, parts, value.type)


def leaf_reads(graph: Graph, value: Value) -> list[Value]:
    if not isinstance(value.type, TupleType):
        return [value]
    return [leaf for k in range(len(value.type.elements))
            for leaf in leaf_reads(graph, item(graph, value, k))]


def leaf_params(graph: Graph, t: Type, name: str) -> Value:
    """A value of type `t` built from new parameters of `graph`, one per leaf."""
    if not isinstance(t, TupleType):
        return add_param(graph, Value(name, t))
    parts = [leaf_params(graph, e, f"{name}.{k}") for k, e in enumerate(t.elements)]
    return tuple_of(graph, parts, t)


def add_param(graph: Graph, like: Value) -> Value:
    graph.params.append(Value(like.name, like.type))
    return graph.params[-1]


def gather_leaves(graph: Graph, t: Type, positions, adjoints: dict) -> Value:
    """The gradient of a value of type `t` whose leaves are at `positions`."""
    if isinstance(t, TupleType):
        return tuple_of(graph, [gather_leaves(graph, e, positions, adjoints) for e in t.elements], t)
    j = next(positions)
    if j in adjoints:
        return adjoints[j]
    zero = None if t == NONE else 0
    return graph.add("const", [], attrs={"value": zero, "type": NONE if t == NONE else I64},
                     loc=graph.loc, types=[NONE if t == NONE else I64]).outputs[0]
