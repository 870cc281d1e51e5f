"""Delta debugging of a failing program: the smallest module text that still fails the
same way, found greedily over its syntax tree.

Edits, biggest first at each node: delete a helper function, delete a statement (an
emptied block gets `pass`), replace a compound statement by one of its blocks, replace an
expression by one of its subexpressions. An edit is kept when the edited program still
fails with the same signature (`fuzz.campaign.signature`: the verdict and both outcomes'
kinds), so a wrong value does not shrink into an unrelated exception. The entry `f`,
`make_args` and the module's settings are never edited.
"""
from __future__ import annotations

import ast
import copy
import time
from collections.abc import Callable, Iterator

KEPT = {"f", "make_args"}
BLOCKS = ("body", "orelse")


def shrink(source: str, still_fails: Callable[[str], bool], seconds: float) -> str:
    """The smallest variant of `source` found within `seconds` for which `still_fails` holds."""
    deadline = time.monotonic() + seconds
    tree, seen = ast.parse(source), {source}
    start, progress = 0, False
    while time.monotonic() < deadline:
        for number, candidate in variants(tree, start):
            text = ast.unparse(candidate)
            if text in seen or not compiles(text):
                continue
            seen.add(text)
            if still_fails(text):
                tree, start, progress = candidate, number, True
                break
            if time.monotonic() >= deadline:
                break
        else:
            if not progress:
                break
            start, progress = 0, False
    return ast.unparse(tree) + "\n"


def compiles(text: str) -> bool:
    try:
        compile(text, "<candidate>", "exec")
    except SyntaxError:  # `break` outside a loop after a loop was replaced by its body
        return False
    return True


def editable(tree: ast.Module) -> set[int]:
    """The numbers (ast.walk order) of the nodes of the functions but make_args."""
    numbers = {id(node): i for i, node in enumerate(ast.walk(tree))}
    return {numbers[id(node)] for top in tree.body
            if isinstance(top, ast.FunctionDef) and top.name != "make_args" for node in ast.walk(top)}


def variants(tree: ast.Module, start: int) -> Iterator[tuple[int, ast.Module]]:
    """(node number, edited copy of `tree`) for every edit at nodes numbered `start` on."""
    allowed = editable(tree)
    yield from deletions_of_functions(tree)
    for number, node in enumerate(ast.walk(tree)):
        if number < start or number not in allowed:
            continue
        for edit in edits(node):
            edited = copy.deepcopy(tree)
            target = list(ast.walk(edited))[number]
            if edit(target, parents(edited)):
                yield number, edited


def deletions_of_functions(tree: ast.Module) -> Iterator[tuple[int, ast.Module]]:
    for i, top in enumerate(tree.body):
        if isinstance(top, ast.FunctionDef) and top.name not in KEPT:
            edited = copy.deepcopy(tree)
            del edited.body[i]
            yield 0, edited


def parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    """id(node) -> (parent, field, index in the field's list or None)."""
    found = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, list):
                found.update({id(child): (parent, name, i) for i, child in enumerate(value)
                              if isinstance(child, ast.AST)})
            elif isinstance(value, ast.AST):
                found[id(value)] = (parent, name, None)
    return found


def edits(node: ast.AST) -> list[Callable]:
    """Edits of `node` as functions (its copy, the copy's parents) -> whether they applied."""
    found = []
    for name in BLOCKS:
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            for i in range(len(block)):
                found.append(lambda target, up, name=name, i=i: delete_statement(target, name, i))
                if any(isinstance(getattr(block[i], b, None), list) for b in BLOCKS):
                    for inner in BLOCKS:
                        found.append(lambda target, up, name=name, i=i, inner=inner:
                                     inline(target, name, i, inner))
    if isinstance(node, ast.expr):
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        for k in range(len(children)):
            found.append(lambda target, up, k=k: replace_by_child(target, up, k))
    return found


def delete_statement(node: ast.AST, name: str, i: int) -> bool:
    block = getattr(node, name)
    last_return = isinstance(block[i], ast.Return) and i == len(block) - 1
    if name == "body" and isinstance(node, ast.FunctionDef) and last_return:
        return False  # a function keeps its final return (else it returns None: another failure)
    del block[i]
    if not block and name == "body":
        block.append(ast.Pass())
    return True


def inline(node: ast.AST, name: str, i: int, inner: str) -> bool:
    block = getattr(node, name)
    replacement = getattr(block[i], inner, None)
    if not replacement or not isinstance(replacement, list) or not isinstance(replacement[0], ast.stmt):
        return False
    block[i:i + 1] = replacement
    return True


def replace_by_child(node: ast.expr, up: dict, k: int) -> bool:
    if id(node) not in up:
        return False
    parent, field, index = up[id(node)]
    if isinstance(parent, (ast.Assign, ast.AugAssign, ast.For)) and field in ("targets", "target"):
        return False
    child = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)][k]
    if index is None:
        setattr(parent, field, child)
    else:
        getattr(parent, field)[index] = child
    return True
