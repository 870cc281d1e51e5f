"""The `llvm.loop` metadata of astjit's loops: which loops LLVM may vectorize, interleave
or unroll.

`scalar_loops(builder, emit)` marks the loops `emit` makes not to be
vectorized or unrolled: for the rarely run general version of a kernel's nest,
which LLVM would otherwise optimize as hard as the fast one.
`unit_or_strided` emits a nest's unit-stride version and, where the strides are not
all 1, its general one with scalar loops. `no_runtime_unroll(branch)` keeps LLVM from
unrolling an array loop for an unknown trip count. `one_vector_per_step(branch)`, for a
told float loop of scalar code, from interleaving its vectors.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir


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


_PREDICATE = "llvm.loop.vectorize.predicate.enable"
"""The property of a loop to run as masked vector steps (`no_runtime_unroll`'s `fold_tail`)."""

_MULTIPLE = "astjit.loop.trip.multiple"
"""astjit's own property of a loop whose trip count is a multiple of its number (LLVM
ignores the properties it does not know)."""


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
    incoming block comes after it and branches back to it: `nests.count_up`'s latch) not
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
    mark_done([latch for _, latch in loops_made(function, made)])


def loops_made(function: ir.Function, made: list[ir.Block]) -> list[tuple[ir.Block, ir.Block]]:
    """(header, latch) of each loop among the blocks `made` of `function`: a block whose
    first phi's last incoming block comes after it and branches back to it (`nests.count_up`
    emits every loop so)."""
    order = {id(block): k for k, block in enumerate(function.blocks)}
    loops = []
    for block in made:
        if not block.instructions or not isinstance(block.instructions[0], ir.PhiInstr):
            continue
        latch = block.instructions[0].incomings[-1][1]
        branch = latch.terminator
        if order[id(latch)] >= order[id(block)] and isinstance(branch, ir.Branch) \
                and branch.operands[0] is block:
            loops.append((block, latch))
    return loops


DONE = "llvm.loop.vectorize.enable"
"""The property (false) of a loop LLVM must not vectorize: `mark_done`'s."""


def mark_done(latches: list[ir.Block]) -> None:
    """Mark the loops closed by `latches` not to be vectorized or unrolled: scalar loops on
    purpose (`scalar_loops`), or loops astjit widened itself (widen.py). A loops module whose
    every loop is so marked needs none of LLVM's optimizer (jit/split.py: `marks_done`)."""
    if not latches:
        return
    module = latches[0].function.module
    properties = [module.add_metadata([ir.MetaDataString(module, DONE),
                                       ir.Constant(ir.IntType(1), 0)]),
                  _flag(module, "llvm.loop.unroll.disable")]
    for latch in latches:
        latch.terminator.set_metadata("llvm.loop", _LoopID(module, properties))


def no_runtime_unroll(branch: ir.Instruction, fold_tail: bool = False,
                      multiple: int | None = None) -> None:
    """Mark the loop whose latch is `branch` not to be unrolled for an unknown trip count,
    and its vector body not to be interleaved (one vector per step); `fold_tail`: to run
    as masked vector steps, with no scalar loop after them (`nests.count_up`'s tail of a
    loop calling vector math); `multiple`: its trip count is a multiple of that (the loop
    before such a tail), so astjit's own vector loop needs no scalar step (widen.py).

    For the loops of array code: runtime unrolling would only multiply the scalar loop
    that finishes the last few elements (eight copies and a prologue for a remainder of
    under a vector's length): a good part of what LLVM compiles for an elementwise
    kernel, for nothing; interleaving made LLVM compile more for loops that ran no faster
    (docs/measurements.md, engine.LOOP_OPTIONS).
    """
    module = branch.function.module
    properties = [_flag(module, "llvm.loop.unroll.runtime.disable"), _interleave_once(module)]
    if fold_tail:
        properties.append(module.add_metadata([
            ir.MetaDataString(module, _PREDICATE),
            ir.Constant(ir.IntType(1), 1)]))
    if multiple is not None:
        properties.append(module.add_metadata([ir.MetaDataString(module, _MULTIPLE),
                                               ir.Constant(ir.IntType(32), multiple)]))
    branch.set_metadata("llvm.loop", _LoopID(module, properties))


def trip_multiple(branch: ir.Instruction) -> int | None:
    """The number the trip count of the loop whose latch is `branch` is a multiple of
    (`no_runtime_unroll`'s `multiple`), or None."""
    found = _property(branch, _MULTIPLE)
    return None if found is None else found.operands[1].constant


def folds_tail(branch: ir.Instruction) -> bool:
    """Whether the loop whose latch is `branch` was marked to run as masked vector steps
    (`no_runtime_unroll(..., fold_tail=True)`)."""
    return _property(branch, _PREDICATE) is not None


def _property(branch: ir.Instruction, name: str) -> ir.values.MDValue | None:
    """The property `name` of the `llvm.loop` metadata of the loop whose latch is `branch`."""
    node = branch.metadata.get("llvm.loop")
    for p in () if node is None else node.operands[1:]:
        if isinstance(p, ir.values.MDValue) and p.operands \
                and isinstance(p.operands[0], ir.MetaDataString) and p.operands[0].string == name:
            return p
    return None


def innermost_with_vector_math(branch: ir.Instruction) -> bool:
    """Whether the loop whose latch `branch` is being emitted (not yet marked) calls vector
    math and holds no marked loop: its blocks are its header (`branch`'s target) and every
    block appended after it (an array loop's blocks are appended in order, its exit among
    them, still empty), and a loop inside it was marked when its own latch was emitted."""
    blocks = branch.function.blocks
    head = next(k for k, block in enumerate(blocks) if block is branch.operands[0])
    instructions = [i for block in blocks[head:] for i in block.instructions]
    return (any(_vector_math(i) for i in instructions)
            and not any("llvm.loop" in i.metadata for i in instructions if i is not branch))


def one_vector_per_step(branch: ir.Instruction) -> None:
    """Mark the loop whose latch is `branch` not to be interleaved (one vector per step).

    For the chunks of a counted loop of scalar code told its counter's range
    (`LongTrip.assume_small`) carrying a float: LLVM vectorizes its sum or product in
    order (engine.OPTIONS' `force-ordered-reductions`), one chain of additions through
    every lane, which interleaving (four vectors per step, LLVM's choice for pi_sum) only
    lengthens: it ran no faster, and LLVM compiled more (docs/measurements.md). Not the
    untold versions: there the counter's conversions and products are 64-bit ones, and
    pi_sum's ran about 5x slower at one vector per step. A loop carrying ints alone keeps
    LLVM's choice (its sums reassociate: four accumulators), and so does array code, whose
    loops module loses loop strength reduction where every loop carries metadata
    (`split.marked_loops_only`).
    """
    module = branch.function.module
    branch.set_metadata("llvm.loop", _LoopID(module, [_interleave_once(module)]))


def _interleave_once(module: ir.Module) -> ir.Value:
    return module.add_metadata([ir.MetaDataString(module, "llvm.loop.interleave.count"),
                                ir.Constant(ir.IntType(32), 1)])


def _flag(module: ir.Module, name: str) -> ir.Value:
    return module.add_metadata([ir.MetaDataString(module, name)])


def _vector_math(instruction: ir.Instruction) -> bool:
    """Whether `instruction` calls a math function the vectorizer may widen to libmvec."""
    return isinstance(instruction, ir.CallInstr) and any(
        "vector-function-abi-variant" in str(attribute) for attribute in instruction.attributes)
