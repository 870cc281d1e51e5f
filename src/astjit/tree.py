"""astjit.tree: containers of arrays and numbers ("trees"), with jax.tree_util's semantics.

A tree is a tuple, list, dict (its keys in sorted order), namedtuple, dataclass (its
fields in order) or a class given to `register`, holding trees; None is a container of
nothing; anything else is a leaf. `children` is the one definition of a container's
children and `rebuild` of how one is made again: `flatten` / `unflatten` here, the
compiled boundary (dispatch.py: a container argument is a `TupleType` with a `TreeNode`,
passed as its leaves; api.py: a container result rebuilt by `rebuilder`) and gradients
(whose trees are their arguments') all use them. docs/trees.md has the design.
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .ir.types import TreeNode, TupleType, Type

__all__ = ["flatten", "unflatten", "leaves", "map", "register", "TreeDef"]

TUPLE = TreeNode("tuple", tuple)
NONE = TreeNode("none")
_REGISTERED: dict[type, tuple[Callable, Callable]] = {}


def register(cls: type, flatten_fn: Callable, unflatten_fn: Callable) -> None:
    """Make instances of `cls` trees: `flatten_fn(obj) -> (children, aux)`,
    `unflatten_fn(aux, children) -> obj`. `aux` is static (part of a compiled
    specialization's signature, so it must be hashable)."""
    _REGISTERED[cls] = (flatten_fn, unflatten_fn)


def children(obj: Any) -> tuple[TreeNode, list] | None:
    """(node, children) of a container, None for a leaf."""
    cls = type(obj)
    if cls in _REGISTERED:
        kids, aux = _REGISTERED[cls][0](obj)
        return TreeNode("registered", cls, (), aux), list(kids)
    if cls is tuple:
        return TUPLE, list(obj)
    if cls is list:
        return TreeNode("list", list), list(obj)
    if cls is dict:
        keys = _sorted_keys(obj)
        return TreeNode("dict", dict, keys), [obj[k] for k in keys]
    if obj is None:
        return NONE, []
    if isinstance(obj, tuple) and hasattr(cls, "_fields"):
        return TreeNode("namedtuple", cls, tuple(cls._fields)), list(obj)
    if not cls.__flags__ & _HEAP_TYPE:  # a class defined in C (NumPy's arrays, numbers): no
        return None  # dataclass nor model, and asking costs each argument of a call more
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = tuple(f.name for f in dataclasses.fields(obj))
        return TreeNode("dataclass", cls, names), [getattr(obj, n) for n in names]
    if _is_model(obj):
        return _object_children(obj)
    return None


_NOT_MODELS = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
               types.MethodType, functools.partial)


def _is_model(obj: Any) -> bool:
    """An instance of a user's class with instance attributes (a model, a layer): a tree
    of its attributes, as a method's `self` is (docs/trees.md)."""
    return (hasattr(obj, "__dict__") and not isinstance(obj, _NOT_MODELS)
            and type(obj).__flags__ & _HEAP_TYPE  # a class defined in Python, not NumPy's ufunc
            and not callable(getattr(obj, "py_func", None)))


_HEAP_TYPE = 1 << 9
"""Py_TPFLAGS_HEAPTYPE: the classes defined with `class` (and not in C)."""


def _object_children(obj: Any) -> tuple[TreeNode, list]:
    """An object's attributes: those holding numbers, arrays or trees are its children,
    the others (names, functions, None) static aux data, part of its type."""
    names, kids, static = [], [], []
    for name, value in vars(obj).items():
        if value is None or isinstance(value, (str, bytes, *_NOT_MODELS)) \
                or callable(value) and not _is_model(value):  # np.tanh held as an activation
            static.append((name, value))
        else:
            names.append(name)
            kids.append(value)
    return TreeNode("object", type(obj), tuple(names), tuple(static)), kids


def _sorted_keys(d: dict) -> tuple:
    try:
        return tuple(sorted(d))
    except TypeError:
        return tuple(d)


def rebuild(node: TreeNode, kids: Iterable) -> Any:
    """The container `node` describes, holding `kids`."""
    kind = node.kind
    if kind == "tuple":
        return tuple(kids)
    if kind == "list":
        return list(kids)
    if kind == "dict":
        return dict(zip(node.keys, kids))
    if kind == "namedtuple":
        return node.cls(*kids)
    if kind == "dataclass":  # as dataclasses.replace keeps the class, without __init__
        obj = object.__new__(node.cls)
        for name, value in zip(node.keys, kids):
            object.__setattr__(obj, name, value)
        return obj
    if kind == "registered":
        return _REGISTERED[node.cls][1](node.aux, tuple(kids))
    if kind == "object":  # its attributes set again, without __init__
        obj = object.__new__(node.cls)
        vars(obj).update(zip(node.keys, kids))
        vars(obj).update(node.aux)
        return obj
    return None


