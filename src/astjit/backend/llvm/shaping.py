"""The shaping, joining and conversion primitives in compiled code (ir/ops/shaping.py).

Views (`array_squeeze`, `array_expand_dims`, `array_permute`, `array_broadcast_to`) are
the input's array struct with other shape and strides and a new reference to its
owner (views.py's way). The others make a new C-contiguous array
(`new_arrays.allocate`) and fill it: `array_concatenate` copies each input into its
slab of the result (copies.py's strided copy), `array_astype` converts element by
element in a loop nest shared per kind of conversion, `array_pack` stores its numbers,
`array_linspace` computes NumPy's elements.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.shaping import (
    BROADCAST_MISMATCH,
    BROADCAST_NEGATIVE,
    CONCATENATE_MISMATCH,
    SQUEEZE_NOT_ONE,
)
from ...ir.types import BOOL, ScalarType
from . import array_layout, conversions, copies, nests, new_arrays, owned
from .copies import build
from .emitter import MAX_ERROR_VALUES
from .lltypes import ARRAY_DATA, ARRAY_OWNER, ARRAY_STRIDES, I1, I8, I64_T, element_type, lltype
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _layout(b, array, ndim):
    return ([array_layout.dim(b, array, k) for k in range(ndim)],
            [b.extract_value(array, [ARRAY_STRIDES, k]) for k in range(ndim)])


def _shape_text(parts: list[str]) -> str:
    return "(" + ",".join(parts) + ("," if len(parts) == 1 else "") + ")"


# ---- views ----------------------------------------------------------------------------------

def array_squeeze(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    axes = node.attrs["axes"]
    dims, strides = _layout(b, source, node.inputs[0].type.ndim)
    if axes:
        bad = ir.Constant(I1, 0)
        for k in axes:
            bad = b.or_(bad, b.icmp_signed("!=", dims[k], _i64(1)))
        em.fail_if(node, bad, "ValueError", SQUEEZE_NOT_ONE)
    keep = [k for k in range(len(dims)) if k not in axes]
    return build(b, node.outputs[0].type, b.extract_value(source, ARRAY_DATA),
                 owned.new_reference(em, source), [dims[k] for k in keep],
                 [strides[k] for k in keep])


def array_expand_dims(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    dims, strides = _layout(b, source, node.inputs[0].type.ndim)
    for k in node.attrs["axes"]:
        dims.insert(k, _i64(1))
        strides.insert(k, _i64(0))
    return build(b, node.outputs[0].type, b.extract_value(source, ARRAY_DATA),
                 owned.new_reference(em, source), dims, strides)


def array_permute(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    dims, strides = _layout(b, source, node.inputs[0].type.ndim)
    axes = node.attrs["axes"]
    return build(b, node.outputs[0].type, b.extract_value(source, ARRAY_DATA),
                 owned.new_reference(em, source), [dims[k] for k in axes],
                 [strides[k] for k in axes])


def array_broadcast_to(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's checks (a negative length, then shapes that do not broadcast), then the view:
    x's axes aligned with the last ones, stride 0 where x has length 1."""
    b, source, want = em.builder, args[0], list(args[1:])
    ndim = node.inputs[0].type.ndim
    dims, strides = _layout(b, source, ndim)
    negative = ir.Constant(I1, 0)
    for d in want:
        negative = b.or_(negative, b.icmp_signed("<", d, _i64(0)))
    em.fail_if(node, negative, "ValueError", BROADCAST_NEGATIVE)
    lead = len(want) - ndim
    bad = ir.Constant(I1, 0)
    for k in range(ndim):
        bad = b.or_(bad, b.and_(b.icmp_signed("!=", dims[k], want[lead + k]),
                                b.icmp_signed("!=", dims[k], _i64(1))))
    values = dims + want
    detail = (f"{BROADCAST_MISMATCH} [original->remapped]: "
              f"{_shape_text(['{%d}' % k for k in range(ndim)])}  and requested shape "  # noqa: UP031
              f"{_shape_text(['{%d}' % (ndim + k) for k in range(len(want))])}")  # noqa: UP031
    if len(values) <= MAX_ERROR_VALUES:
        em.fail_with_values(node, bad, "ValueError", BROADCAST_MISMATCH, detail, values)
    else:
        em.fail_if(node, bad, "ValueError", BROADCAST_MISMATCH)
    new_strides = [_i64(0)] * lead + [b.select(b.icmp_signed("==", d, _i64(1)), _i64(0), s)
                                      for d, s in zip(dims, strides)]
    return build(b, node.outputs[0].type, b.extract_value(source, ARRAY_DATA),
                 owned.new_reference(em, source), want, new_strides)


