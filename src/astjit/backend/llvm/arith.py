"""Routine lowerings of Python's arithmetic: division, modulo, powers, shifts, abs, min, max.

Each routine is `(emitter, node, operands) -> result` and reproduces CPython
exactly, with one documented difference: integers are int64 and wrap. Division
rounds toward minus infinity and the remainder takes the divisor's sign;
`INT64_MIN // -1` wraps instead of trapping; shifts of 64 or more are defined
(`<<` gives 0, `>>` the sign); float `//` and `%` follow CPython's
`_float_div_mod` step by step, signed zeros included. Errors are raised through
`emitter.fail_if` with CPython's messages (`messages`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import divmod_power
from . import messages as msg
from .compare import all_of, compare, compare_const, const_like, is_finite, is_inf, is_nan
from .lltypes import DOUBLE, call_intrinsic

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


# ---- integers -----------------------------------------------------------------------

def _check_divisor(em: FunctionEmitter, node: Node, b: ir.Value, message: str) -> None:
    """ZeroDivisionError for a zero `b`: `message`, or divmod()'s where `node` is a part of
    divmod(a, b) (attr `divmod`)."""
    if node.attrs.get("divmod"):
        message = msg.DIVMOD[isinstance(b.type, (ir.DoubleType, ir.FloatType))]
    em.fail_if(node, compare_const(em.builder, "==", b, 0), "ZeroDivisionError", message)


def _power_of_two(b: ir.Value) -> int | None:
    """log2(b) when b is a constant positive power of two (LLVM misses `floor(a / 2**k)`)."""
    if isinstance(b, ir.Constant) and b.constant > 0 and b.constant & (b.constant - 1) == 0:
        return b.constant.bit_length() - 1
    return None


def floordiv_int(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    a, b = args
    shift = _power_of_two(b)
    if shift is not None:
        return em.builder.ashr(a, const_like(a, shift))
    _check_divisor(em, node, b, msg.INT_DIVISION)
    return divmod_power.divmod_int(em.builder, a, b)[0]


def mod_int(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    a, b = args
    if _power_of_two(b) is not None:
        return em.builder.and_(a, const_like(a, b.constant - 1))
    _check_divisor(em, node, b, msg.INT_MODULO)
    return divmod_power.divmod_int(em.builder, a, b)[1]


def pow_int(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """a ** b by squaring (wrapping); a negative b raises as `ops.int_pow` says
    (ZeroDivisionError for a zero base, as CPython's; else ValueError)."""
    a, b = args
    if isinstance(b, ir.Constant) and b.constant >= 0:
        return divmod_power.pow_by_constant(em.builder, a, b.constant)
    negative = compare_const(em.builder, "<", b, 0)
    zero_base = em.builder.and_(negative, compare_const(em.builder, "==", a, 0))
    em.fail_if_any(node, [(zero_base, "ZeroDivisionError", msg.ZERO_NEGATIVE_POWER),
                          (negative, "ValueError", msg.INT_NEGATIVE_POWER)])
    return divmod_power.pow_loop(em, a, b)


def _check_shift(em: FunctionEmitter, node: Node, count: ir.Value) -> None:
    em.fail_if(node, compare_const(em.builder, "<", count, 0), "ValueError", msg.NEGATIVE_SHIFT)


def lshift(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """a << b, wrapping; 0 once b reaches the width."""
    a, b = args
    _check_shift(em, node, b)
    builder, width = em.builder, a.type.width
    shifted = builder.shl(a, builder.and_(b, const_like(b, width - 1)))
    too_far = builder.icmp_unsigned(">=", b, const_like(b, width))
    return builder.select(too_far, const_like(a, 0), shifted)


def rshift(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """a >> b, arithmetic; the sign (0 or -1) once b reaches the width."""
    a, b = args
    _check_shift(em, node, b)
    builder, last = em.builder, const_like(b, a.type.width - 1)
    return builder.ashr(a, builder.select(builder.icmp_unsigned(">", b, last), last, b))


def lshift_numpy(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's a << b (npy_lshift): 0 once b, read as unsigned, reaches the width (a
    negative count too)."""
    a, b = args
    builder, width = em.builder, a.type.width
    shifted = builder.shl(a, builder.and_(b, const_like(b, width - 1)))
    too_far = builder.icmp_unsigned(">=", b, const_like(b, width))
    return builder.select(too_far, const_like(a, 0), shifted)


def rshift_numpy(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's a >> b (npy_rshift): arithmetic for signed a, the sign (0 or -1) once b, read
    as unsigned, reaches the width; logical for unsigned a, 0 there."""
    a, b = args
    builder, last = em.builder, const_like(b, a.type.width - 1)
    if node.inputs[0].type.kind == "u":
        shifted = builder.lshr(a, builder.and_(b, last))
        return builder.select(builder.icmp_unsigned(">", b, last), const_like(a, 0), shifted)
    return builder.ashr(a, builder.select(builder.icmp_unsigned(">", b, last), last, b))


def abs_int(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """abs(a), wrapping: abs(INT64_MIN) is INT64_MIN."""
    (a,) = args
    return em.builder.select(compare_const(em.builder, "<", a, 0), em.builder.neg(a), a)


def py_min(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`b if b < a else a`, as `ops.py_min` (a NaN first operand wins, a NaN second loses)."""
    a, b = args
    if _constant_float(a):
        return _float_pick(em, "llvm.minnum", a, b)
    return em.builder.select(compare(em.builder, "<", _number(em, b), _number(em, a)), b, a)


def py_max(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`b if b > a else a`, as `ops.py_max`."""
    a, b = args
    if _constant_float(a):
        return _float_pick(em, "llvm.maxnum", a, b)
    return em.builder.select(compare(em.builder, ">", _number(em, b), _number(em, a)), b, a)


def _constant_float(a: ir.Value) -> bool:
    """Whether `a`, min's or max's first operand, is a float constant: `_float_pick`'s case."""
    return isinstance(a, ir.Constant) and isinstance(a.type, (ir.DoubleType, ir.FloatType))


def _float_pick(em: FunctionEmitter, intrinsic: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """Python's min or max of floats, `b if b < a else a`, written `r = minnum(b, a); a if r
    == a or a is NaN else r` (r is b where b wins, a where b is NaN or ties: a zero of the
    other sign included). As a compare and a select, LLVM (InstCombine) folds
    `min(c, min(x, c))` of a constant c to `min(x, c)`, which is x, not c, where x is NaN
    (fuzz seed 41318, program 2652; a loop LLVM unrolls makes that shape of `min(c, s)` too).
    Only a constant first operand takes this form: it is a longer chain than a select, and
    `m = max(m, x[j])` in a loop ran 5 times slower so."""
    picked = call_intrinsic(em.builder, intrinsic, [b, a])
    return em.builder.select(em.builder.fcmp_unordered("==", picked, a), a, picked)


def _number(em: FunctionEmitter, value: ir.Value) -> ir.Value:
    """The number min/max compare: an int|bool's int (its tag travels with the winner)."""
    return em.builder.extract_value(value, 1) if isinstance(value.type, ir.LiteralStructType) \
        else value


# ---- floats -------------------------------------------------------------------------

def np_minimum(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`a if a < b or isnan(a) else b`, as `ops.elementwise._np_minimum` (NumPy's ties)."""
    a, b = args
    keep = em.builder.or_(em.builder.fcmp_ordered("<", a, b), is_nan(em.builder, a))
    return em.builder.select(keep, a, b)


def np_maximum(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`a if a > b or isnan(a) else b`, as `ops.elementwise._np_maximum`."""
    a, b = args
    keep = em.builder.or_(em.builder.fcmp_ordered(">", a, b), is_nan(em.builder, a))
    return em.builder.select(keep, a, b)


def truediv(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    a, b = args
    _check_divisor(em, node, b, msg.FLOAT_DIVISION)
    return em.builder.fdiv(a, b)


def floordiv_float(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    a, b = args
    _check_divisor(em, node, b, msg.FLOAT_FLOOR_DIVISION)
    return divmod_power.divmod_float(em, a, b)[0]


def mod_float(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    a, b = args
    _check_divisor(em, node, b, msg.FLOAT_MODULO)
    return divmod_power.divmod_float(em, a, b)[1]


def c_pow(em: FunctionEmitter, a: ir.Value, b: ir.Value) -> ir.Value:
    """C's pow(a, b), as CPython calls it. LLVM rewrites a pow whose base is a power of two
    as `exp2(n * b)`, which rounds `n * b` first: `8.0 ** t` came out an ulp off CPython's
    (fuzz seed 41312, program 1878, its base a helper's constant). So a double pow with an
    exponent not known here goes through `astjit.c_pow`, an internal function LLVM neither
    optimizes (`optnone`) nor inlines, so it never sees the base; a constant exponent keeps
    the intrinsic, whose rewrites are exact (`x ** 2.0` as `x * x`, `x ** -1.0` as `1 / x`)."""
    if isinstance(b, ir.Constant) or a.type != DOUBLE:
        return em.call_intrinsic("llvm.pow", [a, b])
    fn = em.module.globals.get("astjit.c_pow")
    if fn is None:
        fn = ir.Function(em.module, ir.FunctionType(DOUBLE, [DOUBLE, DOUBLE]), "astjit.c_pow")
        fn.linkage = "internal"
        for attribute in ("optnone", "noinline", "nounwind"):
            fn.attributes.add(attribute)
        body = ir.IRBuilder(fn.append_basic_block("entry"))
        body.ret(body.call(em.module.declare_intrinsic("llvm.pow", [DOUBLE]), list(fn.args)))
    return em.builder.call(fn, [a, b])


def pow_float(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """CPython's float `**` (C99 pow's special values) and its three errors."""
    a, b = args
    builder = em.builder
    result = c_pow(em, a, b)
    a_finite, b_finite = is_finite(builder, a), is_finite(builder, b)
    zero_to_negative = all_of(builder, [compare_const(builder, "==", a, 0),
                                        compare_const(builder, "<", b, 0), b_finite])
    # b != floor(b), ordered: false for NaN and the infinities.
    fractional = builder.fcmp_ordered("!=", b, em.call_intrinsic("llvm.floor", [b]))
    negative_to_fraction = all_of(builder, [compare_const(builder, "<", a, 0), a_finite,
                                            fractional])
    overflow = all_of(builder, [is_inf(builder, result), a_finite, b_finite])
    em.fail_if_any(node, [(zero_to_negative, "ZeroDivisionError", msg.ZERO_NEGATIVE_POWER),
                          (negative_to_fraction, "ValueError", msg.NEGATIVE_FRACTIONAL_POWER),
                          (overflow, "OverflowError", msg.POWER_OVERFLOW)])
    return result


def math_pow(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """math.pow: C pow; 0.0 ** negative finite is a domain error (the table's 'math1'
    check, applied after this, reports NaN results and overflow)."""
    a, b = args
    builder = em.builder
    zero_to_negative = all_of(builder, [compare_const(builder, "==", a, 0),
                                        compare_const(builder, "<", b, 0), is_finite(builder, b)])
    em.fail_if(node, zero_to_negative, "ValueError", msg.MATH_DOMAIN)
    return c_pow(em, a, b)


ROUTINES = {
    "floordiv_int": floordiv_int, "mod_int": mod_int, "pow_int": pow_int,
    "lshift": lshift, "rshift": rshift, "lshift_numpy": lshift_numpy,
    "rshift_numpy": rshift_numpy, "abs_int": abs_int, "min": py_min, "max": py_max,
    "np_minimum": np_minimum, "np_maximum": np_maximum,
    "truediv": truediv, "floordiv_float": floordiv_float, "mod_float": mod_float,
    "pow_float": pow_float, "math_pow": math_pow,
}
