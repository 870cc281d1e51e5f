"""Tapes in compiled code: growable stacks on the C heap, and who frees them.

A tape value, whatever its element type, is a pointer to a header on the C heap:

    {i64 len, i64 cap, i8* data, i8* next, i8** link, i8** owner}

`data` holds `cap` elements of the element's LLVM type (a scalar, or the
literal struct of a tuple), the first `len` of them pushed. It starts NULL and
grows by doubling through `realloc`, the first growth making room for
`INITIAL_CAPACITY`. `tape_push` stores at data[len], growing first when full,
and returns the same pointer; `tape_get` loads data[i] without a check (the
transforms that emit it read only what was pushed); `tape_free` releases data
and header, and ignores the null tape (what an `undef` of tape type is).
A failed malloc or realloc, or a size beyond i64, is a MemoryError.

Ownership, so that no exit leaks a tape: each invocation of a function that
makes tapes (or gets them back from a call) keeps a list of the tapes it owns,
its head in a stack slot (`FunctionEmitter.held["tapes"]`: a `TapeList`). `next` chains the list,
`link` is the address of the pointer to the header (the head or the previous
`next`) and `owner` the address of the head. `tape_new` and a call returning
tapes the callee gave up (`owner` NULL) put them on the list; `tape_free`
takes its tape off. On a failure status the function frees every tape on its
list before returning; on a normal return it gives up the tapes its result
holds (they become the caller's) and frees the rest. Tapes a function gets as
arguments stay on their owner's list.

Arrays on a tape: a tape whose element holds arrays (an array, or arrays in
a tuple) keeps a reference to each array pushed: `tape_push` takes a new one
(`Py_IncRef` of the owner), `tape_get` gives a new one to its result (an owned
value, pushed on the invocation's owned list, which the retain/release pass releases
after its last use), and clearing or freeing the tape drops those it holds.
For that the header sits in a *box* with one more field, `drop`: the address
of a function `void(i8* data, i64 len)` that releases the arrays of `len`
elements, made once per element type (`astjit.tape.drop.<n>`) and stored by
`tape_new`; NULL for tapes of scalars. So freeing on an error exit, which
does not know element types, still drops every reference (the arrays a
loop's taped entries kept alive are freed with the tape).

The work is done by small functions (`astjit.tape.*`), run once per call or on a rare
path (a push growing the tape), and the same for every tape: the runtime's (shared.py),
compiled once per process or linked from the runtime cache, which a kernel's module only
declares. Made in each module, they were compiled again with every gradient that loops
(a scalar kernel's with its wrapper, by a slower pipeline than the wrapper's `glue`:
docs/benchmarks.md). A call of one that frees a tape counts as a call into Python for
the GIL (runtime/gil.py): the `drop` it calls may release arrays. malloc, realloc and
free are the C library's (`engine.register_libc`).
"""
from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from ...ir.core import Graph, Node
from ...ir.types import NONE, TapeType, TupleType, Type
from . import messages as msg
from . import nests, owned
from .emitter import Resource
from .lltypes import ARRAY_OWNER, BYTES, I1, I32_T, I64_T, TAPE, TAPE_HEADER, lltype, size_of, zero
from .runtime.pyapi import declare
from .shared import shared_function

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

LEN, CAP, DATA, NEXT, LINK, OWNER = range(6)
"""The fields of `TAPE_HEADER`."""
INITIAL_CAPACITY = 16
LIST = BYTES.as_pointer()
"""The address of a list head, or of a header's `next`: an `i8**`."""
VOID = ir.VoidType()
DROP = ir.FunctionType(VOID, [BYTES, I64_T]).as_pointer()
"""What releases the arrays of a tape's elements: drop(data, len)."""
BOX = ir.LiteralStructType([TAPE_HEADER, DROP])
"""A tape's header and its `drop` function (NULL: the elements hold no arrays)."""
LIBC = {"malloc": ir.FunctionType(BYTES, [I64_T]),
        "realloc": ir.FunctionType(BYTES, [BYTES, I64_T]),
        "free": ir.FunctionType(VOID, [BYTES])}


