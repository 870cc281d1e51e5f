"""The array references an invocation of compiled code owns: its *owned list* (docs/arrays.md).

References: `array_retain` (allocation.py) is `Py_IncRef(owner)`, `array_release` is
`Py_DecRef(owner)`. Owners of argument arrays are borrowed. The retain/release pass
places the releases after last uses, so an error status returned partway
would skip them: each invocation of a function that may come to own arrays
keeps an *owned list*, the references it holds right now, in a stack array
(`open_list`):

- an allocation, a retain, and a call's result (what the callee hands over:
  call results are owned by the caller) push the owner;
- a release takes one occurrence of its owner off (searching from the end,
  where a short-lived temporary is) before the decref;
- an error exit (`FunctionEmitter.return_status`) decrefs every reference on
  the list, so no exit leaks; a normal exit does nothing (the retain/release pass has
  released all but what the result hands over).

Moving ownership between Values of one invocation (a yielded array, a while's
carried one, an if's result) changes nothing: the invocation owns the
reference either way. The list's capacity is the number of array slots of all
the Values of the function (node outputs and region parameters), which bounds
the references alive at once when every owned Value is released once; past it
(IR that leaks) a reference is not recorded and only an error exit would miss
it. Every list operation is a small function shared by the module
(`astjit.owned.*`, shared.py), called, not inlined (an MLP step has a hundred
list operations, and their code inlined was a good part of what LLVM
compiled), except `push`, a few instructions LLVM inlines: its stores that no
error exit reads are dead and vanish.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from ...ir.analysis import ALLOCATING
from ...ir.core import Graph
from ...ir.ops import OPS
from ...ir.types import ArrayType, TupleType, Type
from . import nests
from .emitter import Resource
from .lltypes import ARRAY_OWNER, I32_T, I64_T
from .runtime.pyapi import PYOBJ, VOID, declare
from .shared import shared_function

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

VIEWS = frozenset(name for name, op in OPS.items() if "view" in op.traits)
"""Ops whose result is a view: a new reference to the input's owner (views.py; `diag` of a
matrix is a view, of a vector a new matrix, which this over-approximation covers too)."""
OWNING = ALLOCATING | VIEWS | {"array_retain"}
"""Ops whose result is a new reference the invocation owns."""


# ---- the owned list ---------------------------------------------------------------------------

class OwnedList(NamedTuple):
    """An invocation's owned references: `count` (i64*) of them at `items` (i8**)."""

    count: ir.Value
    items: ir.Value
    capacity: int


def array_slots(t: Type | None) -> int:
    """How many arrays a value of type `t` holds (itself, or in nested tuples)."""
    if isinstance(t, TupleType):
        return sum(array_slots(e) for e in t.elements)
    return int(isinstance(t, ArrayType))


def arrays_in(value: ir.Value, t: Type, b: ir.IRBuilder) -> Iterator[ir.Value]:
    """The array structs inside `value` of IR type `t` (itself, or in nested tuples)."""
    if isinstance(t, ArrayType):
        yield value
    elif isinstance(t, TupleType):
        for i, element in enumerate(t.elements):
            if array_slots(element):
                yield from arrays_in(b.extract_value(value, i), element, b)


def owns_arrays(graph: Graph) -> bool:
    """Whether an invocation of `graph` may come to own array references."""
    return any(node.op in OWNING or node.op in ("fused", "rowwise")
               or (node.op == "call" and array_slots(node.outputs[0].type))
               for node in graph.walk())


def open_list(em: FunctionEmitter, graph: Graph) -> OwnedList | None:
    """At function entry: an empty owned list, if `graph` may need one: none where no
    Value of it holds an array (a whole reduction's `fused` node), whose list could hold
    nothing."""
    if not owns_arrays(graph):
        return None
    capacity = sum(array_slots(v.type) for node in graph.walk() for v in node.outputs)
    capacity += sum(array_slots(p.type) for node in graph.walk() for region in node.regions
                    for p in region.params)
    if capacity == 0:
        return None
    count = em.alloca(I64_T)
    items = em.alloca(ir.ArrayType(PYOBJ, capacity))
    em.builder.store(ir.Constant(I64_T, 0), count)
    first = em.builder.gep(items, [ir.Constant(I32_T, 0), ir.Constant(I32_T, 0)], inbounds=True)
    return OwnedList(count, first, capacity)


def push(em: FunctionEmitter, obj: ir.Value) -> None:
    """Record a new reference the invocation owns."""
    owned = em.held["owned"]
    if owned is not None:
        em.builder.call(helper(em.module, "push"),
                        [owned.count, owned.items, ir.Constant(I64_T, owned.capacity), obj])


