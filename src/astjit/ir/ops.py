"""The one table of leaf primitives: each op's type rule, reference evaluation and lowering.

An entry (`OpDef`) holds everything the stages need for one operation:

- `rule(input_types, attrs) -> (operand_types, result_type)`: type inference
  casts the operands to `operand_types` (Python's promotion) and gives the
  result `result_type`; it raises `OpTypeError` for an operator that does not
  apply (``1.5 << 2``).
- `evaluate(*args, **attrs)`: the Python semantics, used by the interpreter and
  by constant folding. Errors are Python's own (ZeroDivisionError, ValueError).
- `llvm`: the CPU lowering, as data keyed by the operand kind ('f' float,
  'i' int, 'b' bool, '*' any): an IRBuilder method, an LLVM intrinsic, a libm
  call, or a named routine of the backend for what takes several instructions.
- `check`: the error check compiled code performs ('math1': CPython's rule for
  `math` functions — NaN from a non-NaN argument is ValueError, an infinite
  result from finite arguments OverflowError when `can_overflow`, else ValueError).
- `traits`: 'pure' (no side effect), 'raises' (may raise at run time, so the
  node is kept even when unused), 'commutative', 'elementwise'.

`vjp` (reverse-mode rule) and `cuda` lowerings are added by the autodiff and GPU work.
The structural ops (`if`, `while`, `call`) are not in this table; see `core.py`.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .types import (BOOL, F64, I64, NONE, TapeType, TupleType, Type, is_numeric, promote,
                    python_type_of)


class OpTypeError(Exception):
    """An operator applied to types it does not accept; inference adds the location."""


# ---- lowering descriptors (data, so this package never imports llvmlite) -----

@dataclass(frozen=True)
class Builder:
    """An `llvmlite.ir.IRBuilder` method called on the operands, with extra leading args."""
    method: str
    args: tuple = ()


@dataclass(frozen=True)
class Intrinsic:
    """An LLVM intrinsic overloaded on the operand type, e.g. 'llvm.sqrt'."""
    name: str


@dataclass(frozen=True)
class LibCall:
    """A C math library function on doubles, e.g. 'tan'."""
    name: str


@dataclass(frozen=True)
class Routine:
    """A multi-instruction lowering the backend provides under this name."""
    name: str


@dataclass(frozen=True)
class OpDef:
    name: str
    arity: int
    rule: Callable[[list[Type], dict], tuple[list[Type], Type]]
    evaluate: Callable[..., Any]
    llvm: dict[str, Any]
    traits: frozenset = frozenset({"pure"})
    check: str | None = None
    can_overflow: bool = False
    doc: str = ""
    vjp: Callable | None = None
    cuda: dict[str, str] = field(default_factory=dict)


OPS: dict[str, OpDef] = {}


def _def(name, arity, rule, evaluate, llvm, traits=("pure",), **kw) -> None:
    """Declare one primitive; names are unique."""
    assert name not in OPS, name
    OPS[name] = OpDef(name, arity, rule, evaluate, llvm, frozenset(traits), **kw)


def kind(t: Type) -> str:
    """The lowering key of a scalar type: 'f', 'i' or 'b'."""
    if t == BOOL:
        return "b"
    return "f" if t.is_float else "i"


# ---- type rules ---------------------------------------------------------------

def _numeric(types, what):
    for t in types:
        if not is_numeric(t):
            raise OpTypeError(f"{what} needs numbers, got {t}")


def arith_rule(types, attrs):
    _numeric(types, "this operator")
    t = promote(*types)
    return [t] * len(types), t


def truediv_rule(types, attrs):
    _numeric(types, "'/'")
    t = promote(*types)
    t = t if t.is_float else F64
    return [t, t], t


def int_only_rule(types, attrs):
    _numeric(types, "this operator")
    if any(t.is_float for t in types):
        raise OpTypeError(f"this operator needs integers, got {', '.join(map(str, types))}")
    return [I64] * len(types), I64


def bitwise_rule(types, attrs):
    if all(t == BOOL for t in types):
        return [BOOL] * len(types), BOOL
    return int_only_rule(types, attrs)


def compare_rule(types, attrs):
    _numeric(types, "comparison")
    t = promote(*types)
    return [t, t], BOOL


def unary_arith_rule(types, attrs):
    _numeric(types, "this operator")
    t = promote(types[0])
    return [t], t


def truth_rule(types, attrs):
    _numeric(types, "a truth test")
    return [types[0]], BOOL


def float_rule(types, attrs):
    _numeric(types, "this math function")
    t = promote(*types)
    t = t if t.is_float else F64
    return [t] * len(types), t


def float_pred_rule(types, attrs):
    operands, _ = float_rule(types, attrs)
    return operands, BOOL


def to_int_rule(types, attrs):
    _numeric(types, "this function")
    t = promote(types[0])
    return [t], I64


def cast_rule(types, attrs):
    _numeric(types, "a conversion")
    return [types[0]], attrs["to"]


def select_rule(types, attrs):
    from .types import join
    t = join(types[1], types[2])
    if t is None:
        raise OpTypeError(f"the two alternatives have different types: {types[1]} and {types[2]}")
    return [BOOL, t, t], t


def const_rule(types, attrs):
    t = attrs.get("type") or python_type_of(attrs["value"])
    if t is None:
        raise OpTypeError(f"constant {attrs['value']!r} has no IR type")
    return [], t


def tuple_rule(types, attrs):
    return list(types), TupleType(tuple(types))


def getitem_rule(types, attrs):
    (t,) = types
    if not isinstance(t, TupleType):
        raise OpTypeError(f"indexing needs a tuple, got {t}")
    i = attrs["index"]
    if not -len(t.elements) <= i < len(t.elements):
        raise OpTypeError(f"tuple index {i} out of range for {t}")
    return [t], t.elements[i]


def undef_rule(types, attrs):
    from .types import BOTTOM
    return [], attrs.get("type") or BOTTOM


# ---- reference semantics that Python's operators do not give directly ----------

def int_pow(a, b):
    if isinstance(a, int) and isinstance(b, int) and not isinstance(b, bool) and b < 0:
        raise ValueError("integer ** negative integer has a float result; write float(a) ** b")
    return a ** b


def float_pow(a, b):
    """Python's `float ** float`, minus the complex results it would give."""
    if a == 0.0 and b < 0.0 and math.isfinite(b):
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    if a < 0.0 and math.isfinite(a) and math.isfinite(b) and b != math.floor(b):
        raise ValueError("negative number cannot be raised to a fractional power")
    return a ** b


