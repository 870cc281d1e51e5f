"""The squared deviations of rows from their means (np.var / np.std along the last axes of a
float array: ir/ops/statistics.py's `_squares`, a row group of two members) as one call of
the runtime's `astjit.rows.squares.<dtype>` (shared.py), compiled once per process or linked
from the runtime cache, where the row group's two reductions in the kernel's own loops
module were most of its first call (docs/benchmarks.md).

The group it takes (`squares_input`): a `rowwise` node of one float array reducing its
last axis, whose first member is the rows' mean (its kernel yields the element, the mean
kept as a column) and whose second, the group's one output, is the rows' sum of
`(x - mean) * (x - mean)`. The function computes each row as the row loop does
(`reduction_nests.emit_row_reduction`: the same `reassoc` sums, the mean divided by the
count), so the results are bit for bit the same; over more than one inner axis the row
loop's nest sums in another order, so those groups keep it. It reads unit-stride rows,
evenly spaced (`contiguous_rows`); other layouts take rowwise.py's row loop or graph, in a
general tier only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.kernels import fused_attrs, rowwise_attrs
from ...ir.types import F32, F64, ScalarType
from . import array_layout, nests, new_arrays, reduction_nests
from .lltypes import ARRAY_DATA, ARRAY_STRIDES, I1, I64_T, element_type
from .shared import Body, shared_function

if TYPE_CHECKING:
    from ...ir.core import Graph, Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def squares_input(node: Node) -> ScalarType | None:
    """The element type of the one input of a `rowwise` node that computes only the sums
    of its rows' squared deviations from their means, or None."""
    group = rowwise_attrs(node)
    (body,) = node.regions
    members = [m for m in body.nodes if m.op != "array_release"]
    if len(node.inputs) != 1 or group.plan != (group.ndim,) or len(members) != 2 \
            or group.rows != group.ndim - 1:
        return None
    mean, squares = members
    (x,) = body.params
    t = x.type.dtype
    inner = tuple(range(group.rows, group.ndim))
    if t not in (F32, F64) or mean.op != "fused" or squares.op != "fused" \
            or mean.inputs != [x] or squares.inputs != [x, mean.outputs[-1]] \
            or body.outputs != [squares.outputs[-1]] or len(mean.outputs) != 1:
        return None
    taken, summed = fused_attrs(mean).reduce, fused_attrs(squares).reduce
    if taken is None or summed is None or (taken.kind, taken.axes, taken.keepdims) != (
            "mean", inner, True) or (summed.kind, summed.axes) != ("sum", inner):
        return None
    if mean.outputs[0].type.dtype != t or squares.outputs[-1].type.dtype != t:
        return None
    return t if _is_identity(mean.regions[0]) and _is_square_of_difference(
        squares.regions[0]) else None


def _is_identity(kernel: Graph) -> bool:
    return not kernel.nodes and kernel.outputs == kernel.params[:1]


def _is_square_of_difference(kernel: Graph) -> bool:
    """Whether `kernel` is `d = a - b; yield d * d` of its two parameters."""
    if len(kernel.nodes) != 2 or len(kernel.params) != 2:
        return False
    sub, mul = kernel.nodes
    (d,) = sub.outputs
    return sub.op == "sub" and sub.inputs == kernel.params and mul.op == "mul" \
        and mul.inputs == [d, d] and kernel.outputs == mul.outputs


def contiguous_rows(em: FunctionEmitter, x: ir.Value, dims: list[ir.Value],
                    rows: int) -> ir.Value:
    """Whether x's inner axes (after the first `rows`) are C-contiguous and its rows (the
    outer axes' positions, in C order) the multiples of `_row_step`."""
    b = em.builder
    ok, want = ir.Constant(I1, 1), _i64(1)
    for axis in reversed(range(len(dims))):
        if axis == rows - 1:
            want = _row_step(b, x, rows)
        have = b.extract_value(x, [ARRAY_STRIDES, axis])
        fits = b.or_(b.icmp_signed("<=", dims[axis], _i64(1)), b.icmp_signed("==", have, want))
        ok = b.and_(ok, fits)
        want = b.mul(want, dims[axis], flags=["nsw"])
    return ok


def _row_step(b: ir.IRBuilder, x: ir.Value, rows: int) -> ir.Value:
    """How far apart x's rows are where `contiguous_rows`: the last outer axis's stride."""
    return b.extract_value(x, [ARRAY_STRIDES, rows - 1]) if rows else _i64(0)


def call_squares(em: FunctionEmitter, t: ScalarType, x: ir.Value, dims: list[ir.Value],
                 rows: int, out: ir.Value) -> None:
    """Store in `out` (C-contiguous, one element per row) each row's sum of squared
    deviations from its mean, x's rows being `contiguous_rows`."""
    b = em.builder
    count = new_arrays.size_of_dims(b, dims[:rows])
    n = new_arrays.size_of_dims(b, dims[rows:])
    b.call(_function(em.module, t), [b.extract_value(x, ARRAY_DATA), count, n,
                                     _row_step(b, x, rows), b.extract_value(out, ARRAY_DATA)])


def _function(module: ir.Module, t: ScalarType) -> ir.Function:
    """The runtime's `astjit.rows.squares.<t>`: (data, rows, n, step, out) stores in out[r]
    the sum of (x - m) * (x - m) over the n elements x at data + r * step, one apart,
    m their mean, for each r < rows."""
    pointer = element_type(t).as_pointer()

    def emit(fn, b, data, rows, n, step, out):
        body = Body(fn, b)

        def each(r):
            row = b.gep(data, [b.mul(r, step, flags=["nsw"])], inbounds=True)

            def element(indices: list[ir.Value]) -> ir.Value:
                return b.load(b.gep(row, indices, inbounds=True),
                              align=array_layout.ITEM_SIZES[t])
            mean = reduction_nests.emit_row_reduction(body, "mean", t, [n], element, [])

            def square(indices: list[ir.Value]) -> ir.Value:
                d = b.fsub(element(indices), mean)
                return b.fmul(d, d)
            total = reduction_nests.emit_row_reduction(body, "sum", t, [n], square, [])
            b.store(total, b.gep(out, [r], inbounds=True), align=array_layout.ITEM_SIZES[t])
        nests.count_up(b, _i64(0), rows, each, ("squares.rows.head", "squares.rows.body",
                                                 "squares.rows.done"))
        b.ret_void()
    fnty = ir.FunctionType(ir.VoidType(), [pointer, I64_T, I64_T, I64_T, pointer])
    return shared_function(module, f"astjit.rows.squares.{t}", fnty, emit)

