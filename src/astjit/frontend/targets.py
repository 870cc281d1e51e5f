"""Assigning to targets: names, elements (`x[i] = v`), views (`y[1:3] = v`), unpacking.

Assignment to an element, `x[i] = v` / `x[i, j] = v`, is an `array_set` node,
evaluated as Python does: the value, then `x`, then the indices; to a slice (or
with `...`), an `array_index_set`, which type inference makes an `array_assign`
into the view, or a scatter for an integer or bool array index (`x[idx] = v` is
an `array_set` until then: ir/ops/advanced_index.py). An element of a value known to be a tuple
cannot be assigned. `a, b = t` assigns element by element, left to right; a
tuple display unpacked into a tuple target of its length needs no tuple at all.
`a, *rest = t` binds `rest` to the list of the remaining elements (a `tuple_slice`).
"""
from __future__ import annotations

import ast

from ..errors import TypingError, UnsupportedSyntaxError
from ..ir.core import Value
from ..ir.ops.containers import LIST
from .function_values import FUNCTION_VALUES
from .scope import Scope
from .state import Lowering
from .views import has_extended, has_slice, index_spec, lower_indices, unsupported_index


def lower_rhs(state: Lowering, scope: Scope, expr: ast.expr,
              target: ast.expr | None) -> Value | list:
    """The assigned value; a tuple display unpacked into a tuple target stays a list of values."""
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(expr, ast.Tuple)
            and len(target.elts) == len(expr.elts)
            and not any(isinstance(e, ast.Starred) for e in target.elts + expr.elts)):
        return [lower_rhs(state, scope, e, t) for e, t in zip(expr.elts, target.elts)]
    return state.lower_operand(scope, expr)  # `f = lambda v: ...` binds a function value


def assign_target(state: Lowering, scope: Scope, target: ast.expr, value: Value | list) -> None:
    if isinstance(target, ast.Name):
        scope.assign(target.id, value)
    elif isinstance(value, FUNCTION_VALUES):
        state.report(UnsupportedSyntaxError, f"storing the function '{value.__name__}' in "
                     f"'{ast.unparse(target)}' is not supported", target,
                     "assign a function only to a variable name")
    elif isinstance(target, ast.Subscript):
        _store_element(state, scope, target, value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        _unpack(state, scope, target, value)
    else:
        bad_target(state, target)


def _store_element(state: Lowering, scope: Scope, target: ast.Subscript, value: Value) -> None:
    """`x[i] = value`, `x[i, j] = value`: an array_set (x, then the indices, evaluated
    after the value, as Python does)."""
    array = state.lower_expr(scope, target.value)
    if unsupported_index(state, target):
        return
    if array in scope.sizes:  # a tuple display or constant
        bad_target(state, target)
        return
    if has_slice(target) or has_extended(state, target):  # y[1:3] = v: into the view
        spec, parts = index_spec(state, scope, target)
        scope.emit("array_index_set", [array, value, *parts], state.loc(target),
                   {"spec": spec, "mode": "set"})
        return
    indices = lower_indices(state, scope, target)
    scope.emit("array_set", [array, value, *indices], state.loc(target))


def _unpack(state: Lowering, scope: Scope, target: ast.Tuple | ast.List,
            value: Value | list) -> None:
    """`a, (b, c) = value`: element by element, as Python assigns left to right."""
    if any(isinstance(t, ast.Starred) for t in target.elts):  # one at most: Python's syntax
        _unpack_starred(state, scope, target, value)
        return
    if isinstance(value, list):
        for t, v in zip(target.elts, value):
            assign_target(state, scope, t, v)
        return
    loc, count = state.loc(target), len(target.elts)
    size = scope.sizes.get(value)
    if size is None:  # too few elements fail type inference (getitem); too many raise here
        too_many = scope.emit("ne", [scope.emit("len", [value], loc), scope.const(count, loc)], loc)
        scope.emit("raise_if", [too_many], loc,
                   {"exc": "ValueError", "message": f"too many values to unpack (expected {count})"})
    elif size != count:
        state.report(TypingError, f"cannot unpack a tuple of {size} values into {count} targets",
                     target)
    for index, t in enumerate(target.elts):
        assign_target(state, scope, t, scope.emit("getitem", [value], loc, {"index": index}))


def _unpack_starred(state: Lowering, scope: Scope, target: ast.Tuple | ast.List,
                    value: Value | list) -> None:
    """`a, *mid, b = t`: `mid` the list of the elements between (a `tuple_slice`, which type
    inference settles from t's length; too few elements is Python's ValueError, found then)."""
    loc = state.loc(target)
    if isinstance(value, list):
        value = scope.emit("tuple", value, loc)
    star = next(i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred))
    after = len(target.elts) - star - 1
    needed = len(target.elts) - 1
    size = scope.sizes.get(value)
    if size is not None and size < needed:
        state.report(TypingError, f"not enough values to unpack (expected at least {needed}, "
                     f"got {size})", target)
    middle = scope.emit("tuple_slice", [value], loc,
                        {"start": star, "stop": -after if after else None, "needed": needed,
                         "node": LIST})
    if size is not None:
        scope.sizes[middle] = max(size - needed, 0)
    for index, t in enumerate(target.elts):
        if index == star:
            assign_target(state, scope, t.value, middle)
        else:
            where = index if index < star else index - len(target.elts)
            assign_target(state, scope, t, scope.emit("getitem", [value], loc, {"index": where}))


def bad_target(state: Lowering, target: ast.expr) -> None:
    if isinstance(target, ast.Subscript):
        state.report(UnsupportedSyntaxError,
                     f"assignment to an element of a tuple ({ast.unparse(target)} = ...) "
                     "is not supported", target,
                     "tuples cannot be changed in place; build a new tuple")
        return
    if isinstance(target, ast.Attribute):
        state.report(UnsupportedSyntaxError, f"assignment to '{ast.unparse(target)}' is not "
                     f"supported: compiled code does not assign fields", target,
                     "containers are values in compiled code: build a new one (its class "
                     "called with every field, e.g. Params(w, b)) and return it; an array "
                     f"field can be written in place: {ast.unparse(target)}[...] = ...")
        return
    state.report(UnsupportedSyntaxError, f"assignment to '{ast.unparse(target)}' is not supported",
                 target, "assign to a variable name or to an array element (x[i] = ...)")
