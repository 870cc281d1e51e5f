"""The error differentiation raises: what cannot be differentiated, and where."""
from __future__ import annotations

from ...errors import Loc
from ..ops import OPS
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
    "cannot differentiate '{op}' through complex numbers yet: its derivative rule is written "
    "for real numbers; write the computation on floats (the real and imaginary parts as two "
    "float values or arrays), or with the complex operations that have one (docs/arrays.md: "
    "gradients)")
"""Why a derivative may not flow through an op on complex values (docs/arrays.md: gradients)."""

COMPLEX_TRAITS = frozenset({"holomorphic", "complex_rule", "linear"})
"""The op traits that say an op's derivative rules hold on complex values, under JAX's
convention (docs/arrays.md: gradients): a holomorphic op's real rule, unchanged; an op with
rules of its own for complex operands (`np.real`, `np.abs`, a cast); a linear op (a view, a
copy, an element read), which its forward rule applies to the tangents and its reverse rule
transposes."""

CARRYING_OPS = frozenset({"tuple", "getitem", "tape_new", "tape_push", "tape_get", "tape_clear",
                          "tape_free", "undef"})
"""Ops that move or store values, whatever their numbers: AD builds their derivatives as
it builds them (a tuple of adjoints, a tape of tangents)."""


def holds_complex(t: Type | None) -> bool:
    """Whether a value of type `t` is or holds a complex number."""
    if isinstance(t, ScalarType):
        return t.is_complex
    if isinstance(t, ArrayType):
        return t.dtype.is_complex
    if isinstance(t, TupleType):
        return any(holds_complex(e) for e in t.elements)
    return False


def refuse_complex(node) -> None:
    """NotDifferentiableError if leaf `node`, which reads a value being differentiated, reads
    or makes a complex (or `writes` into a complex array, its first input) and its op's rules
    do not hold on complex values (`COMPLEX_TRAITS`): its derivative would be wrong."""
    if node.op not in CARRYING_OPS and any(holds_complex(v.type)
                                           for v in [*node.outputs, *node.inputs]):
        opdef = OPS.get(node.op)
        if opdef is None or not opdef.traits & COMPLEX_TRAITS:
            raise NotDifferentiableError(COMPLEX_REFUSAL.format(op=node.op), node.op, node.loc)
