"""Python's floor division and modulo, and integer powers by squaring: the instruction
sequences arith.py's routines (Python's semantics) and fused.py's NumPy-semantics
routines share. No checks here: the callers raise (or not) on a zero divisor or a
negative exponent.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .compare import all_of, compare_const, const_like, is_nan
from .lltypes import call_intrinsic, declare_libm

if TYPE_CHECKING:
    from .emitter import FunctionEmitter


def divmod_int(builder: ir.IRBuilder, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Python's (a // b, a % b) for a nonzero b; a // -1 is a wrapping negation."""
    minus_one = compare_const(builder, "==", b, -1)
    divisor = builder.select(minus_one, const_like(b, 1), b)
    quotient = builder.sdiv(a, divisor)
    remainder = builder.srem(a, divisor)
    quotient = builder.select(minus_one, builder.neg(a), quotient)
    # C truncates; Python floors: step down when the remainder's sign differs from b's.
    differs = all_of(builder, [compare_const(builder, "!=", remainder, 0),
                               compare_const(builder, "<", builder.xor(remainder, b), 0)])
    quotient = builder.sub(quotient, builder.zext(differs, a.type))
    remainder = builder.select(differs, builder.add(remainder, b), remainder)
    return quotient, remainder


def divmod_float(em: FunctionEmitter, vx: ir.Value, wx: ir.Value) -> tuple[ir.Value, ir.Value]:
    """CPython's `_float_div_mod(vx, wx)` for wx != 0: (floor quotient, remainder)."""
    builder = em.builder
    mod = fmod_float(em, vx, wx)
    div = builder.fdiv(builder.fsub(vx, mod), wx)
    # Each select's condition is one comparison, which x86 blends; a conjunction of
    # comparisons it branches on, at random on data of mixed signs. `adjust`: mod is
    # nonzero and not NaN, its sign not wx's (NaN mod, e.g. by a zero wx, stays as it is).
    adjust = builder.fcmp_ordered("!=", copysign(em, mod, wx), mod)
    div = builder.select(adjust, builder.fsub(div, const_like(div, 1)), div)
    mod = builder.select(adjust, builder.fadd(mod, wx), mod)
    # Now mod has wx's sign (a zero mod takes it too), but for a NaN, kept bit for bit.
    mod = builder.select(is_nan(builder, mod), mod, copysign(em, mod, wx))
    # Snap the quotient to an integer; a zero quotient takes the sign of vx / wx.
    floordiv = em.call_intrinsic("llvm.floor", [div])
    rounds_up = compare_const(builder, ">", builder.fsub(div, floordiv), 0.5)
    floordiv = builder.select(rounds_up, builder.fadd(floordiv, const_like(div, 1)), floordiv)
    div_nonzero = builder.fcmp_unordered("!=", div, const_like(div, 0))
    zero_quotient = copysign(em, const_like(div, 0), builder.fdiv(vx, wx))
    return builder.select(div_nonzero, floordiv, zero_quotient), mod


def fmod_float(em: FunctionEmitter, a: ir.Value, b: ir.Value) -> ir.Value:
    """C's fmod(a, b), exact, as NumPy's fmod, remainder and floor_divide compute it, without
    libm's call where the quotient's magnitude is below 2**p (p the mantissa's bits: 53 for
    doubles) and b is finite.

    There q = trunc(a / b) is the true quotient truncated, or one more in magnitude where
    the division rounded up to the next integer (it never rounds below the truncated
    quotient, an integer it can represent), and fma(-q, b, a) is exact: the remainder, or
    for the overshot q the remainder less b in a's direction, whose bits lie within b's.
    Adding that b back is exact too, and the result takes a's sign (an exact zero as well:
    fmod(-6.0, 3.0) is -0.0). Elsewhere (inf or NaN operands, a zero or infinite b, huge
    quotients) libm's fmod, a call the vectorizer cannot widen: the branch costs the loop
    its vectorization, and saves a call per element."""
    builder = em.builder
    ratio = builder.fdiv(a, b)
    bits = 53 if a.type == ir.DoubleType() else 24
    fast = builder.and_(
        builder.fcmp_ordered("<", call_intrinsic(builder, "llvm.fabs", [ratio]),
                             const_like(ratio, 2.0 ** bits)),
        builder.fcmp_ordered("<", call_intrinsic(builder, "llvm.fabs", [b]),
                             const_like(b, float("inf"))))
    with builder.if_else(fast, likely=True) as (exact, general):
        with exact:
            quotient = call_intrinsic(builder, "llvm.trunc", [ratio])
            remainder = call_intrinsic(builder, "llvm.fma", [builder.fneg(quotient), b, a])
            # nonzero with the sign not a's: one comparison, which x86 blends
            overshot = builder.fcmp_ordered(
                "!=", call_intrinsic(builder, "llvm.copysign", [remainder, a]), remainder)
            remainder = builder.select(overshot, builder.fadd(
                remainder, call_intrinsic(builder, "llvm.copysign", [b, a])), remainder)
            exact_result = call_intrinsic(builder, "llvm.copysign", [remainder, a])
            exact_block = builder.block
        with general:
            general_result = builder.call(_libm_fmod(builder.module, a.type), [a, b])
            general_block = builder.block
    result = builder.phi(a.type)
    result.add_incoming(exact_result, exact_block)
    result.add_incoming(general_result, general_block)
    return result


def _libm_fmod(module: ir.Module, ty: ir.Type) -> ir.Function:
    """libm's fmod or fmodf: a call LLVM keeps where it is (`lltypes.NOT_BUILTIN`), not the
    `frem` instruction, which it would compute for every element of a vectorized loop."""
    return declare_libm(module, "fmod" if ty == ir.DoubleType() else "fmodf", ty, 2)


def copysign(em: FunctionEmitter, magnitude: ir.Value, sign: ir.Value) -> ir.Value:
    return em.call_intrinsic("llvm.copysign", [magnitude, sign])


def pow_by_constant(builder: ir.IRBuilder, base: ir.Value, exponent: int) -> ir.Value:
    """The multiplications of square-and-multiply, unrolled for a known exponent."""
    result = const_like(base, 1)
    first = True
    while exponent:
        if exponent & 1:
            result = base if first else builder.mul(result, base)
            first = False
        exponent >>= 1
        if exponent:
            base = builder.mul(base, base)
    return result


def pow_loop(em: FunctionEmitter, base: ir.Value, exponent: ir.Value) -> ir.Value:
    """Square-and-multiply as a loop over the exponent's bits (exponent >= 0)."""
    builder = em.builder
    entry = builder.block
    header = em.function.append_basic_block("ipow.cond")
    body = em.function.append_basic_block("ipow.body")
    end = em.function.append_basic_block("ipow.end")
    builder.branch(header)
    builder.position_at_end(header)
    result, power, bits = (builder.phi(base.type) for _ in range(3))
    result.add_incoming(const_like(base, 1), entry)
    power.add_incoming(base, entry)
    bits.add_incoming(exponent, entry)
    builder.cbranch(compare_const(builder, "!=", bits, 0), body, end)
    builder.position_at_end(body)
    odd = builder.trunc(bits, ir.IntType(1))
    result.add_incoming(builder.select(odd, builder.mul(result, power), result), body)
    power.add_incoming(builder.mul(power, power), body)
    bits.add_incoming(builder.lshr(bits, const_like(bits, 1)), body)
    builder.branch(header)
    builder.position_at_end(end)
    return result
