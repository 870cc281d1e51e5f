"""A reduction of every element of one C-contiguous array to a number (`np.max(x)`,
`x.sum()`, `np.all(b)`: a `fused` node whose kernel is its one input, every axis
reduced) as a call of the runtime's `astjit.reduce.<kind>.<dtype>` (shared.py):
`reduction_nests.emit_row_reduction` over the array's elements as one row, compiled
once per process by the runtime's pipeline (or linked from the runtime cache), where
that loop in the kernel's own loops module was most of a first call (docs/benchmarks.md).

The call is the C-contiguous version; other layouts take the kernel's nests, in a
general tier only (`FunctionEmitter.fast_only`): a first tier holds the call alone. A
reduction split over threads (parallel.py), of complex numbers, or of a kernel that
computes anything keeps the nests, and so does a reduction of a view that is never
contiguous (`FunctionEmitter.strided`: np.trace's diagonal), whose first tier would leave
for the general one on every call.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.kernels import fused_attrs
from ...ir.ops.reductions import REDUCTIONS, empty_message
from ...ir.types import BOOL, ArrayType, ScalarType
from . import array_layout, new_arrays, parallel, reduction_nests
from .lltypes import ARRAY_DATA, ARRAY_STRIDES, I1, I8, I64_T, element_type, lltype
from .shared import Body, shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def source(em: FunctionEmitter, node: Node) -> int | None:
    """The input a `fused` node reduces whole, element by element, to a number (its
    kernel yields that input's element as it is), or None."""
    spec = fused_attrs(node)
    (kernel,) = node.regions
    if spec.reduce is None or len(node.outputs) != 1 or isinstance(node.outputs[0].type,
                                                                     ArrayType):
        return None
    if spec.ndim == 0 or len(spec.reduce.axes) != spec.ndim or len(kernel.outputs) != 1:
        return None
    yielded = kernel.outputs[0]
    if yielded not in kernel.params:
        return None
    j = kernel.params.index(yielded)
    t = node.inputs[j].type
    if spec.plan[j] != spec.ndim or t.dtype.is_complex or node.outputs[0].type != t.dtype \
            or parallel.in_parallel(em, node) or node.inputs[j] in em.strided:
        return None
    return j


def reduce(em: FunctionEmitter, node: Node, j: int, x: ir.Value, dims: list[ir.Value],
           nests: Callable[[], ir.Value]) -> ir.Value:
    """The reduction of `x`, the node's input `j` (its `source`), whose shape is `dims`:
    the runtime's call where `x` is C-contiguous, else `nests()` (the node's own loops)."""
    b = em.builder
    kind, t = fused_attrs(node).reduce.kind, node.inputs[j].type.dtype
    contiguous = _c_contiguous(b, x, dims)

    def call() -> ir.Value:
        n = new_arrays.size_of_dims(b, dims)
        if REDUCTIONS[kind].empty_raises:
            em.fail_if(node, b.icmp_signed("==", n, _i64(0)), "ValueError", empty_message(kind))
        return b.call(_function(em.module, kind, t), [b.extract_value(x, ARRAY_DATA), n])

    if em.fast_only(contiguous):
        return call()
    slot = em.alloca(lltype(t))
    with b.if_else(contiguous, likely=True) as (then, otherwise):
        with then:
            b.store(call(), slot)
        with otherwise:
            b.store(nests(), slot)
    return b.load(slot)


def _function(module: ir.Module, kind: str, t: ScalarType) -> ir.Function:
    """The runtime's `astjit.reduce.<kind>.<t>`: (data, n) -> the reduction of the n
    elements at data, one apart."""
    def emit(fn, b, data, n):
        body = Body(fn, b)

        def element(indices: list[ir.Value]) -> ir.Value:
            value = b.load(b.gep(data, indices, inbounds=True), align=array_layout.ITEM_SIZES[t])
            return b.icmp_unsigned("!=", value, ir.Constant(I8, 0)) if t == BOOL else value
        b.ret(reduction_nests.emit_row_reduction(body, kind, t, [n], element, []))
    fnty = ir.FunctionType(lltype(t), [element_type(t).as_pointer(), I64_T])
    return shared_function(module, f"astjit.reduce.{kind}.{t}", fnty, emit)


def _c_contiguous(b: ir.IRBuilder, array: ir.Value, dims: list[ir.Value]) -> ir.Value:
    """Whether every axis longer than 1 has its C-order stride (in elements)."""
    ok, stride = ir.Constant(I1, 1), _i64(1)
    for axis in reversed(range(len(dims))):
        have = b.extract_value(array, [ARRAY_STRIDES, axis])
        fits = b.or_(b.icmp_signed("<=", dims[axis], _i64(1)), b.icmp_signed("==", have, stride))
        ok = b.and_(ok, fits)
        stride = b.mul(stride, dims[axis], flags=["nsw"])
    return ok