# ---- new arrays -------------------------------------------------------------------------------

def _new(em: FunctionEmitter, node: Node, dims: list[ir.Value]) -> ir.Value:
    t = node.outputs[0].type
    new_arrays.check_dims(em, node, t.dtype, dims)
    return new_arrays.allocate(em, node, t, dims, zeroed=False)


def array_concatenate(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's check of the other axes (against the first array), then each input copied
    into its slab of the new array."""
    b, t, axis = em.builder, node.outputs[0].type, node.attrs["axis"]
    shapes = [_layout(b, a, t.ndim)[0] for a in args]
    for i, shape in enumerate(shapes[1:], 1):
        for k in range(t.ndim):
            if k == axis:
                continue
            bad = b.icmp_signed("!=", shape[k], shapes[0][k])
            if node.attrs.get("stacking"):
                em.fail_if(node, bad, "ValueError", "all input arrays must have the same shape")
                continue
            detail = (f"{CONCATENATE_MISMATCH}, but along dimension {k}, the array at index 0 "
                      f"has size {{0}} and the array at index {i} has size {{1}}")
            em.fail_with_values(node, bad, "ValueError", CONCATENATE_MISMATCH, detail,
                                [shapes[0][k], shape[k]])
    total = shapes[0][axis]
    for shape in shapes[1:]:
        total = b.add(total, shape[axis])
    dims = [total if k == axis else shapes[0][k] for k in range(t.ndim)]
    out = _new(em, node, dims)
    _, out_strides = _layout(b, out, t.ndim)
    data, offset = b.extract_value(out, ARRAY_DATA), _i64(0)
    for a, shape in zip(args, shapes):
        slab = build(b, t, b.gep(data, [b.mul(offset, out_strides[axis])]),
                     b.extract_value(out, ARRAY_OWNER), shape, out_strides)
        copies.copy(em, a, t, slab, t)
        offset = b.add(offset, shape[axis])
    return out


def array_copy(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    return copies.contiguous_copy(em, node, args[0], node.inputs[0].type)


def array_contiguous(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """x itself (a new reference) when C-contiguous (length-1 axes and empty arrays count
    as NumPy counts them), else a C-contiguous copy."""
    b, (source,), t = em.builder, args, node.inputs[0].type
    dims, strides = _layout(b, source, t.ndim)
    contiguous, expected, size = ir.Constant(I1, 1), _i64(1), _i64(1)
    for k in reversed(range(t.ndim)):
        fits = b.or_(b.icmp_signed("==", dims[k], _i64(1)),
                     b.icmp_signed("==", strides[k], expected))
        contiguous = b.and_(contiguous, fits)
        expected = b.mul(expected, dims[k])
        size = b.mul(size, dims[k])
    contiguous = b.or_(contiguous, b.icmp_signed("==", size, _i64(0)))
    with b.if_else(contiguous, likely=True) as (as_view, as_copy):
        with as_view:
            view = owned.new_reference(em, source)
            view = b.insert_value(source, view, ARRAY_OWNER)
            view_block = b.block
        with as_copy:
            fresh = copies.contiguous_copy(em, node, source, t)
            copy_block = b.block
    result = b.phi(source.type)
    result.add_incoming(view, view_block)
    result.add_incoming(fresh, copy_block)
    return result


def array_astype(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    src_t, out_t = node.inputs[0].type, node.outputs[0].type
    dims, strides = _layout(b, source, src_t.ndim)
    out = _new(em, node, dims)
    name = f"astjit.astype.{src_t.dtype}.{out_t.dtype}.{src_t.ndim}"
    function = shared_function(em.module, name, *_convert(src_t.dtype, out_t.dtype, src_t.ndim))
    b.call(function, [b.extract_value(source, ARRAY_DATA), b.extract_value(out, ARRAY_DATA),
                      *dims, *strides])
    return out


def convert(b: ir.IRBuilder, x: ir.Value, source: ScalarType, target: ScalarType) -> ir.Value:
    """NumPy's (C's) conversion of an element as stored (a bool as i8) to `target`'s storage
    (conversions.py: wrap-around between ints, a float truncated, a complex's real part)."""
    if source == target:
        return x
    if source == BOOL:
        x = b.trunc(x, ir.IntType(1))
    if source.is_complex or target.is_complex:
        value = conversions.complex_cast(b, x, source, target)
    else:
        value = conversions.cast_value(b, x, source, target)
    return b.zext(value, I8) if target == BOOL else value


class _Site:
    """What `nests.loop_nest` needs of an emitter, in a shared function."""

    def __init__(self, builder: ir.IRBuilder):
        self.builder = builder


def _convert(source: ScalarType, target: ScalarType, ndim: int):
    src, dst = element_type(source), element_type(target)

    def emit(fn, b, data, out, *fields):
        """out[i] = convert(data[i]): data strided (dims, strides), out C-contiguous."""
        dims, strides = fields[:ndim], fields[ndim:]
        position = b.alloca(I64_T)
        b.store(_i64(0), position)

        def body(indices):
            offset = _i64(0)
            for index, stride in zip(indices, strides):
                offset = b.add(offset, b.mul(index, stride))
            value = convert(b, b.load(b.gep(data, [offset])), source, target)
            at = b.load(position)
            b.store(value, b.gep(out, [at]))
            b.store(b.add(at, _i64(1)), position)
        nests.loop_nest(_Site(b), list(dims), body, "astype")
        b.ret_void()
    return ir.FunctionType(ir.VoidType(), [src.as_pointer(), dst.as_pointer()] +
                           [I64_T] * (2 * ndim)), emit


def array_pack(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, t = em.builder, node.outputs[0].type
    out = new_arrays.allocate(em, node, t, [_i64(n) for n in node.attrs["shape"]], zeroed=False)
    data = b.extract_value(out, ARRAY_DATA)
    for k, value in enumerate(args):
        b.store(b.zext(value, I8) if t.dtype == BOOL else value, b.gep(data, [_i64(k)]))
    return out


def array_linspace(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """NumPy's linspace: y[i] = i * step + start with step = (stop - start) / div (i / div *
    delta when step is 0, i * delta when div is 0), y[num - 1] = stop with `endpoint`; an
    int dtype floors before converting."""
    b = em.builder
    start, stop, num = args
    compute, t = node.attrs["compute"], node.outputs[0].type
    ty = lltype(compute)
    em.fail_with_values(node, b.icmp_signed("<", num, _i64(0)), "ValueError",
                        "Number of samples must be non-negative.",
                        "Number of samples, {0}, must be non-negative.", [num])
    out = _new(em, node, [num])
    data = b.extract_value(out, ARRAY_DATA)
    endpoint = node.attrs["endpoint"]
    div = b.sub(num, _i64(1)) if endpoint else num
    div_f = b.sitofp(div, ty)
    delta = b.fsub(stop, start)
    step = b.fdiv(delta, div_f)
    positive = b.icmp_signed(">", div, _i64(0))
    step_zero = b.fcmp_ordered("==", step, ir.Constant(ty, 0.0))
    floor = b.module.declare_intrinsic("llvm.floor", [ty])

    def element(i):
        i_f = b.sitofp(i, ty)
        scaled = b.select(positive, b.select(step_zero, b.fmul(b.fdiv(i_f, div_f), delta),
                                             b.fmul(i_f, step)), b.fmul(i_f, delta))
        y = b.fadd(scaled, start)
        if endpoint:
            last = b.icmp_signed("==", i, b.sub(num, _i64(1)))
            y = b.select(b.and_(last, b.icmp_signed(">", num, _i64(1))), stop, y)
        if t.dtype.is_int:
            y = b.call(floor, [y])
        b.store(convert(b, y, compute, t.dtype), b.gep(data, [i]))
    nests.count_up(b, _i64(0), num, element)
    return out


ROUTINES = {"array_squeeze": array_squeeze, "array_expand_dims": array_expand_dims,
            "array_permute": array_permute, "array_broadcast_to": array_broadcast_to,
            "array_concatenate": array_concatenate, "array_copy": array_copy,
            "array_contiguous": array_contiguous,
            "array_astype": array_astype, "array_pack": array_pack,
            "array_linspace": array_linspace}
