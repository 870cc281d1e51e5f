"""`build_entry`: a typed Module to a CPython builtin function running native code.

The pipeline: `codegen.emit_module` (graphs -> LLVM IR: the first tier, or
the general one), `wrapper.emit_wrapper` (the METH_FASTCALL entry, in the same
LLVM module; for an array kernel of a plain signature, `shared_entry.define_table`
instead: a table the runtime's wrapper of its signature reads), `engine().compile_ir`
(LLVM's pipelines and machine code, in two
parts: array code's loops apart from the rest (`is_array_module`), scalar code's
wrapper apart from the kernel), then `cabi.make_builtin`: a builtin
whose `__self__` (`EntryPins`) keeps the fallback, the error handler (an
`ErrorReporter` where some error site reports numbers), the general-tier
callable and the compiled code alive exactly as long as the builtin.

A returned array (or a tuple holding some) is an owned reference the wrapper
hands to the caller: the ndarray compiled code made or retained, or a new
view of it (see `wrapper`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ....cabi import EntryPins, ErrorReporter, make_builtin

if TYPE_CHECKING:  # the code generator and LLVM are imported by `build_entry`: a process
    # loading cached code (astjit/cache) makes builtins with astjit/cabi.py and needs neither
    from llvmlite import ir

    from ....ir.core import Module
    from ..codegen import ErrorSite, LoweredModule
    from ..jit.engine import CompiledModule
    from .trees import TreeBoundary


@dataclass
class CompiledEntry:
    """A compiled specialization: the builtin to call and every text stage behind it."""

    call: Callable
    """The builtin function: call it like the Python function, positionally."""
    llvm_ir: str
    """LLVM IR as emitted (graphs and wrapper), before optimization."""
    errors: list[ErrorSite]
    """The error sites: status k reports `errors[k - 1]` = (exc, message, loc)."""
    compiled: CompiledModule
    error_details: dict[int, str] = field(default_factory=dict)
    """Status -> `str.format` template of the fuller message of the sites that report
    numbers (`ErrorReporter` fills it in); most sites have none."""
    general: bool = True
    """Whether this is the general tier (every version of every nest), not the first."""
    trees: Callable | None = None
    """For a signature taking containers (`TreeBoundary.arguments`): the builtin taking the
    containers themselves (`call` takes their leaves)."""
    entry_symbol: str = ""
    """What `call` was made of (`cabi.make_builtin`): the wrapper's name, or the table's."""
    table: bool = False
    """Whether `entry_symbol` is a table whose wrapper the runtime shares (shared_entry.py)."""

    @property
    def llvm_ir_optimized(self) -> str:
        return self.compiled.llvm_ir_optimized

    @property
    def asm(self) -> str:
        return self.compiled.asm


def build_entry(module: Module, fallback: Callable, error_handler: Callable,
                general: Callable | None = None,
                trees: TreeBoundary | None = None) -> CompiledEntry:
    """Compile a typed Module's entry graph into a builtin with CPython's fast calling convention.

    Calls the builtin does not take exactly (other types, keywords, ...) go to
    `fallback(*args, **kwargs)`; a compiled error calls `error_handler(status)`,
    which should raise the exception of `errors[status - 1]`.

    With `general`, the first tier when the function writes into none of its
    arguments and calls no Python: array nests in their fast versions only, and a call one does not
    fit goes, untouched, to `general(*args)`, which should run it on the general
    tier (`emitter.FunctionEmitter.fast_only`). Without, the general tier.
    """
    from ....cache import symbols
    from ....ir.analysis import calls_python, written_parameters
    from ..codegen import emit_module
    from ..jit.engine import engine
    from ..shared import found_imports
    from . import pyapi
    from .shared_entry import define_table, shares_wrapper
    from .wrapper import emit_wrapper

    first_tier = general is not None and not written_parameters(module) \
        and not calls_python(module)  # a call that left part-way would run its callbacks twice
    lowered = emit_module(module, general=not first_tier)
    if lowered.error_table.deoptimize is None:
        first_tier, general = False, None  # nothing to leave out: this is the general tier
    if lowered.error_details:
        error_handler = ErrorReporter(error_handler, lowered.errors, lowered.error_details)
    if trees is not None and trees.arguments is not None:
        trees.pins = EntryPins(None, trees.fallback, error_handler, trees.general, trees)
    arrays = is_array_module(lowered)
    table = arrays and shares_wrapper(lowered, trees)
    if table:
        wrapper_name = define_table(lowered, general if first_tier else None)
    else:
        wrapper_name = emit_wrapper(lowered, fallback, error_handler,
                                    general if first_tier else None, trees)
    apart = not arrays and loops_without_calls(module)
    if not apart:  # the wrapper is the only way in: O3 inlines the graph there, drops the copy
        lowered.entry_function.linkage = "internal"
    whole = "recursive" if not arrays and recursion_without_loops(lowered) else "scalar"
    if whole == "recursive":  # run once per call from Python: not worth LLVM's time
        for attribute in ("optnone", "noinline"):
            lowered.module.get_global(wrapper_name).attributes.add(attribute)
    llvm_ir = lowered.text
    lowered.release()
    pyapi.register_functions()
    symbols.provide(found_imports())  # the runtime cache's batches, linked by compile_ir
    compiled = engine().compile_ir(llvm_ir, arrays=arrays, whole=whole,
                                   wrapper=wrapper_name if apart else None)
    call = make_builtin(compiled, wrapper_name, module.entry,
                        EntryPins(None, fallback, error_handler, general, trees), table)
    taking = None
    if trees is not None and trees.pins is not None:
        taking = make_builtin(compiled, wrapper_name, module.entry, trees.pins)
    return CompiledEntry(call, llvm_ir, lowered.errors, compiled, lowered.error_details,
                         not first_tier, taking, wrapper_name, table)


def loops_without_calls(module: Module) -> bool:
    """Whether scalar code loops and calls no function: its wrapper then compiles apart
    from it (`Engine.compile_ir`, which needs the entry external), which saves most of
    what O3 spent on the wrapper inlined into it. Straight-line code compiles whole: O3
    takes little time on it, and a call of it is mostly the call path, which the
    wrapper's own call of the kernel (and code left unoptimized) would lengthen. So does
    code that calls (recursion): an external entry's own calls of itself ran slower
    than an internal one's (no fastcc)."""
    nodes = [node.op for graph in module.graphs.values() for node in graph.walk()]
    return "while" in nodes and "call" not in nodes


