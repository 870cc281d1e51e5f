"""What a `fused` kernel's loops and a row group's share: the broadcast of the operands' shapes
(with NumPy's error naming them), an input's element strides over the iteration space,
element loads and stores through those strides, and running the kernel region at one point
with NumPy's semantics (`FunctionEmitter.numpy_semantics`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import BOOL
from . import array_layout
from .emitter import MAX_ERROR_VALUES
from .lltypes import ARRAY_DATA, ARRAY_STRIDES, I1, I8, I64_T, lltype

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

BROADCAST_FAILED = "operands could not be broadcast together"


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _shape_text(placeholders: list[str]) -> str:
    return "(" + ", ".join(placeholders) + ("," if len(placeholders) == 1 else "") + ")"


def broadcast_shapes(em: FunctionEmitter, node: Node, shapes: list[list[ir.Value]],
                     ndim: int) -> list[ir.Value]:
    """The broadcast of `shapes` (each aligned with the last axes of `ndim`), after the check
    that they broadcast (ValueError naming them otherwise)."""
    b = em.builder
    one = _i64(1)
    dims, bad = [], ir.Constant(I1, 0)
    for axis in range(ndim):
        size = one
        for shape in shapes:
            j = axis - (ndim - len(shape))
            if j < 0:
                continue
            d = shape[j]
            if size is one:
                size = d
                continue
            clash = b.and_(b.and_(b.icmp_signed("!=", d, one), b.icmp_signed("!=", size, one)),
                           b.icmp_signed("!=", d, size))
            bad = b.or_(bad, clash)
            size = b.select(b.icmp_signed("==", size, one), d, size)
        dims.append(size)
    if len(shapes) > 1:
        values = [d for shape in shapes for d in shape]
        if len(values) <= MAX_ERROR_VALUES:
            parts, n = [], 0
            for k in map(len, shapes):
                parts.append(_shape_text(["{%d}" % (n + j) for j in range(k)]))  # noqa: UP031
                n += k
            detail = f"{BROADCAST_FAILED} with shapes " + " ".join(parts)
            em.fail_with_values(node, bad, "ValueError", BROADCAST_FAILED, detail, values)
        else:
            em.fail_if(node, bad, "ValueError", BROADCAST_FAILED)
    return dims


def space_strides(b: ir.IRBuilder, value: ir.Value, k: int, known: tuple[int, ...] | None,
                  ndim: int) -> list[ir.Value]:
    """An array input's element strides over the space's `ndim` axes (its `k` axes the last
    ones): 0 where it broadcasts, the constant 0 along the axes the `ones` hint (`known`)
    says have length 1."""
    own = [_i64(0) if j in (known or ()) else
           b.select(b.icmp_signed("==", array_layout.dim(b, value, j), _i64(1)), _i64(0),
                    b.extract_value(value, [ARRAY_STRIDES, j])) for j in range(k)]
    return [_i64(0)] * (ndim - k) + own


def run_kernel(em: FunctionEmitter, kernel, elements: list[ir.Value]) -> list[ir.Value]:
    """The kernel region's outputs for one point's `elements`, with NumPy's semantics."""
    saved = em.numpy_semantics
    em.numpy_semantics = True
    try:
        return em.emit_graph(kernel, elements)
    finally:
        em.numpy_semantics = saved


def _address(b: ir.IRBuilder, array: ir.Value, strides: list[ir.Value],
             indices: list[ir.Value]) -> ir.Value:
    offset = None
    for index, stride in zip(indices, strides):
        if isinstance(stride, ir.Constant) and stride.constant == 0:
            continue
        term = index if isinstance(stride, ir.Constant) and stride.constant == 1 \
            else b.mul(index, stride, flags=["nsw"])
        offset = term if offset is None else b.add(offset, term, flags=["nsw"])
    data = b.extract_value(array, ARRAY_DATA)
    return data if offset is None else b.gep(data, [offset], inbounds=True)


def load_element(em, array, dtype, strides, indices, scope=None):
    """The element of `array` at `indices` read with element `strides` (a bool as i1; a
    complex part by part, `_parts`); `scope` (an `AliasScope`): the stores the load does
    not alias."""
    b = em.builder
    if dtype.is_complex:
        ty = lltype(dtype)
        real, imag = _parts(b, _address(b, array, strides, indices), ty)
        align = array_layout.ITEM_SIZES[dtype] // 2
        parts = [b.load(real, align=align), b.load(imag, align=align)]
        for part in parts:
            _mark(part, "noalias", scope)
        value = b.insert_element(ir.Constant(ty, None), parts[0], _I32_0)
        return b.insert_element(value, parts[1], _I32_1)
    value = b.load(_address(b, array, strides, indices), align=array_layout.ITEM_SIZES[dtype])
    _mark(value, "noalias", scope)
    if dtype == BOOL:
        return b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    return value


def store_element(em, array, dtype, strides, indices, value, scope=None):
    """Store `value` into `array` at `indices` with element `strides`; `scope` (an
    `AliasScope`): the store's, which the loads given it do not alias."""
    b = em.builder
    if dtype.is_complex:
        real, imag = _parts(b, _address(b, array, strides, indices), value.type)
        align = array_layout.ITEM_SIZES[dtype] // 2
        _mark(b.store(b.extract_element(value, _I32_0), real, align=align), "alias.scope", scope)
        _mark(b.store(b.extract_element(value, _I32_1), imag, align=align), "alias.scope", scope)
        return
    if dtype == BOOL:
        value = b.zext(value, I8)
    _mark(b.store(value, _address(b, array, strides, indices),
                  align=array_layout.ITEM_SIZES[dtype]), "alias.scope", scope)


class AliasScope:
    """An LLVM alias scope of its own (`!alias.scope` / `!noalias` metadata, one list
    holding one scope of one domain): the stores of a kernel's nest into outputs no input
    shares memory with, which the nest's loads do not alias, so that LLVM vectorizes the
    nest without checking at run time that its stores overlap none of its reads."""

    def __init__(self, module: ir.Module) -> None:
        name = f"astjit.kernel.{len(module.metadata)}"
        domain = module.add_metadata([ir.MetaDataString(module, name)])
        scope = module.add_metadata([ir.MetaDataString(module, name + ".stores"), domain])
        self.list = module.add_metadata([scope])


def _mark(instruction: ir.Instruction, kind: str, scope: AliasScope | None) -> None:
    if scope is not None:
        instruction.set_metadata(kind, scope.list)


_I32_0, _I32_1 = ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)


def _parts(b: ir.IRBuilder, pointer: ir.Value, ty: ir.VectorType) -> tuple[ir.Value, ir.Value]:
    """Pointers to a complex element's two parts. A kernel reads and writes a complex as its
    two floats, not as one `<2 x double>`: the loop vectorizer widens scalar accesses
    (an interleaved group) but not vector-typed ones, so this is what lets a complex
    kernel (np.abs(z), z * w) vectorize."""
    floats = b.bitcast(pointer, ty.element.as_pointer())
    return floats, b.gep(floats, [ir.Constant(ir.IntType(64), 1)], inbounds=True)
