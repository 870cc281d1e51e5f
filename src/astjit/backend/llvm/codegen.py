"""Typed graphs to llvmlite IR: one LLVM function per graph, returning a status; the
structural ops and the dispatch of leaf ops.

Each graph is emitted by an `emitter.FunctionEmitter` (the core: builder, error
sites, failure exit, resources) given `emit_node`, this module's dispatch. A
`call` checks its callee's status and returns it unchanged, so a status travels
up to the entry; a graph on a call-graph cycle checks the stack on entry, and raises
RecursionError where it runs out (`runtime/stack.py`). In a module's first tier
(`emit_module(general=False)`) array nests get their fast versions only, and a
call that needs another leaves with the `DEOPTIMIZE` status, which the wrapper
answers by running it on the general tier (`FunctionEmitter.fast_only`). Graphs
other than the entry have internal linkage, so LLVM inlines them and folds the
status checks away.

The structural ops (`if`, `while`, `call`, `fused` in `fused.py` and `rowwise` in
`rowwise.py`) are emitted by hand here: `if` becomes two blocks and phis, `while` a natural loop
(header = the cond region, body, exit) whose carried values are header phis.
Every leaf op is emitted from its table entry's lowering descriptor
(`ops.OPS[op].llvm`): an IRBuilder method, an intrinsic, a libm call, or a
Routine from `ROUTINES` (assembled below from the lowering modules' tables),
followed by the entry's error check (`CHECKS`).

What an invocation owns is settled on every exit through `RESOURCES`: tapes
(`tapes.py`) and the array references on its owned list (`owned.py`); a call's
result tapes and arrays are adopted by the caller. Arrays (`array_layout.py`) are
structs passed by value like tuples: they flow through phis, region parameters
and calls unchanged.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from llvmlite import ir

from ...errors import CompileError
from ...ir.analysis import reachable_graphs
from ...ir.core import Graph, Module, Node
from ...ir.ops import OPS, Builder, Intrinsic, LibCall, Refused, Routine, lowering_for
from ...ir.types import ScalarType
from . import (
    adjoints,
    aggregate_abi,
    allocation,
    arith,
    arrays,
    callbacks,
    cmath_functions,
    cmath_trig,
    complex_views,
    complexes,
    fused,
    hypot,
    indexing,
    interrupts,
    linalg,
    loop_metadata,
    owned,
    parallel,
    python_complex,
    rowwise,
    scalars,
    scans,
    shaping,
    sorting,
    tapes,
    ufunc_calls,
    views,
)
from . import messages as msg
from .compare import own_nan
from .conversions import build_by_parts
from .emitter import DEOPTIMIZE, MAX_ERROR_VALUES, OK, ErrorSite, ErrorTable, FunctionEmitter, error_values
from .lltypes import STATUS, contains_array, lltype
from .printing import module_text
from .runtime import stack
from .teardown import take_apart

__all__ = ["DEOPTIMIZE", "MAX_ERROR_VALUES", "OK", "ErrorSite", "ErrorTable", "FunctionEmitter",
           "LoweredModule", "emit_module", "error_values", "reachable_graphs"]

ROUTINES = {
    **arith.ROUTINES,
    **hypot.ROUTINES,
    **tapes.ROUTINES,
    **arrays.ROUTINES,
    **allocation.ROUTINES,
    **views.ROUTINES,
    **adjoints.ROUTINES,
    **linalg.ROUTINES,
    **scalars.ROUTINES,
    **callbacks.ROUTINES,
    **complexes.ROUTINES,
    **python_complex.ROUTINES,
    **cmath_functions.ROUTINES,
    **cmath_trig.ROUTINES,
    **complex_views.ROUTINES,
    **scans.ROUTINES,
    **shaping.ROUTINES,
    **sorting.ROUTINES,
    **indexing.ROUTINES,
    **ufunc_calls.ROUTINES,
    "reduce": fused.reduce_routine,
    **fused.NUMPY_ROUTINES,
}
"""Every `ops.Routine(name)` of the primitive table -> its lowering `(emitter, node, operands)
-> value`, from the lowering modules' tables (a test checks every routine exists)."""

