"""The adjoint primitives in compiled code (ir/ops/adjoints.py): un-broadcasting sums and
in-place accumulation.

- `sum_to_like(g, x)`: when `x` is an array of `g`'s ndim, dtype and (checked at
  run time) shape, `g` itself, a new reference (pushed on the owned list, like a
  view); otherwise a new zeroed array of `x`'s shape and dtype (or a scalar)
  into which one loop nest over `g` adds each element at its reduced index
  (index 0 along an axis where `x` has size 1, leading axes of `g` dropped): the
  runtime's `astjit.sum_to.*` (shared.py), for an array, one per kind of sum.
  Sums are computed in double and rounded once to `x`'s type; the additions
  carry `reassoc` so the loop vectorizer may reorder them (NumPy's own pairwise
  summation does not add in order either). With attr `reduces` (ir/passes/fuse.py:
  `x` is known to have length 1 where `g` may not) the sum alone is emitted; in a
  first tier (codegen.FunctionEmitter.fast_only) the pass-through alone.
- `add_at(acc, g, *indices)`: one load, add and store at the element (the
  forward read checked the indices; negative ones still count from the end).
- `add_into(acc, view, g)`: one loop nest over the view, `view[ix] += g[ix]`: the
  runtime's `astjit.add_into.<dtype>.<ndim>`.
- `set_at(acc, v, *indices)`: one store at the element.
- `zero_into(acc, view)`: one loop nest over the view storing zeros.

The sum's and add_into's nests are the runtime's, not the kernel's: each is the same
few lines for any gradient that has one, and in a kernel's loops module each was a
function LLVM optimized and compiled afresh (a sixth of the hessian's loops module); a call costs
nanoseconds beside the nest (docs/benchmarks.md).

The accumulating ops return `acc`'s struct unchanged: the reference moves from
the input to the result (they consume it), so they touch no reference count.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.complexes import part_type
from ...ir.types import ArrayType, ScalarType
from . import array_layout, loop_metadata, nests, new_arrays, owned
from .lltypes import ARRAY_DATA, ARRAY_STRIDES, I1, I64_T, element_type
from .shared import Body, shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

FLAGS = ("reassoc",)
"""Fast-math flags of the sums: reordering allowed (vectorized reductions), nothing else."""


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _address(b: ir.IRBuilder, array: ir.Value, indices: list[ir.Value]) -> ir.Value:
    """The element's address in the array value `array`."""
    return _at(b, b.extract_value(array, ARRAY_DATA), _strides(b, array, len(indices)), indices)


def _at(b: ir.IRBuilder, data: ir.Value, strides, indices: list[ir.Value],
        unit: bool = False) -> ir.Value:
    """The element's address from the data pointer and (element) strides; `unit`: the array
    steps by one element along its last axis."""
    offset = _i64(0)
    for axis, (index, stride) in enumerate(zip(indices, strides)):
        if unit and axis == len(indices) - 1:
            offset = b.add(offset, index, flags=["nsw"])
            continue
        offset = b.add(offset, b.mul(index, stride, flags=["nsw"]), flags=["nsw"])
    return b.gep(data, [offset], inbounds=True)


def _strides(b: ir.IRBuilder, array: ir.Value, ndim: int) -> list[ir.Value]:
    return [b.extract_value(array, [ARRAY_STRIDES, k]) for k in range(ndim)]


def _convert(b: ir.IRBuilder, value: ir.Value, source: ScalarType, target: ScalarType) -> ir.Value:
    """A float or complex of type `source` as one of type `target` (a complex to a float: its
    real part, the adjoint of a real operand; a float to a complex: with a zero imaginary part)."""
    if source == target:
        return value
    if source.is_complex and not target.is_complex:
        return _convert(b, b.extract_element(value, _i32(0)), part_type(source), target)
    if target.is_complex and not source.is_complex:
        real = _convert(b, value, source, part_type(target))
        return b.insert_element(ir.Constant(element_type(target), None), real, _i32(0))
    narrower = target.bits < source.bits
    return b.fptrunc(value, element_type(target)) if narrower else \
        b.fpext(value, element_type(target))


def _i32(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), value)


def _load(b: ir.IRBuilder, array: ir.Value, t: ArrayType, indices: list[ir.Value]) -> ir.Value:
    return b.load(_address(b, array, indices), align=array_layout.ITEM_SIZES[t.dtype])