def py_pow(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return float_pow(float(a), float(b))
    return int_pow(a, b)


def py_min(a, b):
    return b if b < a else a


def py_max(a, b):
    return b if b > a else a


def in_int64(n: int) -> int:
    """`n` if it fits astjit's int, else the OverflowError compiled code raises."""
    if not -(2 ** 63) <= n < 2 ** 63:
        raise OverflowError("float too large to convert to int64")
    return n


def int_result(fn):
    """A float -> int function (floor, round, ...) with int64's range check."""
    def checked(x):
        return in_int64(fn(x))
    checked.__name__ = fn.__name__
    return checked


def py_cast(x, to):
    if to == BOOL:
        return bool(x)
    if to.is_float:
        return float(x)
    return in_int64(int(x)) if isinstance(x, float) else int(x)


def py_shift_left(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    return a << b


def py_shift_right(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    return a >> b


def _getitem(t, index):
    return t[index]


def zero_of(t: Type | None):
    """The value an `undef` of type `t` evaluates to: a zero, so it is deterministic."""
    if isinstance(t, TupleType):
        return tuple(zero_of(e) for e in t.elements)
    if t == BOOL:
        return False
    if t is not None and getattr(t, "is_float", False):
        return 0.0
    if t is not None and getattr(t, "is_int", False):
        return 0
    return None


def _undef(type=None):
    return zero_of(type)


# ---- the table ---------------------------------------------------------------

_def("const", 0, const_rule, lambda value, **_: value, {"*": Routine("const")})
_def("undef", 0, undef_rule, _undef, {"*": Routine("undef")},
     doc="a placeholder for a value not produced yet on this path (a return value before the return)")
_def("tuple", -1, tuple_rule, lambda *xs: tuple(xs), {"*": Routine("tuple")})
_def("getitem", 1, getitem_rule, _getitem, {"*": Routine("getitem")})
_def("cast", 1, cast_rule, lambda x, to: py_cast(x, to), {"*": Routine("cast")}, ("pure", "raises"),
     doc="int(x), float(x), bool(x): float to int raises on NaN and infinity")
_def("select", 3, select_rule, lambda c, a, b: a if c else b, {"*": Builder("select")})

_def("add", 2, arith_rule, operator.add,
     {"f": Builder("fadd"), "i": Builder("add")}, ("pure", "commutative", "elementwise"))
_def("sub", 2, arith_rule, operator.sub,
     {"f": Builder("fsub"), "i": Builder("sub")}, ("pure", "elementwise"))
_def("add_sat", 2, int_only_rule, lambda a, b: max(-(2 ** 63), min(2 ** 63 - 1, a + b)),
     {"i": Intrinsic("llvm.sadd.sat")}, ("pure", "commutative"),
     doc="int64 addition clamped to the int64 range: a range() counter's step, which must not wrap")
_def("mul", 2, arith_rule, operator.mul,
     {"f": Builder("fmul"), "i": Builder("mul")}, ("pure", "commutative", "elementwise"))
_def("truediv", 2, truediv_rule, operator.truediv, {"f": Routine("truediv")},
     ("pure", "raises", "elementwise"))
_def("floordiv", 2, arith_rule, operator.floordiv,
     {"f": Routine("floordiv_float"), "i": Routine("floordiv_int")}, ("pure", "raises", "elementwise"))
_def("mod", 2, arith_rule, operator.mod,
     {"f": Routine("mod_float"), "i": Routine("mod_int")}, ("pure", "raises", "elementwise"))
_def("pow", 2, arith_rule, py_pow,
     {"f": Routine("pow_float"), "i": Routine("pow_int")}, ("pure", "raises", "elementwise"))
_def("lshift", 2, int_only_rule, py_shift_left, {"i": Routine("lshift")}, ("pure", "raises"))
_def("rshift", 2, int_only_rule, py_shift_right, {"i": Routine("rshift")}, ("pure", "raises"))
_def("bitand", 2, bitwise_rule, operator.and_, {"i": Builder("and_"), "b": Builder("and_")},
     ("pure", "commutative"))
_def("bitor", 2, bitwise_rule, operator.or_, {"i": Builder("or_"), "b": Builder("or_")},
     ("pure", "commutative"))
_def("bitxor", 2, bitwise_rule, operator.xor, {"i": Builder("xor"), "b": Builder("xor")},
     ("pure", "commutative"))
_def("neg", 1, unary_arith_rule, operator.neg, {"f": Builder("fneg"), "i": Builder("neg")},
     ("pure", "elementwise"))
_def("pos", 1, unary_arith_rule, operator.pos, {"*": Routine("identity")}, ("pure", "elementwise"))
_def("invert", 1, int_only_rule, operator.invert, {"i": Builder("not_")}, ("pure", "elementwise"))
_def("not", 1, truth_rule, operator.not_, {"*": Routine("not")}, ("pure", "elementwise"))

for _name, _pred in [("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!=")]:
    _fcmp = "fcmp_unordered" if _name == "ne" else "fcmp_ordered"
    _def(_name, 2, compare_rule, getattr(operator, _name),
         {"f": Builder(_fcmp, (_pred,)), "i": Builder("icmp_signed", (_pred,)),
          "b": Builder("icmp_unsigned", (_pred,))}, ("pure", "elementwise"))

_def("abs", 1, unary_arith_rule, abs, {"f": Intrinsic("llvm.fabs"), "i": Routine("abs_int")},
     ("pure", "elementwise"))
_def("min", 2, arith_rule, py_min, {"*": Routine("min")}, ("pure", "elementwise"))
_def("max", 2, arith_rule, py_max, {"*": Routine("max")}, ("pure", "elementwise"))

# math module functions on floats: (name, Python function, lowering, can_overflow)
_MATH_UNARY = [
    ("sqrt", math.sqrt, Intrinsic("llvm.sqrt"), False),
    ("exp", math.exp, Intrinsic("llvm.exp"), True),
    ("expm1", math.expm1, LibCall("expm1"), True),
    ("log", math.log, Intrinsic("llvm.log"), False),
    ("log2", math.log2, Intrinsic("llvm.log2"), False),
    ("log10", math.log10, Intrinsic("llvm.log10"), False),
    ("log1p", math.log1p, LibCall("log1p"), False),
    ("sin", math.sin, Intrinsic("llvm.sin"), False),
    ("cos", math.cos, Intrinsic("llvm.cos"), False),
    ("tan", math.tan, LibCall("tan"), False),
    ("asin", math.asin, LibCall("asin"), False),
    ("acos", math.acos, LibCall("acos"), False),
    ("atan", math.atan, LibCall("atan"), False),
    ("sinh", math.sinh, LibCall("sinh"), True),
    ("cosh", math.cosh, LibCall("cosh"), True),
    ("tanh", math.tanh, LibCall("tanh"), False),
    ("asinh", math.asinh, LibCall("asinh"), False),
    ("acosh", math.acosh, LibCall("acosh"), False),
    ("atanh", math.atanh, LibCall("atanh"), False),
    ("erf", math.erf, LibCall("erf"), False),
    ("erfc", math.erfc, LibCall("erfc"), False),
    ("fabs", math.fabs, Intrinsic("llvm.fabs"), False),
]
for _name, _fn, _low, _ovf in _MATH_UNARY:
    _def(_name, 1, float_rule, _fn, {"f": _low}, ("pure", "raises", "elementwise"),
         check=None if _name == "fabs" else "math1", can_overflow=_ovf)

_MATH_BINARY = [
    ("atan2", math.atan2, LibCall("atan2"), False),
    ("hypot", math.hypot, LibCall("hypot"), False),
    ("copysign", math.copysign, Intrinsic("llvm.copysign"), False),
    ("fmod", math.fmod, LibCall("fmod"), False),
    ("fpow", math.pow, Routine("math_pow"), True),
]
for _name, _fn, _low, _ovf in _MATH_BINARY:
    _def(_name, 2, float_rule, _fn, {"f": _low}, ("pure", "raises", "elementwise"),
         check=None if _name in ("copysign", "hypot") else "math1", can_overflow=_ovf)

_def("isnan", 1, float_pred_rule, math.isnan, {"f": Routine("isnan")}, ("pure", "elementwise"))
_def("isinf", 1, float_pred_rule, math.isinf, {"f": Routine("isinf")}, ("pure", "elementwise"))
_def("isfinite", 1, float_pred_rule, math.isfinite, {"f": Routine("isfinite")},
     ("pure", "elementwise"))

# float -> int (identity on ints); raise ValueError on NaN, OverflowError out of int64 range
_def("floor", 1, to_int_rule, int_result(math.floor), {"f": Routine("floor"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"))
_def("ceil", 1, to_int_rule, int_result(math.ceil), {"f": Routine("ceil"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"))
_def("trunc", 1, to_int_rule, int_result(math.trunc), {"f": Routine("trunc"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"))
_def("round", 1, to_int_rule, int_result(round), {"f": Routine("round"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"), doc="round(x): half to even, an int")



def len_rule(types, attrs):
    (t,) = types
    if not isinstance(t, TupleType):
        raise OpTypeError(f"len() needs a tuple here, got {t}")
    return [t], I64


def raise_if_rule(types, attrs):
    return [BOOL], NONE


def py_raise_if(cond, exc, message):
    if cond:
        raise EXCEPTIONS[exc](message)
    return None


EXCEPTIONS = {e.__name__: e for e in (ZeroDivisionError, ValueError, OverflowError, IndexError,
                                      AssertionError, TypeError, RuntimeError,
                                      MemoryError)}

_def("len", 1, len_rule, len, {"*": Routine("len")})
_def("raise_if", 1, raise_if_rule, py_raise_if, {"b": Routine("raise_if")}, ("raises",),
     doc="raise attrs['exc'](attrs['message']) when the operand is true; output is none")


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
    _numeric(types, "stop_gradient")
    return [types[0]], types[0]


_def("fdiv", 2, float_rule, ieee_div, {"f": Builder("fdiv")}, ("pure", "elementwise"),
     doc="IEEE float division, never raises: derivative code divides by values a forward pass made")
_def("powr", 2, float_rule, ieee_pow, {"f": Intrinsic("llvm.pow")}, ("pure", "elementwise"),
     doc="C's pow, never raises: derivative code of `**`")
_def("logr", 1, float_rule, ieee_log, {"f": Intrinsic("llvm.log")}, ("pure", "elementwise"),
     doc="C's log, never raises: derivative code of `**` with respect to the exponent")
_def("stop_gradient", 1, identity_rule, lambda x: x, {"*": Routine("identity")}, ("pure",),
     doc="the identity, whose derivative is zero")


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


def tape_free_rule(types, attrs):
    if not isinstance(types[0], TapeType):
        raise OpTypeError(f"cannot free {types[0]}")
    return [types[0]], NONE


def _tape_push(tape, value):
    tape.append(value)
    return tape


def _tape_free(tape):
    if tape is not None:  # an `undef` tape: nothing was recorded
        tape.clear()


_def("tape_new", 0, tape_new_rule, lambda element: [], {"*": Routine("tape_new")}, (),
     doc="an empty tape of attrs['element'] values (allocates: never merged or moved)")
_def("tape_push", 2, tape_push_rule, _tape_push, {"*": Routine("tape_push")}, (),
     doc="append a value; the result is the same tape, threaded on as a new SSA value")
_def("tape_get", 2, tape_get_rule, lambda tape, i: tape[i], {"*": Routine("tape_get")}, ("pure",),
     doc="the value pushed at position i (0 = first)")
_def("tape_free", 1, tape_free_rule, _tape_free, {"*": Routine("tape_free")}, (),
     doc="release the tape's memory; it is not used afterwards")


# ---- reverse-mode rules: the adjoint of each input, given the output's adjoint g ----
# A rule is vjp(e, g, inputs, out, needs) -> one Value or None per input, where
# `e` is an ad.emit.Emitter, `out` the op's result and `needs[i]` whether input
# i wants an adjoint (rules skip work for the others: `log(a)` in the adjoint of
# `a ** b` must not run when b is a constant and a is negative). Derivative code
# uses only ops that never raise (fdiv, powr), so it can be dropped when unused.
# Ops without a rule and with float inputs cannot be differentiated in reverse;
# ops on ints and bools, comparisons and roundings have zero derivative.

def _vjp(name: str, rule: Callable) -> None:
    import dataclasses

    OPS[name] = dataclasses.replace(OPS[name], vjp=rule)


def _one(fn: Callable) -> Callable:
    """A unary rule from `fn(e, g, x, out) -> adjoint of x`."""
    return lambda e, g, ins, out, needs: [fn(e, g, ins[0], out)]


def _c(e, value, like):
    return e.const(value, like.type)


def _sq(e, x):
    return e.op("mul", x, x)


_vjp("add", lambda e, g, ins, out, needs: [g, g])
_vjp("sub", lambda e, g, ins, out, needs: [g, e.op("neg", g)])
_vjp("mul", lambda e, g, ins, out, needs: [e.op("mul", g, ins[1]) if needs[0] else None,
                                           e.op("mul", g, ins[0]) if needs[1] else None])
_vjp("truediv", lambda e, g, ins, out, needs: [
    e.op("fdiv", g, ins[1]) if needs[0] else None,
    e.op("neg", e.op("fdiv", e.op("mul", g, out), ins[1])) if needs[1] else None])
_vjp("fdiv", OPS["truediv"].vjp)
_vjp("neg", _one(lambda e, g, x, out: e.op("neg", g)))
_vjp("pos", _one(lambda e, g, x, out: g))
_vjp("stop_gradient", lambda e, g, ins, out, needs: [None])
_vjp("select", lambda e, g, ins, out, needs: [
    None, e.op("select", ins[0], g, _c(e, 0.0, g)), e.op("select", ins[0], _c(e, 0.0, g), g)])
_vjp("cast", _one(lambda e, g, x, out: e.op("cast", g, to=x.type) if x.type.is_float else None))


def _pow_vjp(e, g, ins, out, needs):
    """d(a**b) = b * a**(b-1) da + a**b * log(a) db."""
    a, b = ins
    da = db = None
    if needs[0]:
        da = e.op("mul", g, e.op("mul", b, e.op("powr", a, e.op("sub", b, _c(e, 1.0, b)))))
    if needs[1]:
        db = e.op("mul", g, e.op("mul", out, e.op("logr", a)))
    return [da, db]


_vjp("pow", _pow_vjp)
_vjp("fpow", _pow_vjp)
_vjp("powr", _pow_vjp)


def _min_max_vjp(pick_second: str):
    """min(a, b) is b when b < a, else a (max: b when b > a): the adjoint follows the pick."""
    def rule(e, g, ins, out, needs):
        second = e.op(pick_second, ins[1], ins[0])
        zero = _c(e, 0.0, g)
        return [e.op("select", second, zero, g), e.op("select", second, g, zero)]
    return rule


_vjp("min", _min_max_vjp("lt"))
_vjp("max", _min_max_vjp("gt"))


def _sign_times(e, g, x):
    return e.op("select", e.op("lt", x, _c(e, 0.0, x)), e.op("neg", g), g)


_vjp("abs", _one(lambda e, g, x, out: _sign_times(e, g, x)))
_vjp("fabs", _one(lambda e, g, x, out: _sign_times(e, g, x)))
_vjp("sqrt", _one(lambda e, g, x, out: e.op("fdiv", e.op("mul", g, _c(e, 0.5, g)), out)))
_vjp("exp", _one(lambda e, g, x, out: e.op("mul", g, out)))
_vjp("expm1", _one(lambda e, g, x, out: e.op("mul", g, e.op("add", out, _c(e, 1.0, out)))))
_vjp("log", _one(lambda e, g, x, out: e.op("fdiv", g, x)))
_vjp("logr", OPS["log"].vjp)
_vjp("log2", _one(lambda e, g, x, out: e.op("fdiv", g, e.op("mul", x, _c(e, math.log(2.0), x)))))
_vjp("log10", _one(lambda e, g, x, out: e.op("fdiv", g, e.op("mul", x, _c(e, math.log(10.0), x)))))
_vjp("log1p", _one(lambda e, g, x, out: e.op("fdiv", g, e.op("add", x, _c(e, 1.0, x)))))
_vjp("sin", _one(lambda e, g, x, out: e.op("mul", g, e.op("cos", x))))
_vjp("cos", _one(lambda e, g, x, out: e.op("neg", e.op("mul", g, e.op("sin", x)))))
_vjp("tan", _one(lambda e, g, x, out: e.op("mul", g, e.op("add", _c(e, 1.0, out), _sq(e, out)))))
_vjp("sinh", _one(lambda e, g, x, out: e.op("mul", g, e.op("cosh", x))))
_vjp("cosh", _one(lambda e, g, x, out: e.op("mul", g, e.op("sinh", x))))
_vjp("tanh", _one(lambda e, g, x, out: e.op("mul", g, e.op("sub", _c(e, 1.0, out), _sq(e, out)))))
_vjp("atan", _one(lambda e, g, x, out: e.op("fdiv", g, e.op("add", _c(e, 1.0, x), _sq(e, x)))))
_vjp("asin", _one(lambda e, g, x, out: e.op("fdiv", g, e.op(
    "sqrt", e.op("sub", _c(e, 1.0, x), _sq(e, x))))))
_vjp("acos", _one(lambda e, g, x, out: e.op("neg", e.op("fdiv", g, e.op(
    "sqrt", e.op("sub", _c(e, 1.0, x), _sq(e, x)))))))
_vjp("asinh", _one(lambda e, g, x, out: e.op("fdiv", g, e.op(
    "sqrt", e.op("add", _sq(e, x), _c(e, 1.0, x))))))
_vjp("acosh", _one(lambda e, g, x, out: e.op("fdiv", g, e.op(
    "sqrt", e.op("sub", _sq(e, x), _c(e, 1.0, x))))))
_vjp("atanh", _one(lambda e, g, x, out: e.op("fdiv", g, e.op("sub", _c(e, 1.0, x), _sq(e, x)))))
_vjp("erf", _one(lambda e, g, x, out: e.op("mul", g, e.op(
    "mul", _c(e, 2.0 / math.sqrt(math.pi), x), e.op("exp", e.op("neg", _sq(e, x)))))))
_vjp("erfc", _one(lambda e, g, x, out: e.op("neg", OPS["erf"].vjp(e, g, [x], out, [True])[0])))


def _atan2_vjp(e, g, ins, out, needs):
    """atan2(y, x): dy = x / (x^2 + y^2), dx = -y / (x^2 + y^2)."""
    y, x = ins
    scale = e.op("fdiv", g, e.op("add", _sq(e, x), _sq(e, y)))
    return [e.op("mul", scale, x), e.op("neg", e.op("mul", scale, y))]


def _hypot_vjp(e, g, ins, out, needs):
    """hypot(x, y): dx = x / out, dy = y / out."""
    scale = e.op("fdiv", g, out)
    return [e.op("mul", scale, ins[0]), e.op("mul", scale, ins[1])]


def _copysign_vjp(e, g, ins, out, needs):
    """copysign(a, b) = |a| sign(b): da = sign(a) sign(b) g; b only chooses a sign."""
    one = _c(e, 1.0, g)
    sign = e.op("mul", e.op("copysign", one, ins[0]), e.op("copysign", one, ins[1]))
    return [e.op("mul", g, sign), None]


def _fmod_vjp(e, g, ins, out, needs):
    """fmod(a, b) = a - b * trunc(a / b): da = g, db = -g trunc(a / b)."""
    quotient = e.op("cast", e.op("trunc", e.op("fdiv", ins[0], ins[1])), to=g.type)
    return [g, e.op("neg", e.op("mul", g, quotient)) if needs[1] else None]


def _mod_vjp(e, g, ins, out, needs):
    """a % b = a - b * floor(a / b) (floats): da = g, db = -g floor(a / b)."""
    if not g.type.is_float:
        return [None, None]
    quotient = e.op("cast", e.op("floor", e.op("fdiv", ins[0], ins[1])), to=g.type)
    return [g, e.op("neg", e.op("mul", g, quotient)) if needs[1] else None]


_vjp("atan2", _atan2_vjp)
_vjp("hypot", _hypot_vjp)
_vjp("copysign", _copysign_vjp)
_vjp("fmod", _fmod_vjp)
_vjp("mod", _mod_vjp)

ZERO_DERIVATIVE = frozenset({
    "floordiv", "floor", "ceil", "trunc", "round", "lt", "le", "gt", "ge", "eq", "ne", "not",
    "isnan", "isinf", "isfinite", "raise_if", "len", "const", "undef", "tape_new", "tape_free",
    "bitand", "bitor", "bitxor", "lshift", "rshift", "invert", "add_sat",
})
"""Ops whose result does not change with their float inputs (or that have none)."""
