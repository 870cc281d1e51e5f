"""The process's own state that compiled code reads, kept apart from LLVM.

Compiled code reads a few variables and calls one Python function of the process: the
main thread's id and the thread-local key of the thread state a call saved when it
released the GIL (runtime/gil.py, interrupts.py), and the calling thread's stack limit
(the recursion guard, runtime/stack.py). There is one of each per process, whoever links
the code: the engine (pyapi.py and stack.py register these addresses with LLVM) or the
disk cache's loader, which links cached object code without importing llvmlite
(astjit/cache/native.py). So they live here, made with `_ctypes` only (cabi.py).
"""
from __future__ import annotations

import functools
import os
import sys
import threading

from . import cabi

MAIN_THREAD = "astjit.main_thread"
"""An i64 holding the main thread's `pthread_self()`, the one thread that runs handlers."""
RELEASED_KEY = "astjit.released_key"
"""The `pthread_key_t` of the thread state a compiled call saved when it released the GIL
(runtime/gil.py): NULL while the call holds it."""
THREAD_LIMIT = "astjit_thread_stack_limit"
"""The C-callable `thread_stack_limit`, as compiled code calls it."""

KEY_TYPE = cabi.c_uint if sys.platform.startswith("linux") else cabi.c_ulong
"""`pthread_key_t`."""
_main_thread = cabi.c_uint64()
_released_key = KEY_TYPE()

HEADROOM = (128 << 10, 1 << 20)
"""The stack bytes kept free above the thread's lowest address: a quarter of the stack,
within these bounds. The guard fails that far before the stack would overflow; below
the last check, NumPy's allocations and BLAS calls need tens of KiB. A thread with
less stack than the lower bound raises at its first guarded call."""
MAX_STACK = 1 << 30
"""The most stack one thread is assumed to have (an unlimited RLIMIT_STACK reports the
whole gap below the stack, which later mappings may take)."""


def _note_main_thread() -> None:
    _main_thread.value = threading.main_thread().ident or 0


@functools.cache
def thread_state() -> dict[str, int]:
    """The addresses of `MAIN_THREAD` and `RELEASED_KEY`, the key made on first request (once
    per process; a forked child notes its own main thread)."""
    create = cabi.process_function("pthread_key_create", cabi.c_int, cabi.c_void_p,
                                   cabi.c_void_p)
    if create(cabi.addressof(_released_key), None) != 0:
        raise OSError("pthread_key_create failed: no thread-local key for compiled code")
    _note_main_thread()
    os.register_at_fork(after_in_child=_note_main_thread)
    return {MAIN_THREAD: cabi.addressof(_main_thread),
            RELEASED_KEY: cabi.addressof(_released_key)}


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
    pointer, size_t, c_int = cabi.c_void_p, cabi.c_size_t, cabi.c_int
    thread = cabi.process_function("pthread_self", pointer)()
    if sys.platform == "darwin":
        high = cabi.process_function("pthread_get_stackaddr_np", pointer, pointer)(thread)
        size = cabi.process_function("pthread_get_stacksize_np", size_t, pointer)(thread)
        return high - size, high
    attr = (cabi.c_uint64 * 32)()  # a pthread_attr_t (56 or 64 bytes)
    if cabi.process_function("pthread_getattr_np", c_int, pointer, pointer)(
            thread, cabi.addressof(attr)) != 0:
        return None
    try:
        address, size = pointer(), size_t()
        if cabi.process_function("pthread_attr_getstack", c_int, pointer, pointer, pointer)(
                cabi.addressof(attr), cabi.addressof(address), cabi.addressof(size)) != 0:
            return None
        return address.value, address.value + size.value
    finally:
        cabi.process_function("pthread_attr_destroy", c_int, pointer)(cabi.addressof(attr))


def thread_stack_limit_address() -> int:
    """The address of `THREAD_LIMIT`, the C function compiled code calls: `thread_stack_limit`
    as a C function, made on first request (once: code linked to it calls it for the
    process's life)."""
    with _thread_limit_lock:
        if not _thread_limit:
            _thread_limit.append(cabi.function(thread_stack_limit, cabi.c_uint64))
    return cabi.address_of(_thread_limit[0])


_thread_limit: list = []
_thread_limit_lock = threading.Lock()
