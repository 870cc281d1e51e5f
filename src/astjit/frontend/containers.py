"""Lowering containers ("trees", docs/trees.md): list and dict displays, dataclass and
namedtuple constructors, field reads, and calls of astjit.tree's functions.

A container is a `tuple` node whose attrs carry its `TreeNode` (ir/types.py), so
every later stage handles it as a tuple. A dict display needs constant string keys
and is built in sorted key order (as astjit.tree and jax order a dict's leaves); its
values are evaluated in source order. `p.w` and `d["w"]` are `getfield` nodes, which
type inference resolves to the element (ir/ops/containers.py). Assigning a field
(`p.b = v`) is refused (targets.py): compiled code returns new containers instead.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect

from .. import tree
from ..errors import CompileError, UnsupportedCallError, UnsupportedSyntaxError
from ..ir.core import Value
from ..ir.types import TreeNode
from .resolve import LOCAL, constant, static_object
from .scope import Scope
from .source import NOT_CONSTANT, NOT_FOUND, constant_value
from .state import ExprRule, Lowering


def container(scope: Scope, parts: list[Value], node: TreeNode, loc) -> Value:
    result = scope.emit("tuple", parts, loc, {"node": node})
    scope.sizes[result] = len(parts)
    return result


def lower_list(state: Lowering, scope: Scope, node: ast.List) -> Value:
    """`[a, b]`: a list of known length (its length is part of its type)."""
    if any(isinstance(e, ast.Starred) for e in node.elts):
        return state.unsupported(scope, node)
    parts = [state.lower_expr(scope, e) for e in node.elts]
    return container(scope, parts, TreeNode("list", list), state.loc(node))


def lower_dict(state: Lowering, scope: Scope, node: ast.Dict) -> Value:
    """`{"w": w, "b": b}`: constant string keys; its elements in sorted key order."""
    keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None
            for k in node.keys]
    if None in keys or len(set(keys)) != len(keys):
        return state.fail(scope, node, UnsupportedSyntaxError,
                          "a dict in compiled code needs distinct constant string keys",
                          'write the keys as literals: {"w": w, "b": b}')
    values = dict(zip(keys, (state.lower_expr(scope, v) for v in node.values)))
    order = tuple(sorted(keys))
    return container(scope, [values[k] for k in order], TreeNode("dict", dict, order),
                     state.loc(node))


def lower_field(state: Lowering, scope: Scope, node: ast.Attribute, use: str = "value",
                index: Value | None = None) -> Value:
    """`p.w`: a field of the container `p` is, resolved by type inference. An array's
    `x.flat` is indexed (`x.flat[i]`, use "item", `index` an input; "copy" where the index
    may select several elements) or iterated ("iterate"); any other use of it is refused
    by type inference (ir/ops/selections.py: `flat`)."""
    base = state.lower_expr(scope, node.value)
    attrs = {"name": node.attr, "use": use} if node.attr == "flat" else {"name": node.attr}
    inputs = [base] if index is None else [base, index]
    return scope.emit("getfield", inputs, state.loc(node), attrs)


def is_flat(state: Lowering, scope: Scope, node: ast.expr) -> bool:
    """Whether `node` is `v.flat` of a local value `v` (an array's flat iterator, or a
    container's field named flat: type inference tells)."""
    if not isinstance(node, ast.Attribute) or node.attr != "flat":
        return False
    owner = static_object(state, scope, node.value)
    return owner is LOCAL or (owner is NOT_FOUND and not isinstance(node.value, ast.Name))


def lower_key(state: Lowering, scope: Scope, node: ast.Subscript, base: Value) -> Value:
    """`d["w"]`: the element of key "w" of the dict `d` is."""
    return scope.emit("getfield", [base], state.loc(node),
                      {"name": node.slice.value, "subscript": True})


# ---- constructors ---------------------------------------------------------------------------

def container_class(obj: object) -> object:
    """A dataclass or namedtuple class (called here to build one), else None."""
    if not isinstance(obj, type):
        return None
    if dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields")):
        return obj
    return None


def lower_constructor(state: Lowering, scope: Scope, node: ast.Call, cls: type,
                      name: str) -> Value:
    """`Params(w, b)`, `Stats(mean=m, var=v)`: the fields bound as Python binds them."""
    is_tuple = issubclass(cls, tuple)
    fields = tuple(cls._fields) if is_tuple else tuple(f.name for f in dataclasses.fields(cls))
    if not is_tuple and any(not f.init for f in dataclasses.fields(cls)):
        return state.fail(scope, node, UnsupportedCallError,
                          f"building a {cls.__name__} in compiled code is not supported: it "
                          "has fields its __init__ does not set", "pass it in as an argument")
    args = [state.lower_expr(scope, a) for a in node.args]
    kwargs = {k.arg: state.lower_expr(scope, k.value) for k in node.keywords}
    try:
        bound = inspect.signature(cls).bind(*args, **kwargs)
    except TypeError as error:
        return state.fail(scope, node, CompileError, f"{name}(): {error}")
    parts = []
    params = inspect.signature(cls).parameters
    for field in fields:
        if field in bound.arguments:
            parts.append(bound.arguments[field])
            continue
        default = constant_value(params[field].default)
        if default is NOT_CONSTANT:
            return state.fail(scope, node, UnsupportedCallError,
                              f"the default of field '{field}' of {cls.__name__} is not a "
                              "number, bool, None or tuple", "pass the field explicitly")
        parts.append(constant(state, scope, node, default, f"{field} (the default)"))
    kind = "namedtuple" if is_tuple else "dataclass"
    result = scope.emit("tuple", parts, state.loc(node), {"node": TreeNode(kind, cls, fields)})
    if is_tuple:
        scope.sizes[result] = len(parts)
    return result


# ---- astjit.tree ----------------------------------------------------------------------------

TREE_OPS = {tree.leaves: ("tree_leaves", 1), tree.flatten: ("tree_flatten", 1),
            tree.unflatten: ("tree_unflatten", 2)}


def tree_function(obj: object) -> object:
    """One of astjit.tree's functions that compiled code calls, else None."""
    try:
        return obj if obj in TREE_OPS or obj is tree.map else None
    except TypeError:  # an unhashable callee
        return None


def lower_tree_call(state: Lowering, scope: Scope, node: ast.Call, fn: object,
                    name: str) -> Value:
    if fn is tree.map:
        return lower_tree_map(state, scope, node)
    op, arity = TREE_OPS[fn]
    if len(node.args) != arity or node.keywords:
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}() takes {arity} positional argument(s) in compiled code")
    return scope.emit(op, [state.lower_expr(scope, a) for a in node.args], state.loc(node))



