"""Stacks of matrix products: `a @ b` where an operand has more than 2 dimensions
(ir/ops/linalg.py's `matmul`).

The leading (batch) axes of the two operands broadcast against each other as NumPy
broadcasts them (trailing axes aligned; a length-1 axis repeats: its stride taken as 0);
a 1-d operand has no batch axes (it is a row for `a`, a column for `b`). After NumPy's
checks (the inner dimensions first, then the batch axes: ValueError), the result is
allocated once, C-contiguous, and a loop nest over the batch axes multiplies one pair of
matrices (or matrix and vector) per step, in place in the result:

- floats: new_products.py's one call of the runtime, whose `astjit.matmul.stacked.<d|s>.
  <ndims>` (`stacked_function`, shared.py) loops over the batch axes and calls, per item,
  the function a 2-d product calls (`astjit.matmul.<d|s>.<core ndims>`, blas_calls.py:
  gemm or gemv on the item as it lies, or on a copy where BLAS cannot read it), given item
  views built there (data pointer, the last axes' lengths and strides). The kernel's
  module holds no loop for it, only the call: a loop calling a function per step gains
  nothing from the loops pipeline (jit/split.py) that it would pay for at every first call;
- ints: linalg.py's wrapping loop nest on each item, into a zeroed result
  (`stacked_product`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import ArrayType, ScalarType
from . import array_layout, copies, nests, new_arrays
from .blas_calls import BLAS_PREFIXES, byte_stride, i64_constant, product_function, product_name
from .lltypes import ARRAY_DATA, ARRAY_OWNER, I32_T, lltype
from .product_kernels import int_kernel, mismatch_message
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

BATCH_MISMATCH = "operands could not be broadcast together: their batch axes differ"
BATCH_DETAIL = ("operands could not be broadcast together: batch axis {0} has length {1} "
                "in one operand and {2} in the other")


class Stack:
    """One operand as a stack of items: its batch axes (aligned with the result's last
    batch axes) and its item's axes (1 or 2)."""

    def __init__(self, builder: ir.IRBuilder, array: ir.Value, ndim: int):
        self.array, self.ndim = array, ndim
        self.core = min(ndim, 2)
        self.batch = ndim - self.core
        self.dims = [array_layout.dim(builder, array, k) for k in range(ndim)]
        self.strides = [byte_stride(builder, array, k) for k in range(ndim)]

    def batch_dim(self, axis: int, out_batch: int) -> ir.Value | None:
        """The length along result batch axis `axis`, None where this operand has none."""
        own = axis - (out_batch - self.batch)
        return self.dims[own] if own >= 0 else None

    def item(self, b: ir.IRBuilder, t: ArrayType, indices: list[ir.Value]) -> ir.Value:
        """The view of the item at the result's batch `indices` (a length-1 axis repeats)."""
        offset = i64_constant(0)
        for axis, index in enumerate(indices):
            own = axis - (len(indices) - self.batch)
            if own < 0:
                continue
            step = b.select(b.icmp_signed("==", self.dims[own], i64_constant(1)),
                            i64_constant(0), self.strides[own])
            offset = b.add(offset, b.mul(index, step))
        data = b.gep(b.extract_value(self.array, ARRAY_DATA), [offset])
        return copies.build(b, ArrayType(t.dtype, self.core), data,
                            b.extract_value(self.array, ARRAY_OWNER),
                            self.dims[self.batch:], self.strides[self.batch:])


def check_shapes(em: FunctionEmitter, node: Node, x: Stack, y: Stack, out_batch: int):
    """NumPy's ValueErrors: the inner dimensions, then the batch axes; (the result's batch
    lengths, (m, k, n) with None for a vector's missing axis)."""
    b = em.builder
    k, k_b = x.dims[-1], y.dims[-2] if y.ndim >= 2 else y.dims[0]
    m = x.dims[-2] if x.ndim >= 2 else None
    n = y.dims[-1] if y.ndim >= 2 else None
    fixed, detail = mismatch_message("matmul", x.core, y.core)
    em.fail_with_values(node, b.icmp_signed("!=", k, k_b), "ValueError", fixed, detail,
                        [k, k_b, i64_constant(0) if m is None else m,
                         i64_constant(0) if n is None else n])
    lengths = batch_lengths(em, node, [x, y], out_batch)
    return lengths, (m, k, n)


def batch_lengths(em: FunctionEmitter, node: Node, stacks: list[Stack],
                  out_batch: int) -> list[ir.Value]:
    """The broadcast lengths of the result's batch axes; NumPy's ValueError where two
    operands' lengths differ and neither is 1."""
    return broadcast_batch(em.builder, stacks, out_batch, lambda clash, values: em.fail_with_values(
        node, clash, "ValueError", BATCH_MISMATCH, BATCH_DETAIL, values))


