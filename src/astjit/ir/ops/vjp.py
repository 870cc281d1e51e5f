"""Reverse-mode rules of the primitives, attached to their table entries."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..types import ArrayType
from . import adjoints, arrays, derivative, memory, scalar, views  # noqa: F401 - the entries
from .table import OPS

# ---- reverse-mode rules: the adjoint of each input, given the output's adjoint g ----
# A rule is vjp(e, g, inputs, out, needs) -> one Value or None per input, where
# `e` is an ad.emit.Emitter, `out` the op's result and `needs[i]` whether input
# i wants an adjoint (rules skip work for the others: `log(a)` in the adjoint of
# `a ** b` must not run when b is a constant and a is negative). Derivative code
# uses only ops that never raise (fdiv, powr), so it can be dropped when unused.
# Ops without a rule and with float inputs cannot be differentiated in reverse;
# ops on ints and bools, comparisons and roundings have zero derivative.
#
# The same rules serve elementwise ops on arrays (g, inputs and out then may be
# arrays): constants take the element type (`_c`), and the few derivative-only
# scalar ops, which have no array form, are replaced on arrays by the NumPy op
# that is the same there (`_div`, `_powr`, `_logr`, `_select`: NumPy's
# semantics never raise). The reduction of an adjoint to its operand's shape
# (un-broadcasting) is added around these rules in vjp_arrays.py.

def _vjp(name: str, rule: Callable) -> None:
    import dataclasses

    OPS[name] = dataclasses.replace(OPS[name], vjp=rule)


def _one(fn: Callable) -> Callable:
    """A unary rule from `fn(e, g, x, out) -> adjoint of x`."""
    return lambda e, g, ins, out, needs: [fn(e, g, ins[0], out)]


def _is_array(*values) -> bool:
    return any(isinstance(v.type, ArrayType) for v in values)


def _c(e, value, like):
    """The constant `value` of `like`'s float type (its element type for an array)."""
    t = like.type
    return e.const(value, t.dtype if isinstance(t, ArrayType) else t)


def _div(e, a, b):
    """a / b never raising: `fdiv` on scalars, NumPy's `truediv` on arrays."""
    return e.op("truediv" if _is_array(a, b) else "fdiv", a, b)


def _powr(e, a, b):
    return e.op("pow" if _is_array(a, b) else "powr", a, b)


def _logr(e, a):
    return e.op("log" if _is_array(a) else "logr", a)


def _select(e, c, a, b):
    """c ? a : b: `select` on scalars, np.where on arrays."""
    return e.op("where" if _is_array(c, a, b) else "select", c, a, b)


def _sq(e, x):
    return e.op("mul", x, x)


_vjp("add", lambda e, g, ins, out, needs: [g, g])
_vjp("sub", lambda e, g, ins, out, needs: [g, e.op("neg", g)])
_vjp("mul", lambda e, g, ins, out, needs: [e.op("mul", g, ins[1]) if needs[0] else None,
                                           e.op("mul", g, ins[0]) if needs[1] else None])
_vjp("truediv", lambda e, g, ins, out, needs: [  # g times values: no division after g
    _div(e, g, ins[1]) if needs[0] else None,
    e.op("neg", e.op("mul", g, _div(e, out, ins[1]))) if needs[1] else None])
_vjp("fdiv", OPS["truediv"].vjp)
_vjp("neg", _one(lambda e, g, x, out: e.op("neg", g)))
_vjp("pos", _one(lambda e, g, x, out: g))
_vjp("stop_gradient", lambda e, g, ins, out, needs: [None])
_vjp("select", lambda e, g, ins, out, needs: [
    None, _select(e, ins[0], g, _c(e, 0.0, g)), _select(e, ins[0], _c(e, 0.0, g), g)])
_vjp("cast", _one(lambda e, g, x, out: e.op("cast", g, to=x.type) if x.type.is_float else None))


def _pow_vjp(e, g, ins, out, needs):
    """d(a**b) = b * a**(b-1) da + a**b * log(a) db."""
    a, b = ins
    da = db = None
    if needs[0]:
        da = e.op("mul", g, e.op("mul", b, _powr(e, a, e.op("sub", b, _c(e, 1.0, b)))))
    if needs[1]:
        db = e.op("mul", g, e.op("mul", out, _logr(e, a)))
    return [da, db]


_vjp("pow", _pow_vjp)
_vjp("fpow", _pow_vjp)
_vjp("powr", _pow_vjp)


def _min_max_vjp(pick_second: str):
    """min(a, b) is b when b < a, else a (max: b when b > a): the adjoint follows the pick."""
    def rule(e, g, ins, out, needs):
        second = e.op(pick_second, ins[1], ins[0])
        zero = _c(e, 0.0, g)
        return [_select(e, second, zero, g), _select(e, second, g, zero)]
    return rule


_vjp("min", _min_max_vjp("lt"))
_vjp("max", _min_max_vjp("gt"))


def _sign_times(e, g, x):
    return _select(e, e.op("lt", x, _c(e, 0.0, x)), e.op("neg", g), g)


