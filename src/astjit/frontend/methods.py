"""Lowering calls on objects: `self.forward(x)`, `self(x)`, `self.hidden(x)`, `model(x)`.

The frontend does not know a local's class, so such a call is a `method_call` node naming
the method ("__call__" for calling the object itself); type inference resolves it from
the receiver's type (ir/ops/methods.py), lowering the method then.
"""
from __future__ import annotations

import ast

from ..errors import UnsupportedCallError
from ..ir.core import Value
from .resolve import LOCAL, static_object
from .scope import Scope
from .source import NOT_FOUND
from .state import Lowering

COMPUTED = (ast.Subscript, ast.Call, ast.BinOp, ast.UnaryOp)
"""The expressions whose value a method may be called on in place (not a literal)."""


def is_call_on_a_local(state: Lowering, scope: Scope, func: ast.expr) -> bool:
    """Whether `func(...)` calls a local value (`model(x)`) or an attribute of one
    (`self.forward(x)`, `self.hidden.out(x)`), or a method of a value computed in place
    (`y[0].fill(v)`, `(x * 2).item(1)`): a call on an object."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, COMPUTED):
        return static_object(state, scope, func.value) is NOT_FOUND
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and static_object(state, scope, root) is LOCAL


def lower_method_call(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    func = node.func
    receiver_expr, name = (func.value, func.attr) if isinstance(func, ast.Attribute) \
        else (func, "__call__")
    receiver = state.lower_expr(scope, receiver_expr)
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return state.fail(scope, node, UnsupportedCallError,
                          f"keyword and * arguments in the call '{ast.unparse(func)}(...)' are "
                          "not supported on objects yet", "pass each argument by position")
    args = [state.lower_expr(scope, a) for a in node.args]
    return scope.emit("method_call", [receiver, *args], state.loc(node), {"name": name})
