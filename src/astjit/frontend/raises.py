"""Lowering `assert` and `raise`: compiled code's own error sites (`raise_if` nodes).

`assert cond, "message"` is `raise_if(not cond)` of AssertionError with the
message; `raise ValueError("message")` (any builtin exception class, called with
constant arguments or not called) is `raise_if(True)` of that class, and ends
its path: the scope is dead, so what follows is not lowered and the branches
that go on do not wait for it (no exit flag: the path never reaches a join).
At run time the message is the one Python's exception would have, with the
source line appended, as for every error compiled code raises (api.error_from_site).
"""
from __future__ import annotations

import ast
import builtins

from ..errors import UnsupportedSyntaxError
from .resolve import LOCAL, static_object
from .scope import Scope
from .source import NOT_FOUND
from .state import Lowering, StmtRule

_RAISE_HINT = ("compiled code raises builtin exceptions (ValueError, RuntimeError, ...) with "
               "constant arguments: raise ValueError(\"x must be positive\")")
_UNKNOWN = object()


def lower_assert(state: Lowering, scope: Scope, stmt: ast.Assert) -> None:
    loc = state.loc(stmt)
    message = "" if stmt.msg is None else _constant_text(state, scope, stmt.msg)
    if message is _UNKNOWN:
        state.report(UnsupportedSyntaxError, "the message of an assert must be a constant",
                     stmt.msg, "write a string literal (f-strings are not supported)")
        message = ""
    failed = scope.emit("not", [state.condition(scope, stmt.test)], loc)
    scope.emit("raise_if", [failed], loc, {"exc": "AssertionError", "message": message})


def lower_raise(state: Lowering, scope: Scope, stmt: ast.Raise) -> None:
    exc = _exception(state, scope, stmt)
    if exc is not None:
        loc = state.loc(stmt)
        scope.emit("raise_if", [scope.const(True, loc)], loc, {"exc": exc[0], "message": exc[1]})
    scope.dead = True


def _exception(state: Lowering, scope: Scope, stmt: ast.Raise) -> tuple[str, str] | None:
    """(class name, message) of the exception `stmt` raises; None (reported) if unsupported."""
    if stmt.exc is None:
        state.report(UnsupportedSyntaxError, "a bare raise is not supported in compiled code",
                     stmt, "there is no exception being handled: " + _RAISE_HINT)
        return None
    call = stmt.exc if isinstance(stmt.exc, ast.Call) else None
    cls = static_object(state, scope, call.func if call else stmt.exc)
    args = [] if call is None else [_constant_text(state, scope, a, repr_=True) for a in call.args]
    cause_ok = stmt.cause is None or isinstance(stmt.cause, ast.Constant) and stmt.cause.value is None
    builtin = cls is not LOCAL and cls is not NOT_FOUND and isinstance(cls, type) \
        and issubclass(cls, Exception) and getattr(builtins, cls.__name__, None) is cls
    if not builtin or _UNKNOWN in args or (call and call.keywords) or not cause_ok:
        what = "raise " + ast.unparse(stmt.exc) + (f" from {ast.unparse(stmt.cause)}"
                                                   if stmt.cause else "")
        state.report(UnsupportedSyntaxError, f"{what} is not supported", stmt, _RAISE_HINT)
        return None
    message = "" if not args else args[0][0] if len(args) == 1 else \
        "(" + ", ".join(r for _, r in args) + ")"
    return cls.__name__, message


def _constant_text(state: Lowering, scope: Scope, node: ast.expr, repr_: bool = False):
    """str() of the constant `node` denotes (and its repr, with `repr_`), else _UNKNOWN."""
    if isinstance(node, ast.Constant):
        value = node.value
    else:
        value = static_object(state, scope, node) if isinstance(node, (ast.Name, ast.Attribute)) \
            else NOT_FOUND
        if value is LOCAL or value is NOT_FOUND or not isinstance(value, (str, int, float, bool)):
            return _UNKNOWN
    return (str(value), repr(value)) if repr_ else str(value)


STATEMENTS: dict[type[ast.stmt], StmtRule] = {ast.Assert: lower_assert, ast.Raise: lower_raise}
