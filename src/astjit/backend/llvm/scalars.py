"""The scalar routines that are not arithmetic, and the error check of math functions.

This module holds the conversions' routines (`cast`, rounding: conversions.py has the
casts and float -> int with CPython's NaN / infinity / range errors), float
classification, truth tests, and the tuple / constant / placeholder ops.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops import OPS
from ...ir.types import BOOL, I64, INT_OR_BOOL, NONE, ArrayType, TupleType
from . import array_layout, conversions
from . import messages as msg
from .compare import all_of, is_finite, is_inf, is_nan, truth
from .lltypes import INT_OR_BOOL_T, constant, zero

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


# ---- conversions --------------------------------------------------------------------

def _rounding(intrinsic: str):
    """floor / ceil / trunc / round (half to even) of a float, as an int."""
    def lower(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
        rounded = em.call_intrinsic(intrinsic, args)
        return conversions.float_to_int(em, node, rounded, node.outputs[0].type)
    lower.__name__ = intrinsic.removeprefix("llvm.")
    lower.__doc__ = f"`{intrinsic}`, then the checked conversion to int."
    return lower


def identity(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return args[0]


def logical_not(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`not x`: x == 0 (NaN is truthy, so `not nan` is False)."""
    return em.builder.not_(truth(em.builder, args[0]))


# ---- np.sign ---------------------------------------------------------------------------

def sign_float(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's loop: 1 if x > 0, -1 if x < 0, 0 if x == 0 (+0.0 for -0.0), else x (NaN)."""
    b, (x,) = em.builder, args
    zero = ir.Constant(x.type, 0.0)
    rest = b.select(b.fcmp_ordered("==", x, zero), zero, x)
    rest = b.select(b.fcmp_ordered("<", x, zero), ir.Constant(x.type, -1.0), rest)
    return b.select(b.fcmp_ordered(">", x, zero), ir.Constant(x.type, 1.0), rest)


def sign_int(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (x,) = em.builder, args
    zero = ir.Constant(x.type, 0)
    return b.sub(b.zext(b.icmp_signed(">", x, zero), x.type),
                 b.zext(b.icmp_signed("<", x, zero), x.type))


def sign_uint(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (x,) = em.builder, args
    return b.zext(b.icmp_unsigned("!=", x, ir.Constant(x.type, 0)), x.type)


# ---- float classification -------------------------------------------------------------

def isnan(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return is_nan(em.builder, args[0])


def isinf(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return is_inf(em.builder, args[0])


def isfinite(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return is_finite(em.builder, args[0])


# ---- data ops: constants, placeholders, tuples, raise ---------------------------------

def const(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return constant(node.outputs[0].type, node.attrs["value"])


def undef(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """A defined zero: the placeholder is never read on a real path, and a zero keeps
    undef-based surprises out of the optimizer's reach."""
    return zero(node.outputs[0].type)


def make_tuple(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    value = zero(node.outputs[0].type)
    for i, element in enumerate(args):
        value = em.builder.insert_value(value, element, i)
    return value


def getitem(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """A constant index into a tuple (negative counts from the end)."""
    size = len(node.inputs[0].type.elements)
    return em.builder.extract_value(args[0], node.attrs["index"] % size)


def length(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """len() of a tuple (a constant) or of an array (its first dimension)."""
    t = node.inputs[0].type
    if isinstance(t, ArrayType):
        return array_layout.dim(em.builder, args[0], 0)
    assert isinstance(t, TupleType)
    return constant(I64, len(t.elements))


def tag(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """A bool or an int as an int|bool: {is it a bool, its value as an int}."""
    (value,) = args
    is_bool = node.inputs[0].type == BOOL
    whole = em.builder.zext(value, INT_OR_BOOL_T.elements[1]) if is_bool else value
    tagged = em.builder.insert_value(zero(INT_OR_BOOL), constant(BOOL, is_bool), 0)
    return em.builder.insert_value(tagged, whole, 1)


def untag(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return em.builder.extract_value(args[0], 1)


def bitwise_int_or_bool(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`a & b`, `a | b`, `a ^ b` of int|bools: the ints', a bool where both are bools."""
    b = em.builder
    method = {"bitand": b.and_, "bitor": b.or_, "bitxor": b.xor}[node.op]
    whole = method(b.extract_value(args[0], 1), b.extract_value(args[1], 1))
    is_bool = b.and_(b.extract_value(args[0], 0), b.extract_value(args[1], 0))
    return b.insert_value(b.insert_value(zero(INT_OR_BOOL), is_bool, 0), whole, 1)


def raise_if(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    em.fail_if(node, args[0], node.attrs["exc"], node.attrs["message"])
    return zero(NONE)


# ---- error checks ---------------------------------------------------------------------

def check_math1(em: FunctionEmitter, node: Node, args: list[ir.Value], result: ir.Value) -> None:
    """CPython's rule for math functions: NaN from non-NaN arguments is a domain error;
    an infinity from finite arguments a range error if the op can overflow, else domain."""
    builder = em.builder
    nan_from_numbers = all_of(builder, [is_nan(builder, result)]
                              + [builder.not_(is_nan(builder, a)) for a in args])
    inf_from_finite = all_of(builder, [is_inf(builder, result)]
                             + [is_finite(builder, a) for a in args])
    overflow = ("OverflowError", msg.MATH_RANGE) if OPS[node.op].can_overflow \
        else ("ValueError", msg.MATH_DOMAIN)
    em.fail_if_any(node, [(nan_from_numbers, "ValueError", msg.MATH_DOMAIN),
                          (inf_from_finite, *overflow)])


ROUTINES = {
    "cast": conversions.cast, "identity": identity, "not": logical_not,
    "floor": _rounding("llvm.floor"), "ceil": _rounding("llvm.ceil"),
    "trunc": _rounding("llvm.trunc"), "round": _rounding("llvm.roundeven"),
    "isnan": isnan, "isinf": isinf, "isfinite": isfinite,
    "sign_float": sign_float, "sign_int": sign_int, "sign_uint": sign_uint,
    "const": const, "undef": undef, "tuple": make_tuple, "getitem": getitem, "len": length,
    "raise_if": raise_if, "tag": tag, "untag": untag,
    "bitwise_int_or_bool": bitwise_int_or_bool,
}
