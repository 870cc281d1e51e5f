"""Removing the instructions nothing uses from an emitted function: `remove_unused`.

The glue of an array function is compiled without optimization (jit/engine.py): every
instruction left in it is printed, parsed, selected and run. Lowerings written for any
caller compute what some never read (an array struct built whole where only its data
pointer is read, a slice's bounds for a length folded to a constant: folding.py), so
what no instruction uses is taken out, and then what only those used.

Only instructions without effects go: arithmetic, comparisons, casts, selects, aggregate
and vector element operations, address computations, and the loads of an aggregate's
members the folding builder makes of a load of the whole (marked `unread_goes`: what it
reads, an argument or a stack slot, is there to read). Calls, other loads, stores, phis
and terminators stay, whether used or not.
"""
from __future__ import annotations

from collections import Counter

from llvmlite import ir

EFFECT_FREE = frozenset({ir.ICMPInstr, ir.FCMPInstr, ir.CastInstr, ir.SelectInstr, ir.GEPInstr,
                         ir.ExtractValue, ir.InsertValue, ir.ExtractElement, ir.InsertElement,
                         ir.ShuffleVector})
"""The instruction classes that only compute a value."""

ARITHMETIC = frozenset({"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr",
                        "ashr", "and", "or", "xor", "fadd", "fsub", "fmul", "fdiv", "frem",
                        "fneg"})
"""The opcodes of the plain `ir.Instruction`s that only compute a value."""


def _effect_free(instruction: ir.Instruction) -> bool:
    kind = type(instruction)
    return kind in EFFECT_FREE or (kind is ir.Instruction and instruction.opname in ARITHMETIC) \
        or getattr(instruction, "unread_goes", False)


def remove_unused(function: ir.Function) -> None:
    """Take out of `function` every effect-free instruction whose value no instruction
    uses, until none is left."""
    instructions = [i for block in function.blocks for i in block.instructions]
    uses = Counter(id(operand) for i in instructions for operand in i.operands)
    uses.update(id(value) for i in instructions if type(i) is ir.PhiInstr
                for value, _ in i.incomings)
    unused = [i for i in instructions if id(i) not in uses and _effect_free(i)]
    if not unused:
        return
    removed: set[int] = set()
    while unused:
        instruction = unused.pop()
        removed.add(id(instruction))
        for operand in instruction.operands:
            uses[id(operand)] -= 1
            if not uses[id(operand)] and _effect_free(operand):
                unused.append(operand)
    for block in function.blocks:
        block.instructions = [i for i in block.instructions if id(i) not in removed]
