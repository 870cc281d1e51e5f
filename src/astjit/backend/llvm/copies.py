"""Array structs and strided copies, shared by the lowerings (views, linalg): `build` makes an
array value, `copy` / `copy_with` copy one array into another (the source broadcast),
`contiguous_copy` makes a new C-contiguous array with an array's elements.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from ...ir.types import ArrayType
from . import array_layout, loop_metadata, nests, new_arrays, owned
from .lltypes import (
    ARRAY_DATA,
    ARRAY_OWNER,
    ARRAY_SHAPE,
    ARRAY_STRIDES,
    I1,
    I64_T,
    element_type,
    zero,
)
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _stride(b, array, axis):
    return b.extract_value(array, [ARRAY_STRIDES, axis])


def build(b, t: ArrayType, data, owner, shape, strides) -> ir.Value:
    value = zero(t)
    value = b.insert_value(value, data, ARRAY_DATA)
    value = b.insert_value(value, owner, ARRAY_OWNER)
    for axis, (d, s) in enumerate(zip(shape, strides)):
        value = b.insert_value(value, d, [ARRAY_SHAPE, axis])
        value = b.insert_value(value, s, [ARRAY_STRIDES, axis])
    return value


def copy(em: FunctionEmitter, source: ir.Value, src_t: ArrayType, dest: ir.Value,
         dest_t: ArrayType) -> None:
    """dest[...] = source, the source broadcast (shapes already checked): its axes align
    with dest's last ones, and an axis of length 1 repeats. The loop nest is the module's
    `astjit.copy.<type>.<dest ndim>.<source ndim>` (shared.py), one per kind of copy."""
    copy_with(em.builder, source, src_t, dest, dest_t)


def copy_with(b: ir.IRBuilder, source: ir.Value, src_t: ArrayType, dest: ir.Value,
              dest_t: ArrayType) -> None:
    """`copy` in the function `b` is in."""
    element = element_type(dest_t.dtype)
    name = f"astjit.copy.{element}.{dest_t.ndim}.{src_t.ndim}"
    function = shared_function(b.function.module, name,
                               *_copy(element, dest_t.ndim, src_t.ndim))
    fields = [array_layout.dim(b, source, k) for k in range(src_t.ndim)] + \
             [_stride(b, source, k) for k in range(src_t.ndim)] + \
             [array_layout.dim(b, dest, k) for k in range(dest_t.ndim)] + \
             [_stride(b, dest, k) for k in range(dest_t.ndim)]
    b.call(function, [b.extract_value(source, ARRAY_DATA), b.extract_value(dest, ARRAY_DATA),
                      *fields])


SHORT_AXES = (2, 3, 4)
"""Lengths of the last axis for which a copy's innermost loop is unrolled."""


class _Site(NamedTuple):
    """What `nests.loop_nest` needs of an emitter, in a shared function."""

    builder: ir.IRBuilder


def _copy(element: ir.Type, ndim: int, src_ndim: int):
    def emit(fn, b, source, dest, *fields):
        """dest = source broadcast: (source dims, source strides, dest dims, dest strides)."""
        src_dims, src_strides = fields[:src_ndim], fields[src_ndim:2 * src_ndim]
        dims, dest_strides = fields[2 * src_ndim:2 * src_ndim + ndim], fields[2 * src_ndim + ndim:]
        src_strides = [b.select(b.icmp_signed("==", d, _i64(1)), _i64(0), s)
                       for d, s in zip(src_dims, src_strides)]
        lead = ndim - src_ndim
        align = element.width // 8 if isinstance(element, ir.IntType) else \
            (8 if element == ir.DoubleType() else 4)

        def copier(src_strides, dest_strides):
            def body(indices):
                value = b.load(_at(b, source, src_strides, indices[lead:]), align=align)
                b.store(value, _at(b, dest, dest_strides, indices), align=align)
            return body
        body = copier(src_strides, dest_strides)
        if ndim >= 2:
            _unrolled_short_last_axis(fn, b, dims, body)
        if src_ndim:
            _reversed_last_axis(fn, b, dims, src_strides, dest_strides, copier)
        nests.loop_nest(_Site(b), list(dims), body, "copy")
        b.ret_void()
    fnty = ir.FunctionType(ir.VoidType(), [element.as_pointer()] * 2 +
                           [I64_T] * (2 * src_ndim + 2 * ndim))
    return fnty, emit


def _unrolled_short_last_axis(fn: ir.Function, b: ir.IRBuilder, dims, body) -> None:
    """Where the last axis has a length in SHORT_AXES, the copy with that axis unrolled
    (np.repeat's copy of a broadcast view is (n, 2): an innermost loop of two steps costs
    more than the copying it does); the builder is left where the other lengths go on."""
    generic = fn.append_basic_block("copy.generic")
    cases = b.switch(dims[-1], generic)
    for length in SHORT_AXES:
        block = fn.append_basic_block(f"copy.last{length}")
        cases.add_case(_i64(length), block)
        b.position_at_end(block)
        loop_metadata.scalar_loops(b, lambda length=length: nests.loop_nest(
            _Site(b), list(dims[:-1]), lambda outer: [
                body([*outer, _i64(j)]) for j in range(length)], f"copy{length}"))
        b.ret_void()
    b.position_at_end(generic)