CHECKS = {"math1": scalars.check_math1}
"""`OpDef.check` -> `(emitter, node, operands, result) -> None`, which emits the error branch."""

RESOURCES = (tapes.RESOURCE, owned.RESOURCE)
"""What an invocation may own, settled in this order on every exit."""


@dataclass
class LoweredModule:
    """A typed Module lowered to LLVM IR, before optimization."""

    module: ir.Module
    source: Module
    """The typed Module it was lowered from."""
    functions: dict[str, ir.Function]
    """Graph name -> its LLVM function."""
    error_table: ErrorTable

    @property
    def errors(self) -> list[ErrorSite]:
        """The error sites: status k reports `errors[k - 1]`."""
        return self.error_table.sites

    @property
    def error_details(self) -> dict[int, str]:
        """Status -> the detail template of the sites that report numbers."""
        return self.error_table.details

    @property
    def entry_function(self) -> ir.Function:
        return self.functions[self.source.entry]

    @property
    def text(self) -> str:
        """The LLVM IR as emitted (including anything added since, like a wrapper)."""
        return module_text(self.module)

    def release(self) -> None:
        """Take the llvmlite module apart once its text is made (`teardown.take_apart`): its
        reference cycles left all its objects to the collector."""
        take_apart(self.module)
        self.functions.clear()


_module_numbers = itertools.count(1)


def emit_module(module: Module, general: bool = True) -> LoweredModule:
    """Lower the entry graph of a typed Module and every graph it calls; `general` False
    lowers the first tier (`FunctionEmitter.fast_only`)."""
    prefix = f"astjit.{next(_module_numbers)}."
    llmodule = ir.Module(name=prefix + module.entry)
    names = reachable_graphs(module)
    functions = {name: declare_graph(llmodule, module.graphs[name], prefix + ascii_symbol(name),
                                     internal=name != module.entry) for name in names}
    errors = ErrorTable()
    guarded = stack.cycle_callees(module, names)
    entry = module.entry_graph
    scalar = not any(contains_array(v.type) for v in [*entry.params, *entry.outputs])
    for name in names:
        emitter = FunctionEmitter(functions, errors, functions[name], emit_node, RESOURCES,
                                  general)
        emitter.guarded = guarded[name]
        emitter.scalar_module = scalar
        emitter.emit_body(module.graphs[name], check_stack_on_entry if guarded[name] else None)
    return LoweredModule(llmodule, module, functions, errors)


def ascii_symbol(name: str) -> str:
    """`name` with each non-ASCII character spelled `$u<hex>$`: machine code's symbols are
    looked up as ASCII (a function named `größe` could not be found once compiled)."""
    return "".join(c if c.isascii() else f"$u{ord(c):x}$" for c in name)


def declare_graph(llmodule: ir.Module, graph: Graph, name: str, internal: bool) -> ir.Function:
    """The LLVM function of `graph`: `i32 (params..., result* out)`."""
    if len(graph.outputs) != 1:
        raise CompileError(f"graph @{graph.name} must have one output", graph.loc)
    params = [lltype(p.type) for p in graph.params]
    result = lltype(graph.outputs[0].type)
    function = aggregate_abi.declare(
        llmodule, ir.FunctionType(STATUS, params + [result.as_pointer()]), name)
    if internal:
        function.linkage = "internal"
    function.attributes.add("nounwind")
    function.args[-1].add_attribute("noalias")
    for arg, param in zip(function.args, graph.params):
        arg.name = param.name
    function.args[-1].name = "out"
    return function


# ---- structural ops -------------------------------------------------------------------

