"""Ctrl-C in compiled loops: loops run Python's pending signal handlers as they go.

Compiled code runs no bytecode, so CPython's SIGINT handler, which only trips a flag for
the interpreter's eval loop, would wait for a long loop to end. A loop calls the module's
`astjit.signals()` (`define_signals`): where the module keeps the GIL, that is
`PyErr_CheckSignals()`, which with no signal pending (or off the main thread) returns 0,
and otherwise runs the handlers, returning -1 with the exception set when one raised
(SIGINT's: KeyboardInterrupt). Where the module may release it (runtime/gil.py), it is
`astjit.signals.released()`: while the call holds the GIL (its first check, or after
taking it back for good), `PyErr_CheckSignals()`, then the GIL released (so a call
releases it once it has run `FIRST_CHECK` units of work); without it, off the main
thread, which never runs handlers, 0 at once; on it, at most every `GIL_RETAKE_NS` (so that
a Python thread holding the GIL is not held up by each check), the GIL taken back
(`PyEval_RestoreThread`), `PyErr_CheckSignals()`, and the GIL released again; the
exception, if any, stays set in the thread's state. The loop then leaves with the
`INTERRUPTED` status, settling what the invocation owns as every error site does, and the
wrapper returns NULL with that exception (`WrapperEmitter.report`).

The call costs more than a short loop iteration, and a loop runs slower after calls into
the C API than their own time accounts for (docs/measurements.md), so it is made once per
`CHECK_INTERVAL` units of work, the first after `FIRST_CHECK` (where the call releases
the GIL there, as soon as it did with checks every `FIRST_CHECK` units), counted in a
per-invocation counter (a stack slot LLVM keeps in a register): every loop's back-edge
adds its iteration's weight, 1 plus one per `NODES_PER_UNIT` nodes of its body (so that
a long body checks as often in time as a short one) plus `ARRAY_WORK` per node of it
making an array and `CALL_WORK` per call it makes; a function's outermost loops check the counter at
theirs, from which a check due goes through a block that runs the handlers back to the
loop's header (codegen.emit_loop). LLVM runtime-unrolls no such loop: the handlers' call
is in it, and the exit where one raised is a second one; taken out of the loop, a block
re-entering it made a loop around the loop, for whose invariant conditions LLVM copied
the whole nest (docs/measurements.md). A loop nested
in another is not checked (its outer loop checks between its runs), nor are a callee's
loops while it runs (it checks its own outermost loops).

An outermost loop that counts (`for i in range(n)`, `while i < n: ... i += 1`) without
loops, calls or arrays in it comes in two versions (`long_trip`): a check in it would
stop LLVM from vectorizing it (docs/measurements.md), so where its trip count, known when
it starts, is at most `LONG_TRIP`, it runs without checks; beyond, it runs in chunks of
`LONG_TRIP` iterations, each the unchecked loop with its counter also bounded by the
chunk's end, and the handlers run between two chunks; where an i64 counter counts up
from 1 or more to at most `SMALL_COUNT`, the chunks' body is told so (`LongTrip.
assume_small`: LLVM cannot bound a chunk's counter, and keeps the checks that bound
excludes, which stop it vectorizing), and that version runs at every trip count, a short
one as one chunk: two versions of the loop, not three (no unchecked short one), which
LLVM optimizes and compiles in about a third less time (docs/benchmarks.md); and in a
first tier that version alone, a call whose counter leaves that range running on the
general tier (codegen.emit_while). A first tier's loop whose counter is not known to
be small (`for k in range(n)`, from 0; the reverse sweep of a gradient, counting down)
has its short version alone, a call running it more than `LONG_TRIP` iterations leaving
for the general tier: one copy for LLVM, the same code as the general tier's short one. (Where
the count cannot be bounded, as for a float counter, the loop checks its counter of work
as every other loop does.) Where the count is
over `RELEASE_TRIP`, the call releases the GIL before the loop (gil.py).
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from llvmlite import ir

from ...cabi import MAIN_THREAD
from ...ir.core import Graph, Node
from ...ir.types import ArrayType
from .emitter import FunctionEmitter
from .lltypes import I32_T, I64_T, STATUS, constant, lltype
from .runtime import gil
from .runtime.pyapi import declare
from .shared import shared_function

INTERRUPTED = "KeyboardInterrupt"
"""The exception name of a loop's signal check: the exception is the handler's, already set."""

CHECK_INTERVAL = 1 << 20
"""Units of work between two checks: about 0.1 s where a unit takes 100 ns (a unit is a
short loop iteration, a few nanoseconds, or `NODES_PER_UNIT` nodes of a long one)."""

FIRST_CHECK = 1 << 16
"""Units of work before an invocation's first check, which releases the GIL where the
call may (runtime/gil.py): other threads wait for a long call no longer than with
checks every 2^16 units."""

NODES_PER_UNIT = 4
"""Nodes of a loop's body (those of its inner loops apart) that weigh one unit more: a
body of many nodes, or of a few math calls of tens of nanoseconds, checks more often."""

ARRAY_WORK = 1 << 16
"""The weight of a node making an array: a loop making one checks every 16 iterations."""

CALL_WORK = 1 << 10
"""The weight of a call the inliner left (recursion, a large function), whose work the
loop's counter does not see: a loop calling one checks every 1024 calls, not every 2^20
(`for i in range(n): s += fib(22)` would run for a minute between checks)."""

LONG_TRIP = 1 << 20
"""The most iterations a flat counted loop runs unchecked: about 0.1 s at 100 ns each."""

SMALL_COUNT = (1 << 31) - 1
"""The largest counter of a chunked loop's `small` version (`LongTrip.assume_small`)."""

