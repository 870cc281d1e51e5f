"""The advanced indexing primitives (ir/ops/indexing.py) in compiled code.

- Index checks: each index array is read once first, its least and greatest
  element found (a min/max reduction LLVM vectorizes); only when one lies outside
  `[-size, size)` does a cold second walk find the first such index in C order
  and fail with NumPy's IndexError naming it. The gather or scatter loop itself
  then only wraps negative indices (a select). `boundscheck=False` skips the pass.
- `gather`: loops over the leading axes of the array, the index arrays' shape and
  the trailing axes, in that order (C order of the result, which is written
  sequentially); each index element is loaded and wrapped once per trailing block.
  The last trailing axis, where it has unit strides, moves in vectors of `ROW_BYTES`
  (a row of 4 float64, a table's row in a lookup, is one load and one store), the
  elements after the last whole vector one at a time; LLVM's own vectorizer took only
  rows of 16 elements or more, behind a check that source and result do not overlap.
- `scatter` (and `gather_adjoint`, a scatter that accumulates into zeros): the
  same loops, storing (or adding) instead of loading, elements in C order, so the
  last of repeated indices wins (a vector's elements are distinct places of one row).
- `compress`: one pass counting the mask, then one writing the selected elements
  in C order. A mask over every axis writes without a branch: each element goes to
  the next free place, which advances only for a selected one (the result has one
  spare element past its length). `compress_adjoint` walks the same way, reading
  the cotangent into zeros.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.indexing import MASK_MISMATCH
from ...ir.types import BOOL, I64, ArrayType, ScalarType
from . import array_layout, copies, loop_metadata, nests, new_arrays
from . import messages as msg
from .lltypes import ARRAY_DATA, ARRAY_SHAPE, ARRAY_STRIDES, I64_T, element_type, zero
from .scans import _convert, _load, _pointer, _store

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _dims(b: ir.IRBuilder, array: ir.Value, ndim: int) -> list[ir.Value]:
    return [array_layout.dim(b, array, k) for k in range(ndim)]


# ---- index checks ---------------------------------------------------------------------

def _index_at(b: ir.IRBuilder, index: ir.Value, t, ix: list[ir.Value]) -> ir.Value:
    """Element `ix` of an index array (or the int itself), as an i64."""
    if not isinstance(t, ArrayType):
        return index
    return _convert(b, _load(b, _pointer(b, index, ix), t.dtype), t.dtype, I64)


def _check(em: FunctionEmitter, node: Node, index: ir.Value, t, size: ir.Value,
           user_axis: int) -> None:
    """NumPy's IndexError for the first element of `index` outside [-size, size)."""
    b = em.builder
    message = msg.INDEX_OUT_OF_BOUNDS.format(axis=user_axis)
    detail = msg.INDEX_OUT_OF_BOUNDS_DETAIL.format(axis=user_axis)

    def outside(v):
        return b.or_(b.icmp_signed("<", v, b.neg(size)), b.icmp_signed(">=", v, size))
    if not isinstance(t, ArrayType):
        em.fail_with_values(node, outside(index), "IndexError", message, detail, [index, size])
        return
    dims = _dims(b, index, t.ndim)
    low, high = em.alloca(I64_T), em.alloca(I64_T)
    b.store(_i64(0), low)
    b.store(_i64(0), high)

    def extremes(ix):
        v = _index_at(b, index, t, ix)
        lo, hi = b.load(low), b.load(high)
        b.store(b.select(b.icmp_signed("<", v, lo), v, lo), low)
        b.store(b.select(b.icmp_signed(">", v, hi), v, hi), high)
    nests.loop_nest(em, dims, extremes, "index.range")
    bad = b.or_(b.icmp_signed("<", b.load(low), b.neg(size)), b.icmp_signed(">=", b.load(high), size))
    with b.if_then(bad, likely=False):
        def first(ix):
            v = _index_at(b, index, t, ix)
            em.fail_with_values(node, outside(v), "IndexError", message, detail, [v, size])
        nests.loop_nest(em, dims, first, "index.find")


def _check_all(em: FunctionEmitter, node: Node, view: ir.Value, indices: list[ir.Value]) -> None:
    if not node.attrs.get("boundscheck", True):
        return
    axis, axes = node.attrs["axis"], node.attrs["axes"]
    for j, (index, value) in enumerate(zip(indices, _index_values(node))):
        size = array_layout.dim(em.builder, view, axis + j)
        _check(em, node, index, value.type, size, axes[j])


