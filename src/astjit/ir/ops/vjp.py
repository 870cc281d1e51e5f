"""What the reverse-mode rules of the op table are built from, and how they are called.

A rule is `vjp(e, g, inputs, out, needs) -> one Value or None per input`, where
`e` is an ad.builder.GraphBuilder, `out` the op's result and `needs[i]` whether input
i wants an adjoint (rules skip work for the others: `log(a)` in the adjoint of
`a ** b` must not run when b is a constant and a is negative). Derivative code
uses only ops that never raise (fdiv, powr), so it can be dropped when unused.
A rule that needs the node's attrs is marked `takes_attrs` (`with_attrs`) and
gets them as a sixth argument (`call_vjp`). Each op declares its rule in its
own block (ops/scalar.py, ops/mathfuncs.py, ...), or why it has none.

The same rules serve elementwise ops on arrays (g, inputs and out then may be
arrays): constants take the element type (`c`), and the few derivative-only
scalar ops, which have no array form, are replaced on arrays by the NumPy op
that is the same there (`div`, `powr`, `logr`, `select`: NumPy's semantics
never raise). Declaring an elementwise op wraps its rule in `unbroadcasting`:
an operand of another shape than the result gets its adjoint summed back to
its shape (`sum_to_like`), in its own dtype; where the operand is provably of
the result's shape and dtype (the only array operand) the adjoint is used as
it is.
"""

from __future__ import annotations

from collections.abc import Callable

from ..types import ArrayType


def call_vjp(op: str, e, g, inputs, out, needs, attrs):
    """Run the VJP rule of `op` (with the node's attrs if it takes them)."""
    from .table import OPS

    rule = OPS[op].vjp
    if getattr(rule, "takes_attrs", False):
        return rule(e, g, inputs, out, needs, attrs)
    return rule(e, g, inputs, out, needs)


def with_attrs(rule: Callable) -> Callable:
    """Mark `rule` as one that takes the node's attrs."""
    rule.takes_attrs = True
    return rule


def tangent_of_first(jvp: Callable) -> Callable:
    """Mark forward rule `jvp` as one reading the first input's tangent alone: the others (a
    shape to sum to, indices, an array giving a shape) change no number of the result, so
    forward mode's activity (ad/forward_activity.py) does not count them."""
    jvp.tangent_inputs = lambda attrs, ins: ins[:1]
    return jvp


def unary(fn: Callable) -> Callable:
    """A unary rule from `fn(e, g, x, out) -> adjoint of x`."""
    return lambda e, g, ins, out, needs: [fn(e, g, ins[0], out)]


def is_array(*values) -> bool:
    return any(isinstance(v.type, ArrayType) for v in values)


def is_complex(*values) -> bool:
    """Whether one of `values` is a complex or a complex array (a NumPy value: its ops
    never raise)."""
    return any(getattr(v.type, "dtype", v.type).is_complex for v in values)


def _numpy_form(*values) -> bool:
    """Whether the derivative-only scalar ops give way to NumPy's on `values`."""
    return is_array(*values) or is_complex(*values)


def c(e, value, like):
    """The constant `value` of `like`'s float or complex type (its element type for an
    array)."""
    t = like.type
    t = t.dtype if isinstance(t, ArrayType) else t
    return e.const(complex(value) if t.is_complex else value, t)


def div(e, a, b):
    """a / b never raising: `fdiv` on scalars, NumPy's `truediv` on arrays and complexes."""
    return e.op("truediv" if _numpy_form(a, b) else "fdiv", a, b)


def powr(e, a, b):
    return e.op("pow" if _numpy_form(a, b) else "powr", a, b)


def logr(e, a):
    return e.op("log" if _numpy_form(a) else "logr", a)


def select(e, cond, a, b):
    """cond ? a : b: `select` on scalars, np.where on arrays."""
    return e.op("where" if is_array(cond, a, b) else "select", cond, a, b)


def sq(e, x):
    return e.op("mul", x, x)


def sign_times(e, g, x):
    """g times the sign of x (g where x is 0)."""
    return select(e, e.op("lt", x, c(e, 0.0, x)), e.op("neg", g), g)


def min_max_vjp(pick_second: str) -> Callable:
    """min(a, b) is b when b < a, else a (max: b when b > a): the adjoint follows the pick."""
    def rule(e, g, ins, out, needs):
        second = e.op(pick_second, ins[1], ins[0])
        zero = c(e, 0.0, g)
        return [select(e, second, zero, g), select(e, second, g, zero)]
    return rule


def pow_vjp(e, g, ins, out, needs):
    """d(a**b) = b * a**(b-1) da + a**b * log(a) db; where a is 0, log(a) counts as 0 (JAX's
    convention: 0**b is flat in b on either side, where 0 * log(0) would be NaN)."""
    a, b = ins
    da = db = None
    if needs[0]:
        da = e.op("mul", g, e.op("mul", b, powr(e, a, e.op("sub", b, c(e, 1.0, b)))))
    if needs[1]:
        base = select(e, e.op("eq", a, c(e, 0.0, a)), c(e, 1.0, a), a)
        db = e.op("mul", g, e.op("mul", out, logr(e, base)))
    return [da, db]


def truediv_vjp(e, g, ins, out, needs):
    """g times values: no division after g."""
    return [div(e, g, ins[1]) if needs[0] else None,
            e.op("neg", e.op("mul", g, div(e, out, ins[1]))) if needs[1] else None]


def log_vjp(e, g, ins, out, needs):
    return [div(e, g, ins[0])]


# ---- un-broadcasting --------------------------------------------------------------------

def reduce_to(e, adjoint, operand, inputs, out):
    """`adjoint` (of `out`'s shape and dtype) reduced to `operand`'s shape and type."""
    if adjoint is None or not is_array(adjoint):
        return adjoint
    if is_array(operand):
        arrays = {v.id for v in inputs if is_array(v)}
        if arrays == {operand.id} and adjoint.type == operand.type:
            return adjoint  # the only array operand: of the result's shape
    return e.op("sum_to_like", adjoint, operand)


def unbroadcasting(rule: Callable) -> Callable:
    """An elementwise op's `rule`, each operand's adjoint reduced to the operand's shape."""
    def unbroadcast(e, g, inputs, out, needs):
        adjoints = rule(e, g, inputs, out, needs)
        return [reduce_to(e, a, x, inputs, out) if need else None
                for a, x, need in zip(adjoints, inputs, needs)]
    unbroadcast.__doc__ = rule.__doc__
    unbroadcast.pointwise = rule  # forward mode's: a tangent is not reduced (ad/forward_rules.py)
    return unbroadcast
