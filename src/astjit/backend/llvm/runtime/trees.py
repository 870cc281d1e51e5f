"""Containers ("trees", astjit.tree) at the compiled boundary, in native code: a container
argument checked and read into its leaves, a container result built.

A compiled entry takes a container argument as its leaves (api.with_flat_entry). The
entry wrapper of a signature taking containers has a second way in, chosen by the
builtin's `self` (`TreeBoundary.pins`): the containers themselves, checked as the
generated Python fast path checked them (treeentry.py), each container's class by
identity, then read into the leaves, which are checked as flat arguments are:

- a tuple, list or namedtuple: its length (`ob_size`) and its items;
- a dict: exactly `dict`, `PyDict_Size`, each key looked up (`PyDict_GetItemWithError`,
  the signature's key objects);
- a dataclass: each field read as `p.w` reads it: from the instance's `__dict__` (a
  plain class, no property of that name), else by `PyObject_GetAttr` (`fields`);
- an object (a model): its `__dict__` read as `p.__dict__` reads it, exactly a `dict`,
  its size (children and static attributes), each child looked up, each static
  attribute the same object as the signature's.

Anything that differs, and any `Exception` raised while reading, cleared, sends the
call untouched to `TreeBoundary.fallback`; another exception (a KeyboardInterrupt)
propagates, as it does through Python's `except Exception`. The leaves read from
containers are borrowed, unless compiled code calls Python (a callback, which could
drop a container's item): then each is held until the call returns.

A result whose type has nodes is built as `tree.rebuilder` builds it: a list, a dict (the
signature's keys, in order), a namedtuple as its `_make` makes it (`tuple.__new__(cls,
items)`: `PyType_GenericAlloc`, then the items), a dataclass or an object as
`object.__new__(cls)` with the fields put into its `__dict__` (and an object's static
attributes). A node it cannot build so (a registered class, a namedtuple class with its
own `_make`, a class with slots or its own `__dict__` or `__getattribute__`) is boxed as
nested tuples and given to the Python function `rebuilder(type)` makes for it.
"""
from __future__ import annotations

import collections
import ctypes
import functools
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import llvmlite.binding as llvm
from llvmlite import ir

from ....ir.types import TupleType, Type
from .ndarrays import NULL, join
from .pyapi import (
    LIST_ITEMS,
    PTR_BYTES,
    PYOBJ,
    SSIZE,
    TUPLE_ITEMS,
    TUPLE_SIZE,
    field_pointer,
    load_field,
    type_is,
)

if TYPE_CHECKING:
    from .wrapper import WrapperEmitter


@dataclass
class TreeBoundary:
    """What an entry does with containers: builds its container results (`rebuild`), and
    for a signature taking containers (`arguments`) takes them natively."""

    rebuild: Callable[[Type], Callable | None]
    """`tree.rebuilder`: the Python builder of a result node built in Python."""
    arguments: tuple[Type, ...] | None = None
    """The signature's argument types, when the entry also takes the containers themselves."""
    fallback: Any = None
    """Where a call of containers the entry does not take goes, untouched."""
    general: Any = None
    """A first tier's general tier for calls of containers (the leaves' is the entry's)."""
    pins: Any = None
    """The `self` of the builtin taking containers (entry.EntryPins), set by build_entry."""
    constants: list = field(default_factory=list)
    """The objects the machine code points at (classes, keys, names): the entry's pins hold them."""

    def for_general_tier(self) -> TreeBoundary:
        """The boundary of the general tier compiled in place of the first."""
        return TreeBoundary(self.rebuild, self.arguments, self.fallback)


def takes_natively(t: Type) -> bool:
    """Whether the wrapper checks and reads arguments of type `t` natively (not a registered
    class, nor a namedtuple class iterating its own way)."""
    if not isinstance(t, TupleType):
        return True
    node = t.node
    if node is not None and (node.kind not in ("list", "dict", "namedtuple", "dataclass", "object")
                             or node.kind == "namedtuple" and node.cls.__iter__ is not tuple.__iter__):
        return False
    return all(map(takes_natively, t.elements))


# ---- arguments ------------------------------------------------------------------------

