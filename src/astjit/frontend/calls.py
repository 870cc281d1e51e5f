"""Lowering calls: to other Python functions (`call` nodes), builtins and `math` (primitives).

The callee is found at compile time (`static_object`): a Python function (or a
jitted object's `py_func`) becomes a `call` node naming its graph, which the
`FunctionTable` queues for lowering into the same module; its arguments are bound to its
parameters with `inspect.signature`, so keywords and defaults work (a default
becomes a `const` at the call site). Builtins and math functions go through the
table in builtins.py; NumPy's creation functions (np.zeros, np.arange, ...) through
creation.py, which reports any other NumPy function as not supported yet. Anything
else is an UnsupportedCallError naming the callee.
"""
from __future__ import annotations

import ast
import inspect
import math
import types
from collections import deque

from ..errors import CompileError, NameResolutionError, UnsupportedCallError
from ..ir.core import Value
from .builtins import CallError, Handler, call_handler, primitive_handler
from .creation import NumpyCallLowerer, is_numpy_callable, numpy_handler
from .linalg import lower_numpy_linalg, numpy_linalg
from .lower import LOCAL, is_numpy_module
from .reductions import lower_numpy_reduction, numpy_reduction
from .scope import Scope
from .source import NOT_CONSTANT, NOT_FOUND, FunctionSource, constant_value
from .ufuncs import ufunc_handler
from .views import ARRAY_METHODS, lower_method, lower_numpy_view, numpy_view_function

SUPPORTED_CALLS = ("compiled code can call Python functions defined with def, the math "
                   "functions that have a primitive (math.sqrt, math.sin, ...), the builtins "
                   "abs, min, max, int, float, bool, round, len and pow, and NumPy's "
                   "np.empty, np.zeros, np.ones, np.full, their *_like forms and np.arange")


def is_compilable(obj: object) -> bool:
    """A Python function, or an astjit function object that lowers to a graph of its own
    (a derived function such as grad(f), a custom_vjp function)."""
    return isinstance(obj, types.FunctionType) or hasattr(obj, "__astjit_derived__") \
        or hasattr(obj, "__astjit_custom_vjp__")


class FunctionTable:
    """The graph name of each function of the module being built, and those not lowered yet.

    A function with static parameters (`static_params`) gets one graph per binding of
    them to compile-time constants: `softmax[axis=-1]`.
    """

    def __init__(self):
        self.names: dict[tuple, str] = {}
        self.pending: deque[tuple[types.FunctionType, str, dict]] = deque()

    def request(self, fn: types.FunctionType, static: tuple[tuple[str, object], ...] = ()) -> str:
        """The name of `fn`'s graph (for this binding of its static parameters): its
        `__qualname__`, with the binding and `#2`, `#3` ... if already taken."""
        key = (fn, static)
        if key not in self.names:
            taken = set(self.names.values())
            base = fn.__qualname__
            if static:
                base += "[" + ", ".join(f"{k}={v!r}" for k, v in static) + "]"
            name, serial = base, 1
            while name in taken:
                serial += 1
                name = f"{base}#{serial}"
            self.names[key] = name
            self.pending.append((fn, name, dict(static)))
        return self.names[key]


def static_params(fn: object) -> tuple[str, ...]:
    """The parameters of `fn` whose arguments must be compile-time constants (an `axis`):
    declared by `astjit.static_params` (its `__astjit_static__` attribute)."""
    return tuple(getattr(fn, "__astjit_static__", ()))


