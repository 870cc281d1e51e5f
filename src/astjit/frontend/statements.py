"""Lowering statement lists: assignments, `if`, `return`, and the exit-flag discipline.

A `return`, `break` or `continue` ends its path: it sets a flag (`$returned`, the
loop's `$break#n` / `$continue#n`; `return` also fills the `$result` slot) and
marks the scope dead. Flags are compile-time bools until paths with different
values join; from then on they are Values, and `lower_block` runs the remaining
statements inside `if not (flag or ...)` (`guard`). When one branch of an `if`
always exits, the statements after the `if` are lowered into the other branch
instead, which needs no flag at all (`lower_if`).

Assignment to an element, `x[i] = v` / `x[i, j] = v`, is an `array_set` node,
evaluated as Python does: the value, then `x`, then the indices. `x[i] += v`
evaluates `x` and `i` once, reads `array_get`, evaluates `v`, then writes back.
An element of a value known to be a tuple cannot be assigned.

Unsupported statements are reported; their nested blocks are still lowered into
a throwaway region, to report the problems inside them too, and the names they
bind get placeholders so that later reads do not add spurious errors.
"""
from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import TypingError, UnsupportedSyntaxError
from ..ir.core import Value
from .analysis import always_exits, assigned_names, child_blocks
from .calls import CallLowerer, FunctionTable
from .lower import BINARY_OPS
from .scope import RESULT, RETURNED, RegionGroup, Scope, branch
from .source import FunctionSource
from .syntax import describe
from .views import has_slice, lower_view

Rest = Callable[[Scope], None]
"""Lowers what remains of a block into the scope it is given."""

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class LoopFrame:
    """The flags `break` and `continue` set inside the innermost loop (None outside loops)."""

    break_flag: str | None
    continue_flag: str | None


