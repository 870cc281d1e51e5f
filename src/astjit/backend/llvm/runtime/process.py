"""The process's own state that compiled code reads, kept apart from LLVM.

Compiled code reads a few variables and calls one Python function of the process: the
main thread's id and the thread-local key of the thread state a call saved when it
released the GIL (runtime/gil.py, interrupts.py), and the calling thread's stack limit
(the recursion guard, runtime/stack.py). There is one of each per process, whoever links
the code: the engine (pyapi.py and stack.py register these addresses with LLVM) or the
disk cache's loader, which links cached object code without importing llvmlite
(astjit/cache/native.py). So they live here, made with ctypes only.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading

MAIN_THREAD = "astjit.main_thread"
"""An i64 holding the main thread's `pthread_self()`, the one thread that runs handlers."""
RELEASED_KEY = "astjit.released_key"
"""The `pthread_key_t` of the thread state a compiled call saved when it released the GIL
(runtime/gil.py): NULL while the call holds it."""
THREAD_LIMIT = "astjit_thread_stack_limit"
"""The C-callable `thread_stack_limit`, as compiled code calls it."""

KEY_TYPE = ctypes.c_uint if sys.platform.startswith("linux") else ctypes.c_ulong
"""`pthread_key_t`."""
_main_thread = ctypes.c_uint64()
_released_key = KEY_TYPE()

HEADROOM = (128 << 10, 1 << 20)
"""The stack bytes kept free above the thread's lowest address: a quarter of the stack,
within these bounds. The guard fails that far before the stack would overflow; below
the last check, NumPy's allocations and BLAS calls need tens of KiB. A thread with
less stack than the lower bound raises at its first guarded call."""
MAX_STACK = 1 << 30
"""The most stack one thread is assumed to have (an unlimited RLIMIT_STACK reports the
whole gap below the stack, which later mappings may take)."""


@functools.cache
def libc() -> ctypes.CDLL:
    """The process's own symbols (the C library, pthreads, the C API: `dlopen(NULL)`), errno
    kept: one handle for the runtime and the disk cache's loader (each CDLL makes a class
    of its own, a noticeable part of a warm load)."""
    return ctypes.CDLL(None, use_errno=True)


def _note_main_thread() -> None:
    _main_thread.value = threading.main_thread().ident or 0


@functools.cache
def thread_state() -> dict[str, int]:
    """The addresses of `MAIN_THREAD` and `RELEASED_KEY`, the key made on first request (once
    per process; a forked child notes its own main thread)."""
    if libc().pthread_key_create(ctypes.byref(_released_key), None) != 0:
        raise OSError("pthread_key_create failed: no thread-local key for compiled code")
    _note_main_thread()
    os.register_at_fork(after_in_child=_note_main_thread)
    return {MAIN_THREAD: ctypes.addressof(_main_thread),
            RELEASED_KEY: ctypes.addressof(_released_key)}


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
    c = libc()
    c.pthread_self.restype = ctypes.c_void_p
    thread = ctypes.c_void_p(c.pthread_self())
    if sys.platform == "darwin":
        c.pthread_get_stackaddr_np.restype = ctypes.c_void_p
        c.pthread_get_stacksize_np.restype = ctypes.c_size_t
        high = c.pthread_get_stackaddr_np(thread)
        return high - c.pthread_get_stacksize_np(thread), high
    attr = ctypes.create_string_buffer(256)  # a pthread_attr_t (56 or 64 bytes)
    if c.pthread_getattr_np(thread, attr) != 0:
        return None
    try:
        address, size = ctypes.c_void_p(), ctypes.c_size_t()
        if c.pthread_attr_getstack(attr, ctypes.byref(address), ctypes.byref(size)) != 0:
            return None
        return address.value, address.value + size.value
    finally:
        c.pthread_attr_destroy(attr)


_THREAD_LIMIT_C = ctypes.CFUNCTYPE(ctypes.c_uint64)(thread_stack_limit)
"""`thread_stack_limit` as a C function, kept alive for the process."""


def thread_stack_limit_address() -> int:
    """The address of `THREAD_LIMIT`, the C function compiled code calls."""
    return ctypes.cast(_THREAD_LIMIT_C, ctypes.c_void_p).value
