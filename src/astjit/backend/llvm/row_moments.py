"""The squared deviations of rows from their means (np.var / np.std along the last axes of a
float array: ir/ops/statistics.py's `_deviation`, a row group of two or three members) as one
call of the runtime's `astjit.rows.squares.<dtype>` (shared.py), compiled once per process or
linked from the runtime cache, where the row group's reductions in the kernel's own loops
module were most of its first call (docs/benchmarks.md).

The group it takes (`squares_input`): a `rowwise` node of one float array reducing its
last axis, whose first member is the rows' mean (its kernel yields the element, the mean
kept as a column) and whose second is the rows' sum of `(x - mean) * (x - mean)`: the
group's one output, or the operand of a third, a row member dividing it by the group's
second input, a scalar (the degrees of freedom), and taking the square root (np.std) or
not. The function computes each row as the row loop does
(`reduction_nests.emit_row_reduction`: the same `reassoc` sums, the mean divided by the
count; the same `fdiv` and `llvm.sqrt`), so the results are bit for bit the same; over more
than one inner axis the row loop's nest sums in another order, so those groups keep it. It
reads unit-stride rows, evenly spaced (`contiguous_rows`); other layouts take rowwise.py's
row loop or graph, in a general tier only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

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


class Squares(NamedTuple):
    """What `call_squares` computes for a group `squares_input` takes."""
    dtype: ScalarType
    divided: bool
    """Whether each row's sum is divided by the group's second input, a scalar (np.var's
    degrees of freedom)."""
    root: bool
    """Whether the quotient's square root is taken too (np.std)."""


def squares_input(node: Node) -> Squares | None:
    """How a `rowwise` node of one float array computes only its rows' sums of squared
    deviations from their means (each divided by one scalar, its square root taken, where
    the group ends with such a row member), or None."""
    group = rowwise_attrs(node)
    (body,) = node.regions
    members = [m for m in body.nodes if m.op != "array_release"]
    if len(node.inputs) not in (1, 2) or group.plan[0] != group.ndim \
            or len(members) != len(node.inputs) + 1 or group.rows != group.ndim - 1:
        return None
    mean, squares = members[:2]
    x = body.params[0]
    t = x.type.dtype
    inner = tuple(range(group.rows, group.ndim))
    if t not in (F32, F64) or mean.op != "fused" or squares.op != "fused" \
            or mean.inputs != [x] or squares.inputs != [x, mean.outputs[-1]] \
            or body.outputs != [members[-1].outputs[-1]] or len(mean.outputs) != 1:
        return None
    taken, summed = fused_attrs(mean).reduce, fused_attrs(squares).reduce
    if taken is None or summed is None or (taken.kind, taken.axes, taken.keepdims) != (
            "mean", inner, True) or (summed.kind, summed.axes) != ("sum", inner):
        return None
    if mean.outputs[0].type.dtype != t or members[-1].outputs[-1].type.dtype != t:
        return None
    if not _is_identity(mean.regions[0]) or not _is_square_of_difference(squares.regions[0]):
        return None
    if len(members) == 2:
        return Squares(t, False, False)
    scaled, divisor = members[2], body.params[1]
    if scaled.op != "fused" or fused_attrs(scaled).reduce is not None \
            or scaled.inputs != [squares.outputs[-1], divisor] or divisor.type != t \
            or len(squares.outputs) != 1:
        return None
    root = _quotient_root(scaled.regions[0])
    return None if root is None else Squares(t, True, root)


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


def _quotient_root(kernel: Graph) -> bool | None:
    """For a kernel `yield a / b` of its two parameters: False; `yield sqrt(a / b)`: True;
    else None."""
    if not 1 <= len(kernel.nodes) <= 2 or len(kernel.params) != 2:
        return None
    div, *root = kernel.nodes
    if div.op != "truediv" or div.inputs != kernel.params:
        return None
    if not root:
        return None if kernel.outputs != div.outputs else False
    (sqrt,) = root
    return sqrt.op == "sqrt" and sqrt.inputs == div.outputs and kernel.outputs == sqrt.outputs \
        or None


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


def call_squares(em: FunctionEmitter, how: Squares, args: list[ir.Value], dims: list[ir.Value],
                 rows: int, out: ir.Value) -> None:
    """Store in `out` (C-contiguous, one element per row) each row's sum of squared
    deviations from its mean as `how` says, the group's array (`args[0]`) being
    `contiguous_rows`."""
    b = em.builder
    x, t = args[0], how.dtype
    count = new_arrays.size_of_dims(b, dims[:rows])
    n = new_arrays.size_of_dims(b, dims[rows:])
    divisor = args[1] if how.divided else ir.Constant(element_type(t), 1.0)
    b.call(_function(em.module, t), [b.extract_value(x, ARRAY_DATA), count, n,
                                     _row_step(b, x, rows), divisor,
                                     ir.Constant(I1, how.root), b.extract_value(out, ARRAY_DATA)])


def _function(module: ir.Module, t: ScalarType) -> ir.Function:
    """The runtime's `astjit.rows.squares.<t>`: (data, rows, n, step, divisor, root, out)
    stores in out[r] the sum of (x - m) * (x - m) over the n elements x at data + r * step,
    one apart, m their mean, divided by `divisor` (exact where it is 1), its square root
    where `root`, for each r < rows: the division and the root of the kernel's row member
    (`truediv`, `sqrt`), so the same bits. They run in a loop of their own after the rows'
    sums, which vectorizes: in each row's, their latency slowed rows of a few hundred
    elements."""
    pointer = element_type(t).as_pointer()

    def emit(fn, b, data, rows, n, step, divisor, root, out):
        body = Body(fn, b)
        sqrt = fn.module.declare_intrinsic("llvm.sqrt", [element_type(t)])

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

        def scale(rooted: bool):
            def each(r):
                at = b.gep(out, [r], inbounds=True)
                quotient = b.fdiv(b.load(at, align=array_layout.ITEM_SIZES[t]), divisor)
                value = b.call(sqrt, [quotient]) if rooted else quotient
                b.store(value, at, align=array_layout.ITEM_SIZES[t])
            nests.count_up(b, _i64(0), rows, each, ("squares.scale.head", "squares.scale.body",
                                                     "squares.scale.done"))
        with b.if_else(root) as (rooted, plain):
            with rooted:
                scale(True)
            with plain:
                scale(False)
        b.ret_void()
    fnty = ir.FunctionType(ir.VoidType(), [pointer, I64_T, I64_T, I64_T, element_type(t), I1,
                                           pointer])
    return shared_function(module, f"astjit.rows.squares.{t}", fnty, emit)
