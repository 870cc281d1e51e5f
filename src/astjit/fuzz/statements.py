"""Random function bodies: assignments, nested if / while / for with break, continue and
early returns, array writes, container unpacking.

Every program ends: a `while` runs under a fresh counter (`while g < 12 and cond:`, the
counter stepped first thing in the body, so `continue` cannot skip it) or walks an array
(`while k < len(a):`, stepped first too; arrays hold at most 8 elements), a `for` runs over a
short range, an array or a list, and recursion is bounded by its helper's guard. A name
keeps one type for the whole function (astjit joins a variable's int and float
assignments to float, a documented difference), and a name bound inside a block is not read
after it (CPython would raise UnboundLocalError on the paths that skip it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from astjit.fuzz.expressions import (
    BOOL,
    ELEM,
    FARR,
    FLOAT,
    IARR,
    IELEM,
    INT,
    LST,
    PAIR,
    TUP,
    Expressions,
    Scope,
)

LOOP_LIMIT = 12
LOCAL_KINDS = [FLOAT] * 5 + [INT] * 4 + [BOOL, FARR, IARR, TUP, PAIR]


@dataclass
class Body:
    """The function being written: its result type and the names used so far."""

    result: str
    exprs: Expressions
    counter: int = 0
    lines: list[str] = field(default_factory=list)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


def write_body(body: Body, scope: Scope, size: int) -> list[str]:
    """The statements of a function of `size` top-level statements, ending in a return."""
    lines = block(body, scope, "    ", size, loops=0)
    return lines + [f"    return {body.exprs.of(body.result, scope)}"]


def block(body: Body, scope: Scope, indent: str, size: int, loops: int, in_loop: bool = False) -> list[str]:
    lines: list[str] = []
    for _ in range(size):
        lines += statement(body, scope, indent, loops, in_loop)
    return lines or [indent + "pass"]


def statement(body: Body, scope: Scope, indent: str, loops: int, in_loop: bool) -> list[str]:
    rng, exprs = body.exprs.rng, body.exprs
    nested = len(indent) < 16
    kinds = ["new"] * 4 + ["assign"] * 4 + ["write"] * 2 + ["unpack"]
    if nested:
        kinds += ["if"] * 3 + (["while", "for", "for_each", "walk"] if loops < 2 else [])
    kinds += ["return"]
    if in_loop:
        kinds += ["break", "continue"]
    kind = rng.choice(kinds)
    if kind == "new":
        kind_of = rng.choice(LOCAL_KINDS)
        name = body.fresh("v")
        line = f"{indent}{name} = {exprs.of(kind_of, scope)}"
        scope.names[name] = kind_of
        return [line]
    if kind == "assign":
        return assignment(body, scope, indent)
    if kind == "write":
        return array_write(body, scope, indent)
    if kind == "unpack" and scope.of(TUP):
        a, b = body.fresh("v"), body.fresh("v")
        line = f"{indent}{a}, {b} = {rng.choice(scope.of(TUP))}"
        scope.names.update({a: INT, b: FLOAT})
        return [line]
    if kind == "if":
        lines = [f"{indent}if {exprs.bool(scope)}:"]
        lines += block(body, scope.child(), indent + "    ", rng.randint(1, 3), loops, in_loop)
        if exprs.chance(0.3):
            lines += [f"{indent}elif {exprs.bool(scope)}:"]
            lines += block(body, scope.child(), indent + "    ", rng.randint(1, 2), loops, in_loop)
        if exprs.chance(0.5):
            lines += [f"{indent}else:"]
            lines += block(body, scope.child(), indent + "    ", rng.randint(1, 2), loops, in_loop)
        return lines
    if kind == "while":
        guard = body.fresh("g")
        inner = scope.child()
        inner.names[guard], inner.fixed = INT, inner.fixed | {guard}
        lines = [f"{indent}{guard} = 0", f"{indent}while {guard} < {LOOP_LIMIT} and {exprs.bool(scope)}:",
                 f"{indent}    {guard} += 1"]
        lines += block(body, inner, indent + "    ", rng.randint(1, 3), loops + 1, in_loop=True)
        return lines + else_clause(body, scope, indent, loops, in_loop)
    if kind == "for":
        index = body.fresh("i")
        bounds = [f"{exprs.int_stored(scope, 1)} % {LOOP_LIMIT}"]
        if exprs.chance(0.4):
            start = rng.randint(-3, 3)
            step = rng.choice([1, 2, -1, -2])
            end = f"{start + LOOP_LIMIT * (1 if step > 0 else -1)} - ({bounds[0]}) * {1 if step > 0 else -1}"
            bounds = [str(start), end, str(step)]
        inner = scope.child()
        inner.names[index], inner.fixed = INT, inner.fixed | {index}
        lines = [f"{indent}for {index} in range({', '.join(bounds)}):"]
        lines += block(body, inner, indent + "    ", rng.randint(1, 3), loops + 1, in_loop=True)
        return lines + else_clause(body, scope, indent, loops, in_loop)
    if kind == "for_each" and (scope.of(FARR) or scope.of(IARR) or scope.of(LST)):
        source = rng.choice(scope.of(FARR) + scope.of(IARR) + scope.of(LST))
        element = body.fresh("e")
        inner = scope.child()
        inner.names[element] = {FARR: ELEM, IARR: IELEM, LST: FLOAT}[scope.names[source]]
        inner.fixed = inner.fixed | {element}
        lines = [f"{indent}for {element} in {source}:"]
        return lines + block(body, inner, indent + "    ", rng.randint(1, 3), loops + 1, in_loop=True)
    if kind == "walk" and (scope.of(FARR) or scope.of(IARR)):  # a while loop indexing an array
        source = rng.choice(scope.of(FARR) + scope.of(IARR))
        index, element = body.fresh("k"), body.fresh("e")
        inner = scope.child()
        inner.names.update({index: INT, element: ELEM if scope.names[source] == FARR else IELEM})
        inner.fixed = inner.fixed | {index, element}
        lines = [f"{indent}{index} = 0", f"{indent}while {index} < len({source}):",
                 f"{indent}    {index} += 1", f"{indent}    {element} = {source}[{index} - 1]"]
        lines += block(body, inner, indent + "    ", rng.randint(1, 3), loops + 1, in_loop=True)
        return lines + else_clause(body, scope, indent, loops, in_loop)
    if kind in ("break", "continue"):
        return [f"{indent}if {exprs.bool(scope)}:", f"{indent}    {kind}"]
    if kind == "return":
        return [f"{indent}if {exprs.bool(scope)}:", f"{indent}    return {exprs.of(body.result, scope)}"]
    return assignment(body, scope, indent)


def else_clause(body: Body, scope: Scope, indent: str, loops: int, in_loop: bool) -> list[str]:
    """A loop's `else:` (run when no `break` left the loop), sometimes."""
    if not body.exprs.chance(0.15):
        return []
    return [f"{indent}else:"] + block(body, scope.child(), indent + "    ", 1, loops, in_loop)


