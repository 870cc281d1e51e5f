"""Comparisons, truth tests and float classification as LLVM IR, with Python's semantics.

Float comparisons are ordered (false when either side is NaN), as Python's
`<` is; a float's truth is `x != 0.0` unordered (NaN is true), as `bool(x)` is.
"""
from __future__ import annotations

from llvmlite import ir


def is_float(value: ir.Value) -> bool:
    return isinstance(value.type, (ir.DoubleType, ir.FloatType))


def const_like(value: ir.Value, number) -> ir.Constant:
    """`number` as a constant of `value`'s type."""
    return ir.Constant(value.type, float(number) if is_float(value) else int(number))


def compare(builder: ir.IRBuilder, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
    """Python's `a op b` on two numbers of one type: ordered for floats, signed for ints,
    unsigned for bools (True is 1, not the i1 -1)."""
    if is_float(a):
        return builder.fcmp_ordered(op, a, b)
    if a.type.width == 1:
        return builder.icmp_unsigned(op, a, b)
    return builder.icmp_signed(op, a, b)


def compare_const(builder: ir.IRBuilder, op: str, a: ir.Value, number) -> ir.Value:
    return compare(builder, op, a, const_like(a, number))


def truth(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Python's `bool(x)`: x != 0, NaN being true; a complex (a vector of its parts) is
    true where either part is."""
    if isinstance(x.type, ir.VectorType):
        parts = [builder.extract_element(x, ir.Constant(ir.IntType(32), i)) for i in (0, 1)]
        return builder.or_(truth(builder, parts[0]), truth(builder, parts[1]))
    if is_float(x):
        return builder.fcmp_unordered("!=", x, const_like(x, 0))
    return builder.icmp_unsigned("!=", x, const_like(x, 0))


def is_nan(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return builder.fcmp_unordered("uno", x, x)


def own_nan(builder: ir.IRBuilder, operands: list[ir.Value], result: ir.Value) -> ir.Value:
    """`result`, but a positive NaN where an operand is a NaN: CPython's `Py_NAN`, where a C
    function may return the operand's NaN, with its sign (`math.copysign` shows it)."""
    either = is_nan(builder, operands[0])
    for x in operands[1:]:
        either = builder.or_(either, is_nan(builder, x))
    return builder.select(either, ir.Constant(result.type, float("nan")), result)


def _magnitude(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    fabs = builder.module.declare_intrinsic("llvm.fabs", [x.type])
    return builder.call(fabs, [x])


def is_inf(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return builder.fcmp_ordered("==", _magnitude(builder, x), const_like(x, float("inf")))


def is_finite(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Neither infinite nor NaN."""
    return builder.fcmp_ordered("<", _magnitude(builder, x), const_like(x, float("inf")))


def all_of(builder: ir.IRBuilder, conds: list[ir.Value]) -> ir.Value:
    """The conjunction of i1 values."""
    result = conds[0]
    for cond in conds[1:]:
        result = builder.and_(result, cond)
    return result
