"""`sort` and `argsort` (ir/ops/sorting.py) in compiled code: the new array by one runtime call.

- `sort`: a C-contiguous copy of the input, then NumPy's own kernel of the kind
  (runtime/npysort.py) on each lane along the axis: in place where the axis is the last
  (a lane is contiguous), else each lane gathered into a buffer, sorted, written back —
  what `np.sort` does.
- `argsort`: each lane's values (the input's own memory where its stride is 1, else a
  gathered copy) and its indices 0 .. n-1 go to NumPy's argsort kernel, which permutes
  the indices (in the result where the axis is the last, else in a buffer scattered back).

Between its input and its result, a sort does the same at every site: the result's
allocation, the copy, its buffers' allocations and releases, the lanes' loops, the
releases of a failure. So all of it is one function the runtime shares per dtype, kind,
rank and axis (shared.py), `astjit.sort.new.*` and `astjit.argsort.new.*`: (x, result
slot, the caller's owned list, the site's two failure statuses) -> 0 with the result in
its slot, a new reference on the owned list (owned.py), else the status of what failed,
nothing left allocated. The kernel's module holds the call and one branch to its
failure exit; those loops (a kernel call per lane, strided gathers) and the allocations
are compiled once per process or read from the runtime cache, not at every first call
(sort_rows' first call, docs/benchmarks.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import I64, ArrayType, ScalarType
from . import array_layout, copies, nests, new_arrays, owned
from . import messages as msg
from .lltypes import ARRAY_DATA, ARRAY_OWNER, ARRAY_SHAPE, ARRAY_STRIDES, I32_T, I64_T, element_type, lltype
from .runtime import npysort, numpy_api
from .runtime.pyapi import PYOBJ, declare
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

NO_MEMORY = "NumPy's sort could not allocate its work memory"


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def sort(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    t: ArrayType = node.inputs[0].type
    k, kind = node.attrs["axis"], node.attrs["kind"]
    function = shared_function(em.module, f"astjit.sort.new.{t.dtype}.{kind}.{t.ndim}.{k}",
                               *_sorted_array(t, kind, k))
    return _new_array(em, node, function, args[0], t)


def argsort(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    t: ArrayType = node.inputs[0].type
    k, kind = node.attrs["axis"], node.attrs["kind"]
    function = shared_function(em.module, f"astjit.argsort.new.{t.dtype}.{kind}.{t.ndim}.{k}",
                               *_argsorted_array(t, kind, k))
    return _new_array(em, node, function, args[0], ArrayType(I64, t.ndim))


def _new_array(em: FunctionEmitter, node: Node, function: ir.Function, x: ir.Value,
               out_t: ArrayType) -> ir.Value:
    """The array a runtime `astjit.<sort|argsort>.new.*` function makes of `x`, owned and on
    the owned list; the status it returns, the site's own, leaves by the failure exit."""
    b = em.builder
    slot = em.alloca(lltype(out_t))
    listed = em.held["owned"]  # a sort allocates: its function has an owned list
    failures = (em.errors.status(msg.OUT_OF_MEMORY, new_arrays.ALLOCATION_FAILED, node.loc),
                em.errors.status("MemoryError", NO_MEMORY, node.loc))
    status = b.call(function, [x, slot, listed.count, listed.items, _i64(listed.capacity),
                               *(ir.Constant(I32_T, s) for s in failures)])
    em.return_status_if(b.icmp_unsigned("!=", status, ir.Constant(I32_T, 0)), status)
    return b.load(slot)


def _function_type(t: ArrayType, out_t: ArrayType) -> ir.FunctionType:
    """(x, result slot, owned list, no-memory status, kernel-failed status) -> status."""
    return ir.FunctionType(I32_T, [lltype(t), lltype(out_t).as_pointer(), *owned.LIST_PARAMS,
                                   I64_T, I32_T, I32_T])


class _Allocations:
    """The arrays a runtime `*.new.*` function has made: its result, then its buffers.

    `new` returns `no_memory` where NumPy cannot allocate, releasing what was made
    before; `finish` releases the buffers and hands the result over (or returns
    `failed` where the lanes' kernel did, the result released too)."""

    def __init__(self, b: ir.IRBuilder, no_memory: ir.Value):
        self.b, self.no_memory, self.objects = b, no_memory, []

    def new(self, t: ArrayType, dims: list[ir.Value]) -> ir.Value:
        b = self.b
        obj = b.call(new_arrays.new_ndarray(b.function.module, t.ndim, zeroed=False),
                     [numpy_api.descr_constant(t.dtype), *dims])
        with b.if_then(b.icmp_unsigned("==", obj, ir.Constant(PYOBJ, None)), likely=False):
            self._release(self.objects)
            b.ret(self.no_memory)
        self.objects.append(obj)
        return new_arrays.c_order_value(b, t, obj, dims)

    def buffer(self, dtype: ScalarType, n: ir.Value) -> ir.Value:
        """The data of a new buffer of `n` elements."""
        return self.b.extract_value(self.new(ArrayType(dtype, 1), [n]), ARRAY_DATA)

    def finish(self, status: ir.Value, failed: ir.Value, out: ir.Value, slot: ir.Value,
               listed: list[ir.Value]) -> None:
        b = self.b
        self._release(self.objects[1:])
        with b.if_then(b.icmp_signed("<", status, ir.Constant(status.type, 0)), likely=False):
            self._release(self.objects[:1])
            b.ret(failed)
        b.store(out, slot)
        b.call(owned.helper(b.function.module, "push"), [*listed, b.extract_value(out, ARRAY_OWNER)])
        b.ret(ir.Constant(I32_T, 0))

    def _release(self, objects: list[ir.Value]) -> None:
        for obj in objects:
            self.b.call(declare(self.b.function.module, "Py_DecRef"), [obj])


