"""Views that read an array's memory as another dtype: `complex_part` (ir/ops/complexes.py),
np.real/np.imag of a complex array as NumPy's view, and `array_view_as`
(ir/ops/reinterpret.py), x.view(dtype) of one item size: the data pointer cast, shape and
strides (in elements, of one size) as they are.

A complex array's elements are pairs of floats (lltypes.py), so its real parts are
a float array over the same memory with every stride doubled, and its imaginary
parts the same one float further on. The view shares the owner (a new reference,
released like any view's: owned.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import array_layout, copies, owned
from .lltypes import ARRAY_DATA, ARRAY_STRIDES, I64_T, element_type

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def complex_part_view(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    out_t = node.outputs[0].type
    floats = b.bitcast(b.extract_value(source, ARRAY_DATA), element_type(out_t.dtype).as_pointer())
    data = b.gep(floats, [ir.Constant(I64_T, node.attrs["part"])])
    two = ir.Constant(I64_T, 2)
    shape = [array_layout.dim(b, source, k) for k in range(out_t.ndim)]
    strides = [b.mul(b.extract_value(source, [ARRAY_STRIDES, k]), two) for k in range(out_t.ndim)]
    return copies.build(b, out_t, data, owned.new_reference(em, source), shape, strides)


def view_as(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    out_t = node.outputs[0].type
    data = b.bitcast(b.extract_value(source, ARRAY_DATA), element_type(out_t.dtype).as_pointer())
    shape = [array_layout.dim(b, source, k) for k in range(out_t.ndim)]
    strides = [b.extract_value(source, [ARRAY_STRIDES, k]) for k in range(out_t.ndim)]
    return copies.build(b, out_t, data, owned.new_reference(em, source), shape, strides)


ROUTINES = {"complex_part_view": complex_part_view, "view_as": view_as}
"""The view routine of the op table (`Routine(name)`)."""
