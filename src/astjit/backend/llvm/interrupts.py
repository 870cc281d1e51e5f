"""Ctrl-C in compiled loops: loops run Python's pending signal handlers as they go.

Compiled code holds the GIL and runs no bytecode, so CPython's SIGINT handler, which only
trips a flag for the interpreter's eval loop, would wait for a long loop to end. A loop
calls `PyErr_CheckSignals()`: with no signal pending (or off the main thread) it returns
0; otherwise it runs the handlers, and when one raises (SIGINT's: KeyboardInterrupt) it
returns -1 with the exception set. The loop then leaves with the `INTERRUPTED` status,
settling what the invocation owns as every error site does, and the wrapper returns NULL
with that exception (`WrapperEmitter.report`).

The call costs more than a short loop iteration, so it is made once per `CHECK_INTERVAL`
units of work, counted in a per-invocation counter (a stack slot LLVM keeps in a
register): every loop's back-edge adds its iteration's weight, 1 plus `ARRAY_WORK` per
node of its body making an array; a function's outermost loops check the counter at
theirs. Not checked: an outermost loop that counts (`for i in range(n)` containing no loop
and making no arrays): its trip count is known when it starts, and a check in it would
stop LLVM from vectorizing it (docs/measurements.md); and a loop nested in another alone
running long (its outer loop checks between its runs), as are a callee's loops while it
runs (it checks its own outermost loops).
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.core import Node
from ...ir.types import ArrayType
from .emitter import FunctionEmitter
from .lltypes import I32_T, I64_T, STATUS
from .runtime.pyapi import declare

INTERRUPTED = "KeyboardInterrupt"
"""The exception name of a loop's signal check: the exception is the handler's, already set."""

CHECK_INTERVAL = 1 << 16
"""Units of work between two checks: scalar loop iterations, roughly."""

ARRAY_WORK = 1 << 12
"""The weight of a node making an array: a loop making one checks every 16 iterations."""


def at_back_edge(em: FunctionEmitter, node: Node) -> None:
    """At the back-edge of `node` (a `while`): count its work; check for signals where it
    is an outermost loop that checks."""
    if em.numpy_semantics:
        return  # a loop of a fused kernel's body
    weight = 1 + ARRAY_WORK * sum(isinstance(v.type, ArrayType) for region in node.regions
                                  for n in region.walk() for v in n.outputs)
    outermost = not em.loop_depth
    if outermost and weight == 1 and counts(node) \
            and not any(n.op == "while" for region in node.regions for n in region.walk()):
        return
    builder = em.builder
    slot = _work_counter(em)
    work = builder.add(builder.load(slot), ir.Constant(I64_T, weight))
    builder.store(work, slot)
    if outermost:
        with builder.if_then(builder.icmp_unsigned(">=", work, ir.Constant(I64_T, CHECK_INTERVAL)),
                             likely=False):
            builder.store(ir.Constant(I64_T, 0), slot)
            run_handlers(em, node)


def _work_counter(em: FunctionEmitter) -> ir.Value:
    """The invocation's work counter, an i64 stack slot set to 0 in the entry block."""
    if em.work_counter is None:
        em.work_counter = em.alloca(I64_T)
        with em.builder.goto_entry_block():
            em.builder.store(ir.Constant(I64_T, 0), em.work_counter)
    return em.work_counter


def counts(loop: Node) -> bool:
    """Whether the loop counts: its condition (perhaps and-ed with exit flags) compares a
    carried value that the body steps by a constant, as `for i in range(n)` lowers."""
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
        step = made.get(body.outputs[position - n_inv]) if position >= n_inv else None
        if step is not None and step.op in ("add", "add_sat", "sub") \
                and body.params[position] in step.inputs \
                and any(getattr(made.get(v), "op", None) == "const" for v in step.inputs):
            return True
    return False


def run_handlers(em: FunctionEmitter, node: Node) -> None:
    """Run the pending signal handlers; leave with `INTERRUPTED` when one raised."""
    raised = em.builder.call(declare(em.module, "PyErr_CheckSignals"), [])
    with em.builder.if_then(em.builder.icmp_signed("!=", raised, ir.Constant(I32_T, 0)),
                            likely=False):
        site = em.errors.status(INTERRUPTED, "interrupted", node.loc)
        em.return_status(ir.Constant(STATUS, site))
