"""IEEE versions of float primitives, for derivative code: they never raise where Python's
would (x / 0.0, 0.0 ** -1.0, log(0.0)), since derivative code divides by, raises to
and takes the log of values a forward pass made."""

from __future__ import annotations

import math

from . import vjp as v
from .batching import elementwise
from .declare import _def
from .table import Builder, CExpr, Intrinsic, float_rule


def ieee_div(a, b):
    """a / b as IEEE 754 computes it: never raises (x / 0.0 is +-inf or nan)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def ieee_pow(a, b):
    """C's pow(a, b): never raises (0.0 ** -1.0 is inf, (-1.0) ** 0.5 is nan)."""
    odd = math.isfinite(b) and b == math.floor(b) and b % 2 == 1
    sign = math.copysign(1.0, a) if odd else 1.0
    try:
        return math.pow(a, b)
    except OverflowError:
        return sign * math.inf
    except ValueError:
        return sign * math.inf if a == 0.0 else math.nan


def ieee_log(x):
    """C's log(x): never raises (log(0.0) is -inf, log of a negative number nan)."""
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan


_def("fdiv", 2, float_rule, ieee_div, {"f": Builder("fdiv")}, ("pure", "elementwise"),
     cuda={"f": CExpr("({0} / {1})")},
     vjp=v.truediv_vjp, batch=elementwise("truediv"),
     doc="IEEE float division, never raises: derivative code divides by values a forward pass made")
_def("powr", 2, float_rule, ieee_pow, {"f": Intrinsic("llvm.pow")}, ("pure", "elementwise"),
     cuda={"f": CExpr("pow({0}, {1})")},
     vjp=v.pow_vjp, batch=elementwise("pow"),
     doc="C's pow, never raises: derivative code of `**`")
_def("logr", 1, float_rule, ieee_log, {"f": Intrinsic("llvm.log")}, ("pure", "elementwise"),
     cuda={"f": CExpr("log({0})")},
     vjp=v.log_vjp, batch=elementwise("log"),
     doc="C's log, never raises: derivative code of `**` with respect to the exponent")