def assignment(body: Body, scope: Scope, indent: str) -> list[str]:
    """A new value for a variable of the enclosing scopes, of its own type."""
    exprs = body.exprs
    names = [n for n, k in scope.names.items() if n not in scope.fixed and k not in (ELEM, IELEM)]
    if not names:
        name = body.fresh("v")
        scope.names[name] = FLOAT
        return [f"{indent}{name} = {exprs.float(scope)}"]
    name = exprs.rng.choice(names)
    kind = scope.names[name]
    if kind == FLOAT and exprs.chance(0.5):
        return [f"{indent}{name} {exprs.rng.choice(['+=', '-=', '*='])} {exprs.float(scope, 1)}"]
    if kind == FARR and exprs.chance(0.3):  # in place: every name bound to the array sees it
        return [f"{indent}{name} {exprs.rng.choice(['+=', '*='])} {exprs.float(scope, 1)}"]
    return [f"{indent}{name} = {exprs.of(kind, scope)}"]


def array_write(body: Body, scope: Scope, indent: str) -> list[str]:
    exprs = body.exprs
    arrays = scope.of(FARR) + scope.of(IARR)
    if not arrays:
        return assignment(body, scope, indent)
    name = exprs.rng.choice(arrays)
    value = exprs.float(scope, 1) if scope.names[name] == FARR else exprs.int_stored(scope, 1)
    where = exprs.rng.choice(["index"] * 4 + ["add", "slice", "mask"])
    if where == "slice":  # Python's clamped bounds; a number broadcast over them
        bounds = [exprs.int_bounded(scope, 2)[0] if exprs.chance(0.7) else "" for _ in range(2)]
        return [f"{indent}{name}[{':'.join(bounds)}] = {value}"]
    if where == "mask":
        limit = exprs.float(scope, 2) if scope.names[name] == FARR else exprs.int_bounded(scope, 2)[0]
        return [f"{indent}{name}[{name} {exprs.rng.choice(['<', '>=', '=='])} {limit}] = {value}"]
    operator = "+=" if where == "add" and scope.names[name] == FARR else "="
    return [f"{indent}{name}[{exprs.index(name, scope, 1)}] {operator} {value}"]

