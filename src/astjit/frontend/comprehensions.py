"""Lowering comprehensions of known length: `[f(v) for v in xs]`, `tuple(f(v) for v in xs)`,
`{k: g(v) for k, v in d.items()}`, and `tuple(xs)` / `list(xs)`.

The result is built element by element: a hidden variable holds the elements so far
(an empty tuple, list or dict first) and each element adds one (`tuple_append`,
`dict_set`: ir/ops/sequences.py). Over `range()` of constant bounds or a tuple display
the frontend unrolls the loop itself; over anything else (a tuple, list or dict
argument, `d.items()`, `enumerate(xs)` ...) it is the loop `for` lowers
(loops.sequence_loop) marked as collecting, which type inference unrolls from the
sequence's length. Over an array, or a `range(n)` whose bounds are not constant, the
length is not known at compile time: a CompileError. `if` clauses are refused unless
constant, for the same reason. The loop variables are the comprehension's own, as in
Python: the names they shadow are the same after it.
"""
from __future__ import annotations

import ast
import builtins

from ..errors import UnsupportedSyntaxError
from ..ir.core import Value
from ..ir.ops.containers import LIST
from ..ir.types import TreeNode
from .analysis import assigned_names
from .loops import sequence_loop
from .resolve import compile_time_value, static_object
from .scope import Scope
from .source import NOT_CONSTANT
from .state import ExprRule, Lowering
from .targets import assign_target

_EMPTY = {"list": LIST, "tuple": None, "dict": TreeNode("dict", dict, ())}
_UNKNOWN = "its length is not known at compile time"
_HINT = ("comprehensions take tuples, lists, dicts and range() of constant bounds; "
         "otherwise write a for loop")


def lower_list_comp(state: Lowering, scope: Scope, node: ast.ListComp) -> Value:
    return collect(state, scope, node, node.generators, "list",
                   lambda s: [state.lower_expr(s, node.elt)])


def lower_dict_comp(state: Lowering, scope: Scope, node: ast.DictComp) -> Value:
    return collect(state, scope, node, node.generators, "dict",
                   lambda s: [state.lower_expr(s, node.key), state.lower_expr(s, node.value)])


def lower_generator(state: Lowering, scope: Scope, node: ast.GeneratorExp) -> Value:
    return state.fail(scope, node, UnsupportedSyntaxError,
                      "a generator expression is supported only as the argument of tuple() "
                      "or list()", "write tuple(f(v) for v in xs) or [f(v) for v in xs]")


def sequence_constructor(obj: object) -> object:
    """`tuple` or `list` (called here on one iterable), else None."""
    return obj if obj is builtins.tuple or obj is builtins.list else None


def lower_sequence_call(state: Lowering, scope: Scope, node: ast.Call, fn: type,
                        name: str) -> Value:
    """`tuple(f(v) for v in xs)`, `list(xs)`: a comprehension of known length."""
    kind = fn.__name__
    if node.keywords or len(node.args) > 1 or any(isinstance(a, ast.Starred) for a in node.args):
        return state.fail(scope, node, UnsupportedSyntaxError,
                          f"{name}() takes one iterable here", f"write {name}(xs)")
    if not node.args:
        return _container(scope, [], kind, state.loc(node))
    arg = node.args[0]
    if isinstance(arg, ast.GeneratorExp):
        return collect(state, scope, node, arg.generators, kind,
                       lambda s: [state.lower_expr(s, arg.elt)])
    item = f"$element#{next(state.serial)}"
    every = ast.comprehension(target=ast.Name(item, ast.Store()), iter=arg, ifs=[], is_async=0)
    return collect(state, scope, node, [ast.copy_location(every, arg)], kind,
                   lambda s: [s.value_of(item, state.loc(arg))])


def _container(scope: Scope, parts: list[Value], kind: str, loc) -> Value:
    node = _EMPTY[kind]
    result = scope.emit("tuple", parts, loc, {"node": node} if node else None)
    if kind != "dict":
        scope.sizes[result] = len(parts)
    return result


# ---- the loops ------------------------------------------------------------------------------

