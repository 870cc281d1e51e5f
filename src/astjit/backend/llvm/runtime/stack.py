"""The recursion guard: compiled recursion too deep for the stack raises RecursionError.

A call that can close a call-graph cycle (its callee reaches its caller: the
pairs `cycle_callees` finds) first compares the stack address with the
module's limit, `astjit.stack.limit`; below it, the call fails with
RecursionError at its source line, and the status unwinds like any error's
(tapes freed, owned arrays released). That is one load, one compare and one
unlikely branch per such call; calls off every cycle, and modules without
one, have no check.

The wrapper of a module with a guarded call sets the limit around its call of
the entry graph (`enter` / `leave`, which restore the previous limit): the
lowest address of the calling thread's stack plus `HEADROOM` (for one more
frame and what compiled code calls unchecked: NumPy, BLAS, libm). The bounds
come from the thread library, once per thread (`thread_stack_limit`, cached
per thread in Python and, for the last thread that called, in the module).
Compiled code holds the GIL throughout, so no other thread enters the module
between one's `enter` and `leave`: one limit per module serves every thread. Where the
bounds are unknown the limit is 0, which no stack address is below: no guard.
"""
from __future__ import annotations

import ctypes
import sys
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from ....ir.core import Module
from ..lltypes import I8, I64_T

HEADROOM = (128 << 10, 1 << 20)
"""The stack bytes kept free above the thread's lowest address: a quarter of the stack,
within these bounds. The guard fails that far before the stack would overflow; below
the last check, NumPy's allocations and BLAS calls need tens of KiB. A thread with
less stack than the lower bound raises at its first guarded call."""
MAX_STACK = 1 << 30
"""The most stack one thread is assumed to have (an unlimited RLIMIT_STACK reports the
whole gap below the stack, which later mappings may take)."""

LIMIT = "astjit.stack.limit"
CACHED_THREAD, CACHED_LIMIT = "astjit.stack.thread", "astjit.stack.thread_limit"
THREAD_LIMIT = "astjit_thread_stack_limit"
"""The C-callable `thread_stack_limit`, as compiled code calls it."""


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
    """Whether some call in `module` checks the stack (so its wrapper must set the limit)."""
    return module.globals.get(LIMIT) is not None


def too_deep(builder: ir.IRBuilder) -> ir.Value:
    """The i1 condition "the stack is past the module's limit", for a guarded call."""
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


# ---- the calling thread's stack, in Python -----------------------------------------------

_thread = threading.local()


def thread_stack_limit() -> int:
    """The lowest stack address compiled code may use in the calling thread (0: unknown)."""
    limit = getattr(_thread, "limit", None)
    if limit is None:
        try:
            bounds = thread_stack_bounds()
        except (OSError, AttributeError, TypeError):
            bounds = None
        limit = 0
        if bounds is not None:
            low, high = bounds
            low = max(low, high - MAX_STACK)
            limit = low + min(max(HEADROOM[0], (high - low) // 4), HEADROOM[1])
        _thread.limit = limit
    return limit


def thread_stack_bounds() -> tuple[int, int] | None:
    """The calling thread's stack as (lowest address, highest address), from the thread
    library: glibc's and musl's `pthread_getattr_np`, macOS's `pthread_get_stack*_np`."""
    libc = ctypes.CDLL(None)
    libc.pthread_self.restype = ctypes.c_void_p
    thread = ctypes.c_void_p(libc.pthread_self())
    if sys.platform == "darwin":
        libc.pthread_get_stackaddr_np.restype = ctypes.c_void_p
        libc.pthread_get_stacksize_np.restype = ctypes.c_size_t
        high = libc.pthread_get_stackaddr_np(thread)
        return high - libc.pthread_get_stacksize_np(thread), high
    attr = ctypes.create_string_buffer(256)  # a pthread_attr_t (56 or 64 bytes)
    if libc.pthread_getattr_np(thread, attr) != 0:
        return None
    try:
        address, size = ctypes.c_void_p(), ctypes.c_size_t()
        if libc.pthread_attr_getstack(attr, ctypes.byref(address), ctypes.byref(size)) != 0:
            return None
        return address.value, address.value + size.value
    finally:
        libc.pthread_attr_destroy(attr)


_THREAD_LIMIT_C = ctypes.CFUNCTYPE(ctypes.c_uint64)(thread_stack_limit)
"""`thread_stack_limit` as a C function, kept alive for the process."""


def register_functions() -> None:
    """Give LLVM the addresses of `pthread_self` and of `thread_stack_limit` (once)."""
    if llvm.address_of_symbol(THREAD_LIMIT) is None:
        libc = ctypes.CDLL(None)
        llvm.add_symbol("pthread_self", ctypes.cast(libc.pthread_self, ctypes.c_void_p).value)
        llvm.add_symbol(THREAD_LIMIT, ctypes.cast(_THREAD_LIMIT_C, ctypes.c_void_p).value)
