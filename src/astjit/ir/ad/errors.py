"""The error differentiation raises: what cannot be differentiated, and where."""
from __future__ import annotations

from ...errors import Loc
from ..types import ArrayType, ScalarType, TupleType, Type


class NotDifferentiableError(Exception):
    """Reverse mode cannot differentiate this graph.

    `op` names the primitive without a reverse-mode rule (None when the problem
    is the signature: a non-float output or parameter); `loc` is where it came
    from. The gradient driver falls back to forward mode when `op` is a tape op
    (the graph is itself a gradient) and reports the error to the user otherwise.
    """

    def __init__(self, message: str, op: str | None = None, loc: Loc | None = None):
        self.op = op
        self.loc = loc
        super().__init__(f"{message} (at {loc})" if loc is not None else message)


COMPLEX_REFUSAL = (
    "cannot differentiate through complex numbers yet: '{op}' makes a complex value from one "
    "being differentiated, and complex values carry no derivative (it would be lost, not "
    "zero); write the computation on floats: the real and imaginary parts as two float "
    "values or arrays")
"""Why a derivative may not flow into a complex value (docs/arrays.md: gradients)."""


def holds_complex(t: Type | None) -> bool:
    """Whether a value of type `t` is or holds a complex number (no derivative flows into one)."""
    if isinstance(t, ScalarType):
        return t.is_complex
    if isinstance(t, ArrayType):
        return t.dtype.is_complex
    if isinstance(t, TupleType):
        return any(holds_complex(e) for e in t.elements)
    return False


def refuse_complex(node, writes: bool) -> None:
    """NotDifferentiableError if leaf `node`, which reads a value being differentiated, makes
    a complex (or `writes` into a complex array, its first input): its derivative would be
    dropped silently."""
    if any(holds_complex(v.type) for v in [*node.outputs, *node.inputs[:writes]]):
        raise NotDifferentiableError(COMPLEX_REFUSAL.format(op=node.op), node.op, node.loc)