def collect(state: Lowering, scope: Scope, node: ast.expr, generators: list[ast.comprehension],
            kind: str, item) -> Value:
    """The container of `kind` of the `item(scope)`s (one value, or a key and a value) the
    `generators` give, lowered in `scope`; the loop variables restored after it."""
    loc = state.loc(node)
    names = assigned_names([g.target for g in generators])
    saved = {name: scope.lookup(name) for name in names}
    acc = f"$collect#{next(state.serial)}"
    scope.assign(acc, _container(scope, [], kind, loc))

    def add(s: Scope) -> None:
        parts = item(s)
        op = "dict_set" if kind == "dict" else "tuple_append"
        s.assign(acc, s.emit(op, [s.value_of(acc, loc), *parts], loc))
    _generate(state, scope, node, generators, acc, add)
    result = scope.value_of(acc, loc)
    scope.forget(acc)
    for name, entry in saved.items():
        if entry is None:
            scope.forget(name)
        else:
            scope.assign(name, entry)
    return result


def _generate(state: Lowering, scope: Scope, node: ast.expr,
              generators: list[ast.comprehension], acc: str, add) -> None:
    """The loop of `generators[0]`, whose body is the loops of the rest, then `add`."""
    if not generators:
        add(scope)
        return
    first, rest = generators[0], generators[1:]
    body = lambda s: _generate(state, s, node, rest, acc, add)  # noqa: E731
    if first.is_async:
        state.report(UnsupportedSyntaxError, "async comprehensions are not supported", node)
        return
    for test in first.ifs:
        truth = compile_time_value(state, scope, test)
        if truth is NOT_CONSTANT:
            state.report(UnsupportedSyntaxError, f"a comprehension with an if clause is not "
                         f"supported: {_UNKNOWN}", test,
                         "compute every element (a conditional expression: a if c else b), "
                         "or write a for loop")
            return
        if not truth:
            state.lower_expr(scope, first.iter)  # evaluated, as in Python; no element kept
            return
    elements = _unrolled_elements(state, scope, first.iter)
    if elements is _REPORTED:
        return
    if elements is not None:
        for make in elements:
            assign_target(state, scope, first.target, make(scope))
            body(scope)
        return
    loop = ast.copy_location(ast.For(target=first.target, iter=first.iter, body=[], orelse=[]),
                             first.iter)
    sequence_loop(state, scope, loop, (acc, scope.value_of(acc, state.loc(node)), body))


_REPORTED = object()


def _unrolled_elements(state: Lowering, scope: Scope, iterable: ast.expr):
    """The element makers where the frontend unrolls: `range()` of constant bounds, a tuple
    or list display; None where inference will; _REPORTED for a range() of unknown length."""
    loc = state.loc(iterable)
    if isinstance(iterable, (ast.Tuple, ast.List)) \
            and not any(isinstance(e, ast.Starred) for e in iterable.elts):
        values = [state.lower_expr(scope, e) for e in iterable.elts]
        return [lambda s, v=v: v for v in values]
    if not (isinstance(iterable, ast.Call)
            and static_object(state, scope, iterable.func) is builtins.range):
        return None
    bounds = [compile_time_value(state, scope, a) for a in iterable.args]
    if iterable.keywords or not 1 <= len(bounds) <= 3 \
            or not all(type(b) is int for b in bounds) or (len(bounds) == 3 and bounds[2] == 0):
        state.report(UnsupportedSyntaxError, f"a comprehension over '{ast.unparse(iterable)}': "
                     f"{_UNKNOWN}", iterable, "give range() constant bounds, e.g. range(3); "
                     + _HINT)
        return _REPORTED
    return [lambda s, i=i: s.const(i, loc) for i in range(*bounds)]


# ---- a dict's views ----------------------------------------------------------------------

def lower_dict_view(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    """`d.items()`, `d.keys()`, `d.values()`: tuples, settled by inference from d's keys."""
    method = node.func.attr
    if node.args or node.keywords:
        return state.fail(scope, node, UnsupportedSyntaxError,
                          f".{method}() takes no arguments")
    d = state.lower_expr(scope, node.func.value)
    return scope.emit(f"dict_{method}", [d], state.loc(node))


EXPRESSIONS: dict[type[ast.expr], ExprRule] = {
    ast.ListComp: lower_list_comp,
    ast.DictComp: lower_dict_comp,
    ast.GeneratorExp: lower_generator,
}