def emit_node(em: FunctionEmitter, node: Node) -> list[ir.Value]:
    """One node's LLVM values: the structural ops by hand, every other op from the table."""
    if node.op == "if":
        return emit_if(em, node)
    if node.op == "while":
        return parallel.emit_prange(em, node) if parallel.in_parallel(em, node) \
            else emit_while(em, node)
    if node.op == "call":
        return [emit_call(em, node)]
    if node.op == "fused":
        return fused.emit_fused(em, node)
    if node.op == "rowwise":
        return rowwise.emit_rows(em, node)
    return [emit_leaf(em, node)]


def emit_if(em: FunctionEmitter, node: Node) -> list[ir.Value]:
    """Both regions in their own blocks, merged by one phi per output."""
    cond, captured = em.value(node.inputs[0]), em.values_of(node.inputs[1:])
    # A versioned loop (ir/passes/versioning.py): its fast loop's block names the checks
    # hoisted, and so does the module's `!astjit.checks.hoisted` list, which optimization
    # keeps where it merges that block away.
    hoisted = node.attrs.get("hoisted")
    names = (f"checks.hoisted: {hoisted}", "checks.failed") if hoisted else ("if.then", "if.else")
    if hoisted:
        em.module.add_named_metadata("astjit.checks.hoisted", [f"checks.hoisted: {hoisted}"])
    branches = [em.function.append_basic_block(n) for n in names]
    merge = em.function.append_basic_block("if.end")
    em.builder.cbranch(cond, *branches)
    incoming = []
    for region, block in zip(node.regions, branches):
        em.builder.position_at_end(block)
        outs = em.emit_graph(region, captured)
        incoming.append((outs, em.builder.block))
        em.builder.branch(merge)
    em.builder.position_at_end(merge)
    return [em.merge(out.type, [(outs[i], block) for outs, block in incoming])
            for i, out in enumerate(node.outputs)]


def emit_while(em: FunctionEmitter, node: Node) -> list[ir.Value]:
    """A natural loop (`emit_loop`); an outermost counted one whose trip count may be long
    in two versions: as it is, without signal checks, where it is short, else in chunks
    with the checks between them (`interrupts.long_trip`, `emit_chunked_loop`); where its
    counter may be small, in chunks whose body is told its counter's range where it is
    (`LongTrip.assume_small`), short or not, else in chunks; in a first tier, only the
    chunks told the range, or where the counter is not known to be small (`range(n)`
    counts from 0, a gradient's reverse sweep counts down), only the short version, a
    call where it does not hold leaving for the general tier (`FunctionEmitter.fast_only`):
    LLVM compiles one loop, not two."""
    n_inv = node.attrs["n_invariants"]
    invariants = em.values_of(node.inputs[:n_inv])
    initial = em.values_of(node.inputs[n_inv:])
    trip = interrupts.long_trip(em, node, invariants, initial)
    if trip is None:
        return emit_loop(em, node, invariants, initial)
    if trip.small is not None and em.fast_only(trip.small):
        return emit_chunked_loop(em, node, invariants, initial, trip, True)
    if trip.small is None and em.fast_only(em.builder.not_(trip.long)):
        return emit_loop(em, node, invariants, initial, checked=False)
    merge = em.function.append_basic_block("while.merged")
    incoming = []

    def version(name: str, emit) -> ir.Block:
        block = em.function.append_basic_block(name)
        with em.builder.goto_block(block):
            outs = emit()
            incoming.append((outs, em.builder.block))
            em.builder.branch(merge)
        return block

    def chunked(bounded: bool):
        return lambda: emit_chunked_loop(em, node, invariants, initial, trip, bounded)

    if trip.small is None:
        short = version("while.short",
                        lambda: emit_loop(em, node, invariants, initial, checked=False))
        em.builder.cbranch(trip.long, version("while.long", chunked(False)), short)
    else:
        em.builder.cbranch(trip.small, version("while.small", chunked(True)),
                           version("while.any", chunked(False)))
    em.builder.position_at_end(merge)
    return [em.merge(out.type, [(outs[i], block) for outs, block in incoming])
            for i, out in enumerate(node.outputs)]


