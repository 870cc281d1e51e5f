"""The frontend's entry point: a Python function, and all it calls, as untyped graphs of one Module.

`lower_function(fn)` lowers `fn` and, transitively, every Python function it
calls (recursion and mutual recursion included): each function object is
parsed once and gets one graph, named by its `__qualname__` (with a `#2`, `#3`
... suffix when different function objects share one). Every problem found in
any of them is raised at once, as one CompileError listing them all.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types

from ..errors import CompileError, Loc, Problem, SourceUnavailableError
from ..ir.core import Graph, Module, Value
from .calls import is_compilable
from .function import lower_graph
from .function_values import LocalFunction
from .rules import RULES
from .source import FunctionSource
from .state import FunctionTable, Lowering

Found = list[tuple[type[CompileError], Problem]]

_RECURSION_LIMIT = 20_000
"""Lowering recurses once per nesting level (an `elif` chain is nested `if`s)."""


def lower_function(fn, static: dict | None = None) -> Module:
    """Parse `fn` (or a jitted object's `py_func`) and its callees into untyped graphs;
    `static` binds parameters to compile-time values (functions passed as arguments)."""
    fn = getattr(fn, "py_func", fn)
    if not is_compilable(fn):
        raise SourceUnavailableError(
            f"cannot compile {fn!r}: only Python functions defined with def can be compiled",
            hint="pass a function defined with def in a .py file")
    table = FunctionTable()
    module = Module(entry=table.request(fn, tuple((static or {}).items())))
    module.lower_callee = functools.partial(_lower_callee, module, table)
    _lower_pending(module, table)
    return module


def _lower_callee(module: Module, table: FunctionTable, fn) -> str:
    """Lower `fn` (and what it calls) into `module`, for type inference (Module.lower_callee)."""
    name = table.request(getattr(fn, "py_func", fn))
    _lower_pending(module, table)
    return name


def _lower_pending(module: Module, table: FunctionTable) -> None:
    """Lower every function `table` has queued into `module`; one CompileError for all
    the problems found."""
    found: Found = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        while table.pending:
            callee, name, static = table.pending.popleft()
            graph, problems = _lower_one(callee, name, table, static)
            found += problems
            if graph is not None:
                module.graphs[name] = graph
    finally:
        sys.setrecursionlimit(limit)
    if found:
        kind, first = found[0]
        raise kind(first.message, problems=[problem for _, problem in found])


def _lower_derived(derived, name: str, table: FunctionTable) -> Graph:
    """The graph of a derived function (`grad(f)`, `jvp(f)` ...): one `call` of the base
    function marked with what to derive, which type inference carries out.
    """
    spec = derived.__astjit_derived__
    graph = Graph(name, [Value(p) for p in spec.params], loc=spec.loc)
    call = graph.add("call", graph.params, attrs={"callee": table.request(spec.base),
                                                  "derive": spec.derive}, loc=spec.loc)
    graph.outputs = call.outputs
    return graph


def _lower_custom_vjp(custom, name: str, table: FunctionTable) -> Graph:
    """The graph of a custom_vjp function: a `call` of its Python function that names
    the graph of its rule, which reverse mode calls instead of differentiating."""
    fn, rule = custom.__astjit_custom_vjp__
    loc = Loc(fn.__code__.co_filename, fn.__code__.co_firstlineno)
    graph = Graph(name, [Value(p) for p in inspect.signature(fn).parameters], loc=loc)
    call = graph.add("call", graph.params, attrs={"callee": table.request(fn),
                                                  "custom_vjp": table.request(rule)}, loc=loc)
    graph.outputs = call.outputs
    return graph


def _lower_one(fn: types.FunctionType, name: str, table: FunctionTable,
               static: dict) -> tuple[Graph | None, Found]:
    """One function's graph (None if its source cannot be read) and its problems."""
    if hasattr(fn, "__astjit_derived__"):
        return _lower_derived(fn, name, table), []
    if hasattr(fn, "__astjit_custom_vjp__"):
        return _lower_custom_vjp(fn, name, table), []
    code = (fn.source.fn if isinstance(fn, LocalFunction) else fn).__code__
    where = Loc(code.co_filename, code.co_firstlineno)
    try:
        source = fn.source if isinstance(fn, LocalFunction) else FunctionSource.read(fn)
        state = Lowering(source, table, RULES, static)
        return lower_graph(state, name), state.problems
    except CompileError as error:
        return None, [(type(error), problem) for problem in error.problems]
    except RecursionError:
        raise CompileError(f"{fn.__qualname__}() is nested too deeply to compile", where,
                           hint="split it into several functions") from None
    except Exception as error:  # a bug in the frontend: still a CompileError, with the cause
        raise CompileError(
            f"internal error in astjit's frontend while compiling {fn.__qualname__}(): "
            f"{type(error).__name__}: {error}", where,
            hint="please report this together with the function's source") from error
