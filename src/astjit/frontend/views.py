"""Lowering array views: slices (`x[1:n:2, i]`), `x.T`, `np.transpose`, reshape, and
slice assignment (`y[1:3] = v`). See ir/ops/views.py for the ops.

The frontend does not know types: `x[a:b]` is an `array_view` whatever `x` is
(type inference rejects a non-array), and a row `a[i]` of a 2-d array is an
`array_get` with too few indices that type inference turns into a view.
"""
from __future__ import annotations

import ast

from ..errors import UnsupportedCallError
from ..ir.core import Value
from .reductions import METHODS as REDUCTION_METHODS
from .reductions import lower_reduction_method
from .scope import Scope


def has_slice(node: ast.Subscript) -> bool:
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return any(isinstance(part, ast.Slice) for part in parts)


def lower_view(lowerer, scope: Scope, node: ast.Subscript, base: Value) -> Value:
    """`x[a:b:c, i]`: an array_view of `base` (already lowered)."""
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    spec, inputs = [], []
    for part in parts:
        if isinstance(part, ast.Slice):
            bounds = (part.lower, part.upper, part.step)
            spec.append("s" + "".join("0" if b is None else "1" for b in bounds))
            inputs += [lowerer.lower_expr(scope, b) for b in bounds if b is not None]
        else:
            spec.append("i")
            inputs.append(lowerer.lower_expr(scope, part))
    return scope.emit("array_view", [base, *inputs], lowerer.loc(node), {"spec": tuple(spec)})


def lower_reshape(lowerer, scope: Scope, node: ast.Call, array: Value, shape: list[ast.expr],
                  name: str) -> Value:
    """`a.reshape(2, 3)`, `a.reshape((2, -1))`, `np.reshape(a, n)`."""
    loc = lowerer.loc(node)
    if not shape:
        return lowerer.fail(scope, node, UnsupportedCallError, f"{name}() needs a shape")
    if len(shape) == 1 and isinstance(shape[0], (ast.Tuple, ast.List)):
        shape = shape[0].elts
    elif len(shape) == 1:
        packed = lowerer.lower_expr(scope, shape[0])
        return scope.emit("array_reshape", [array, packed], loc, {"packed_shape": True})
    dims = [lowerer.lower_expr(scope, d) for d in shape]
    return scope.emit("array_reshape", [array, *dims], loc)


ARRAY_METHODS = ("reshape", *REDUCTION_METHODS)
"""The array methods compiled code knows: `x.reshape(...)` and the reductions."""


def lower_method(lowerer, scope: Scope, node: ast.Call) -> Value:
    """`<array>.reshape(...)`, or a reduction `<array>.sum(axis)` (reductions.py)."""
    if node.func.attr in REDUCTION_METHODS:
        return lower_reduction_method(lowerer, scope, node)
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return lowerer.fail(scope, node, UnsupportedCallError,
                            "reshape() takes only the shape, by position, here",
                            "write a.reshape((n, m)) or a.reshape(n, m)")
    array = lowerer.lower_expr(scope, node.func.value)
    return lower_reshape(lowerer, scope, node, array, node.args, "reshape")


def lower_numpy_view(lowerer, scope: Scope, node: ast.Call, which: str, name: str) -> Value:
    """`np.transpose(a)` and `np.reshape(a, shape)`."""
    args = list(node.args)
    for k in node.keywords:
        if which == "reshape" and k.arg in ("shape", "newshape") and len(args) == 1:
            args.append(k.value)
        else:
            return lowerer.fail(scope, node, UnsupportedCallError,
                                f"{name}() takes its arguments by position here"
                                + (" (axes= is not supported yet)" if which == "transpose" else ""))
    expected = 1 if which == "transpose" else 2
    if len(args) != expected or any(isinstance(a, ast.Starred) for a in args):
        what = "np.transpose(a) with axes is not supported yet" if which == "transpose" \
            and len(args) > 1 else f"{name}() takes {expected} argument(s)"
        return lowerer.fail(scope, node, UnsupportedCallError, what)
    array = lowerer.lower_expr(scope, args[0])
    if which == "transpose":
        return scope.emit("array_transpose", [array], lowerer.loc(node))
    return lower_reshape(lowerer, scope, node, array, [args[1]], name)


def numpy_view_function(obj: object) -> str | None:
    """'transpose' or 'reshape' for np.transpose / np.reshape, else None."""
    import sys

    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    if obj is numpy.transpose:
        return "transpose"
    if obj is numpy.reshape:
        return "reshape"
    return None
