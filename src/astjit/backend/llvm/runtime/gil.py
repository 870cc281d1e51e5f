"""Compiled calls release the GIL where they run long, and take it back to touch Python.

When a call releases it (`release_here`): not at its start. Releasing and taking back the
GIL costs about as much as the whole call of a short function (docs/measurements.md), so a
call releases it where it is known to run long: at a loop's first signal check (after
`interrupts.FIRST_CHECK` units of work) or before a counted loop of more than
`interrupts.RELEASE_TRIP` iterations. The module's `astjit.release()` saves the thread
state (`PyEval_SaveThread`) into the thread's slot of `cabi.RELEASED_KEY`; the wrapper,
once the entry graph returns, takes the GIL back with it if it is there (`restore`): one
`pthread_getspecific` a call.

Where it takes it back (`guard_calls`): compiled code touches Python only through the
functions it calls: the C API (pyapi.py), NumPy's (numpy_api.py: every array it makes), a
type's `tp_alloc`, a callback's call, reference counts (`Py_IncRef` of a returned array).
Before each call of a function that may need the interpreter, `astjit.gil.acquire()` takes the
GIL back if the call released it, and pins it: the slot then holds `PINNED`, and the call
keeps the GIL to its end (releasing it again at the next check would make a loop that
allocates wait for the GIL at every allocation while another thread runs Python). The
functions that need no interpreter are read off their names (`needs_no_interpreter`): LLVM
intrinsics, libm, libmvec, the C allocator, BLAS, LAPACK, NumPy's sorts, the thread
functions of `pyapi.THREAD_FUNCTIONS`, and runtime functions (shared.py) whose own
references are such (`RUNTIME.references`, recorded when their bodies were emitted; one
that calls through a pointer, as a tape's `drop`, may call anything). Anything else, a call
through a pointer included, is guarded: a new way into Python is safe by default.

A module with a recursion guard never releases it (`releases`): the guard's stack limit is
one per module (runtime/stack.py), set by the wrapper of the thread that holds the GIL.
"""
from __future__ import annotations

import functools

from llvmlite import ir

from ....cabi import RELEASED_KEY
from ..jit.engine import LIBC_FUNCTIONS, libm_functions
from ..shared import RUNTIME, shared_function
from . import stack
from .pyapi import KEY, PYOBJ, THREAD_FUNCTIONS, VOID, declare

RELEASE, CHECK = "astjit.release", "astjit.signals"
"""The module's own functions: release the GIL, the loops' signal check."""
VOID_TYPE = ir.FunctionType(VOID, [])

SAFE_PREFIXES = ("llvm.", "astjit.blas.", "astjit.lapack.", "astjit.npysort.", "_ZGV",
                 "astjit.parallel_for", "astjit.run_task", "pthread_")
"""Names of functions that need no interpreter: intrinsics, BLAS, LAPACK, NumPy's sorts,
libmvec's vector variants, and parallel loops' runtime (runtime/threads.py), whose
workers run the module's chunk functions (and chunk 0 on the calling thread, its calls
guarded as every function's of the module)."""

PINNED = 1
"""The slot's value while a call that released the GIL holds it again, to its end."""


@functools.cache
def safe_names() -> frozenset[str]:
    libm = {v for name in libm_functions() for v in (name, name + "f")}
    return frozenset({*libm, *LIBC_FUNCTIONS, *THREAD_FUNCTIONS, RELEASE, CHECK})


