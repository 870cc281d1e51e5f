"""The recursion guard: compiled recursion too deep for the stack raises RecursionError.

A function with a call that can close a call-graph cycle (its callee reaches
its caller: the pairs `cycle_callees` finds) compares the stack address with the
module's limit, `astjit.stack.limit`, on entry; below it, the invocation fails
with RecursionError at the source line of its first such call, and the status
unwinds like any error's (tapes freed, owned arrays released). That is one load,
one compare and one unlikely branch per invocation (codegen.check_stack_on_entry);
a call of the cycle in a parallel chunk, another thread's frame, checks before it
is made (codegen.emit_call). Functions off every cycle, and modules without one,
have no check.

The wrapper of a module with a guarded call sets the limit around its call of
the entry graph (`enter` / `leave`, which restore the previous limit): the
lowest address of the calling thread's stack plus `cabi.HEADROOM` (for one more
frame and what compiled code calls unchecked: NumPy, BLAS, libm). The bounds
come from the thread library, once per thread (`cabi.thread_stack_limit`, cached
per thread in Python and, for the last thread that called, in the module).
Compiled code holds the GIL throughout, so no other thread enters the module
between one's `enter` and `leave`: one limit per module serves every thread. Where the
bounds are unknown the limit is 0, which no stack address is below: no guard.
"""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
from llvmlite import ir

from ....cabi import THREAD_LIMIT, thread_stack_limit_address
from ....ir.core import Module
from ..lltypes import I8, I64_T

LIMIT = "astjit.stack.limit"
CACHED_THREAD, CACHED_LIMIT = "astjit.stack.thread", "astjit.stack.thread_limit"


def cycle_callees(module: Module, names: list[str]) -> dict[str, set[str]]:
    """Graph name -> the callees whose calls must be guarded: those that reach back to it."""
    calls = {name: module.callees(module.graphs[name]) & set(names) for name in names}
    reach = {name: _reachable(calls, name) for name in names}
    return {name: {callee for callee in calls[name] if name in reach[callee] | {callee}}
            for name in names}


def _reachable(calls: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(calls[start])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(calls[name])
    return seen


def _global(module: ir.Module, name: str) -> ir.GlobalVariable:
    variable = module.globals.get(name)
    if variable is None:
        variable = ir.GlobalVariable(module, I64_T, name)
        variable.linkage = "internal"
        variable.initializer = ir.Constant(I64_T, 0)
    return variable


def is_guarded(module: ir.Module) -> bool:
    """Whether some function of `module` checks the stack (so its wrapper must set the limit)."""
    return module.globals.get(LIMIT) is not None


def too_deep(builder: ir.IRBuilder) -> ir.Value:
    """The i1 condition "the stack is past the module's limit", for a guarded invocation."""
    module = builder.module
    save = module.declare_intrinsic("llvm.stacksave", [], ir.FunctionType(I8.as_pointer(), []))
    address = builder.ptrtoint(builder.call(save, []), I64_T)
    return builder.icmp_unsigned("<", address, builder.load(_global(module, LIMIT)))


def enter(builder: ir.IRBuilder) -> ir.Value:
    """Set the limit for the calling thread (the wrapper, before calling the entry graph);
    return the previous limit, for `leave`."""
    module = builder.module
    thread = builder.call(_declare(module, "pthread_self"), [])
    cached_thread, cached_limit = _global(module, CACHED_THREAD), _global(module, CACHED_LIMIT)
    with builder.if_then(builder.icmp_unsigned("!=", thread, builder.load(cached_thread)),
                         likely=False):
        builder.store(builder.call(_declare(module, THREAD_LIMIT), []), cached_limit)
        builder.store(thread, cached_thread)
    limit = _global(module, LIMIT)
    previous = builder.load(limit)
    builder.store(builder.load(cached_limit), limit)
    return previous


def leave(builder: ir.IRBuilder, previous: ir.Value) -> None:
    """Restore the limit `enter` replaced (the wrapper, after the entry graph returned)."""
    builder.store(previous, _global(builder.module, LIMIT))


def _declare(module: ir.Module, name: str) -> ir.Function:
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, ir.FunctionType(I64_T, []), name)
        function.attributes.add("nounwind")
    register_functions()
    return function


def register_functions() -> None:
    """Give LLVM the addresses of `pthread_self` and of `thread_stack_limit` (once)."""
    if llvm.address_of_symbol(THREAD_LIMIT) is None:
        libc = ctypes.CDLL(None)
        llvm.add_symbol("pthread_self", ctypes.cast(libc.pthread_self, ctypes.c_void_p).value)
        llvm.add_symbol(THREAD_LIMIT, thread_stack_limit_address())
