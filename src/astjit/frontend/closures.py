"""Lowering functions as values: local `def`s and lambdas, `functools.partial`, calls through them.

A `def` or `lambda` inside a compiled function is a `LocalFunction` (function_values.py):
its body becomes a graph of its own, requested from the `FunctionTable` at each call,
whose extra parameters are the enclosing locals it reads (read-only: a `nonlocal`
write is refused). A call passes those locals as they are at the call, as Python's
closures read them. `functools.partial(f, ...)` built in compiled code is a
`BoundFunction` holding its bound argument Values; a `functools.partial` object known at
compile time (a global, or an argument, which the signature holds) binds constants. A
call through any of them is a direct `call` node; nothing of a function value is left
for type inference.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect

from ..errors import CompileError, UnsupportedCallError, UnsupportedSyntaxError
from ..ir.core import Value
from .analysis import assigned_names
from .calls import default_argument, is_compilable, lower_arguments, static_params
from .function_values import FUNCTION_VALUES, BoundFunction, LocalFunction
from .resolve import constant, static_object
from .scope import Scope, Unbound
from .source import NOT_CONSTANT, constant_value
from .state import ExprRule, Lowering, StmtRule

CALLABLE_HINT = ("call a local function, or pass it to a function as an argument; "
                 "to give back what it computes, return its result")


# ---- definitions ---------------------------------------------------------------------

def lower_def(state: Lowering, scope: Scope, stmt: ast.FunctionDef) -> None:
    """`def f(...)` inside a compiled function: `f` names a LocalFunction."""
    if stmt.decorator_list:
        state.report(UnsupportedSyntaxError, "a decorated local function is not supported",
                     stmt, "define it without decorators")
    scope.assign(stmt.name, _local_function(state, scope, stmt, stmt.name, stmt.body))


def lower_lambda(state: Lowering, scope: Scope, node: ast.Lambda) -> LocalFunction:
    body = [ast.copy_location(ast.Return(value=node.body), node.body)]
    return _local_function(state, scope, node, "<lambda>", body)


def _local_function(state: Lowering, scope: Scope, node: ast.FunctionDef | ast.Lambda,
                    name: str, body: list[ast.stmt]) -> LocalFunction:
    args = node.args
    if args.vararg or args.kwarg or args.defaults or any(args.kw_defaults):
        state.report(UnsupportedSyntaxError, f"default values, *args and **kwargs of the local "
                     f"function '{name}' are not supported", node,
                     "list its parameters one by one and pass every argument")
    for stmt in body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Nonlocal):
                state.report(UnsupportedSyntaxError,
                             f"nonlocal {', '.join(sub.names)} is not supported: a local "
                             "function cannot assign the enclosing function's variables",
                             sub, "return the new value instead and assign it at the call")
    own = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    own |= set(assigned_names(body))
    read = {sub.id for stmt in body for sub in ast.walk(stmt)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}
    for used in read - own:  # a local function it calls reads its own captured locals
        entry = scope.lookup(used)
        read |= set(entry.captured) if isinstance(entry, LocalFunction) else set()
    captured = tuple(sorted((read - own) & (state.local_names | set(state.static))))
    tree = ast.FunctionDef(
        name=name, args=ast.arguments(
            posonlyargs=args.posonlyargs, args=args.args + [ast.arg(c) for c in captured],
            kwonlyargs=args.kwonlyargs, kw_defaults=[None] * len(args.kwonlyargs), defaults=[]),
        body=body, decorator_list=[], returns=None, type_comment=None)
    ast.copy_location(tree, node)
    source = dataclasses.replace(state.source, tree=tree,
                                 local_name=f"{state.source.qualname}.<locals>.{name}")
    return LocalFunction(source, captured, source.local_name)


def lower_nonlocal(state: Lowering, scope: Scope, stmt: ast.Nonlocal) -> None:
    """Reported where the local function is defined (`_local_function`)."""


# ---- calls through function values ---------------------------------------------------

def function_value(obj: object) -> object:
    """`obj` if a call of it is a call through a function value, else None."""
    # Exactly a partial: grad(f) and the other derived functions subclass it, and are callees.
    return obj if isinstance(obj, FUNCTION_VALUES) or type(obj) is functools.partial else None


def partial_constructor(obj: object) -> object:
    return obj if obj is functools.partial else None


def lower_partial(state: Lowering, scope: Scope, node: ast.Call, found: object,
                  name: str) -> BoundFunction | Value:
    """`functools.partial(f, *args, **keywords)`: a BoundFunction of the argument Values."""
    if not node.args:
        return state.fail(scope, node, UnsupportedCallError, "partial() needs a function")
    func = static_object(state, scope, node.args[0])
    func = getattr(func, "py_func", func)
    if not (isinstance(func, FUNCTION_VALUES) or is_compilable(func)):
        return state.fail(scope, node, UnsupportedCallError,
                          f"functools.partial of '{ast.unparse(node.args[0])}' is not supported",
                          "bind the arguments of a function defined with def or lambda")
    rest = ast.Call(func=node.func, args=node.args[1:], keywords=node.keywords)
    arguments = lower_arguments(state, scope, ast.copy_location(rest, node))
    if arguments is None:
        return scope.emit("undef", [], state.loc(node))
    args, kwargs = arguments
    return BoundFunction(func, tuple(args), tuple(kwargs.items()))


def lower_value_call(state: Lowering, scope: Scope, node: ast.Call, fn: object,
                     name: str) -> Value:
    """`f(...)` where `f` is a function value: a direct call of its graph."""
    arguments = lower_arguments(state, scope, node)
    if arguments is None:
        return scope.emit("undef", [], state.loc(node))
    return call_value(state, scope, node, fn, *arguments)


def call_value(state: Lowering, scope: Scope, node: ast.Call, fn: object,
               args: list[Value], kwargs: dict[str, Value]) -> Value:
    """A call of the function value `fn` on argument Values."""
    if isinstance(fn, BoundFunction):
        return call_value(state, scope, node, fn.func, [*fn.args, *args],
                          {**dict(fn.keywords), **kwargs})
    if isinstance(fn, functools.partial):
        bound = [constant_value(v) for v in (*fn.args, *fn.keywords.values())]
        if NOT_CONSTANT in bound:
            return state.fail(scope, node, UnsupportedCallError,
                              f"the partial {fn!r} binds values that are not numbers",
                              "bind numbers, booleans, None or tuples of them")
        consts = [constant(state, scope, node, v, "a bound argument") for v in bound]
        keywords = dict(zip(fn.keywords, consts[len(fn.args):]))
        return call_value(state, scope, node, getattr(fn.func, "py_func", fn.func),
                          [*consts[:len(fn.args)], *args], {**keywords, **kwargs})
    if isinstance(fn, LocalFunction):
        return _call_local(state, scope, node, fn, args, kwargs)
    if is_compilable(fn) and not static_params(fn):
        return _call_python(state, scope, node, fn, args, kwargs)
    return state.fail(scope, node, UnsupportedCallError,
                      f"calling '{getattr(fn, '__name__', fn)}' through a function value is "
                      "not supported", "call it directly")


def _bind(state: Lowering, node: ast.Call, signature: inspect.Signature, name: str,
          args: list[Value], kwargs: dict[str, Value]) -> inspect.BoundArguments | None:
    try:
        return signature.bind(*args, **kwargs)
    except TypeError as error:
        state.report(CompileError, f"call to '{name}': {error}", node)
        return None


def _call_python(state: Lowering, scope: Scope, node: ast.Call, fn, args, kwargs) -> Value:
    """A call of a Python function on Values (a partial's): its defaults are constants."""
    signature = inspect.signature(fn, follow_wrapped=False)
    bound = _bind(state, node, signature, fn.__name__, args, kwargs)
    if bound is None:
        return scope.emit("undef", [], state.loc(node))
    inputs = []
    for param in signature.parameters.values():
        if param.name in bound.arguments:
            inputs.append(bound.arguments[param.name])
            continue
        default = default_argument(state, scope, node, fn, param)
        if default is None:
            return scope.emit("undef", [], state.loc(node))
        inputs.append(default)
    return scope.emit("call", inputs, state.loc(node), {"callee": state.functions.request(fn)})


def _call_local(state: Lowering, scope: Scope, node: ast.Call, fn: LocalFunction,
                args: list[Value], kwargs: dict[str, Value]) -> Value:
    """A call of a local function: its arguments, then the captured locals as they are
    now (a function value among them, or a static one, binds statically)."""
    tree = fn.source.tree
    own = tree.args.args[:len(tree.args.args) - len(fn.captured)]
    kind = inspect.Parameter
    signature = inspect.Signature(
        [kind(a.arg, kind.POSITIONAL_ONLY) for a in tree.args.posonlyargs]
        + [kind(a.arg, kind.POSITIONAL_OR_KEYWORD) for a in own]
        + [kind(a.arg, kind.KEYWORD_ONLY) for a in tree.args.kwonlyargs])
    bound = _bind(state, node, signature, fn.__name__, args, kwargs)
    if bound is None:
        return scope.emit("undef", [], state.loc(node))
    inputs = [bound.arguments[p] for p in signature.parameters]
    static = []
    for name in fn.captured:
        entry = scope.lookup(name)
        if name in state.static:
            static.append((name, state.static[name]))
        elif isinstance(entry, FUNCTION_VALUES):
            static.append((name, entry))
        elif isinstance(entry, Value):
            inputs.append(scope.use(entry))
        else:
            why = entry.why if isinstance(entry, Unbound) else "it is not assigned yet"
            return state.fail(scope, node, CompileError,
                              f"'{fn.__name__}' reads '{name}', which may be unassigned here: "
                              f"{why}", f"assign '{name}' before calling '{fn.__name__}'")
    callee = state.functions.request(fn, tuple(static))
    return scope.emit("call", inputs, state.loc(node), {"callee": callee})


def refuse_function_value(state: Lowering, scope: Scope, node: ast.expr, fn: object) -> Value:
    """A function value where a value is needed (returned, stored, computed with)."""
    return state.fail(scope, node, UnsupportedSyntaxError,
                      f"the function '{getattr(fn, '__name__', fn)}' used as a value "
                      f"({ast.unparse(node)}) is not supported: compiled code cannot return a "
                      "function or store it", CALLABLE_HINT)


EXPRESSIONS: dict[type[ast.expr], ExprRule] = {ast.Lambda: lower_lambda}
STATEMENTS: dict[type[ast.stmt], StmtRule] = {ast.FunctionDef: lower_def,
                                              ast.Nonlocal: lower_nonlocal}
