"""Array views in compiled code (ir/ops/views.py): slices, transpose, reshape, and slice
assignment (the strided copies they use are copies.py).

A view is the array struct of its input with another data pointer, shape and
strides, and the same owner: `Py_IncRef(owner)`, pushed on the invocation's
owned list (`owned.push`), so the retain/release pass releases it like an allocation.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.views import SLICE_STEP_ZERO
from ...ir.types import BOOL, ArrayType
from . import array_layout, copies, nests, owned
from . import messages as msg
from .emitter import MAX_ERROR_VALUES
from .lltypes import (
    ARRAY_DATA,
    ARRAY_OWNER,
    ARRAY_STRIDES,
    I1,
    I8,
    I64_T,
    zero,
)
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

CANNOT_RESHAPE = "cannot reshape array"
CANNOT_BROADCAST = "could not broadcast input array into the destination's shape"


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _stride(b, array, axis):
    return b.extract_value(array, [ARRAY_STRIDES, axis])


def _slice(em: FunctionEmitter, node: Node, length, start, stop, step):
    """PySlice_AdjustIndices: (start, length of the slice); None bounds take the defaults."""
    b = em.builder
    zero_i64, one = _i64(0), _i64(1)
    if step is None:
        step = one
    else:
        em.fail_if(node, b.icmp_signed("==", step, zero_i64), "ValueError", SLICE_STEP_ZERO)
    up = b.icmp_signed(">", step, zero_i64)
    lower = b.select(up, zero_i64, _i64(-1))
    upper = b.select(up, length, b.sub(length, one))

    def clamp(bound, default):
        if bound is None:
            return default
        shifted = b.add(bound, length)
        below = b.select(b.icmp_signed("<", shifted, lower), lower, shifted)
        above = b.select(b.icmp_signed(">", bound, upper), upper, bound)
        return b.select(b.icmp_signed("<", bound, zero_i64), below, above)

    start = clamp(start, b.select(up, lower, upper))
    stop = clamp(stop, b.select(up, upper, lower))
    # length: up: (stop - start - 1) // step + 1 if start < stop; down: mirrored
    span = b.select(up, b.sub(stop, start), b.sub(start, stop))
    magnitude = b.select(up, step, b.neg(step))
    count = b.add(b.sdiv(b.sub(span, one), magnitude), one)
    count = b.select(b.icmp_signed(">", span, zero_i64), count, zero_i64)
    return start, count, step


def array_view(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """x[a:b:c, i]: offset the data, drop the integer axes, scale the sliced strides."""
    b = em.builder
    source, parts = args[0], list(args[1:])
    src_t, out_t = node.inputs[0].type, node.outputs[0].type
    spec = list(node.attrs["spec"]) + ["s000"] * (src_t.ndim - len(node.attrs["spec"]))
    offset, shape, strides = _i64(0), [], []
    for axis, entry in enumerate(spec):
        size, stride = array_layout.dim(b, source, axis), _stride(b, source, axis)
        if entry == "i":
            index = parts.pop(0)
            if node.attrs.get("inbounds", False):  # proved within [0, size): passes/versioning.py
                offset = b.add(offset, b.mul(index, stride))
                continue
            wrapped = b.select(b.icmp_signed("<", index, _i64(0)), b.add(index, size), index)
            if node.attrs.get("boundscheck", True):
                em.fail_with_values(node, b.icmp_unsigned(">=", wrapped, size), "IndexError",
                                    msg.INDEX_OUT_OF_BOUNDS.format(axis=axis),
                                    msg.INDEX_OUT_OF_BOUNDS_DETAIL.format(axis=axis),
                                    [index, size])
            offset = b.add(offset, b.mul(wrapped, stride))
            continue
        bounds = [parts.pop(0) if flag == "1" else None for flag in entry[1:]]
        start, count, step = _slice(em, node, size, *bounds)
        offset = b.add(offset, b.mul(start, stride))
        shape.append(count)
        strides.append(b.mul(stride, step))
    data = b.gep(b.extract_value(source, ARRAY_DATA), [offset])
    return copies.build(b, out_t, data, owned.new_reference(em, source), shape, strides)


def array_transpose(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, (source,) = em.builder, args
    n = node.inputs[0].type.ndim
    axes = list(reversed(range(n)))
    return copies.build(b, node.outputs[0].type, b.extract_value(source, ARRAY_DATA),
                 owned.new_reference(em, source), [array_layout.dim(b, source, k) for k in axes],
                 [_stride(b, source, k) for k in axes])


# ---- slice assignment and reshape -----------------------------------------------------------

def _address(b, array, strides, indices):
    offset = _i64(0)
    for index, stride in zip(indices, strides):
        offset = b.add(offset, b.mul(index, stride))
    return b.gep(b.extract_value(array, ARRAY_DATA), [offset])


def _shape_text(parts: list[str]) -> str:
    return "(" + ",".join(parts) + ("," if len(parts) == 1 else "") + ")"


def array_assign(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """y[...] = v: a number stored everywhere, or an array copied with broadcasting
    (through a temporary copy when their memory may overlap, so that overlap reads old
    values; not at all when v is y's own elements)."""
    b = em.builder
    dest, value = args
    dest_t, value_t = node.inputs[0].type, node.inputs[1].type
    if not isinstance(value_t, ArrayType):
        if dest_t.dtype == BOOL:
            value = b.zext(value, I8)
        strides = [_stride(b, dest, k) for k in range(dest_t.ndim)]
        dims = [array_layout.dim(b, dest, k) for k in range(dest_t.ndim)]
        nests.loop_nest(em, dims, lambda ix: b.store(value, _address(b, dest, strides, ix),
                                               align=array_layout.ITEM_SIZES[dest_t.dtype]))
        return zero(node.outputs[0].type)
    lead = dest_t.ndim - value_t.ndim
    bad = ir.Constant(I1, 0)
    for k in range(value_t.ndim):
        have, want = array_layout.dim(b, value, k), array_layout.dim(b, dest, lead + k)
        bad = b.or_(bad, b.and_(b.icmp_signed("!=", have, want),
                                b.icmp_signed("!=", have, _i64(1))))
    values = [array_layout.dim(b, value, k) for k in range(value_t.ndim)] + \
             [array_layout.dim(b, dest, k) for k in range(dest_t.ndim)]
    if len(values) <= MAX_ERROR_VALUES:
        m = value_t.ndim
        detail = (f"could not broadcast input array from shape "
                  f"{_shape_text(['{%d}' % k for k in range(m)])} into shape "  # noqa: UP031 - builds "{0}" placeholders
                  f"{_shape_text(['{%d}' % (m + k) for k in range(dest_t.ndim)])}")  # noqa: UP031
        em.fail_with_values(node, bad, "ValueError", CANNOT_BROADCAST, detail, values)
    else:
        em.fail_if(node, bad, "ValueError", CANNOT_BROADCAST)
    if value_t.ndim != dest_t.ndim:
        _copy_through_overlap(em, node, value, value_t, dest, dest_t)
        return zero(node.outputs[0].type)
    # y[...] = y, or the result of a kernel that wrote into y (fused.py `into`): nothing to do
    with b.if_then(b.not_(copies.same_elements(b, value, dest, dest_t.ndim)), likely=True):
        _copy_through_overlap(em, node, value, value_t, dest, dest_t)
    return zero(node.outputs[0].type)


def _copy_through_overlap(em: FunctionEmitter, node: Node, value, value_t: ArrayType, dest,
                          dest_t: ArrayType) -> None:
    """dest[...] = value (broadcast, shapes checked), through a temporary copy of value
    when the two may share memory, so that every element read is an old one."""
    source = copies.apart(em, node, value, value_t, dest, dest_t)
    copies.copy(em, source.array, value_t, dest, dest_t)
    source.release(em)


def array_reshape(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """x.reshape(dims): one -1 inferred; a view where NumPy's reshape makes one (C-contiguous
    data, or strides `_nocopy_strides` finds), else a view of a C-contiguous copy. With
    `ravel` (np.ravel, x.ravel()), a view of C-contiguous data only, as NumPy's ravel."""
    b = em.builder
    source, dims = args[0], list(args[1:])
    src_t, out_t = node.inputs[0].type, node.outputs[0].type
    size = _i64(1)
    contiguous, expected = ir.Constant(I1, 1), _i64(1)
    for k in reversed(range(src_t.ndim)):
        d = array_layout.dim(b, source, k)
        size = b.mul(size, d)
        fits = b.or_(b.icmp_signed("==", d, _i64(1)),
                     b.icmp_signed("==", _stride(b, source, k), expected))
        contiguous = b.and_(contiguous, fits)
        expected = b.mul(expected, d)
    contiguous = b.or_(contiguous, b.icmp_signed("==", size, _i64(0)))
    unknown, known = _i64(0), _i64(1)
    for d in dims:  # NumPy takes any negative dimension for the unknown one
        is_unknown = b.icmp_signed("<", d, _i64(0))
        unknown = b.add(unknown, b.zext(is_unknown, I64_T))
        known = b.mul(known, b.select(is_unknown, _i64(1), d))
    em.fail_if(node, b.icmp_signed(">", unknown, _i64(1)), "ValueError",
               "can only specify one unknown dimension")
    safe_known = b.select(b.icmp_signed("==", known, _i64(0)), _i64(1), known)
    inferred = b.sdiv(size, safe_known)
    has_unknown = b.icmp_signed("==", unknown, _i64(1))
    mismatch = b.select(has_unknown,
                        b.or_(b.icmp_signed("==", known, _i64(0)),
                              b.icmp_signed("!=", b.srem(size, safe_known), _i64(0))),
                        b.icmp_signed("!=", known, size))
    texts, values = [], [size]
    for d in dims:
        if isinstance(d, ir.Constant):
            texts.append("newaxis" if d.constant < 0 else str(d.constant))
        else:
            texts.append("{%d}" % len(values))  # noqa: UP031
            values.append(d)
    if len(values) <= MAX_ERROR_VALUES:
        detail = "cannot reshape array of size {0} into shape " + _shape_text(texts)
        em.fail_with_values(node, mismatch, "ValueError", CANNOT_RESHAPE, detail, values)
    else:
        em.fail_if(node, mismatch, "ValueError", CANNOT_RESHAPE)
    dims = [b.select(b.icmp_signed("<", d, _i64(0)), inferred, d) for d in dims]
    c_strides, stride = [None] * out_t.ndim, _i64(1)
    for k in reversed(range(out_t.ndim)):
        c_strides[k] = stride
        d = dims[k]
        stride = b.mul(stride, b.select(b.icmp_signed("==", d, _i64(0)), _i64(1), d))
    if node.attrs.get("ravel", False):
        viewable, strides = contiguous, c_strides
    else:  # strided data NumPy still views (it is not empty: empty data is contiguous)
        viewable, strides = _view_of_strided(em, source, src_t.ndim, dims, contiguous, c_strides)
    # the data: the input's (a new reference) when viewable, else a fresh copy's
    with b.if_else(viewable, likely=True) as (as_view, as_copy):
        with as_view:
            view_owner = owned.new_reference(em, source)
            view_data = b.extract_value(source, ARRAY_DATA)
            view_block = b.block
        with as_copy:
            fresh = copies.contiguous_copy(em, node, source, src_t)
            copy_owner = b.extract_value(fresh, ARRAY_OWNER)
            copy_data = b.extract_value(fresh, ARRAY_DATA)
            copy_block = b.block
    owner = b.phi(view_owner.type)
    owner.add_incoming(view_owner, view_block)
    owner.add_incoming(copy_owner, copy_block)
    data = b.phi(view_data.type)
    data.add_incoming(view_data, view_block)
    data.add_incoming(copy_data, copy_block)
    strides = [b.select(viewable, s, c) for s, c in zip(strides, c_strides)]
    return copies.build(b, out_t, data, owner, dims, strides)


def _view_of_strided(em: FunctionEmitter, source: ir.Value, ndim: int, dims: list[ir.Value],
                     contiguous: ir.Value, c_strides: list[ir.Value]) -> tuple[ir.Value, list]:
    """(whether the reshape of `source` to `dims` is a view, its strides where it is): C's
    strides for contiguous data, else those of the runtime's `astjit.reshape.strides.<old
    ndim>.<new ndim>` (`_nocopy_strides`), called only then: one call per site rather than
    its arithmetic inline at every reshape (the AD's Jacobians reshape often)."""
    b, n = em.builder, len(dims)
    out = em.alloca(ir.ArrayType(I64_T, max(n, 1)))
    before = b.block
    with b.if_then(b.not_(contiguous), likely=False):
        fnty = ir.FunctionType(I1, [I64_T] * (2 * ndim + n) + [I64_T.as_pointer()])
        helper = shared_function(em.module, f"astjit.reshape.strides.{ndim}.{n}", fnty,
                                 functools.partial(_emit_nocopy_strides, ndim, n))
        olds = [array_layout.dim(b, source, k) for k in range(ndim)]
        steps = [_stride(b, source, k) for k in range(ndim)]
        found = b.call(helper, [*olds, *steps, *dims, b.gep(out, [_i64(0), _i64(0)])])
        called = b.block
    fits = b.phi(I1)
    fits.add_incoming(ir.Constant(I1, 1), before)
    fits.add_incoming(found, called)
    strides = [b.select(contiguous, c, b.load(b.gep(out, [_i64(0), _i64(j)])))
               for j, c in enumerate(c_strides)]
    return fits, strides


def _emit_nocopy_strides(ndim: int, n: int, function: ir.Function, b: ir.IRBuilder,
                         *args: ir.Value) -> None:
    """The body of `astjit.reshape.strides.<ndim>.<n>` (old dims, old strides, new dims,
    where to store the new strides): whether NumPy views the data (`_nocopy_strides`)."""
    old, steps, dims, out = args[:ndim], args[ndim:2 * ndim], args[2 * ndim:2 * ndim + n], args[-1]
    strides, fits = _nocopy_strides(b, list(old), list(steps), list(dims))
    for j, stride in enumerate(strides):
        b.store(stride, b.gep(out, [_i64(j)]))
    b.ret(fits)


def _nocopy_strides(b: ir.IRBuilder, old: list[ir.Value], old_strides: list[ir.Value],
                    dims: list[ir.Value]) -> tuple[list[ir.Value], ir.Value]:
    """NumPy's `_attempt_nocopy_reshape` for non-empty strided data of lengths `old` and
    element strides `old_strides`: (the strides of the view with shape `dims`, whether
    there is one).

    NumPy groups the old axes (those longer than 1) and the new ones into runs of equal
    size and views the data when the old axes of each run step through memory as one
    (a stride is the next one's times its length). So every place where consecutive old
    axes do not (a break) must end a run of the new shape too: the size of the axes after
    it is the size of some new axes' tail. A new axis then steps as far as the element
    its tail's size counts to lies from the first (that flat index's old multi-index,
    dotted with the old strides); one of length 1 before a longer one steps as that one
    times its length, trailing ones as the last old axis longer than 1, as NumPy sets them.
    """
    ndim = len(old)
    after, size = [None] * ndim, _i64(1)  # the size of the old axes after each
    for k in reversed(range(ndim)):
        after[k], size = size, b.mul(size, old[k])
    tails, size = [None] * len(dims), _i64(1)  # the size of the new axes after each
    for k in reversed(range(len(dims))):
        tails[k], size = size, b.mul(size, dims[k])
    ends = [*tails, size]
    fits, later = ir.Constant(I1, 1), None  # later: (length, stride) of the next axis > 1
    for k in reversed(range(ndim)):
        longer = b.icmp_signed("!=", old[k], _i64(1))
        if later is not None:
            apart = b.icmp_signed("!=", old_strides[k], b.mul(later[0], later[1]))
            ends_run = ir.Constant(I1, 0)
            for end in ends:
                ends_run = b.or_(ends_run, b.icmp_signed("==", after[k], end))
            fits = b.and_(fits, b.not_(b.and_(b.and_(longer, later[2]),
                                              b.and_(apart, b.not_(ends_run)))))
            seen = b.or_(later[2], longer)
            later = (b.select(longer, old[k], later[0]), b.select(longer, old_strides[k], later[1]),
                     seen)
        else:
            later = (old[k], old_strides[k], longer)
    strides: list[ir.Value] = [None] * len(dims)
    trailing = ir.Constant(I1, 1)  # no axis longer than 1 after this one
    for j in reversed(range(len(dims))):
        offset = _i64(0)
        for k in range(ndim):  # lengths are not 0 here: the data is not empty
            index = b.srem(b.sdiv(tails[j], after[k]), old[k])
            offset = b.add(offset, b.mul(index, old_strides[k]))
        if j + 1 < len(dims):
            inner = b.mul(strides[j + 1], dims[j + 1])
            offset = b.select(b.or_(trailing, b.icmp_signed("!=", dims[j], _i64(1))), offset,
                              inner)
        strides[j] = offset
        trailing = b.and_(trailing, b.icmp_signed("==", dims[j], _i64(1)))
    return strides, fits


ROUTINES = {"array_view": array_view, "array_transpose": array_transpose,
            "array_reshape": array_reshape, "array_assign": array_assign}
