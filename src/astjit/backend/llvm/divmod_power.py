"""Python's floor division and modulo, and integer powers by squaring: the instruction
sequences arith.py's routines (Python's semantics) and fused.py's NumPy-semantics
routines share. No checks here: the callers raise (or not) on a zero divisor or a
negative exponent.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .compare import all_of, compare_const, const_like

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
    mod = builder.frem(vx, wx)
    div = builder.fdiv(builder.fsub(vx, mod), wx)
    mod_nonzero = builder.fcmp_unordered("!=", mod, const_like(mod, 0))
    signs_differ = builder.xor(compare_const(builder, "<", wx, 0),
                               compare_const(builder, "<", mod, 0))
    adjust = builder.and_(mod_nonzero, signs_differ)
    div = builder.select(adjust, builder.fsub(div, const_like(div, 1)), div)
    mod = builder.select(adjust, builder.fadd(mod, wx), mod)
    mod = builder.select(mod_nonzero, mod, copysign(em, const_like(wx, 0), wx))
    # Snap the quotient to an integer; a zero quotient takes the sign of vx / wx.
    floordiv = em.call_intrinsic("llvm.floor", [div])
    rounds_up = compare_const(builder, ">", builder.fsub(div, floordiv), 0.5)
    floordiv = builder.select(rounds_up, builder.fadd(floordiv, const_like(div, 1)), floordiv)
    div_nonzero = builder.fcmp_unordered("!=", div, const_like(div, 0))
    zero_quotient = copysign(em, const_like(div, 0), builder.fdiv(vx, wx))
    return builder.select(div_nonzero, floordiv, zero_quotient), mod


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
