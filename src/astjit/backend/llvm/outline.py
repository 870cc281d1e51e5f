"""Chunk functions: the body of a parallel loop emitted into a function of its own, run over
chunks of the iteration space by the runtime's `parallel_for` (runtime/threads.py).

`run_chunks(em, n, split, body)` emits `body(k, start, stop)` (iterations start..stop-1,
chunk k of `split`, `chunk_count`'s) into a new function `i32 chunk(i8* context, i64 k,
i64 start, i64 stop)` with the emitter's own code (the emitter is pointed at that function
meanwhile: `_emitting_into`), then calls `parallel_for` and leaves through the failure exit
with the status of the lowest failing chunk. The body reads whatever it likes of the
enclosing function (arrays, shapes, strides, stack slots for partial results) as it would
inline; afterwards `_capture` finds every value of the enclosing function the chunk uses,
passes them in a context struct the caller fills, and rewrites the uses into loads from it
(what LLVM's CodeExtractor does for a region, done on llvmlite's IR because the lowerings
hold LLVM values in closures).

A chunk owns nothing: its failure exit only returns the status (a parallel body makes no
array), it has its own work counter, and it counts as one loop deep, so no loop in it
checks for signals (`interrupts.py`: worker threads never call into Python). A parallel
loop inside a chunk runs serially (`outlined`).
"""
from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from .emitter import OK
from .folding import FoldingBuilder
from .lltypes import BYTES, I1, I32_T, I64_T
from .runtime.threads import CHUNK, MAX_THREADS, declare_parallel_for, thread_count

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

MIN_CHUNK_WORK = 1 << 15
"""The fewest elements (points of a nest, iterations of a prange loop) worth a chunk: a
loop with fewer runs in one chunk on the calling thread, as handing a chunk to the pool
and waiting for it costs some microseconds, what thousands of simple elements do.
`ASTJIT_MIN_CHUNK_WORK` overrides it when a function compiles (the tests split loops of a
few elements with 1)."""


