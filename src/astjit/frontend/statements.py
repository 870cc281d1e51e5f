"""Lowering simple statements: expressions, `return`, assignments, `pass`, `if`.

`x <op>= v` of a name is an `augassign` node (ir/ops/views.py: NumPy's in-place
update for an array, Python's rebinding otherwise). `x[i] += v` evaluates `x`
and `i` once, reads `array_get`, evaluates `v`, then writes back with
`array_set`; `x[a:b] += v` updates the view `x[a:b]` in place.

Each rule is a function `(state, scope, stmt) -> None`, listed in `STATEMENTS` by
node type; blocks, `if` and the exit flags are blocks.py's, loops loops.py's.
"""
from __future__ import annotations

import ast

from ..ir.core import Value
from .blocks import lower_if, set_return
from .operators import BINARY_OPS
from .scope import Scope
from .state import Lowering, StmtRule
from .targets import assign_target, bad_target, lower_rhs
from .views import has_extended, has_slice, index_spec, lower_indices, unsupported_index


def lower_if_stmt(state: Lowering, scope: Scope, stmt: ast.If) -> None:
    lower_if(state, scope, stmt, [], None)


def lower_pass(state: Lowering, scope: Scope, stmt: ast.Pass) -> None:
    pass


def lower_expr_stmt(state: Lowering, scope: Scope, stmt: ast.Expr) -> None:
    if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return  # a docstring, or a string used as a comment
    state.lower_expr(scope, stmt.value)


def lower_return(state: Lowering, scope: Scope, stmt: ast.Return) -> None:
    if stmt.value is None:
        set_return(scope, scope.const(None, state.loc(stmt)))
    else:
        set_return(scope, state.lower_expr(scope, stmt.value))


def lower_assign(state: Lowering, scope: Scope, stmt: ast.Assign) -> None:
    shape = stmt.targets[0] if len(stmt.targets) == 1 else None
    value = lower_rhs(state, scope, stmt.value, shape)
    for target in stmt.targets:
        assign_target(state, scope, target, value)


def lower_annassign(state: Lowering, scope: Scope, stmt: ast.AnnAssign) -> None:
    if stmt.value is not None:
        assign_target(state, scope, stmt.target,
                      lower_rhs(state, scope, stmt.value, stmt.target))


def lower_augassign(state: Lowering, scope: Scope, stmt: ast.AugAssign) -> None:
    target = stmt.target
    if isinstance(target, ast.Subscript):
        _augment_element(state, scope, stmt)
        return
    if not isinstance(target, ast.Name):
        bad_target(state, target)
        return
    current = state.lower_expr(scope, target)
    scope.assign(target.id, _augmented(state, scope, stmt, current))


def _augmented(state: Lowering, scope: Scope, stmt: ast.AugAssign, current: Value) -> Value:
    """`current <op>= value`: an `augassign` of current, value and `current <op> value`,
    which type inference makes NumPy's in-place update for an array and Python's
    rebinding for anything else (ir/ops/views.py)."""
    value = state.lower_expr(scope, stmt.value)
    op = BINARY_OPS[type(stmt.op)]
    loc = state.loc(stmt)
    new = scope.emit(op, [current, value], loc)
    return scope.emit("augassign", [current, value, new], loc, {"op": op})


def _augment_element(state: Lowering, scope: Scope, stmt: ast.AugAssign) -> None:
    """`x[i] += v`: x and i evaluated once, then read x[i], evaluate v, write back.
    `x[a:b] += v`: the view x[a:b] made once and updated in place (`augassign`): `view
    + v` computed into a new array (so an overlapping v reads the old values, as
    NumPy's does), then copied into the view."""
    target = stmt.target
    loc = state.loc(target)
    array = state.lower_expr(scope, target.value)
    if unsupported_index(state, target) or array in scope.sizes:
        if array in scope.sizes:
            bad_target(state, target)
        state.lower_expr(scope, stmt.value)  # for the problems it may have
        return
    if has_slice(target) or has_extended(state, target):
        # in place in the view, as NumPy's x[a:b].__iadd__(v); for an advanced index
        # (a copy) the new values are written back, as Python's x.__setitem__ does
        spec, parts = index_spec(state, scope, target)
        op = "array_index" if "e" in spec else "array_view"
        view = scope.emit(op, [array, *parts], loc, {"spec": spec})
        new = _augmented(state, scope, stmt, view)
        scope.emit("array_index_set", [array, new, *parts], loc, {"spec": spec, "mode": "writeback"})
        return
    indices = lower_indices(state, scope, target)
    current = scope.emit("array_get", [array, *indices], loc)
    scope.emit("array_set", [array, _augmented(state, scope, stmt, current), *indices], loc)


STATEMENTS: dict[type[ast.stmt], StmtRule] = {
    ast.If: lower_if_stmt,
    ast.Pass: lower_pass,
    ast.Expr: lower_expr_stmt,
    ast.Return: lower_return,
    ast.Assign: lower_assign,
    ast.AnnAssign: lower_annassign,
    ast.AugAssign: lower_augassign,
}