def emit_chunked_loop(em: FunctionEmitter, node: Node, invariants: list[ir.Value],
                      initial: list[ir.Value], trip: interrupts.LongTrip,
                      bounded: bool = False) -> list[ir.Value]:
    """The long version of a counted loop: the unchecked loop over chunks of its counter's
    range, the signal handlers run after each chunk it ran to the end of. A chunk's loop
    keeps one exit, whose condition LLVM reads as the smaller of two trip counts, so it
    vectorizes as the short version does; a check inside it would not. Where `bounded`,
    its body is told the counter's range (`LongTrip.assume_small`)."""
    preheader = em.builder.block
    header, more, end = (em.function.append_basic_block(n)
                         for n in ("chunks.next", "chunks.more", "chunks.end"))
    em.builder.branch(header)
    em.builder.position_at_end(header)
    carried = [em.builder.phi(value.type) for value in initial]
    for phi, value in zip(carried, initial):
        phi.add_incoming(value, preheader)
    chunk_end = trip.chunk_end(em.builder, carried[trip.position])
    outs = emit_loop(em, node, invariants, carried, checked=False,
                     limit=(trip, trip.limit(em.builder, chunk_end)), bounded=bounded)
    em.builder.cbranch(trip.within(em.builder, outs[trip.position], chunk_end), end, more)
    em.builder.position_at_end(more)
    interrupts.run_handlers(em, node)
    for phi, value in zip(carried, outs):
        phi.add_incoming(value, em.builder.block)
    em.builder.branch(header)
    em.builder.position_at_end(end)
    return outs


def emit_loop(em: FunctionEmitter, node: Node, invariants: list[ir.Value],
              initial: list[ir.Value], checked: bool = True,
              limit: tuple[interrupts.LongTrip, ir.Value] | None = None,
              bounded: bool = False) -> list[ir.Value]:
    """Header phis, the cond region, the body region, one exit; its back-edge counts work
    (or, nested and stepping an int, its exit: `interrupts.counts_after`), and an
    outermost loop's checks for signals unless not `checked` (interrupts.py): where one
    is due, the back-edge goes through a block that runs the handlers, a second latch.
    With a `limit`, the loop also stops where its counter reaches it (`LongTrip.limit`), and
    where `bounded`, its body is told the counter's range (`LongTrip.assume_small`)."""
    preheader = em.builder.block
    header, body, end = (em.function.append_basic_block(n)
                         for n in ("while.cond", "while.body", "while.end"))
    em.builder.branch(header)
    em.builder.position_at_end(header)
    carried = [em.builder.phi(lltype(v.type)) for v in node.outputs]
    for phi, value in zip(carried, initial):
        phi.add_incoming(value, preheader)
    cond_region, body_region = node.regions
    after = interrupts.counts_after(em, node)
    em.loop_depth += 1
    (cond,) = em.emit_graph(cond_region, invariants + carried)
    if limit is not None:
        trip, chunk_end = limit
        cond = em.builder.and_(cond, trip.within(em.builder, carried[trip.position], chunk_end))
    em.builder.cbranch(cond, body, end)
    em.builder.position_at_end(body)
    if bounded:
        limit[0].assume_small(em.builder, carried[limit[0].position])
    updated = em.emit_graph(body_region, invariants + carried)
    em.loop_depth -= 1
    due = interrupts.at_back_edge(em, node, checked and after is None)
    for phi, value in zip(carried, updated):
        phi.add_incoming(value, em.builder.block)
    if due is None:
        latch = em.builder.branch(header)
    else:
        checks = em.function.append_basic_block("while.checks")
        latch = em.builder.cbranch(due, checks, header)
    if bounded and em.scalar_module and any(isinstance(v.type, ScalarType) and v.type.is_float
                                            for v in node.outputs):
        loop_metadata.one_vector_per_step(latch)
    if due is not None:
        em.builder.position_at_end(checks)
        interrupts.run_due(em, node)
        for phi, value in zip(carried, updated):
            phi.add_incoming(value, em.builder.block)
        em.builder.branch(header)
    em.builder.position_at_end(end)
    if after is not None:
        interrupts.count_after(em, node, after, initial, carried)
    return carried


