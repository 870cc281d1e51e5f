"""`arg_reduce` (np.argmax / argmin) and `scan` (np.cumsum / cumprod) in compiled code
(ir/ops/scans.py): loops of their own, as neither is one accumulator's fold.

arg_reduce walks rows: the reduced axis, for each position of the others (one row of
every element, in C order, for `axis=None` over a C-contiguous array; otherwise a C
order walk with a counter). A unit-stride row of floats or ints at least a vector long
is searched in explicit vectors (arg_search.py). Other rows compare element by element: an element
replaces the best one where it is greater (less), or NaN while the best is not. A
search whose result is one index (a flat array, a 1-d row) calls the runtime's
`astjit.arg.row.<kind>.<dtype>` (shared.py), compiled once per process or linked from
the runtime cache, where LLVM's work on the search inlined in the kernel was most of a
first call (docs/benchmarks.md). The unit-stride, evenly spaced rows of a result array
are one call of the runtime's `astjit.arg.rows.<kind>.<dtype>`, which calls the one-row
search for each row (the search inlined in that loop over rows ran slower: its row
loop's invariants spilled); other rows loop in the kernel, in a general tier only,
around the one-row search or the element-by-element one.

scan writes a new C-contiguous array in one walk of the input in C order (each axis
reversed along which a `reverse` scan runs): `out[p] = out[p - step] op x[i]`, the
first element of each line along the axis `x[i]` itself, where `step` is the axis's
stride in `out` (1 for `axis=None`, which flattens). Along a leading axis the inner
loop walks two rows of `out` at once, which vectorizes; along the last axis it is the
sequential recurrence NumPy runs too. Sums and products are not reassociated.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.scans import EMPTY_ARG, scan_dtype
from ...ir.types import BOOL, F64, ArrayType, ScalarType
from . import arg_search, array_layout, loop_metadata, nests, new_arrays
from .complexes import multiply
from .conversions import complex_cast
from .lltypes import ARRAY_DATA, ARRAY_STRIDES, I1, I64_T, element_type, lltype
from .shared import Body, shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _load(b: ir.IRBuilder, pointer: ir.Value, t: ScalarType) -> ir.Value:
    value = b.load(pointer, align=array_layout.ITEM_SIZES[t])
    return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0)) if t == BOOL else value


def _store(b: ir.IRBuilder, pointer: ir.Value, t: ScalarType, value: ir.Value) -> None:
    if t == BOOL:
        value = b.zext(value, element_type(BOOL))
    b.store(value, pointer, align=array_layout.ITEM_SIZES[t])


def _pointer(b: ir.IRBuilder, array: ir.Value, indices: list[ir.Value]) -> ir.Value:
    offset = _i64(0)
    for axis, index in enumerate(indices):
        stride = b.extract_value(array, [ARRAY_STRIDES, axis])
        offset = b.add(offset, b.mul(index, stride, flags=["nsw"]), flags=["nsw"])
    return b.gep(b.extract_value(array, ARRAY_DATA), [offset], inbounds=True)


def _c_contiguous(b: ir.IRBuilder, array: ir.Value, dims: list[ir.Value]) -> ir.Value:
    """Whether every axis longer than 1 has its C-order stride."""
    ok = ir.Constant(I1, 1)
    for axis, (d, want) in enumerate(zip(dims, array_layout.c_strides(b, dims))):
        have = b.extract_value(array, [ARRAY_STRIDES, axis])
        fits = b.or_(b.icmp_signed("<=", d, _i64(1)), b.icmp_signed("==", have, want))
        ok = b.and_(ok, fits)
    return ok


# ---- argmax, argmin ------------------------------------------------------------------------

def _better(b: ir.IRBuilder, kind: str, t: ScalarType, x: ir.Value, best: ir.Value) -> ir.Value:
    """Whether `x` replaces `best`: strictly greater (less), or a NaN while best is not."""
    op = ">" if kind == "max" else "<"
    if t.is_float:
        return b.and_(b.fcmp_unordered("u" + ("gt" if op == ">" else "lt"), x, best),
                      b.fcmp_ordered("ord", best, best))
    unsigned = t == BOOL or t.is_unsigned
    return b.icmp_unsigned(op, x, best) if unsigned else b.icmp_signed(op, x, best)


class _Best:
    """The best element so far and its index, in stack slots."""

    def __init__(self, em: FunctionEmitter, t: ScalarType):
        self.em, self.t = em, t
        self.value, self.index = em.alloca(lltype(t)), em.alloca(I64_T)

    def start(self, value: ir.Value, index: ir.Value) -> None:
        self.em.builder.store(value, self.value)
        self.em.builder.store(index, self.index)

    def take(self, kind: str, value: ir.Value, index: ir.Value) -> None:
        b = self.em.builder
        better = _better(b, kind, self.t, value, b.load(self.value))
        b.store(b.select(better, value, b.load(self.value)), self.value)
        b.store(b.select(better, index, b.load(self.index)), self.index)


def _scalar_row(em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value, n: ir.Value,
                stride: ir.Value) -> ir.Value:
    """The index of the first extremum of the `n` (> 0) elements at `base`, `stride` apart."""
    b = em.builder
    best = _Best(em, t)
    best.start(_load(b, base, t), _i64(0))

    def body(i):
        best.take(kind, _load(b, b.gep(base, [b.mul(i, stride, flags=["nsw"])]), t), i)
    nests.count_up(b, _i64(1), n, body, ("arg.head", "arg.body", "arg.done"))
    return b.load(best.index)


def _row(em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value, n: ir.Value,
         stride: ir.Value) -> ir.Value:
    """The first extremum's index in a row: in vectors (arg_search.py) where the stride is
    1 and the row holds a vector (not for bools), else element by element."""
    lanes = arg_search.row_lanes(t)
    if lanes is None:
        return _scalar_row(em, kind, t, base, n, stride)
    b = em.builder
    slot = em.alloca(I64_T)

    def version(vectors: bool) -> None:
        b.store(arg_search.first_extremum(em, kind, t, base, n) if vectors
                else _scalar_row(em, kind, t, base, n, stride), slot)
    vectors = b.and_(b.icmp_signed("==", stride, _i64(1)), b.icmp_signed(">=", n, _i64(lanes)))
    loop_metadata.unit_or_strided(em, vectors, version)
    return b.load(slot)


def _unit_row(em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value,
              n: ir.Value) -> ir.Value:
    """`_row` of a unit-stride row as a call of the runtime's `astjit.arg.row.<kind>.<t>`
    (base, n > 0) -> the first extremum's index; bools element by element inline."""
    if arg_search.row_lanes(t) is None:
        return _scalar_row(em, kind, t, base, n, _i64(1))
    pointer = element_type(t).as_pointer()

    def emit(fn, b, data, count):
        site = Body(fn, b)
        b.ret(_row(site, kind, t, data, count, _i64(1)))
    search = shared_function(em.module, f"astjit.arg.row.{kind}.{t}",
                             ir.FunctionType(I64_T, [pointer, I64_T]), emit)
    return em.builder.call(search, [base, n])


