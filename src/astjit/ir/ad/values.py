"""Adjoint values: zeros, sums along paths, readable names, fresh region parameters.

An adjoint has the type of its primal value: a float for a float, a tuple of
the same shape for a tuple (its integer and bool elements stay zero).
"""
from __future__ import annotations

from collections.abc import Callable

from ..core import Value
from ..ops import zero_of
from ..types import TupleType, Type
from .activity import is_differentiable
from .emit import Emitter


def zero(e: Emitter, t: Type) -> Value:
    """The zero of type `t` (a tuple of zeros for a tuple)."""
    if isinstance(t, TupleType):
        return e.op("tuple", *[zero(e, element) for element in t.elements])
    return e.const(zero_of(t), t)


def adjoint_or_zero(e: Emitter, adjoint: Value | None, t: Type) -> Value:
    """`adjoint`, or the zero of `t` where no adjoint reached the value."""
    return zero(e, t) if adjoint is None else adjoint


def add_adjoints(e: Emitter, a: Value, b: Value) -> Value:
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
