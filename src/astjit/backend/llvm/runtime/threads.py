"""The runtime of parallel loops: `parallel_for`, which runs a loop's chunks on POSIX threads,
and how many threads a parallel loop uses.

`parallel_for(chunk, context, chunks, n)` splits the iterations [0, n) into `chunks` ranges
in order, of equal length but for the first `n % chunks`, one longer; runs chunk 0 on the
calling thread and each other one on a thread of its own (`pthread_create`, all joined
before it returns; a chunk whose thread cannot be started runs on the calling thread), each
as `chunk(context, k, start, stop)`. It returns 0, or the status of the lowest chunk that
failed: that chunk runs again alone, on the calling thread, once the others are done, so the
error it reports (and the numbers it leaves in the module's `error_values`, which chunks
failing at once would race on) is the one a serial loop meets first.

Threads are started per call, not kept in a pool: nothing outlives a call, so a `fork`ed
child (multiprocessing) inherits no pool half-owned by threads it does not have. Starting
one costs tens of microseconds, which `MIN_CHUNK_WORK` (outline.py) keeps small against a
chunk's work. The functions live in the shared runtime module (shared.py); `pthread_create`
and `pthread_join` are libc's, registered with LLVM by address as the engine registers
malloc. Workers run compiled code only: no Python object, no GIL, no signal check.
"""
from __future__ import annotations

import ctypes
import functools
import os

from llvmlite import ir

from .. import nests
from ..lltypes import BYTES, I1, I32_T, I64_T, STATUS
from ..shared import shared_function

MAX_THREADS = 64
"""The most chunks (threads) one parallel loop is split into: its partial results live in
stack arrays of this length."""

THREADS_VARIABLE = "ASTJIT_NUM_THREADS"

CHUNK = ir.FunctionType(STATUS, [BYTES, I64_T, I64_T, I64_T])
"""A chunk function: (context, k, start, stop) -> status."""
_TASK = ir.LiteralStructType([CHUNK.as_pointer(), BYTES, I64_T, I64_T, I64_T, STATUS, I64_T, I1])
"""{chunk, context, k, start, stop, status, pthread_t, started} of one chunk."""
_START = ir.FunctionType(BYTES, [BYTES])
_PTHREAD_CREATE = ir.FunctionType(I32_T, [I64_T.as_pointer(), BYTES, _START.as_pointer(), BYTES])
_PTHREAD_JOIN = ir.FunctionType(I32_T, [I64_T, BYTES.as_pointer()])


def thread_count() -> int:
    """The threads a parallel loop compiled now uses: `ASTJIT_NUM_THREADS` if set, else the
    CPUs this process may run on; at most `MAX_THREADS`."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if text:
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            raise ValueError(f"{THREADS_VARIABLE} must be a positive integer, got {text!r}")
    else:
        count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
    return min(count, MAX_THREADS)


@functools.cache
def _register_pthreads() -> None:
    """Make libc's `pthread_create` and `pthread_join` resolvable in compiled code."""
    import llvmlite.binding as llvm

    libc = ctypes.CDLL(None)
    for name in ("pthread_create", "pthread_join"):
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)


def declare_parallel_for(module: ir.Module) -> ir.Function:
    """`i32 astjit.parallel_for(chunk*, i8* context, i64 chunks, i64 n)` as `module` sees it."""
    _register_pthreads()
    fnty = ir.FunctionType(STATUS, [CHUNK.as_pointer(), BYTES, I64_T, I64_T])
    return shared_function(module, "astjit.parallel_for", fnty, _emit_parallel_for)


def _field(b: ir.IRBuilder, task: ir.Value, index: int) -> ir.Value:
    return b.gep(task, [ir.Constant(I32_T, 0), ir.Constant(I32_T, index)], inbounds=True)


def _emit_run_task(function: ir.Function, b: ir.IRBuilder, raw: ir.Value) -> None:
    """`i8* run_task(i8* task)`: the thread's start routine, one chunk."""
    task = b.bitcast(raw, _TASK.as_pointer())
    chunk, context, k, start, stop = (b.load(_field(b, task, i)) for i in range(5))
    b.store(b.call(chunk, [context, k, start, stop]), _field(b, task, 5))
    b.ret(ir.Constant(BYTES, None))


def _emit_parallel_for(function: ir.Function, b: ir.IRBuilder, chunk, context, chunks, n) -> None:
    module = function.module
    run_task = shared_function(module, "astjit.run_task", _START, _emit_run_task)
    create = _libc(module, "pthread_create", _PTHREAD_CREATE)
    join = _libc(module, "pthread_join", _PTHREAD_JOIN)
    tasks = b.alloca(_TASK, ir.Constant(I64_T, MAX_THREADS))
    zero, one = ir.Constant(I64_T, 0), ir.Constant(I64_T, 1)
    length, extra = b.sdiv(n, chunks), b.srem(n, chunks)

    def bounds(k: ir.Value) -> tuple[ir.Value, ir.Value]:
        longer = b.icmp_signed("<", k, extra)
        start = b.add(b.mul(k, length), b.select(longer, k, extra))
        return start, b.add(start, b.add(length, b.zext(longer, I64_T)))

    def fill(k: ir.Value) -> None:
        task = b.gep(tasks, [k])
        start, stop = bounds(k)
        for index, value in enumerate((chunk, context, k, start, stop, ir.Constant(STATUS, 0))):
            b.store(value, _field(b, task, index))
        b.store(ir.Constant(I1, 0), _field(b, task, 7))

    def spawn(k: ir.Value) -> None:
        task = b.gep(tasks, [k])
        raw = b.bitcast(task, BYTES)
        failed = b.call(create, [_field(b, task, 6), ir.Constant(BYTES, None), run_task, raw])
        started = b.icmp_signed("==", failed, ir.Constant(I32_T, 0))
        b.store(started, _field(b, task, 7))
        with b.if_then(b.not_(started), likely=False):
            b.call(run_task, [raw])

    def wait(k: ir.Value) -> None:
        task = b.gep(tasks, [k])
        with b.if_then(b.load(_field(b, task, 7))):
            b.call(join, [b.load(_field(b, task, 6)), ir.Constant(BYTES.as_pointer(), None)])

    nests.count_up(b, zero, chunks, fill, ("fill", "fill.body", "fill.done"))
    nests.count_up(b, one, chunks, spawn, ("spawn", "spawn.body", "spawn.done"))
    b.call(run_task, [b.bitcast(tasks, BYTES)])
    nests.count_up(b, one, chunks, wait, ("join", "join.body", "join.done"))

    def first_failure(k: ir.Value) -> None:
        task = b.gep(tasks, [k])
        with b.if_then(b.icmp_signed("!=", b.load(_field(b, task, 5)), ir.Constant(STATUS, 0)),
                       likely=False):
            start, stop = bounds(k)
            b.ret(b.call(chunk, [context, k, start, stop]))  # alone now: its own error values
    nests.count_up(b, zero, chunks, first_failure, ("check", "check.body", "check.done"))
    b.ret(ir.Constant(STATUS, 0))


def _libc(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, fnty, name)
        function.attributes.add("nounwind")
    return function
