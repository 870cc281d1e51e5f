"""Scalar conversions: casts (int(x), float(x), bool(x), the widenings type inference
inserts) and float -> int with CPython's NaN / infinity / range errors; `cast` is the
routine of scalars.py's table and what fused.py's NumPy cast falls back to.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
from llvmlite import ir

from ...ir.types import BOOL, C64, F32, F64, I64, U64, ScalarType, Type
from . import messages as msg
from .compare import compare_const, is_inf, is_nan, truth
from .lltypes import DOUBLE, lltype

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def cast(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """int(x), float(x), bool(x) and the implicit widenings type inference inserts."""
    (x,) = args
    source, target = node.inputs[0].type, node.attrs["to"]
    builder, ty = em.builder, lltype(target)
    if source == target:
        return x
    if target == BOOL:
        return truth(builder, x)
    if source.is_complex or target.is_complex:
        return complex_cast(builder, x, source, target)
    if target.is_float:
        if source.is_float:
            return builder.fpext(x, ty) if ty == DOUBLE else builder.fptrunc(x, ty)
        return builder.uitofp(x, ty) if source.kind in "bu" else builder.sitofp(x, ty)
    return int_cast(builder, x, source, target) if source.kind in "biu" else \
        float_to_int(em, node, x, target)


def int_cast(builder: ir.IRBuilder, x: ir.Value, source: ScalarType,
             target: ScalarType) -> ir.Value:
    """An int (or bool) as another int: widened by its own sign (zero for unsigned ones and
    bools), narrowed by dropping high bits (NumPy's wrap-around)."""
    ty = lltype(target)
    if x.type.width == ty.width:
        return x
    if x.type.width > ty.width:
        return builder.trunc(x, ty)
    return builder.zext(x, ty) if source.kind in "bu" else builder.sext(x, ty)


def complex_cast(builder: ir.IRBuilder, x: ir.Value, source: ScalarType,
                 target: ScalarType) -> ir.Value:
    """Casts into and out of complex, as NumPy's: a real becomes (x, 0); a complex to a
    real keeps its real part (NumPy warns, ComplexWarning), to bool tests both parts."""
    if source.is_complex and target.is_complex:
        part = F32 if target == C64 else F64
        parts = [cast_value(builder, p, F32 if source == C64 else F64, part)
                 for p in complex_parts(builder, x)]
        return pack_complex(builder, lltype(target), *parts)
    if source.is_complex:
        real, imag = complex_parts(builder, x)
        if target == BOOL:
            return builder.or_(truth(builder, real), truth(builder, imag))
        return cast_value(builder, real, F32 if source == C64 else F64, target)
    part = F32 if target == C64 else F64
    real = cast_value(builder, x, source, part)
    return pack_complex(builder, lltype(target), real, ir.Constant(real.type, 0.0))


def _float_to_uint64(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """A float as uint64 the way C compilers convert on x86-64 (NumPy's cast): below 2**63
    as a signed conversion (-1.0 gives 2**64 - 1), else 2**63 less and the top bit set."""
    top = ir.Constant(x.type, 2.0 ** 63)
    low = builder.fptosi(x, lltype(I64))
    high = builder.xor(builder.fptosi(builder.fsub(x, top), lltype(I64)),
                       ir.Constant(lltype(I64), -(2 ** 63)))
    return builder.select(builder.fcmp_ordered("<", x, top), low, high)


def complex_parts(builder: ir.IRBuilder, z: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The real and imaginary parts of a complex (lltypes.py: a vector of two)."""
    return (builder.extract_element(z, ir.Constant(ir.IntType(32), 0)),
            builder.extract_element(z, ir.Constant(ir.IntType(32), 1)))


def pack_complex(builder: ir.IRBuilder, ty: ir.Type, real: ir.Value, imag: ir.Value) -> ir.Value:
    """The complex of type `ty` with these parts."""
    first = builder.insert_element(ir.Constant(ty, None), real, ir.Constant(ir.IntType(32), 0))
    return builder.insert_element(first, imag, ir.Constant(ir.IntType(32), 1))


def build_by_parts(builder: ir.IRBuilder, method: str, extra: tuple, args: list[ir.Value]) -> ir.Value:
    """`builder.<method>(*extra, *args)`, done part by part where the operands are complex
    (`+`, `-`, unary `-`, `select` of complexes): the loop vectorizer widens scalar
    instructions but gives up on a loop with a vector-typed one, so one `<2 x double>`
    fadd kept a whole fused kernel scalar, calls and all (np.angle's atan2 after a complex
    `+`). Real and int operands (a select's condition) are taken as they are."""
    ty = next((a.type for a in args if isinstance(a.type, ir.VectorType)), None)
    if ty is None:
        return getattr(builder, method)(*extra, *args)
    split = [complex_parts(builder, a) if isinstance(a.type, ir.VectorType) else (a, a) for a in args]
    real, imag = (getattr(builder, method)(*extra, *(pair[i] for pair in split)) for i in (0, 1))
    return pack_complex(builder, ty, real, imag)


def cast_value(builder: ir.IRBuilder, x: ir.Value, source: ScalarType,
               target: ScalarType) -> ir.Value:
    """NumPy's cast of a real scalar (no error checks: a float out of an int's range is
    what the conversion instruction gives, as NumPy's is)."""
    ty = lltype(target)
    if source == target:
        return x
    if target == BOOL:
        return truth(builder, x)
    if target.is_float:
        if source.is_float:
            return builder.fpext(x, ty) if target == F64 else builder.fptrunc(x, ty)
        return builder.uitofp(x, ty) if source.kind in "bu" else builder.sitofp(x, ty)
    if source.is_float:
        if target == U64:
            return _float_to_uint64(builder, x)
        wide = builder.fptosi(x, lltype(I64))
        return wide if target.bits == 64 else builder.trunc(wide, ty)
    return int_cast(builder, x, source, target)


def float_to_int(em: FunctionEmitter, node: Node, x: ir.Value, target: Type) -> ir.Value:
    """Truncate toward zero; NaN is a ValueError, infinities and out-of-range OverflowError.

    The hot path is the conversion and one test that is false for every value in range:
    on x86-64, whose conversion instruction answers the lowest int for NaN, the
    infinities and out-of-range values, `result == -2**63` (`cvttsd2si`); elsewhere, and
    for narrower ints, `|x| < 2**(bits-1)` before it. In a loop that is one compare and
    a branch never taken, and nothing for LLVM to classify per element. What fails the
    test is sorted out on the cold path, one exit per error: NaN, an infinity, out of
    range, or else a value in range after all (the lowest int itself, and for narrower
    ints the values down to just above it minus one, which truncate to it).

    On x86-64 the test waits for the next node (`FunctionEmitter.defer_check`): where
    that indexes an array with the result (`a[int(x)]`), the index check's own test
    also fails for -2**63, and the conversion's test moves onto its cold path
    (`array_layout._wrapped`), before the negative-index rule and the IndexError.
    """
    builder, ty = em.builder, lltype(target)
    if x.type != DOUBLE:
        x = builder.fpext(x, DOUBLE)
    if ty.width == 64 and _indefinite_conversion():
        vector = builder.insert_element(ir.Constant(_TWO_DOUBLES, None), x, _I32_ZERO)
        convert = builder.module.declare_intrinsic(
            "llvm.x86.sse2.cvttsd2si64", fnty=ir.FunctionType(ty, [_TWO_DOUBLES]))
        result = builder.call(convert, [vector])

        def check(rejoin: bool) -> None:
            b = em.builder
            hot = b.block
            with b.if_then(compare_const(b, "==", result, -(2 ** 63)), likely=False):
                _fail_unless_in_range(em, node, x, ty.width)
                cold = b.block
            if rejoin:
                # The cold path's result is the lowest int, said as a constant: a second
                # use, for which the code generator keeps the constant in a register and
                # the hot path's test is one compare (else x86 makes it a negation and an
                # overflow test).
                merged = b.phi(ty)
                merged.add_incoming(result, hot)
                merged.add_incoming(ir.Constant(ty, -(2 ** 63)), cold)
                em.values[node.outputs[0]] = merged
        em.defer_check(node, result, check)  # maybe onto the cold path of an index check
        return result
    magnitude = builder.call(builder.module.declare_intrinsic("llvm.fabs", [DOUBLE]), [x])
    suspect = builder.not_(compare_const(builder, "<", magnitude, 2.0 ** (ty.width - 1)))
    with builder.if_then(suspect, likely=False):
        _fail_unless_in_range(em, node, x, ty.width)
    return builder.fptosi(x, ty)


def _fail_unless_in_range(em: FunctionEmitter, node: Node, x: ir.Value, bits: int) -> None:
    """Python's error for `int(x)` into `bits` bits, if `x` has one."""
    builder = em.builder
    low, high = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
    em.fail_if(node, is_nan(builder, x), "ValueError", msg.NAN_TO_INT)
    em.fail_if(node, is_inf(builder, x), "OverflowError", msg.INF_TO_INT)
    # trunc(x) >= low: for int64 no double lies strictly between low - 1 and low.
    above = (compare_const(builder, ">=", x, low) if low - 1.0 == low
             else compare_const(builder, ">", x, low - 1.0))
    in_range = builder.and_(above, compare_const(builder, "<", x, high))
    em.fail_if(node, builder.not_(in_range), "OverflowError", msg.INT_RANGE.format(bits=bits))


_TWO_DOUBLES = ir.VectorType(DOUBLE, 2)
_I32_ZERO = ir.Constant(ir.IntType(32), 0)


@functools.cache
def _indefinite_conversion() -> bool:
    """Whether code runs on x86-64, where `cvttsd2si` answers -2**63 for what has no int64."""
    return llvm.get_process_triple().startswith("x86_64")
