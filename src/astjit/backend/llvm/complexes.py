"""Routine lowerings of complex arithmetic, as NumPy computes it (npymath's formulas).

A complex is a vector of its two parts (lltypes.py), so `+`, `-` and unary `-` are
the float instructions themselves (the op table names `fadd` ...); these routines
are the rest: `*` by the schoolbook formula, `/` by Smith's method (NumPy's loops:
no spurious overflow, and a zero divisor gives the infinities and NaNs NumPy's do),
`==`/`!=` of both parts, `abs` as `hypot`, the parts, the conjugate, the angle.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .conversions import complex_parts, pack_complex

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def complex_mul(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """(a + bi)(c + di) = (ac - bd) + (ad + bc)i."""
    b = em.builder
    (ar, ai), (br, bi) = complex_parts(b, args[0]), complex_parts(b, args[1])
    real = b.fsub(b.fmul(ar, br), b.fmul(ai, bi))
    imag = b.fadd(b.fmul(ar, bi), b.fmul(ai, br))
    return pack_complex(b, args[0].type, real, imag)


def complex_div(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """Smith's division, as NumPy's `nc_quot` loops: scale by the larger part of the
    divisor; a zero divisor divides each part by its magnitude (inf or NaN)."""
    b = em.builder
    (ar, ai), (br, bi) = complex_parts(b, args[0]), complex_parts(b, args[1])
    fabs = b.module.declare_intrinsic("llvm.fabs", [br.type])
    abs_r, abs_i = b.call(fabs, [br]), b.call(fabs, [bi])
    one, zero = ir.Constant(br.type, 1.0), ir.Constant(br.type, 0.0)
    # |br| >= |bi|: rat = bi / br, scl = 1 / (br + bi rat)
    rat1 = b.fdiv(bi, br)
    scl1 = b.fdiv(one, b.fadd(br, b.fmul(bi, rat1)))
    real1 = b.fmul(b.fadd(ar, b.fmul(ai, rat1)), scl1)
    imag1 = b.fmul(b.fsub(ai, b.fmul(ar, rat1)), scl1)
    # |br| < |bi|: rat = br / bi, scl = 1 / (bi + br rat)
    rat2 = b.fdiv(br, bi)
    scl2 = b.fdiv(one, b.fadd(bi, b.fmul(br, rat2)))
    real2 = b.fmul(b.fadd(b.fmul(ar, rat2), ai), scl2)
    imag2 = b.fmul(b.fsub(b.fmul(ai, rat2), ar), scl2)
    by_zero = b.and_(b.fcmp_ordered("==", abs_r, zero), b.fcmp_ordered("==", abs_i, zero))
    real0, imag0 = b.fdiv(ar, abs_r), b.fdiv(ai, abs_i)
    first = b.fcmp_ordered(">=", abs_r, abs_i)
    real = b.select(by_zero, real0, b.select(first, real1, real2))
    imag = b.select(by_zero, imag0, b.select(first, imag1, imag2))
    return pack_complex(b, args[0].type, real, imag)


def complex_eq(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    (ar, ai), (br, bi) = complex_parts(b, args[0]), complex_parts(b, args[1])
    return b.and_(b.fcmp_ordered("==", ar, br), b.fcmp_ordered("==", ai, bi))


def complex_ne(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    (ar, ai), (br, bi) = complex_parts(b, args[0]), complex_parts(b, args[1])
    return b.or_(b.fcmp_unordered("!=", ar, br), b.fcmp_unordered("!=", ai, bi))


def complex_abs(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """|z| = hypot(re, im) (npy_cabs)."""
    return em.call_libm("hypot", list(complex_parts(em.builder, args[0])))


def complex_real(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return complex_parts(em.builder, args[0])[0]


def complex_imag(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return complex_parts(em.builder, args[0])[1]


def real_imag(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """The imaginary part of a real number: a zero of its type."""
    return ir.Constant(args[0].type, 0 if isinstance(args[0].type, ir.IntType) else 0.0)


def complex_conj(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    real, imag = complex_parts(b, args[0])
    return pack_complex(b, args[0].type, real, b.fneg(imag))


def complex_angle(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """arg z = atan2(im, re)."""
    real, imag = complex_parts(em.builder, args[0])
    return em.call_libm("atan2", [imag, real])


def real_angle(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """The angle of a real number: atan2(0, x) (0, pi, or NaN), as np.angle computes it."""
    (x,) = args
    return em.call_libm("atan2", [ir.Constant(x.type, 0.0), x])


ROUTINES = {"complex_mul": complex_mul, "complex_div": complex_div, "complex_eq": complex_eq,
            "complex_ne": complex_ne, "complex_abs": complex_abs, "complex_real": complex_real,
            "complex_imag": complex_imag, "real_imag": real_imag, "complex_conj": complex_conj,
            "complex_angle": complex_angle, "real_angle": real_angle}
"""The complex routines of the op table (`Routine(name)`)."""
