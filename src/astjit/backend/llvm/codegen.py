"""Typed graphs to llvmlite IR: one LLVM function per graph, returning a status.

Calling convention: a graph becomes ``i32 @name(<params>..., <result>* noalias out)``.
It stores its result through `out` and returns 0, or returns k > 0: the error
site k (an entry of the module's error table, `ErrorSite(exc, message, loc)`)
that failed (a site may also report numbers, left in the module's
`error_values` just before the status is returned: `fail_with_values`). A
`call` checks its callee's status and returns it unchanged, so
a status travels up to the entry; a call on a call-graph cycle first checks
the stack, and raises RecursionError where it runs out (`stack.py`). One site is no error: in a module's first
tier (`emit_module(general=False)`) array nests get their fast versions only,
and a call that needs another leaves with the `DEOPTIMIZE` status, which the
wrapper answers by running it on the general tier (`FunctionEmitter.fast_only`).
Graphs other than the entry have internal linkage, so LLVM inlines them and
folds the status checks away.

The structural ops (`if`, `while`, `call`, and `fused` in `fused.py`) are emitted by hand here: `if`
becomes two blocks and phis, `while` a natural loop (header = the cond region,
body, exit) whose carried values are header phis. Every leaf op is emitted
from its table entry's lowering descriptor (`ops.OPS[op].llvm`): an IRBuilder
method, an intrinsic, a libm call, or a Routine from `routines.ROUTINES`,
followed by the entry's error check (`routines.CHECKS`).

Tapes (`tapes.py`) are owned by the invocation that made them: a function that
may own some keeps a tape list, and every return path settles it
(`return_status` on failure, `emit_body` on success, `emit_call` adopts what a
callee hands back).

Arrays (`arrays.py`) are structs passed by value like tuples: they flow
through phis, region parameters and calls unchanged, and their elements are
read and written through the data pointer they hold. Arrays compiled code
makes (`memory.py`) are ndarrays NumPy allocates; the references an
invocation owns (allocations, retains, call results) are on its owned list
(`self.owned`), which `return_status` releases, so an error exit leaks none.
A call's result arrays are owned by the caller (`emit_call` adopts them).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import NamedTuple

from llvmlite import ir

from ...errors import CompileError, Loc
from ...ir.core import Graph, Module, Node, Value
from ...ir.ops import OPS, Builder, Intrinsic, LibCall, Refused, Routine, kind
from ...ir.types import ScalarType
from . import fused, memory, stack, tapes, vecmath
from . import messages as msg
from .lltypes import DOUBLE, I32_T, I64_T, STATUS, lltype
from .routines import CHECKS, ROUTINES

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
        return str(self.module)


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
    for name in names:
        emitter = FunctionEmitter(functions, errors, functions[name], general)
        emitter.guarded = guarded[name]
        emitter.emit_body(module.graphs[name])
    return LoweredModule(llmodule, module, functions, errors)


def ascii_symbol(name: str) -> str:
    """`name` with each non-ASCII character spelled `$u<hex>$`: machine code's symbols are
    looked up as ASCII (a function named `größe` could not be found once compiled)."""
    return "".join(c if c.isascii() else f"$u{ord(c):x}$" for c in name)


def reachable_graphs(module: Module) -> list[str]:
    """The entry's name, then every graph it calls directly or not, in discovery order."""
    order, pending = [module.entry], [module.entry]
    while pending:
        for callee in sorted(module.callees(module.graphs[pending.pop()])):
            if callee not in order:
                order.append(callee)
                pending.append(callee)
    return order


def declare_graph(llmodule: ir.Module, graph: Graph, name: str, internal: bool) -> ir.Function:
    """The LLVM function of `graph`: `i32 (params..., result* out)`."""
    if len(graph.outputs) != 1:
        raise CompileError(f"graph @{graph.name} must have one output", graph.loc)
    params = [lltype(p.type) for p in graph.params]
    result = lltype(graph.outputs[0].type)
    function = ir.Function(llmodule, ir.FunctionType(STATUS, params + [result.as_pointer()]), name)
    if internal:
        function.linkage = "internal"
    function.attributes.add("nounwind")
    function.args[-1].add_attribute("noalias")
    for arg, param in zip(function.args, graph.params):
        arg.name = param.name
    function.args[-1].name = "out"
    return function