RELEASE_TRIP = 1 << 14
"""The fewest iterations of a flat counted loop before which the call releases the GIL
(runtime/gil.py): over a microsecond, where the release costs tens of nanoseconds."""

SIGNALS = gil.CHECK
RELEASED = "astjit.signals.released"
GIL_RETAKE_NS = 50_000_000
"""The least time between two GIL-taking checks of a call that released the GIL: a
thread waits for the GIL up to the switch interval (5 ms) when another holds it."""
CHECK_SIGNATURE = ir.FunctionType(I32_T, [])


def weight(node: Node) -> int:
    """The work of one iteration of loop `node`, but for its inner loops' own."""
    own = [n.op for region in node.regions for n in _own_nodes(region)]
    return 1 + len(own) // NODES_PER_UNIT + ARRAY_WORK * makes_arrays(node) \
        + CALL_WORK * own.count("call")


def makes_arrays(node: Node) -> int:
    """How many nodes of loop `node`'s body make an array, its inner loops' included."""
    return sum(isinstance(v.type, ArrayType) for region in node.regions
               for n in region.walk() for v in n.outputs)


def _own_nodes(region: Graph) -> Iterator[Node]:
    """The nodes of `region` and of its `if`s' regions, not those of its loops."""
    for n in region.nodes:
        yield n
        if n.op != "while":
            for inner in n.regions:
                yield from _own_nodes(inner)


def at_back_edge(em: FunctionEmitter, node: Node, checked: bool = True) -> ir.Value | None:
    """At the back-edge of `node` (a `while`): count its work; check for signals where it
    is an outermost loop (and not the unchecked version of a short counted one). A nested
    loop that steps an int of its own counts its work after it ends (`counted_after`)."""
    if em.numpy_semantics or not checked:
        return None  # a loop of a fused kernel's body, `long_trip`'s short version, or counted after
    builder = em.builder
    slot = _work_counter(em)
    work = builder.add(builder.load(slot), ir.Constant(I64_T, weight(node)))
    builder.store(work, slot)
    if not em.loop_depth:
        return builder.icmp_unsigned(">=", work, ir.Constant(I64_T, CHECK_INTERVAL))
    return None


def run_due(em: FunctionEmitter, node: Node) -> None:
    """Where an outermost loop's work reached `CHECK_INTERVAL` (`at_back_edge`): reset
    it and run the handlers."""
    em.builder.store(ir.Constant(I64_T, 0), _work_counter(em))
    run_handlers(em, node)


def counts_after(em: FunctionEmitter, node: Node) -> tuple[int, int] | None:
    """For a nested loop (emitted inside another) that steps a carried int by a constant
    every iteration (`for j in range(m)`'s j, a `total += 1`): that value's position among
    its carried values and its step, so that its work is counted once, after it ends
    (`count_after`), from how far the value went, rather than by an add at each back-edge.
    That add is an instruction in a loop that may be a handful (collatz's inner loop); its
    count only spaces the outer loop's checks, which `count_after` does as well (off by the
    iteration a `break` leaves). None for an outermost loop, which checks at its
    back-edge, and for a loop stepping no int."""
    if em.numpy_semantics or not em.loop_depth:
        return None
    for position in range(node.attrs["n_invariants"], len(node.regions[0].params)):
        step = _step(node, position)
        if step and isinstance(lltype(node.outputs[position - node.attrs["n_invariants"]].type),
                               ir.IntType):
            return position - node.attrs["n_invariants"], step
    return None