def min_chunk_work() -> int:
    """`MIN_CHUNK_WORK`, or `ASTJIT_MIN_CHUNK_WORK` where that is a positive integer."""
    text = os.environ.get("ASTJIT_MIN_CHUNK_WORK", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else MIN_CHUNK_WORK


_serials = itertools.count()


def outlined(em: FunctionEmitter) -> bool:
    """Whether `em` is emitting a chunk function (a parallel loop there runs serially): a
    graph's function ends with its result pointer, a chunk's with an i64."""
    return em.function.function_type == CHUNK


class Split(NamedTuple):
    """How a loop is split (runtime/threads.py `_bounds`): `chunks` chunks in groups of
    `lead`, one chunk of a group per thread."""

    lead: ir.Value
    chunks: ir.Value


def chunk_count(em: FunctionEmitter, n: ir.Value, work: ir.Value | None = None) -> Split:
    """How a loop of `n` iterations is split. The threads (`lead`): the compiling process's
    thread count (`threads.thread_count`), fewer where a chunk would get under
    `MIN_CHUNK_WORK` of `work` (the loop's whole work, `n` when None; `min_chunk_work`), at
    least 1. The groups of `lead` chunks (`_bounds`: each group half of what the ones
    before left, the last all the rest): as many as keep the last group's chunks at
    `MIN_CHUNK_WORK` of work and an iteration or more, and at most `MAX_THREADS` chunks."""
    b = em.builder
    work = n if work is None else work
    by_work = b.sdiv(work, ir.Constant(I64_T, min_chunk_work()))
    threads = thread_count()
    count = ir.Constant(I64_T, threads)
    count = b.select(b.icmp_signed("<", by_work, count), by_work, count)
    count = b.select(b.icmp_signed("<", n, count), n, count)
    one = ir.Constant(I64_T, 1)
    lead = b.select(b.icmp_signed("<", count, one), one, count)
    if threads < 2:
        return Split(lead, lead)
    # The groups after the first: at most floor(log2) of the chunks' worth of work per
    # thread, and of the iterations per thread.
    halvings = b.sub(b.sdiv(ir.Constant(I64_T, MAX_THREADS), lead), one)
    for total in (by_work, n):
        per_thread = b.sdiv(total, lead)
        per_thread = b.select(b.icmp_signed("<", per_thread, one), one, per_thread)
        log2 = b.sub(ir.Constant(I64_T, 63), b.ctlz(per_thread, ir.Constant(I1, 0)))
        halvings = b.select(b.icmp_signed("<", log2, halvings), log2, halvings)
    halvings = b.select(b.icmp_signed(">", lead, one), halvings, ir.Constant(I64_T, 0))
    return Split(lead, b.mul(lead, b.add(halvings, one)))


def run_chunks(em: FunctionEmitter, n: ir.Value, split: Split,
               body: Callable[[ir.Value, ir.Value, ir.Value], None]) -> None:
    """Run `body(k, start, stop)` over [0, n) split as `split`, in parallel; fail with the
    status of the lowest chunk that failed."""
    function = ir.Function(em.module, CHUNK, f"{em.function.name}.chunk.{next(_serials)}")
    function.linkage = "internal"
    function.attributes.add("nounwind")
    function.attributes.add("noinline")
    context, k, start, stop = function.args
    with _emitting_into(em, function):
        body(k, start, stop)
        em.builder.ret(OK)
    captured = _capture(function, context)
    b = em.builder
    struct = ir.LiteralStructType([v.type for v in captured])
    slot = em.alloca(struct)
    for i, value in enumerate(captured):
        b.store(value, b.gep(slot, [ir.Constant(I32_T, 0), ir.Constant(I32_T, i)], inbounds=True))
    status = b.call(declare_parallel_for(em.module),
                    [function, b.bitcast(slot, BYTES), split.lead, split.chunks, n])
    with b.if_then(b.icmp_signed("!=", status, OK), likely=False):
        em.return_status(status)


@contextlib.contextmanager
def _emitting_into(em: FunctionEmitter, function: ir.Function) -> Iterator[None]:
    """Point `em` at `function` meanwhile: its builder, its failure exit (returning the
    status, owning nothing), its own work counter and stack checks, one loop deeper (no
    signal checks)."""
    saved = (em.function, em.builder, em._failure, em.work_counter, em.loop_depth,
             em.resources, em.indices, em.stack_checked)
    em.function, em.builder = function, FoldingBuilder(function.append_basic_block("entry"))
    # Not straight into the loop: LLVM's loop extractor leaves a function that is only a
    # loop where it is, and the engine then compiles the whole module at O3 (jit/split.py).
    em.builder.branch(function.append_basic_block("chunk"))
    em.builder.position_at_end(function.blocks[-1])
    em._failure, em.work_counter, em.resources = None, None, ()  # the failure exit is per function
    em.loop_depth += 1
    em.indices, em.stack_checked = dict(em.indices), False  # another frame, another thread
    try:
        yield
    finally:
        (em.function, em.builder, em._failure, em.work_counter, em.loop_depth,
         em.resources, em.indices, em.stack_checked) = saved


def _capture(function: ir.Function, context: ir.Value) -> list[ir.Value]:
    """The values of other functions that `function` uses, in order of first use; each use
    rewritten into a load from the context struct at `context` (loaded once, at entry)."""
    instructions = [i for block in function.blocks for i in block.instructions]
    local = {id(v) for v in (*function.args, *instructions)}
    captured: dict[int, ir.Value] = {}

    def collect(item) -> None:
        if isinstance(item, (ir.Instruction, ir.Argument)):
            if id(item) not in local:
                captured.setdefault(id(item), item)
        elif isinstance(item, (list, tuple)):
            for element in item:
                collect(element)

    for instruction in instructions:
        for name, item in vars(instruction).items():
            if name != "parent":
                collect(item)
    if not captured:
        return []
    values = list(captured.values())
    b = ir.IRBuilder()
    b.position_at_start(function.entry_basic_block)
    struct = b.bitcast(context, ir.LiteralStructType([v.type for v in values]).as_pointer())
    loads = {}
    for i, value in enumerate(values):
        field = b.gep(struct, [ir.Constant(I32_T, 0), ir.Constant(I32_T, i)], inbounds=True)
        loads[id(value)] = b.load(field)

    def substitute(item):
        if isinstance(item, (ir.Instruction, ir.Argument)):
            return loads.get(id(item), item)
        if isinstance(item, (list, tuple)):
            return type(item)(substitute(element) for element in item)
        return item

    for instruction in instructions:
        for name, item in list(vars(instruction).items()):
            if name != "parent" and isinstance(item, (ir.Instruction, ir.Argument, list, tuple)):
                setattr(instruction, name, substitute(item))
        instruction._clear_string_cache()
    return values
