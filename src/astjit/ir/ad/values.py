"""Adjoint values: zeros, sums along paths, readable names, fresh region parameters.

An adjoint has the type of its primal value: a float for a float, an array of
the same shape and dtype for a float array, a tuple of the same shape for a
tuple (its integer and bool elements stay zero). The zero of an array depends
on its shape, known at run time: `zeros_like` of the primal value.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core import Value
from ..ops import zero_of
from ..types import ArrayType, TupleType
from .activity import is_differentiable
from .builder import GraphBuilder


def zero(e: GraphBuilder, like: Value) -> Value:
    """The zero adjoint of the (primal) value `like`: a float zero, `zeros_like` for an
    array (a new array), a tuple of zeros for a tuple."""
    t = like.type
    if isinstance(t, TupleType):
        return e.op("tuple", *[zero(e, e.op("getitem", like, index=i))
                               for i in range(len(t.elements))])
    if isinstance(t, ArrayType):
        return e.op("array_new_like", like, fill=0)
    return e.const(zero_of(t), t)


def adjoint_or_zero(e: GraphBuilder, adjoint: Value | None, like: Value) -> Value:
    """`adjoint`, or the zero of `like` where no adjoint reached the value."""
    return zero(e, like) if adjoint is None else adjoint


def add_adjoints(e: GraphBuilder, a: Value, b: Value) -> Value:
    """a + b for adjoints: floats add, tuples add elementwise, other elements stay zero."""
    t = a.type
    if isinstance(t, TupleType):
        return e.op("tuple", *[add_adjoints(e, e.op("getitem", a, index=i),
                                            e.op("getitem", b, index=i))
                               for i in range(len(t.elements))])
    return e.op("add", a, b) if is_differentiable(t) else a


def adjoint_name(value: Value) -> str:
    """The readable name of `value`'s adjoint: `dx` for `x`, '' for a temporary."""
    return f"d{value.name}" if value.name else ""


def fresh_copies(values: list[Value], name: Callable[[Value], str] = lambda v: v.name
                 ) -> list[Value]:
    """New values with the types of `values`, for region parameters."""
    return [Value(name(v), v.type) for v in values]
