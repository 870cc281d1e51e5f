"""Counted loops and loop nests: `count_up` (for i in range(start, stop)) and `loop_nest`
(one loop per dimension), with LLVM's loop metadata on each latch."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import loop_metadata
from .lltypes import I64_T

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

TAIL = 16
"""An innermost loop calling vector math runs its first multiple of this many iterations as
one loop, the rest as another (`count_up`): a multiple of any vector loop's step there
(16 floats or 8 doubles of 512 bits, at one vector per step)."""


def loop_nest(em: FunctionEmitter, dims: list[ir.Value], body, label: str = "loop",
              indices=()) -> None:
    """for i0 in range(dims[0]): for i1 ...: body([i0, i1, ...]), blocks named `label.*`."""
    if not dims:
        body(list(indices))
        return
    count_up(em.builder, ir.Constant(I64_T, 0), dims[0],
             lambda i: loop_nest(em, dims[1:], body, label, (*indices, i)),
             tuple(f"{label}.{name}" for name in ("head", "body", "done")),
             rows=bool(indices))


def count_up(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, body,
             names=("loop", "body", "done"), flags=("nsw",), rows: bool = False) -> None:
    """for i in range(start, stop): body(i), emitted at `b` (left in the exit block); the
    blocks are named `names` (head, body, exit), the increment carries `flags`.

    With `rows` (the loop runs once per row of a nest: `loop_nest` inside an outer loop),
    an innermost loop calling vector math (`loop_metadata.innermost_with_vector_math`)
    becomes two, `body` emitted again for the second: the iterations up to the last
    multiple of `TAIL`, which LLVM vectorizes as any loop (its scalar remainder never runs),
    then the rest, fewer than `TAIL`, as masked vector steps (`fold_tail`). Finished by a
    scalar loop, each of those iterations was a libm call costing nearly as much as a
    vector call, and the short rows of a batch of small examples (a (1000, 3, 4) array
    summed over its last two axes: rows of 12) were mostly such a remainder. One loop of
    masked steps throughout ran long loops slower (docs/measurements.md). A loop run once
    per call (a nest of one axis, a chunk of a parallel one) keeps its scalar remainder, a
    few elements of the whole: the second loop would only add to what LLVM compiles.
    """
    entry, test, latch = _loop(b, start, stop, body, names, flags)
    split = rows and loop_metadata.innermost_with_vector_math(latch)
    loop_metadata.no_runtime_unroll(latch, multiple=TAIL if split else None)
    if not split:
        return
    with b.goto_block(entry.parent):
        zero = ir.Constant(I64_T, 0)
        span = b.sub(stop, start)
        whole = b.and_(b.select(b.icmp_signed(">", span, zero), span, zero),
                       ir.Constant(I64_T, -TAIL))
        middle = b.add(start, whole, flags=["nsw"])
    test.replace_usage(stop, middle)
    _, _, tail = _loop(b, middle, stop, body, tuple(f"{name}.tail" for name in names), flags)
    loop_metadata.no_runtime_unroll(tail, fold_tail=True)


def _loop(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, body, names, flags):
    """The loop, unmarked: (the branch entering it, its test, its latch)."""
    before = b.block
    head, inner, done = (b.function.append_basic_block(name) for name in names)
    entry = b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64_T)
    i.add_incoming(start, before)
    test = b.icmp_signed("<", i, stop)
    b.cbranch(test, inner, done)
    b.position_at_end(inner)
    body(i)
    i.add_incoming(b.add(i, ir.Constant(I64_T, 1), flags=list(flags)), b.block)
    latch = b.branch(head)
    b.position_at_end(done)
    return entry, test, latch