def unpack(emitter: WrapperEmitter, obj: ir.Value, t: TupleType, values: list) -> None:
    """Check the container `obj` against `t` and append its leaves' native values to
    `values`; anything else goes to the emitter's fallback."""
    builder, node = emitter.builder, t.node
    kind = "tuple" if node is None else node.kind
    count = ir.Constant(SSIZE, len(t.elements))
    emitter.require(type_is(builder, obj, tuple if node is None else node.cls))
    if kind in ("tuple", "list", "namedtuple"):
        emitter.require(builder.icmp_signed("==", load_field(builder, obj, TUPLE_SIZE, SSIZE), count))
        if kind == "list":
            items = load_field(builder, obj, LIST_ITEMS, PYOBJ.as_pointer())
            children = [builder.load(builder.gep(items, [ir.Constant(SSIZE, i)]))
                        for i in range(len(t.elements))]
        else:
            children = [load_field(builder, obj, TUPLE_ITEMS + i * PTR_BYTES, PYOBJ)
                        for i in range(len(t.elements))]
    elif kind == "dict":
        emitter.require(builder.icmp_signed("==", emitter.api("PyDict_Size", obj), count))
        children = [lookup(emitter, obj, key) for key in node.keys]
    elif kind == "dataclass":
        children = fields(emitter, obj, node)
    else:  # an object: its __dict__
        attributes = instance_dict(emitter, obj, node.cls)
        emitter.require(type_is(builder, attributes, dict))
        emitter.require(builder.icmp_signed("==", emitter.api("PyDict_Size", attributes),
                                            ir.Constant(SSIZE, len(t.elements) + len(node.aux))))
        children = [lookup(emitter, attributes, key) for key in node.keys]
        for key, value in node.aux:  # static attributes: the same objects
            same = builder.icmp_unsigned("==", lookup(emitter, attributes, key), emitter.pin(value))
            emitter.require(same)
    for child, element in zip(children, t.elements):
        if isinstance(element, TupleType):
            unpack(emitter, child, element, values)
            continue
        if emitter.calls_python:  # a callback could drop the container's item
            emitter.api("Py_IncRef", child)
            emitter.hold(child)
        values.append(emitter.unbox(child, element))
        emitter.param_index += 1


def fields(emitter: WrapperEmitter, obj: ir.Value, node: Any) -> list[ir.Value]:
    """A dataclass's fields, borrowed, read as `obj.name` reads them: from the instance's
    `__dict__` where the class is a plain one (`is_plain_instance`) and has no data
    descriptor (a property) of that name, else by `PyObject_GetAttr` (its reference held
    until the call returns). A field missing from the `__dict__` (a class attribute's, or
    `__getattr__`'s) sends the call to the fallback."""
    plain = is_plain_instance(node.cls)
    attributes = instance_dict(emitter, obj, node.cls) if plain else None
    children = []
    for name in node.keys:
        name = sys.intern(name)
        if plain and not is_data_descriptor(node.cls, name):
            children.append(lookup(emitter, attributes, name))
        else:
            children.append(emitter.hold(emitter.read(emitter.api(
                "PyObject_GetAttr", obj, emitter.pin(name)))))
    return children


def instance_dict(emitter: WrapperEmitter, obj: ir.Value, cls: type) -> ir.Value:
    """`obj.__dict__`, held until the call returns: `PyObject_GenericGetDict` for a plain
    class (what its `__dict__` attribute does), else `PyObject_GetAttr`."""
    if is_plain_instance(cls):
        found = emitter.api("PyObject_GenericGetDict", obj, NULL)
    else:
        found = emitter.api("PyObject_GetAttr", obj, emitter.pin(sys.intern("__dict__")))
    return emitter.hold(emitter.read(found))


def is_data_descriptor(cls: type, name: str) -> bool:
    """Whether `cls` (or a base) has a data descriptor `name` (a property), which an
    attribute read prefers to the instance's `__dict__`."""
    for base in cls.__mro__:
        if name in base.__dict__:
            kind = type(base.__dict__[name])
            return hasattr(kind, "__set__") or hasattr(kind, "__delete__")
    return False


def lookup(emitter: WrapperEmitter, mapping: ir.Value, key: Any) -> ir.Value:
    """`mapping[key]` of a dict, borrowed; a missing key (or an error) to the fallback."""
    return emitter.read(emitter.api("PyDict_GetItemWithError", mapping, emitter.pin(key)))


# ---- results --------------------------------------------------------------------------