def recursion_without_loops(lowered: LoweredModule) -> bool:
    """Whether a module's graphs call themselves, none of them on a longer cycle, and none of
    its functions loops: LLVM's `recursive` pipeline then compiles it (jit/engine.py),
    a few function passes where O3 spent most of its time on passes with nothing to do,
    and its wrapper is left unoptimized (`optnone`: fast instruction selection), which the
    recursion's own calls never enter: a call from Python ran as fast (docs/measurements.md).
    Mutual recursion keeps O3, whose inliner makes it a graph calling itself: half the calls."""
    from . import stack

    cycles = stack.cycle_callees(lowered.source, list(lowered.functions))
    return any(cycles.values()) and all(callees <= {name} for name, callees in cycles.items()) \
        and not any(_has_cycle(function) for function in lowered.module.functions)


def _has_cycle(function: ir.Function) -> bool:
    """Whether `function`'s control flow graph has a cycle (a depth-first search from its
    entry block; a declaration has none)."""
    if not function.blocks:
        return False
    entry = function.blocks[0]
    on_path, done = {entry}, set()
    path = [(entry, iter(_successors(entry)))]
    while path:
        block, rest = path[-1]
        following = next(rest, None)
        if following is None:
            path.pop()
            on_path.discard(block)
            done.add(block)
        elif following in on_path:
            return True
        elif following not in done:
            on_path.add(following)
            path.append((following, iter(_successors(following))))
    return False


def _successors(block: ir.Block) -> list[ir.Block]:
    """The blocks `block`'s terminator may branch to (a `switch`'s default and cases too)."""
    from llvmlite import ir

    end = block.terminator
    if end is None:
        return []
    targets = [op for op in end.operands if isinstance(op, ir.Block)]
    if isinstance(end, ir.SwitchInstr):
        targets += [end.default, *(target for _, target in end.cases)]
    return targets


def is_array_module(lowered: LoweredModule) -> bool:
    """Whether a module takes or returns arrays, which `Engine.compile_ir` compiles in two
    parts: loops vectorized, glue lightly (split.py). Scalar code keeps O3 (its
    straight-line arithmetic is a hot path) but for its wrapper (`loops_without_calls`)."""
    from ..lltypes import contains_array

    graph = lowered.source.entry_graph
    return any(contains_array(v.type) for v in [*graph.params, *graph.outputs])