def count_after(em: FunctionEmitter, node: Node, stepped: tuple[int, int],
                initial: list[ir.Value], final: list[ir.Value]) -> None:
    """After nested loop `node`: add its work, its stepped int's distance over its step
    times its iterations' weight, to the invocation's counter (`counts_after`)."""
    builder = em.builder
    position, step = stepped
    start, end = initial[position], final[position]
    distance = builder.sub(end, start)
    if distance.type.width < 64:
        distance = builder.sext(distance, I64_T)
    elif distance.type.width > 64:
        distance = builder.trunc(distance, I64_T)
    iterations = builder.sdiv(distance, ir.Constant(I64_T, step))
    slot = _work_counter(em)
    work = builder.mul(iterations, ir.Constant(I64_T, weight(node)))
    builder.store(builder.add(builder.load(slot), work), slot)


def _work_counter(em: FunctionEmitter) -> ir.Value:
    """The invocation's work counter, an i64 stack slot set in the entry block to
    `CHECK_INTERVAL - FIRST_CHECK`: its first check comes after `FIRST_CHECK` units."""
    if em.work_counter is None:
        em.work_counter = em.alloca(I64_T)
        with em.builder.goto_entry_block():
            em.builder.store(ir.Constant(I64_T, CHECK_INTERVAL - FIRST_CHECK), em.work_counter)
    return em.work_counter


@dataclass(frozen=True)
class LongTrip:
    """An outermost flat counted loop that may run long: `long`, the i1 "it may run more
    than `LONG_TRIP` iterations" (emitted before it), and its counter (`counter`)."""

    long: ir.Value
    position: int
    """The counter's position among the loop's carried values."""
    step: int
    small: ir.Value | None = None
    """The i1 "the counter stays in [1, SMALL_COUNT]" (an i64 counter counting up from 1 or
    more to at most SMALL_COUNT), or None where that cannot hold."""
    bound: ir.Value | None = None
    """The loop's bound where its test is strict (`i < n`, `i > n`): a chunk's loop then
    runs to the nearer of it and the chunk's end (`limit`), else None."""

    def assume_small(self, builder: ir.IRBuilder, count: ir.Value) -> None:
        """Tell LLVM, in the body of the `small` version, that `count` is in [1,
        SMALL_COUNT], as it is there. Of a chunk's counter, whose start is the previous
        chunk's end, LLVM proves nothing, so it keeps the checks that range excludes
        (`1 / (k * k)`'s ZeroDivisionError, as `k * k` wraps to 0 at 2^32), and a loop
        with such a check does not vectorize."""
        assume = builder.module.globals.get("llvm.assume") or ir.Function(
            builder.module, ir.FunctionType(ir.VoidType(), [ir.IntType(1)]), "llvm.assume")
        for test, value in ((">=", 1), ("<=", SMALL_COUNT)):
            builder.call(assume, [builder.icmp_unsigned(test, count, ir.Constant(count.type, value))])

    def chunk_end(self, builder: ir.IRBuilder, count: ir.Value) -> ir.Value:
        """Where a chunk of `LONG_TRIP` iterations from `count` ends (saturated: never
        past the counter type's end)."""
        add = _intrinsic(builder.module, "sadd.sat", count.type)
        return builder.call(add, [count, ir.Constant(count.type, LONG_TRIP * self.step)])

    def limit(self, builder: ir.IRBuilder, chunk_end: ir.Value) -> ir.Value:
        """Where a chunk's loop stops: the nearer of the chunk's end and a strict test's
        bound. One compare against it is the loop's whole exit test, which LLVM optimizes
        and compiles in less time than the two compares and-ed (the test stays in the
        loop's condition: LLVM drops it as implied)."""
        if self.bound is None:
            return chunk_end
        nearer = "smin" if self.step > 0 else "smax"
        return builder.call(_intrinsic(builder.module, nearer, chunk_end.type),
                            [self.bound, chunk_end])

    def within(self, builder: ir.IRBuilder, count: ir.Value, end: ir.Value) -> ir.Value:
        """The i1 "`count` has not reached `end`", in the loop's direction."""
        return builder.icmp_signed("<" if self.step > 0 else ">", count, end)