def box_container(emitter: WrapperEmitter, value: ir.Value, t: TupleType) -> ir.Value:
    """A new reference to the container `t` describes holding `value`'s elements boxed, or
    NULL (exception set); the elements' array references are consumed either way."""
    builder, node = emitter.builder, t.node
    make = native_builder(node)
    if make is None:  # nested tuples, given to the Python function rebuilding them
        nested = emitter.box_nested_tuples(value, t)
        function = emitter.pin(emitter.trees.rebuild(t))

        def rebuilt() -> ir.Value:
            result = emitter.api("PyObject_CallOneArg", function, nested)
            emitter.api("Py_DecRef", nested)
            return result
        return if_made(emitter, nested, [], rebuilt)
    items = [emitter.box(builder.extract_value(value, i), e) for i, e in enumerate(t.elements)]
    failed = ir.Constant(ir.IntType(1), 0)
    for item in items:
        failed = builder.or_(failed, builder.icmp_unsigned("==", item, NULL))
    return unless(emitter, failed, items, lambda: make(emitter, node, items))


def if_made(emitter: WrapperEmitter, obj: ir.Value, items: list[ir.Value],
            then: Callable[[], ir.Value]) -> ir.Value:
    """`then()` where `obj` is not NULL; else `items` released, NULL."""
    return unless(emitter, emitter.builder.icmp_unsigned("==", obj, NULL), items, then)


def unless(emitter: WrapperEmitter, failed: ir.Value, items: list[ir.Value],
           then: Callable[[], ir.Value]) -> ir.Value:
    """`then()` (an object or NULL) unless `failed`; else `items` released (Py_DecRef:
    NULL-safe) and NULL."""
    builder = emitter.builder
    made, not_made, done = emitter.blocks("made", "not_made", "made.done")
    builder.cbranch(failed, not_made, made)
    builder.position_at_end(not_made)
    for item in items:
        emitter.api("Py_DecRef", item)
    builder.branch(done)
    builder.position_at_end(made)
    return join(builder, done, NULL, not_made, then())


def native_builder(node: Any) -> Callable | None:
    """How a result container of `node` is made natively from its boxed items (which the
    function consumes), or None."""
    if node.kind == "list":
        return make_list
    if node.kind == "dict":
        return make_dict
    if node.kind == "namedtuple" and is_namedtuple_make(node.cls):
        return make_namedtuple
    if node.kind in ("dataclass", "object") and is_plain_instance(node.cls) and not any(
            is_data_descriptor(node.cls, name) for name in instance_names(node)):
        return make_instance
    return None


def make_list(emitter: WrapperEmitter, node: Any, items: list[ir.Value]) -> ir.Value:
    """`list(items)`."""
    result = emitter.api("PyList_New", ir.Constant(SSIZE, len(items)))

    def filled() -> ir.Value:
        for i, item in enumerate(items):
            emitter.api("PyList_SetItem", result, ir.Constant(SSIZE, i), item)
        return result
    return if_made(emitter, result, items, filled)


def make_namedtuple(emitter: WrapperEmitter, node: Any, items: list[ir.Value]) -> ir.Value:
    """`tuple.__new__(cls, items)`, what a namedtuple's `_make` returns: the class's
    instance (`tp_alloc`, PyType_GenericAlloc) holding the items."""
    builder = emitter.builder
    result = emitter.api("PyType_GenericAlloc", emitter.pin(node.cls),
                         ir.Constant(SSIZE, len(items)))

    def filled() -> ir.Value:
        for i, item in enumerate(items):
            builder.store(item, field_pointer(builder, result, TUPLE_ITEMS + i * PTR_BYTES, PYOBJ))
        return result
    return if_made(emitter, result, items, filled)


def make_dict(emitter: WrapperEmitter, node: Any, items: list[ir.Value]) -> ir.Value:
    """`dict(zip(keys, items))`."""
    result = emitter.api("PyDict_New")
    return if_made(emitter, result, items,
                   lambda: set_items(emitter, result, list(zip(node.keys, items))))


