"""Lowering one function definition into one Graph.

The graph's parameters are the function's (positional, then keyword-only),
Values named after them; its single output is the return value. The body is a
block whose tail is the implicit `return None`, so every path ends in a return
and the output is the `$result` slot.
"""
from __future__ import annotations

import ast
import inspect

from ..errors import UnsupportedSyntaxError
from ..ir.core import Graph, Value
from .blocks import lower_block, set_return
from .function_values import FUNCTION_VALUES
from .scope import RESULT, Scope
from .source import NOT_CONSTANT, constant_value
from .state import Lowering


def lower_graph(state: Lowering, graph_name: str) -> Graph:
    """The Graph named `graph_name` of the function `state` lowers; the problems found go
    to `state.problems`."""
    _check_signature(state)
    params = [name for name in state.params if name not in state.static]
    graph = Graph(graph_name, [Value(name) for name in params], loc=state.def_loc)
    scope = Scope(graph, sizes={})
    for param in graph.params:
        scope.know(param.name, param)
    for name, value in state.static.items():  # a static parameter is a constant here
        if callable(value) or isinstance(value, FUNCTION_VALUES):  # static_object's
            continue
        scope.know(name, scope.const(value, state.def_loc))
    lower_block(state, scope, state.source.tree.body,
                tail=lambda s: set_return(s, s.const(None, state.def_loc)))
    graph.outputs = [scope.value_of(RESULT, state.def_loc)]
    return graph


def _check_signature(state: Lowering) -> None:
    tree = state.source.tree
    if isinstance(tree, ast.AsyncFunctionDef):
        state.report(UnsupportedSyntaxError, "async function definition is not supported", tree,
                     "compiled functions are synchronous; remove async")
    for star, param in (("*", tree.args.vararg), ("**", tree.args.kwarg)):
        if param is not None:
            state.report(UnsupportedSyntaxError,
                         f"parameter {star}{param.arg} is not supported in a compiled function",
                         param, "list the parameters one by one")
    if state.source.local_name:  # a local def or lambda: checked where it is defined
        return
    for param in inspect.signature(state.source.fn, follow_wrapped=False).parameters.values():
        if param.default is not param.empty and constant_value(param.default) is NOT_CONSTANT:
            state.report(UnsupportedSyntaxError,
                         f"the default value of parameter '{param.name}' is a "
                         f"{type(param.default).__name__}", tree,
                         "defaults must be numbers, booleans, None or tuples of them")