def long_trip(em: FunctionEmitter, node: Node, invariants: list[ir.Value],
              initial: list[ir.Value]) -> LongTrip | None:
    """For an outermost flat counted loop whose trip count can be bounded when it starts:
    its `LongTrip`; the loop is then emitted twice, unchecked where it runs at most
    `LONG_TRIP` iterations, else in chunks of that many, or, where its counter is `small`,
    in chunks told so, else in chunks (codegen.emit_while). None for every other loop."""
    if em.numpy_semantics or em.loop_depth or makes_arrays(node) or any(
            n.op in ("while", "call") for region in node.regions for n in region.walk()):
        return None
    found = counter(node)
    if found is None:
        return None
    position, test, step = found
    cond = node.regions[0]
    n_inv = node.attrs["n_invariants"]
    start = initial[position - n_inv]
    bound = _outside_value(cond, test.inputs[1], invariants)
    if bound is None or not isinstance(start.type, ir.IntType) or bound.type != start.type:
        return None
    builder = em.builder
    forward = test.op in ("lt", "le")
    if (step > 0) != forward:
        return None  # a counter moving away from its bound: no bound on the trip count
    ahead = builder.icmp_signed(">", bound, start) if forward \
        else builder.icmp_signed("<", bound, start)
    distance = builder.sub(bound, start) if forward else builder.sub(start, bound)

    def beyond(trip: int) -> ir.Value:
        return builder.and_(ahead, builder.icmp_unsigned(
            ">", distance, ir.Constant(start.type, trip * abs(step))))

    with builder.if_then(beyond(RELEASE_TRIP), likely=False):
        gil.release_here(builder)
    small = None
    if 0 < step <= SMALL_COUNT and start.type == I64_T and not (
            isinstance(start, ir.Constant) and start.constant < 1):  # `range(n)`: no use
        # In the body, start <= counter < bound (<= bound for `le`); a step past it cannot wrap.
        small = builder.and_(builder.icmp_signed(">=", start, ir.Constant(I64_T, 1)),
                             builder.icmp_signed("<=", bound, ir.Constant(I64_T, SMALL_COUNT - 1)))
    strict = test.op in ("lt", "gt")
    return LongTrip(beyond(LONG_TRIP), position - n_inv, step, small, bound if strict else None)


def _outside_value(cond, value, invariants: list[ir.Value]) -> ir.Value | None:
    """`value` of the cond region as the code before the loop has it: an invariant or a
    constant; else None."""
    if value in cond.params:
        index = cond.params.index(value)
        return invariants[index] if index < len(invariants) else None
    made = next((n for n in cond.nodes if value in n.outputs), None)
    if made is not None and made.op == "const":
        return constant(value.type, made.attrs["value"])
    return None


def counter(loop: Node) -> tuple[int, Node, int] | None:
    """Where the loop counts (its condition, perhaps and-ed with exit flags, compares a
    carried value that the body steps by a constant, as `for i in range(n)` lowers): the
    carried value's position among the cond's params, the comparison, and the step."""
    cond, body = loop.regions
    n_inv = loop.attrs["n_invariants"]
    made = {out: node for region in (cond, body) for node in region.nodes for out in node.outputs}
    test = made.get(cond.outputs[0])
    tests = [made.get(v) for v in test.inputs] if test is not None and test.op == "bitand" \
        else [test]
    for t in tests:
        if t is None or t.op not in ("lt", "le", "gt", "ge") or t.inputs[0] not in cond.params:
            continue
        position = cond.params.index(t.inputs[0])
        step = _step(loop, position) if position >= n_inv else None
        if step is not None:
            return position, t, step
    return None


def _step(loop: Node, position: int) -> int | None:
    """The constant int by which the body steps the carried value at `position` (among the
    cond's params; past the invariants), on every iteration; None where it does not."""
    cond, body = loop.regions
    n_inv = loop.attrs["n_invariants"]
    made = {out: node for region in (cond, body) for node in region.nodes for out in node.outputs}
    step = made.get(body.outputs[position - n_inv])
    if step is None or step.op not in ("add", "add_sat", "sub") \
            or body.params[position] not in step.inputs:
        return None
    other = step.inputs[1] if step.inputs[0] is body.params[position] else step.inputs[0]
    by = made.get(other)
    value = by.attrs["value"] if by is not None and by.op == "const" else None
    if type(value) is not int or step.op == "sub" and step.inputs[0] is not body.params[position]:
        return None  # not a step by an int constant (c - i does not step)
    return -value if step.op == "sub" else value


