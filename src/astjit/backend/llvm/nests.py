"""Counted loops and loop nests: `count_up` (for i in range(start, stop)) and `loop_nest`
(one loop per dimension), with LLVM's loop metadata on each latch."""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from . import loop_metadata
from .lltypes import I64_T

if TYPE_CHECKING:
    from .emitter import FunctionEmitter


def loop_nest(em: FunctionEmitter, dims: list[ir.Value], body, label: str = "loop",
              indices=()) -> None:
    """for i0 in range(dims[0]): for i1 ...: body([i0, i1, ...]), blocks named `label.*`."""
    if not dims:
        body(list(indices))
        return
    count_up(em.builder, ir.Constant(I64_T, 0), dims[0],
             lambda i: loop_nest(em, dims[1:], body, label, (*indices, i)),
             tuple(f"{label}.{name}" for name in ("head", "body", "done")))


def count_up(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, body,
             names=("loop", "body", "done"), flags=("nsw",)) -> None:
    """for i in range(start, stop): body(i), emitted at `b` (left in the exit block); the
    blocks are named `names` (head, body, exit), the increment carries `flags`."""
    before = b.block
    head, inner, done = (b.function.append_basic_block(name) for name in names)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64_T)
    i.add_incoming(start, before)
    b.cbranch(b.icmp_signed("<", i, stop), inner, done)
    b.position_at_end(inner)
    body(i)
    i.add_incoming(b.add(i, ir.Constant(I64_T, 1), flags=list(flags)), b.block)
    loop_metadata.no_runtime_unroll(b.branch(head))
    b.position_at_end(done)