# ---- header access --------------------------------------------------------------------

def field(b: ir.IRBuilder, header: ir.Value, index: int) -> ir.Value:
    return b.gep(header, [ir.Constant(I32_T, 0), ir.Constant(I32_T, index)], inbounds=True)


def load(b: ir.IRBuilder, header: ir.Value, index: int) -> ir.Value:
    return b.load(field(b, header, index))


def store(b: ir.IRBuilder, value: ir.Value, header: ir.Value, index: int) -> None:
    b.store(value, field(b, header, index))


def null(ty: ir.Type) -> ir.Constant:
    return ir.Constant(ty, None)


def is_null(b: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    return b.icmp_unsigned("==", pointer, null(pointer.type))


def libc(module: ir.Module, name: str) -> ir.Function:
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, LIBC[name], name)
        function.attributes.add("nounwind")
    return function


# ---- the helper functions, the runtime's -------------------------------------------------

HELPERS: dict[str, tuple[ir.FunctionType, Callable]] = {}


def helper_body(result: ir.Type, params: list[ir.Type]):
    """Register the body emitter of helper `astjit.tape.<name>` of the given signature."""
    def register(emit_body: Callable) -> Callable:
        HELPERS[emit_body.__name__] = (ir.FunctionType(result, params), emit_body)
        return emit_body
    return register


def helper(module: ir.Module, name: str) -> ir.Function:
    """The runtime's function `astjit.tape.<name>` as `module` sees it (shared.py)."""
    fnty, emit_body = HELPERS[name]
    function = shared_function(module, f"astjit.tape.{name}", fnty, emit_body)
    if name == "new":  # what it returns is NULL or fresh memory, as malloc's: LLVM then
        function.return_value.attributes.add("noalias")  # knows without its body
    return function


@helper_body(TAPE, [LIST, DROP])
def new(fn: ir.Function, b: ir.IRBuilder, owner: ir.Value, drop: ir.Value) -> None:
    """An empty tape on list `owner` whose elements `drop` releases, or NULL when malloc
    fails."""
    raw = b.call(libc(fn.module, "malloc"), [size_of(BOX)])
    with b.if_then(is_null(b, raw), likely=False):
        b.ret(null(TAPE))
    box = b.bitcast(raw, BOX.as_pointer())
    b.store(ir.Constant(BOX, [null(TAPE_HEADER), null(DROP)]), box)
    b.store(drop, b.gep(box, [ir.Constant(I32_T, 0), ir.Constant(I32_T, 1)], inbounds=True))
    header = b.bitcast(raw, TAPE)
    b.call(helper(fn.module, "adopt"), [owner, header])
    b.ret(header)


@helper_body(VOID, [TAPE])
def drop_all(fn: ir.Function, b: ir.IRBuilder, header: ir.Value) -> None:
    """Release the arrays the tape's elements hold (if any); the elements stay."""
    box = b.bitcast(header, BOX.as_pointer())
    drop = b.load(b.gep(box, [ir.Constant(I32_T, 0), ir.Constant(I32_T, 1)], inbounds=True))
    with b.if_then(b.not_(is_null(b, drop)), likely=False):
        b.call(drop, [load(b, header, DATA), load(b, header, LEN)])
    b.ret_void()


@helper_body(VOID, [LIST, TAPE])
def adopt(fn: ir.Function, b: ir.IRBuilder, owner: ir.Value, header: ir.Value) -> None:
    """Put `header` at the head of list `owner`, unless it is NULL or already owned."""
    with b.if_then(is_null(b, header), likely=False):
        b.ret_void()
    with b.if_then(b.not_(is_null(b, load(b, header, OWNER))), likely=False):
        b.ret_void()
    first = b.load(owner)
    store(b, first, header, NEXT)
    store(b, owner, header, LINK)
    store(b, owner, header, OWNER)
    with b.if_then(b.not_(is_null(b, first))):
        store(b, field(b, header, NEXT), b.bitcast(first, TAPE), LINK)
    b.store(b.bitcast(header, BYTES), owner)
    b.ret_void()