def _one_row(em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value, n: ir.Value,
             stride: ir.Value) -> ir.Value:
    """`_row` of a 1-d row, by the runtime's search where its stride is 1."""
    b = em.builder
    slot = em.alloca(I64_T)

    def version(unit: bool) -> None:
        b.store(_unit_row(em, kind, t, base, n) if unit
                else _scalar_row(em, kind, t, base, n, stride), slot)
    loop_metadata.unit_or_strided(em, b.icmp_signed("==", stride, _i64(1)), version)
    return b.load(slot)


def arg_reduce(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    (x,) = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    kind, axis = node.attrs["kind"], node.attrs.get("axis")
    result = node.outputs[0].type
    dims = [array_layout.dim(b, x, k) for k in range(t.ndim)]
    if axis is None:
        n = new_arrays.size_of_dims(b, dims)
        em.fail_if(node, b.icmp_signed("==", n, _i64(0)), "ValueError", EMPTY_ARG.format(kind=kind))
        index = _flat_index(em, kind, t, x, dims, n) if t.ndim else _i64(0)
        if not isinstance(result, ArrayType):
            return index
        out = new_arrays.allocate(em, node, result, [_i64(1)] * result.ndim, zeroed=False)
        b.store(index, b.extract_value(out, ARRAY_DATA))
        return out
    k = axis[0] % t.ndim
    em.fail_if(node, b.icmp_signed("==", dims[k], _i64(0)), "ValueError",
               EMPTY_ARG.format(kind=kind))
    kept = [d for a, d in enumerate(dims) if a != k]
    stride = b.extract_value(x, [ARRAY_STRIDES, k])
    if not isinstance(result, ArrayType):  # a 1-d row
        return _one_row(em, kind, t.dtype, b.extract_value(x, ARRAY_DATA), dims[k], stride)
    shape = [_i64(1) if a == k else d for a, d in enumerate(dims)] if node.attrs.get("keepdims") \
        else kept
    new_arrays.check_dims(em, node, result.dtype, shape)
    out = new_arrays.allocate(em, node, result, shape, zeroed=False)
    out_strides = array_layout.c_strides(b, kept)
    out_data = b.extract_value(out, ARRAY_DATA)

    x_strides = [b.extract_value(x, [ARRAY_STRIDES, a]) for a in range(t.ndim) if a != k]
    fast = b.and_(b.icmp_signed("==", stride, _i64(1)), _evenly_spaced(b, kept, x_strides))

    def each(indices):
        full = list(indices[:k]) + [_i64(0)] + list(indices[k:])
        index = _one_row(em, kind, t.dtype, _pointer(b, x, full), dims[k], stride)
        offset = _i64(0)
        for i, s in zip(indices, out_strides):
            offset = b.add(offset, b.mul(i, s, flags=["nsw"]), flags=["nsw"])
        b.store(index, b.gep(out_data, [offset], inbounds=True))

    def version(unit: bool) -> None:
        if unit:
            count = new_arrays.size_of_dims(b, kept)
            b.call(_rows_function(em.module, kind, t.dtype), [
                b.extract_value(x, ARRAY_DATA), count, dims[k], _row_step(x_strides), out_data])
        else:
            nests.loop_nest(em, kept, each, "arg.rows")
    loop_metadata.unit_or_strided(em, fast, version)
    return out


def _row_step(strides: list[ir.Value]) -> ir.Value:
    """How far apart the rows of evenly spaced kept axes are: the last one's stride (no
    kept axis: one row)."""
    return strides[-1] if strides else _i64(0)


def _evenly_spaced(b: ir.IRBuilder, dims: list[ir.Value], strides: list[ir.Value]) -> ir.Value:
    """Whether the positions of an array of `dims` and `strides` (the kept axes of a row
    search) are the multiples of `_row_step(strides)`, in C order."""
    ok, step = ir.Constant(I1, 1), _row_step(strides)
    for d, have in zip(reversed(dims), reversed(strides)):
        fits = b.or_(b.icmp_signed("<=", d, _i64(1)), b.icmp_signed("==", have, step))
        ok = b.and_(ok, fits)
        step = b.mul(step, d, flags=["nsw"])
    return ok


def _rows_function(module: ir.Module, kind: str, t: ScalarType) -> ir.Function:
    """The runtime's `astjit.arg.rows.<kind>.<t>`: (data, rows, n > 0, step, out) stores in
    out[r] the first extremum's index of the n elements at data + r * step, one apart,
    for each r < rows: one call for every row of a result array (each row's search is
    `_unit_row`'s), where a loop over rows in the kernel took a loops module of its own."""
    pointer = element_type(t).as_pointer()

    def emit(fn, b, data, rows, n, step, out):
        site = Body(fn, b)

        def each(r):
            base = b.gep(data, [b.mul(r, step, flags=["nsw"])], inbounds=True)
            b.store(_unit_row(site, kind, t, base, n), b.gep(out, [r], inbounds=True))
        nests.count_up(b, _i64(0), rows, each, ("arg.rows.head", "arg.rows.body",
                                                "arg.rows.done"))
        b.ret_void()
    fnty = ir.FunctionType(ir.VoidType(), [pointer, I64_T, I64_T, I64_T, I64_T.as_pointer()])
    return shared_function(module, f"astjit.arg.rows.{kind}.{t}", fnty, emit)


def _flat_index(em: FunctionEmitter, kind: str, t: ArrayType, x: ir.Value,
                dims: list[ir.Value], n: ir.Value) -> ir.Value:
    """The C-order index of the first extremum of every element."""
    b = em.builder
    slot = em.alloca(I64_T)

    def version(contiguous: bool) -> None:
        if contiguous:
            b.store(_unit_row(em, kind, t.dtype, b.extract_value(x, ARRAY_DATA), n), slot)
            return
        best = _Best(em, t.dtype)
        best.start(_load(b, b.extract_value(x, ARRAY_DATA), t.dtype), _i64(0))
        count = em.alloca(I64_T)
        b.store(_i64(0), count)

        def body(indices):
            i = b.load(count)
            best.take(kind, _load(b, _pointer(b, x, indices), t.dtype), i)
            b.store(b.add(i, _i64(1), flags=["nsw"]), count)
        nests.loop_nest(em, dims, body, "arg.flat")
        b.store(b.load(best.index), slot)
    loop_metadata.unit_or_strided(em, _c_contiguous(b, x, dims), version)
    return b.load(slot)


# ---- cumsum, cumprod -----------------------------------------------------------------------

def _convert(b: ir.IRBuilder, value: ir.Value, source: ScalarType, target: ScalarType) -> ir.Value:
    """An element of `source` as the accumulator type `target` (int64 or a float)."""
    ty = lltype(target)
    if source == target:
        return value
    if source.is_complex or target.is_complex:
        return complex_cast(b, value, source, target)
    if target.is_float:
        if source.is_float:
            return b.fpext(value, ty) if target == F64 else b.fptrunc(value, ty)
        return b.uitofp(value, ty) if source == BOOL else b.sitofp(value, ty)
    return b.zext(value, ty) if source == BOOL else b.sext(value, ty) \
        if value.type.width < ty.width else value


def _combine(b: ir.IRBuilder, kind: str, t: ScalarType, acc: ir.Value, x: ir.Value) -> ir.Value:
    """acc + x or acc * x (a complex's `fadd` adds both parts; its product is complexes.py's)."""
    if kind == "sum":
        return b.fadd(acc, x) if t.is_float or t.is_complex else b.add(acc, x)
    if t.is_complex:
        return multiply(b, acc, x)
    return b.fmul(acc, x) if t.is_float else b.mul(acc, x)


def scan(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    (x,) = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    out_t: ArrayType = node.outputs[0].type
    acc_t = scan_dtype(node.attrs, t)
    kind, axis, reverse = node.attrs["kind"], node.attrs.get("axis"), node.attrs.get("reverse")
    dims = [array_layout.dim(b, x, k) for k in range(t.ndim)]
    out_dims = dims if axis is not None else [new_arrays.size_of_dims(b, dims)]
    new_arrays.check_dims(em, node, out_t.dtype, out_dims)
    out = new_arrays.allocate(em, node, out_t, out_dims, zeroed=False)
    data = b.extract_value(out, ARRAY_DATA)
    c_strides = array_layout.c_strides(b, dims)
    k = None if axis is None else axis[0] % t.ndim
    step = _i64(1) if k is None else c_strides[k]
    flipped = set(range(t.ndim)) if reverse and k is None else {k} if reverse else set()

    def each(counted):
        ix = [b.sub(b.sub(dims[a], _i64(1)), i) if a in flipped else i
              for a, i in enumerate(counted)]
        p = _i64(0)
        for i, s in zip(ix, c_strides):
            p = b.add(p, b.mul(i, s, flags=["nsw"]), flags=["nsw"])
        if k is None:
            first = b.icmp_signed("==", counted_linear(counted), _i64(0))
        else:
            first = b.icmp_signed("==", counted[k], _i64(0))
        previous = b.add(p, step) if reverse else b.sub(p, step)
        previous = b.select(first, p, previous)
        value = _convert(b, _load(b, _pointer(b, x, ix), t.dtype), t.dtype, acc_t)
        before = b.load(b.gep(data, [previous], inbounds=True), align=array_layout.ITEM_SIZES[acc_t])
        _store(b, b.gep(data, [p], inbounds=True), acc_t,
               b.select(first, value, _combine(b, kind, acc_t, before, value)))

    def counted_linear(counted):
        q = _i64(0)
        for i, s in zip(counted, c_strides):
            q = b.add(q, b.mul(i, s, flags=["nsw"]), flags=["nsw"])
        return q
    nests.loop_nest(em, dims, each, "scan")
    return out


ROUTINES = {"arg_reduce": arg_reduce, "scan": scan}