def _index_values(node: Node):
    first = {"gather": 1, "scatter": 2, "gather_adjoint": 2}[node.op]
    return node.inputs[first:]


# ---- the loops a gather and a scatter share ----------------------------------------------

ROW_BYTES = 32
"""The bytes of one vector step along a unit-stride last axis (AVX2's registers): 4 float64,
8 float32."""


def lanes(dtype: ScalarType, accumulate: bool = False) -> int:
    """The elements of `dtype` one vector step moves along a row (1: element by element,
    complex numbers, and bools added up)."""
    if dtype.is_complex or (accumulate and dtype == BOOL):
        return 1
    return ROW_BYTES // array_layout.ITEM_SIZES[dtype]


def load_row(b: ir.IRBuilder, pointer: ir.Value, dtype: ScalarType, width: int) -> ir.Value:
    """`width` consecutive elements from `pointer`: the element itself for one, else a
    vector of their storage (bools as bytes)."""
    if width == 1:
        return _load(b, pointer, dtype)
    vector = ir.VectorType(element_type(dtype), width)
    return b.load(b.bitcast(pointer, vector.as_pointer()), align=array_layout.ITEM_SIZES[dtype])


def store_row(b: ir.IRBuilder, pointer: ir.Value, dtype: ScalarType, value: ir.Value,
              width: int) -> None:
    if width == 1:
        _store(b, pointer, dtype, value)
        return
    b.store(value, b.bitcast(pointer, value.type.as_pointer()),
            align=array_layout.ITEM_SIZES[dtype])


def _last_unit(b: ir.IRBuilder, arrays: list[tuple[ir.Value, ArrayType]]) -> ir.Value:
    """Whether each of `arrays` has unit stride along its last axis."""
    unit = ir.Constant(ir.IntType(1), 1)
    for array, t in arrays:
        stride = b.extract_value(array, [ARRAY_STRIDES, t.ndim - 1])
        unit = b.and_(unit, b.icmp_signed("==", stride, _i64(1)))
    return unit


def _rows(em: FunctionEmitter, dims: list[ir.Value], width: int, unit: ir.Value, element,
          label: str) -> None:
    """element(indices, w) over the axes `dims` in C order, `w` elements at once: along the
    last axis in steps of `width` where `unit` holds, then the rest of the row one by one
    (loops LLVM leaves as they are); where it does not, one by one."""
    b = em.builder
    if width == 1 or not dims:
        nests.loop_nest(em, dims, lambda ix: element(ix, 1), label)
        return
    names = tuple(f"{label}.{name}" for name in ("head", "body", "done"))

    def one_by_one(ix, start, stop):
        loop_metadata.scalar_loops(b, lambda: nests.count_up(
            b, start, stop, lambda i: element([*ix, i], 1), names))

    def row(ix):
        n = dims[-1]
        with b.if_else(unit, likely=True) as (vectors, elements):
            with vectors:
                steps = b.sdiv(n, _i64(width))
                nests.count_up(b, _i64(0), steps, lambda j: element(
                    [*ix, b.mul(j, _i64(width), flags=["nsw"])], width), names)
                one_by_one(ix, b.mul(steps, _i64(width), flags=["nsw"]), n)
            with elements:
                one_by_one(ix, _i64(0), n)
    nests.loop_nest(em, dims[:-1], row, label)


