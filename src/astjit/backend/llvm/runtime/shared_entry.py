"""One wrapper per signature, shared by the runtime, for array kernels: their entry's table.

An array kernel's wrapper (wrapper.py) is glue: it checks and unboxes the arguments,
calls the entry graph and boxes its result, the same instructions for every kernel of
the same parameter and result types but for five things of the kernel's own: the entry
graph it calls, the module's error numbers (`emitter.error_values`), the status of a
first tier's deoptimization, whether the call may have released the GIL, and the status
a read-only array argument the kernel may write to fails with. Emitted into each
kernel's module, the wrapper was a large part of what a first call of a kernel like
`a @ b` emitted, printed, parsed and compiled (docs/measurements.md).

So where a module takes and returns arrays and scalars only (no containers: their
boundary, trees.py, is the kernel's own), is not guarded for recursion (runtime/stack.py)
and its wrapper would be glue (`entry.is_array_module`), its module holds instead a
constant table, `<entry graph>.entry` (`TABLE`): the runtime's wrapper of its signature
(`astjit.entry.<types>`, a shared function: compiled once, kept in the runtime cache),
the entry graph, those numbers, the two statuses and the flag. The builtin calls that
wrapper (`cabi.make_builtin(..., table=True)`), whose `self` (`cabi.EntryPins`) holds the
table's address and the fallback, the error handler and the general tier the wrapper
reads in their slots (`cabi.slot_offsets`) rather than embedding them.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llvmlite import ir

from .... import cabi
from ....ir.analysis import written_parameters
from ....ir.types import ArrayType, NoneType, ScalarType, Type
from .. import aggregate_abi
from ..emitter import error_values
from ..lltypes import I32_T, I64_T, STATUS, lltype
from ..shared import shared_function
from ..unused import remove_unused
from . import gil, stack
from .pyapi import PYOBJ, load_field
from .wrapper import WRAPPER_TYPE, WrapperEmitter, define_entry_helpers, read_only_status

if TYPE_CHECKING:
    from ..codegen import LoweredModule
    from .trees import TreeBoundary

WRAPPER, CORE, NUMBERS, DEOPTIMIZE, RELEASES, READ_ONLY = range(6)
"""The table's fields: the shared wrapper, the entry graph's function, the module's error
numbers (NULL where no site reports any), the deoptimize status (0: no general tier),
whether the GIL may be released (0 or 1), and by parameter the status of a read-only array
argument (0: never written)."""


def table_type(params: int) -> ir.LiteralStructType:
    """The table of an entry graph of `params` parameters (`WRAPPER` ... `READ_ONLY`)."""
    return ir.LiteralStructType([PYOBJ, PYOBJ, I64_T.as_pointer(), I32_T, I32_T,
                                 ir.ArrayType(I32_T, params)])


def shares_wrapper(lowered: LoweredModule, trees: TreeBoundary | None) -> bool:
    """Whether the module's entry takes the runtime's wrapper of its signature: arrays and
    scalars only (not the leaves of a signature taking containers: `trees.arguments`), no
    recursion guard."""
    graph = lowered.source.entry_graph
    takes_trees = trees is not None and trees.arguments is not None
    return not takes_trees and not stack.is_guarded(lowered.module) and all(
        isinstance(v.type, (ArrayType, ScalarType, NoneType))
        for v in [*graph.params, *graph.outputs])


def define_table(lowered: LoweredModule, general: object) -> str:
    """Add the entry's table to `lowered`'s module (and what the wrapper would have given
    its module: the GIL's and the signal checks' bodies); return the table's name.
    `general`: the first tier's general tier, else None."""
    module, core = lowered.module, lowered.entry_function
    graph = lowered.source.entry_graph
    errors = lowered.error_table
    releases = define_entry_helpers(module, None)
    written = written_parameters(lowered.source)
    read_only = [read_only_status(errors, written[i]) if i in written else 0
                 for i in range(len(graph.params))]
    deoptimize = errors.deoptimize if general is not None else None
    numbers = error_values(module).gep([ir.Constant(I32_T, 0)] * 2) if lowered.error_details \
        else ir.Constant(I64_T.as_pointer(), None)
    types = tuple(p.type for p in graph.params)
    wrapper = shared_function(module, wrapper_name(types, graph.outputs[0].type), WRAPPER_TYPE,
                              functools.partial(_emit_wrapper, types, graph.outputs[0].type))
    kind = table_type(len(types))
    table = ir.GlobalVariable(module, kind, core.name + ".entry")
    table.global_constant = True
    table.initializer = ir.Constant(kind, [
        wrapper.bitcast(PYOBJ), core.bitcast(PYOBJ), numbers, ir.Constant(I32_T, deoptimize or 0),
        ir.Constant(I32_T, int(releases)), ir.Constant(kind.elements[READ_ONLY], read_only)])
    return table.name


