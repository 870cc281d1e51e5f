"""`math.hypot(x, y)` as CPython computes it, not as C's `hypot`.

CPython's `math.hypot` is its own algorithm (`vector_norm` in Modules/mathmodule.c):
the operands scaled by a power of two so the larger lies in [0.5, 1), squared exactly,
summed from 1.0 with the rounding errors kept aside, then one differential correction
of the square root. Its details changed in CPython 3.12 (squares by `fma` rather than
Veltkamp-Dekker splitting, two accumulators rather than three, subnormal operands
rescaled rather than divided by the largest), and they decide the last bit: the
lowering follows the running interpreter's version. It is almost always correctly
rounded, where glibc's `hypot` is not: `math.hypot(4.2, 4.2)` is 5.939696961966999 and
C's `hypot` 5.939696961967 (found by the fuzzer, seed 20261205, program 7555).
`np.hypot` is C's `hypot`, NumPy's own, and keeps that lowering (the op's `llvm_numpy`).

The order of the floating-point operations below is CPython's; LLVM keeps it, as the
emitted code carries no fast-math flags.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from llvmlite import ir

from .compare import compare, compare_const, is_inf, is_nan
from .lltypes import DOUBLE

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

_DBL_MIN = 2.0 ** -1022
_SUBNORMAL_SCALE_BELOW = 2.0 ** -1024  # frexp's exponent below -1023: vector_norm rescales


def _libm(em: FunctionEmitter, name: str, ret: ir.Type, params: list[ir.Type]) -> ir.Function:
    fn = em.module.globals.get(name)
    if fn is None:
        fn = ir.Function(em.module, ir.FunctionType(ret, params), name)
        fn.attributes.add("nounwind")
    return fn


def _exact_square(em: FunctionEmitter, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """x * y and its rounding error, `fma(x, y, -(x * y))` (CPython's dl_mul)."""
    b = em.builder
    product = b.fmul(x, y)
    return product, em.call_intrinsic("llvm.fma", [x, y, b.fneg(product)])


def _fast_sum(b: ir.IRBuilder, a: ir.Value, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """a + x and its rounding error for |a| >= |x| (CPython's dl_fast_sum)."""
    total = b.fadd(a, x)
    return total, b.fsub(x, b.fsub(total, a))


def _split(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Veltkamp-Dekker: x = hi + lo, hi with 26 significant bits (CPython 3.11's T27)."""
    t = b.fmul(x, ir.Constant(DOUBLE, 134217729.0))
    hi = b.fsub(t, b.fsub(t, x))
    return hi, b.fsub(x, hi)


def _accumulate(b: ir.IRBuilder, csum: ir.Value, frac: ir.Value,
                x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """csum += x, its rounding error added to frac: `frac += (oldcsum - csum) + x`."""
    total = b.fadd(csum, x)
    return total, b.fadd(frac, b.fadd(b.fsub(csum, total), x))


def _norm_split(em: FunctionEmitter, values: list[ir.Value], scale: ir.Value) -> ir.Value:
    """CPython 3.11's vector_norm where frexp's exponent is at least -1023: squares
    from the split parts, three accumulators."""
    b = em.builder
    zero, one, two = (ir.Constant(DOUBLE, c) for c in (0.0, 1.0, 2.0))
    csum, frac1, frac2, frac3 = one, zero, zero, zero
    for x in values:
        hi, lo = _split(b, b.fmul(x, scale))
        csum, frac1 = _accumulate(b, csum, frac1, b.fmul(hi, hi))
        csum, frac2 = _accumulate(b, csum, frac2, b.fmul(b.fmul(two, hi), lo))
        frac3 = b.fadd(frac3, b.fmul(lo, lo))
    h = em.call_intrinsic("llvm.sqrt", [b.fadd(b.fsub(csum, one),
                                               b.fadd(b.fadd(frac1, frac2), frac3))])
    hi, lo = _split(b, h)
    csum, frac1 = _accumulate(b, csum, frac1, b.fmul(b.fneg(hi), hi))
    csum, frac2 = _accumulate(b, csum, frac2, b.fmul(b.fmul(ir.Constant(DOUBLE, -2.0), hi), lo))
    csum, frac3 = _accumulate(b, csum, frac3, b.fmul(b.fneg(lo), lo))
    residue = b.fadd(b.fsub(csum, one), b.fadd(b.fadd(frac1, frac2), frac3))
    return b.fdiv(b.fadd(h, b.fdiv(residue, b.fmul(two, h))), scale)


def _norm_divided(em: FunctionEmitter, values: list[ir.Value], largest: ir.Value) -> ir.Value:
    """CPython 3.11's vector_norm where frexp's exponent is below -1023 (the scale
    would overflow): each value divided by the largest."""
    b = em.builder
    one = ir.Constant(DOUBLE, 1.0)
    csum, frac = one, ir.Constant(DOUBLE, 0.0)
    for x in values:
        x = b.fdiv(x, largest)
        csum, frac = _accumulate(b, csum, frac, b.fmul(x, x))
    return b.fmul(largest, em.call_intrinsic("llvm.sqrt", [b.fadd(b.fsub(csum, one), frac)]))


def _norm_fma(em: FunctionEmitter, values: list[ir.Value], scale: ir.Value) -> ir.Value:
    """CPython 3.12's vector_norm on values whose largest is normal-range: exact squares
    by fma, two accumulators."""
    b = em.builder
    zero, one = ir.Constant(DOUBLE, 0.0), ir.Constant(DOUBLE, 1.0)
    csum, frac1, frac2 = one, zero, zero
    for v in values:
        v = b.fmul(v, scale)
        square, square_error = _exact_square(em, v, v)
        csum, sum_error = _fast_sum(b, csum, square)
        frac1, frac2 = b.fadd(frac1, square_error), b.fadd(frac2, sum_error)
    h = em.call_intrinsic("llvm.sqrt", [b.fadd(b.fsub(csum, one), b.fadd(frac1, frac2))])
    square, square_error = _exact_square(em, b.fneg(h), h)
    csum, sum_error = _fast_sum(b, csum, square)
    frac1, frac2 = b.fadd(frac1, square_error), b.fadd(frac2, sum_error)
    residue = b.fadd(b.fsub(csum, one), b.fadd(frac1, frac2))
    h = b.fadd(h, b.fdiv(residue, b.fmul(ir.Constant(DOUBLE, 2.0), h)))
    return b.fdiv(h, scale)


def _scale_of(em: FunctionEmitter, largest: ir.Value) -> ir.Value:
    """ldexp(1.0, -e) for frexp(largest)'s exponent e, through C's frexp and ldexp."""
    b = em.builder
    exponent = em.alloca(ir.IntType(32))
    b.call(_libm(em, "frexp", DOUBLE, [DOUBLE, ir.IntType(32).as_pointer()]),
           [largest, exponent])
    return b.call(_libm(em, "ldexp", DOUBLE, [DOUBLE, ir.IntType(32)]),
                  [ir.Constant(DOUBLE, 1.0), b.neg(b.load(exponent))])


def math_hypot(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """The running CPython's algorithm (the cache keys entries on Python's version)."""
    b = em.builder
    x, y = (a if a.type == DOUBLE else b.fpext(a, DOUBLE) for a in args)
    values = [em.call_intrinsic("llvm.fabs", [x]), em.call_intrinsic("llvm.fabs", [y])]
    zero = ir.Constant(DOUBLE, 0.0)
    # max starts at 0.0 and takes a value only where `x > max`: a NaN never becomes it.
    largest = zero
    for v in values:
        largest = b.select(compare(b, ">", v, largest), v, largest)
    found_nan = b.or_(is_nan(b, values[0]), is_nan(b, values[1]))
    tiny = compare_const(b, "<", largest, _SUBNORMAL_SCALE_BELOW)
    if sys.version_info >= (3, 12):
        # Rescaled by 1 / DBL_MIN (exact) and the norm of those times DBL_MIN.
        up = ir.Constant(DOUBLE, 1.0 / _DBL_MIN)
        values = [b.select(tiny, b.fmul(v, up), v) for v in values]
        norm = _norm_fma(em, values, _scale_of(em, b.select(tiny, b.fmul(largest, up), largest)))
        norm = b.select(tiny, b.fmul(ir.Constant(DOUBLE, _DBL_MIN), norm), norm)
    else:
        norm = b.select(tiny, _norm_divided(em, values, largest),
                        _norm_split(em, values, _scale_of(em, largest)))
    # vector_norm's early returns: an infinity wins over a NaN; then NaN; then a zero max.
    norm = b.select(compare(b, "==", largest, zero), largest, norm)
    norm = b.select(found_nan, ir.Constant(DOUBLE, float("nan")), norm)
    return b.select(is_inf(b, largest), largest, norm)


ROUTINES = {"math_hypot": math_hypot}
