"""The table entries of containers ("trees", docs/trees.md): field reads and astjit.tree.

A container is a `TupleType` with a `TreeNode` (ir/types.py), so building one is a
`tuple` node (with the node in its attrs) and reading an element a `getitem`. The
ops here are what the frontend cannot resolve without types: `p.w` and `d["w"]`
(`getfield`), and astjit.tree's `leaves`, `flatten` and `unflatten`. Type inference
replaces each by tuples and getitems (their `expand` hooks), so no later stage sees
them; an unknown field is a TypingError naming the class and the field.
"""
from __future__ import annotations

from ...errors import TypingError
from ..core import Graph, Node, Value
from ..types import NONE, ArrayType, TreeNode, TupleType, Type, exact
from . import selections
from .declare import _def
from .shape_functions import _Emitter
from .table import OpTypeError, Refused

_RESOLVED = "type inference resolves it into tuple and getitem nodes"


def _describe(t: Type) -> str:
    node = getattr(t, "node", None)
    if node is None:
        return "a tuple" if isinstance(t, TupleType) else str(t)
    return "a dict" if node.kind == "dict" else "a list" if node.kind == "list" else \
        f"a {node.cls.__name__}"


def getfield_rule(types, attrs):
    """Reached only where `_field` found no such field: the error."""
    t = types[0]
    name, subscript = attrs["name"], attrs.get("subscript", False)
    node = getattr(t, "node", None)
    if node is not None and node.keys:
        where = "key" if node.kind == "dict" else "field"
        if subscript == (node.kind == "dict"):
            raise OpTypeError(f"{_describe(t)} has no {where} {name!r}; it has "
                              + ", ".join(map(repr, node.keys)))
    if subscript:
        raise OpTypeError(f"{_describe(t)} cannot be indexed by the string {name!r}: only "
                          "dicts with constant string keys can")
    if name == "dtype" and isinstance(t, ArrayType):
        raise OpTypeError("x.dtype is not a value in compiled code: pass it where a dtype is "
                          "taken (np.zeros(n, x.dtype), y.astype(x.dtype), np.array(v, "
                          "dtype=x.dtype)), or look at dtypes outside compiled code")
    raise OpTypeError(f"{_describe(t)} has no attribute '{name}' in compiled code: fields of "
                      "dataclasses and namedtuples, and an array's .shape, .size, .ndim, .T, "
                      ".real, .imag, .itemsize, .nbytes and .flat[i] can be read")


def _flat(inference, node, inputs, out):
    """`x.flat` (`x.flat[i]`: inputs [x, i]) of an array (selections.flat), or a field
    named flat (indexed: its element)."""
    em = _Emitter(inference, node, out)
    found = inputs[0]
    if not isinstance(found.type, ArrayType):
        plain = Node("getfield", [], [Value("")], attrs={"name": "flat"}, loc=node.loc)
        (found,) = inference.infer_leaf(plain, inputs[:1], out)
        if len(inputs) == 1:
            return [found]
        return inference.infer_leaf(Node("array_get", [], node.outputs, loc=node.loc),
                                    [found, inputs[1]], out)
    result = selections.flat(em, found, inputs[1] if len(inputs) > 1 else None,
                             node.attrs["use"])
    result.name = result.name or node.outputs[0].name
    return [result]


def _field(inference, node, inputs, out):
    """`p.w` of a dataclass or namedtuple, `d["w"]` of a dict: the element's getitem;
    `x.flat` of an array (`_flat`)."""
    t = inputs[0].type
    if node.attrs["name"] == "flat" and "use" in node.attrs:
        return _flat(inference, node, inputs, out)
    spec = getattr(t, "node", None)
    subscript = node.attrs.get("subscript", False)
    if spec is None or node.attrs["name"] not in spec.keys or subscript != (spec.kind == "dict"):
        return None
    read = Node("getitem", [], node.outputs, attrs={"index": spec.keys.index(node.attrs["name"])},
                loc=node.loc)
    return inference.infer_leaf(read, inputs, out)


# ---- astjit.tree in compiled code ----------------------------------------------------------

LIST = TreeNode("list", list)


def leaf_values(graph: Graph, value: Value, loc) -> list[Value]:
    """The leaves of a tree value in order, read by getitems (None holds no leaf)."""
    t = value.type
    if t == NONE:
        return []
    if not isinstance(t, TupleType) or (t.node is not None and t.node.kind == "treedef"):
        return [value]
    found = []
    for i, element in enumerate(t.elements):
        item = graph.add("getitem", [value], attrs={"index": i}, loc=loc, types=[element])
        found.extend(leaf_values(graph, item.outputs[0], loc))
    return found


def make_tuple(graph: Graph, parts: list[Value], node: TreeNode | None, loc,
               name: str | None = None) -> Value:
    attrs = {"node": node} if node is not None else {}
    return graph.add("tuple", parts, attrs=attrs, loc=loc, names=[name] if name else None,
                     types=[TupleType(tuple(p.type for p in parts), node)]).outputs[0]


