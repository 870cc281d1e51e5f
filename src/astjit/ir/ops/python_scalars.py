"""Python's scalar semantics over a batch: a number per example computed by the op's
array form (NumPy's arithmetic) plus checks that raise what Python raises.

A scalar op with Python's semantics (`math.sqrt(x)`, `a / b`, `math.floor(x)`, `int(x)`)
raises where NumPy's form of it gives NaN, an infinity or garbage; vmap computes all
the examples at once with the array form and raises, after it, the exception and
message that the first failing check would raise for an example. The checks are the
ones the scalar lowerings make (backend/llvm: `check_math1`, `pow_float`, the
divisions, `float_to_int`), written as array ops. Only which error comes first may
differ from a loop over the examples: a loop raises the first error of the first
failing example, the batch the first failing check of any example.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from ..types import BOOL, ArrayType, ScalarType, weak
from .semantics import float_pow
from .table import OPS


def _message_of(failing: Callable[[], object]) -> str:
    try:
        failing()
    except (ArithmeticError, ValueError) as exc:
        return str(exc)
    raise AssertionError("expected an exception")


_zero = 0.0
MATH_DOMAIN = _message_of(lambda: math.sqrt(-1.0))
MATH_RANGE = _message_of(lambda: math.exp(1000.0))
DIVISION = {("truediv", True): _message_of(lambda: 1.0 / _zero),
            ("floordiv", True): _message_of(lambda: 1.0 // _zero),
            ("mod", True): _message_of(lambda: 1.0 % _zero),
            ("floordiv", False): _message_of(lambda: 1 // int(_zero)),
            ("mod", False): _message_of(lambda: 1 % int(_zero)),
            ("divmod", True): _message_of(lambda: divmod(1.0, _zero)),
            ("divmod", False): _message_of(lambda: divmod(1, int(_zero)))}
ZERO_NEGATIVE_POWER = _message_of(lambda: float_pow(0.0, -1.0))
NEGATIVE_FRACTIONAL_POWER = _message_of(lambda: float_pow(-8.0, 0.5))
POWER_OVERFLOW = _message_of(lambda: float_pow(10.0, 400.0))
NAN_TO_INT = _message_of(lambda: int(math.nan))
INF_TO_INT = _message_of(lambda: int(math.inf))
INT_RANGE = "float too large to convert to int{bits}"

ROUNDINGS = {"floor": "numpy_floor", "ceil": "numpy_ceil", "trunc": "numpy_trunc",
             "round": "numpy_round"}
"""Python's rounding to an int, and NumPy's to a float of the same value."""
ARRAY_FORMS = {"fmod": "numpy_fmod"}
"""Ops whose form on arrays is another op (math.fmod's is np.fmod)."""
UNCHECKED = ("fabs", "copysign", "hypot")
"""'raises' ops whose scalar lowering checks nothing: the array form is the same."""


def python_scalar_batch(b, node, operands: list):
    """`node` (a scalar op with Python's semantics) for every example: the batched value,
    or None where its errors are not written here (the op then stays per example)."""
    op = node.op
    attrs = {k: v for k, v in node.attrs.items() if k != "numpy"}
    if op in ROUNDINGS:
        x = operands[0]
        if x.type.dtype.is_int:
            return _as_dtype(b, x, node.outputs[0].type)
        return to_int(b, b.op(ROUNDINGS[op], x), node.outputs[0].type)
    if op in UNCHECKED:
        return b.op(op, *operands, **attrs)
    if OPS[op].check == "math1":
        return _math1(b, op, ARRAY_FORMS.get(op, op), operands, attrs)
    if op in ("truediv", "floordiv", "mod"):
        return _division(b, op, operands, attrs)
    if op == "pow" and _dtype(node.outputs[0]).is_float:
        return _float_pow(b, [_as_float(b, v, node.outputs[0].type) for v in operands], attrs)
    return None


def to_int(b, x, to: ScalarType):
    """Float array `x` as ints of `to`, as Python's `int()` of each element: ValueError
    for NaN, OverflowError for an infinity or a value outside `to`'s range."""
    raise_if_any(b, b.op("isnan", x), "ValueError", NAN_TO_INT)
    raise_if_any(b, b.op("isinf", x), "OverflowError", INF_TO_INT)
    bits = to.bits
    limit = b.const(float(2 ** (bits - 1)), x.type.dtype)
    too_big = b.op("bitor", b.op("ge", x, limit), b.op("lt", x, b.op("neg", limit)))
    raise_if_any(b, too_big, "OverflowError", INT_RANGE.format(bits=bits))
    return b.op("array_astype", x, dtype=weak(to))


def raise_if_any(b, condition, exc: str, message: str) -> None:
    """Raise `exc(message)` if `condition` (bool, an array or a number) holds anywhere."""
    if isinstance(condition.type, ArrayType):
        condition = b.op("reduce", condition, kind="any", axis=None, keepdims=False)
    if condition.type != BOOL:
        condition = b.op("cast", condition, to=BOOL)
    b.op("raise_if", condition, exc=exc, message=message)


def _dtype(v):
    return v.type.dtype if isinstance(v.type, ArrayType) else v.type


def _as_dtype(b, x, to):
    return x if x.type.dtype == to else b.op("array_astype", x, dtype=to)


def _as_float(b, v, t: ScalarType):
    """`v` (a number or an array) of float dtype `t`, as the op's rule converts it."""
    if _dtype(v) == t:
        return v
    return b.op("array_astype", v, dtype=t) if isinstance(v.type, ArrayType) else \
        b.op("cast", v, to=t)


def _all(b, conditions: list):
    found = conditions[0]
    for c in conditions[1:]:
        found = b.op("bitand", found, c)
    return found


def _math1(b, scalar_op: str, op: str, operands: list, attrs: dict):
    """`check_math1`: NaN from non-NaN operands is a domain error; an infinity from finite
    operands a range error where the op can overflow, else a domain error."""
    out = b.op(op, *operands, **attrs)
    floats = [v for v in operands if _dtype(v).is_float]
    not_nan = [b.op("invert", b.op("isnan", v)) for v in floats]
    raise_if_any(b, _all(b, [b.op("isnan", out), *not_nan]), "ValueError", MATH_DOMAIN)
    finite = [b.op("isfinite", v) for v in floats]
    overflow = ("OverflowError", MATH_RANGE) if OPS[scalar_op].can_overflow else ("ValueError",
                                                                            MATH_DOMAIN)
    raise_if_any(b, _all(b, [b.op("isinf", out), *finite]), *overflow)
    return out


def _division(b, op: str, operands: list, attrs: dict):
    """A division by zero is Python's ZeroDivisionError (message by the operands' kind)."""
    divisor = operands[1]
    floats = op == "truediv" or any(_dtype(v).is_float for v in operands)  # as compiled
    zero = b.const(0.0 if _dtype(divisor).is_float else 0, _dtype(divisor))
    spelling = "divmod" if attrs.get("divmod") else op  # a part of divmod(a, b)
    raise_if_any(b, b.op("eq", divisor, zero), "ZeroDivisionError", DIVISION[spelling, floats])
    return b.op(op, *operands, **attrs)


def _float_pow(b, operands: list, attrs: dict):
    """`pow_float`'s three errors: 0.0 to a negative power, a negative number to a
    fractional one, overflow from finite operands."""
    a, e = operands
    out = b.op("pow", a, e, **attrs)
    ta, te = _dtype(a), _dtype(e)
    a_finite, e_finite = b.op("isfinite", a), b.op("isfinite", e)
    zero_negative = _all(b, [b.op("eq", a, b.const(0.0, ta)), b.op("lt", e, b.const(0.0, te)),
                             e_finite])
    raise_if_any(b, zero_negative, "ZeroDivisionError", ZERO_NEGATIVE_POWER)
    fractional = b.op("ne", e, b.op("numpy_floor", e))
    negative_fraction = _all(b, [b.op("lt", a, b.const(0.0, ta)), a_finite, fractional,
                                 e_finite])
    raise_if_any(b, negative_fraction, "ValueError", NEGATIVE_FRACTIONAL_POWER)
    raise_if_any(b, _all(b, [b.op("isinf", out), a_finite, e_finite]), "OverflowError",
                 POWER_OVERFLOW)
    return out