def run_handlers(em: FunctionEmitter, node: Node) -> None:
    """Run the pending signal handlers; leave with `INTERRUPTED` when one raised."""
    check = em.module.globals.get(SIGNALS) or ir.Function(em.module, CHECK_SIGNATURE, SIGNALS)
    raised = em.builder.call(check, [])
    with em.builder.if_then(em.builder.icmp_signed("!=", raised, ir.Constant(I32_T, 0)),
                            likely=False):
        site = em.errors.status(INTERRUPTED, "interrupted", node.loc)
        em.return_status(ir.Constant(STATUS, site))


def define_signals(module: ir.Module, released: bool) -> None:
    """Give the module's `astjit.signals`, if its loops check, its body: for a call that
    holds the GIL `PyErr_CheckSignals`, else `astjit.signals.released`."""
    check = module.globals.get(SIGNALS)
    if check is None or not check.is_declaration:
        return
    check.linkage = "internal"
    check.attributes.add("nounwind")
    builder = ir.IRBuilder(check.append_basic_block("entry"))
    target = shared_function(module, RELEASED, CHECK_SIGNATURE, _emit_released, cold=True) \
        if released else declare(module, "PyErr_CheckSignals")
    builder.ret(builder.call(target, []))


def _emit_released(fn: ir.Function, b: ir.IRBuilder) -> None:
    """`astjit.signals.released`: where the call holds the GIL (its first check, or it
    pinned the GIL: gil.py), run the handlers, then release it unless pinned; else, on the
    main thread, at most every GIL_RETAKE_NS, take it back, run the handlers and release it
    again; 0 elsewhere."""
    module = fn.module
    zero = ir.Constant(I32_T, 0)
    check = declare(module, "PyErr_CheckSignals")
    state = gil.saved_state(b)
    with b.if_then(b.not_(gil.is_released(b, state))):
        raised = b.call(check, [])
        with b.if_then(b.icmp_signed("==", raised, zero)):
            gil.release_saving(b)
        b.ret(raised)
    this = b.call(_libc(module, "pthread_self", ir.FunctionType(I64_T, [])), [])
    main = module.globals.get(MAIN_THREAD) or ir.GlobalVariable(module, I64_T, MAIN_THREAD)
    with b.if_then(b.icmp_unsigned("!=", this, b.load(main))):
        b.ret(zero)
    timespec = b.alloca(ir.ArrayType(I64_T, 2))
    clock = _libc(module, "clock_gettime",
                  ir.FunctionType(I32_T, [I32_T, timespec.type.pointee.as_pointer()]))
    b.call(clock, [ir.Constant(I32_T, time.CLOCK_MONOTONIC), timespec])
    seconds, nanoseconds = (b.load(b.gep(timespec, [ir.Constant(I32_T, 0), ir.Constant(I32_T, i)]))
                            for i in range(2))
    now = b.add(b.mul(seconds, ir.Constant(I64_T, 1_000_000_000)), nanoseconds)
    last = ir.GlobalVariable(module, I64_T, RELEASED + ".last")
    last.linkage = "internal"
    last.initializer = ir.Constant(I64_T, 0)
    with b.if_then(b.icmp_signed("<", b.sub(now, b.load(last)), ir.Constant(I64_T, GIL_RETAKE_NS))):
        b.ret(zero)
    b.store(now, last)
    b.call(declare(module, "PyEval_RestoreThread"), [state])
    raised = b.call(check, [])
    b.call(declare(module, "PyEval_SaveThread"), [])
    b.ret(raised)


def _intrinsic(module: ir.Module, name: str, type_: ir.IntType) -> ir.Function:
    """LLVM's binary integer intrinsic `name` on `type_` (`sadd.sat`, `smin`)."""
    full = f"llvm.{name}.i{type_.width}"
    return module.globals.get(full) or ir.Function(module, ir.FunctionType(type_, [type_] * 2), full)


def _libc(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, fnty, name)