class CallLowerer(NumpyCallLowerer):
    """Expressions, plus calls."""

    def __init__(self, source: FunctionSource, functions: FunctionTable):
        super().__init__(source)
        self.functions = functions

    def expr_Call(self, scope: Scope, node: ast.Call) -> Value:
        name = ast.unparse(node.func)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ARRAY_METHODS:
            owner = self.static_object(scope, node.func.value)
            if owner is LOCAL or (owner is NOT_FOUND and not isinstance(node.func.value, ast.Name)):
                return lower_method(self, scope, node)  # <array>.reshape(...), .sum() ...
        callee = self.static_object(scope, node.func)
        if callee is LOCAL:
            return self.fail(scope, node, UnsupportedCallError,
                             f"call to '{name}' is not supported: it is a local variable",
                             "call functions by their global name")
        if callee is NOT_FOUND and isinstance(node.func, ast.Name):
            return self.fail(scope, node, NameResolutionError, f"name '{name}' is not defined")
        if callee is NOT_FOUND:
            base = self.static_object(scope, node.func.value) \
                if isinstance(node.func, ast.Attribute) else None
            why = "this math function has no compiled version" if base is math else \
                f"{base.__name__} has no '{node.func.attr}'" if is_numpy_module(base) else \
                "other modules cannot be called" if isinstance(base, types.ModuleType) else \
                "method calls are not supported"
            return self.fail(scope, node, UnsupportedCallError,
                             f"call to '{name}' is not supported", f"{why}; {SUPPORTED_CALLS}")
        callee = getattr(callee, "py_func", callee)
        if primitive_handler(callee) is not None:  # astjit.stop_gradient: an op, not a call
            return self.call_builtin(scope, node, primitive_handler(callee), name)
        if hasattr(callee, "__astjit_jvp__"):
            return self.call_jvp(scope, node, callee)
        view = numpy_view_function(callee)
        if view is not None:
            return lower_numpy_view(self, scope, node, view, name)
        reduction = numpy_reduction(callee)
        if reduction is not None:  # np.sum, np.mean, np.max, np.min
            return lower_numpy_reduction(self, scope, node, reduction, name)
        creation = numpy_handler(callee)
        if creation is not None:
            return self.call_numpy(scope, node, creation, name)
        matrix = numpy_linalg(callee)
        if matrix is not None:  # np.dot, np.matmul, np.diag, np.eye
            return lower_numpy_linalg(self, scope, node, matrix, name)
        if ufunc_handler(callee) is not None:  # np.exp, np.maximum, np.where ...
            return self.call_builtin(scope, node, ufunc_handler(callee), name)
        if is_numpy_callable(callee) or self.is_numpy_attribute(scope, node.func):
            # before is_compilable: np.ones, np.linalg.norm ... are Python functions
            return self.unsupported_numpy(scope, node, name)
        if is_compilable(callee):
            return self.call_function(scope, node, callee)
        handler = call_handler(callee)
        if handler is None:
            return self.fail(scope, node, UnsupportedCallError,
                             f"call to '{name}' is not supported", SUPPORTED_CALLS)
        return self.call_builtin(scope, node, handler, name)

    def lower_arguments(self, scope: Scope, node: ast.Call) -> tuple[list[Value], dict] | None:
        """The positional and keyword argument values; None (reported) for * and ** arguments."""
        starred = [a for a in node.args if isinstance(a, ast.Starred)]
        starred += [k.value for k in node.keywords if k.arg is None]
        for arg in starred:
            self.report(UnsupportedCallError, "*args and **kwargs arguments are not supported", arg,
                        "pass each argument explicitly")
        args = [self.lower_expr(scope, arg) for arg in node.args if arg not in starred]
        kwargs = {k.arg: self.lower_expr(scope, k.value) for k in node.keywords if k.arg}
        return None if starred else (args, kwargs)

    def call_builtin(self, scope: Scope, node: ast.Call, handler: Handler, name: str) -> Value:
        arguments = self.lower_arguments(scope, node)
        if arguments is None:
            return scope.emit("undef", [], self.loc(node))
        args, kwargs = arguments
        if kwargs:
            return self.fail(scope, node, UnsupportedCallError,
                             f"keyword arguments to {name}() are not supported",
                             "pass the arguments by position")
        loc = self.loc(node)
        try:
            return handler(lambda op, inputs, attrs=None: scope.emit(op, inputs, loc, attrs), args)
        except CallError as error:
            return self.fail(scope, node, UnsupportedCallError, error.message, error.hint)

    def call_jvp(self, scope: Scope, node: ast.Call, jvp) -> Value:
        """`jvp(f, (x, y), (dx, dy))`: a call of the derived function jvp(f) on x, y, dx, dy."""
        if len(node.args) != 3 or node.keywords or not all(
                isinstance(a, ast.Tuple) for a in node.args[1:]):
            return self.fail(scope, node, UnsupportedCallError,
                             "jvp() in compiled code takes (function, primals, tangents)",
                             "write the primals and tangents as tuple displays: "
                             "jvp(f, (x,), (1.0,))")
        fn = self.static_object(scope, node.args[0])
        fn = getattr(fn, "py_func", fn)
        if not is_compilable(fn):
            return self.fail(scope, node, UnsupportedCallError,
                             f"jvp() of '{ast.unparse(node.args[0])}' is not supported",
                             "pass a function defined with def")
        values = [self.lower_expr(scope, e) for t in node.args[1:] for e in t.elts]
        derived = jvp.__astjit_jvp__(fn)
        return scope.emit("call", values, self.loc(node), {"callee": self.functions.request(derived)})

    def call_function(self, scope: Scope, node: ast.Call, fn: types.FunctionType) -> Value:
        """A `call` node of `fn`'s graph, with the arguments bound to its parameters."""
        loc = self.loc(node)
        signature = inspect.signature(fn, follow_wrapped=False)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
            self.functions.request(fn)  # lowering it reports its *args / **kwargs
            return scope.emit("undef", [], loc)
        arguments = self.lower_arguments(scope, node)
        if arguments is None:
            return scope.emit("undef", [], loc)
        try:
            bound = signature.bind(*arguments[0], **arguments[1])
        except TypeError as error:
            return self.fail(scope, node, CompileError, f"call to '{fn.__name__}': {error}")
        inputs, static = [], []
        written = signature.bind(*node.args, **{k.arg: k.value for k in node.keywords}).arguments
        for param in signature.parameters.values():
            if param.name in static_params(fn):
                value = self.compile_time_value(scope, written[param.name]) \
                    if param.name in written else constant_value(param.default)
                if value is NOT_CONSTANT:
                    return self.fail(scope, node, UnsupportedCallError,
                                     f"argument '{param.name}' of '{fn.__name__}' must be a "
                                     "compile-time constant",
                                     "write a number, a tuple of numbers, or a global constant")
                static.append((param.name, value))
                continue
            if param.name in bound.arguments:
                inputs.append(bound.arguments[param.name])
                continue
            default = constant_value(param.default)
            if default is NOT_CONSTANT:
                return self.fail(scope, node, UnsupportedCallError,
                                 f"the default value of parameter '{param.name}' of "
                                 f"'{fn.__name__}' is a {type(param.default).__name__}",
                                 "defaults must be numbers, booleans, None or tuples of them; "
                                 "pass the argument explicitly")
            inputs.append(self.constant(scope, node, default,
                                        f"{param.name} (the default of {fn.__name__}())"))
        return scope.emit("call", inputs, loc, {"callee": self.functions.request(fn, tuple(static))})
