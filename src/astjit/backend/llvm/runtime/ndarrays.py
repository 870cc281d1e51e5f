"""The NumPy arrays at the compiled boundary: an argument unpacked into the array struct
compiled code uses (with the checks of what an array parameter takes), a result boxed as
an ndarray owning or viewing its memory. Functions shared by the module (`shared.py`),
which the entry wrapper (wrapper.py) and the callbacks' boxing call.
"""
from __future__ import annotations

from llvmlite import ir

from ....ir.types import ArrayType
from .. import array_layout
from ..lltypes import (
    ARRAY_DATA,
    ARRAY_OWNER,
    ARRAY_SHAPE,
    ARRAY_STRIDES,
    I1,
    I32_T,
    I64_T,
    element_type,
    zero,
)
from . import numpy_api
from .pyapi import PYOBJ, SSIZE, declare, load_field, type_is

NULL = ir.Constant(PYOBJ, None)
"""A null PyObject*: no object (an exception is set)."""


# ---- boxing an array: a function shared by the module -----------------------------------

def unbox_array(function: ir.Function, builder: ir.IRBuilder, obj: ir.Value, out: ir.Value,
                t: ArrayType) -> None:
    """Store the array value of `obj` at `out` and return 1 if `obj` is what an array
    parameter of type `t` takes (`WrapperEmitter.unbox_array`), else return 0."""
    reject = function.append_basic_block("reject")
    ir.IRBuilder(reject).ret(ir.Constant(I1, 0))

    def require(cond: ir.Value) -> None:
        taken = function.append_basic_block("taken")
        builder.cbranch(cond, taken, reject)
        builder.position_at_end(taken)

    layout = array_layout.numpy_layout()
    item = array_layout.ITEM_SIZES[t.dtype]
    require(type_is(builder, obj, layout.ndarray))
    require(builder.icmp_signed("==", load_field(builder, obj, layout.nd, I32_T),
                                ir.Constant(I32_T, t.ndim)))
    descr = load_field(builder, obj, layout.descr, PYOBJ)
    type_num = load_field(builder, descr, layout.descr_type_num, I32_T)
    byteorder = load_field(builder, descr, layout.descr_byteorder, ir.IntType(8))
    same = [builder.icmp_signed("==", type_num, ir.Constant(I32_T, n))
            for n in sorted(layout.type_nums.get(t.dtype, ()))]
    known = ir.Constant(I1, 0)
    for test in same:
        known = builder.or_(known, test)
    require(builder.and_(known, builder.and_(
        builder.icmp_signed("==", load_field(builder, descr, layout.descr_elsize, SSIZE),
                            ir.Constant(SSIZE, item)),
        builder.icmp_unsigned("!=", byteorder,
                              ir.Constant(byteorder.type, layout.foreign_byteorder[0])))))
    data = load_field(builder, obj, layout.data, PYOBJ)
    value = zero(t)
    value = builder.insert_value(value, builder.bitcast(
        data, element_type(t.dtype).as_pointer()), ARRAY_DATA)
    value = builder.insert_value(value, obj, ARRAY_OWNER)
    if t.ndim == 0:
        builder.store(value, out)
        builder.ret(ir.Constant(I1, 1))
        return
    mask = ir.Constant(I64_T, item - 1)
    misaligned = builder.and_(builder.ptrtoint(data, I64_T), mask)
    empty = ir.Constant(I1, 0)
    dims = load_field(builder, obj, layout.dimensions, I64_T.as_pointer())
    strides = load_field(builder, obj, layout.strides, I64_T.as_pointer())
    shift = ir.Constant(I64_T, item.bit_length() - 1)
    zero_i64, one = ir.Constant(I64_T, 0), ir.Constant(I64_T, 1)
    for axis in range(t.ndim):
        at = [ir.Constant(I64_T, axis)]
        size = builder.load(builder.gep(dims, at, inbounds=True))
        stride = builder.load(builder.gep(strides, at, inbounds=True))
        # An axis of length 0 or 1 is never stepped along: its stride does not matter.
        steps = builder.icmp_signed(">", size, one)
        misaligned = builder.or_(misaligned, builder.select(
            steps, builder.and_(stride, mask), zero_i64))
        empty = builder.or_(empty, builder.icmp_signed("==", size, zero_i64))
        value = builder.insert_value(value, size, [ARRAY_SHAPE, axis])
        value = builder.insert_value(value, builder.select(
            steps, builder.ashr(stride, shift), zero_i64), [ARRAY_STRIDES, axis])
    if item > 1:
        require(builder.or_(empty, builder.icmp_unsigned("==", misaligned, zero_i64)))
    builder.store(value, out)
    builder.ret(ir.Constant(I1, 1))


