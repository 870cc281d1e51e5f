"""The reduction loop nests `fused` and `rowwise` build on (a helper beneath the lowerings):
`emit_reduction`, the nests of a `fused` node with a reduction (ir/core.py,
ir/ops/reductions.py), and `emit_row_reduction`, one row of a row group.

`emit_reduction` gets the space's shape and a `point(unit)(indices)` callback
that computes the kernel's value (already of the accumulator type) at one
point of the space; it owns the loops, the accumulators and the output.

Loop order: the space is walked in C order, so the innermost loop is the last
axis, unit-stride for C-contiguous inputs (the version of the nest for them is
vectorized, by astjit itself where the loop allows: widen.py; the general strided one is
left scalar: `loop_metadata.scalar_loops`).
Let S be the longest run of reduced axes at the end of the space and P the axes
before it.

- *Register mode* (every reduced axis is in S: `x.sum()`, `x.sum(axis=-1)`):
  for each point of P, the reduction over S runs in a register accumulator
  (a stack slot SROA promotes), finished (a mean divided by its count) and
  stored once: into the result scalar, or the output element.
- *Accumulate mode* (a reduced axis is followed by a kept one: `x.sum(axis=0)`):
  the output starts as the identity; for each point of P the reduction over S
  (or the element itself when S is empty) is combined into its output element,
  so the innermost loop walks a row of the input and a row of the output
  together, which vectorizes; a mean divides the output by the count at the end.

Accumulation, identities and the finishing step are the kind's row in
`ir/ops/reductions.REDUCTIONS` (descriptors, as the op table's): integers wrap
(plain `add`); float sums carry LLVM's `reassoc` flag, so the loop vectorizer
keeps several partial sums (the order of the additions is unspecified, as
NumPy's pairwise order differs from a sequential one anyway); max and min are
`llvm.maximum` / `llvm.minimum` on floats (NaN propagates, as in NumPy), `smax`
/ `smin` on ints, `or` / `and` on bools. A kind without a NumPy identity (max,
min) fails first on an empty reduction (a reduced axis of length 0) with
NumPy's ValueError.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.kernels import fused_attrs
from ...ir.ops import Builder, Intrinsic, Routine
from ...ir.ops.reductions import REDUCTIONS, empty_message
from ...ir.types import BOOL, ArrayType, ScalarType
from . import array_layout, loop_metadata, nests, new_arrays, parallel, widen
from .complexes import multiply
from .lltypes import ARRAY_DATA, I8, I64_T, constant, lltype

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

Point = Callable[[list[ir.Value]], ir.Value]


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


# ---- one accumulator step ------------------------------------------------------------------

def identity(kind: str, t: ScalarType) -> ir.Constant:
    """The value a reduction of nothing starts from."""
    return constant(t, REDUCTIONS[kind].start(t))


COMBINE_ROUTINES = {"complex_mul": multiply}
"""The `Routine` combine steps of the reduction rows: `step(builder, acc, x)`."""


def _apply(em: FunctionEmitter, descriptor: Builder | Intrinsic | Routine,
           args: list[ir.Value]) -> ir.Value:
    match descriptor:
        case Routine(name):
            return COMBINE_ROUTINES[name](em.builder, *args)
        case Builder(method, extra, flags):
            kwargs = {"flags": flags} if flags else {}
            return getattr(em.builder, method)(*extra, *args, **kwargs)
        case Intrinsic(name):
            return em.call_intrinsic(name, args)
    raise TypeError(f"no reduction lowering {descriptor!r}")


def combine(em: FunctionEmitter, kind: str, t: ScalarType, acc: ir.Value,
            x: ir.Value) -> ir.Value:
    """The accumulator after taking in `x`."""
    return _apply(em, REDUCTIONS[kind].combine_for(t), [acc, x])


def finish(em: FunctionEmitter, kind: str, acc: ir.Value, count: ir.Value) -> ir.Value:
    """The result from the accumulator: a mean divides by the count (0 / 0 is NaN)."""
    step = REDUCTIONS[kind].finish
    if step is None:
        return acc
    return _apply(em, step, [acc, _divisor(em.builder, count, acc.type)])


def _divisor(b: ir.IRBuilder, count: ir.Value, ty: ir.Type) -> ir.Value:
    """The int `count` as a value of accumulator type `ty`; of a complex, in both parts (so
    that both are divided)."""
    if isinstance(ty, ir.VectorType):
        part = b.sitofp(count, ty.element)
        return b.insert_element(b.insert_element(ir.Constant(ty, None), part, _i32(0)), part,
                                _i32(1))
    return b.sitofp(count, ty)


def _i32(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), value)


class Register:
    """A reduction's accumulator in stack slots (SROA makes them registers, the loop
    vectorizer vector registers).

    A float max / min runs as `x > acc ? x : acc` (one `vmaxpd`), with the compare and
    select flagged `nnan nsz` so that LLVM vectorizes it as a reduction, beside a flag
    that records whether any element was NaN (an `or` reduction); the result is NaN
    when the flag is set. Where an element is NaN the `nnan` select yields poison, which
    then runs through the accumulator, but the final select takes the NaN then, so
    poison never escapes. (`llvm.maximum` itself vectorizes too, but to a chain of
    blends about twice slower.) The sign of a zero result is unspecified (`nsz`).

    nanmax / nanmin (`skips_nan`) run the same way on `x`, a NaN replaced by the start
    value (-inf for nanmax, by `maxnum`), so no operand of the flagged compare is NaN; the flag
    records whether any element was not NaN, and the result is NaN where none was.
    (`llvm.maxnum`, their combine elsewhere, vectorizes to a loop that leaves for a
    scalar one at the first NaN, and `llvm.maximumnum` to a chain of blends.)
    """

    def __init__(self, em: FunctionEmitter, kind: str, t: ScalarType):
        self.em, self.kind, self.t = em, kind, t
        row = REDUCTIONS[kind]
        self.pick = row.pick if t.is_float else None
        self.skips_nan = row.skips_nan
        self.acc = em.alloca(lltype(t))
        self.nan = em.alloca(ir.IntType(1)) if self.pick else None
        """max: whether some element was NaN; nanmax: whether some element was not."""

    def _start_value(self) -> ir.Constant:
        if self.pick and self.skips_nan:
            return ir.Constant(lltype(self.t), -math.inf if self.pick == ">" else math.inf)
        return identity(self.kind, self.t)

    def start(self) -> None:
        b = self.em.builder
        b.store(self._start_value(), self.acc)
        if self.nan is not None:
            b.store(ir.Constant(ir.IntType(1), 0), self.nan)

    def take(self, x: ir.Value) -> None:
        b = self.em.builder
        acc = b.load(self.acc)
        if self.nan is None:
            b.store(combine(self.em, self.kind, self.t, acc, x), self.acc)
            return
        fast = ("nnan", "nsz")
        if self.skips_nan:
            seen = b.fcmp_ordered("ord", x, x)
            # A NaN as the start value (maxnum(NaN, -inf) is -inf), by one instruction that
            # InstCombine keeps (a select on `seen` it folds into the max, which the loop
            # vectorizer then does not take for a reduction).
            name = "llvm.maxnum" if self.pick == ">" else "llvm.minnum"
            x = self.em.call_intrinsic(name, [x, self._start_value()])
        else:
            seen = b.fcmp_unordered("uno", x, x)
        better = b.fcmp_ordered(self.pick, x, acc, flags=fast)
        b.store(b.select(better, x, acc, flags=fast), self.acc)
        b.store(b.or_(b.load(self.nan), seen), self.nan)

    def value(self) -> ir.Value:
        b = self.em.builder
        acc = b.load(self.acc)
        if self.nan is None:
            return acc
        nan = ir.Constant(acc.type, float("nan"))
        if self.skips_nan:
            return b.select(b.load(self.nan), acc, nan)
        return b.select(b.load(self.nan), nan, acc)


# ---- the nests ----------------------------------------------------------------------------

def emit_reduction(em: FunctionEmitter, node: Node, dims: list[ir.Value],
                   point: Callable[[bool], Point], unit: ir.Value | None) -> ir.Value:
    """The reduction `node` describes over the space `dims`: a scalar or a new array.

    `point(unit_strides)` gives the kernel at a point; `unit` is the run-time
    condition under which the unit-stride version may run (None: only the general one).
    """
    b = em.builder
    reduction = fused_attrs(node).reduce
    kind, axes, keepdims = reduction.kind, reduction.axes, reduction.keepdims
    row = REDUCTIONS[kind]
    element = node.regions[0].outputs[-1].type
    n = len(dims)
    count = _i64(1)
    for a in axes:
        count = b.mul(count, dims[a], flags=["nsw"])
    if row.empty_raises:
        em.fail_if(node, b.icmp_signed("==", count, _i64(0)), "ValueError", empty_message(kind))
    suffix = n
    while suffix > 0 and suffix - 1 in axes:
        suffix -= 1  # axes suffix..n-1 are all reduced
    register = all(a >= suffix for a in axes)
    kept = [a for a in range(n) if a not in axes]
    result_type = node.outputs[-1].type
    out = out_strides = slot = None
    if isinstance(result_type, ArrayType):
        shape = [_i64(1) if a in axes else dims[a] for a in range(n)] if keepdims \
            else [dims[a] for a in kept]
        new_arrays.check_dims(em, node, result_type.dtype, shape)
        out = new_arrays.allocate(em, node, result_type, shape, zeroed=False)
        out_strides = array_layout.c_strides(b, [dims[a] for a in kept])
        if not register:
            new_arrays.fill(em, element, identity(kind, element), b.extract_value(out, ARRAY_DATA),
                        new_arrays.size_of_dims(b, shape))
    else:
        slot = em.alloca(lltype(element))
    def nest(unit_strides: bool) -> None:
        at = point(unit_strides)
        if out is None and suffix == 0 and n > 0 and parallel.in_parallel(em, node):
            b.store(finish(em, kind, _reduce_in_chunks(em, kind, element, dims, at), count), slot)
            return

        def outer(indices: list[ir.Value]) -> None:
            acc = Register(em, kind, element) if suffix < n else None  # in a chunk: its own
            if acc is None:
                value = at(indices)
                if register and row.signed_zero and element.is_float:
                    # nothing reduced (a 0-d array): NumPy's sum still starts from +0.0
                    value = combine(em, kind, element, identity(kind, element), value)
            else:
                acc.start()
                nests.loop_nest(em, dims[suffix:], lambda full: acc.take(at(full)), "reduce",
                                 indices)
                value = acc.value()
            here = em.builder  # a chunk's, where the outer nest runs in parallel
            if out is None:
                here.store(finish(em, kind, value, count), slot)
                return
            pointer = _element(here, out, out_strides, [indices[a] for a in kept])
            if register:
                _store(here, pointer, element, finish(em, kind, value, count))
            else:
                _store(here, pointer, element, combine(em, kind, element,
                                                       _load(here, pointer, element), value))
        if register:  # every point of the outer axes its own: they may run in parallel
            parallel.nest(em, node, dims[:suffix], outer, "reduce.outer")
        else:
            nests.loop_nest(em, dims[:suffix], outer, "reduce.outer")

    def unit_first(unit_strides: bool) -> None:
        if unit_strides and not parallel.in_parallel(em, node):
            widen.widened_nest(em, lambda: nest(True))
        else:
            nest(unit_strides)

    if unit is None:
        nest(False)
    else:
        loop_metadata.unit_or_strided(em, unit, unit_first)
    if out is None:
        return b.load(slot)
    if row.finish is not None and not register:
        _finish_all(em, kind, out, element, new_arrays.size_of_dims(b, [dims[a] for a in kept]), count)
    return out


def _reduce_in_chunks(em: FunctionEmitter, kind: str, element: ScalarType, dims: list[ir.Value],
                      at: Point) -> ir.Value:
    """The whole space reduced in parallel (parallel.py), unfinished: each chunk into a
    register of its own, the partials combined in chunk order. Split as `parallel.nest`
    splits a nest: along the last axis in `VECTOR_GRAIN`s where the others have length 1
    (the serial nest's one loop, whose remainder then stays the serial one's), else along
    the first."""
    b = em.builder
    work = new_arrays.size_of_dims(b, dims)
    names = ("reduce.head", "reduce.body", "reduce.done")

    def along(last: bool) -> ir.Value:
        def partial(start: ir.Value, stop: ir.Value) -> list[ir.Value]:
            acc = Register(em, kind, element)
            acc.start()
            if last:
                zeros = [_i64(0)] * (len(dims) - 1)
                nests.count_up(em.builder, start, stop, lambda i: acc.take(at([*zeros, i])),
                               names, rows=bool(zeros))  # as the serial nest's last loop is
            else:
                nests.count_up(em.builder, start, stop, lambda i: nests.loop_nest(
                    em, dims[1:], lambda full: acc.take(at(full)), "reduce", (i,)), names)
            return [acc.value()]

        (value,) = parallel.reduce_in_chunks(
            em, dims[-1] if last else dims[0], work, [lltype(element)], partial,
            lambda j, acc, x: combine(em, kind, element, acc, x),
            grain=parallel.VECTOR_GRAIN if last else 1)
        return value

    if len(dims) == 1:
        return along(True)
    result = em.alloca(lltype(element))
    one_line = b.icmp_signed("==", new_arrays.size_of_dims(b, dims[:-1]), _i64(1))
    with b.if_else(one_line) as (line, rows):
        with line:
            em.builder.store(along(True), result)
        with rows:
            em.builder.store(along(False), result)
    return em.builder.load(result)


def emit_row_reduction(em: FunctionEmitter, kind: str, element: ScalarType,
                       dims: list[ir.Value], value: Point, outer: list[ir.Value]) -> ir.Value:
    """One row of a row group (backend/llvm/rowwise.py): `value(indices)` reduced over the
    inner axes `dims` after the outer `indices`, in a register, finished (a mean divided).
    The same accumulator as register mode above, so the inner loop vectorizes alike."""
    acc = Register(em, kind, element)
    acc.start()
    nests.loop_nest(em, dims, lambda full: acc.take(value(full)), "reduce", outer)
    return finish(em, kind, acc.value(), new_arrays.size_of_dims(em.builder, dims))


def _element(b: ir.IRBuilder, array: ir.Value, strides: list[ir.Value],
             indices: list[ir.Value]) -> ir.Value:
    offset = None
    for index, stride in zip(indices, strides):
        unit = isinstance(stride, ir.Constant) and stride.constant == 1
        term = index if unit else b.mul(index, stride, flags=["nsw"])
        offset = term if offset is None else b.add(offset, term, flags=["nsw"])
    data = b.extract_value(array, ARRAY_DATA)
    return data if offset is None else b.gep(data, [offset], inbounds=True)


def _load(b: ir.IRBuilder, pointer: ir.Value, t: ScalarType) -> ir.Value:
    value = b.load(pointer, align=array_layout.ITEM_SIZES[t])
    return b.icmp_unsigned("!=", value, ir.Constant(I8, 0)) if t == BOOL else value


def _store(b: ir.IRBuilder, pointer: ir.Value, t: ScalarType, value: ir.Value) -> None:
    if t == BOOL:
        value = b.zext(value, I8)
    b.store(value, pointer, align=array_layout.ITEM_SIZES[t])


def _finish_all(em: FunctionEmitter, kind: str, out: ir.Value, t: ScalarType, size: ir.Value,
                count: ir.Value) -> None:
    """The finishing step in accumulate mode, on every output element (a mean's division)."""
    b = em.builder
    data = b.extract_value(out, ARRAY_DATA)
    divisor = _divisor(b, count, lltype(t))

    def body(indices: list[ir.Value]) -> None:
        pointer = b.gep(data, indices, inbounds=True)
        b.store(_apply(em, REDUCTIONS[kind].finish,
                       [b.load(pointer, align=array_layout.ITEM_SIZES[t]), divisor]), pointer,
                align=array_layout.ITEM_SIZES[t])
    nests.loop_nest(em, [size], body, "mean")