@helper_body(VOID, [TAPE])
def unlink(fn: ir.Function, b: ir.IRBuilder, header: ir.Value) -> None:
    """Take `header` off its owner's list, if it is on one."""
    link = load(b, header, LINK)
    with b.if_then(is_null(b, link), likely=False):
        b.ret_void()
    following = load(b, header, NEXT)
    b.store(following, link)
    with b.if_then(b.not_(is_null(b, following))):
        store(b, link, b.bitcast(following, TAPE), LINK)
    for index in (NEXT, LINK, OWNER):
        store(b, null(TAPE_HEADER.elements[index]), header, index)
    b.ret_void()


@helper_body(I1, [TAPE, I64_T])
def grow(fn: ir.Function, b: ir.IRBuilder, header: ir.Value, element_size: ir.Value) -> None:
    """Double the capacity (or make the first room); false when out of owned."""
    capacity = load(b, header, CAP)
    new_capacity = b.select(b.icmp_unsigned("==", capacity, ir.Constant(I64_T, 0)),
                            ir.Constant(I64_T, INITIAL_CAPACITY),
                            b.shl(capacity, ir.Constant(I64_T, 1)))
    product = b.umul_with_overflow(new_capacity, element_size)
    size, overflow = b.extract_value(product, 0), b.extract_value(product, 1)
    too_big = b.or_(overflow, b.icmp_signed("<", size, ir.Constant(I64_T, 0)))
    with b.if_then(too_big, likely=False):
        b.ret(ir.Constant(I1, 0))
    # realloc(p, 0) may free p: elements of no size (`none`) still get a byte.
    size = b.select(b.icmp_unsigned("==", size, ir.Constant(I64_T, 0)),
                    ir.Constant(I64_T, 1), size)
    data = b.call(libc(fn.module, "realloc"), [load(b, header, DATA), size])
    with b.if_then(is_null(b, data), likely=False):
        b.ret(ir.Constant(I1, 0))
    store(b, data, header, DATA)
    store(b, new_capacity, header, CAP)
    b.ret(ir.Constant(I1, 1))


@helper_body(VOID, [TAPE])
def free(fn: ir.Function, b: ir.IRBuilder, header: ir.Value) -> None:
    """Take the tape off its list and free its data and header, not the arrays its
    elements hold (`drop_all` first); NULL is ignored."""
    with b.if_then(is_null(b, header), likely=False):
        b.ret_void()
    b.call(helper(fn.module, "unlink"), [header])
    b.call(libc(fn.module, "free"), [load(b, header, DATA)])
    b.call(libc(fn.module, "free"), [b.bitcast(header, BYTES)])
    b.ret_void()


