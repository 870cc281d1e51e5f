"""A `fused` node that is one float arithmetic op of two operands (`a * b`, `g[:, None] * x`,
`2.0 * x`: its kernel is `add`, `sub`, `mul` or `truediv` of its params, all of one float
dtype) over a space of one or two axes, as a call of the runtime's
`astjit.binary.<op>.<dtype>` (shared.py), compiled once per process by the runtime's
pipeline (or linked from the runtime cache). In the kernel's own module that nest was a
loop function of its own, which LLVM optimized and turned into machine code on every
first call for one instruction per element (vmap(grad)'s per-example `g[:, None] * x`,
np.outer: docs/benchmarks.md).

The call passes each operand as its data and its element strides over the space's two
axes (a scalar as a stack slot with strides 0; a space of one axis as one row), and the
output, new and C-contiguous, which `fused.py` allocates after its broadcasting checks as
for its own nests. The function serves every layout, so a first tier holds the call
alone: rows run as one loop where both operands step through them as through one row
(as `fused._merged` does), then one nest per pair of inner strides (1, 1), (0, 1) and
(1, 0), which vectorizes as it is, and a general one left scalar
(`loop_metadata.scalar_loops`). The op is the IEEE instruction the kernel would have run
at each element (NumPy's semantics: no flags), so the results are the same bits.

A node that writes into an input's memory (`reuse`, `into`), runs in parallel, reduces or
computes anything else keeps its nests.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.kernels import fused_attrs
from ...ir.ops import OPS
from ...ir.ops.table import Builder
from ...ir.types import ArrayType, ScalarType
from . import loop_metadata, nests, parallel
from .kernel import space_strides
from .lltypes import ARRAY_DATA, I64_T, element_type
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

TAKEN = ("add", "sub", "mul", "truediv")
"""The ops taken: each one IEEE instruction on floats in a kernel (`_instruction`)."""


def _instruction(op: str) -> str:
    """The IRBuilder method of `op`'s float lowering with NumPy's semantics, from the op
    table (`OpDef.llvm_numpy`, else `llvm`): `fadd` for add."""
    lowering = OPS[op].llvm_numpy.get("f") or OPS[op].llvm["f"]
    assert isinstance(lowering, Builder) and not lowering.args and not lowering.flags, op
    return lowering.method

DTYPES = ("f32", "f64")


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def operands(em: FunctionEmitter, node: Node) -> tuple[str, int, int] | None:
    """(op, the node's input each operand is) where `node` is such a call's, else None."""
    spec = fused_attrs(node)
    (kernel,) = node.regions
    if spec.reduce is not None or spec.reuse is not None or spec.into is not None \
            or spec.ndim not in (1, 2) or len(node.outputs) != 1 or len(kernel.nodes) != 1 \
            or parallel.in_parallel(em, node):
        return None
    (op,) = kernel.nodes
    out = node.outputs[0].type
    if op.op not in TAKEN or kernel.outputs != op.outputs or len(op.inputs) != 2 \
            or not isinstance(out, ArrayType) or out.dtype.name not in DTYPES:
        return None
    dtype = out.dtype.name
    if any(v not in kernel.params for v in op.inputs) \
            or any(v.type.name != dtype for v in (*op.inputs, *op.outputs)):
        return None
    if any((v.type.dtype if isinstance(v.type, ArrayType) else v.type).name != dtype
           for v in node.inputs):
        return None
    a, b = (kernel.params.index(v) for v in op.inputs)
    return op.op, a, b


def emit_call(em: FunctionEmitter, node: Node, which: tuple[str, int, int],
              args: list[ir.Value], dims: list[ir.Value], out: ir.Value) -> None:
    """Store `which`'s op of the node's operands into `out` (new, of the space's shape)."""
    b = em.builder
    spec = fused_attrs(node)
    op, *picked = which
    dtype = node.outputs[0].type.dtype
    rows, cols = ([_i64(1)] + dims)[-2:]
    call_args = []
    ones = spec.ones or (None,) * len(args)
    for j in picked:
        value, k = args[j], spec.plan[j]
        if k is None:  # a scalar: one element that every point reads
            slot = em.alloca(value.type)
            b.store(value, slot)
            call_args += [slot, _i64(0), _i64(0)]
            continue
        strides = space_strides(b, value, k, ones[j], spec.ndim)
        call_args += [b.extract_value(value, ARRAY_DATA), *([_i64(0)] + strides)[-2:]]
    call_args += [b.extract_value(out, ARRAY_DATA), rows, cols]
    b.call(_function(em.module, op, dtype), call_args)


def _function(module: ir.Module, op: str, dtype: ScalarType) -> ir.Function:
    """The runtime's `astjit.binary.<op>.<dtype>`: (a, a's row and column strides, b, its
    strides, out, rows, cols) -> out[i, j] = a[i, j] op b[i, j], out C-contiguous."""
    pointer = element_type(dtype).as_pointer()

    def emit(fn, b, a, a_row, a_col, x, x_row, x_col, out, rows, cols):
        fn.args[6].add_attribute("noalias")  # new memory: no overlap check in the loops
        merged = b.and_(b.icmp_signed("==", a_row, b.mul(a_col, cols)),
                        b.icmp_signed("==", x_row, b.mul(x_col, cols)))
        rows, cols = (b.select(merged, _i64(1), rows),
                      b.select(merged, b.mul(rows, cols), cols))
        versions = [(1, 1), (0, 1), (1, 0)]
        done = fn.append_basic_block("done")
        for a_step, x_step in versions:
            fits = b.and_(b.icmp_signed("==", a_col, _i64(a_step)),
                          b.icmp_signed("==", x_col, _i64(x_step)))
            with b.if_then(fits):
                _nest(b, op, (a, a_row, _i64(a_step)), (x, x_row, _i64(x_step)), out, rows, cols)
                b.branch(done)
        loop_metadata.scalar_loops(b, lambda: _nest(b, op, (a, a_row, a_col), (x, x_row, x_col),
                                                    out, rows, cols))
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()

    fnty = ir.FunctionType(ir.VoidType(), [pointer, I64_T, I64_T] * 2 + [pointer, I64_T, I64_T])
    return shared_function(module, f"astjit.binary.{op}.{dtype.name}", fnty, emit)


def _nest(b: ir.IRBuilder, op: str, a: tuple, x: tuple, out: ir.Value, rows: ir.Value,
          cols: ir.Value) -> None:
    """for i < rows: for j < cols: out[i * cols + j] = a[i, j] op x[i, j]."""
    def row(i: ir.Value) -> None:
        starts = [b.gep(data, [b.mul(i, step)], inbounds=True) for data, step, _ in (a, x)]
        written = b.gep(out, [b.mul(i, cols)], inbounds=True)

        def element(j: ir.Value) -> None:
            left, right = (b.load(b.gep(start, [b.mul(j, col)], inbounds=True))
                           for start, (_, _, col) in zip(starts, (a, x)))
            b.store(getattr(b, _instruction(op))(left, right), b.gep(written, [j], inbounds=True))
        nests.count_up(b, _i64(0), cols, element, ("column", "column.body", "column.done"))
    nests.count_up(b, _i64(0), rows, row, ("row", "row.body", "row.done"))