@dataclass(frozen=True)
class TreeDef:
    """The structure of a tree: a container node and its children's, or a leaf (`node` None)."""

    node: TreeNode | None
    children: tuple[TreeDef, ...] = ()

    @property
    def num_leaves(self) -> int:
        return 1 if self.node is None else sum(c.num_leaves for c in self.children)

    def __repr__(self) -> str:
        if self.node is None:
            return "*"
        return f"TreeDef({self.node.kind}, [{', '.join(map(repr, self.children))}])"


LEAF = TreeDef(None)


def flatten(tree: Any) -> tuple[list, TreeDef]:
    """(leaves in order, structure)."""
    out: list = []
    return out, _flatten(tree, out)


def _flatten(tree: Any, out: list) -> TreeDef:
    found = children(tree)
    if found is None:
        out.append(tree)
        return LEAF
    node, kids = found
    return TreeDef(node, tuple(_flatten(k, out) for k in kids))


def unflatten(treedef: TreeDef, leaves: Iterable) -> Any:
    """The tree of structure `treedef` holding `leaves` in order."""
    items = iter(leaves)
    tree = _unflatten(treedef, items)
    if next(items, _END) is not _END:
        raise ValueError(f"too many leaves for {treedef!r}")
    return tree


_END = object()


def _unflatten(treedef: TreeDef, items) -> Any:
    if treedef.node is None:
        leaf = next(items, _END)
        if leaf is _END:
            raise ValueError("too few leaves for the tree's structure")
        return leaf
    return rebuild(treedef.node, [_unflatten(c, items) for c in treedef.children])


def leaves(tree: Any) -> list:
    return flatten(tree)[0]


def map(f: Callable, tree: Any, *rest: Any) -> Any:  # noqa: A001 - jax.tree_util's name
    """The tree of `f(leaf, *the same leaf of each of rest)`; rest have tree's structure."""
    flat, treedef = flatten(tree)
    others = [flatten(r) for r in rest]
    for _, other in others:
        if other != treedef:
            raise ValueError(f"tree.map: trees of different structure: {treedef!r} and {other!r}")
    return unflatten(treedef, builtins.map(f, flat, *(o[0] for o in others)))


# ---- the compiled boundary ------------------------------------------------------------

def ir_type(value: Any, leaf_type: Callable[[Any], Type | None]) -> Type | None:
    """The IR type of an argument: a container a TupleType with its node (a plain tuple
    none), a leaf `leaf_type`'s; None if some leaf has no type."""
    found = children(value)
    if found is None or found[0] is NONE:
        return leaf_type(value)
    node, kids = found
    parts = [ir_type(k, leaf_type) for k in kids]
    if None in parts:
        return None
    if node.kind == "registered":
        try:
            hash(node.aux)
        except TypeError:
            raise TypeError(f"the aux data of a registered {node.cls.__name__} must be hashable "
                            f"(it is part of the compiled signature): {node.aux!r:.60}") from None
    return TupleType(tuple(parts), None if node is TUPLE else node)


def entry_leaves(values: Iterable, out: list) -> list:
    """The leaves of argument values, None kept as a leaf: what a compiled entry takes."""
    for value in values:
        found = children(value)
        if found is None or found[0] is NONE:
            out.append(value)
        else:
            entry_leaves(found[1], out)
    return out


def has_nodes(t: Type) -> bool:
    return isinstance(t, TupleType) and (t.node is not None or any(has_nodes(e) for e in t.elements))


def rebuilder(t: Type) -> Callable[[Any], Any] | None:
    """A function turning the nested tuples a compiled entry returns for `t` into the
    containers `t` describes; None when `t` has none."""
    if not has_nodes(t):
        return None
    parts = [rebuilder(e) for e in t.elements]
    node = t.node or TUPLE
    if not any(parts):  # leaves only: the common result (a model's new parameters)
        direct = _direct_builder(node)
        if direct is not None:
            return direct

    def build(value: tuple) -> Any:
        return rebuild(node, [v if p is None else p(v) for p, v in zip(parts, value)])
    return build


def _direct_builder(node: TreeNode) -> Callable[[tuple], Any] | None:
    """`rebuild(node, value)` for a tuple of leaves, without the generic dispatch: a
    dataclass or an object filled through its `__dict__`, a namedtuple made at once."""
    cls, keys = node.cls, node.keys
    if node.kind == "namedtuple":
        return cls._make
    if node.kind in ("dataclass", "object") and "__dict__" in dir(cls) \
            and not getattr(cls, "__slots__", None):
        new, static = object.__new__, dict(node.aux or ()) if node.kind == "object" else {}

        def build(value: tuple) -> Any:
            obj = new(cls)
            fields = obj.__dict__
            fields.update(zip(keys, value))
            if static:
                fields.update(static)
            return obj
        return build
    return None
