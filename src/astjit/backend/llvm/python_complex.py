"""Routine lowerings of Python's `complex` arithmetic, as CPython 3.11 computes it.

NumPy's complex scalars and arrays are complexes.py's (Smith's division with a
reciprocal, npymath's cpow, NumPy's own |z|); a Python complex (a weak c128,
ir/types.py) follows Objects/complexobject.c instead, and raises where it does:

- `a / b`: Smith's method dividing by the denominator (not multiplying by its
  reciprocal); ZeroDivisionError for a zero divisor, whatever the dividend.
- `a ** b`: an exponent with no imaginary part and an integral real part of
  magnitude <= 100 multiplies (square and multiply over its bits, from 1 + 0j,
  then 1 / that for a negative one); any other exponent takes the polar form
  (hypot, pow, atan2, exp, log, cos, sin of the C library). ZeroDivisionError for
  0 to a negative or complex power, and wherever CPython's errno ends up EDOM: where
  the product for a negative exponent underflows to 0, and where the polar form's
  angle is infinite (cos and sin of an infinity set EDOM: `1j ** complex(inf)`);
  OverflowError where either part of the result is infinite.
- `abs(z)`: hypot of the parts, an infinite part giving inf (a NaN beside it
  too); OverflowError where finite parts overflow.

Every libm function is called as CPython calls it (never libmvec's), so results are
CPython's bit for bit on the same C library.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir

from . import messages as msg
from .compare import is_finite, is_inf
from .complexes import multiply
from .conversions import complex_parts, pack_complex
from .lltypes import DOUBLE

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

COMPLEX = ir.VectorType(DOUBLE, 2)
_I1 = ir.IntType(1)
_I64 = ir.IntType(64)


DIVISION_BY_ZERO = msg.message_of(lambda: 1j / complex(0.0))
ZERO_TO_NEGATIVE = msg.message_of(lambda: complex(0.0) ** -1j)
POWER_OVERFLOW = msg.message_of(lambda: complex(1e300, 0.0) ** 2)
ABS_OVERFLOW = msg.message_of(lambda: abs(complex(1.5e308, 1.5e308)))


def libm(b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """The C library's double function `name` (CPython's), readnone: no errno is read."""
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(DOUBLE, [DOUBLE] * len(args)), name)
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
    return b.call(fn, args)


def copysign(b: ir.IRBuilder, x: ir.Value, sign: ir.Value) -> ir.Value:
    fnty = ir.FunctionType(DOUBLE, [DOUBLE, DOUBLE])
    return b.call(b.module.declare_intrinsic("llvm.copysign", [DOUBLE], fnty), [x, sign])


def fabs(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.call(b.module.declare_intrinsic("llvm.fabs", [x.type]), [x])


def quotient(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(x / y, whether y is zero) as CPython's `_Py_c_quot`: divide through by the part of
    y of larger magnitude; a NaN part of y gives NaN + NaN j; a zero y 0 + 0j (and the flag)."""
    (ar, ai), (br, bi) = complex_parts(b, x), complex_parts(b, y)
    abs_r, abs_i = fabs(b, br), fabs(b, bi)
    zero, nan = ir.Constant(DOUBLE, 0.0), ir.Constant(DOUBLE, math.nan)
    # |br| >= |bi|: ratio = bi / br, denominator br + bi ratio
    ratio1 = b.fdiv(bi, br)
    denom1 = b.fadd(br, b.fmul(bi, ratio1))
    real1 = b.fdiv(b.fadd(ar, b.fmul(ai, ratio1)), denom1)
    imag1 = b.fdiv(b.fsub(ai, b.fmul(ar, ratio1)), denom1)
    # |bi| >= |br|: ratio = br / bi, denominator br ratio + bi
    ratio2 = b.fdiv(br, bi)
    denom2 = b.fadd(b.fmul(br, ratio2), bi)
    real2 = b.fdiv(b.fadd(b.fmul(ar, ratio2), ai), denom2)
    imag2 = b.fdiv(b.fsub(b.fmul(ai, ratio2), ar), denom2)
    first = b.fcmp_ordered(">=", abs_r, abs_i)
    second = b.fcmp_ordered(">=", abs_i, abs_r)
    by_zero = b.and_(first, b.fcmp_ordered("==", abs_r, zero))
    real = b.select(first, b.select(by_zero, zero, real1), b.select(second, real2, nan))
    imag = b.select(first, b.select(by_zero, zero, imag1), b.select(second, imag2, nan))
    return pack_complex(b, COMPLEX, real, imag), by_zero