def _reversed_last_axis(fn: ir.Function, b: ir.IRBuilder, dims, src_strides, dest_strides,
                        copier) -> None:
    """Where the source steps back by one element along the last axis and the destination
    forward by one (`np.ascontiguousarray(a[:, ::-1])`, `np.flip`), the copy with those
    strides constant, which LLVM vectorizes (a vector load reversed by a shuffle; the
    general nest's loop is vectorized only for strides it can check to be 1); the builder
    is left where the other strides go on."""
    generic = fn.append_basic_block("copy.forward")
    backward = fn.append_basic_block("copy.backward")
    b.cbranch(b.and_(b.icmp_signed("==", src_strides[-1], _i64(-1)),
                     b.icmp_signed("==", dest_strides[-1], _i64(1))), backward, generic)
    b.position_at_end(backward)
    body = copier([*src_strides[:-1], _i64(-1)], [*dest_strides[:-1], _i64(1)])
    nests.loop_nest(_Site(b), list(dims), body, "copy.reversed")
    b.ret_void()
    b.position_at_end(generic)


def _at(b, data, strides, indices):
    offset = _i64(0)
    for index, stride in zip(indices, strides):
        offset = b.add(offset, b.mul(index, stride))
    return b.gep(data, [offset])


def _extent(b: ir.IRBuilder, array: ir.Value, t: ArrayType):
    """(first byte, one past the last byte, empty) of the memory `array`'s elements span."""
    data = b.ptrtoint(b.extract_value(array, ARRAY_DATA), I64_T)
    low, high, empty = _i64(0), _i64(0), ir.Constant(I1, 0)
    for k in range(t.ndim):
        d = array_layout.dim(b, array, k)
        reach = b.mul(b.sub(d, _i64(1)), _stride(b, array, k))
        negative = b.icmp_signed("<", reach, _i64(0))
        low = b.add(low, b.select(negative, reach, _i64(0)))
        high = b.add(high, b.select(negative, _i64(0), reach))
        empty = b.or_(empty, b.icmp_signed("==", d, _i64(0)))
    item = _i64(array_layout.ITEM_SIZES[t.dtype])
    return (b.add(data, b.mul(low, item)), b.add(data, b.mul(b.add(high, _i64(1)), item)),
            empty)


def may_overlap(b: ir.IRBuilder, first: ir.Value, first_t: ArrayType, second: ir.Value,
                second_t: ArrayType) -> ir.Value:
    """Whether the memory spans of two arrays meet (NumPy's `may_share_memory`: by
    bounds, so two interleaved views count as overlapping). Views of one array passed as
    two arguments have two owners, so comparing owners does not tell."""
    low1, high1, empty1 = _extent(b, first, first_t)
    low2, high2, empty2 = _extent(b, second, second_t)
    meet = b.and_(b.icmp_unsigned("<", low1, high2), b.icmp_unsigned("<", low2, high1))
    return b.and_(meet, b.not_(b.or_(empty1, empty2)))


def same_elements(b: ir.IRBuilder, value: ir.Value, dest: ir.Value, ndim: int) -> ir.Value:
    """Whether two arrays of one ndim are the same elements: one data pointer, one shape,
    and the same stride along every axis longer than 1."""
    same = b.icmp_unsigned("==", b.extract_value(value, ARRAY_DATA),
                           b.extract_value(dest, ARRAY_DATA))
    for k in range(ndim):
        d = array_layout.dim(b, dest, k)
        same = b.and_(same, b.icmp_signed("==", array_layout.dim(b, value, k), d))
        same = b.and_(same, b.or_(b.icmp_signed("<=", d, _i64(1)),
                                  b.icmp_signed("==", _stride(b, value, k), _stride(b, dest, k))))
    return same


class Apart(NamedTuple):
    """An array to read while another is written: itself, or a copy where the two may
    overlap (`copied`: an i1 saying which, for `release`)."""

    array: ir.Value
    copied: ir.Value

    def release(self, em: FunctionEmitter) -> None:
        """Give the copy back, if one was made."""
        with em.builder.if_then(self.copied, likely=False):
            owned.release_now(em, self.array)


def apart(em: FunctionEmitter, node: Node, value: ir.Value, value_t: ArrayType,
          written: ir.Value, written_t: ArrayType) -> Apart:
    """`value`, or a fresh contiguous copy of it where its memory may overlap `written`'s:
    what a write into `written` then reads from it are the old elements (NumPy copies
    such an operand too)."""
    b = em.builder
    shared = may_overlap(b, value, value_t, written, written_t)
    before = b.block
    with b.if_then(shared, likely=False):
        fresh = contiguous_copy(em, node, value, value_t)
        copied = b.block
    source = b.phi(value.type)
    source.add_incoming(value, before)
    source.add_incoming(fresh, copied)
    return Apart(source, shared)


def contiguous_copy(em: FunctionEmitter, node: Node, source: ir.Value, t: ArrayType) -> ir.Value:
    """A new C-contiguous array (owned, on the list) with `source`'s elements."""
    dims = [array_layout.dim(em.builder, source, k) for k in range(t.ndim)]
    fresh = new_arrays.allocate(em, node, t, dims, zeroed=False)
    copy(em, source, t, fresh, t)
    return fresh
