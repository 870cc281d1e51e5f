"""The emitter core every lowering builds on: one graph's LLVM function being emitted.

`FunctionEmitter` holds the builder, the map from IR values to LLVM values, the
module's error table and the function's error sites (`fail_if`, `fail_if_any`,
`fail_with_values`, `return_status`: a failure status branches to the one
failure exit), stack slots (`alloca`), the tiering flag (`general`,
`fast_only`) and the NumPy-semantics flag of `fused` kernels. It imports no
lowering: how a node is emitted is the `emit_node` function it is given
(`codegen.emit_node`), and what an invocation owns (tapes, array references)
are the `Resource`s it is given, each opened at entry, adopted from a call's
result, closed on a normal return and released on every failure exit.

Calling convention: a graph becomes ``i32 @name(<params>..., <result>* noalias out)``,
an aggregate parameter (an array, a tuple) passed by pointer (aggregate_abi.py); it
returns 0 (`OK`) or the number k > 0 of its failing error site (`ErrorTable`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from llvmlite import ir

from ...errors import CompileError, Loc
from ...ir.core import Graph, Node, Value
from ...ir.types import Type
from . import aggregate_abi, vecmath
from .folding import FoldingBuilder, never
from .lltypes import DOUBLE, I32_T, I64_T, STATUS, call_intrinsic, declare_libm, lltype
from .unused import remove_unused

OK = ir.Constant(STATUS, 0)

DEOPTIMIZE = "Deoptimize"
"""The exception name of the one error site that is no error: a first-tier module's way
out where a fast version does not apply (`FunctionEmitter.fast_only`)."""


class ErrorSite(NamedTuple):
    """A place where compiled code can raise: status k means `errors[k - 1]`."""

    exc: str
    """The exception class name, a key of `ops.EXCEPTIONS`."""
    message: str
    loc: Loc | None


class ErrorTable:
    """The error sites of one LLVM module, numbered from 1; equal sites share a number.

    A site's message is fixed. A site may also have a `detail`: a `str.format`
    template for a fuller message built from run-time numbers (NumPy's
    "index {0} is out of bounds for axis 0 with size {1}"), which the failing
    code leaves in the module's `error_values` global for the wrapper to pass on
    (see `FunctionEmitter.fail_with_values` and `entry.ErrorReporter`).
    """

    def __init__(self) -> None:
        self.sites: list[ErrorSite] = []
        self.details: dict[int, str] = {}
        """Site number -> its detail template, for the sites that have one."""
        self._numbers: dict[tuple[ErrorSite, str | None], int] = {}

    def status(self, exc: str, message: str, loc: Loc | None, detail: str | None = None) -> int:
        site = ErrorSite(exc, message, loc)
        key = (site, detail)  # one line may hold two sites of one message, other details
        if key not in self._numbers:
            self.sites.append(site)
            self._numbers[key] = len(self.sites)
        number = self._numbers[key]
        if detail is not None:
            self.details[number] = detail
        return number

    @property
    def deoptimize(self) -> int | None:
        """The status of the `DEOPTIMIZE` site, if some code fails with it."""
        return self._numbers.get((ErrorSite(DEOPTIMIZE, "", None), None))


FIRST_INDEX = {"array_get": 1, "array_set": 2}
"""Element access ops -> the input position of their axis-0 index."""

MAX_ERROR_VALUES = 4
"""How many i64 numbers a failing site can report (`error_values`)."""


def error_values(module: ir.Module) -> ir.GlobalVariable:
    """The module's `[MAX_ERROR_VALUES x i64]` where a failing site leaves its numbers.

    One per LLVM module, written just before a failure status is returned and read
    by the wrapper right after the call: compiled code holds the GIL throughout,
    so no other call of the module runs in between.
    """
    name = "astjit.error_values"
    variable = module.globals.get(name)
    if variable is None:
        variable = ir.GlobalVariable(module, ir.ArrayType(I64_T, MAX_ERROR_VALUES), name)
        variable.linkage = "internal"
        variable.initializer = ir.Constant(variable.value_type, None)
    return variable


class Resource(NamedTuple):
    """Something an invocation may own and must settle on every exit (tapes, array
    references): its hooks, called in the order the resources are given."""

    name: str
    """The key of its per-invocation state in `FunctionEmitter.held`."""
    open: Callable[[FunctionEmitter, Graph], Any]
    """At function entry: the state (None where the graph needs none)."""
    adopt: Callable[[FunctionEmitter, Type, ir.Value], None]
    """After a call: take over what the callee handed back in its result."""
    release: Callable[[FunctionEmitter], None]
    """On the failure exit: let go of everything owned."""
    close: Callable[[FunctionEmitter, Type, ir.Value], None] | None = None
    """Before a normal return of the result, if it has something to do then."""


class FunctionEmitter:
    """Emits one graph into its LLVM function; lowerings use `builder` and `fail_if`."""

    def __init__(self, functions: dict[str, ir.Function], errors: ErrorTable,
                 function: ir.Function, emit_node: Callable[[FunctionEmitter, Node], list[ir.Value]],
                 resources: tuple[Resource, ...] = (), general: bool = True):
        self.functions = functions
        self.general = general
        """False in a first tier: array nests get their fast version only (`fast_only`)."""
        self.errors = errors
        self.function = function
        self.emit_node = emit_node
        """How one node becomes LLVM values (structural ops and leaf dispatch: `codegen`)."""
        self.resources = resources
        self.held: dict[str, Any] = {resource.name: None for resource in resources}
        """Resource name -> its state in this invocation (a tape list, an owned list)."""
        self.builder = FoldingBuilder(function.append_basic_block("entry"))
        """Answers with a value where the operands decide it, as it emits (folding.py)."""
        self.values: dict[Value, ir.Value] = {}
        self._failure: ir.PhiInstr | None = None
        """The status phi of the failure exit, once some site needs it (`failure_exit`)."""
        self.guarded: set[str] = set()
        """The callees that reach back to this graph: their calls check the stack first."""
        self.stack_checked = False
        """Whether the stack was checked on every path to the node being emitted (by a call
        of `guarded` earlier in its region or an enclosing one): a check there answers the
        same (the invocation's frame and the limit stay), so its calls skip theirs."""
        self.numpy_semantics = False
        """Set while a `fused` kernel is emitted: leaf ops follow NumPy (`OpDef.llvm_numpy`),
        without the table's error checks."""
        self.loop_depth = 0
        """How many `while` loops enclose the node being emitted (interrupts.py)."""
        self.scalar_module = False
        """Whether the module takes and returns no array, so that the scalar pipeline
        compiles it whole (engine.PIPELINES): its told float loops run one vector per step
        (`loop_metadata.one_vector_per_step`)."""
        self.work_counter: ir.Value | None = None
        """The invocation's count of loop work since its last signal check (interrupts.py)."""
        self.indices: dict[tuple, tuple[ir.Value, bool]] = {}
        """(array, axis, index) LLVM values -> the index within the axis, and whether it was
        checked, for the element accesses emitted so far in the current region and those
        enclosing it (`array_layout.element_pointer`): `a[k] += 1` checks `k` once."""
        self.strided: set[Value] = set()
        """The array values lowered here as views whose last axis is seldom unit-stride
        (np.diag of a matrix steps by a row and a column): a `fused` nest reads them at
        their run-time stride in its unit-stride version, rather than its first tier
        leaving for the general one on nearly every call (fused.py)."""
        self.deferred: tuple[Value, ir.Value, Callable[[bool], None]] | None = None
        """A conversion's check not emitted yet (`defer_check`): its output, that output's
        LLVM value, and what emits the check."""

    @property
    def module(self) -> ir.Module:
        return self.function.module

    # ---- graphs -----------------------------------------------------------------------

    def emit_body(self, graph: Graph,
                  prologue: Callable[[FunctionEmitter, Graph], None] | None = None) -> None:
        """The whole function: open the resources, `prologue` (checks on entry), the graph,
        then store its result and return OK; what no instruction uses is taken out after
        (unused.py).

        The entry block holds the stack slots (`alloca`) alone and branches to the rest:
        LLVM's loop extractor leaves in place the loop of a function whose entry block
        branches straight to it (a reduction with no version to choose, np.trace's),
        and a module keeping a loop compiles whole at O3 (jit/split.py)."""
        body = self.function.append_basic_block("body")
        self.builder.branch(body)
        self.builder.position_at_end(body)
        for resource in self.resources:
            self.held[resource.name] = resource.open(self, graph)
        if prologue is not None:
            prologue(self, graph)
        (result,) = self.emit_graph(graph, aggregate_abi.arguments(self.builder, self.function)[:-1])
        for resource in self.resources:
            if resource.close is not None:
                resource.close(self, graph.outputs[0].type, result)
        self.builder.store(result, self.function.args[-1])
        self.builder.ret(OK)
        remove_unused(self.function)

    def emit_graph(self, graph: Graph, args: list[ir.Value]) -> list[ir.Value]:
        """Emit a graph's nodes with its parameters bound to `args`; return its outputs.
        What the region learns of its indices and of the stack stays in it: its code
        dominates none after."""
        self.values.update(zip(graph.params, args))
        enclosing, self.indices = self.indices, dict(self.indices)
        checked = self.stack_checked
        for node in graph.nodes:
            if self.deferred is not None and not self._may_wait(node):
                self.settle_deferred()
            self.values.update(zip(node.outputs, self.emit_node(self, node)))
        self.settle_deferred()
        self.indices, self.stack_checked = enclosing, checked
        return [self.value(v) for v in graph.outputs]

    # ---- a conversion checked by the index check --------------------------------------

    def defer_check(self, node: Node, value: ir.Value, check: Callable[[bool], None]) -> None:
        """Let the check of `node` (an int(x) of a float), which `check` emits, wait for
        the next node, and if that is an element access at `node`'s output, run on the
        cold path of its index check (`take_deferred`). `check(rejoin)`: with `rejoin`
        (emitted between nodes, where the code goes on from the check) it may rebind
        `node`'s output to a value it computes.

        On x86-64 the conversion answers -2**63 for what it cannot convert (NaN, the
        infinities, out of range), which as an unsigned number fails every index check,
        `index <u size`: the index check's cold path then asks the conversion's
        questions first, so the hot path of `a[int(x)]` is one compare, not two, and
        Python's errors come as they did, in their order. Any other next node has the
        check emitted before it (`_may_wait` says which may come first).
        """
        self.settle_deferred()
        self.deferred = (node.outputs[0], value, check)

    def take_deferred(self, value: ir.Value) -> Callable[[], None] | None:
        """The waiting check of the conversion that gave `value`, now the caller's to emit."""
        if self.deferred is None or self.deferred[1] is not value:
            return None
        check, self.deferred = self.deferred[2], None
        return lambda: check(False)

    def settle_deferred(self) -> None:
        """Emit the waiting conversion check here, if there is one."""
        if self.deferred is not None:
            check, self.deferred = self.deferred[2], None
            check(True)

    def _may_wait(self, node: Node) -> bool:
        """Whether the waiting check may come after `node` starts: `node` indexes an
        array at axis 0 with the conversion's output (its index check takes the
        check over, before anything else it does), or it neither reads that output
        nor may raise or act."""
        from ...ir.passes.effects import has_effects

        converted = self.deferred[0]
        at = FIRST_INDEX.get(node.op)
        if at is not None and len(node.inputs) > at and node.inputs[at] is converted:
            return True
        return not node.regions and converted not in node.inputs and not has_effects(node)

    def adopt(self, t: Type, result: ir.Value) -> None:
        """After a call returned `result` of type `t`: every resource takes over its share."""
        for resource in self.resources:
            resource.adopt(self, t, result)

    # ---- calls the vectorizer may widen -------------------------------------------------

    def call_intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        """An LLVM intrinsic overloaded on the type of its first operand."""
        if self.numpy_semantics and (vector := vecmath.call_math(self, name, args)) is not None:
            return vector
        return call_intrinsic(self.builder, name, args)

    def call_libm(self, name: str, args: list[ir.Value]) -> ir.Value:
        """A C math function on doubles; float operands are widened, the result narrowed.
        In a kernel, a function libmvec has is a call the vectorizer can widen (`vecmath`)."""
        if self.numpy_semantics and (vector := vecmath.call_math(self, name, args)) is not None:
            return vector
        fn = declare_libm(self.module, name, DOUBLE, len(args))
        ty = args[0].type
        if ty == DOUBLE:
            return self.builder.call(fn, args)
        result = self.builder.call(fn, [self.builder.fpext(a, DOUBLE) for a in args])
        return self.builder.fptrunc(result, ty)

    # ---- services for routines ------------------------------------------------------------

    def fail_if(self, node: Node, cond: ir.Value, exc: str, message: str) -> None:
        """Return the status of error site (exc, message, node.loc) when `cond` holds."""
        self.fail_if_any(node, [(cond, exc, message)])

    def fail_if_any(self, node: Node, cases: list[tuple[ir.Value, str, str]]) -> None:
        """One unlikely branch for several error conditions; the first true one wins.
        A condition folded to false is no error site."""
        cases = [case for case in cases if not never(case[0])]
        if not cases:
            return
        builder = self.builder
        failed = cases[0][0]
        for cond, _, _ in cases[1:]:
            failed = builder.or_(failed, cond)
        with builder.if_then(failed, likely=False):
            status = None
            for cond, exc, message in reversed(cases):
                number = ir.Constant(STATUS, self.errors.status(exc, message, node.loc))
                status = number if status is None else builder.select(cond, number, status)
            self.return_status(status)

    def fast_only(self, cond: ir.Value) -> bool:
        """Whether to emit only the fast version of what `cond` chooses between a fast
        version (when it holds: unit strides, a row layout, a reusable buffer) and a
        general one.

        In the general tier, no: both are emitted, chosen at run time. In the first
        tier, yes: where `cond` fails the call leaves with the `DEOPTIMIZE` status,
        which the wrapper answers by running the same call on the general tier,
        compiled then (`api.Dispatcher.call_general`). A first tier is built only for
        a function that writes into no argument, so leaving part-way is unseen (what
        the invocation owns is released as on any failure). Most calls never take a
        general version; leaving them out of the first tier halves or thirds what
        LLVM compiles for an array function.
        """
        if self.general:
            return False
        if isinstance(cond, ir.Constant) and cond.constant:
            return True
        with self.builder.if_then(self.builder.not_(cond), likely=False):
            self.return_status(ir.Constant(STATUS, self.errors.status(DEOPTIMIZE, "", None)))
        return True

    def fail_with_values(self, node: Node, cond: ir.Value, exc: str, message: str, detail: str,
                         values: list[ir.Value]) -> None:
        """`fail_if`, also reporting `values` (i64) for the site's `detail` template.

        The values are reported through copies made here, before the branch (`v + 0`,
        which LLVM folds, but only after the loops are extracted). In a loop the branch
        leaves the loop, so what it stores are values the loop extractor passes out
        (jit/split.py), storing each where it is defined: a copy made on a cold path
        (`array_layout._wrapped`: an index outside the axis) keeps that store off
        the hot path, where the index itself was computed.
        """
        assert len(values) <= MAX_ERROR_VALUES
        if never(cond):
            return
        builder = self.builder
        values = [builder.copy(value) for value in values]
        with builder.if_then(cond, likely=False):
            slots = error_values(self.module)
            for i, value in enumerate(values):
                builder.store(value, builder.gep(slots, [ir.Constant(I32_T, 0),
                                                         ir.Constant(I32_T, i)], inbounds=True))
            number = self.errors.status(exc, message, node.loc, detail)
            self.return_status(ir.Constant(STATUS, number))

    def return_status_if(self, cond: ir.Value, status: ir.Value) -> None:
        """`return_status(status)` where `cond` holds (unlikely): one branch straight to the
        failure exit, without a block of its own in between, which LLVM would only fold
        away (fewer blocks to emit, print and parse: a recursive graph's calls and stack
        checks)."""
        phi = self.failure_exit()
        here = self.builder.block
        after = self.builder.append_basic_block(name=here.name + ".ok")
        self.builder.cbranch(cond, phi.parent, after).set_weights([1, 99])
        phi.add_incoming(status, here)
        self.builder.position_at_end(after)

    def return_status(self, status: ir.Value) -> None:
        """Return a failure status, first freeing the tapes and releasing the array
        references this invocation owns: a branch to the function's one failure exit
        (`failure_exit`), which does that for every error site."""
        phi = self.failure_exit()
        phi.add_incoming(status, self.builder.block)
        self.builder.branch(phi.parent)

    def failure_exit(self) -> ir.PhiInstr:
        """The status phi of the block that settles the tapes and the owned list and returns
        the status, made on first use (one per function: dozens of error sites share it)."""
        if self._failure is None:
            here = self.builder.block
            self.builder.position_at_end(self.function.append_basic_block("failed"))
            self._failure = self.builder.phi(STATUS)
            for resource in self.resources:
                resource.release(self)
            self.builder.ret(self._failure)
            self.builder.position_at_end(here)
        return self._failure

    def alloca(self, ty: ir.Type) -> ir.Value:
        """A stack slot in the entry block, where SROA turns it back into registers."""
        with self.builder.goto_entry_block():
            return self.builder.alloca(ty)

    def merge(self, t, incoming: list[tuple[ir.Value, ir.Block]]) -> ir.Value:
        phi = self.builder.phi(lltype(t))
        for value, block in incoming:
            phi.add_incoming(value, block)
        return phi

    def value(self, v: Value) -> ir.Value:
        try:
            return self.values[v]
        except KeyError:
            raise CompileError(f"value {v!r} is used before it is defined "
                               f"(in @{self.function.name})") from None

    def values_of(self, vs: list[Value]) -> list[ir.Value]:
        return [self.value(v) for v in vs]