def _walk(em: FunctionEmitter, node: Node, view: ir.Value, view_t: ArrayType,
          indices: list[ir.Value], body, width: int = 1, others=()) -> None:
    """body(view element pointer, result indices, w) for each element of the gather's
    result, in C order: leading axes, index shape, trailing axes; `w` elements at once
    along the last trailing axis (`_rows`, steps of `width`) where it has unit stride in
    the view and in each of `others` (arrays of the result's shape, with their types)."""
    b = em.builder
    axis, k = node.attrs["axis"], len(indices)
    types = [v.type for v in _index_values(node)]
    arrays = [(x, t) for x, t in zip(indices, types) if isinstance(t, ArrayType)]
    shape = _dims(b, arrays[0][0], arrays[0][1].ndim)
    dims = _dims(b, view, view_t.ndim)
    sizes = dims[axis:axis + k]
    strides = [b.extract_value(view, [ARRAY_STRIDES, a]) for a in range(view_t.ndim)]
    data = b.extract_value(view, ARRAY_DATA)
    trailing = dims[axis + k:]
    unit = _last_unit(b, [(view, view_t), *others]) if trailing and width > 1 else None

    def offset(positions, axes):
        total = _i64(0)
        for i, a in zip(positions, axes):
            total = b.add(total, b.mul(i, strides[a], flags=["nsw"]), flags=["nsw"])
        return total

    def lead(pre):
        base = offset(pre, range(axis))

        def at_index(bix):
            here = base
            for j, (index, t) in enumerate(zip(indices, types)):
                v = _index_at(b, index, t, bix)
                v = b.select(b.icmp_signed("<", v, _i64(0)), b.add(v, sizes[j]), v)
                here = b.add(here, b.mul(v, strides[axis + j], flags=["nsw"]), flags=["nsw"])

            def trail(post, w):
                where = b.add(here, offset(post, range(axis + k, view_t.ndim)), flags=["nsw"])
                body(b.gep(data, [where], inbounds=True), [*pre, *bix, *post], w)
            _rows(em, trailing, width, unit, trail, "gather.trail")
        nests.loop_nest(em, shape, at_index, "gather.index")
    nests.loop_nest(em, dims[:axis], lead, "gather.lead")


def _result_dims(b: ir.IRBuilder, node: Node, view: ir.Value, view_t: ArrayType,
                 indices: list[ir.Value]) -> list[ir.Value]:
    axis, k = node.attrs["axis"], len(indices)
    dims = _dims(b, view, view_t.ndim)
    index, t = next((x, v.type) for x, v in zip(indices, _index_values(node))
                    if isinstance(v.type, ArrayType))
    return dims[:axis] + _dims(b, index, t.ndim) + dims[axis + k:]


def gather(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    view, *indices = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    _check_all(em, node, view, indices)
    out = new_arrays.allocate(em, node, node.outputs[0].type,
                              _result_dims(b, node, view, t, indices), zeroed=False)
    data, written = b.extract_value(out, ARRAY_DATA), em.alloca(I64_T)
    b.store(_i64(0), written)

    def copy(source, _, width):
        n = b.load(written)
        store_row(b, b.gep(data, [n], inbounds=True), t.dtype,
                  load_row(b, source, t.dtype, width), width)
        b.store(b.add(n, _i64(width), flags=["nsw"]), written)
    _walk(em, node, view, t, indices, copy, lanes(t.dtype))
    return out


def _scatter_into(em: FunctionEmitter, node: Node, target: ir.Value, t: ArrayType,
                  value: ir.Value, value_t, indices: list[ir.Value], accumulate: bool) -> None:
    b = em.builder
    dtype = t.dtype
    array = isinstance(value_t, ArrayType)

    def put(pointer, ix, width):
        if array:
            v = load_row(b, _pointer(b, value, ix), dtype, width)
        else:
            v = value if width == 1 else _splat(b, value, dtype, width)
        if accumulate:
            old = load_row(b, pointer, dtype, width)
            v = b.fadd(old, v) if dtype.is_float or dtype.is_complex else b.add(old, v)
        store_row(b, pointer, dtype, v, width)
    _walk(em, node, target, t, indices, put, lanes(dtype, accumulate),
          [(value, value_t)] if array else [])


def _splat(b: ir.IRBuilder, value: ir.Value, dtype: ScalarType, width: int) -> ir.Value:
    """A vector of `width` copies of the number `value`, in its storage type."""
    if dtype == BOOL:
        value = b.zext(value, element_type(BOOL))
    vector = ir.VectorType(value.type, width)
    one = b.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return b.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32), width),
                                                  [0] * width))


