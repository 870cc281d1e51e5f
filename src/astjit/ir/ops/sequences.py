"""The table entries of sequences whose length type inference knows: starred unpacking,
comprehensions, and a dict's keys.

A tuple, list or dict is a `TupleType` (a list or dict with its `TreeNode`), so its
length is in its type. `first, *rest = t` takes a `tuple_slice`; a comprehension
collects its elements with `tuple_append` (a tuple or list) or `dict_set` (a dict), one
per unrolled copy of its loop (ir/unroll.py); `d.items()`, `d.keys()`, `d.values()` are
tuples. A dict's key, as a loop over the dict gives it, is a `const` of a `KeyType`:
the string is in the type, so `d[k]` (an `array_get` of a dict by a key: `key_read`) is
the element of that key. Type inference replaces every op here by tuples, getitems and
constants (their `expand` hooks), so no later stage sees them.
"""
from __future__ import annotations

from ...errors import TypingError
from ..core import Graph, Node, Value
from ..types import KeyType, TreeNode, TupleType, Type
from .containers import make_tuple
from .declare import _def
from .table import OpTypeError, Refused

_RESOLVED = "type inference resolves it into tuple, getitem and const nodes"
_KNOWN = ("a tuple, a list or a dict (whose length is known at compile time)")


def _sequence(t: Type, what: str) -> TupleType:
    if not isinstance(t, TupleType):
        raise OpTypeError(f"{what} needs {_KNOWN}, got {t}")
    return t


def _is_dict(t: Type) -> bool:
    return isinstance(t, TupleType) and t.node is not None and t.node.kind == "dict"


def _items(graph: Graph, value: Value, indices, loc) -> list[Value]:
    return [graph.add("getitem", [value], attrs={"index": i}, loc=loc,
                      types=[value.type.elements[i]]).outputs[0] for i in indices]


def key_const(graph: Graph, key: str, loc) -> Value:
    """The key `key` of a dict as a value: a constant whose type holds it."""
    return graph.add("const", [], attrs={"value": key, "type": KeyType(key)}, loc=loc,
                     types=[KeyType(key)]).outputs[0]


def element(inference, sequence: Value, index: int, node: Node, out: Graph) -> Value:
    """The element `index` a loop over `sequence` gives: a dict's key, else `sequence[index]`."""
    if _is_dict(sequence.type):
        return key_const(out, sequence.type.node.keys[index], node.loc)
    read = Node("getitem", [], node.outputs, attrs={"index": index}, loc=node.loc)
    return inference.infer_leaf(read, [sequence], out)[0]


# ---- starred unpacking: a slice of known length ------------------------------------------

def slice_rule(types, attrs):
    _sequence(types[0], "unpacking with *")
    raise AssertionError("tuple_slice is expanded by type inference")


def _slice(inference, node, inputs, out):
    """`t[start:stop]` of a tuple: a tuple (the node's container: a list for `*rest`) of its
    elements; fewer than `needed` elements is Python's ValueError, found at compile time."""
    (value,) = inputs
    if not isinstance(value.type, TupleType):
        return None
    if _is_dict(value.type):
        raise TypingError("unpacking a dict with * is not supported", node.loc,
                          hint="unpack its keys or values: a, *rest = d.values()")
    count, needed = len(value.type.elements), node.attrs.get("needed", 0)
    if count < needed:
        raise TypingError(f"not enough values to unpack (expected at least {needed}, "
                          f"got {count})", node.loc)
    indices = range(count)[node.attrs["start"]:node.attrs["stop"]]
    return [make_tuple(out, _items(out, value, indices, node.loc), node.attrs.get("node"),
                       node.loc, node.outputs[0].name)]


# ---- comprehensions: collecting elements ---------------------------------------------------

def append_rule(types, attrs):
    _sequence(types[0], "a comprehension")
    raise AssertionError("tuple_append is expanded by type inference")


