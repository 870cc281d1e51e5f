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
from .calls import FunctionTable
from .loops import LoopLowerer
from .scope import RESULT, Scope
from .source import NOT_CONSTANT, FunctionSource, constant_value


class FunctionLowerer(LoopLowerer):
    """Expressions, calls, statements and loops of one function; `lower` builds its Graph."""

    def __init__(self, source: FunctionSource, functions: FunctionTable, graph_name: str,
                 static: dict[str, object] | None = None):
        super().__init__(source, functions)
        self.graph_name = graph_name
        self.static = dict(static or {})

    def lower(self) -> Graph:
        """The function's Graph; problems found go to `self.problems`."""
        tree = self.source.tree
        self.check_signature()
        params = [name for name in self.params if name not in self.static]
        graph = Graph(self.graph_name, [Value(name) for name in params], loc=self.def_loc)
        scope = Scope(graph, sizes={})
        for param in graph.params:
            scope.know(param.name, param)
        for name, value in self.static.items():  # a static parameter is a constant here
            scope.know(name, scope.const(value, self.def_loc))
        self.lower_block(scope, tree.body,
                         tail=lambda s: self.set_return(s, s.const(None, self.def_loc)))
        graph.outputs = [scope.value_of(RESULT, self.def_loc)]
        return graph

    def check_signature(self) -> None:
        tree = self.source.tree
        if isinstance(tree, ast.AsyncFunctionDef):
            self.report(UnsupportedSyntaxError, "async function definition is not supported", tree,
                        "compiled functions are synchronous; remove async")
        for star, param in (("*", tree.args.vararg), ("**", tree.args.kwarg)):
            if param is not None:
                self.report(UnsupportedSyntaxError,
                            f"parameter {star}{param.arg} is not supported in a compiled function",
                            param, "list the parameters one by one")
        for param in inspect.signature(self.source.fn, follow_wrapped=False).parameters.values():
            if param.default is not param.empty and constant_value(param.default) is NOT_CONSTANT:
                self.report(UnsupportedSyntaxError,
                            f"the default value of parameter '{param.name}' is a "
                            f"{type(param.default).__name__}", tree,
                            "defaults must be numbers, booleans, None or tuples of them")
