"""Functions shared by every site of an LLVM module: the setup and teardown of array ops.

Each array op needs some code around its loops: NumPy's dimension checks and
the allocation call with its error path, the owned list's push and release,
a strided copy. Emitted inline at every site, that code is most of what
LLVM has to optimize and turn into machine code for array programs (an MLP
training step has dozens of allocations), while it runs once per array, not
once per element. So it is emitted once per module, as an internal function
that LLVM must not inline (`noinline`; `cold` for what only error exits
call), and each site calls it. Hot loops stay where they are: a kernel's loop
nest is emitted in its function; only a helper's own loop (a fill, a copy)
lives in the helper, where the vectorizer optimizes it once.

`shared_function(module, name, fnty, emit)` returns the function `name` of
`module`, emitting its body with `emit(function, builder, *args)` the first
time it is asked for.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir


def shared_function(module: ir.Module, name: str, fnty: ir.FunctionType,
                    emit: Callable[..., None], *, cold: bool = False,
                    inline: bool = False) -> ir.Function:
    """The internal function `name` of `module`, made on first use: never inlined, unless
    `inline` leaves that to LLVM."""
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, fnty, name)
        function.linkage = "internal"
        function.attributes.add("nounwind")
        if not inline:
            function.attributes.add("noinline")
        if cold:
            function.attributes.add("cold")
        emit(function, ir.IRBuilder(function.append_basic_block("entry")), *function.args)
    return function