def _append(inference, node, inputs, out):
    """A tuple (or list) with one more element, `v`, last."""
    collected, value = inputs
    if not isinstance(collected.type, TupleType):
        return None
    parts = _items(out, collected, range(len(collected.type.elements)), node.loc) + [value]
    return [make_tuple(out, parts, collected.type.node, node.loc, node.outputs[0].name)]


def dict_set_rule(types, attrs):
    raise OpTypeError(f"a dict comprehension's keys must be the keys of a dict (for k, v in "
                      f"d.items()), whose strings are known at compile time; got {types[1]}")


def _dict_set(inference, node, inputs, out):
    """`{**d, k: v}` for a key known at compile time: the dict's elements in sorted key
    order (as dict displays and astjit.tree have them)."""
    collected, key, value = inputs
    if not _is_dict(collected.type) or not isinstance(key.type, KeyType):
        return None
    old = dict(zip(collected.type.node.keys,
                   _items(out, collected, range(len(collected.type.elements)), node.loc)))
    old[key.type.key] = value
    keys = tuple(sorted(old))
    return [make_tuple(out, [old[k] for k in keys], TreeNode("dict", dict, keys), node.loc,
                       node.outputs[0].name)]


# ---- a dict's views --------------------------------------------------------------------------

def _view_rule(method):
    def rule(types, attrs):
        raise OpTypeError(f".{method}() needs a dict, got {types[0]}")
    return rule


def _view(method):
    def expand(inference, node, inputs, out):
        (d,) = inputs
        if not _is_dict(d.type):
            return None
        keys = [key_const(out, k, node.loc) for k in d.type.node.keys]
        values = _items(out, d, range(len(keys)), node.loc)
        parts = {"keys": keys, "values": values,
                 "items": [make_tuple(out, [k, v], None, node.loc) for k, v in zip(keys, values)]}
        return [make_tuple(out, parts[method], None, node.loc, node.outputs[0].name)]
    return expand


def key_read(inference, node, inputs, out):
    """`d[k]` of a dict, `k` a key a loop over a dict gave: the element of that key."""
    if len(inputs) != 2 or not _is_dict(inputs[0].type) or not isinstance(inputs[1].type, KeyType):
        return None
    d, key = inputs[0], inputs[1].type.key
    if key not in d.type.node.keys:
        raise TypingError(f"a dict has no key {key!r}; it has "
                          + ", ".join(map(repr, d.type.node.keys)), node.loc)
    read = Node("getitem", [], node.outputs, attrs={"index": d.type.node.keys.index(key)},
                loc=node.loc)
    return inference.infer_leaf(read, [d], out)


_def("tuple_slice", 1, slice_rule, None, {"*": Refused(_RESOLVED)}, cuda=Refused(_RESOLVED),
     no_vjp=_RESOLVED, expand=_slice,
     doc="t[start:stop] of a tuple (attrs start, stop; `needed`: the fewest elements "
         "`a, *rest, b = t` unpacks; `node`: the result's container, a list for *rest)")
_def("tuple_append", 2, append_rule, None, {"*": Refused(_RESOLVED)}, cuda=Refused(_RESOLVED),
     no_vjp=_RESOLVED, expand=_append,
     doc="(*t, v): a comprehension's elements so far and the next one (a list stays a list)")
_def("dict_set", 3, dict_set_rule, None, {"*": Refused(_RESOLVED)}, cuda=Refused(_RESOLVED),
     no_vjp=_RESOLVED, expand=_dict_set,
     doc="{**d, k: v} of a key known at compile time: a dict comprehension's next item")
for _method in ("items", "keys", "values"):
    _def(f"dict_{_method}", 1, _view_rule(_method), None, {"*": Refused(_RESOLVED)},
         cuda=Refused(_RESOLVED), no_vjp=_RESOLVED, expand=_view(_method),
         doc=f"d.{_method}() of a dict: a tuple (of its keys, values or (key, value) pairs)")