def scatter(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """The value and index arrays are read from copies where they may share memory with
    the target (`x[idx] = x[::-1]`, `a[a] = 0`): every element read is an old one."""
    view, value, *indices = args
    t = node.inputs[0].type
    _check_all(em, node, view, indices)
    operands = [value, *indices]
    copies_ = {}
    for j, (v, source) in enumerate(zip(operands, node.inputs[1:])):
        if isinstance(source.type, ArrayType):
            copies_[j] = copies.apart(em, node, v, source.type, view, t)
            operands[j] = copies_[j].array
    value, *indices = operands
    _scatter_into(em, node, view, t, value, node.inputs[1].type, indices,
                  node.attrs["accumulate"])
    for made in copies_.values():
        made.release(em)
    return zero(node.outputs[0].type)


def gather_adjoint(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    g, x, *indices = args
    t: ArrayType = node.inputs[1].type
    out = new_arrays.allocate(em, node, t, _dims(em.builder, x, t.ndim), zeroed=True)
    _scatter_into(em, node, out, t, g, node.inputs[0].type, indices, accumulate=True)
    return out


# ---- masks ----------------------------------------------------------------------------

def _check_mask(em: FunctionEmitter, node: Node, view: ir.Value, mask: ir.Value, k: int) -> None:
    b, axis = em.builder, node.attrs["axis"]
    for j in range(k):
        size, length = array_layout.dim(b, view, axis + j), array_layout.dim(b, mask, j)
        text = MASK_MISMATCH.format(axis=axis + j, size="{0}", mask="{1}")
        em.fail_with_values(node, b.icmp_signed("!=", size, length), "IndexError",
                            text.split(";")[0], text, [size, length])


def _count(em: FunctionEmitter, mask: ir.Value, k: int) -> ir.Value:
    b = em.builder
    count = em.alloca(I64_T)
    b.store(_i64(0), count)

    def tally(ix):
        bit = b.zext(_load(b, _pointer(b, mask, ix), BOOL), I64_T)
        b.store(b.add(b.load(count), bit), count)
    nests.loop_nest(em, _dims(b, mask, k), tally, "mask.count")
    return b.load(count)


def compress(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    view, mask = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    k, axis = node.inputs[1].type.ndim, node.attrs["axis"]
    _check_mask(em, node, view, mask, k)
    count = _count(em, mask, k)
    dims = _dims(b, view, t.ndim)
    whole = axis == 0 and k == t.ndim  # x[m], m of x's shape: no branch
    out_dims = dims[:axis] + [b.add(count, _i64(1)) if whole else count] + dims[axis + k:]
    out = new_arrays.allocate(em, node, node.outputs[0].type, out_dims, zeroed=False)
    if whole:
        out = b.insert_value(out, count, [ARRAY_SHAPE, 0])
    data, written = b.extract_value(out, ARRAY_DATA), em.alloca(I64_T)
    b.store(_i64(0), written)

    def select(pre, mix, bit):
        def copy(post):
            n = b.load(written)
            source = _load(b, _pointer(b, view, [*pre, *mix, *post]), t.dtype)
            _store(b, b.gep(data, [n], inbounds=True), t.dtype, source)
            b.store(b.add(n, b.zext(bit, I64_T) if whole else _i64(1)), written)
        if whole:
            copy([])
            return
        with b.if_then(bit):
            nests.loop_nest(em, dims[axis + k:], copy, "compress.trail")
    _masked(em, mask, dims, axis, k, select)
    return out


def _masked(em: FunctionEmitter, mask: ir.Value, dims, axis: int, k: int, body) -> None:
    """body(leading indices, mask indices, the mask's bit) in C order."""
    b = em.builder
    nests.loop_nest(em, dims[:axis], lambda pre: nests.loop_nest(
        em, dims[axis:axis + k],
        lambda mix: body(pre, mix, _load(b, _pointer(b, mask, mix), BOOL)), "mask.walk"),
        "mask.lead")


def compress_adjoint(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    g, mask, x = args
    b = em.builder
    t: ArrayType = node.inputs[2].type
    k, axis = node.inputs[1].type.ndim, node.attrs["axis"]
    dims = _dims(b, x, t.ndim)
    out = new_arrays.allocate(em, node, t, dims, zeroed=True)
    column = em.alloca(I64_T)

    def place(pre, mix, bit):
        with b.if_then(bit):
            c = b.load(column)

            def copy(post):
                value = _load(b, _pointer(b, g, [*pre, c, *post]), t.dtype)
                _store(b, _pointer(b, out, [*pre, *mix, *post]), t.dtype, value)
            nests.loop_nest(em, dims[axis + k:], copy, "expand.trail")
            b.store(b.add(c, _i64(1)), column)

    def row(pre):
        b.store(_i64(0), column)
        nests.loop_nest(em, dims[axis:axis + k], lambda mix: place(
            pre, mix, _load(b, _pointer(b, mask, mix), BOOL)), "expand.walk")
    nests.loop_nest(em, dims[:axis], row, "expand.lead")
    return out


ROUTINES = {"gather": gather, "scatter": scatter, "gather_adjoint": gather_adjoint,
            "compress": compress, "compress_adjoint": compress_adjoint}
