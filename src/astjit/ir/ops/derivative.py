"""Primitives derivative code is made of: IEEE arithmetic that never raises, stop_gradient,
and the tapes a differentiated `while` records."""

from __future__ import annotations

import math

from ..types import I64, NONE, ArrayType, TapeType
from . import vjp as v
from .declare import _def
from .table import Builder, Intrinsic, OpTypeError, Routine, _numeric, float_rule

# ---- primitives that derivative code uses ---------------------------------------

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


def identity_rule(types, attrs):
    if not isinstance(types[0], ArrayType):
        _numeric(types, "stop_gradient")
    return [types[0]], types[0]


_def("fdiv", 2, float_rule, ieee_div, {"f": Builder("fdiv")}, ("pure", "elementwise"),
     vjp=v.truediv_vjp,
     doc="IEEE float division, never raises: derivative code divides by values a forward pass made")
_def("powr", 2, float_rule, ieee_pow, {"f": Intrinsic("llvm.pow")}, ("pure", "elementwise"),
     vjp=v.pow_vjp,
     doc="C's pow, never raises: derivative code of `**`")
_def("logr", 1, float_rule, ieee_log, {"f": Intrinsic("llvm.log")}, ("pure", "elementwise"),
     vjp=v.log_vjp,
     doc="C's log, never raises: derivative code of `**` with respect to the exponent")
_def("stop_gradient", 1, identity_rule, lambda x: x, {"*": Routine("identity")}, ("pure",),
     vjp=lambda e, g, ins, out, needs: [None], doc="the identity, whose derivative is zero")


# ---- tapes: what a differentiated `while` records, one entry per iteration -------

def tape_new_rule(types, attrs):
    return [], TapeType(attrs["element"])


def tape_push_rule(types, attrs):
    tape, value = types
    if not isinstance(tape, TapeType) or tape.element != value:
        raise OpTypeError(f"cannot push {value} onto {tape}")
    return [tape, value], tape


def tape_get_rule(types, attrs):
    tape, index = types
    if not isinstance(tape, TapeType) or index != I64:
        raise OpTypeError(f"cannot index {tape} with {index}")
    return [tape, I64], tape.element


def tape_len_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot take the length of {types[0]}")
    return [types[0]], I64


def tape_free_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot free {types[0]}")
    return [types[0]], NONE


def tape_clear_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot clear {types[0]}")
    return [types[0]], types[0]


def _tape_clear(tape):
    tape.clear()
    return tape


def _tape_push(tape, value):
    tape.append(value)
    return tape


def _tape_free(tape):
    if tape is not None:  # an `undef` tape: nothing was recorded
        tape.clear()


_def("tape_new", 0, tape_new_rule, lambda element: [], {"*": Routine("tape_new")}, (),
     zero_derivative="a new tape",
     doc="an empty tape of attrs['element'] values (allocates: never merged or moved)")
_def("tape_push", 2, tape_push_rule, _tape_push, {"*": Routine("tape_push")}, (),
     no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="append a value; the result is the same tape, threaded on as a new SSA value")
_def("tape_get", 2, tape_get_rule, lambda tape, i: tape[i], {"*": Routine("tape_get")}, ("pure",),
     no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="the value pushed at position i (0 = first)")
_def("tape_len", 1, tape_len_rule, len, {"*": Routine("tape_len")}, (),
     no_vjp="derivative code only: reverse mode makes it, never differentiates it",
     doc="how many values were pushed (not pure: the tape grows in place, so a read must "
         "stay where the program puts it)")
_def("tape_clear", 1, tape_clear_rule, _tape_clear, {"*": Routine("tape_clear")}, (),
     zero_derivative="the same tape",
     doc="forget the values pushed, keeping the memory; the result is the same tape")
_def("tape_free", 1, tape_free_rule, _tape_free, {"*": Routine("tape_free")}, (),
     zero_derivative="no result",
     doc="release the tape's memory; it is not used afterwards")
