"""Routine lowerings of `complex(a, b)` and the `cmath` functions, as CPython 3.11's
Modules/cmathmodule.c computes them, bit for bit on the same C library.

Each function takes its finite operands through cmath's formulas (scalings near
overflow and underflow, log1p near |z| = 1) and its non-finite ones through cmath's
tables of special values, which are read off CPython's cmath itself (`special_values`:
the function of one number of each of cmath's seven classes per part), stored as
constant arrays and indexed by the operands' classes. Errors are those CPython's errno
leaves: ValueError ("math domain error") for EDOM, OverflowError ("math range error")
for ERANGE, as each function sets them (python_complex.py has the arithmetic).
"""
from __future__ import annotations

import cmath
import functools
import math
import sys
from typing import TYPE_CHECKING

from llvmlite import ir

from . import messages as msg
from .compare import is_finite, is_inf, own_nan
from .conversions import complex_parts, pack_complex
from .lltypes import DOUBLE
from .python_complex import COMPLEX, c_abs, copysign, fabs, libm, quotient

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

_I64 = ir.IntType(64)


def complex_new(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """complex(a, b) of two floats: exactly those parts."""
    return pack_complex(em.builder, COMPLEX, *args)


def cmath_phase(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.phase(z); OverflowError where the C library's atan2 underflowed to 0 (it sets
    errno to ERANGE for a zero result of a nonzero im and finite re, and cmath.phase reads
    errno; cmath.polar does not: its magnitude resets it)."""
    b = em.builder
    angle = phase(b, args[0])
    re, im = complex_parts(b, args[0])
    zero = ir.Constant(DOUBLE, 0.0)
    underflow = b.and_(b.and_(b.fcmp_ordered("==", angle, zero), b.fcmp_unordered("!=", im, zero)),
                       is_finite(b, re))
    if not node.attrs.get("polar"):
        em.fail_if(node, underflow, "OverflowError", msg.MATH_RANGE)
    return angle


def phase(b: ir.IRBuilder, z: ir.Value) -> ir.Value:
    """cmath's c_atan2: atan2(im, re), but a NaN part gives CPython's NaN (not the C
    library's, whose sign may differ); C99's atan2 has the rest of its special cases."""
    re, im = complex_parts(b, z)
    return own_nan(b, [re, im], libm(b, "atan2", [im, re]))


def cmath_abs(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """The magnitude of cmath.polar: `_Py_c_abs`, its overflow cmath's OverflowError."""
    magnitude, overflow = c_abs(em.builder, args[0])
    em.fail_if(node, overflow, "OverflowError", msg.MATH_RANGE)
    return magnitude


_CLASSES = (-math.inf, -2.5, -0.0, 0.0, 2.5, math.inf, math.nan)
"""One number of each of cmath's special_type classes, in its order: -inf, negative,
-0, +0, positive, +inf, NaN."""


def special_class(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """cmath's special_type(x) as an index into `_CLASSES` (an i64)."""
    zero = ir.Constant(DOUBLE, 0.0)
    negative = b.fcmp_ordered("<", copysign(b, ir.Constant(DOUBLE, 1.0), x), zero)

    def pick(neg_index, pos_index):
        return b.select(negative, ir.Constant(_I64, neg_index), ir.Constant(_I64, pos_index))

    index = b.select(b.fcmp_ordered("==", x, zero), pick(2, 3), pick(1, 4))
    index = b.select(is_inf(b, x), pick(0, 5), index)
    return b.select(b.fcmp_unordered("uno", x, x), ir.Constant(_I64, 6), index)


@functools.cache
def special_values(function) -> tuple[tuple[float, float], ...]:
    """`function` (of cmath, two reals to a complex) of each pair of class representatives,
    row by row: its table of special values, read off CPython itself (an error's entry is
    never used: NaN)."""
    table = []
    for x in _CLASSES:
        for y in _CLASSES:
            try:
                z = function(x, y)
            except (ValueError, OverflowError):
                z = complex(math.nan, math.nan)
            table.append((z.real, z.imag))
    return tuple(table)


def table_value(b: ir.IRBuilder, name: str, table, x: ir.Value, y: ir.Value) -> ir.Value:
    """The entry of `table` (`special_values`) for the classes of x and y: a load from a
    constant global array of complexes named `name`."""
    module = b.module
    array = module.globals.get(name)
    if array is None:
        ty = ir.ArrayType(COMPLEX, len(table))
        array = ir.GlobalVariable(module, ty, name)
        array.global_constant = True
        array.linkage = "internal"
        array.initializer = ir.Constant(ty, [ir.Constant(COMPLEX, [ir.Constant(DOUBLE, p)
                                                                   for p in z]) for z in table])
    index = b.add(b.mul(special_class(b, x), ir.Constant(_I64, len(_CLASSES))),
                  special_class(b, y))
    return b.load(b.gep(array, [ir.Constant(_I64, 0), index]), align=8)


def cmath_rect(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.rect(r, phi): (r, r phi) for phi == 0, else r (cos phi + i sin phi); an
    infinite r with a finite nonzero phi infinities signed as cos and sin; any other
    non-finite operand its special value; ValueError for an infinite phi with a nonzero r
    that is not NaN."""
    b = em.builder
    r, phi = args
    zero, inf = ir.Constant(DOUBLE, 0.0), ir.Constant(DOUBLE, math.inf)
    cos, sin = libm(b, "cos", [phi]), libm(b, "sin", [phi])
    phi_zero = b.fcmp_ordered("==", phi, zero)
    finite = pack_complex(b, COMPLEX, b.select(phi_zero, r, b.fmul(r, cos)),
                          b.select(phi_zero, b.fmul(r, phi), b.fmul(r, sin)))
    signed = [copysign(b, inf, part) for part in (cos, sin)]
    signed = [b.select(b.fcmp_ordered(">", r, zero), part, b.fneg(part)) for part in signed]
    infinite = pack_complex(b, COMPLEX, *signed)
    special = table_value(b, "astjit.cmath.rect", special_values(cmath.rect), r, phi)
    both_finite = b.and_(is_finite(b, r), is_finite(b, phi))
    r_infinite = b.and_(is_inf(b, r), b.and_(is_finite(b, phi), b.not_(phi_zero)))
    domain = b.and_(b.and_(b.fcmp_ordered("!=", r, zero), b.fcmp_ordered("ord", r, r)),
                    is_inf(b, phi))
    em.fail_if(node, domain, "ValueError", msg.MATH_DOMAIN)
    return b.select(both_finite, finite, b.select(r_infinite, infinite, special))


def cmath_sqrt(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.sqrt, which never raises (`c_sqrt`)."""
    return c_sqrt(em.builder, args[0])


def c_sqrt(b: ir.IRBuilder, z: ir.Value) -> ir.Value:
    """cmath's sqrt: a non-finite part its special value; 0 keeps the sign of its imaginary
    part; else s = 2 sqrt(|x|/8 + hypot(|x|/8, |y|/8)) (both parts subnormal: scaled by
    2**53 and the root by 2**-27 instead), d = |y| / 2s, (s, +-d) for x >= 0, else (d, +-s)."""
    x, y = complex_parts(b, z)
    zero = ir.Constant(DOUBLE, 0.0)
    ax, ay = fabs(b, x), fabs(b, y)
    smallest = ir.Constant(DOUBLE, sys.float_info.min)
    subnormal = b.and_(b.and_(b.fcmp_ordered("<", ax, smallest), b.fcmp_ordered("<", ay, smallest)),
                       b.or_(b.fcmp_ordered(">", ax, zero), b.fcmp_ordered(">", ay, zero)))
    up, eighth = ir.Constant(DOUBLE, 2.0 ** 53), ir.Constant(DOUBLE, 0.125)
    sqrt = b.module.declare_intrinsic("llvm.sqrt", [DOUBLE])
    ax_up = b.fmul(ax, up)
    scaled = b.fmul(b.call(sqrt, [b.fadd(ax_up, libm(b, "hypot", [ax_up, b.fmul(ay, up)]))]),
                    ir.Constant(DOUBLE, 2.0 ** -27))
    ax8 = b.fdiv(ax, ir.Constant(DOUBLE, 8.0))
    plain = b.fmul(ir.Constant(DOUBLE, 2.0), b.call(sqrt, [b.fadd(ax8, libm(
        b, "hypot", [ax8, b.fmul(ay, eighth)]))]))
    root = b.select(subnormal, scaled, plain)
    d = b.fdiv(ay, b.fmul(ir.Constant(DOUBLE, 2.0), root))
    nonnegative = b.fcmp_ordered(">=", x, zero)
    general = pack_complex(b, COMPLEX, b.select(nonnegative, root, d),
                           copysign(b, b.select(nonnegative, d, root), y))
    at_zero = pack_complex(b, COMPLEX, zero, y)
    is_zero = b.and_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", y, zero))
    special = table_value(b, "astjit.cmath.sqrt", special_values(_SQRT), x, y)
    finite = b.and_(is_finite(b, x), is_finite(b, y))
    return b.select(finite, b.select(is_zero, at_zero, general), special)


LOG_LARGE = math.log(sys.float_info.max / 4.0)
"""cmath's CM_LOG_LARGE_DOUBLE: past it exp(x) is taken as exp(x - 1) e."""


def cmath_exp(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.exp: exp(x) (cos y + i sin y), exp(x - 1) e for x past log(DBL_MAX / 4);
    OverflowError for an infinite part. An infinite x with a finite nonzero y gives
    infinities (x > 0) or zeros signed as cos y and sin y; other non-finite parts their
    special values, ValueError for an infinite y with a finite x or x = +inf."""
    b = em.builder
    x, y = complex_parts(b, args[0])
    zero, inf = ir.Constant(DOUBLE, 0.0), ir.Constant(DOUBLE, math.inf)
    cos, sin = libm(b, "cos", [y]), libm(b, "sin", [y])
    large = b.fcmp_ordered(">", x, ir.Constant(DOUBLE, LOG_LARGE))
    scale = libm(b, "exp", [b.select(large, b.fsub(x, ir.Constant(DOUBLE, 1.0)), x)])
    e = ir.Constant(DOUBLE, math.e)
    re, im = b.fmul(scale, cos), b.fmul(scale, sin)
    general = pack_complex(b, COMPLEX, b.select(large, b.fmul(re, e), re),
                           b.select(large, b.fmul(im, e), im))
    magnitude = b.select(b.fcmp_ordered(">", x, zero), inf, zero)
    signed = pack_complex(b, COMPLEX, copysign(b, magnitude, cos), copysign(b, magnitude, sin))
    special = table_value(b, "astjit.cmath.exp", special_values(_EXP), x, y)
    x_finite, y_finite = is_finite(b, x), is_finite(b, y)
    finite = b.and_(x_finite, y_finite)
    infinite_x = b.and_(is_inf(b, x), b.and_(y_finite, b.fcmp_unordered("!=", y, zero)))
    result = b.select(finite, general, b.select(infinite_x, signed, special))
    re, im = complex_parts(b, result)
    domain = b.and_(is_inf(b, y), b.or_(x_finite, b.fcmp_ordered("==", x, inf)))
    overflow = b.and_(finite, b.or_(is_inf(b, re), is_inf(b, im)))
    em.fail_if_any(node, [(domain, "ValueError", msg.MATH_DOMAIN),
                          (overflow, "OverflowError", msg.MATH_RANGE)])
    return result


def c_log(b: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(log z, whether errno is EDOM: z = 0) as cmath's c_log: a non-finite part its special
    value; past DBL_MAX / 4 log(hypot(|x|/2, |y|/2)) + ln 2; both parts subnormal scaled by
    2**53; |z| in [0.71, 1.73] log1p((M - 1)(M + 1) + m m) / 2 of the larger part M and the
    smaller m; else log(hypot(x, y)); the angle atan2(y, x)."""
    x, y = complex_parts(b, z)
    zero = ir.Constant(DOUBLE, 0.0)
    ax, ay = fabs(b, x), fabs(b, y)
    ln2 = ir.Constant(DOUBLE, math.log(2.0))

    def const(value):
        return ir.Constant(DOUBLE, value)

    large = b.or_(b.fcmp_ordered(">", ax, const(LARGE)), b.fcmp_ordered(">", ay, const(LARGE)))
    half = const(0.5)
    of_large = b.fadd(libm(b, "log", [libm(b, "hypot", [b.fmul(ax, half), b.fmul(ay, half)])]),
                      ln2)
    tiny = b.and_(b.fcmp_ordered("<", ax, const(sys.float_info.min)),
                  b.fcmp_ordered("<", ay, const(sys.float_info.min)))
    up = const(2.0 ** 53)
    of_tiny = b.fsub(libm(b, "log", [libm(b, "hypot", [b.fmul(ax, up), b.fmul(ay, up)])]),
                     const(53 * math.log(2.0)))
    h = libm(b, "hypot", [ax, ay])
    near_one = b.and_(b.fcmp_ordered("<=", const(0.71), h), b.fcmp_ordered("<=", h, const(1.73)))
    first = b.fcmp_ordered(">", ax, ay)
    larger, smaller = b.select(first, ax, ay), b.select(first, ay, ax)
    one = const(1.0)
    v = b.fadd(b.fmul(b.fsub(larger, one), b.fadd(larger, one)), b.fmul(smaller, smaller))
    of_near_one = b.fdiv(b.select(b.fcmp_ordered("==", v, zero), v, libm(b, "log1p", [v])),
                         const(2.0))
    usual = b.select(near_one, of_near_one, libm(b, "log", [h]))
    is_zero = b.and_(b.fcmp_ordered("==", ax, zero), b.fcmp_ordered("==", ay, zero))
    real = b.select(large, of_large, b.select(tiny, b.select(is_zero, const(-math.inf), of_tiny),
                                              usual))
    general = pack_complex(b, COMPLEX, real, libm(b, "atan2", [y, x]))
    special = table_value(b, "astjit.cmath.log", special_values(_LOG), x, y)
    finite = b.and_(is_finite(b, x), is_finite(b, y))
    return b.select(finite, general, special), b.and_(finite, is_zero)


def cmath_log(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.log(z), ValueError at 0; cmath.log(z, base) is log z / log base by
    `_Py_c_quot`, ValueError where base is 0 or 1 (errno: log base's, then the division's;
    log z's is overwritten: cmath.log(0, 2) is -inf + nan j)."""
    b = em.builder
    value, edom = c_log(b, args[0])
    if len(args) == 2:
        divisor, edom = c_log(b, args[1])
        value, by_zero = quotient(b, value, divisor)
        edom = b.or_(edom, by_zero)
    em.fail_if(node, edom, "ValueError", msg.MATH_DOMAIN)
    return value


def cmath_log10(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.log10: c_log's parts divided by ln 10; ValueError at 0."""
    b = em.builder
    value, edom = c_log(b, args[0])
    em.fail_if(node, edom, "ValueError", msg.MATH_DOMAIN)
    ln10 = ir.Constant(DOUBLE, math.log(10.0))
    re, im = complex_parts(b, value)
    return pack_complex(b, COMPLEX, b.fdiv(re, ln10), b.fdiv(im, ln10))


TOLERANCES = msg.message_of(lambda: cmath.isclose(1, 1, rel_tol=-1.0))


def cmath_isclose(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """cmath.isclose(a, b, rel_tol, abs_tol): ValueError for a negative tolerance; true for
    equal parts, false where a part is infinite, else whether |a - b| <= rel_tol |b|, or
    rel_tol |a|, or abs_tol (magnitudes by `_Py_c_abs`, whose overflow is no error here)."""
    b = em.builder
    z, w, rel_tol, abs_tol = args
    zero = ir.Constant(DOUBLE, 0.0)
    em.fail_if(node, b.or_(b.fcmp_ordered("<", rel_tol, zero), b.fcmp_ordered("<", abs_tol, zero)),
               "ValueError", TOLERANCES)
    (zr, zi), (wr, wi) = complex_parts(b, z), complex_parts(b, w)
    equal = b.and_(b.fcmp_ordered("==", zr, wr), b.fcmp_ordered("==", zi, wi))
    infinite = b.or_(b.or_(is_inf(b, zr), is_inf(b, zi)), b.or_(is_inf(b, wr), is_inf(b, wi)))
    diff = c_abs(b, b.fsub(z, w))[0]
    close = b.or_(b.or_(b.fcmp_ordered("<=", diff, b.fmul(rel_tol, c_abs(b, w)[0])),
                        b.fcmp_ordered("<=", diff, b.fmul(rel_tol, c_abs(b, z)[0]))),
                  b.fcmp_ordered("<=", diff, abs_tol))
    true, false = ir.Constant(ir.IntType(1), 1), ir.Constant(ir.IntType(1), 0)
    return b.select(equal, true, b.select(infinite, false, close))


LARGE = sys.float_info.max / 4.0
"""cmath's CM_LARGE_DOUBLE."""


def of_parts(function):
    """`function` of a complex as a function of its two parts (`special_values` takes one)."""
    @functools.wraps(function)
    def applied(x, y):
        return function(complex(x, y))
    return applied


_SQRT, _EXP, _LOG = of_parts(cmath.sqrt), of_parts(cmath.exp), of_parts(cmath.log)


ROUTINES = {"complex_new": complex_new, "cmath_phase": cmath_phase, "cmath_abs": cmath_abs,
            "cmath_rect": cmath_rect, "cmath_sqrt": cmath_sqrt, "cmath_exp": cmath_exp,
            "cmath_log": cmath_log, "cmath_log_base": cmath_log, "cmath_log10": cmath_log10,
            "cmath_isclose": cmath_isclose}
"""The cmath routines of the op table (`Routine(name)`)."""
