"""Functions every LLVM module shares (the runtime): the setup and teardown of array ops.

Each array op needs some code around its loops: NumPy's dimension checks and
the allocation call with its error path, the owned list's release, a strided
copy, a BLAS call with its operand checks, unboxing an argument and boxing a
result. Emitted inline at every site, that code is most of what LLVM has to
optimize and turn into machine code for array programs (an MLP training step
has dozens of allocations), while it runs once per array, not once per
element. So each such function is compiled once per process, in the runtime
module (`jit.engine.compile_runtime`), and every module that calls it only declares it:
a kernel's module holds its own graphs, loops and wrapper, nothing else. Hot
loops stay where they are: a kernel's loop nest is emitted in its function;
only a helper's own loop (a fill, a copy) lives in the helper, where the
vectorizer optimizes it once.

`shared_function(module, name, fnty, emit)` returns the function `name` as
`module` sees it: the first time any module asks for it, its body is emitted
into the pending runtime module with `emit(function, builder, *args)`; the
pending module is compiled just before the next module that may call it
(`Engine.compile_ir` runs `jit.engine.compile_runtime` first), and its functions' addresses
are registered with LLVM's symbol table. A name therefore stands for one body
in the whole process: it must say everything the body depends on (dtype,
ndim). A helper that LLVM should inline (`inline`) is emitted in the module
itself. (The loops' metadata is loop_metadata.py.)
"""
from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from . import aggregate_abi
from .jit import runtime_cache
from .lltypes import call_intrinsic


class _Runtime:
    """The process's shared functions: those compiled, and those waiting for the next compile."""

    def __init__(self) -> None:
        self.compiled: set[str] = set()
        self.pending: ir.Module | None = None
        self.modules: list = []
        """The compiled runtime modules (`jit.engine.CompiledModule`), for `runtime_llvm_ir`."""
        self.lock = threading.RLock()
        self.references: dict[str, frozenset[str]] = {}
        """Name -> the functions its body refers to (runtime/gil.py reads what it calls)."""
        self.found: dict[str, Request] = {}
        """Functions asked for since the last compile and not emitted: a batch of the runtime
        cache defines them (`jit.runtime_cache.find`), linked before the next compile."""

    def pending_module(self) -> ir.Module:
        if self.pending is None:
            self.pending = ir.Module(name=f"astjit.runtime.{len(self.compiled)}")
        return self.pending


@dataclass(frozen=True)
class Request:
    """A shared function asked for and found in the runtime cache: how to emit it all the
    same, should its batch not link."""

    stored: runtime_cache.Stored
    fnty: ir.FunctionType
    emit: Callable[..., None]
    cold: bool


RUNTIME = _Runtime()


def _adopt_loaded() -> None:
    """The runtime functions the disk cache linked without LLVM before this module was
    imported (astjit/cache/__init__.py) are the runtime's: compiled code calls them."""
    cache = sys.modules.get("astjit.cache")
    if cache is not None:
        cache.adopt(RUNTIME)


_adopt_loaded()


def shared_function(module: ir.Module, name: str, fnty: ir.FunctionType,
                    emit: Callable[..., None], *, cold: bool = False,
                    inline: bool = False) -> ir.Function:
    """The function `name` as `module` sees it: a declaration of the runtime's (made there
    on first use, by `emit`); with `inline`, a function of `module` itself, left to
    LLVM to inline."""
    function = module.globals.get(name)
    if function is not None:
        return function
    if inline:
        return _define(module, name, fnty, emit, cold=cold, inline=True)
    with RUNTIME.lock:
        if module is RUNTIME.pending:  # a helper's own helper
            return _define(module, name, fnty, emit, cold=cold, inline=False)
        if name not in RUNTIME.compiled and name not in RUNTIME.found and (
                RUNTIME.pending is None or RUNTIME.pending.globals.get(name) is None):
            stored = _stored_batch(name)
            if stored is None:
                _define(RUNTIME.pending_module(), name, fnty, emit, cold=cold, inline=False)
            else:
                RUNTIME.found[name] = Request(stored, fnty, emit, cold)
    declaration = aggregate_abi.declare(module, fnty, name)
    declaration.attributes.add("nounwind")
    if cold:
        declaration.attributes.add("cold")
    return declaration


