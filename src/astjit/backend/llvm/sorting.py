"""The sorting primitives (ir/ops/sorting.py) in compiled code.

- `sort`: a C-contiguous copy of the input, then NumPy's own kernel of the kind
  (runtime/npysort.py) on each lane along the axis: in place where the axis is the last
  (a lane is contiguous), else each lane gathered into a buffer, sorted, written back —
  what `np.sort` does.
- `argsort`: each lane's values (the input's own memory where its stride is 1, else a
  gathered copy) and its indices 0 .. n-1 go to NumPy's argsort kernel, which permutes
  the indices (in the result where the axis is the last, else in a buffer scattered back).

  Both loop over the lanes in a runtime function (shared.py), one per dtype, kind, rank
  and axis, which the kernel's module calls once: those loops (a kernel call per lane,
  strided gathers) are compiled once per process or read from the runtime cache, not
  by the loops pipeline (jit/split.py) at every first call (sort_rows' first call,
  docs/benchmarks.md).
- `take_along`: one walk of the indices in C order, gathering (or scatter-adding into
  zeros) along the axis. Only derivative code makes it: the indices are a permutation.
- `searchsorted`: NumPy's binary search (npysort/binsearch.cpp), keys in C order, the
  range narrowed from the previous key's answer as NumPy does, so the same answers
  even for an unsorted `a`; elements compared in the common dtype, NaN greatest.
- `unique_sorted`: one pass counting the distinct elements (a NaN equal to a NaN), the
  result allocated, a second pass writing them.
- `nonzero`: one pass counting, then the (ndim, count) result written in C order without
  a branch (into a spare column; the result's rows are `count + 1` apart).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.sorting import search_type
from ...ir.types import BOOL, I64, ArrayType, ScalarType
from . import array_layout, copies, nests, new_arrays, owned
from .lltypes import ARRAY_DATA, ARRAY_SHAPE, ARRAY_STRIDES, I1, I64_T, element_type
from .runtime import npysort
from .scans import _c_strides, _convert, _load, _pointer
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

NO_MEMORY = "NumPy's sort could not allocate its work memory"


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _offset(b: ir.IRBuilder, indices, strides) -> ir.Value:
    offset = _i64(0)
    for i, s in zip(indices, strides):
        offset = b.add(offset, b.mul(i, s, flags=["nsw"]), flags=["nsw"])
    return offset


def _move(b: ir.IRBuilder, source: ir.Value, source_stride: ir.Value, dest: ir.Value,
          dest_stride: ir.Value, n: ir.Value) -> None:
    """dest[j * dest_stride] = source[j * source_stride] for j < n (raw elements)."""
    def body(j):
        value = b.load(b.gep(source, [b.mul(j, source_stride, flags=["nsw"])]))
        b.store(value, b.gep(dest, [b.mul(j, dest_stride, flags=["nsw"])]))
    nests.count_up(b, _i64(0), n, body, ("lane.copy.head", "lane.copy.body", "lane.copy.done"))


def _buffer(em: FunctionEmitter, node: Node, dtype: ScalarType, n: ir.Value) -> ir.Value:
    return new_arrays.allocate(em, node, ArrayType(dtype, 1), [n], zeroed=False)


def _check(em: FunctionEmitter, node: Node, status: ir.Value) -> None:
    em.fail_if(node, em.builder.icmp_signed("<", status, ir.Constant(status.type, 0)),
               "MemoryError", NO_MEMORY)


def _void(b: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    return b.bitcast(pointer, npysort.VOID_P)


def sort(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    (x,) = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    k, last = node.attrs["axis"], node.attrs["axis"] == t.ndim - 1
    dims = [array_layout.dim(b, x, a) for a in range(t.ndim)]
    out = new_arrays.allocate(em, node, t, dims, zeroed=False)
    copies.copy(em, x, t, out, t)
    buffer = None if last else _buffer(em, node, t.dtype, dims[k])
    space = ir.Constant(element_type(t.dtype).as_pointer(), None) if buffer is None \
        else b.extract_value(buffer, ARRAY_DATA)
    kind = node.attrs["kind"]
    lanes = shared_function(em.module, f"astjit.sort.lanes.{t.dtype}.{kind}.{t.ndim}.{k}",
                            *_sorted_lanes(t.dtype, kind, t.ndim, k))
    _check(em, node, b.call(lanes, [b.extract_value(out, ARRAY_DATA), space, *dims]))
    if buffer is not None:
        owned.release_now(em, buffer)
    return out


def _sorted_lanes(dtype: ScalarType, kind: str, ndim: int, k: int):
    """The runtime's `astjit.sort.lanes.<dtype>.<kind>.<ndim>.<axis>`: (data, buffer, *dims) sorts
    each lane of a C-contiguous array along axis k by NumPy's kernel, in place where k is
    the last axis, else through `buffer` (room for one lane); the first negative status of
    the kernel (its work memory), else 0. One function per kind of sort in the process: a
    kernel's module holds only its call, and its loops module none of the lanes' loops."""
    last = k == ndim - 1
    pointer = element_type(dtype).as_pointer()

    def emit(fn, b, data, buffer, *dims):
        kernel = npysort.declare(fn.module, "sort", dtype, kind)
        strides, n = _c_strides(b, list(dims)), dims[k]
        null = ir.Constant(npysort.VOID_P, None)

        def lane(indices):
            start = b.gep(data, [_offset(b, indices, strides)], inbounds=True)
            if not last:
                _move(b, start, strides[k], buffer, _i64(1), n)
            status = b.call(kernel, [_void(b, buffer if not last else start), n, null])
            _return_if_failed(b, status)
            if not last:
                _move(b, buffer, _i64(1), start, strides[k], n)

        _each_lane(b, dims, k, lane)
        b.ret(ir.Constant(npysort.SORT_TYPE.return_type, 0))
    fnty = ir.FunctionType(npysort.SORT_TYPE.return_type, [pointer, pointer] + [I64_T] * ndim)
    return fnty, emit


def argsort(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    (x,) = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    k, last = node.attrs["axis"], node.attrs["axis"] == t.ndim - 1
    dims = [array_layout.dim(b, x, a) for a in range(t.ndim)]
    out = new_arrays.allocate(em, node, ArrayType(I64, t.ndim), dims, zeroed=False)
    values = _buffer(em, node, t.dtype, dims[k])
    order = None if last else _buffer(em, node, I64, dims[k])
    kind = node.attrs["kind"]
    lanes = shared_function(em.module, f"astjit.argsort.lanes.{t.dtype}.{kind}.{t.ndim}.{k}",
                            *_argsorted_lanes(t.dtype, kind, t.ndim, k))
    strides = [b.extract_value(x, [ARRAY_STRIDES, a]) for a in range(t.ndim)]
    space = ir.Constant(I64_T.as_pointer(), None) if order is None \
        else b.extract_value(order, ARRAY_DATA)
    _check(em, node, b.call(lanes, [b.extract_value(x, ARRAY_DATA), b.extract_value(out, ARRAY_DATA),
                                    b.extract_value(values, ARRAY_DATA), space, *dims, *strides]))
    for buffer in (values, order):
        if buffer is not None:
            owned.release_now(em, buffer)
    return out


def _argsorted_lanes(dtype: ScalarType, kind: str, ndim: int, k: int):
    """The runtime's `astjit.argsort.lanes.<dtype>.<kind>.<ndim>.<axis>`: (x's data, the
    result's data, `values`, `order`, *x's dims, *x's strides) gives each lane along axis
    k of the C-contiguous result the order NumPy's kernel sorts x's lane in: the lane's
    values (x's own memory where its stride is 1, else gathered into `values`) and its
    indices 0 .. n-1 (in the result where k is the last axis, else in `order`, scattered
    back); the kernel's first negative status, else 0."""
    last = k == ndim - 1
    element = element_type(dtype).as_pointer()

    def emit(fn, b, x, data, values, order, *fields):
        kernel = npysort.declare(fn.module, "argsort", dtype, kind)
        dims, x_strides = list(fields[:ndim]), list(fields[ndim:])
        strides, n, stride = _c_strides(b, dims), dims[k], x_strides[k]
        null = ir.Constant(npysort.VOID_P, None)

        def lane(indices):
            source = b.gep(x, [_offset(b, indices, x_strides)])
            unit = b.icmp_signed("==", stride, _i64(1))
            with b.if_then(b.not_(unit)):
                _move(b, source, stride, values, _i64(1), n)
            lane_values = b.select(unit, source, values)
            start = b.gep(data, [_offset(b, indices, strides)], inbounds=True)
            target = start if last else order
            nests.count_up(b, _i64(0), n, lambda j: b.store(j, b.gep(target, [j])),
                           ("argsort.iota.head", "argsort.iota.body", "argsort.iota.done"))
            status = b.call(kernel, [_void(b, lane_values), target, n, null])
            _return_if_failed(b, status)
            if not last:
                _move(b, target, _i64(1), start, strides[k], n)

        _each_lane(b, dims, k, lane)
        b.ret(ir.Constant(npysort.ARGSORT_TYPE.return_type, 0))
    fnty = ir.FunctionType(npysort.ARGSORT_TYPE.return_type,
                           [element, I64_T.as_pointer(), element, I64_T.as_pointer()]
                           + [I64_T] * (2 * ndim))
    return fnty, emit


def _each_lane(b: ir.IRBuilder, dims: list[ir.Value], k: int, lane) -> None:
    """lane(indices) for each lane along axis k of an array of `dims`, in C order: the
    indices of its first element (0 along k)."""
    kept = [d for a, d in enumerate(dims) if a != k]

    def nest(indices):
        if len(indices) == len(kept):
            lane([*indices[:k], _i64(0), *indices[k:]])
            return
        nests.count_up(b, _i64(0), kept[len(indices)], lambda i: nest([*indices, i]),
                       ("lanes.head", "lanes.body", "lanes.done"))
    nest([])


def _return_if_failed(b: ir.IRBuilder, status: ir.Value) -> None:
    """Return `status` where NumPy's sort kernel failed (negative: its work memory)."""
    with b.if_then(b.icmp_signed("<", status, ir.Constant(status.type, 0)), likely=False):
        b.ret(status)


def take_along(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    x, idx = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    k, scatter = node.attrs["axis"], node.attrs["scatter"]
    dims = [array_layout.dim(b, idx, a) for a in range(t.ndim)]
    out = new_arrays.allocate(em, node, t, dims, zeroed=scatter)
    data, strides = b.extract_value(out, ARRAY_DATA), _c_strides(b, dims)

    def each(indices):
        j = b.load(_pointer(b, idx, indices))
        moved = [j if a == k else i for a, i in enumerate(indices)]
        if not scatter:
            b.store(b.load(_pointer(b, x, moved)), b.gep(data, [_offset(b, indices, strides)]))
            return
        target = b.gep(data, [_offset(b, moved, strides)])
        b.store(b.fadd(b.load(target), b.load(_pointer(b, x, indices))), target)
    nests.loop_nest(em, dims, each, "take_along")
    return out


# ---- searchsorted ---------------------------------------------------------------------------

def _less(b: ir.IRBuilder, t: ScalarType, x: ir.Value, y: ir.Value) -> ir.Value:
    """NumPy's sort order: x < y, a NaN greater than every number."""
    if t.is_float:
        return b.or_(b.fcmp_ordered("<", x, y),
                     b.and_(b.fcmp_unordered("uno", y, y), b.fcmp_ordered("ord", x, x)))
    return b.icmp_unsigned("<", x, y) if t == BOOL else b.icmp_signed("<", x, y)


def _bisect(em: FunctionEmitter, before, base: ir.Value, stride: ir.Value, low: ir.Value,
            high: ir.Value, key: ir.Value, load) -> ir.Value:
    """The first index in [low, high) where `before(a[i], key)` fails (a[i] by `load`)."""
    b = em.builder
    low_slot, high_slot = em.alloca(I64_T), em.alloca(I64_T)
    b.store(low, low_slot)
    b.store(high, high_slot)
    head, body, done = (b.function.append_basic_block(f"bisect.{n}") for n in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    lo, hi = b.load(low_slot), b.load(high_slot)
    b.cbranch(b.icmp_signed("<", lo, hi), body, done)
    b.position_at_end(body)
    mid = b.add(lo, b.ashr(b.sub(hi, lo), _i64(1)))
    go_right = before(load(b.gep(base, [b.mul(mid, stride)])), key)
    b.store(b.select(go_right, b.add(mid, _i64(1)), lo), low_slot)
    b.store(b.select(go_right, hi, mid), high_slot)
    b.branch(head)
    b.position_at_end(done)
    return b.load(low_slot)


def searchsorted(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    a, v = args
    b = em.builder
    a_t, v_t = node.inputs[0].type, node.inputs[1].type
    v_dtype = v_t.dtype if isinstance(v_t, ArrayType) else v_t
    ct = search_type(a_t.dtype, v_dtype)
    if node.attrs["side"] == "left":
        def before(x, key):
            return _less(b, ct, x, key)
    else:
        def before(x, key):
            return b.not_(_less(b, ct, key, x))
    n = array_layout.dim(b, a, 0)
    base, stride = b.extract_value(a, ARRAY_DATA), b.extract_value(a, [ARRAY_STRIDES, 0])

    def load_a(pointer):
        return _convert(b, _load(b, pointer, a_t.dtype), a_t.dtype, ct)
    if not isinstance(v_t, ArrayType):
        key = _convert(b, v, v_dtype, ct) if v.type != I1 or v_dtype == BOOL else v
        return _bisect(em, before, base, stride, _i64(0), n, key, load_a)
    dims = [array_layout.dim(b, v, k) for k in range(v_t.ndim)]
    out = new_arrays.allocate(em, node, ArrayType(I64, v_t.ndim), dims, zeroed=False)
    data, strides = b.extract_value(out, ARRAY_DATA), _c_strides(b, dims)
    low, high = em.alloca(I64_T), em.alloca(I64_T)
    previous = em.alloca(element_type(ct) if ct != BOOL else I1)
    b.store(_i64(0), low)
    b.store(n, high)
    first = _load(b, b.extract_value(v, ARRAY_DATA), v_dtype)
    b.store(_convert(b, first, v_dtype, ct), previous)

    def each(indices):
        key = _convert(b, _load(b, _pointer(b, v, indices), v_dtype), v_dtype, ct)
        rising = before(b.load(previous), key)
        hi = b.load(high)
        b.store(b.select(rising, b.load(low), _i64(0)), low)
        b.store(b.select(rising, n, b.select(b.icmp_signed("<", hi, n), b.add(hi, _i64(1)), n)),
                high)
        b.store(key, previous)
        found = _bisect(em, before, base, stride, b.load(low), b.load(high), key, load_a)
        b.store(found, low)
        b.store(found, b.gep(data, [_offset(b, indices, strides)]))
    with b.if_then(b.icmp_signed(">", new_arrays.size_of_dims(b, dims), _i64(0))):
        nests.loop_nest(em, dims, each, "searchsorted")
    return out


# ---- unique, nonzero ------------------------------------------------------------------------

def _distinct(b: ir.IRBuilder, t: ScalarType, x: ir.Value, y: ir.Value) -> ir.Value:
    if t.is_float:
        both_nan = b.and_(b.fcmp_unordered("uno", x, x), b.fcmp_unordered("uno", y, y))
        return b.and_(b.fcmp_unordered("une", x, y), b.not_(both_nan))
    return b.icmp_unsigned("!=", x, y)


def unique_sorted(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    (s,) = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    n = array_layout.dim(b, s, 0)
    base, stride = b.extract_value(s, ARRAY_DATA), b.extract_value(s, [ARRAY_STRIDES, 0])

    def at(i):
        return _load(b, b.gep(base, [b.mul(i, stride)]), t.dtype)
    count = em.alloca(I64_T)
    b.store(b.select(b.icmp_signed(">", n, _i64(0)), _i64(1), _i64(0)), count)

    def tally(i):
        new = _distinct(b, t.dtype, at(i), at(b.sub(i, _i64(1))))
        b.store(b.add(b.load(count), b.zext(new, I64_T)), count)
    nests.count_up(b, _i64(1), n, tally, ("unique.count.head", "unique.count.body", "unique.count.done"))
    out = new_arrays.allocate(em, node, t, [b.load(count)], zeroed=False)
    data = b.extract_value(out, ARRAY_DATA)
    written = em.alloca(I64_T)
    b.store(_i64(0), written)

    def write(i):
        new = b.or_(b.icmp_signed("==", i, _i64(0)),
                    _distinct(b, t.dtype, at(i), at(b.sub(i, _i64(1)))))
        with b.if_then(new):
            w = b.load(written)
            b.store(b.load(b.gep(base, [b.mul(i, stride)])), b.gep(data, [w]))
            b.store(b.add(w, _i64(1)), written)
    nests.count_up(b, _i64(0), n, write, ("unique.write.head", "unique.write.body", "unique.write.done"))
    return out


def _nonzero_at(b: ir.IRBuilder, t: ScalarType, x: ir.Value, indices) -> ir.Value:
    value = _load(b, _pointer(b, x, indices), t)
    if t.is_float:
        return b.fcmp_unordered("une", value, ir.Constant(value.type, 0.0))
    return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))


def nonzero(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    (x,) = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    dims = [array_layout.dim(b, x, a) for a in range(t.ndim)]
    count = em.alloca(I64_T)
    b.store(_i64(0), count)
    nests.loop_nest(em, dims, lambda ix: b.store(
        b.add(b.load(count), b.zext(_nonzero_at(b, t.dtype, x, ix), I64_T)), count), "nonzero.count")
    total = b.load(count)
    # one spare column: every element's indices are stored at the next free column, whether
    # it is nonzero or not (no branch), and the column advances only for a nonzero one
    spare = b.add(total, _i64(1))
    out = new_arrays.allocate(em, node, ArrayType(I64, 2), [_i64(t.ndim), spare], zeroed=False)
    out = b.insert_value(out, total, [ARRAY_SHAPE, 1])
    data = b.extract_value(out, ARRAY_DATA)
    b.store(_i64(0), count)

    def write(indices):
        c = b.load(count)
        for a, i in enumerate(indices):
            b.store(i, b.gep(data, [b.add(b.mul(_i64(a), spare), c)]))
        b.store(b.add(c, b.zext(_nonzero_at(b, t.dtype, x, indices), I64_T)), count)
    nests.loop_nest(em, dims, write, "nonzero.write")
    return out


ROUTINES = {"sort": sort, "argsort": argsort, "take_along": take_along,
            "searchsorted": searchsorted, "unique_sorted": unique_sorted, "nonzero": nonzero}
