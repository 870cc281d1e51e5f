"""Scalar conversions: casts (int(x), float(x), bool(x), the widenings type inference
inserts) and float -> int with CPython's NaN / infinity / range errors; `cast` is the
routine of scalars.py's table and what fused.py's NumPy cast falls back to.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import BOOL, Type
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
    if target.is_float:
        if source.is_float:
            return builder.fpext(x, ty) if ty == DOUBLE else builder.fptrunc(x, ty)
        return builder.uitofp(x, ty) if source == BOOL else builder.sitofp(x, ty)
    if source == BOOL:
        return builder.zext(x, ty)
    if source.is_int:
        return builder.sext(x, ty) if x.type.width < ty.width else builder.trunc(x, ty)
    return float_to_int(em, node, x, target)


def float_to_int(em: FunctionEmitter, node: Node, x: ir.Value, target: Type) -> ir.Value:
    """Truncate toward zero; NaN is a ValueError, infinities and out-of-range OverflowError."""
    builder, ty = em.builder, lltype(target)
    if x.type != DOUBLE:
        x = builder.fpext(x, DOUBLE)
    low, high = -(2.0 ** (ty.width - 1)), 2.0 ** (ty.width - 1)
    # trunc(x) >= low: for int64 no double lies strictly between low - 1 and low.
    above = (compare_const(builder, ">=", x, low) if low - 1.0 == low
             else compare_const(builder, ">", x, low - 1.0))
    in_range = builder.and_(above, compare_const(builder, "<", x, high))
    em.fail_if_any(node, [(is_nan(builder, x), "ValueError", msg.NAN_TO_INT),
                          (is_inf(builder, x), "OverflowError", msg.INF_TO_INT),
                          (builder.not_(in_range), "OverflowError",
                           msg.INT_RANGE.format(bits=ty.width))])
    return builder.fptosi(x, ty)