def _dims(b: ir.IRBuilder, array: ir.Value, ndim: int) -> list[ir.Value]:
    return [array_layout.dim(b, array, k) for k in range(ndim)]


# ---- sum_to_like -------------------------------------------------------------------------------

def sum_to_like(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    g, x = args
    g_t, x_t = node.inputs[0].type, node.inputs[1].type
    if not isinstance(x_t, ArrayType):
        return _sum_all(em, g, g_t, x_t)
    if x_t.ndim != g_t.ndim or x_t.dtype != g_t.dtype or node.attrs.get("reduces"):
        return _sum_to(em, node, g, g_t, x, x_t)
    b = em.builder
    same = ir.Constant(I1, 1)
    for k in range(x_t.ndim):
        same = b.and_(same, b.icmp_signed("==", array_layout.dim(b, g, k), array_layout.dim(b, x, k)))
    if em.fast_only(same):  # the first tier: no broadcast to undo
        owned.new_reference(em, g)
        return g
    with b.if_else(same, likely=True) as (as_is, summed):
        with as_is:
            owned.new_reference(em, g)
            as_is_block = b.block
        with summed:
            reduced = _sum_to(em, node, g, g_t, x, x_t)
            summed_block = b.block
    result = b.phi(g.type)
    result.add_incoming(g, as_is_block)
    result.add_incoming(reduced, summed_block)
    return result


def _sum_all(em: FunctionEmitter, g: ir.Value, g_t: ArrayType, target: ScalarType) -> ir.Value:
    """The sum of all of `g`'s elements, as a `target` scalar."""
    b = em.builder
    wide = ScalarType("c128") if g_t.dtype.is_complex else ScalarType("f64")
    total = em.alloca(element_type(wide))
    b.store(ir.Constant(element_type(wide), None), total)

    def add(ix):
        value = _convert(b, _load(b, g, g_t, ix), g_t.dtype, wide)
        b.store(b.fadd(b.load(total), value, flags=FLAGS), total)
    nests.loop_nest(em, _dims(b, g, g_t.ndim), add, "sum")
    return _convert(b, b.load(total), wide, target)


def _sum_to(em: FunctionEmitter, node: Node, g: ir.Value, g_t: ArrayType, x: ir.Value,
            x_t: ArrayType) -> ir.Value:
    """A new array of `x`'s shape and dtype: `g` summed over the axes `x` was broadcast along,
    by the runtime's `astjit.sum_to.<g dtype>.<x dtype>.<g ndim>.<x ndim>`."""
    b = em.builder
    x_dims = _dims(b, x, x_t.ndim)
    out = new_arrays.allocate(em, node, x_t, x_dims, zeroed=True)
    function = shared_function(em.module, f"astjit.sum_to.{g_t.dtype}.{x_t.dtype}.{g_t.ndim}."
                               f"{x_t.ndim}", *_sum_to_function(g_t, x_t))
    b.call(function, [b.extract_value(out, ARRAY_DATA), *x_dims, *_strides(b, out, x_t.ndim),
                      b.extract_value(g, ARRAY_DATA), *_dims(b, g, g_t.ndim),
                      *_strides(b, g, g_t.ndim)])
    return out


def _sum_to_function(g_t: ArrayType, x_t: ArrayType):
    """(out, out dims, out strides, g, g dims, g strides): `g` added into the zeroed `out`
    (new, so `noalias`: no run-time overlap check) at each element's reduced index."""
    def emit(fn, b, out, *fields):
        fn.args[0].add_attribute("noalias")
        body = Body(fn, b)
        x_dims, out_strides = fields[:x_t.ndim], fields[x_t.ndim:2 * x_t.ndim]
        g, g_dims, g_strides = fields[2 * x_t.ndim], fields[2 * x_t.ndim + 1:][:g_t.ndim], \
            fields[2 * x_t.ndim + 1 + g_t.ndim:]
        lead = g_t.ndim - x_t.ndim
        kept = [b.icmp_signed("!=", d, _i64(1)) for d in x_dims]
        align = array_layout.ITEM_SIZES[x_t.dtype]

        def nest(unit: bool) -> None:
            def add(ix):
                target = [b.select(keep, i, _i64(0)) for keep, i in zip(kept, ix[lead:])]
                if unit and target:  # the last axis kept: its index as is, the others' selects invariant
                    target[-1] = ix[-1]
                pointer = _at(b, out, out_strides, target, unit)
                element = b.load(_at(b, g, g_strides, ix, unit),
                                 align=array_layout.ITEM_SIZES[g_t.dtype])
                value = _convert(b, element, g_t.dtype, x_t.dtype)
                b.store(b.fadd(b.load(pointer, align=align), value, flags=FLAGS), pointer,
                        align=align)
            nests.loop_nest(body, list(g_dims), add, "sum_to")

        # The common case, a bias's gradient (leading axes summed away, or axes of length 1
        # in `x`, the last axis kept): `out[j] += g[i, j]` with unit steps, which the loop
        # vectorizer takes. A batch of biases' gradients (`x` of shape (n, 1, k), vmap and
        # jacfwd of a gradient) is this case too.
        fast = b.icmp_signed("==", g_strides[-1], _i64(1))
        if x_dims:
            fast = b.and_(fast, b.icmp_signed("==", x_dims[-1], g_dims[-1]))
        loop_metadata.unit_or_strided(body, fast, nest)
        b.ret_void()
    fnty = ir.FunctionType(ir.VoidType(), [element_type(x_t.dtype).as_pointer()]
                           + [I64_T] * (2 * x_t.ndim)
                           + [element_type(g_t.dtype).as_pointer()] + [I64_T] * (2 * g_t.ndim))
    return fnty, emit


# ---- in-place accumulation ---------------------------------------------------------------------

def add_at(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """acc[indices] += g."""
    b = em.builder
    acc, g, *indices = args
    align = array_layout.ITEM_SIZES[node.inputs[0].type.dtype]
    pointer = array_layout.element_pointer(em, node, acc, indices)
    b.store(b.fadd(b.load(pointer, align=align), g), pointer, align=align)
    return acc


def add_into(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """view += g, elementwise (the two have one shape: g is the adjoint of that view), by the
    runtime's `astjit.add_into.<dtype>.<ndim>`."""
    b = em.builder
    acc, view, g = args
    t = node.inputs[1].type
    function = shared_function(em.module, f"astjit.add_into.{t.dtype}.{t.ndim}",
                               *_add_into_function(t))
    b.call(function, [b.extract_value(view, ARRAY_DATA), b.extract_value(g, ARRAY_DATA),
                      *_dims(b, view, t.ndim), *_strides(b, view, t.ndim),
                      *_strides(b, g, t.ndim)])
    return acc


def _add_into_function(t: ArrayType):
    """(view, g, dims, view strides, g strides): view[ix] += g[ix] over the dims. The two may
    overlap (g may be a view of the accumulator): LLVM checks that at run time."""
    def emit(fn, b, view, g, *fields):
        dims, view_strides, g_strides = fields[:t.ndim], fields[t.ndim:2 * t.ndim], \
            fields[2 * t.ndim:]
        align = array_layout.ITEM_SIZES[t.dtype]

        def add(ix):
            pointer = _at(b, view, view_strides, ix)
            total = b.fadd(b.load(pointer, align=align),
                           b.load(_at(b, g, g_strides, ix), align=align))
            b.store(total, pointer, align=align)
        nests.loop_nest(Body(fn, b), list(dims), add, "add_into")
        b.ret_void()
    pointer = element_type(t.dtype).as_pointer()
    return ir.FunctionType(ir.VoidType(), [pointer, pointer] + [I64_T] * (3 * t.ndim)), emit


def set_at(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """acc[indices] = v."""
    acc, value, *indices = args
    align = array_layout.ITEM_SIZES[node.inputs[0].type.dtype]
    em.builder.store(value, array_layout.element_pointer(em, node, acc, indices), align=align)
    return acc


def zero_into(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """view[...] = 0."""
    b = em.builder
    acc, view = args
    t = node.inputs[1].type
    zero_value = ir.Constant(element_type(t.dtype), None)

    def store_zero(ix):
        b.store(zero_value, _address(b, view, ix), align=array_layout.ITEM_SIZES[t.dtype])
    nests.loop_nest(em, _dims(b, view, t.ndim), store_zero, "zero_into")
    return acc


ROUTINES = {"sum_to_like": sum_to_like, "add_at": add_at, "add_into": add_into,
            "set_at": set_at, "zero_into": zero_into}