def make_instance(emitter: WrapperEmitter, node: Any, items: list[ir.Value]) -> ir.Value:
    """`object.__new__(cls)` with the fields (and an object's static attributes) set as
    `object.__setattr__` sets them: into the instance's values, no dict made."""
    builder, module = emitter.builder, emitter.function.module
    register_object_new()
    new = module.globals.get(OBJECT_NEW) or ir.Function(
        module, ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ, PYOBJ]), OBJECT_NEW)
    result = builder.call(new, [emitter.pin(node.cls), emitter.pin(()), NULL])
    static = list(node.aux) if node.kind == "object" else []

    def filled() -> ir.Value:
        status = ir.Constant(ir.IntType(32), 0)
        for key, item in zip(node.keys, items):
            status = builder.or_(status, emitter.api(
                "PyObject_GenericSetAttr", result, emitter.pin(sys.intern(key)), item))
            emitter.api("Py_DecRef", item)
        for key, value in static:
            status = builder.or_(status, emitter.api(
                "PyObject_GenericSetAttr", result, emitter.pin(sys.intern(key)), emitter.pin(value)))
        failed = builder.icmp_signed("!=", status, ir.Constant(status.type, 0))
        with builder.if_then(failed, likely=False):
            emitter.api("Py_DecRef", result)
        return builder.select(failed, NULL, result)
    return if_made(emitter, result, items, filled)


def instance_names(node: Any) -> list[str]:
    """The attributes a dataclass or object result is given: its fields, its static ones."""
    return [*node.keys, *(name for name, _ in node.aux)] if node.kind == "object" else list(node.keys)


def set_items(emitter: WrapperEmitter, result: ir.Value, pairs: list[tuple[Any, ir.Value]]
              ) -> ir.Value:
    """The dict `result` once `result[key] = item` for each pair (the items released);
    NULL (result released) if a store fails."""
    builder = emitter.builder
    status = ir.Constant(ir.IntType(32), 0)
    for key, item in pairs:
        status = builder.or_(status, emitter.api("PyDict_SetItem", result, emitter.pin(key), item))
        emitter.api("Py_DecRef", item)
    failed = builder.icmp_signed("!=", status, ir.Constant(status.type, 0))
    with builder.if_then(failed, likely=False):
        emitter.api("Py_DecRef", result)
    return builder.select(failed, NULL, result)


# ---- which classes are built natively ---------------------------------------------------

_MAKE_CODE = collections.namedtuple("_", "")._make.__func__.__code__
"""The code of every namedtuple class's own `_make`."""


def is_namedtuple_make(cls: type) -> bool:
    """Whether `cls._make` is the one `collections.namedtuple` gave `cls` (tuple.__new__)."""
    make = cls.__dict__.get("_make")
    return (isinstance(make, classmethod) and make.__func__.__code__ is _MAKE_CODE
            and tp_alloc(cls) == tp_alloc(tuple))


def is_plain_instance(cls: type) -> bool:
    """Whether `object.__new__(cls).__dict__` is an instance dict made the usual way, and
    `tree._direct_builder` fills it: no slots, a class defined in Python over `object`
    only, neither its own `__getattribute__` nor its own `__dict__` attribute."""
    if getattr(cls, "__slots__", None) or "__dict__" not in dir(cls) \
            or cls.__getattribute__ is not object.__getattribute__:
        return False
    if any(not base.__flags__ & _HEAP_TYPE for base in cls.__mro__[:-1]):
        return False
    descriptor = next(base.__dict__["__dict__"] for base in cls.__mro__ if "__dict__" in base.__dict__)
    return isinstance(descriptor, types.GetSetDescriptorType) and tp_alloc(cls) == tp_alloc(object)


_HEAP_TYPE = 1 << 9
"""Py_TPFLAGS_HEAPTYPE: the classes defined with `class` (and not in C)."""

TP_ALLOC, TP_NEW = 47, 65
"""`Py_tp_alloc`, `Py_tp_new`: slot numbers for `PyType_GetSlot` (typeslots.h)."""

OBJECT_NEW = "astjit.object_new"
"""LLVM's name of `object.__new__`'s C function (object_new)."""


def type_slot(cls: type, slot: int) -> int:
    get = ctypes.pythonapi.PyType_GetSlot
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_int]
    return get(cls, slot)


def tp_alloc(cls: type) -> int:
    return type_slot(cls, TP_ALLOC)


@functools.cache
def register_object_new() -> None:
    llvm.add_symbol(OBJECT_NEW, type_slot(object, TP_NEW))

