"""The element and shape Routines of arrays: x[i, j], x[i, j] = v, x.shape[k], x.shape,
x.size, x.ndim (the array struct and NumPy's index rules: `array_layout`).

Loads and stores carry the element's natural alignment (the entry only takes aligned
arrays). With run-time strides the loop vectorizer versions a loop on `stride == 1`.
Element reads and writes are plain loads and stores: two arrays may share
memory, so nothing claims they do not.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import BOOL, I64
from .array_layout import ITEM_SIZES, dim, element_pointer
from .lltypes import ARRAY_STRIDES, I8, I64_T, constant, zero

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def array_get(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """x[i, j]: load the element (a bool's byte becomes `byte != 0`, as NumPy reads it)."""
    dtype = node.inputs[0].type.dtype
    value = em.builder.load(element_pointer(em, node, args[0], args[1:]),
                            align=ITEM_SIZES[dtype])
    if dtype == BOOL:
        return em.builder.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    return value


def array_set(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """x[i, j] = v, `v` already of the array's dtype (a bool stored as the byte 0 or 1)."""
    array, value, *indices = args
    dtype = node.inputs[0].type.dtype
    pointer = element_pointer(em, node, array, indices)
    if dtype == BOOL:
        value = em.builder.zext(value, I8)
    em.builder.store(value, pointer, align=ITEM_SIZES[dtype])
    return zero(node.outputs[0].type)


def array_dim(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return dim(em.builder, args[0], node.attrs["axis"])


def array_unit_stride(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    stride = em.builder.extract_value(args[0], [ARRAY_STRIDES, node.attrs["axis"]])
    return em.builder.icmp_signed("==", stride, ir.Constant(I64_T, 1))


def array_shape(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, ndim = em.builder, node.inputs[0].type.ndim
    shape = zero(node.outputs[0].type)
    for axis in range(ndim):
        shape = b.insert_value(shape, dim(b, args[0], axis), axis)
    return shape


def array_size(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """The product of the dimensions (1 for a 0-d array), as NumPy's `size`."""
    b, size = em.builder, ir.Constant(I64_T, 1)
    for axis in range(node.inputs[0].type.ndim):
        size = b.mul(size, dim(b, args[0], axis), flags=["nsw"])
    return size


def array_ndim(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return constant(I64, node.inputs[0].type.ndim)


ROUTINES = {"array_get": array_get, "array_set": array_set, "array_dim": array_dim,
            "array_unit_stride": array_unit_stride, "array_shape": array_shape,
            "array_size": array_size, "array_ndim": array_ndim}