def broadcast_batch(b: ir.IRBuilder, stacks: list[Stack], out_batch: int,
                    fail: Callable[[ir.Value, list[ir.Value]], None]) -> list[ir.Value]:
    """The broadcast lengths of the result's batch axes, `fail(clash, [axis, length, other])`
    emitted where two operands' lengths may differ with neither 1 (BATCH_DETAIL's
    numbers)."""
    one, lengths = i64_constant(1), []
    for axis in range(out_batch):
        found = [s.batch_dim(axis, out_batch) or one for s in stacks]
        length = found[0]
        for other in found[1:]:
            clash = b.and_(b.icmp_signed("!=", length, other),
                           b.and_(b.icmp_signed("!=", length, one),
                                  b.icmp_signed("!=", other, one)))
            fail(clash, [i64_constant(axis), length, other])
            length = b.select(b.icmp_signed("==", length, one), other, length)
        lengths.append(length)
    return lengths


def stacked_product(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value) -> ir.Value:
    """A new int array = a @ b over the broadcast batch axes: the wrapping loop nest on each
    item, into a zeroed result (floats: new_products.py)."""
    builder = em.builder
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    out_t = node.outputs[0].type
    x, y = Stack(builder, a, a_t.ndim), Stack(builder, b, b_t.ndim)
    out_batch = out_t.ndim - (a_t.ndim >= 2) - (b_t.ndim >= 2)
    lengths, (m, k, n) = check_shapes(em, node, x, y, out_batch)
    core = [d for d in (m, n) if d is not None]
    new_arrays.check_dims(em, node, out_t.dtype, lengths + core)
    out = new_arrays.allocate(em, node, out_t, lengths + core, zeroed=True)
    result = Stack(builder, out, out_t.ndim)
    result.core, result.batch = len(core), out_batch

    def int_item(indices):
        item = result.item(builder, out_t, indices)
        strides = [byte_stride(builder, item, k) for k in range(len(core))]
        zero = i64_constant(0)
        strides = strides if len(core) == 2 else [strides[0], zero] if n is None \
            else [zero, strides[0]]
        int_kernel(em, x.item(builder, a_t, indices), x.core, y.item(builder, b_t, indices),
                   y.core, builder.extract_value(item, ARRAY_DATA), strides, (m, k, n))
    nests.loop_nest(em, lengths, int_item, "matmul.stack")
    return out


def stacked_name(dtype: ScalarType, a_ndim: int, b_ndim: int) -> str:
    """The runtime's name of `stacked_function(dtype, a_ndim, b_ndim)`."""
    return f"astjit.matmul.stacked.{BLAS_PREFIXES[dtype]}.{a_ndim}{b_ndim}"


def stacked_function(dtype: ScalarType, a_ndim: int, b_ndim: int):
    """The runtime's `astjit.matmul.stacked`: (a, b, out) -> out's items = a's @ b's over
    out's batch axes (out allocated, of the broadcast shape), each by the 2-d product's
    function, whose first failure code it returns (else 0)."""
    core = (a_ndim >= 2) + (b_ndim >= 2)
    out_batch = max(a_ndim - min(a_ndim, 2), b_ndim - min(b_ndim, 2))
    out_t, item_t = ArrayType(dtype, out_batch + core), ArrayType(dtype, 2)

    def emit(fn, builder, a, b, out):
        x, y = Stack(builder, a, a_ndim), Stack(builder, b, b_ndim)
        result = Stack(builder, out, out_t.ndim)
        result.core, result.batch = core, out_batch
        product = shared_function(fn.module, product_name(dtype, x.core, y.core),
                                  *product_function(dtype, x.core, y.core))

        def item(indices: list[ir.Value]) -> None:
            out_data = builder.extract_value(result.item(builder, out_t, indices), ARRAY_DATA)
            code = builder.call(product, [x.item(builder, item_t, indices),
                                          y.item(builder, item_t, indices), out_data])
            with builder.if_then(builder.icmp_signed("!=", code, ir.Constant(I32_T, 0)),
                                 likely=False):
                builder.ret(code)

        def nest(indices: list[ir.Value]) -> None:
            if len(indices) == out_batch:
                item(indices)
                return
            nests.count_up(builder, i64_constant(0), result.dims[len(indices)],
                           lambda i: nest([*indices, i]),
                           ("matmul.stack.head", "matmul.stack.body", "matmul.stack.done"))
        nest([])
        builder.ret(ir.Constant(I32_T, 0))
    fnty = ir.FunctionType(I32_T, [lltype(ArrayType(dtype, a_ndim)), lltype(ArrayType(dtype, b_ndim)),
                                   lltype(out_t)])
    return fnty, emit