def box_array(function: ir.Function, builder: ir.IRBuilder, value: ir.Value,
              t: ArrayType) -> ir.Value:
    """The ndarray for an owned array value: its owner if the value covers it exactly,
    else a view whose base is the owner; NULL (exception set) if making the view fails.
    Either way the value's reference is consumed."""
    layout = array_layout.numpy_layout()
    item = array_layout.ITEM_SIZES[t.dtype]
    owner = builder.extract_value(value, ARRAY_OWNER)
    data = builder.bitcast(builder.extract_value(value, ARRAY_DATA), PYOBJ)
    fields = function.append_basic_block("array.fields")
    view = function.append_basic_block("array.view")
    done = function.append_basic_block("array.done")
    # The owner's dimensions are read only once its ndim is known to match.
    builder.cbranch(builder.icmp_signed("==", load_field(builder, owner, layout.nd, I32_T),
                                        ir.Constant(I32_T, t.ndim)), fields, view)
    builder.position_at_end(fields)
    descr = load_field(builder, owner, layout.descr, PYOBJ)
    type_num = load_field(builder, descr, layout.descr_type_num, I32_T)
    same = builder.icmp_unsigned("==", load_field(builder, owner, layout.data, PYOBJ), data)
    known = ir.Constant(I1, 0)
    for n in sorted(layout.type_nums.get(t.dtype, ())):
        known = builder.or_(known, builder.icmp_signed("==", type_num, ir.Constant(I32_T, n)))
    same = builder.and_(same, builder.and_(known, builder.icmp_signed(
        "==", load_field(builder, descr, layout.descr_elsize, SSIZE), ir.Constant(SSIZE, item))))
    if t.ndim:
        dims = load_field(builder, owner, layout.dimensions, I64_T.as_pointer())
        strides = load_field(builder, owner, layout.strides, I64_T.as_pointer())
    # No element of an empty array is ever addressed: its strides do not matter.
    empty = ir.Constant(I1, 0)
    for axis in range(t.ndim):
        empty = builder.or_(empty, builder.icmp_signed(
            "==", builder.extract_value(value, [ARRAY_SHAPE, axis]), ir.Constant(I64_T, 0)))
    for axis in range(t.ndim):
        at = [ir.Constant(I64_T, axis)]
        size = builder.extract_value(value, [ARRAY_SHAPE, axis])
        stride = builder.mul(builder.extract_value(value, [ARRAY_STRIDES, axis]),
                             ir.Constant(I64_T, item))
        steps = builder.and_(builder.icmp_signed(">", size, ir.Constant(I64_T, 1)),
                             builder.not_(empty))
        same = builder.and_(same, builder.icmp_signed(
            "==", builder.load(builder.gep(dims, at, inbounds=True)), size))
        same = builder.and_(same, builder.or_(builder.not_(steps), builder.icmp_signed(
            "==", builder.load(builder.gep(strides, at, inbounds=True)), stride)))
    covered = builder.block
    builder.cbranch(same, done, view)
    builder.position_at_end(view)
    return join(builder, done, owner, covered, make_view(function, builder, value, t, owner, data))


def make_view(function: ir.Function, builder: ir.IRBuilder, value: ir.Value, t: ArrayType,
              owner: ir.Value, data: ir.Value) -> ir.Value:
    """A new ndarray over `value`'s memory, based on `owner` (whose reference it takes)."""
    layout = array_layout.numpy_layout()
    item = array_layout.ITEM_SIZES[t.dtype]
    with builder.goto_entry_block():
        shape = builder.alloca(ir.ArrayType(I64_T, max(t.ndim, 1)))
        strides = builder.alloca(ir.ArrayType(I64_T, max(t.ndim, 1)))
    zero_i32 = ir.Constant(I32_T, 0)
    for axis in range(t.ndim):
        at = [zero_i32, ir.Constant(I32_T, axis)]
        builder.store(builder.extract_value(value, [ARRAY_SHAPE, axis]),
                      builder.gep(shape, at, inbounds=True))
        builder.store(builder.mul(builder.extract_value(value, [ARRAY_STRIDES, axis]),
                                  ir.Constant(I64_T, item)),
                      builder.gep(strides, at, inbounds=True))
    first = [zero_i32, zero_i32]
    flags = builder.and_(load_field(builder, owner, layout.flags, I32_T),
                         ir.Constant(I32_T, array_layout.NPY_ARRAY_WRITEABLE))
    descr = numpy_api.descr_constant(t.dtype)
    builder.call(declare(function.module, "Py_IncRef"), [descr])  # stolen by NumPy
    new = builder.call(numpy_api.declare(function.module, "PyArray_NewFromDescr"), [
        numpy_api.ndarray_type(), descr, ir.Constant(I32_T, t.ndim),
        builder.gep(shape, first, inbounds=True), builder.gep(strides, first, inbounds=True),
        data, flags, NULL])
    based = function.append_basic_block("view.base")
    failed = function.append_basic_block("view.failed")
    done = function.append_basic_block("view.done")
    builder.cbranch(builder.icmp_unsigned("==", new, NULL), failed, based)
    builder.position_at_end(failed)
    builder.call(declare(function.module, "Py_DecRef"), [owner])
    builder.branch(done)
    builder.position_at_end(based)
    status = builder.call(numpy_api.declare(function.module, "PyArray_SetBaseObject"),
                          [new, owner])
    with builder.if_then(builder.icmp_signed("!=", status, ir.Constant(I32_T, 0)),
                         likely=False):
        # SetBaseObject dropped the owner already
        builder.call(declare(function.module, "Py_DecRef"), [new])
    ok = builder.icmp_signed("==", status, ir.Constant(I32_T, 0))
    return join(builder, done, NULL, failed, builder.select(ok, new, NULL))


def join(builder: ir.IRBuilder, done: ir.Block, other: ir.Value, other_block: ir.Block,
         value: ir.Value) -> ir.Value:
    """Branch from here to `done`, left there: the object `value` when coming from here,
    `other` when coming from `other_block`."""
    here = builder.block
    builder.branch(done)
    builder.position_at_end(done)
    result = builder.phi(PYOBJ)
    result.add_incoming(other, other_block)
    result.add_incoming(value, here)
    return result