def _sorted_array(t: ArrayType, kind: str, k: int):
    """The runtime's `astjit.sort.new.<dtype>.<kind>.<ndim>.<axis>`: a C-contiguous copy of x,
    each lane along axis k sorted (`astjit.sort.lanes`, through a buffer of one lane
    where k is not the last axis)."""
    def emit(fn, b, x, slot, count, items, capacity, no_memory, failed):
        dims = [b.extract_value(x, [ARRAY_SHAPE, a]) for a in range(t.ndim)]
        made = _Allocations(b, no_memory)
        out = made.new(t, dims)
        copies.copy_with(b, x, t, out, t)
        space = ir.Constant(element_type(t.dtype).as_pointer(), None) \
            if k == t.ndim - 1 else made.buffer(t.dtype, dims[k])
        lanes = shared_function(fn.module, f"astjit.sort.lanes.{t.dtype}.{kind}.{t.ndim}.{k}",
                                *_sorted_lanes(t.dtype, kind, t.ndim, k))
        status = b.call(lanes, [b.extract_value(out, ARRAY_DATA), space, *dims])
        made.finish(status, failed, out, slot, [count, items, capacity])
    return _function_type(t, t), emit


def _argsorted_array(t: ArrayType, kind: str, k: int):
    """The runtime's `astjit.argsort.new.<dtype>.<kind>.<ndim>.<axis>`: the C-contiguous array
    of each lane's order along axis k (`astjit.argsort.lanes`, with a buffer for a lane's
    values, and one for its indices where k is not the last axis)."""
    out_t = ArrayType(I64, t.ndim)

    def emit(fn, b, x, slot, count, items, capacity, no_memory, failed):
        dims = [b.extract_value(x, [ARRAY_SHAPE, a]) for a in range(t.ndim)]
        strides = [b.extract_value(x, [ARRAY_STRIDES, a]) for a in range(t.ndim)]
        made = _Allocations(b, no_memory)
        out = made.new(out_t, dims)
        values = made.buffer(t.dtype, dims[k])
        order = ir.Constant(I64_T.as_pointer(), None) \
            if k == t.ndim - 1 else made.buffer(I64, dims[k])
        lanes = shared_function(fn.module, f"astjit.argsort.lanes.{t.dtype}.{kind}.{t.ndim}.{k}",
                                *_argsorted_lanes(t.dtype, kind, t.ndim, k))
        status = b.call(lanes, [b.extract_value(x, ARRAY_DATA), b.extract_value(out, ARRAY_DATA),
                                values, order, *dims, *strides])
        made.finish(status, failed, out, slot, [count, items, capacity])
    return _function_type(t, out_t), emit


# ---- the lanes' loops ---------------------------------------------------------------------

def element_offset(b: ir.IRBuilder, indices, strides) -> ir.Value:
    """The element offset of `indices` at element `strides`."""
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


def _void(b: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    return b.bitcast(pointer, npysort.VOID_P)


def _sorted_lanes(dtype: ScalarType, kind: str, ndim: int, k: int):
    """The runtime's `astjit.sort.lanes.<dtype>.<kind>.<ndim>.<axis>`: (data, buffer, *dims) sorts
    each lane of a C-contiguous array along axis k by NumPy's kernel, in place where k is
    the last axis, else through `buffer` (room for one lane); the first negative status of
    the kernel (its work memory), else 0. One function per kind of sort in the process,
    which `astjit.sort.new` calls."""
    last = k == ndim - 1
    pointer = element_type(dtype).as_pointer()

    def emit(fn, b, data, buffer, *dims):
        kernel = npysort.declare(fn.module, "sort", dtype, kind)
        strides, n = array_layout.c_strides(b, list(dims)), dims[k]
        null = ir.Constant(npysort.VOID_P, None)

        def lane(indices):
            start = b.gep(data, [element_offset(b, indices, strides)], inbounds=True)
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
        strides, n, stride = array_layout.c_strides(b, dims), dims[k], x_strides[k]
        null = ir.Constant(npysort.VOID_P, None)

        def lane(indices):
            source = b.gep(x, [element_offset(b, indices, x_strides)])
            unit = b.icmp_signed("==", stride, _i64(1))
            with b.if_then(b.not_(unit)):
                _move(b, source, stride, values, _i64(1), n)
            lane_values = b.select(unit, source, values)
            start = b.gep(data, [element_offset(b, indices, strides)], inbounds=True)
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