def adopt_results(em: FunctionEmitter, t: Type, result: ir.Value) -> None:
    """After a call: own the arrays of its result (the callee handed them over)."""
    for array in arrays_in(result, t, em.builder):
        push(em, em.builder.extract_value(array, ARRAY_OWNER))


def release_list(em: FunctionEmitter) -> None:
    """Before returning a failure status: drop every reference the invocation owns."""
    owned, b = em.held["owned"], em.builder
    if owned is not None:  # the test is here, where LLVM often knows the list is empty
        n = b.load(owned.count)
        with b.if_then(b.icmp_signed(">", n, ir.Constant(I64_T, 0))):
            b.call(helper(em.module, "release"), [n, owned.items])


def forget(em: FunctionEmitter, obj: ir.Value) -> None:
    """Take one occurrence of `obj` off the owned list (a release, before its decref)."""
    owned = em.held["owned"]
    if owned is not None:
        em.builder.call(helper(em.module, "forget"), [owned.count, owned.items, obj])


def new_reference(em: FunctionEmitter, array: ir.Value) -> ir.Value:
    """Take (and record) a new reference to `array`'s owner; return the owner."""
    owner = em.builder.extract_value(array, ARRAY_OWNER)
    em.builder.call(declare(em.module, "Py_IncRef"), [owner])
    push(em, owner)
    return owner


def retained(em: FunctionEmitter, array: ir.Value) -> ir.Value:
    """`array`, after taking (and recording) a new reference to its owner."""
    new_reference(em, array)
    return array


def release_now(em: FunctionEmitter, array: ir.Value) -> None:
    """Give up a reference to `array`'s owner now: off the owned list, then Py_DecRef."""
    owner = em.builder.extract_value(array, ARRAY_OWNER)
    forget(em, owner)
    em.builder.call(declare(em.module, "Py_DecRef"), [owner])


RESOURCE = Resource("owned", open_list, adopt_results, release_list)
"""The array references an invocation owns, as the emitter core settles them."""


# ---- the list operations, one of each per LLVM module ------------------------------------------

LIST_PARAMS = [I64_T.as_pointer(), PYOBJ.as_pointer()]


def helper(module: ir.Module, name: str) -> ir.Function:
    """The shared function `astjit.owned.<name>` (a list operation) of `module` (shared.py),
    made on first use. `release` runs only on error exits: cold. `push` is a few
    instructions, which LLVM inlines: where no error exit can follow, its stores are dead
    and vanish."""
    fnty, emit = HELPERS[name]
    return shared_function(module, "astjit.owned." + name, fnty, emit, cold=name == "release",
                           inline=name == "push")


def _push(fn, b, count, items, capacity, obj):
    """items[count++] = obj, unless the list is full."""
    n = b.load(count)
    with b.if_then(b.icmp_signed("<", n, capacity), likely=True):
        b.store(obj, b.gep(items, [n], inbounds=True))
        b.store(b.add(n, ir.Constant(I64_T, 1), flags=["nsw"]), count)
    b.ret_void()


def _forget(fn, b, count, items, obj):
    """Take one occurrence of `obj` off the list (the last one moves into its place)."""
    n = b.load(count)
    start = b.block
    loop, body, found, done = (fn.append_basic_block(x) for x in ("loop", "body", "found", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    j = b.phi(I64_T)
    j.add_incoming(n, start)
    b.cbranch(b.icmp_signed(">", j, ir.Constant(I64_T, 0)), body, done)
    b.position_at_end(body)
    k = b.sub(j, ir.Constant(I64_T, 1), flags=["nsw"])
    j.add_incoming(k, body)
    slot = b.gep(items, [k], inbounds=True)
    b.cbranch(b.icmp_unsigned("==", b.load(slot), obj), found, loop)
    b.position_at_end(found)
    last = b.sub(n, ir.Constant(I64_T, 1), flags=["nsw"])
    b.store(b.load(b.gep(items, [last], inbounds=True)), slot)
    b.store(last, count)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


def _release(fn, b, n, items):
    """Py_DecRef the `n` references at `items` (a failing invocation's last act)."""
    nests.count_up(b, ir.Constant(I64_T, 0), n, lambda j: b.call(
        declare(fn.module, "Py_DecRef"), [b.load(b.gep(items, [j], inbounds=True))]))
    b.ret_void()


HELPERS = {
    "push": (ir.FunctionType(VOID, [*LIST_PARAMS, I64_T, PYOBJ]), _push),
    "forget": (ir.FunctionType(VOID, [*LIST_PARAMS, PYOBJ]), _forget),
    "release": (ir.FunctionType(VOID, [I64_T, PYOBJ.as_pointer()]), _release),
}