def _free_each(fn: ir.Function, b: ir.IRBuilder, owner: ir.Value, dropped: bool) -> None:
    """Free every tape on list `owner` (each free takes the head off the list), after
    dropping the arrays its elements hold where `dropped`."""
    loop, body, done = (fn.append_basic_block(n) for n in ("loop", "body", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    first = b.load(owner)
    b.cbranch(is_null(b, first), done, body)
    b.position_at_end(body)
    if dropped:
        b.call(helper(fn.module, "drop_all"), [b.bitcast(first, TAPE)])
    b.call(helper(fn.module, "free"), [b.bitcast(first, TAPE)])
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()


@helper_body(VOID, [LIST])
def release(fn: ir.Function, b: ir.IRBuilder, owner: ir.Value) -> None:
    """Free every tape on list `owner` and the arrays their elements hold."""
    _free_each(fn, b, owner, True)


@helper_body(VOID, [LIST])
def free_all(fn: ir.Function, b: ir.IRBuilder, owner: ir.Value) -> None:
    """Free every tape on list `owner`, whose elements hold no arrays: it calls no `drop`,
    so a call of it needs no GIL (runtime/gil.py), as `release` does."""
    _free_each(fn, b, owner, False)


@helper_body(VOID, [LIST, TAPE])
def disown(fn: ir.Function, b: ir.IRBuilder, owner: ir.Value, header: ir.Value) -> None:
    """Give up `header` if list `owner` has it: it is being returned to the caller."""
    with b.if_then(is_null(b, header), likely=False):
        b.ret_void()
    with b.if_then(b.icmp_unsigned("==", load(b, header, OWNER), owner)):
        b.call(helper(fn.module, "unlink"), [header])
    b.ret_void()


# ---- the Routines of the table ------------------------------------------------------------

def tape_new(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    assert em.held["tapes"] is not None, "emit_body opens a tape list for graphs with tape_new"
    element = node.attrs["element"]
    drop = dropper(em.module, element) if owned.array_slots(element) else null(DROP)
    header = em.builder.call(helper(em.module, "new"), [em.held["tapes"].head, drop])
    em.fail_if(node, is_null(em.builder, header), msg.OUT_OF_MEMORY, msg.TAPE_MEMORY)
    return header


def tape_push(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """data[len] = value, after growing when len == cap; len += 1."""
    b = em.builder
    header, value = args
    for array in owned.arrays_in(value, node.inputs[1].type, b):  # the tape keeps them
        b.call(declare(em.module, "Py_IncRef"), [b.extract_value(array, ARRAY_OWNER)])
    length = load(b, header, LEN)
    with b.if_then(b.icmp_unsigned("==", length, load(b, header, CAP)), likely=False):
        grown = b.call(helper(em.module, "grow"), [header, size_of(value.type)])
        em.fail_if(node, b.not_(grown), msg.OUT_OF_MEMORY, msg.TAPE_MEMORY)
    data = b.bitcast(load(b, header, DATA), value.type.as_pointer())
    b.store(value, b.gep(data, [length], inbounds=True))
    store(b, b.add(length, ir.Constant(I64_T, 1), flags=["nuw", "nsw"]), header, LEN)
    return header


def tape_get(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """data[i], unchecked."""
    b = em.builder
    header, index = args
    element = lltype(node.outputs[0].type)
    data = b.bitcast(load(b, header, DATA), element.as_pointer())
    value = b.load(b.gep(data, [index], inbounds=True))
    for array in owned.arrays_in(value, node.outputs[0].type, b):  # the result owns them
        owner = b.extract_value(array, ARRAY_OWNER)
        b.call(declare(em.module, "Py_IncRef"), [owner])
        owned.push(em, owner)
    return value


def tape_len(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """len: how many values were pushed."""
    return load(em.builder, args[0], LEN)


def tape_clear(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """len = 0, after dropping the arrays the elements hold: the data stays allocated, for
    the pushes to come."""
    if owned.array_slots(node.inputs[0].type.element):
        em.builder.call(helper(em.module, "drop_all"), [args[0]])
    store(em.builder, ir.Constant(I64_T, 0), args[0], LEN)
    return args[0]


def tape_free(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """Free the tape, after dropping the arrays its elements hold."""
    if owned.array_slots(node.inputs[0].type.element):
        em.builder.call(helper(em.module, "drop_all"), args)
    em.builder.call(helper(em.module, "free"), args)
    return zero(NONE)


def dropper(module: ir.Module, element: Type) -> ir.Function:
    """`astjit.tape.drop.<n>(data, len)`: Py_DecRef the owner of every array in the first
    `len` elements at `data` of type `element` (one function per element type)."""
    ty = lltype(element)
    name = f"astjit.tape.drop.{zlib.crc32(str(ty).encode()):08x}"
    function = module.globals.get(name)
    if function is not None:
        return function
    function = ir.Function(module, DROP.pointee, name)
    function.linkage = "internal"
    data, length = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))

    def drop(i):
        value = b.load(b.gep(b.bitcast(data, ty.as_pointer()), [i], inbounds=True))
        for array in owned.arrays_in(value, element, b):
            b.call(declare(module, "Py_DecRef"), [b.extract_value(array, ARRAY_OWNER)])
    nests.count_up(b, ir.Constant(I64_T, 0), length, drop, flags=())
    b.ret_void()
    return function


ROUTINES = {"tape_new": tape_new, "tape_push": tape_push, "tape_get": tape_get,
            "tape_clear": tape_clear, "tape_free": tape_free, "tape_len": tape_len}


# ---- ownership at function entry, calls and exits --------------------------------------------

def tapes_in(value: ir.Value, t: Type, b: ir.IRBuilder) -> Iterator[ir.Value]:
    """The tape pointers inside `value` of IR type `t` (itself, or in nested tuples)."""
    if isinstance(t, TapeType):
        yield value
    elif isinstance(t, TupleType):
        for i, element in enumerate(t.elements):
            if holds_tape(element):
                yield from tapes_in(b.extract_value(value, i), element, b)


def holds_tape(t: Type | None) -> bool:
    if isinstance(t, TupleType):
        return any(holds_tape(e) for e in t.elements)
    return isinstance(t, TapeType)


def makes_tapes(graph: Graph) -> bool:
    """Whether an invocation of `graph` may come to own tapes: it makes some or gets some back."""
    return any(node.op == "tape_new" or (node.op == "call" and holds_tape(node.outputs[0].type))
               for node in graph.walk())


class TapeList(NamedTuple):
    """An invocation's list of the tapes it owns (`FunctionEmitter.held["tapes"]`)."""

    head: ir.Value
    """The stack slot of the list's head."""
    arrays: bool
    """Whether a tape on it may hold arrays: freeing them then drops those (`release`)."""


def holds_arrays(graph: Graph) -> bool:
    """Whether a tape an invocation of `graph` owns may hold arrays: one it makes does, or
    one a call gives it back."""
    return any(node.op == "tape_new" and owned.array_slots(node.attrs["element"])
               or node.op == "call" and holds_tape(node.outputs[0].type)
               for node in graph.walk())


def open_list(em: FunctionEmitter, graph: Graph) -> TapeList | None:
    """At function entry: an empty tape list, if `graph` may need one."""
    if not makes_tapes(graph):
        return None
    head = em.alloca(BYTES)
    em.builder.store(null(BYTES), head)
    return TapeList(head, holds_arrays(graph))


def adopt_results(em: FunctionEmitter, t: Type, result: ir.Value) -> None:
    """After a call: own the tapes of its result that the callee gave up."""
    for header in tapes_in(result, t, em.builder):
        em.builder.call(helper(em.module, "adopt"), [em.held["tapes"].head, header])


def close_list(em: FunctionEmitter, t: Type, result: ir.Value) -> None:
    """On a normal return of `result`: give up the tapes it holds, free the others."""
    if em.held["tapes"] is None:
        return
    for header in tapes_in(result, t, em.builder):
        em.builder.call(helper(em.module, "disown"), [em.held["tapes"].head, header])
    release_list(em)


def release_list(em: FunctionEmitter) -> None:
    """Before returning a failure status: free every tape the invocation owns."""
    tapes = em.held["tapes"]
    if tapes is not None:
        em.builder.call(helper(em.module, "release" if tapes.arrays else "free_all"),
                        [tapes.head])


RESOURCE = Resource("tapes", open_list, adopt_results, release_list, close_list)
"""The tapes an invocation owns, as the emitter core settles them."""
