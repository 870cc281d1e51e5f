"""Routine lowerings of cmath's trigonometric and hyperbolic functions and their inverses,
as CPython 3.11's Modules/cmathmodule.c computes them, bit for bit on the same C library.

sinh, cosh, tanh, asinh, acos, acosh and atanh are computed here; the others are their
partners at i z, as cmath computes them (errors included): sin z = -i sinh(i z),
cos z = cosh(i z), tan z = -i tanh(i z), asin z = -i asinh(i z), atan z = -i atanh(i z).
A non-finite part takes cmath's table of special values (cmath_functions.special_values),
but for the real infinities with a finite nonzero imaginary part that sinh, cosh and
tanh compute. Errors are those CPython's errno leaves: ValueError ("math domain error")
for an infinite imaginary part of sinh and cosh (beside a real part that is no NaN) and
of tanh (beside a finite one), and for atanh(+-1); OverflowError ("math range error")
where sinh or cosh of finite parts overflows. The inverse functions raise nowhere else.
"""
from __future__ import annotations

import cmath
import math
import sys
from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from . import messages as msg
from .cmath_functions import LARGE, LOG_LARGE, c_sqrt, of_parts, special_values, table_value
from .compare import is_finite, is_inf
from .conversions import complex_parts, pack_complex
from .lltypes import DOUBLE
from .python_complex import COMPLEX, copysign, fabs, libm

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


class Outcome(NamedTuple):
    """A function's value and the errno it leaves: EDOM and ERANGE (i1 values, or None
    where the function never sets it)."""
    value: ir.Value
    edom: ir.Value | None = None
    erange: ir.Value | None = None


def _const(value: float) -> ir.Constant:
    return ir.Constant(DOUBLE, value)


_TWO_LN2 = 2.0 * math.log(2.0)
_SQRT_LARGE = math.sqrt(LARGE)
"""cmath's CM_SQRT_LARGE_DOUBLE: past it atanh(z) is taken as 1/z +- i pi/2."""
_SQRT_DBL_MIN = math.sqrt(sys.float_info.min)


def _times_i(b: ir.IRBuilder, z: ir.Value) -> ir.Value:
    re, im = complex_parts(b, z)
    return pack_complex(b, COMPLEX, b.fneg(im), re)


def _times_minus_i(b: ir.IRBuilder, z: ir.Value) -> ir.Value:
    re, im = complex_parts(b, z)
    return pack_complex(b, COMPLEX, im, b.fneg(re))