class FunctionEmitter:
    """Emits one graph into its LLVM function; Routines use `builder` and `fail_if`."""

    def __init__(self, functions: dict[str, ir.Function], errors: ErrorTable,
                 function: ir.Function, general: bool = True):
        self.functions = functions
        self.general = general
        """False in a first tier: array nests get their fast version only (`fast_only`)."""
        self.errors = errors
        self.function = function
        self.builder = ir.IRBuilder(function.append_basic_block("entry"))
        self.values: dict[Value, ir.Value] = {}
        self.tape_list: ir.Value | None = None
        """The stack slot heading the list of tapes this invocation owns, if it may own any."""
        self.owned: memory.OwnedList | None = None
        """The array references this invocation owns, if it may own any (`memory.py`)."""
        self._failure: ir.PhiInstr | None = None
        """The status phi of the failure exit, once some site needs it (`failure_exit`)."""
        self.guarded: set[str] = set()
        """The callees that reach back to this graph: their calls check the stack first."""
        self.numpy_semantics = False
        """Set while a `fused` kernel is emitted: leaf ops follow NumPy (`OpDef.llvm_numpy`),
        without the table's error checks."""

    @property
    def module(self) -> ir.Module:
        return self.function.module

    # ---- graphs and structural ops ---------------------------------------------------

    def emit_body(self, graph: Graph) -> None:
        """The whole function: the graph, then store its result and return OK."""
        self.tape_list = tapes.open_list(self, graph)
        self.owned = memory.open_list(self, graph)
        (result,) = self.emit_graph(graph, list(self.function.args[:-1]))
        tapes.close_list(self, graph.outputs[0].type, result)
        self.builder.store(result, self.function.args[-1])
        self.builder.ret(OK)

    def emit_graph(self, graph: Graph, args: list[ir.Value]) -> list[ir.Value]:
        """Emit a graph's nodes with its parameters bound to `args`; return its outputs."""
        self.values.update(zip(graph.params, args))
        for node in graph.nodes:
            if node.op == "if":
                results = self.emit_if(node)
            elif node.op == "while":
                results = self.emit_while(node)
            elif node.op == "call":
                results = [self.emit_call(node)]
            elif node.op == "fused":
                results = fused.emit_fused(self, node)
            else:
                results = [self.emit_leaf(node)]
            self.values.update(zip(node.outputs, results))
        return [self.value(v) for v in graph.outputs]

    def emit_if(self, node: Node) -> list[ir.Value]:
        """Both regions in their own blocks, merged by one phi per output."""
        cond, captured = self.value(node.inputs[0]), self.values_of(node.inputs[1:])
        branches = [self.function.append_basic_block(n) for n in ("if.then", "if.else")]
        merge = self.function.append_basic_block("if.end")
        self.builder.cbranch(cond, *branches)
        incoming = []
        for region, block in zip(node.regions, branches):
            self.builder.position_at_end(block)
            outs = self.emit_graph(region, captured)
            incoming.append((outs, self.builder.block))
            self.builder.branch(merge)
        self.builder.position_at_end(merge)
        return [self.merge(out.type, [(outs[i], block) for outs, block in incoming])
                for i, out in enumerate(node.outputs)]

    def emit_while(self, node: Node) -> list[ir.Value]:
        """A natural loop: header phis, the cond region, the body region, one exit."""
        n_inv = node.attrs["n_invariants"]
        invariants = self.values_of(node.inputs[:n_inv])
        initial = self.values_of(node.inputs[n_inv:])
        preheader = self.builder.block
        header, body, end = (self.function.append_basic_block(n)
                             for n in ("while.cond", "while.body", "while.end"))
        self.builder.branch(header)
        self.builder.position_at_end(header)
        carried = [self.builder.phi(lltype(v.type)) for v in node.outputs]
        for phi, value in zip(carried, initial):
            phi.add_incoming(value, preheader)
        cond_region, body_region = node.regions
        (cond,) = self.emit_graph(cond_region, invariants + carried)
        self.builder.cbranch(cond, body, end)
        self.builder.position_at_end(body)
        updated = self.emit_graph(body_region, invariants + carried)
        for phi, value in zip(carried, updated):
            phi.add_incoming(value, self.builder.block)
        self.builder.branch(header)
        self.builder.position_at_end(end)
        return carried

    def emit_call(self, node: Node) -> ir.Value:
        """Call another graph; a nonzero status returns from this function too. A call
        that may close a cycle first checks the stack (`stack.py`)."""
        callee = self.functions[node.attrs["callee"]]
        guarded = node.attrs["callee"] in self.guarded
        if guarded:
            self.fail_if(node, stack.too_deep(self.builder), "RecursionError", msg.RECURSION)
        slot = self.alloca(lltype(node.outputs[0].type))
        # A guarded call stays a call: made a loop, an endless recursion would not raise.
        status = self.builder.call(callee, self.values_of(node.inputs) + [slot],
                                   tail="notail" if guarded else False)
        with self.builder.if_then(self.builder.icmp_signed("!=", status, OK), likely=False):
            self.return_status(status)
        result = self.builder.load(slot)
        tapes.adopt_results(self, node.outputs[0].type, result)
        memory.adopt_results(self, node.outputs[0].type, result)
        return result

    # ---- leaf ops, generically from the table -----------------------------------------

    def emit_leaf(self, node: Node) -> ir.Value:
        """A primitive, through its table entry's lowering and error check."""
        opdef = OPS.get(node.op)
        if opdef is None:
            raise CompileError(f"the CPU backend has no operation '{node.op}'", node.loc)
        args = self.values_of(node.inputs)
        numpy = self.numpy_semantics or node.attrs.get("numpy", False)  # ir/ops/strong.py
        lowering = (numpy and self.lowering_of(node, "llvm_numpy")) or self.lowering_of(node)
        match lowering:
            case Builder(method, extra):
                result = getattr(self.builder, method)(*extra, *args)
            case Intrinsic(name):
                result = self.call_intrinsic(name, args)
            case LibCall(name):
                result = self.call_libm(name, args)
            case Routine(name):
                result = ROUTINES[name](self, node, args)
            case Refused(message):
                raise CompileError(f"the CPU backend does not compile '{node.op}': {message}",
                                   node.loc)
            case _:
                raise CompileError(f"unknown lowering {lowering!r} for '{node.op}'", node.loc)
        if opdef.check and not numpy:
            CHECKS[opdef.check](self, node, args, result)
        return result

    @staticmethod
    def lowering_of(node: Node, table: str = "llvm"):
        """The descriptor for the node's operand kind ('f', 'i', 'b'), else the '*' one, of
        the op's `llvm` lowering (or `llvm_numpy`: None where it has none)."""
        lowerings = getattr(OPS[node.op], table)
        first = node.inputs[0].type if node.inputs else None
        key = kind(first) if isinstance(first, ScalarType) else "*"
        found = lowerings.get(key) or lowerings.get("*")
        if found is None and table == "llvm":
            raise CompileError(f"'{node.op}' has no CPU lowering for operands of type {first}",
                               node.loc)
        return found

    def call_intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        """An LLVM intrinsic overloaded on the type of its first operand."""
        if self.numpy_semantics and (vector := vecmath.call_math(self, name, args)) is not None:
            return vector
        ty = args[0].type
        fnty = ir.FunctionType(ty, [a.type for a in args])
        return self.builder.call(self.module.declare_intrinsic(name, [ty], fnty), args)

    def call_libm(self, name: str, args: list[ir.Value]) -> ir.Value:
        """A C math function on doubles; float operands are widened, the result narrowed.
        In a kernel, a function libmvec has is a call the vectorizer can widen (`vecmath`)."""
        if self.numpy_semantics and (vector := vecmath.call_math(self, name, args)) is not None:
            return vector
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(DOUBLE, [DOUBLE] * len(args)), name)
            fn.attributes.add("nounwind")
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
        """One unlikely branch for several error conditions; the first true one wins."""
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
        """`fail_if`, also reporting `values` (i64) for the site's `detail` template."""
        assert len(values) <= MAX_ERROR_VALUES
        builder = self.builder
        with builder.if_then(cond, likely=False):
            slots = error_values(self.module)
            for i, value in enumerate(values):
                builder.store(value, builder.gep(slots, [ir.Constant(I32_T, 0),
                                                         ir.Constant(I32_T, i)], inbounds=True))
            number = self.errors.status(exc, message, node.loc, detail)
            self.return_status(ir.Constant(STATUS, number))

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
            tapes.release_list(self)
            memory.release_list(self)
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
