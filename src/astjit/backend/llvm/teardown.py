"""Taking an emitted llvmlite module apart once its text is made.

An llvmlite module is built of reference cycles (an instruction and its block, a block
and its function, a function and the module, a loop's phi and the value its back edge
brings, a loop's metadata and itself), which left all its objects to the young
collection run once a compile lets the collector go (api._Compiling). Without the
cycles, reference counting frees them as they go. Both kinds of emitted module go this
way: a kernel's (`codegen.LoweredModule.release`) and the runtime's pending one
(`jit.engine.compile_runtime`).
"""
from __future__ import annotations

from llvmlite import ir


def take_apart(module: ir.Module) -> None:
    """Leave `module`, its functions and their blocks empty, so that nothing of it is left
    in a cycle. Its text must have been made first: nothing of it can be printed after."""
    for value in module.globals.values():
        for block in getattr(value, "blocks", ()):
            for instruction in block.instructions:
                if not isinstance(instruction, ir.PhiInstr):
                    break  # a block's phis come first
                instruction.incomings.clear()
            if block.terminator is not None:
                block.terminator.metadata.clear()  # a loop's `llvm.loop`: a cycle
            block.__dict__.clear()
        value.__dict__.clear()
    for node in module.metadata:
        node.__dict__.clear()
    module.__dict__.clear()