class StatementLowerer(CallLowerer):
    """Expressions and calls, plus statements and the guards that exits need."""

    def __init__(self, source: FunctionSource, functions: FunctionTable):
        super().__init__(source, functions)
        self.frames = [LoopFrame(None, None)]
        self.serial = itertools.count(1)
        self.def_loc = self.loc(source.tree)

    def new_frame(self) -> LoopFrame:
        n = next(self.serial)
        return LoopFrame(f"$break#{n}", f"$continue#{n}")

    def exit_flags(self) -> list[str]:
        """The flags that end the current block's paths."""
        frame = self.frames[-1]
        return [RETURNED] + [flag for flag in (frame.break_flag, frame.continue_flag) if flag]

    # ---- blocks and guards ------------------------------------------------------------

    def lower_block(self, scope: Scope, stmts: list[ast.stmt], tail: Rest | None = None) -> None:
        """Lower `stmts`, then `tail` (the implicit `return None` of a function body)."""
        for k, stmt in enumerate(stmts):
            rest = lambda s, k=k: self.lower_block(s, stmts[k:], tail)
            if not self.proceed(scope, rest, self.loc(stmt)):
                return
            if not isinstance(stmt, ast.If):
                self.lower_stmt(scope, stmt)
            elif self.lower_if(scope, stmt, stmts[k + 1:], tail):
                return
        if tail is not None and self.proceed(scope, tail, self.def_loc):
            tail(scope)

    def proceed(self, scope: Scope, rest: Rest, loc) -> bool:
        """Whether the caller goes on lowering here; if not, `rest` is unreachable or guarded."""
        if scope.dead:
            return False
        flags = self.exit_flags()
        if not any(isinstance(scope.lookup(flag), Value) for flag in flags):
            return True
        self.guard(scope, flags, rest, loc)
        return False

    def none_set(self, scope: Scope, flags: list[str], loc) -> Value | None:
        """`not (f1 or f2 ...)` over the flags not known at compile time; None if all are known."""
        raised = [entry for flag in flags if isinstance(entry := scope.lookup(flag), Value)]
        if not raised:
            return None
        exited = raised[0]
        for flag in raised[1:]:
            exited = scope.emit("bitor", [exited, flag], loc)
        return scope.emit("not", [exited], loc)

    def guard(self, scope: Scope, flags: list[str], rest: Rest, loc, exits: bool = True) -> None:
        """Lower `rest` to run only where none of `flags` is set.

        `exits`: whether a path with a flag set leaves the current block (else it
        goes on after it, as after a loop left by `break`).
        """
        go_on = self.none_set(scope, flags, loc)
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

    def lower_if(self, scope: Scope, stmt: ast.If, rest: list[ast.stmt], tail: Rest | None) -> bool:
        """Lower an `if`; True when `rest` and `tail` went into its branch that does not always exit."""
        then_block, else_block = (stmt.body, None), (stmt.orelse, None)
        then_exits, else_exits = always_exits(stmt.body), always_exits(stmt.orelse)
        absorb = bool(rest or tail) and then_exits != else_exits
        if absorb and then_exits:
            else_block = (stmt.orelse + rest, tail)
        elif absorb:
            then_block = (stmt.body + rest, tail)
        cond = self.condition(scope, stmt.test)
        branch(scope, cond, lambda s: self.lower_block(s, *then_block),
               lambda s: self.lower_block(s, *else_block), self.loc(stmt))
        return absorb

    # ---- simple statements ------------------------------------------------------------

    def lower_stmt(self, scope: Scope, stmt: ast.stmt) -> None:
        method = getattr(self, f"stmt_{type(stmt).__name__}", None)
        if method is None:
            self.unsupported_stmt(scope, stmt)
        else:
            method(scope, stmt)

    def stmt_If(self, scope: Scope, stmt: ast.If) -> None:
        self.lower_if(scope, stmt, [], None)

    def stmt_Pass(self, scope: Scope, stmt: ast.Pass) -> None:
        pass

    def stmt_Expr(self, scope: Scope, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # a docstring, or a string used as a comment
        self.lower_expr(scope, stmt.value)

    def stmt_Return(self, scope: Scope, stmt: ast.Return) -> None:
        if stmt.value is None:
            self.set_return(scope, scope.const(None, self.loc(stmt)))
        else:
            self.set_return(scope, self.lower_expr(scope, stmt.value))

    def set_return(self, scope: Scope, value: Value) -> None:
        scope.assign(RESULT, value)
        scope.assign(RETURNED, True)
        scope.dead = True

    def stmt_Assign(self, scope: Scope, stmt: ast.Assign) -> None:
        shape = stmt.targets[0] if len(stmt.targets) == 1 else None
        value = self.lower_rhs(scope, stmt.value, shape)
        for target in stmt.targets:
            self.assign_target(scope, target, value)

    def stmt_AnnAssign(self, scope: Scope, stmt: ast.AnnAssign) -> None:
        if stmt.value is not None:
            self.assign_target(scope, stmt.target, self.lower_rhs(scope, stmt.value, stmt.target))

    def stmt_AugAssign(self, scope: Scope, stmt: ast.AugAssign) -> None:
        target = stmt.target
        if isinstance(target, ast.Subscript):
            self.augment_element(scope, stmt)
            return
        if not isinstance(target, ast.Name):
            self.bad_target(target)
            return
        current = self.expr_Name(scope, target)
        scope.assign(target.id, self.augmented(scope, stmt, current))

    def augmented(self, scope: Scope, stmt: ast.AugAssign, current: Value) -> Value:
        """`current <op>= value`: an `augassign` of current, value and `current <op> value`,
        which type inference makes NumPy's in-place update for an array and Python's
        rebinding for anything else (ir/ops/views.py)."""
        value = self.lower_expr(scope, stmt.value)
        op = BINARY_OPS[type(stmt.op)]
        loc = self.loc(stmt)
        new = scope.emit(op, [current, value], loc)
        return scope.emit("augassign", [current, value, new], loc, {"op": op})

    def augment_element(self, scope: Scope, stmt: ast.AugAssign) -> None:
        """`x[i] += v`: x and i evaluated once, then read x[i], evaluate v, write back.
        `x[a:b] += v`: the view x[a:b] made once and updated in place (`augassign`): `view
        + v` computed into a new array (so an overlapping v reads the old values, as
        NumPy's does), then copied into the view."""
        target = stmt.target
        loc = self.loc(target)
        array = self.lower_expr(scope, target.value)
        if self.unsupported_index(scope, target) or array in scope.sizes:
            if array in scope.sizes:
                self.bad_target(target)
            self.lower_expr(scope, stmt.value)  # for the problems it may have
            return
        if has_slice(target):  # in place in the view, as NumPy's x[a:b].__iadd__(v)
            self.augmented(scope, stmt, lower_view(self, scope, target, array))
            return
        indices = self.lower_indices(scope, target)
        current = scope.emit("array_get", [array, *indices], loc)
        scope.emit("array_set", [array, self.augmented(scope, stmt, current), *indices], loc)

    def store_element(self, scope: Scope, target: ast.Subscript, value: Value) -> None:
        """`x[i] = value`, `x[i, j] = value`: an array_set (x, then the indices, evaluated
        after the value, as Python does)."""
        array = self.lower_expr(scope, target.value)
        if self.unsupported_index(scope, target):
            return
        if array in scope.sizes:  # a tuple display or constant
            self.bad_target(target)
            return
        if has_slice(target):  # y[1:3] = v: copy into the view
            view = lower_view(self, scope, target, array)
            scope.emit("array_assign", [view, value], self.loc(target))
            return
        indices = self.lower_indices(scope, target)
        scope.emit("array_set", [array, value, *indices], self.loc(target))

    # ---- assignment targets -----------------------------------------------------------

    def lower_rhs(self, scope: Scope, expr: ast.expr, target: ast.expr | None) -> Value | list:
        """The assigned value; a tuple display unpacked into a tuple target stays a list of values."""
        if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(expr, ast.Tuple)
                and len(target.elts) == len(expr.elts)
                and not any(isinstance(e, ast.Starred) for e in target.elts + expr.elts)):
            return [self.lower_rhs(scope, e, t) for e, t in zip(expr.elts, target.elts)]
        return self.lower_expr(scope, expr)

    def assign_target(self, scope: Scope, target: ast.expr, value: Value | list) -> None:
        if isinstance(target, ast.Name):
            scope.assign(target.id, value)
        elif isinstance(target, ast.Subscript):
            self.store_element(scope, target, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(scope, target, value)
        else:
            self.bad_target(target)

    def unpack(self, scope: Scope, target: ast.Tuple | ast.List, value: Value | list) -> None:
        """`a, (b, c) = value`: element by element, as Python assigns left to right."""
        starred = [t for t in target.elts if isinstance(t, ast.Starred)]
        if starred:
            self.unsupported(scope, starred[0])
            for name in assigned_names([target]):
                scope.assign(name, scope.emit("undef", [], self.loc(target)))
            return
        if isinstance(value, list):
            for t, v in zip(target.elts, value):
                self.assign_target(scope, t, v)
            return
        loc, count = self.loc(target), len(target.elts)
        size = scope.sizes.get(value)
        if size is None:  # too few elements fail type inference (getitem); too many raise here
            too_many = scope.emit("ne", [scope.emit("len", [value], loc), scope.const(count, loc)], loc)
            scope.emit("raise_if", [too_many], loc,
                       {"exc": "ValueError", "message": f"too many values to unpack (expected {count})"})
        elif size != count:
            self.report(TypingError, f"cannot unpack a tuple of {size} values into {count} targets",
                        target)
        for index, t in enumerate(target.elts):
            self.assign_target(scope, t, scope.emit("getitem", [value], loc, {"index": index}))

    def bad_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Subscript):
            self.report(UnsupportedSyntaxError,
                        f"assignment to an element of a tuple ({ast.unparse(target)} = ...) "
                        "is not supported", target,
                        "tuples cannot be changed in place; build a new tuple")
            return
        self.report(UnsupportedSyntaxError, f"assignment to '{ast.unparse(target)}' is not supported",
                    target, "assign to a variable name or to an array element (x[i] = ...)")

    # ---- unsupported statements ---------------------------------------------------------

    def unsupported_stmt(self, scope: Scope, stmt: ast.stmt, what: str = "",
                         hint: str = "") -> None:
        """Report `stmt` as outside the subset, with `what` (default: its description)."""
        if not what:
            what, hint = describe(stmt)
            what += " is not supported"
        self.report(UnsupportedSyntaxError, what, stmt, hint)
        self.skip_stmt(scope, stmt)

    def skip_stmt(self, scope: Scope, stmt: ast.stmt) -> None:
        """Stub the names `stmt` binds; lower its blocks only to find their problems."""
        for name in assigned_names([stmt]):
            scope.assign(name, scope.emit("undef", [], self.loc(stmt)))
        if not isinstance(stmt, _DEFINITIONS):
            self.lower_scratch(scope, [s for block in child_blocks(stmt) for s in block])

    def lower_scratch(self, scope: Scope, stmts: list[ast.stmt]) -> None:
        """Lower `stmts` into a region no node uses, only for the problems they report."""
        if not stmts:
            return
        group = RegionGroup(scope, ["scratch"], self.loc(stmts[0]))
        self.frames.append(self.new_frame())
        self.lower_block(group.scopes[0], stmts)
        self.frames.pop()