def _stored_batch(name: str) -> runtime_cache.Stored | None:
    """The runtime cache's batch defining `name` (one of those already found, else read), its
    functions' references taken as the process's, or None."""
    stored = next((r.stored for r in RUNTIME.found.values() if name in r.stored.references),
                  None) or runtime_cache.find(name)
    if stored is not None:
        for defined, references in stored.references.items():
            RUNTIME.references.setdefault(defined, frozenset(references))
    return stored


def found_imports() -> tuple[str, ...]:
    """What the batches found since the last compile import (`RUNTIME.found`): emitting
    their functions would have registered it, so the compile's caller registers it by name
    (cache/symbols.py) before the compile links them."""
    with RUNTIME.lock:
        return tuple(sorted({name for request in RUNTIME.found.values()
                             for name in request.stored.imports}))


def define_pending(name: str, request: Request) -> None:
    """Emit a found function into the pending module after all (its batch did not link)."""
    pending = RUNTIME.pending_module()
    if pending.globals.get(name) is None:
        _define(pending, name, request.fnty, request.emit, cold=request.cold, inline=False)


def _define(module: ir.Module, name: str, fnty: ir.FunctionType, emit: Callable[..., None], *,
            cold: bool, inline: bool) -> ir.Function:
    function = aggregate_abi.declare(module, fnty, name)
    function.attributes.add("nounwind")
    if inline:
        function.linkage = "internal"
    else:
        function.attributes.add("noinline")
    if cold:
        function.attributes.add("cold")
    builder = aggregate_abi.AggregateCalls(function.append_basic_block("entry"))
    emit(function, builder, *aggregate_abi.arguments(builder, function))
    if not inline:
        RUNTIME.references[name] = referenced_functions(function)
    return function


REFERENCE = re.compile(r'@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._][-a-zA-Z$._0-9]*)')
INDIRECT_CALL = re.compile(r'\bcall\b[^\n@]*? %"?[^\s(]*"?\(')
INDIRECT = "<indirect>"
"""What `referenced_functions` names for a call through a pointer, whose callee is unknown."""


def referenced_functions(function: ir.Function) -> frozenset[str]:
    """The other functions `function`'s body calls or takes the address of (`INDIRECT` for
    a call through a pointer), read off its instructions' operands: printing the function
    to search its text cost a noticeable part of a first array compile. A constant
    operand (a constant expression, an aggregate) is searched as text, where a function's
    address may sit inside it."""
    names = {f.name for f in function.module.functions} - {function.name}
    found = set()
    for block in function.blocks:
        for instruction in block.instructions:
            if isinstance(instruction, ir.CallInstr) and not isinstance(
                    instruction.callee, (ir.Function, ir.InlineAsm)):
                found.add(INDIRECT)
            for operand in instruction.operands:
                if isinstance(operand, ir.Function):
                    found.add(operand.name)
                elif isinstance(operand, (ir.Constant, ir.FormattedConstant, ir.GlobalVariable)):
                    found.update(m.strip('"') for m in REFERENCE.findall(str(operand)))
    return frozenset(found & (names | {INDIRECT}))


class Body:
    """What a lowering that runs inside a kernel needs of its emitter, in a shared
    function's body (`shared_function`'s `emit(function, builder, *args)`): the builder,
    the module and function, stack slots in an entry block of their own (which branches
    to the body, as a kernel's does), intrinsics, and both versions of a choice between
    a fast and a general one (`fast_only`), as in a general tier: the body serves every
    caller."""

    def __init__(self, function: ir.Function, builder: ir.IRBuilder) -> None:
        body = function.append_basic_block("body")
        builder.branch(body)
        self.slots = ir.IRBuilder(builder.block)
        self.slots.position_before(builder.block.terminator)
        builder.position_at_end(body)
        self.builder, self.function, self.module = builder, function, function.module

    def fast_only(self, cond: ir.Value) -> bool:
        return False

    def alloca(self, ty: ir.Type) -> ir.Value:
        return self.slots.alloca(ty)

    def call_intrinsic(self, name: str, args: list[ir.Value]) -> ir.Value:
        return call_intrinsic(self.builder, name, args)
