"""The runtime of parallel loops: `parallel_for`, which runs a loop's chunks on a pool of
POSIX threads, and how many threads a parallel loop uses.

`parallel_for(chunk, context, lead, chunks, n)` splits the iterations [0, n) into `chunks`
ranges in order (`_bounds`) and runs each as `chunk(context, k, start, stop)`: chunk 0 on the
calling thread, the others taken one by one, in order, by whichever thread is free, the
pool's or the calling one (all on the calling thread where the pool has none), and returns
once all are done. The chunks come in groups of `lead` (one chunk per thread), each group
half of what the ones before left (the first half the loop, the next a quarter, ...), the
last all the rest: a thread whose chunks ran slower (costlier iterations, a thread woken
late or preempted by another process) takes fewer of the later, shorter ones, and the
threads end about one of the last chunks apart. It returns 0, or the status of the lowest
chunk that failed: that chunk runs again alone, on the calling thread, once the others are
done, so the error it reports (and the numbers it leaves in the module's `error_values`,
which chunks failing at once would race on) is the one a serial loop meets first. Which
thread runs a chunk does not matter: each chunk writes its own partial results.

The pool: threads started as calls first need them (up to `lead - 1`, `pthread_create`,
detached), then waiting on a condition variable between calls; the job, the next chunk and
the count of chunks not done live in globals guarded by one mutex (held only between
chunks, never while one runs). One call owns the pool at a time: a call that finds it busy
(another Python thread's, the GIL released) runs its chunks itself, in order. Where a
thread cannot be started, the threads there are take the chunks. A child made by
`os.fork` (multiprocessing) has none of the pool's threads: `reset` forgets the pool there
(`os.register_at_fork`); at exit `stop` ends the threads before the engine frees their
code. Workers run compiled code only: no Python object, no GIL, no signal check. The
functions live in the shared runtime module (shared.py); the pthread functions are libc's,
registered with LLVM by address as the engine registers malloc.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import os

from llvmlite import ir

from .. import nests
from ..lltypes import BYTES, I8, I32_T, I64_T, STATUS
from ..shared import shared_function

MAX_THREADS = 64
"""The most chunks (threads) one parallel loop is split into: its partial results live in
stack arrays of this length."""

THREADS_VARIABLE = "ASTJIT_NUM_THREADS"

CHUNK = ir.FunctionType(STATUS, [BYTES, I64_T, I64_T, I64_T])
"""A chunk function: (context, k, start, stop) -> status."""
_START = ir.FunctionType(BYTES, [BYTES])
_VOID = ir.FunctionType(ir.VoidType(), [])
_LIBC = {
    "pthread_create": ir.FunctionType(I32_T, [I64_T.as_pointer(), BYTES, _START.as_pointer(),
                                              BYTES]),
    "pthread_detach": ir.FunctionType(I32_T, [I64_T]),
    "pthread_mutex_lock": ir.FunctionType(I32_T, [BYTES]),
    "pthread_mutex_unlock": ir.FunctionType(I32_T, [BYTES]),
    "pthread_cond_wait": ir.FunctionType(I32_T, [BYTES, BYTES]),
    "pthread_cond_broadcast": ir.FunctionType(I32_T, [BYTES]),
}
"""The libc functions the pool calls (registered with LLVM by address)."""
RESET = "astjit.pool.reset"
"""The function that forgets the pool (in a forked child, which has none of its threads)."""
STOP = "astjit.pool.stop"
"""The function that ends the pool's threads (at exit, before the engine frees their code)."""
_SYNC_BYTES = 64
"""Room for a pthread_mutex_t or pthread_cond_t (40 and 48 bytes with glibc on x86-64);
all zeros is the initializer of both."""
_COUNTERS = ("busy", "active", "next", "lead", "chunks", "n", "remaining", "workers",
             "exhausted", "stopping")


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
def _register_libc() -> None:
    """Make the pool's libc functions resolvable in compiled code, and forget the pool in a
    child made by `os.fork` (multiprocessing's), whose only thread is the forking one."""
    import llvmlite.binding as llvm

    libc = ctypes.CDLL(None)
    for name in _LIBC:
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=functools.partial(_call_runtime, RESET))
    atexit.register(_call_runtime, STOP)