def needs_no_interpreter(name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether calling function `name` (not of the module) needs no interpreter."""
    if name in safe_names() or name.startswith(SAFE_PREFIXES) or name in seen:
        return True
    refs = RUNTIME.references.get(name)
    return refs is not None and all(needs_no_interpreter(ref, seen | {name}) for ref in refs)


def releases(module: ir.Module) -> bool:
    """Whether calls of `module` may release the GIL: some code asks to (a loop's check, a
    long loop), and no recursion guard needs it."""
    return not stack.is_guarded(module) and any(
        module.globals.get(name) is not None for name in (RELEASE, CHECK))


def release_here(builder: ir.IRBuilder) -> None:
    """Release the GIL here, for the rest of the call, if the module may."""
    builder.call(_own(builder.module, RELEASE), [])


def define(module: ir.Module, released: bool, wrapper: ir.Function | None) -> None:
    """Give the module's `astjit.release` its body (nothing where it does not release), and
    where it does, guard its calls that may need the interpreter (all but `wrapper`'s; None:
    the module's entry is a table, its wrapper the runtime's, shared_entry.py)."""
    release = module.globals.get(RELEASE)
    if release is not None and release.is_declaration:
        builder = _body(release)
        if released:
            builder.call(shared_function(module, "astjit.gil.release", VOID_TYPE,
                                         lambda fn, b: (release_saving(b), b.ret_void())), [])
        builder.ret_void()
    if released:
        guard_calls(module, wrapper)


def guard_calls(module: ir.Module, wrapper: ir.Function | None) -> None:
    """`astjit.gil.acquire()` before each call that may need the interpreter, in every
    function of the module but the wrapper (which calls the entry graph holding the GIL,
    and takes it back right after). A call of the runtime's function, not code inlined in
    the module's loops, where LLVM 22's vectorizer failed an assertion on such code
    (`take_back`)."""
    acquire: ir.Function | None = None
    for function in list(module.functions):
        if function.is_declaration or function is wrapper or function.name in safe_names():
            continue
        for block in function.blocks:
            for instruction in list(block.instructions):
                if not isinstance(instruction, ir.CallInstr) or _safe_callee(instruction.callee):
                    continue
                acquire = acquire or shared_function(
                    module, "astjit.gil.acquire", VOID_TYPE,
                    lambda fn, b: (restore(b, pin=True), b.ret_void()))
                builder = ir.IRBuilder(block)
                builder.position_before(instruction)
                builder.call(acquire, [])


def _safe_callee(callee: ir.Value) -> bool:
    if not isinstance(callee, ir.Function):
        return False  # through a pointer
    return not callee.is_declaration or needs_no_interpreter(callee.name)


def saved_state(builder: ir.IRBuilder) -> ir.Value:
    """The thread's slot: the thread state the running call saved releasing the GIL, NULL
    while it holds the GIL and may release it, `PINNED` while it holds it to its end."""
    module = builder.module
    get = module.globals.get("pthread_getspecific") or _libc(
        module, ir.FunctionType(PYOBJ, [KEY]), "pthread_getspecific")
    return builder.call(get, [builder.load(_key(module))])


def save_state(builder: ir.IRBuilder, state: ir.Value) -> None:
    module = builder.module
    put = module.globals.get("pthread_setspecific") or _libc(
        module, ir.FunctionType(ir.IntType(32), [KEY, PYOBJ]), "pthread_setspecific")
    builder.call(put, [builder.load(_key(module)), state])


def release_saving(builder: ir.IRBuilder) -> None:
    """`PyEval_SaveThread()` into the thread's slot, where it is NULL (the call holds the GIL
    and has not pinned it)."""
    with builder.if_then(builder.icmp_unsigned("==", saved_state(builder), _slot(0))):
        save_state(builder, builder.call(declare(builder.module, "PyEval_SaveThread"), []))


def restore(builder: ir.IRBuilder, pin: bool = False) -> None:
    """Take the GIL back if the call released it; the slot becomes `PINNED` (`pin`, the call
    goes on) or NULL (the wrapper, once the entry graph returned)."""
    state = saved_state(builder)
    with builder.if_then(builder.icmp_unsigned("!=", state, _slot(0)), likely=False):
        save_state(builder, _slot(PINNED if pin else 0))
        released = builder.icmp_unsigned("!=", state, _slot(PINNED))
        with builder.if_then(released, likely=True):
            builder.call(declare(builder.module, "PyEval_RestoreThread"), [state])


def take_back(builder: ir.IRBuilder) -> None:
    """`restore`, for the wrapper once the entry graph returned: a call of the runtime's
    function, which keeps the check out of the code LLVM optimizes with the graph's loops
    (inlined there, it made LLVM 22's vectorizer fail an assertion on pi_sum's loop)."""
    builder.call(shared_function(builder.module, "astjit.gil.take_back", VOID_TYPE,
                                 lambda fn, b: (restore(b), b.ret_void())), [])


def is_released(builder: ir.IRBuilder, state: ir.Value) -> ir.Value:
    """Whether slot value `state` is a saved thread state (the call runs without the GIL)."""
    return builder.and_(builder.icmp_unsigned("!=", state, _slot(0)),
                        builder.icmp_unsigned("!=", state, _slot(PINNED)))


def _own(module: ir.Module, name: str) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, VOID_TYPE, name)


def _body(function: ir.Function) -> ir.IRBuilder:
    function.linkage = "internal"
    function.attributes.add("nounwind")
    return ir.IRBuilder(function.append_basic_block("entry"))


def _libc(module: ir.Module, fnty: ir.FunctionType, name: str) -> ir.Function:
    function = ir.Function(module, fnty, name)
    function.attributes.add("nounwind")
    return function


def _key(module: ir.Module) -> ir.GlobalVariable:
    return module.globals.get(RELEASED_KEY) or ir.GlobalVariable(module, KEY, RELEASED_KEY)


def _slot(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(64), value).inttoptr(PYOBJ)
