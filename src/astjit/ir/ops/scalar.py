"""The table entries of the scalar primitives: arithmetic, comparisons, math, conversions."""

from __future__ import annotations

import math
import operator

from ..types import BOOL, F32, F64, I64, INT_OR_BOOL, NONE, ArrayType, TupleType, is_strong
from .semantics import (
    _getitem,
    _undef,
    int_result,
    py_cast,
    py_max,
    py_min,
    py_pow,
    py_raise_if,
    py_shift_left,
    py_shift_right,
)
from .table import (
    Builder,
    Intrinsic,
    LibCall,
    OpTypeError,
    Routine,
    _def,
    arith_rule,
    bitwise_rule,
    cast_rule,
    compare_rule,
    const_rule,
    float_pred_rule,
    float_rule,
    getitem_rule,
    int_only_rule,
    select_rule,
    to_int_rule,
    truediv_rule,
    truth_rule,
    tuple_rule,
    unary_arith_rule,
    undef_rule,
)

# ---- the table ---------------------------------------------------------------

_def("const", 0, const_rule, lambda value, **_: value, {"*": Routine("const")})
_def("undef", 0, undef_rule, _undef, {"*": Routine("undef")},
     doc="a placeholder for a value not produced yet on this path (a return value before the return)")
_def("is_none", 1, lambda types, attrs: (list(types), BOOL), lambda x: x is None, {},
     doc="`x is None`: decided by x's type; type inference replaces it by a constant")
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
_def("bitand", 2, bitwise_rule, operator.and_, {"i": Builder("and_"), "b": Builder("and_"),
                                                  "*": Routine("bitwise_int_or_bool")},
     ("pure", "commutative"))
_def("bitor", 2, bitwise_rule, operator.or_, {"i": Builder("or_"), "b": Builder("or_"),
                                                  "*": Routine("bitwise_int_or_bool")},
     ("pure", "commutative"))
_def("bitxor", 2, bitwise_rule, operator.xor, {"i": Builder("xor"), "b": Builder("xor"),
                                                  "*": Routine("bitwise_int_or_bool")},
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
def min_max_rule(types, attrs):
    """min/max return one of their operands, of its own type: two bools give a bool
    (`max(a > 0, b > 0)`), a bool and an int an int|bool (`max(b, n)` is True or n); other
    numbers promote as arithmetic does."""
    kinds = set(types)
    if kinds == {BOOL}:
        return [BOOL, BOOL], BOOL
    if kinds <= {BOOL, I64, INT_OR_BOOL} and kinds != {I64} and not any(map(is_strong, types)):
        return [INT_OR_BOOL, INT_OR_BOOL], INT_OR_BOOL
    return arith_rule([I64 if t == INT_OR_BOOL else t for t in types], attrs)


_def("min", 2, min_max_rule, py_min, {"*": Routine("min")}, ("pure", "elementwise"))
_def("max", 2, min_max_rule, py_max, {"*": Routine("max")}, ("pure", "elementwise"))

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
def trunc_rule(types, attrs):
    """math.trunc calls __trunc__, which of the NumPy scalars only np.float64 (a float)
    has: math.trunc(np.float32(x)) is a TypeError in Python, refused here."""
    t = types[0] if types else None
    if attrs.get("scalar_function") and getattr(t, "strong", False) and t != F64:
        raise OpTypeError(f"type {t} doesn't define __trunc__ method (math.trunc of a NumPy "
                          f"scalar other than np.float64 is a TypeError in Python); "
                          f"use int(x) or float(x) first")
    return to_int_rule(types, attrs)


_def("trunc", 1, trunc_rule, int_result(math.trunc), {"f": Routine("trunc"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"))
_def("round", 1, to_int_rule, int_result(round), {"f": Routine("round"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"), doc="round(x): half to even, an int")



def len_rule(types, attrs):
    (t,) = types
    if isinstance(t, ArrayType) and t.ndim > 0:
        return [t], I64
    if not isinstance(t, TupleType):
        raise OpTypeError(f"len() needs a tuple or an array here, got {t}")
    return [t], I64


def raise_if_rule(types, attrs):
    return [BOOL], NONE


def index_rule(types, attrs):
    (t,) = types
    if t not in (BOOL, I64):
        raise OpTypeError(f"'{_PYTHON_NAMES.get(t, t)}' object cannot be interpreted as an integer")
    return [I64], I64


_PYTHON_NAMES = {F64: "float", F32: "numpy.float32", NONE: "NoneType"}


def tag_rule(types, attrs):
    (t,) = types
    if t not in (BOOL, I64) or is_strong(t):
        raise OpTypeError(f"only a bool or an int becomes an int|bool, got {t}")
    return [t], INT_OR_BOOL


def untag_rule(types, attrs):
    if types[0] != INT_OR_BOOL:
        raise OpTypeError(f"untag reads an int|bool, got {types[0]}")
    return [INT_OR_BOOL], I64


_def("tag", 1, tag_rule, lambda x: x, {"*": Routine("tag")},
     doc="a bool or an int as an int|bool that remembers which it is (types.IntOrBoolType)")
_def("untag", 1, untag_rule, int, {"*": Routine("untag")},
     doc="an int|bool's value as an int (True is 1)")

_def("len", 1, len_rule, len, {"*": Routine("len")})
_def("index", 1, index_rule, lambda x: int(operator.index(x)), {"*": Routine("identity")},
     doc="operator.index(x): an int where Python takes only ints (range's bounds); a float "
         "is the TypeError Python's is")
_def("raise_if", 1, raise_if_rule, py_raise_if, {"b": Routine("raise_if")}, ("raises",),
     doc="raise attrs['exc'](attrs['message']) when the operand is true; output is none")
