"""The sorting primitives (ir/ops/sorting.py) in compiled code.

- `sort`, `argsort`: the new array by one call of the runtime (sorted_arrays.py).
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
from . import array_layout, nests, new_arrays
from .lltypes import ARRAY_DATA, ARRAY_SHAPE, ARRAY_STRIDES, I1, I64_T, element_type
from .scans import _convert, _load, _pointer
from .sorted_arrays import argsort, element_offset, sort

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def take_along(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    x, idx = args
    b = em.builder
    t: ArrayType = node.inputs[0].type
    k, scatter = node.attrs["axis"], node.attrs["scatter"]
    dims = [array_layout.dim(b, idx, a) for a in range(t.ndim)]
    out = new_arrays.allocate(em, node, t, dims, zeroed=scatter)
    data, strides = b.extract_value(out, ARRAY_DATA), array_layout.c_strides(b, dims)

    def each(indices):
        j = b.load(_pointer(b, idx, indices))
        moved = [j if a == k else i for a, i in enumerate(indices)]
        if not scatter:
            b.store(b.load(_pointer(b, x, moved)), b.gep(data, [element_offset(b, indices, strides)]))
            return
        target = b.gep(data, [element_offset(b, moved, strides)])
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
    data, strides = b.extract_value(out, ARRAY_DATA), array_layout.c_strides(b, dims)
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
        b.store(found, b.gep(data, [element_offset(b, indices, strides)]))
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