def lower_tree_map(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    """`tree.map(f, t, *rest)`: a `tree_map` node holding the call of `f` the frontend
    makes for one leaf of each tree (its callee, and where the leaves go among the
    arguments: captured locals are the rest), repeated per leaf by type inference."""
    from .closures import call_value

    if len(node.args) < 2 or node.keywords:
        return state.fail(scope, node, UnsupportedCallError,
                          "astjit.tree.map(f, tree, *rest) takes its arguments by position")
    fn = static_object(state, scope, node.args[0])  # a global function, a local's value
    if fn is LOCAL or fn is NOT_FOUND:
        fn = state.lower_operand(scope, node.args[0])  # a lambda
    trees = [state.lower_expr(scope, a) for a in node.args[1:]]
    loc = state.loc(node)
    marks = [scope.emit("undef", [], loc) for _ in trees]
    start = len(scope.graph.nodes)
    result = call_value(state, scope, node, fn, marks, {})
    call = next((n for n in scope.graph.nodes[start:] if n.op == "call"
                 and n.outputs[0] is result), None)
    if call is None:  # reported by call_value
        return result
    scope.graph.nodes.remove(call)
    extra = [v for v in call.inputs if v not in marks]
    slots = tuple(("leaf", marks.index(v)) if v in marks else ("extra", extra.index(v))
                  for v in call.inputs)
    return scope.emit("tree_map", [*trees, *extra], loc,
                      {"callee": call.attrs["callee"], "trees": len(trees), "slots": slots})


EXPRESSIONS: dict[type[ast.expr], ExprRule] = {ast.List: lower_list, ast.Dict: lower_dict}
