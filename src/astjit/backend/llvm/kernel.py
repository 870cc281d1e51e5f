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


def load_element(em, array, dtype, strides, indices, scope=None, output=None):
    """The element of `array` at `indices` read with element `strides` (a bool as i1; a
    complex part by part, `_parts`); `scope` (an `AliasScope`): the outputs' stores,
    which the load does not alias, or with `output`, a donor's read of the memory output
    `output` is written into (`AliasScope.donor`)."""
    b = em.builder
    marks = () if scope is None else scope.reads() if output is None else scope.donor(output)
    if dtype.is_complex:
        ty = lltype(dtype)
        real, imag = _parts(b, _address(b, array, strides, indices), ty)
        align = array_layout.ITEM_SIZES[dtype] // 2
        parts = [b.load(real, align=align), b.load(imag, align=align)]
        for part in parts:
            _mark(part, marks)
        value = b.insert_element(ir.Constant(ty, None), parts[0], _I32_0)
        return b.insert_element(value, parts[1], _I32_1)
    value = b.load(_address(b, array, strides, indices), align=array_layout.ITEM_SIZES[dtype])
    _mark(value, marks)
    if dtype == BOOL:
        return b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    return value


def store_element(em, array, dtype, strides, indices, value, scope=None, output=0):
    """Store `value` into `array` at `indices` with element `strides`; `scope` (an
    `AliasScope`): the outputs', of which this store is output `output`'s."""
    b = em.builder
    marks = () if scope is None else scope.stores(output)
    if dtype.is_complex:
        real, imag = _parts(b, _address(b, array, strides, indices), value.type)
        align = array_layout.ITEM_SIZES[dtype] // 2
        _mark(b.store(b.extract_element(value, _I32_0), real, align=align), marks)
        _mark(b.store(b.extract_element(value, _I32_1), imag, align=align), marks)
        return
    if dtype == BOOL:
        value = b.zext(value, I8)
    _mark(b.store(value, _address(b, array, strides, indices),
                  align=array_layout.ITEM_SIZES[dtype]), marks)


class AliasScope:
    """LLVM alias scopes of their own (`!alias.scope` / `!noalias` metadata, one domain), one
    per output of a kernel's nest: outputs that no input shares memory with (but a donor,
    whose memory its output takes), nor each other. The nest's reads of its inputs alias
    no output (`reads`), each output's stores no other output's (`stores`), and a donor's
    reads, at the very addresses its output is written, are in that output's scope
    (`donor`): so LLVM vectorizes the nest without comparing at run time the addresses
    each store and read spans (a check per pair, and a scalar copy of the loop for an
    overlap). One scope per output: with one for all, the stores of a nest with two
    outputs were checked against each other; with the donor's reads unmarked, its stores
    against the other inputs' reads."""

    def __init__(self, module: ir.Module, outputs: int = 1) -> None:
        name = f"astjit.kernel.{len(module.metadata)}"
        domain = module.add_metadata([ir.MetaDataString(module, name)])
        suffixes = [".stores"] if outputs == 1 else [f".stores.{k}" for k in range(outputs)]
        self.scopes = [module.add_metadata([ir.MetaDataString(module, name + suffix), domain])
                       for suffix in suffixes]
        self.list = module.add_metadata(self.scopes)
        self.module = module

    def reads(self) -> tuple[tuple[str, ir.Value], ...]:
        """The metadata of a read of an input: it aliases no output."""
        return (("noalias", self.list),)

    def stores(self, output: int) -> tuple[tuple[str, ir.Value], ...]:
        """The metadata of a store into output `output`: its scope; no other output's."""
        others = [scope for k, scope in enumerate(self.scopes) if k != output]
        own = (("alias.scope", self.module.add_metadata([self.scopes[output]])),)
        return own + ((("noalias", self.module.add_metadata(others)),) if others else ())

    def donor(self, output: int) -> tuple[tuple[str, ir.Value], ...]:
        """The metadata of a donor's read of the memory output `output` is written into."""
        return (("alias.scope", self.module.add_metadata([self.scopes[output]])),)


def _mark(instruction: ir.Instruction, marks: tuple[tuple[str, ir.Value], ...]) -> None:
    for kind, node in marks:
        instruction.set_metadata(kind, node)


_I32_0, _I32_1 = ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)


def _parts(b: ir.IRBuilder, pointer: ir.Value, ty: ir.VectorType) -> tuple[ir.Value, ir.Value]:
    """Pointers to a complex element's two parts. A kernel reads and writes a complex as its
    two floats, not as one `<2 x double>`: the loop vectorizer widens scalar accesses
    (an interleaved group) but not vector-typed ones, so this is what lets a complex
    kernel (np.abs(z), z * w) vectorize."""
    floats = b.bitcast(pointer, ty.element.as_pointer())
    return floats, b.gep(floats, [ir.Constant(ir.IntType(64), 1)], inbounds=True)