def treedef_type(t: Type) -> TupleType:
    """The type of a treedef value: no elements, the tree's type in its node."""
    return TupleType((), TreeNode("treedef", None, (exact(t),), t))


def _leaves(inference, node, inputs, out):
    return [make_tuple(out, leaf_values(out, inputs[0], node.loc), LIST, node.loc,
                       node.outputs[0].name)]


def _flatten(inference, node, inputs, out):
    leaves = make_tuple(out, leaf_values(out, inputs[0], node.loc), LIST, node.loc)
    treedef = out.add("tuple", [], attrs={"node": treedef_type(inputs[0].type).node},
                      loc=node.loc, types=[treedef_type(inputs[0].type)]).outputs[0]
    return [make_tuple(out, [leaves, treedef], None, node.loc, node.outputs[0].name)]


def _unflatten(inference, node, inputs, out):
    treedef, leaves = inputs
    spec = getattr(treedef.type, "node", None)
    if spec is None or spec.kind != "treedef" or not isinstance(leaves.type, TupleType):
        return None
    items = leaf_values(out, leaves, node.loc) if leaves.type.node is None or \
        leaves.type.node.kind == "list" else None
    if items is None or len(items) != _count(spec.aux):
        raise TypingError(f"astjit.tree.unflatten: {len(items) if items else 'no list of'} "
                          f"leaves for a tree of {_count(spec.aux)}", node.loc,
                          hint="pass a list of the tree's leaves, as tree.flatten gives them")
    return [_build(out, spec.aux, iter(items), node.loc)]


def _count(t: Type) -> int:
    if t == NONE:
        return 0
    if not isinstance(t, TupleType):
        return 1
    return sum(_count(e) for e in t.elements)


def _build(graph: Graph, t: Type, items, loc) -> Value:
    if t == NONE:
        return graph.add("const", [], attrs={"value": None, "type": NONE}, loc=loc,
                         types=[NONE]).outputs[0]
    if not isinstance(t, TupleType):
        return next(items)
    return make_tuple(graph, [_build(graph, e, items, loc) for e in t.elements], t.node, loc)


def _map(inference, node, inputs, out):
    """tree.map: a call of the callee per leaf (the leaves of each tree at its `slots`),
    rebuilt in the first tree's structure; the trees must have one structure."""
    trees, extra = inputs[:node.attrs["trees"]], inputs[node.attrs["trees"]:]
    if any(exact(t.type) != exact(trees[0].type) and _shape_key(t.type) != _shape_key(
            trees[0].type) for t in trees[1:]):
        raise TypingError("astjit.tree.map: the trees have different structures: "
                          + ", ".join(str(t.type) for t in trees), node.loc)
    columns = [leaf_values(out, t, node.loc) for t in trees]
    results = []
    for leaves in zip(*columns):
        args = [leaves[k] if kind == "leaf" else extra[k] for kind, k in node.attrs["slots"]]
        call = Node("call", [], [Value("")], attrs={"callee": node.attrs["callee"]},
                    loc=node.loc)
        results.extend(inference.infer_call(call, args, out))
    return [_build(out, trees[0].type, iter(results), node.loc)]


def _shape_key(t: Type) -> object:
    """A tree type's structure without its leaves' types."""
    if not isinstance(t, TupleType):
        return "leaf"
    return (t.node, tuple(_shape_key(e) for e in t.elements))


def _tree_rule(what):
    def rule(types, attrs):
        raise OpTypeError(f"astjit.tree.{what} takes a tree (a container of arrays and "
                          f"numbers), got {', '.join(map(str, types))}")
    return rule


_def("getfield", -1, getfield_rule, None, {"*": Refused(_RESOLVED)}, cuda=Refused(_RESOLVED),
     no_vjp=_RESOLVED, expand=_field,
     doc="`p.w` (a dataclass's or namedtuple's field), `d['w']` (subscript: a dict's key); "
         "`x.flat` (attrs use; inputs [x, i] for x.flat[i])")
_def("tree_leaves", 1, _tree_rule("leaves"), None, {"*": Refused(_RESOLVED)},
     cuda=Refused(_RESOLVED), no_vjp=_RESOLVED, expand=_leaves,
     doc="astjit.tree.leaves(t): the list of t's leaves")
_def("tree_flatten", 1, _tree_rule("flatten"), None, {"*": Refused(_RESOLVED)},
     cuda=Refused(_RESOLVED), no_vjp=_RESOLVED, expand=_flatten,
     doc="astjit.tree.flatten(t): (leaves, treedef); the treedef is a value of no elements")
_def("tree_unflatten", 2, _tree_rule("unflatten"), None, {"*": Refused(_RESOLVED)},
     cuda=Refused(_RESOLVED), no_vjp=_RESOLVED, expand=_unflatten,
     doc="astjit.tree.unflatten(treedef, leaves): the tree of treedef's structure")
_def("tree_map", -1, _tree_rule("map"), None, {"*": Refused(_RESOLVED)},
     cuda=Refused(_RESOLVED), no_vjp=_RESOLVED, expand=_map,
     doc="astjit.tree.map(f, *trees): attrs the callee, the number of trees and the slots "
     "of the leaves among the call's arguments")