def _special(b: ir.IRBuilder, name: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """cmath.<name>'s special value for the classes of x and y."""
    return table_value(b, f"astjit.cmath.{name}", special_values(of_parts(getattr(cmath, name))),
                       x, y)


def _sinh_or_cosh(b: ir.IRBuilder, z: ir.Value, name: str) -> Outcome:
    """cmath's sinh or cosh (`name`): (cos y f(x), sin y g(x)) for (f, g) = (sinh, cosh)
    or (cosh, sinh), with x - sign(x) and a factor e past log(DBL_MAX / 4); an infinite x
    with a finite nonzero y infinities signed as cos y and sin y (sinh's real part, cosh's
    imaginary one negated for x = -inf)."""
    x, y = complex_parts(b, z)
    first, second = ("sinh", "cosh") if name == "sinh" else ("cosh", "sinh")
    cos, sin = libm(b, "cos", [y]), libm(b, "sin", [y])
    large = b.fcmp_ordered(">", fabs(b, x), _const(LOG_LARGE))
    shifted = b.select(large, b.fsub(x, copysign(b, _const(1.0), x)), x)
    parts = [b.fmul(cos, libm(b, first, [shifted])), b.fmul(sin, libm(b, second, [shifted]))]
    e = _const(math.e)
    re, im = (b.select(large, b.fmul(part, e), part) for part in parts)
    signed = [copysign(b, _const(math.inf), cos), copysign(b, _const(math.inf), sin)]
    negated = 0 if name == "sinh" else 1
    signed[negated] = b.select(b.fcmp_ordered(">", x, _const(0.0)), signed[negated],
                               b.fneg(signed[negated]))
    x_finite, y_finite = is_finite(b, x), is_finite(b, y)
    finite = b.and_(x_finite, y_finite)
    infinite_x = b.and_(is_inf(b, x), b.and_(y_finite, b.fcmp_ordered("!=", y, _const(0.0))))
    value = b.select(finite, pack_complex(b, COMPLEX, re, im),
                     b.select(infinite_x, pack_complex(b, COMPLEX, *signed),
                              _special(b, name, x, y)))
    edom = b.and_(b.not_(finite), b.and_(is_inf(b, y), b.fcmp_ordered("ord", x, x)))
    erange = b.and_(finite, b.or_(is_inf(b, re), is_inf(b, im)))
    return Outcome(value, edom, erange)


def c_sinh(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    return _sinh_or_cosh(b, z, "sinh")


def c_cosh(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    return _sinh_or_cosh(b, z, "cosh")


def c_tanh(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    """cmath's tanh: tx = tanh x, ty = tan y, c = 1 / cosh x, d = 1 + (tx ty)^2,
    (tx (1 + ty^2) / d, ty / d c c); past log(DBL_MAX / 4) (sign x, 4 sin y cos y e^-2|x|);
    an infinite x with a finite nonzero y (+-1, 0 signed as 2 sin y cos y); ValueError for
    an infinite y beside a finite x."""
    x, y = complex_parts(b, z)
    one = _const(1.0)
    tx, ty = libm(b, "tanh", [x]), libm(b, "tan", [y])
    cx = b.fdiv(one, libm(b, "cosh", [x]))
    txty = b.fmul(tx, ty)
    denom = b.fadd(one, b.fmul(txty, txty))
    usual = pack_complex(b, COMPLEX, b.fdiv(b.fmul(tx, b.fadd(one, b.fmul(ty, ty))), denom),
                         b.fmul(b.fmul(b.fdiv(ty, denom), cx), cx))
    cos, sin = libm(b, "cos", [y]), libm(b, "sin", [y])
    ax = fabs(b, x)
    decay = libm(b, "exp", [b.fmul(_const(-2.0), ax)])
    large = pack_complex(b, COMPLEX, copysign(b, one, x),
                         b.fmul(b.fmul(b.fmul(_const(4.0), sin), cos), decay))
    general = b.select(b.fcmp_ordered(">", ax, _const(LOG_LARGE)), large, usual)
    sign = b.select(b.fcmp_ordered(">", x, _const(0.0)), one, _const(-1.0))
    signed = pack_complex(b, COMPLEX, sign,
                          copysign(b, _const(0.0), b.fmul(b.fmul(_const(2.0), sin), cos)))
    x_finite, y_finite = is_finite(b, x), is_finite(b, y)
    finite = b.and_(x_finite, y_finite)
    infinite_x = b.and_(is_inf(b, x), b.and_(y_finite, b.fcmp_ordered("!=", y, _const(0.0))))
    value = b.select(finite, general,
                     b.select(infinite_x, signed, _special(b, "tanh", x, y)))
    return Outcome(value, b.and_(is_inf(b, y), x_finite))


def _inverse(b: ir.IRBuilder, z: ir.Value, name: str, large: ir.Value,
             usual: ir.Value) -> Outcome:
    """cmath.<name> of finite parts: its `large` form past DBL_MAX / 4, else `usual`; of a
    non-finite part its special value. It never raises."""
    x, y = complex_parts(b, z)
    past = b.or_(b.fcmp_ordered(">", fabs(b, x), _const(LARGE)),
                 b.fcmp_ordered(">", fabs(b, y), _const(LARGE)))
    finite = b.and_(is_finite(b, x), is_finite(b, y))
    return Outcome(b.select(finite, b.select(past, large, usual), _special(b, name, x, y)))


def _log_of_large(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """log(hypot(x/2, y/2)) + 2 ln 2: log 2|z| of a large z, as cmath writes it."""
    two = _const(2.0)
    h = libm(b, "hypot", [b.fdiv(x, two), b.fdiv(y, two)])
    return b.fadd(libm(b, "log", [h]), _const(_TWO_LN2))


def _sqrt_of(b: ir.IRBuilder, re: ir.Value, im: ir.Value) -> tuple[ir.Value, ir.Value]:
    return complex_parts(b, c_sqrt(b, pack_complex(b, COMPLEX, re, im)))


def c_asinh(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    """cmath's asinh: s1 = sqrt(1 + y - i x), s2 = sqrt(1 - y + i x),
    (asinh(Re s1 Im s2 - Re s2 Im s1), atan2(y, Re s1 Re s2 - Im s1 Im s2)); large:
    (log 2|z| signed as x, but as -(-x) for y < 0; atan2(y, |x|))."""
    x, y = complex_parts(b, z)
    one = _const(1.0)
    r1, i1 = _sqrt_of(b, b.fadd(one, y), b.fneg(x))
    r2, i2 = _sqrt_of(b, b.fsub(one, y), x)
    usual = pack_complex(b, COMPLEX,
                         libm(b, "asinh", [b.fsub(b.fmul(r1, i2), b.fmul(r2, i1))]),
                         libm(b, "atan2", [y, b.fsub(b.fmul(r1, r2), b.fmul(i1, i2))]))
    log2z = _log_of_large(b, x, y)
    real = b.select(b.fcmp_ordered(">=", y, _const(0.0)), copysign(b, log2z, x),
                    b.fneg(copysign(b, log2z, b.fneg(x))))
    large = pack_complex(b, COMPLEX, real, libm(b, "atan2", [y, fabs(b, x)]))
    return _inverse(b, z, "asinh", large, usual)


def c_acos(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    """cmath's acos: s1 = sqrt(1 - x - i y), s2 = sqrt(1 + x + i y),
    (2 atan2(Re s1, Re s2), asinh(Re s2 Im s1 - Im s2 Re s1)); large:
    (atan2(|y|, x), log 2|z| signed as -y)."""
    x, y = complex_parts(b, z)
    one, two = _const(1.0), _const(2.0)
    r1, i1 = _sqrt_of(b, b.fsub(one, x), b.fneg(y))
    r2, i2 = _sqrt_of(b, b.fadd(one, x), y)
    usual = pack_complex(b, COMPLEX, b.fmul(two, libm(b, "atan2", [r1, r2])),
                         libm(b, "asinh", [b.fsub(b.fmul(r2, i1), b.fmul(i2, r1))]))
    log2z = _log_of_large(b, x, y)
    imag = b.select(b.fcmp_ordered("<", x, _const(0.0)), b.fneg(copysign(b, log2z, y)),
                    copysign(b, log2z, b.fneg(y)))
    large = pack_complex(b, COMPLEX, libm(b, "atan2", [fabs(b, y), x]), imag)
    return _inverse(b, z, "acos", large, usual)


def c_acosh(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    """cmath's acosh: s1 = sqrt(x - 1 + i y), s2 = sqrt(x + 1 + i y),
    (asinh(Re s1 Re s2 + Im s1 Im s2), 2 atan2(Im s1, Re s2)); large: (log 2|z|, atan2(y, x))."""
    x, y = complex_parts(b, z)
    one, two = _const(1.0), _const(2.0)
    r1, i1 = _sqrt_of(b, b.fsub(x, one), y)
    r2, i2 = _sqrt_of(b, b.fadd(x, one), y)
    usual = pack_complex(b, COMPLEX,
                         libm(b, "asinh", [b.fadd(b.fmul(r1, r2), b.fmul(i1, i2))]),
                         b.fmul(two, libm(b, "atan2", [i1, r2])))
    large = pack_complex(b, COMPLEX, _log_of_large(b, x, y), libm(b, "atan2", [y, x]))
    return _inverse(b, z, "acosh", large, usual)


def c_atanh(b: ir.IRBuilder, z: ir.Value) -> Outcome:
    """cmath's atanh, of -z negated for x < 0: past sqrt(DBL_MAX / 4) (x / 4 / h / h of
    h = hypot(x/2, y/2), pi/2 signed as y); at x = 1 and |y| < sqrt(DBL_MIN)
    (-log(sqrt|y| / sqrt(hypot(|y|, 2))), atan2(2, -|y|) / 2 signed as y), or (inf, y) and
    ValueError for y = 0; else (log1p(4x / ((1 - x)^2 + y^2)) / 4,
    -atan2(-2y, (1 - x)(1 + x) - y^2) / 2). A non-finite part: its special value."""
    z_re, z_im = complex_parts(b, z)
    zero, one, two = _const(0.0), _const(1.0), _const(2.0)
    negative = b.fcmp_ordered("<", z_re, zero)
    x = b.select(negative, b.fneg(z_re), z_re)
    y = b.select(negative, b.fneg(z_im), z_im)
    ay = fabs(b, y)
    h = libm(b, "hypot", [b.fdiv(x, two), b.fdiv(y, two)])
    far = pack_complex(b, COMPLEX, b.fdiv(b.fdiv(b.fdiv(x, _const(4.0)), h), h),
                       copysign(b, _const(math.pi / 2.0), y))
    sqrt = b.module.declare_intrinsic("llvm.sqrt", [DOUBLE])
    ratio = b.fdiv(b.call(sqrt, [ay]), b.call(sqrt, [libm(b, "hypot", [ay, two])]))
    near_one = pack_complex(b, COMPLEX, b.fneg(libm(b, "log", [ratio])),
                            copysign(b, b.fdiv(libm(b, "atan2", [two, b.fneg(ay)]), two), y))
    at_one = pack_complex(b, COMPLEX, _const(math.inf), y)
    one_minus = b.fsub(one, x)
    v = b.fdiv(b.fmul(_const(4.0), x), b.fadd(b.fmul(one_minus, one_minus), b.fmul(ay, ay)))
    log1p = b.select(b.fcmp_ordered("==", v, zero), v, libm(b, "log1p", [v]))
    angle = libm(b, "atan2", [b.fmul(_const(-2.0), y),
                              b.fsub(b.fmul(one_minus, b.fadd(one, x)), b.fmul(ay, ay))])
    usual = pack_complex(b, COMPLEX, b.fdiv(log1p, _const(4.0)),
                         b.fdiv(b.fneg(angle), two))
    is_far = b.or_(b.fcmp_ordered(">", x, _const(_SQRT_LARGE)),
                   b.fcmp_ordered(">", ay, _const(_SQRT_LARGE)))
    by_one = b.and_(b.fcmp_ordered("==", x, one), b.fcmp_ordered("<", ay, _const(_SQRT_DBL_MIN)))
    y_zero = b.fcmp_ordered("==", ay, zero)
    reduced = b.select(is_far, far, b.select(by_one, b.select(y_zero, at_one, near_one), usual))
    re, im = complex_parts(b, reduced)
    general = b.select(negative, pack_complex(b, COMPLEX, b.fneg(re), b.fneg(im)), reduced)
    finite = b.and_(is_finite(b, z_re), is_finite(b, z_im))
    value = b.select(finite, general, _special(b, "atanh", z_re, z_im))
    edom = b.and_(finite, b.and_(b.not_(is_far), b.and_(by_one, y_zero)))
    return Outcome(value, edom)


def _lowering(core, turned: bool = False, rotated_back: bool = False):
    """The routine of a cmath function computed by `core` (an Outcome of a complex), of
    i z where `turned`, the result times -i where `rotated_back`; its errno raised."""
    def lower(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
        b = em.builder
        outcome = core(b, _times_i(b, args[0]) if turned else args[0])
        cases = [(cond, exc, message) for cond, exc, message in (
            (outcome.edom, "ValueError", msg.MATH_DOMAIN),
            (outcome.erange, "OverflowError", msg.MATH_RANGE)) if cond is not None]
        if cases:
            em.fail_if_any(node, cases)
        return _times_minus_i(b, outcome.value) if rotated_back else outcome.value
    return lower


ROUTINES = {
    "cmath_sinh": _lowering(c_sinh), "cmath_cosh": _lowering(c_cosh),
    "cmath_tanh": _lowering(c_tanh), "cmath_asinh": _lowering(c_asinh),
    "cmath_acos": _lowering(c_acos), "cmath_acosh": _lowering(c_acosh),
    "cmath_atanh": _lowering(c_atanh),
    "cmath_sin": _lowering(c_sinh, turned=True, rotated_back=True),
    "cmath_cos": _lowering(c_cosh, turned=True),
    "cmath_tan": _lowering(c_tanh, turned=True, rotated_back=True),
    "cmath_asin": _lowering(c_asinh, turned=True, rotated_back=True),
    "cmath_atan": _lowering(c_atanh, turned=True, rotated_back=True),
}
"""The cmath routines of the op table (`Routine(name)`): sin z = -i sinh(i z), cos z =
cosh(i z), tan z = -i tanh(i z), asin z = -i asinh(i z), atan z = -i atanh(i z)."""
