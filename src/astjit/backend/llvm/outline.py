"""Functions every LLVM module shares: the setup and teardown of array ops.

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
itself. `scalar_loops(builder, emit)` marks the loops `emit` makes not to be
vectorized or unrolled: for the rarely run general version of a kernel's nest,
which LLVM would otherwise optimize as hard as the fast one.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from llvmlite import ir


class _Runtime:
    """The process's shared functions: those compiled, and those waiting for the next compile."""

    def __init__(self) -> None:
        self.compiled: set[str] = set()
        self.pending: ir.Module | None = None
        self.modules: list = []
        """The compiled runtime modules (`jit.engine.CompiledModule`), for `runtime_llvm_ir`."""
        self.lock = threading.RLock()

    def pending_module(self) -> ir.Module:
        if self.pending is None:
            self.pending = ir.Module(name=f"astjit.runtime.{len(self.compiled)}")
        return self.pending


RUNTIME = _Runtime()


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
        if name not in RUNTIME.compiled:
            pending = RUNTIME.pending_module()
            if pending.globals.get(name) is None:
                _define(pending, name, fnty, emit, cold=cold, inline=False)
    declaration = ir.Function(module, fnty, name)
    declaration.attributes.add("nounwind")
    if cold:
        declaration.attributes.add("cold")
    return declaration


def _define(module: ir.Module, name: str, fnty: ir.FunctionType, emit: Callable[..., None], *,
            cold: bool, inline: bool) -> ir.Function:
    function = ir.Function(module, fnty, name)
    function.attributes.add("nounwind")
    if inline:
        function.linkage = "internal"
    else:
        function.attributes.add("noinline")
    if cold:
        function.attributes.add("cold")
    emit(function, ir.IRBuilder(function.append_basic_block("entry")), *function.args)
    return function


class _LoopID(ir.values.MDValue):
    """A loop's `llvm.loop` metadata: a distinct node whose first operand is itself (how
    LLVM tells one loop's node from another's), then the loop's properties."""

    def __init__(self, module: ir.Module, properties: list[ir.Value]) -> None:
        super().__init__(module, [], name=str(len(module.metadata)))
        self.operands = (self, *properties)

    def descr(self, buf: list[str]) -> None:
        buf.append("distinct ")
        super().descr(buf)

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def unit_or_strided(em, fast: ir.Value, nest: Callable[[bool], None]) -> None:
    """`nest(True)`, a nest's unit-stride version, where `fast` holds, else `nest(False)`,
    its general strided one with loops left scalar (`scalar_loops`); in a first tier
    the unit version alone (codegen.FunctionEmitter.fast_only)."""
    if em.fast_only(fast):
        nest(True)
        return
    b = em.builder
    with b.if_else(fast, likely=True) as (then, otherwise):
        with then:
            nest(True)
        with otherwise:
            scalar_loops(b, lambda: nest(False))


def scalar_loops(builder: ir.IRBuilder, emit: Callable[[], None]) -> None:
    """Run `emit()` at `builder`, then mark every loop it made (a block whose phi's last
    incoming block comes after it and branches back to it: `arrays.count_up`'s latch) not
    to be vectorized or unrolled.

    For a loop nest's general strided version: the unit-stride one is the fast path
    for contiguous data, and vectorizing the general one too (LLVM speculates its
    strides are 1, with run-time checks, scalar epilogues) about doubles what LLVM
    optimizes and turns into machine code for each nest, for the rare strided case.
    Not where the loops call a math function libmvec has (`vecmath.call_math`): the
    vector calls pay for the strided loads (docs/measurements.md).
    """
    function = builder.function
    known = {id(block) for block in function.blocks}
    emit()
    made = [block for block in function.blocks if id(block) not in known]
    if any(_vector_math(instruction) for block in made for instruction in block.instructions):
        return
    module = function.module
    properties = [module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"),
                                       ir.Constant(ir.IntType(1), 0)]),
                  _flag(module, "llvm.loop.unroll.disable")]
    order = {id(block): k for k, block in enumerate(function.blocks)}
    for block in made:
        if not block.instructions or not isinstance(block.instructions[0], ir.PhiInstr):
            continue
        latch = block.instructions[0].incomings[-1][1]
        branch = latch.terminator
        if order[id(latch)] >= order[id(block)] and isinstance(branch, ir.Branch) \
                and branch.operands[0] is block:
            branch.set_metadata("llvm.loop", _LoopID(module, properties))


def no_runtime_unroll(branch: ir.Instruction) -> None:
    """Mark the loop whose latch is `branch` not to be unrolled for an unknown trip count.

    For the loops of array code: the vectorizer interleaves the vector body
    itself, and runtime unrolling would only multiply the scalar loop that
    finishes the last few elements (eight copies and a prologue for a
    remainder of under a vector's length): a good part of what LLVM compiles for
    an elementwise kernel, for nothing (docs/measurements.md).
    """
    module = branch.function.module
    branch.set_metadata("llvm.loop", _LoopID(module, [
        _flag(module, "llvm.loop.unroll.runtime.disable")]))


def _flag(module: ir.Module, name: str) -> ir.Value:
    return module.add_metadata([ir.MetaDataString(module, name)])


def _vector_math(instruction: ir.Instruction) -> bool:
    """Whether `instruction` calls a math function the vectorizer may widen to libmvec."""
    return isinstance(instruction, ir.CallInstr) and any(
        "vector-function-abi-variant" in str(attribute) for attribute in instruction.attributes)
