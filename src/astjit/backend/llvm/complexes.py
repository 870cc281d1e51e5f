"""Routine lowerings of complex arithmetic and functions, as NumPy computes them.

A complex is a vector of its two parts (lltypes.py), so `+`, `-` and unary `-` are
the float instructions themselves (the op table names `fadd` ...); these routines
are the rest: `*` by the schoolbook formula, `/` by Smith's method (NumPy's loops:
no spurious overflow, and a zero divisor gives the infinities and NaNs NumPy's do),
`==`/`!=` of both parts, `abs` as `hypot`, the parts, the conjugate, the angle, np.sign.

The elementary functions (`np.exp`, `np.log`, `np.sqrt`, the trigonometric and
hyperbolic functions and their inverses) are calls of the C library's C99 complex
functions (`cexp`, `casinf` ...): NumPy's npymath calls those very functions where
the C library has them (glibc does), so results, branch cuts, signed zeros and
special values are NumPy's bit for bit. The others are NumPy's own formulas
(umath's `nc_log2`, `nc_log10`, `nc_exp2`, `nc_log1p`, `nc_expm1`, npymath's
`npy_cpow`), written here on the parts. complex64 computes with the float
functions (`cexpf`), as NumPy does.
"""
from __future__ import annotations

import contextlib
import functools
import math
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
from llvmlite import ir

