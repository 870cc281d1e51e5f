"""Syntactic facts about code that lowering needs before it lowers that code.

- `assigned_names`: the names a piece of code binds, in source order, without
  looking into nested function or class bodies (their names are bound, their
  bodies are another scope). A loop carries exactly the names its body binds
  that exist before it.
- `always_exits`: whether a block always leaves by `return`, `break` or
  `continue`; the statements after an `if` whose one branch always exits are
  lowered into the other branch, so they need no exit flag.
- `may_break` / `may_return`: whether a loop body can leave its loop early,
  which decides the exit flags the loop carries.
- `is_boolean`, `constant_index`: an expression that is a bool by its form, a
  literal integer index.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                  ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def walk_scope(node: ast.AST) -> Iterator[ast.AST]:
    """`node` and its descendants in source order, not entering nested scopes' bodies."""
    yield node
    if isinstance(node, _NESTED_SCOPES):
        return
    for child in ast.iter_child_nodes(node):
        yield from walk_scope(child)


def assigned_names(nodes: list[ast.AST]) -> list[str]:
    """The names bound by `nodes` (assignments, loop targets, imports, defs ...)."""
    names: dict[str, None] = {}
    for node in nodes:
        for sub in walk_scope(node):
            for name in _bound_by(sub):
                names[name] = None
    return list(names)


def _bound_by(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    return []


def child_blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested directly in a compound statement."""
    blocks = [getattr(stmt, field) for field in ("body", "orelse", "finalbody")
              if isinstance(getattr(stmt, field, None), list)]
    blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
    blocks += [case.body for case in getattr(stmt, "cases", [])]
    return blocks


def always_exits(stmts: list[ast.stmt]) -> bool:
    """Whether running `stmts` always ends in a return, break or continue."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Return, ast.Break, ast.Continue)):
            return True
        if isinstance(stmt, ast.If) and always_exits(stmt.body) and always_exits(stmt.orelse):
            return True
    return False


def may_break(stmts: list[ast.stmt]) -> bool:
    """Whether `stmts` (a loop body) contain a `break` of that loop."""
    for stmt in stmts:
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, _NESTED_SCOPES):
            continue
        # a nested loop's own body breaks out of the nested loop; its `else` does not
        blocks = [stmt.orelse] if isinstance(stmt, _LOOPS) else child_blocks(stmt)
        if any(may_break(block) for block in blocks):
            return True
    return False


def may_return(stmts: list[ast.stmt]) -> bool:
    """Whether `stmts` contain a `return` of the function being compiled."""
    return any(isinstance(sub, ast.Return) for stmt in stmts for sub in walk_scope(stmt))


def is_boolean(node: ast.expr) -> bool:
    """Whether an expression's value is a bool by its form alone."""
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp)
                                         and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):
        return all(is_boolean(value) for value in node.values)
    if isinstance(node, ast.IfExp):
        return is_boolean(node.body) and is_boolean(node.orelse)
    return False


def constant_index(node: ast.expr) -> int | None:
    """The value of a literal integer index (`0`, `-1`), or None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return sign * node.value
    return None