def wrapper_name(params: tuple[Type, ...], result: Type) -> str:
    """The shared wrapper's name: its signature, which is all its body depends on."""
    return f"astjit.entry.({','.join(map(str, params))})->{result}"


def _emit_wrapper(params: tuple[Type, ...], result: Type, function: ir.Function,
                  builder: ir.IRBuilder, *args: ir.Value) -> None:
    """The body of `astjit.entry.<signature>` (a shared function's `emit`, whose `builder`'s
    block, the function's first, holds the emitter's stack slots and reads of the table)."""
    emitter = SharedWrapperEmitter(function, len(params))
    builder.branch(emitter.builder.block)
    emitter.emit_shared(params, result)
    remove_unused(function)


class SharedWrapperEmitter(WrapperEmitter):
    """The wrapper of every kernel of one signature: what `WrapperEmitter` embeds, read at
    each call from the builtin's `self` and the table it points at."""

    def __init__(self, function: ir.Function, params: int) -> None:
        super().__init__(function, None, None)
        self.kind = table_type(params)
        self.loaded: dict[object, ir.Value] = {}
        """What the entry block read: each slot (by ("slot", its name)), the table's address
        ("table"), its fields (by (index, element))."""

    def emit_shared(self, params: tuple[Type, ...], result: Type) -> None:
        core_type = ir.FunctionType(STATUS, [lltype(t) for t in params]
                                    + [lltype(result).as_pointer()])
        physical = aggregate_abi.physical_type(core_type)
        core = self.builder.bitcast(self.field(CORE), physical.as_pointer())
        core.logical_type = core_type  # aggregate_abi's calls pass aggregates by pointer
        self.written = {i: None for i, t in enumerate(params) if isinstance(t, ArrayType)}
        self.emit(core, params, result)

    def pinned(self, slot: str) -> ir.Value:
        """The object in the builtin's `self`'s slot `slot` (`cabi.EntryPins`)."""
        value = self.loaded.get(("slot", slot))
        if value is None:
            with self.builder.goto_entry_block():
                value = load_field(self.builder, self.function.args[0],
                                   cabi.slot_offsets()[slot], PYOBJ)
            self.loaded[("slot", slot)] = value
        return value

    def field(self, index: int, element: int | None = None) -> ir.Value:
        """Field `index` of the table (element `element` of an array field), read once, in
        the entry block."""
        key = (index, element)
        value = self.loaded.get(key)
        if value is None:
            builder, table = self.builder, self.loaded.get("table")
            pinned = self.pinned("table")  # (read first: `goto_entry_block`s do not nest)
            with builder.goto_entry_block():
                if table is None:
                    address = load_field(builder, pinned, cabi.BYTES_DATA, I64_T)
                    table = self.loaded["table"] = builder.inttoptr(address, self.kind.as_pointer())
                path = [ir.Constant(I32_T, 0), ir.Constant(I32_T, index)]
                if element is not None:
                    path.append(ir.Constant(I32_T, element))
                value = self.loaded[key] = builder.load(builder.gep(table, path))
        return value

    def fallback_callable(self) -> ir.Value:
        return self.pinned("fallback")

    def take_back_gil(self) -> None:
        with self.builder.if_then(self.builder.icmp_signed("!=", self.field(RELEASES),
                                                           ir.Constant(I32_T, 0))):
            gil.take_back(self.builder)

    def read_only_status(self, index: int) -> ir.Value:
        return self.field(READ_ONLY, index)

    def report(self, status: ir.Value, general: object = None) -> ir.Value:
        return self.failed(status, self.field(DEOPTIMIZE), self.pinned("general"),
                           self.pinned("error_handler"), self.field(NUMBERS))