def check_stack_on_entry(em: FunctionEmitter, graph: Graph) -> None:
    """A graph that calls back into its own call-graph cycle checks the stack once, on
    entry, for all those calls (`runtime/stack.py`), located at the first of them: one
    check per invocation to emit and to run, not one per path to a call (an unrolled
    fib had eight), and the frame entered has the whole headroom left below it."""
    first = next((node for node in graph.walk()
                  if node.op == "call" and node.attrs["callee"] in em.guarded), None)
    if first is not None:  # (a cycle through a call's custom_vjp rule alone calls nothing)
        _check_stack(em, first)


def _check_stack(em: FunctionEmitter, call: Node) -> None:
    site = em.errors.status("RecursionError", msg.RECURSION, call.loc)
    em.return_status_if(stack.too_deep(em.builder), ir.Constant(STATUS, site))
    em.stack_checked = True


def emit_call(em: FunctionEmitter, node: Node) -> ir.Value:
    """Call another graph; a nonzero status returns from this function too. A call
    that may close a cycle checks the stack first where nothing before it on every path
    did (`FunctionEmitter.stack_checked`): the check on entry (`check_stack_on_entry`)
    covers the function's own calls, not those of a parallel chunk it outlines."""
    callee = em.functions[node.attrs["callee"]]
    guarded = node.attrs["callee"] in em.guarded
    if guarded and not em.stack_checked:
        _check_stack(em, node)
    slot = em.alloca(lltype(node.outputs[0].type))
    # A guarded call stays a call: made a loop, an endless recursion would not raise.
    status = em.builder.call(callee, em.values_of(node.inputs) + [slot],
                             tail="notail" if guarded else False)
    em.return_status_if(em.builder.icmp_signed("!=", status, OK), status)
    result = em.builder.load(slot)
    em.adopt(node.outputs[0].type, result)
    return result


# ---- leaf ops, generically from the table --------------------------------------------

def emit_leaf(em: FunctionEmitter, node: Node) -> ir.Value:
    """A primitive, through its table entry's lowering and error check."""
    opdef = OPS.get(node.op)
    if opdef is None:
        raise CompileError(f"the CPU backend has no operation '{node.op}'", node.loc)
    args = em.values_of(node.inputs)
    numpy = em.numpy_semantics or node.attrs.get("numpy", False)  # ir/ops/strong.py
    lowering = (numpy and lowering_of(node, "llvm_numpy")) or lowering_of(node)
    match lowering:
        case Builder(method, extra):
            result = build_by_parts(em.builder, method, extra, args)
        case Intrinsic(name):
            result = em.call_intrinsic(name, args)
        case LibCall(name, _, nan):
            result = em.call_libm(name, args)
            if nan:
                result = own_nan(em.builder, args, result)
        case Routine(name):
            result = ROUTINES[name](em, node, args)
        case Refused(message):
            raise CompileError(f"the CPU backend does not compile '{node.op}': {message}",
                               node.loc)
        case _:
            raise CompileError(f"unknown lowering {lowering!r} for '{node.op}'", node.loc)
    if opdef.check and not numpy:
        CHECKS[opdef.check](em, node, args, result)
    return result


def lowering_of(node: Node, table: str = "llvm"):
    """The descriptor for the node's operand kind ('f', 'i', 'b'), else the '*' one, of
    the op's `llvm` lowering (or `llvm_numpy`: None where it has none)."""
    lowerings = getattr(OPS[node.op], table)
    first = node.inputs[0].type if node.inputs else None
    found = lowering_for(lowerings, first if isinstance(first, ScalarType) else None)
    if found is None and table == "llvm":
        raise CompileError(f"'{node.op}' has no CPU lowering for operands of type {first}",
                           node.loc)
    return found