from .compare import is_finite, is_inf, is_nan
from .conversions import complex_parts, pack_complex
from .jit.host import host_features
from .lltypes import DOUBLE

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def complex_mul(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """(a + bi)(c + di) = (ac - bd) + (ad + bc)i."""
    return multiply(em.builder, args[0], args[1])


def complex_div(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """Smith's division, as NumPy's `nc_quot` loops."""
    return _smith_div(em.builder, args[0], args[1])


def multiply(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x * y of two complexes of one type (also a reduction's step: np.prod, np.cumprod)."""
    (xr, xi), (yr, yi) = complex_parts(b, x), complex_parts(b, y)
    return pack_complex(b, x.type, b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)),
                        b.fadd(b.fmul(xr, yi), b.fmul(xi, yr)))


def _smith_div(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x / y by Smith's method: scale by the larger part of the divisor; a zero divisor
    divides each part by its magnitude (inf or NaN)."""
    (ar, ai), (br, bi) = complex_parts(b, x), complex_parts(b, y)
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
    return pack_complex(b, x.type, real, imag)


def complex_eq(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    (ar, ai), (br, bi) = complex_parts(b, args[0]), complex_parts(b, args[1])
    return b.and_(b.fcmp_ordered("==", ar, br), b.fcmp_ordered("==", ai, bi))


def complex_ne(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    (ar, ai), (br, bi) = complex_parts(b, args[0]), complex_parts(b, args[1])
    return b.or_(b.fcmp_unordered("!=", ar, br), b.fcmp_unordered("!=", ai, bi))


def complex_abs(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """|z| as NumPy 2 computes it, on arrays and NumPy scalars alike (its SIMD loop,
    `simd_cabsolute`, not C's hypot): of the parts' magnitudes, the larger L times
    sqrt(1 + (S/L)^2) of the smaller S, the square and add one fused multiply-add where
    the CPU has FMA (NumPy's `npyv_muladd`), a multiply and an add elsewhere; an infinite
    part gives inf (a NaN beside it too), else a NaN part NaN; L = 0 or S = inf take the
    ratio as 0. No library call: the loop vectorizes."""
    b = em.builder
    re, im = complex_parts(b, args[0])
    ty = re.type
    fabs = b.module.declare_intrinsic("llvm.fabs", [ty])
    inf, nan = ir.Constant(ty, math.inf), ir.Constant(ty, math.nan)
    zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)
    re, im = b.call(fabs, [re]), b.call(fabs, [im])
    re_inf, im_inf = b.fcmp_ordered("==", re, inf), b.fcmp_ordered("==", im, inf)
    im = b.select(re_inf, inf, im)
    re = b.select(im_inf, inf, re)
    re_number, im_number = b.fcmp_ordered("ord", re, re), b.fcmp_ordered("ord", im, im)
    im = b.select(re_number, im, nan)
    re = b.select(im_number, re, nan)
    larger = b.select(b.fcmp_ordered(">", re, im), re, im)
    smaller = b.select(b.fcmp_ordered("<", im, re), im, re)
    divides = b.not_(b.or_(b.fcmp_ordered("==", larger, zero), b.fcmp_ordered("==", smaller, inf)))
    ratio = b.select(divides, b.fdiv(smaller, larger), zero)
    if _has_fma():
        fma = b.module.declare_intrinsic("llvm.fma", [ty], ir.FunctionType(ty, [ty] * 3))
        squared = b.call(fma, [ratio, ratio, one])
    else:
        squared = b.fadd(b.fmul(ratio, ratio), one)
    root = b.call(b.module.declare_intrinsic("llvm.sqrt", [ty]), [squared])
    return b.fmul(root, larger)


@functools.cache
def _has_fma() -> bool:
    """Whether the host CPU fuses multiply-adds (NumPy's SIMD loops then do)."""
    return "fma" in host_features()


def complex_sign(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.sign(z) as NumPy 2's loop: the parts over C's hypot of them (glibc's hypotf for
    complex64, as npy_hypotf, inline: `_hypotf`); a NaN magnitude gives NaN, NaN; an
    infinite one (an infinite part, or finite parts whose hypot overflowed) +-1 along an
    infinite real part (NaN, NaN where both parts are), else 0 +- 1i (the sign of the
    imaginary part, a NaN's -1); a zero one 0."""
    b = em.builder
    re, im = complex_parts(b, args[0])
    ty = re.type
    if ty == DOUBLE:
        hypot = em.module.globals.get("hypot")
        if hypot is None:
            hypot = ir.Function(em.module, ir.FunctionType(ty, [ty, ty]), "hypot")
            hypot.attributes.add("nounwind")
            hypot.attributes.add("readnone")
        magnitude = b.call(hypot, [re, im])
    else:
        magnitude = _hypotf(b, re, im)
    zero, one, minus = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0), ir.Constant(ty, -1.0)
    nan = ir.Constant(ty, math.nan)
    re_inf, im_inf = is_inf(b, re), is_inf(b, im)
    unit_re = b.select(b.fcmp_ordered(">", re, zero), one, minus)
    unit_im = b.select(b.fcmp_ordered(">", im, zero), one, minus)
    both = b.and_(re_inf, im_inf)
    inf_re = b.select(both, nan, b.select(re_inf, unit_re, zero))
    inf_im = b.select(both, nan, b.select(re_inf, zero, unit_im))
    parts = []
    for part, at_inf in ((re, inf_re), (im, inf_im)):
        value = b.select(b.fcmp_ordered("==", magnitude, zero), zero, b.fdiv(part, magnitude))
        value = b.select(is_inf(b, magnitude), at_inf, value)
        parts.append(b.select(is_nan(b, magnitude), nan, value))
    return pack_complex(b, args[0].type, *parts)


def _hypotf(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """glibc's hypotf, written out so that a loop of it vectorizes (a call would not): the
    square root of the sum of the squares in double (exact squares of floats: nothing
    over- or underflows) rounded to float; inf where a part is infinite unless either is
    a signaling NaN (then NaN, x + y), as glibc's special case."""
    wide_x, wide_y = b.fpext(x, DOUBLE), b.fpext(y, DOUBLE)
    sqrt = b.module.declare_intrinsic("llvm.sqrt", [DOUBLE])
    root = b.call(sqrt, [b.fadd(b.fmul(wide_x, wide_x), b.fmul(wide_y, wide_y))])
    quiet = b.not_(b.or_(_signaling(b, x), _signaling(b, y)))
    infinite = b.and_(b.or_(is_inf(b, x), is_inf(b, y)), quiet)
    return b.select(infinite, ir.Constant(x.type, math.inf), b.fptrunc(root, x.type))


def _signaling(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Whether float `x` is a signaling NaN: a NaN whose quiet bit (the mantissa's top) is 0."""
    bits = b.bitcast(x, ir.IntType(32))
    quiet_bit = b.and_(bits, ir.Constant(ir.IntType(32), 0x400000))
    return b.and_(is_nan(b, x), b.icmp_unsigned("==", quiet_bit, ir.Constant(ir.IntType(32), 0)))


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


# ---- the C library's complex functions ------------------------------------------------

@functools.cache
def _packed_float_abi() -> bool:
    """Whether a `float complex` travels packed in one vector register (x86-64's SysV ABI:
    clang declares `<2 x float> @cexpf(<2 x float>)`); elsewhere (AArch64) it is two floats,
    as a `double complex` is everywhere: `{double, double} @cexp(double, double)`."""
    return llvm.get_process_triple().startswith("x86_64")


def call_c99(em: FunctionEmitter, name: str, zs: list[ir.Value]) -> ir.Value:
    """The C library's complex function `name` (`cexp`; `cexpf` for complex64) of `zs`,
    called as C passes complex numbers; readnone: compiled code never reads errno."""
    b = em.builder
    ty = zs[0].type
    part = ty.element
    c_name = name if part == DOUBLE else name + "f"
    packed = part != DOUBLE and _packed_float_abi()
    fn = em.module.globals.get(c_name)
    if fn is None:
        if packed:
            fnty = ir.FunctionType(ty, [ty] * len(zs))
        else:
            fnty = ir.FunctionType(ir.LiteralStructType([part, part]), [part] * (2 * len(zs)))
        fn = ir.Function(em.module, fnty, c_name)
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
    if packed:
        return b.call(fn, zs)
    result = b.call(fn, [p for z in zs for p in complex_parts(b, z)])
    return pack_complex(b, ty, b.extract_value(result, 0), b.extract_value(result, 1))


def _c99(name: str):
    """The routine calling the C library's `name` on the operand."""
    def routine(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
        return call_c99(em, name, args)
    routine.__doc__ = f"NumPy's complex function: the C library's `{name}` (npymath's)."
    return routine


C99_FUNCTIONS = ("cexp", "clog", "csqrt", "csin", "ccos", "ctan", "csinh", "ccosh", "ctanh",
                 "casin", "cacos", "catan", "casinh", "cacosh", "catanh")
"""The complex functions NumPy takes from the C library (npymath's `npy_cexp` ... call
them where it has them), each the op table's `Routine(name)`."""


def _scaled(em: FunctionEmitter, z: ir.Value, factor: float) -> ir.Value:
    """Both parts of z times the real constant `factor` (rounded to z's part type)."""
    b = em.builder
    real, imag = complex_parts(b, z)
    k = ir.Constant(real.type, factor)
    return pack_complex(b, z.type, b.fmul(real, k), b.fmul(imag, k))


def complex_log2(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """umath's nc_log2: clog(z), both parts times log2(e)."""
    return _scaled(em, call_c99(em, "clog", args), 1.0 / math.log(2.0))


def complex_log10(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """umath's nc_log10: clog(z), both parts times log10(e) (not C's clog10, which rounds
    differently)."""
    return _scaled(em, call_c99(em, "clog", args), math.log10(math.e))


def complex_exp2(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """umath's nc_exp2: cexp of both parts times ln 2."""
    return call_c99(em, "cexp", [_scaled(em, args[0], math.log(2.0))])


@contextlib.contextmanager
def _scalar_math(em: FunctionEmitter):
    """The C library's scalar functions for the calls made inside, never libmvec's (which a
    kernel's `call_libm` and `call_intrinsic` otherwise take, within 4 ulp): NumPy's
    formulas below are held to its results within an ulp or two. The vectorizer still
    widens the rest of the loop."""
    saved, em.numpy_semantics = em.numpy_semantics, False
    try:
        yield
    finally:
        em.numpy_semantics = saved


def complex_log1p(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """umath's nc_log1p: log(hypot(re + 1, im)) + atan2(im, re + 1) i."""
    with _scalar_math(em):
        return _log1p(em, args)


def _log1p(em: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    real, imag = complex_parts(b, args[0])
    shifted = b.fadd(real, ir.Constant(real.type, 1.0))
    magnitude = em.call_libm("hypot", [shifted, imag])
    return pack_complex(b, args[0].type, em.call_intrinsic("llvm.log", [magnitude]),
                        em.call_libm("atan2", [imag, shifted]))


def complex_expm1(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """umath's nc_expm1: expm1(re) cos(im) - 2 sin(im/2)^2 + exp(re) sin(im) i."""
    with _scalar_math(em):
        return _expm1(em, args)


EXPM1F_FINITE = 88.72283172607422
"""The largest float whose expm1 is finite in float."""


def _expm1(em: FunctionEmitter, args: list[ir.Value]) -> ir.Value:
    """The real part's two terms cancel where expm1(re) cos(im) is near 2 sin(im/2)^2 (at
    1.9+23.75j in complex64, NumPy's float formula is 4 ulps from the exact value): a
    complex64's real part is computed in double and rounded, within half an ulp of the
    exact value there. A result that rounds to zero is the difference of the two terms
    rounded to float, as NumPy's: +0 where 2 sin(im/2)^2 underflows float (at 1e-30j, where
    the double difference is a tiny negative number). Where expm1(re) overflows float
    (re > `EXPM1F_FINITE`) it is NumPy's float formula, inf times cos(im): an infinity of
    cos(im)'s sign (NaN for an infinite or NaN im), as NumPy's result, where the double
    formula could round to a finite value."""
    b = em.builder
    real, imag = complex_parts(b, args[0])
    wide_real, wide_imag = (b.fpext(real, DOUBLE), b.fpext(imag, DOUBLE)) \
        if real.type != DOUBLE else (real, imag)
    half = em.call_intrinsic("llvm.sin", [b.fmul(wide_imag, ir.Constant(DOUBLE, 0.5))])
    twice_sq = b.fmul(b.fmul(ir.Constant(DOUBLE, 2.0), half), half)
    cos = em.call_intrinsic("llvm.cos", [wide_imag])
    product = b.fmul(em.call_libm("expm1", [wide_real]), cos)
    re = b.fsub(product, twice_sq)
    if real.type != DOUBLE:
        narrow = b.fptrunc(re, real.type)
        zero = b.fsub(b.fptrunc(product, real.type), b.fptrunc(twice_sq, real.type))
        narrow = b.select(b.fcmp_ordered("==", narrow, ir.Constant(real.type, 0.0)), zero, narrow)
        overflows = b.fcmp_ordered(">", real, ir.Constant(real.type, EXPM1F_FINITE))
        at_inf = b.fmul(ir.Constant(real.type, math.inf), b.fptrunc(cos, real.type))
        re = b.select(overflows, at_inf, narrow)
    im = b.fmul(em.call_intrinsic("llvm.exp", [real]), em.call_intrinsic("llvm.sin", [imag]))
    return pack_complex(b, args[0].type, re, im)


def complex_isnan(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.isnan of a complex: either part NaN."""
    real, imag = complex_parts(em.builder, args[0])
    return em.builder.or_(is_nan(em.builder, real), is_nan(em.builder, imag))


def complex_isinf(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.isinf of a complex: either part infinite (inf + nan i is infinite)."""
    real, imag = complex_parts(em.builder, args[0])
    return em.builder.or_(is_inf(em.builder, real), is_inf(em.builder, imag))


def complex_isfinite(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.isfinite of a complex: both parts finite."""
    real, imag = complex_parts(em.builder, args[0])
    return em.builder.and_(is_finite(em.builder, real), is_finite(em.builder, imag))


# ---- np.power: npymath's npy_cpow -----------------------------------------------------

def complex_pow(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """`a ** b` of complexes, as npymath's npy_cpow: b == 0 gives 1; a == 0 gives 0 for
    re(b) > 0, else NaN + NaN i; a real integer b in (-100, 100) multiplies (square and
    multiply, then 1 / that by Smith's division for a negative b); the rest is the C
    library's cpow. One function per complex type, called (the integer power loops)."""
    fn = _cpow_function(em.module, args[0].type)
    if not node.attrs.get("sqrt_at_half"):
        return em.builder.call(fn, args)
    # `z ** 0.5` of an array and a Python float is NumPy's csqrt (ops/scalar.py _pow_operands)
    b = em.builder
    br, bi = complex_parts(b, args[1])
    half = b.and_(b.fcmp_ordered("==", br, ir.Constant(br.type, 0.5)),
                  b.fcmp_ordered("==", bi, ir.Constant(bi.type, 0.0)))
    with b.if_else(half) as (then, otherwise):
        with then:
            root, root_block = call_c99(em, "csqrt", args[:1]), b.block
        with otherwise:
            power, power_block = b.call(fn, args), b.block
    result = b.phi(args[0].type)
    result.add_incoming(root, root_block)
    result.add_incoming(power, power_block)
    return result


def _cpow_function(module: ir.Module, ty: ir.Type) -> ir.Function:
    name = f"astjit.cpow.{ty.element}"
    fn = module.globals.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(ty, [ty, ty]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, e = fn.args
    part = ty.element
    zero, one = ir.Constant(part, 0.0), ir.Constant(part, 1.0)
    nan = ir.Constant(part, math.nan)
    (ar, ai), (br, bi) = complex_parts(b, a), complex_parts(b, e)
    one_c = pack_complex(b, ty, one, zero)

    def ret_if(cond, value_of):
        then, rest = fn.append_basic_block(), fn.append_basic_block()
        b.cbranch(cond, then, rest)
        b.position_at_end(then)
        b.ret(value_of())
        b.position_at_end(rest)

    def both_zero(x, y):
        return b.and_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", y, zero))

    ret_if(both_zero(br, bi), lambda: one_c)
    ret_if(both_zero(ar, ai), lambda: b.select(
        b.fcmp_ordered(">", br, zero), pack_complex(b, ty, zero, zero),
        pack_complex(b, ty, nan, nan)))
    i64 = ir.IntType(64)
    small = b.and_(b.fcmp_ordered(">", br, ir.Constant(part, -100.0)),
                   b.fcmp_ordered("<", br, ir.Constant(part, 100.0)))
    integral = b.and_(b.fcmp_ordered("==", bi, zero), small)
    n = b.fptosi(b.select(integral, br, zero), i64)
    integral = b.and_(integral, b.fcmp_ordered("==", b.sitofp(n, part), br))
    power, general = fn.append_basic_block("power"), fn.append_basic_block("general")
    b.cbranch(integral, power, general)

    b.position_at_end(general)
    libm = _LibmShim(b, module)
    b.ret(call_c99(libm, "cpow", [a, e]))

    b.position_at_end(power)
    mul = functools.partial(multiply, b)
    ret_if(b.icmp_signed("==", n, ir.Constant(i64, 1)), lambda: a)
    ret_if(b.icmp_signed("==", n, ir.Constant(i64, 2)), lambda: mul(a, a))
    ret_if(b.icmp_signed("==", n, ir.Constant(i64, 3)), lambda: mul(a, mul(a, a)))
    # square and multiply over |n|'s bits, from aa = 1 + 0i
    count = b.select(b.icmp_signed("<", n, ir.Constant(i64, 0)), b.neg(n), n)
    entry = b.block
    loop, done = fn.append_basic_block("bits"), fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    acc, base, mask = b.phi(ty), b.phi(ty), b.phi(i64)
    acc.add_incoming(one_c, entry)
    base.add_incoming(a, entry)
    mask.add_incoming(ir.Constant(i64, 1), entry)
    bit = b.icmp_signed("!=", b.and_(count, mask), ir.Constant(i64, 0))
    acc_next = b.select(bit, mul(acc, base), acc)
    mask_next = b.shl(mask, ir.Constant(i64, 1))
    base_next = mul(base, base)
    acc.add_incoming(acc_next, loop)
    base.add_incoming(base_next, loop)
    mask.add_incoming(mask_next, loop)
    b.cbranch(b.icmp_signed("<", count, mask_next), done, loop)
    b.position_at_end(done)
    inverse = _smith_div(b, one_c, acc_next)
    b.ret(b.select(b.fcmp_ordered("<", br, zero), inverse, acc_next))
    return fn


class _LibmShim:
    """What `call_c99` uses of an emitter (its builder and module), for the code of a
    function this module defines itself."""

    def __init__(self, builder: ir.IRBuilder, module: ir.Module):
        self.builder, self.module = builder, module


ROUTINES = {"complex_mul": complex_mul, "complex_div": complex_div, "complex_eq": complex_eq,
            "complex_ne": complex_ne, "complex_abs": complex_abs, "complex_real": complex_real,
            "complex_imag": complex_imag, "real_imag": real_imag, "complex_conj": complex_conj,
            "complex_angle": complex_angle, "real_angle": real_angle, "complex_sign": complex_sign,
            **{name: _c99(name) for name in C99_FUNCTIONS},
            "complex_log2": complex_log2, "complex_log10": complex_log10,
            "complex_exp2": complex_exp2, "complex_log1p": complex_log1p,
            "complex_expm1": complex_expm1, "complex_isnan": complex_isnan,
            "complex_isinf": complex_isinf, "complex_isfinite": complex_isfinite,
            "complex_pow": complex_pow}
"""The complex routines of the op table (`Routine(name)`)."""
