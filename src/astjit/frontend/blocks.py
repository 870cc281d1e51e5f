"""Lowering statement lists: the exit-flag discipline, `if`, and unsupported statements.

A `return`, `break` or `continue` ends its path: it sets a flag (`$returned`, the
loop's `$break#n` / `$continue#n`; `return` also fills the `$result` slot) and
marks the scope dead. Flags are compile-time bools until paths with different
values join; from then on they are Values, and `lower_block` runs the remaining
statements inside `if not (flag or ...)` (`guard`). When one branch of an `if`
always exits, the statements after the `if` are lowered into the other branch
instead, which needs no flag at all (`lower_if`).

Each statement is lowered by the rule for its node type (`Rules.statements`).
One without a rule is reported; its nested blocks are still lowered into a
throwaway region, to report the problems inside them too, and the names it
binds get placeholders so that later reads do not add spurious errors.
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from ..errors import UnsupportedSyntaxError
from ..ir.core import Value
from .analysis import always_exits, assigned_names, child_blocks
from .scope import RESULT, RETURNED, RegionGroup, Scope, branch
from .state import Lowering
from .syntax import describe

Rest = Callable[[Scope], None]
"""Lowers what remains of a block into the scope it is given."""

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def lower_block(state: Lowering, scope: Scope, stmts: list[ast.stmt],
                tail: Rest | None = None) -> None:
    """Lower `stmts`, then `tail` (the implicit `return None` of a function body)."""
    for k, stmt in enumerate(stmts):
        rest = lambda s, k=k: lower_block(state, s, stmts[k:], tail)
        if not _proceed(state, scope, rest, state.loc(stmt)):
            return
        if not isinstance(stmt, ast.If):
            _lower_stmt(state, scope, stmt)
        elif lower_if(state, scope, stmt, stmts[k + 1:], tail):
            return
    if tail is not None and _proceed(state, scope, tail, state.def_loc):
        tail(scope)


def _lower_stmt(state: Lowering, scope: Scope, stmt: ast.stmt) -> None:
    rule = state.rules.statements.get(type(stmt))
    if rule is None:
        unsupported_stmt(state, scope, stmt)
    else:
        rule(state, scope, stmt)


def _proceed(state: Lowering, scope: Scope, rest: Rest, loc) -> bool:
    """Whether the caller goes on lowering here; if not, `rest` is unreachable or guarded."""
    if scope.dead:
        return False
    flags = state.exit_flags()
    if not any(isinstance(scope.lookup(flag), Value) for flag in flags):
        return True
    guard(scope, flags, rest, loc)
    return False


def none_set(scope: Scope, flags: list[str], loc) -> Value | None:
    """`not (f1 or f2 ...)` over the flags not known at compile time; None if all are known."""
    raised = [entry for flag in flags if isinstance(entry := scope.lookup(flag), Value)]
    if not raised:
        return None
    exited = raised[0]
    for flag in raised[1:]:
        exited = scope.emit("bitor", [exited, flag], loc)
    return scope.emit("not", [exited], loc)


def guard(scope: Scope, flags: list[str], rest: Rest, loc, exits: bool = True) -> None:
    """Lower `rest` to run only where none of `flags` is set.

    `exits`: whether a path with a flag set leaves the current block (else it
    goes on after it, as after a loop left by `break`).
    """
    go_on = none_set(scope, flags, loc)
    if go_on is None:
        rest(scope)
        return

    def unflagged(s: Scope) -> None:
        for flag in flags:
            s.know(flag, False)
        rest(s)

    def flagged(s: Scope) -> None:
        s.dead = exits
    branch(scope, go_on, unflagged, flagged, loc)


def lower_if(state: Lowering, scope: Scope, stmt: ast.If, rest: list[ast.stmt],
             tail: Rest | None) -> bool:
    """Lower an `if`; True when `rest` and `tail` went into its branch that does not always exit."""
    then_block, else_block = (stmt.body, None), (stmt.orelse, None)
    then_exits, else_exits = always_exits(stmt.body), always_exits(stmt.orelse)
    absorb = bool(rest or tail) and then_exits != else_exits
    if absorb and then_exits:
        else_block = (stmt.orelse + rest, tail)
    elif absorb:
        then_block = (stmt.body + rest, tail)
    cond = state.condition(scope, stmt.test)
    branch(scope, cond, lambda s: lower_block(state, s, *then_block),
           lambda s: lower_block(state, s, *else_block), state.loc(stmt))
    return absorb


def set_return(scope: Scope, value: Value) -> None:
    scope.assign(RESULT, value)
    scope.assign(RETURNED, True)
    scope.dead = True


# ---- unsupported statements ---------------------------------------------------------

def unsupported_stmt(state: Lowering, scope: Scope, stmt: ast.stmt, what: str = "",
                     hint: str = "") -> None:
    """Report `stmt` as outside the subset, with `what` (default: its description)."""
    if not what:
        what, hint = describe(stmt)
        what += " is not supported"
    state.report(UnsupportedSyntaxError, what, stmt, hint)
    skip_stmt(state, scope, stmt)


def skip_stmt(state: Lowering, scope: Scope, stmt: ast.stmt) -> None:
    """Stub the names `stmt` binds; lower its blocks only to find their problems."""
    for name in assigned_names([stmt]):
        scope.assign(name, scope.emit("undef", [], state.loc(stmt)))
    if not isinstance(stmt, _DEFINITIONS):
        _lower_scratch(state, scope, [s for block in child_blocks(stmt) for s in block])


def _lower_scratch(state: Lowering, scope: Scope, stmts: list[ast.stmt]) -> None:
    """Lower `stmts` into a region no node uses, only for the problems they report."""
    if not stmts:
        return
    group = RegionGroup(scope, ["scratch"], state.loc(stmts[0]))
    state.frames.append(state.new_frame())
    lower_block(state, group.scopes[0], stmts)
    state.frames.pop()
