"""Binding a call's arguments to a NumPy function's parameters, by NumPy's names, for the
NumPy functions lowered to one node that type inference expands (shape_calls.py,
sorting.py, linalg.py); and reading an argument known at compile time.

A signature is a tuple of parameters `(name, kind[, default])` in NumPy's order; what a
kind means is the lowering module's. A parameter without a default, or whose default
is `REQUIRED`, must be given.
"""
from __future__ import annotations

import ast

from .builtins import CallError
from .resolve import compile_time_value, static_object
from .scope import Scope
from .state import Lowering

REQUIRED = object()
"""The default of a parameter that must be given (one with a default after it)."""


def bind_arguments(node: ast.Call, params: tuple, args: list[ast.expr], name: str
                   ) -> dict[str, ast.expr]:
    """Parameter name -> argument expression, as Python binds them; CallError otherwise
    (with Python's wording)."""
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in node.keywords):
        raise CallError("*args and **kwargs arguments are not supported",
                        "pass each argument explicitly")
    names = [p[0] for p in params]
    if len(args) > len(params):
        raise CallError(f"{name}() takes at most {len(params)} arguments here "
                        f"({', '.join(names)}), got {len(args)}")
    bound = dict(zip(names, args))
    for keyword in node.keywords:
        if keyword.arg not in names:
            raise CallError(f"{name}() got an unexpected keyword argument '{keyword.arg}'",
                            f"compiled code takes {name}({', '.join(names)})")
        if keyword.arg in bound:
            raise CallError(f"{name}() got multiple values for argument '{keyword.arg}'")
        bound[keyword.arg] = keyword.value
    for param in params:
        if param[0] not in bound and (len(param) < 3 or param[2] is REQUIRED):
            raise CallError(f"{name}() is missing the argument '{param[0]}'")
    return bound


def static_argument(state: Lowering, scope: Scope, expr: ast.expr) -> object:
    """An argument read at compile time: a string (`kind='stable'`, `ord='fro'`), or
    `compile_time_value`'s (NOT_CONSTANT when it is not known)."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, (ast.Name, ast.Attribute)):
        obj = static_object(state, scope, expr)
        if isinstance(obj, str):
            return obj
    return compile_time_value(state, scope, expr)