def _call_runtime(name: str) -> None:
    """Call the runtime's `void name()` if it has been compiled."""
    import llvmlite.binding as llvm

    address = llvm.address_of_symbol(name)
    if address:
        ctypes.CFUNCTYPE(None)(address)()


def declare_parallel_for(module: ir.Module) -> ir.Function:
    """`i32 astjit.parallel_for(chunk*, i8* context, i64 lead, i64 chunks, i64 n)` as `module`
    sees it."""
    _register_libc()
    fnty = ir.FunctionType(STATUS, [CHUNK.as_pointer(), BYTES, I64_T, I64_T, I64_T])
    return shared_function(module, "astjit.parallel_for", fnty, _emit_parallel_for)


class _Pool:
    """The pool's state, globals of the runtime module touched only under its mutex (the
    pthread calls order them; external linkage keeps LLVM from caching them across those
    calls): the job (chunk, context, lead, chunks, n), the next chunk to take, how many are not
    done, each one's status, whether a call owns the pool (busy), the workers started."""

    def __init__(self, b: ir.IRBuilder):
        self.b, module = b, b.module
        self.mutex, self.wake, self.done = (self._sync(module, name)
                                            for name in ("mutex", "wake", "done"))
        self.counters = {name: self._global(module, name, I64_T) for name in _COUNTERS}
        self.chunk = self._global(module, "chunk", CHUNK.as_pointer())
        self.context = self._global(module, "context", BYTES)
        self.statuses = self._global(module, "statuses", ir.ArrayType(STATUS, MAX_THREADS))
        self.libc = {name: _declare(module, name, fnty) for name, fnty in _LIBC.items()}

    @staticmethod
    def _global(module: ir.Module, name: str, ty: ir.Type) -> ir.GlobalVariable:
        variable = module.globals.get(f"astjit.pool.{name}")
        if variable is None:
            variable = ir.GlobalVariable(module, ty, f"astjit.pool.{name}")
            variable.initializer = ir.Constant(ty, None)
            variable.align = 64
        return variable

    def _sync(self, module: ir.Module, name: str) -> ir.Value:
        return self.b.bitcast(self._global(module, name, ir.ArrayType(I8, _SYNC_BYTES)), BYTES)

    def get(self, name: str) -> ir.Value:
        return self.b.load(self.counters[name])

    def set(self, name: str, value) -> None:
        self.b.store(value if isinstance(value, ir.Value) else ir.Constant(I64_T, value),
                     self.counters[name])

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        return self.b.call(self.libc[name], list(args))

    def status(self, k: ir.Value) -> ir.Value:
        return self.b.gep(self.statuses, [ir.Constant(I32_T, 0), k], inbounds=True)

    def bounds(self, k: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Chunk k's iterations in the job."""
        return _bounds(self.b, k, self.get("n"), self.get("lead"), self.get("chunks"))

    def run(self, k: ir.Value) -> None:
        """With the mutex held: run chunk k (the mutex released meanwhile), record its
        status, count it done (waking the caller after the last)."""
        b = self.b
        chunk, context = b.load(self.chunk), b.load(self.context)
        start, stop = self.bounds(k)
        self.call("pthread_mutex_unlock", self.mutex)
        status = b.call(chunk, [context, k, start, stop])
        self.call("pthread_mutex_lock", self.mutex)
        b.store(status, self.status(k))
        remaining = b.sub(self.get("remaining"), ir.Constant(I64_T, 1))
        self.set("remaining", remaining)
        with b.if_then(b.icmp_signed("==", remaining, ir.Constant(I64_T, 0))):
            self.call("pthread_cond_broadcast", self.done)

    def take(self) -> None:
        """With the mutex held: run the next chunk of the job."""
        k = self.get("next")
        self.set("next", self.b.add(k, ir.Constant(I64_T, 1)))
        self.run(k)

    def left(self) -> ir.Value:
        return self.b.icmp_signed("<", self.get("next"), self.get("chunks"))


def _bounds(b: ir.IRBuilder, k: ir.Value, n: ir.Value, lead: ir.Value, chunks: ir.Value
            ) -> tuple[ir.Value, ir.Value]:
    """Chunk k's iterations [start, stop), in order: the chunks in groups of `lead` (`chunks`
    a multiple of it), group g splitting equally (`_equal`) the iterations n - (n >> g) to
    n - (n >> (g + 1)), half of what the groups before it left; the last group splits all
    that is left. One group: n split equally."""
    one = ir.Constant(I64_T, 1)
    group, j = b.sdiv(k, lead), b.srem(k, lead)
    last = b.sub(b.sdiv(chunks, lead), one)
    first = b.sub(n, b.ashr(n, group))
    end = b.select(b.icmp_signed("<", group, last), b.sub(n, b.ashr(n, b.add(group, one))), n)
    start, stop = _equal(b, j, b.sub(end, first), lead)
    return b.add(start, first), b.add(stop, first)


def _equal(b: ir.IRBuilder, k: ir.Value, n: ir.Value, parts: ir.Value
           ) -> tuple[ir.Value, ir.Value]:
    """Part k of n split into `parts` in order, equal but for the first n % parts, one longer."""
    length, extra = b.sdiv(n, parts), b.srem(n, parts)
    longer = b.icmp_signed("<", k, extra)
    start = b.add(b.mul(k, length), b.select(longer, k, extra))
    return start, b.add(start, b.add(length, b.zext(longer, I64_T)))


def _while(b: ir.IRBuilder, cond, body, name: str) -> None:
    """while cond(): body(), at `b` (left in the exit block)."""
    head, inner, done = (b.append_basic_block(f"{name}.{part}")
                         for part in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond(), inner, done)
    b.position_at_end(inner)
    body()
    b.branch(head)
    b.position_at_end(done)


def _emit_worker(function: ir.Function, b: ir.IRBuilder, _: ir.Value) -> None:
    """`i8* worker(i8*)`: a pool thread, waiting for a job's chunks and running them, until
    the pool stops."""
    pool = _Pool(b)
    zero = ir.Constant(I64_T, 0)
    pool.call("pthread_mutex_lock", pool.mutex)

    def waiting() -> ir.Value:
        work = b.and_(b.icmp_signed("!=", pool.get("active"), zero),
                      b.icmp_signed("<", pool.get("next"), pool.get("chunks")))
        return b.not_(b.or_(work, b.icmp_signed("!=", pool.get("stopping"), zero)))
    forever = b.append_basic_block("forever")
    b.branch(forever)
    b.position_at_end(forever)
    _while(b, waiting, lambda: pool.call("pthread_cond_wait", pool.wake, pool.mutex), "wait")
    with b.if_then(b.icmp_signed("!=", pool.get("stopping"), zero), likely=False):
        pool.set("workers", b.sub(pool.get("workers"), ir.Constant(I64_T, 1)))
        pool.call("pthread_cond_broadcast", pool.done)
        pool.call("pthread_mutex_unlock", pool.mutex)
        b.ret(ir.Constant(BYTES, None))
    _while(b, pool.left, pool.take, "take")
    b.branch(forever)


def _emit_stop(function: ir.Function, b: ir.IRBuilder) -> None:
    """`void stop()`: every worker told to end, and waited for."""
    pool = _Pool(b)
    pool.call("pthread_mutex_lock", pool.mutex)
    pool.set("stopping", 1)
    pool.call("pthread_cond_broadcast", pool.wake)
    _while(b, lambda: b.icmp_signed(">", pool.get("workers"), ir.Constant(I64_T, 0)),
           lambda: pool.call("pthread_cond_wait", pool.done, pool.mutex), "stop")
    pool.call("pthread_mutex_unlock", pool.mutex)
    b.ret_void()


def _emit_reset(function: ir.Function, b: ir.IRBuilder) -> None:
    """`void reset()`: no pool (after a fork): mutexes and condition variables as new."""
    pool = _Pool(b)
    for variable in (*pool.counters.values(), *(pool._global(b.module, name, ir.ArrayType(
            I8, _SYNC_BYTES)) for name in ("mutex", "wake", "done"))):
        b.store(ir.Constant(variable.value_type, None), variable)
    b.ret_void()


def _emit_parallel_for(function: ir.Function, b: ir.IRBuilder, chunk, context, lead, chunks,
                       n) -> None:
    """Chunk 0.. on the pool and the calling thread; the lowest failing chunk run again."""
    module = function.module
    worker = shared_function(module, "astjit.pool.worker", _START, _emit_worker)
    shared_function(module, RESET, _VOID, _emit_reset)
    shared_function(module, STOP, _VOID, _emit_stop)
    zero, one = ir.Constant(I64_T, 0), ir.Constant(I64_T, 1)
    with b.if_then(b.icmp_signed("<=", chunks, one)):  # a short loop: no pool, no wake-up
        b.ret(b.call(chunk, [context, zero, zero, n]))
    pool = _Pool(b)
    pool.call("pthread_mutex_lock", pool.mutex)
    with b.if_then(b.icmp_signed("!=", pool.get("busy"), zero), likely=False):
        # The pool runs another call's loop (a call from another Python thread): these
        # chunks run here, in order, as they would serially.
        pool.call("pthread_mutex_unlock", pool.mutex)

        def alone(k: ir.Value) -> None:
            status = b.call(chunk, [context, k, *_bounds(b, k, n, lead, chunks)])
            with b.if_then(b.icmp_signed("!=", status, ir.Constant(STATUS, 0))):
                b.ret(status)
        nests.count_up(b, zero, chunks, alone, ("alone", "alone.body", "alone.done"))
        b.ret(ir.Constant(STATUS, 0))
    pool.set("busy", 1)

    thread = b.alloca(I64_T)

    def start_worker() -> None:
        failed = pool.call("pthread_create", thread, ir.Constant(BYTES, None), worker,
                           ir.Constant(BYTES, None))
        with b.if_else(b.icmp_signed("==", failed, ir.Constant(I32_T, 0))) as (started, not_):
            with started:
                pool.call("pthread_detach", b.load(thread))
                pool.set("workers", b.add(pool.get("workers"), one))
            with not_:  # no more threads: the ones there are take the chunks
                pool.set("exhausted", one)
    wanted = b.sub(lead, one)
    _while(b, lambda: b.and_(b.icmp_signed("<", pool.get("workers"), wanted),
                             b.icmp_signed("==", pool.get("exhausted"), zero)),
           start_worker, "start")
    b.store(chunk, pool.chunk)
    b.store(context, pool.context)
    for name, value in (("lead", lead), ("chunks", chunks), ("n", n), ("next", one),
                        ("remaining", chunks), ("active", one)):
        pool.set(name, value)
    pool.call("pthread_cond_broadcast", pool.wake)
    pool.run(zero)  # chunk 0 here; the others on whichever thread is free, this one too

    def finish() -> None:
        with b.if_else(pool.left()) as (here, wait):
            with here:
                pool.take()
            with wait:
                pool.call("pthread_cond_wait", pool.done, pool.mutex)
    _while(b, lambda: b.icmp_signed("!=", pool.get("remaining"), zero), finish, "finish")
    failing = b.alloca(I64_T)
    b.store(ir.Constant(I64_T, -1), failing)

    def first_failure(k: ir.Value) -> None:
        failed = b.icmp_signed("!=", b.load(pool.status(k)), ir.Constant(STATUS, 0))
        unseen = b.icmp_signed("<", b.load(failing), zero)
        with b.if_then(b.and_(failed, unseen), likely=False):
            b.store(k, failing)
    nests.count_up(b, zero, chunks, first_failure, ("check", "check.body", "check.done"))
    lowest = b.load(failing)
    start, stop = pool.bounds(lowest)
    pool.set("active", zero)
    pool.set("busy", zero)
    pool.call("pthread_mutex_unlock", pool.mutex)
    with b.if_then(b.icmp_signed(">=", lowest, zero), likely=False):
        b.ret(b.call(chunk, [context, lowest, start, stop]))  # alone now: its own error values
    b.ret(ir.Constant(STATUS, 0))


def _declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, fnty, name)
        function.attributes.add("nounwind")
    return function
