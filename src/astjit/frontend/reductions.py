"""Lowering reductions: `np.sum/mean/max/min(x, axis, keepdims=)` (and `np.amax`, `np.amin`)
and the methods `x.sum/mean/max/min(axis, keepdims=)` to the `reduce` primitive
(ir/ops/reductions.py).

| call | node |
|---|---|
| `np.sum(x)`, `x.sum()` | `reduce x {kind="sum", axis=None, keepdims=False}` |
| `np.max(x, 1)`, `x.max(axis=-1)` | `reduce x {kind="max", axis=(1,) / (-1,), ...}` |
| `np.mean(x, axis=(0, 1), keepdims=True)` | `reduce x {kind="mean", axis=(0, 1), keepdims=True}` |

`axis` and `keepdims` are read at compile time (`compile_time_value`: a
literal, a global constant, a static parameter): the result's type depends on
them. `axis` is None, an int or a tuple of ints, stored as None or a tuple; it
is checked against the array's ndim by type inference, which knows it. NumPy's
other parameters (`dtype=`, `out=`, `initial=`, `where=`) are reported as not
supported yet.
"""
from __future__ import annotations

import ast
import functools

from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.ops.reductions import REDUCTIONS
from .builtins import numpy_lookup
from .resolve import compile_time_value
from .scope import Scope
from .source import NOT_CONSTANT

FUNCTIONS = {name: row.name for row in REDUCTIONS.values() for name in row.spellings}
"""NumPy function name -> reduction kind (ir/ops/reductions.py's rows)."""
METHODS = tuple(row.spellings[0] for row in REDUCTIONS.values())
"""The array methods that are reductions."""
AXIS_HINT = "write the axis as a constant: x.sum(axis=1), np.max(x, axis=(0, 1)), or leave it out"


@functools.cache
def _function_table() -> dict[object, str]:
    import numpy

    return {getattr(numpy, name): kind for name, kind in FUNCTIONS.items()}


def numpy_reduction(obj: object) -> str | None:
    """The reduction kind of `obj` if it is np.sum, np.mean, np.max ... else None."""
    return numpy_lookup(_function_table, obj)


def lower_numpy_reduction(lowerer, scope: Scope, node: ast.Call, kind: str, name: str) -> Value:
    """`np.sum(x, axis, keepdims=...)`: the array is the first argument."""
    if not node.args and not any(k.arg == "a" for k in node.keywords):
        return lowerer.fail(scope, node, UnsupportedCallError, f"{name}() needs an array")
    args = list(node.args)
    keywords = list(node.keywords)
    array_node = args.pop(0) if args else next(k.value for k in keywords if k.arg == "a")
    keywords = [k for k in keywords if k.arg != "a"]
    return _lower(lowerer, scope, node, kind, name, array_node, args, keywords)


def lower_reduction_method(lowerer, scope: Scope, node: ast.Call) -> Value:
    """`x.sum(axis, keepdims=...)`: the array is the method's object."""
    kind = node.func.attr
    return _lower(lowerer, scope, node, kind, kind, node.func.value, list(node.args),
                  list(node.keywords))


def _lower(lowerer, scope: Scope, node: ast.Call, kind: str, name: str, array_node: ast.expr,
           args: list[ast.expr], keywords: list[ast.keyword]) -> Value:
    bad = [a for a in args if isinstance(a, ast.Starred)] + [k for k in keywords if k.arg is None]
    if bad:
        return lowerer.fail(scope, node, UnsupportedCallError,
                            "*args and **kwargs arguments are not supported",
                            "pass each argument explicitly")
    if len(args) > 1:
        return lowerer.fail(scope, node, UnsupportedCallError,
                            f"{name}() takes only the axis after the array by position here",
                            "pass keepdims= by keyword; dtype= and out= are not supported yet")
    given = {"axis": args[0]} if args else {}
    for k in keywords:
        if k.arg not in ("axis", "keepdims"):
            return lowerer.fail(scope, node, UnsupportedCallError,
                                f"the keyword argument {k.arg}= of {name}() is not supported yet",
                                f"compiled code takes {name}(axis=..., keepdims=...)")
        if k.arg in given:
            return lowerer.fail(scope, node, UnsupportedCallError,
                                f"{name}() got multiple values for argument '{k.arg}'")
        given[k.arg] = k.value
    array = lowerer.lower_expr(scope, array_node)
    axis = _static_axis(lowerer, scope, given.get("axis"), name)
    keepdims = _static_keepdims(lowerer, scope, given.get("keepdims"), name)
    if axis is NOT_CONSTANT or keepdims is NOT_CONSTANT:
        return scope.emit("undef", [], lowerer.loc(node))
    return scope.emit("reduce", [array], lowerer.loc(node),
                      {"kind": kind, "axis": axis, "keepdims": keepdims})


def _static_axis(lowerer, scope: Scope, node: ast.expr | None, name: str):
    """None or a tuple of ints; NOT_CONSTANT (reported) when not a compile-time constant."""
    if node is None:
        return None
    value = compile_time_value(lowerer, scope, node)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, int) and not isinstance(v, bool)
                                        for v in value):
        return value
    what = "is not a compile-time constant" if value is NOT_CONSTANT \
        else "is not an int or a tuple of ints"
    lowerer.report(UnsupportedCallError, f"the axis of {name}() ({ast.unparse(node)}) {what}",
                   node, AXIS_HINT)
    return NOT_CONSTANT


def _static_keepdims(lowerer, scope: Scope, node: ast.expr | None, name: str):
    """The keepdims flag; NOT_CONSTANT (reported) unless a compile-time bool."""
    if node is None:
        return False
    value = compile_time_value(lowerer, scope, node)
    if isinstance(value, bool):
        return value
    lowerer.report(UnsupportedCallError,
                   f"keepdims= of {name}() must be True or False at compile time, "
                   f"got '{ast.unparse(node)}'", node)
    return NOT_CONSTANT