def py_complex_div(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    result, by_zero = quotient(em.builder, *args)
    em.fail_if(node, by_zero, "ZeroDivisionError", DIVISION_BY_ZERO)
    return result


def py_complex_abs(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """abs(z): CPython's `_Py_c_abs`, OverflowError where finite parts overflow."""
    magnitude, overflow = c_abs(em.builder, args[0])
    em.fail_if(node, overflow, "OverflowError", ABS_OVERFLOW)
    return magnitude


def c_abs(b: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(|z|, whether it overflowed) as `_Py_c_abs`: an infinite part gives inf, else a NaN
    part NaN, else hypot(re, im), which overflowed where it is not finite."""
    re, im = complex_parts(b, z)
    inf, nan = ir.Constant(DOUBLE, math.inf), ir.Constant(DOUBLE, math.nan)
    finite = b.and_(is_finite(b, re), is_finite(b, im))
    hypot = libm(b, "hypot", [re, im])
    special = b.select(b.or_(is_inf(b, re), is_inf(b, im)), inf, nan)
    return b.select(finite, hypot, special), b.and_(finite, b.not_(is_finite(b, hypot)))


def py_complex_pow(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """a ** b as CPython's complex_pow (the module docstring); one function per module."""
    b = em.builder
    fn = _power_function(em.module)
    outcome = b.call(fn, args)
    result, undefined = b.extract_value(outcome, 0), b.extract_value(outcome, 1)
    real, imag = complex_parts(b, result)
    infinite = b.or_(is_inf(b, real), is_inf(b, imag))
    em.fail_if_any(node, [(undefined, "ZeroDivisionError", ZERO_TO_NEGATIVE),
                          (infinite, "OverflowError", POWER_OVERFLOW)])
    return result


def _power_function(module: ir.Module) -> ir.Function:
    """`astjit.py_cpow(a, b) -> {a ** b, EDOM}`: c_powi or _Py_c_pow, and whether CPython's
    errno is EDOM (ZeroDivisionError)."""
    name = "astjit.py_cpow"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fnty = ir.FunctionType(ir.LiteralStructType([COMPLEX, _I1]), [COMPLEX, COMPLEX])
    fn = ir.Function(module, fnty, name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, e = fn.args
    br, bi = complex_parts(b, e)
    zero = ir.Constant(DOUBLE, 0.0)
    floor = b.call(b.module.declare_intrinsic("llvm.floor", [DOUBLE]), [br])
    integral = b.and_(b.and_(b.fcmp_ordered("==", bi, zero), b.fcmp_ordered("==", br, floor)),
                      b.fcmp_ordered("<=", fabs(b, br), ir.Constant(DOUBLE, 100.0)))
    powi, general = fn.append_basic_block("powi"), fn.append_basic_block("general")
    b.cbranch(integral, powi, general)

    b.position_at_end(powi)
    n = b.fptosi(br, _I64)
    negative = b.icmp_signed("<", n, ir.Constant(_I64, 0))
    product = _powu(b, a, b.select(negative, b.neg(n), n))
    inverse, by_zero = quotient(b, _one(b), product)
    _return(b, fn, b.select(negative, inverse, product), b.and_(negative, by_zero))

    b.position_at_end(general)
    _return(b, fn, *_c_pow(b, a, e))
    return fn


def _one(b: ir.IRBuilder) -> ir.Value:
    return ir.Constant(COMPLEX, [ir.Constant(DOUBLE, 1.0), ir.Constant(DOUBLE, 0.0)])


def _return(b: ir.IRBuilder, fn: ir.Function, value: ir.Value, edom: ir.Value) -> None:
    outcome = b.insert_value(ir.Constant(fn.function_type.return_type, None), value, 0)
    b.ret(b.insert_value(outcome, edom, 1))


def _powu(b: ir.IRBuilder, x: ir.Value, n: ir.Value) -> ir.Value:
    """c_powu: r = 1 + 0j, p = x; for each bit `mask` of n from the lowest while mask <= n:
    r = r p where the bit is set, p = p p. Every product is computed (1 x differs from x
    where x has an infinite or NaN part)."""
    fn = b.function
    entry = b.block
    test, body, done = (fn.append_basic_block(s) for s in ("powu.test", "powu.body", "powu.done"))
    b.branch(test)
    b.position_at_end(test)
    r, p, mask = b.phi(COMPLEX), b.phi(COMPLEX), b.phi(_I64)
    r.add_incoming(_one(b), entry)
    p.add_incoming(x, entry)
    mask.add_incoming(ir.Constant(_I64, 1), entry)
    b.cbranch(b.icmp_signed(">=", n, mask), body, done)
    b.position_at_end(body)
    bit = b.icmp_signed("!=", b.and_(n, mask), ir.Constant(_I64, 0))
    r.add_incoming(b.select(bit, multiply(b, r, p), r), body)
    p.add_incoming(multiply(b, p, p), body)
    mask.add_incoming(b.shl(mask, ir.Constant(_I64, 1)), body)
    b.branch(test)
    b.position_at_end(done)
    return r


def _c_pow(b: ir.IRBuilder, a: ir.Value, e: ir.Value) -> tuple[ir.Value, ir.Value]:
    """_Py_c_pow: 1 for a zero exponent; 0 for a zero base (EDOM for an exponent with an
    imaginary part or a negative real one); else the polar form (EDOM for an infinite
    angle)."""
    (ar, ai), (br, bi) = complex_parts(b, a), complex_parts(b, e)
    zero = ir.Constant(DOUBLE, 0.0)

    def is_zero(x, y):
        return b.and_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", y, zero))

    vabs = libm(b, "hypot", [ar, ai])
    length = libm(b, "pow", [vabs, br])
    at = libm(b, "atan2", [ai, ar])
    phase = b.fmul(at, br)
    imaginary = b.fcmp_unordered("!=", bi, zero)
    length = b.select(imaginary, b.fdiv(length, libm(b, "exp", [b.fmul(at, bi)])), length)
    phase = b.select(imaginary, b.fadd(phase, b.fmul(bi, libm(b, "log", [vabs]))), phase)
    polar = pack_complex(b, COMPLEX, b.fmul(length, libm(b, "cos", [phase])),
                         b.fmul(length, libm(b, "sin", [phase])))
    base_zero, exponent_zero = is_zero(ar, ai), is_zero(br, bi)
    result = b.select(exponent_zero, _one(b),
                      b.select(base_zero, ir.Constant(COMPLEX, None), polar))
    zero_to_negative = b.and_(base_zero, b.or_(imaginary, b.fcmp_ordered("<", br, zero)))
    # cos and sin of an infinite phase set errno to EDOM, which CPython reads as 0's error
    edom = b.and_(b.not_(exponent_zero), b.select(base_zero, zero_to_negative, is_inf(b, phase)))
    return result, edom


ROUTINES = {"py_complex_div": py_complex_div, "py_complex_pow": py_complex_pow,
            "py_complex_abs": py_complex_abs}
"""The Python-complex routines of the op table (`Routine(name)`)."""