_vjp("abs", _one(lambda e, g, x, out: _sign_times(e, g, x)))
_vjp("fabs", _one(lambda e, g, x, out: _sign_times(e, g, x)))
_vjp("sqrt", _one(lambda e, g, x, out: _div(e, e.op("mul", g, _c(e, 0.5, g)), out)))
_vjp("exp", _one(lambda e, g, x, out: e.op("mul", g, out)))
_vjp("expm1", _one(lambda e, g, x, out: e.op("mul", g, e.op("add", out, _c(e, 1.0, out)))))
_vjp("log", _one(lambda e, g, x, out: _div(e, g, x)))
_vjp("logr", OPS["log"].vjp)
_vjp("log2", _one(lambda e, g, x, out: _div(e, g, e.op("mul", x, _c(e, math.log(2.0), x)))))
_vjp("log10", _one(lambda e, g, x, out: _div(e, g, e.op("mul", x, _c(e, math.log(10.0), x)))))
_vjp("log1p", _one(lambda e, g, x, out: _div(e, g, e.op("add", x, _c(e, 1.0, x)))))
_vjp("sin", _one(lambda e, g, x, out: e.op("mul", g, e.op("cos", x))))
_vjp("cos", _one(lambda e, g, x, out: e.op("neg", e.op("mul", g, e.op("sin", x)))))
_vjp("tan", _one(lambda e, g, x, out: e.op("mul", g, e.op("add", _c(e, 1.0, out), _sq(e, out)))))
_vjp("sinh", _one(lambda e, g, x, out: e.op("mul", g, e.op("cosh", x))))
_vjp("cosh", _one(lambda e, g, x, out: e.op("mul", g, e.op("sinh", x))))
_vjp("tanh", _one(lambda e, g, x, out: e.op("mul", g, e.op("sub", _c(e, 1.0, out), _sq(e, out)))))
_vjp("atan", _one(lambda e, g, x, out: _div(e, g, e.op("add", _c(e, 1.0, x), _sq(e, x)))))
_vjp("asin", _one(lambda e, g, x, out: _div(e, g, e.op(
    "sqrt", e.op("sub", _c(e, 1.0, x), _sq(e, x))))))
_vjp("acos", _one(lambda e, g, x, out: e.op("neg", _div(e, g, e.op(
    "sqrt", e.op("sub", _c(e, 1.0, x), _sq(e, x)))))))
_vjp("asinh", _one(lambda e, g, x, out: _div(e, g, e.op(
    "sqrt", e.op("add", _sq(e, x), _c(e, 1.0, x))))))
_vjp("acosh", _one(lambda e, g, x, out: _div(e, g, e.op(
    "sqrt", e.op("sub", _sq(e, x), _c(e, 1.0, x))))))
_vjp("atanh", _one(lambda e, g, x, out: _div(e, g, e.op("sub", _c(e, 1.0, x), _sq(e, x)))))
_vjp("erf", _one(lambda e, g, x, out: e.op("mul", g, e.op(
    "mul", _c(e, 2.0 / math.sqrt(math.pi), x), e.op("exp", e.op("neg", _sq(e, x)))))))
_vjp("erfc", _one(lambda e, g, x, out: e.op("neg", OPS["erf"].vjp(e, g, [x], out, [True])[0])))


def _atan2_vjp(e, g, ins, out, needs):
    """atan2(y, x): dy = x / (x^2 + y^2), dx = -y / (x^2 + y^2)."""
    y, x = ins
    scale = _div(e, g, e.op("add", _sq(e, x), _sq(e, y)))
    return [e.op("mul", scale, x), e.op("neg", e.op("mul", scale, y))]


def _hypot_vjp(e, g, ins, out, needs):
    """hypot(x, y): dx = x / out, dy = y / out."""
    scale = _div(e, g, out)
    return [e.op("mul", scale, ins[0]), e.op("mul", scale, ins[1])]


def _copysign_vjp(e, g, ins, out, needs):
    """copysign(a, b) = |a| sign(b): da = sign(a) sign(b) g; b only chooses a sign."""
    one = _c(e, 1.0, g)
    sign = e.op("mul", e.op("copysign", one, ins[0]), e.op("copysign", one, ins[1]))
    return [e.op("mul", g, sign), None]


def _fmod_vjp(e, g, ins, out, needs):
    """fmod(a, b) = a - b * trunc(a / b): da = g, db = -g trunc(a / b)."""
    quotient = e.op("cast", e.op("trunc", _div(e, ins[0], ins[1])), to=g.type)
    return [g, e.op("neg", e.op("mul", g, quotient)) if needs[1] else None]


def _mod_vjp(e, g, ins, out, needs):
    """a % b = a - b * floor(a / b) (floats): da = g, db = -g floor(a / b)."""
    if not g.type.is_float:
        return [None, None]
    quotient = e.op("cast", e.op("floor", _div(e, ins[0], ins[1])), to=g.type)
    return [g, e.op("neg", e.op("mul", g, quotient)) if needs[1] else None]


_vjp("atan2", _atan2_vjp)
_vjp("hypot", _hypot_vjp)
_vjp("copysign", _copysign_vjp)
_vjp("fmod", _fmod_vjp)
_vjp("mod", _mod_vjp)

ZERO_DERIVATIVE = frozenset({
    "floordiv", "floor", "ceil", "trunc", "round", "lt", "le", "gt", "ge", "eq", "ne", "not",
    "isnan", "isinf", "isfinite", "raise_if", "len", "index", "tag", "untag", "const", "undef",
    "tape_new", "tape_clear", "tape_free",
    "bitand", "bitor", "bitxor", "lshift", "rshift", "invert", "add_sat",
    "array_dim", "array_shape", "array_size", "array_ndim", "array_arange", "array_release",
})
"""Ops whose result does not change with their float inputs (or that have none)."""
