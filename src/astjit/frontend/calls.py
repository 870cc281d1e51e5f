"""Lowering calls: to other Python functions (`call` nodes), builtins and `math` (primitives).

A method call on a local (`x.sum()`) goes to the array method of that name
(`Rules.methods`). Any other callee is found at compile time (`static_object`)
and given to the first rule of `Rules.callees` that recognizes it: NumPy's
functions (views.py, reductions.py, creation.py, linalg.py), its ufuncs and the
ops marked on astjit's functions (here). Otherwise a Python function (or a
jitted object's `py_func`) becomes a `call` node naming its graph, which the
`FunctionTable` queues for lowering into the same module; its arguments are bound to its
parameters with `inspect.signature`, so keywords and defaults work (a default
becomes a `const` at the call site). Builtins and math functions go through the
table in builtins.py. Any other NumPy function is reported as not supported yet,
anything else is an UnsupportedCallError naming the callee.
"""
from __future__ import annotations

import ast
import inspect
import math
import types

from ..errors import CompileError, NameResolutionError, UnsupportedCallError
from ..ir.core import Value
from .builtins import CallError, Handler, WithKeywords, call_handler
from .methods import is_call_on_a_local, lower_method_call
from .resolve import (
    LOCAL,
    compile_time_value,
    constant,
    is_numpy_attribute,
    is_numpy_callable,
    is_numpy_module,
    static_object,
)
from .scope import Scope
from .source import NOT_CONSTANT, NOT_FOUND, constant_value
from .state import ExprRule, Lowering
from .ufuncs import clip_method

SUPPORTED_CALLS = ("compiled code can call Python functions defined with def, the math "
                   "functions that have a primitive (math.sqrt, math.sin, ...), the builtins "
                   "abs, min, max, int, float, bool, round, len and pow, and NumPy's "
                   "np.empty, np.zeros, np.ones, np.full, their *_like forms and np.arange")
CALLBACK_HINT = ("to run other Python code, call it through astjit.callback(fn, *args, "
                 "result=float), which runs it in the interpreter")
SUPPORTED_NUMPY = ("np.empty, np.zeros, np.ones, np.full, their *_like forms, np.arange, "
                   "np.eye, np.diag, np.dot, np.matmul (and a @ b) of 1-d and 2-d arrays, "
                   "NumPy's elementwise functions (np.exp, np.maximum, np.where, ...) and "
                   "the reductions np.sum, np.mean, np.max, np.min, np.prod, np.any, "
                   "np.all, np.argmax, np.argmin, np.cumsum, np.cumprod, np.var, np.std, "
                   "np.ptp, np.count_nonzero, np.nansum, np.nanmean ... (and the methods "
                   "x.sum() ...), the shape and joining functions np.concatenate, np.stack, "
                   "np.hstack, np.vstack, np.split, np.squeeze, np.expand_dims, np.ravel, "
                   "np.flip, np.roll, np.tile, np.repeat, np.broadcast_to, np.swapaxes, "
                   "np.moveaxis, and np.copy, np.ascontiguousarray, np.array, np.linspace, "
                   "the sorting functions np.sort, np.argsort, np.searchsorted, np.unique, "
                   "np.nonzero (np.where(cond)), np.median, np.percentile, np.quantile; "
                   "other whole-array operations come later: loop over the elements instead")


def is_compilable(obj: object) -> bool:
    """A Python function, or an astjit function object that lowers to a graph of its own
    (a derived function such as grad(f), a custom_vjp function)."""
    return isinstance(obj, types.FunctionType) or hasattr(obj, "__astjit_derived__") \
        or hasattr(obj, "__astjit_custom_vjp__")


def static_params(fn: object) -> tuple[str, ...]:
    """The parameters of `fn` whose arguments must be compile-time constants (an `axis`):
    declared by `astjit.static_params` (its `__astjit_static__` attribute)."""
    return tuple(getattr(fn, "__astjit_static__", ()))


def lower_call(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    name = ast.unparse(node.func)
    if isinstance(node.func, ast.Attribute) and node.func.attr in state.rules.methods:
        owner = static_object(state, scope, node.func.value)
        if owner is LOCAL or (owner is NOT_FOUND and not isinstance(node.func.value, ast.Name)):
            return state.rules.methods[node.func.attr](state, scope, node)  # x.sum() ...
    callee = static_object(state, scope, node.func)
    if callee in (LOCAL, NOT_FOUND) and is_call_on_a_local(state, scope, node.func):
        return lower_method_call(state, scope, node)  # model(x), self.forward(x)
    if callee is NOT_FOUND and isinstance(node.func, ast.Name):
        return state.fail(scope, node, NameResolutionError, f"name '{name}' is not defined")
    if callee is NOT_FOUND:
        return _unknown_callee(state, scope, node, name)
    callee = getattr(callee, "py_func", callee)
    for rule in state.rules.callees:
        found = rule.find(callee)
        if found is not None:
            return rule.lower(state, scope, node, found, name)
    if is_numpy_callable(callee) or is_numpy_attribute(state, scope, node.func):
        # before is_compilable: np.ones, np.linalg.norm ... are Python functions
        return _unsupported_numpy(state, scope, node, name)
    if is_compilable(callee):
        return call_function(state, scope, node, callee)
    handler = call_handler(callee)
    if handler is None:
        return state.fail(scope, node, UnsupportedCallError,
                          f"call to '{name}' is not supported",
                          f"{SUPPORTED_CALLS}; {CALLBACK_HINT}" if callable(callee) else SUPPORTED_CALLS)
    return lower_builtin_call(state, scope, node, handler, name)


def _unknown_callee(state: Lowering, scope: Scope, node: ast.Call, name: str) -> Value:
    """`module.name` or `value.method` that resolves to nothing compiled code can call."""
    base = static_object(state, scope, node.func.value) \
        if isinstance(node.func, ast.Attribute) else None
    why = "this math function has no compiled version" if base is math else \
        f"{base.__name__} has no '{node.func.attr}'" if is_numpy_module(base) else \
        "other modules cannot be called" if isinstance(base, types.ModuleType) else \
        "method calls are not supported"
    return state.fail(scope, node, UnsupportedCallError, f"call to '{name}' is not supported",
                      f"{why}; {SUPPORTED_CALLS}; {CALLBACK_HINT}")


def _unsupported_numpy(state: Lowering, scope: Scope, node: ast.Call, name: str) -> Value:
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        state.lower_expr(scope, arg)  # for the problems the arguments may have
    return state.fail(scope, node, UnsupportedCallError, f"{name} is not supported yet",
                      f"compiled code supports {SUPPORTED_NUMPY}")


def lower_arguments(state: Lowering, scope: Scope,
                    node: ast.Call) -> tuple[list[Value], dict] | None:
    """The positional and keyword argument values; None (reported) for * and ** arguments."""
    starred = [a for a in node.args if isinstance(a, ast.Starred)]
    starred += [k.value for k in node.keywords if k.arg is None]
    for arg in starred:
        state.report(UnsupportedCallError, "*args and **kwargs arguments are not supported", arg,
                     "pass each argument explicitly")
    args = [state.lower_expr(scope, arg) for arg in node.args if arg not in starred]
    kwargs = {k.arg: state.lower_expr(scope, k.value) for k in node.keywords if k.arg}
    return None if starred else (args, kwargs)


def lower_builtin_call(state: Lowering, scope: Scope, node: ast.Call, handler: Handler,
                       name: str, receiver: Value | None = None) -> Value:
    """A call of a builtin, math or NumPy elementwise function: what its `handler` emits
    (`receiver`: a method's object, lowered already, its first argument)."""
    arguments = lower_arguments(state, scope, node)
    if arguments is None:
        return scope.emit("undef", [], state.loc(node))
    args, kwargs = arguments
    args = args if receiver is None else [receiver, *args]
    keywords = handler.keywords if isinstance(handler, WithKeywords) else ()
    unknown = [k for k in kwargs if k not in keywords]
    if unknown and keywords:
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}() got an unexpected keyword argument '{unknown[0]}'",
                          f"its keyword arguments are {', '.join(keywords)}")
    if unknown:
        return state.fail(scope, node, UnsupportedCallError,
                          f"keyword arguments to {name}() are not supported",
                          "pass the arguments by position")
    loc = state.loc(node)
    try:
        return handler(lambda op, inputs, attrs=None: scope.emit(op, inputs, loc, attrs), args,
                       **kwargs)
    except CallError as error:
        return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)


def lower_clip_method(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    """`x.clip(min=..., max=...)`, by keyword (an array's method; calls on objects take no
    keywords): np.clip's op; by position, as any method (`lower_method_call`), which type
    inference resolves by the receiver's type (an object's own `clip`, or an array's)."""
    if not node.keywords:
        return lower_method_call(state, scope, node)
    return lower_builtin_call(state, scope, node, clip_method(), "clip",
                              state.lower_expr(scope, node.func.value))


def jvp_transform(obj: object) -> object:
    """`obj` if it is astjit's `jvp` (called here as `jvp(f, primals, tangents)`), else None."""
    return obj if hasattr(obj, "__astjit_jvp__") else None


def lower_jvp(state: Lowering, scope: Scope, node: ast.Call, jvp: object, name: str) -> Value:
    """`jvp(f, (x, y), (dx, dy))`: a call of the derived function jvp(f) on x, y, dx, dy."""
    if len(node.args) != 3 or node.keywords or not all(
            isinstance(a, ast.Tuple) for a in node.args[1:]):
        return state.fail(scope, node, UnsupportedCallError,
                          "jvp() in compiled code takes (function, primals, tangents)",
                          "write the primals and tangents as tuple displays: "
                          "jvp(f, (x,), (1.0,))")
    fn = static_object(state, scope, node.args[0])
    fn = getattr(fn, "py_func", fn)
    if not is_compilable(fn):
        return state.fail(scope, node, UnsupportedCallError,
                          f"jvp() of '{ast.unparse(node.args[0])}' is not supported",
                          "pass a function defined with def")
    values = [state.lower_expr(scope, e) for t in node.args[1:] for e in t.elts]
    derived = jvp.__astjit_jvp__(fn)
    return scope.emit("call", values, state.loc(node), {"callee": state.functions.request(derived)})


def call_function(state: Lowering, scope: Scope, node: ast.Call, fn: types.FunctionType) -> Value:
    """A `call` node of `fn`'s graph, with the arguments bound to its parameters."""
    loc = state.loc(node)
    signature = inspect.signature(fn, follow_wrapped=False)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
        state.functions.request(fn)  # lowering it reports its *args / **kwargs
        return scope.emit("undef", [], loc)
    arguments = lower_arguments(state, scope, node)
    if arguments is None:
        return scope.emit("undef", [], loc)
    try:
        bound = signature.bind(*arguments[0], **arguments[1])
    except TypeError as error:
        return state.fail(scope, node, CompileError, f"call to '{fn.__name__}': {error}")
    inputs, static = [], []
    written = signature.bind(*node.args, **{k.arg: k.value for k in node.keywords}).arguments
    for param in signature.parameters.values():
        if param.name in static_params(fn):
            value = compile_time_value(state, scope, written[param.name]) \
                if param.name in written else constant_value(param.default)
            if value is NOT_CONSTANT:
                return state.fail(scope, node, UnsupportedCallError,
                                  f"argument '{param.name}' of '{fn.__name__}' must be a "
                                  "compile-time constant",
                                  "write a number, a tuple of numbers, or a global constant")
            static.append((param.name, value))
            continue
        if param.name in bound.arguments:
            inputs.append(bound.arguments[param.name])
            continue
        default = default_argument(state, scope, node, fn, param)
        if default is None:
            return scope.emit("undef", [], loc)
        inputs.append(default)
    callee = state.functions.request(fn, tuple(static))
    return scope.emit("call", inputs, loc, {"callee": callee})


def default_argument(state: Lowering, scope: Scope, node: ast.Call, fn: object,
                     param: inspect.Parameter) -> Value | None:
    """The constant a call of `fn` passes for `param`, which it gave no argument: its
    default; None (the problem reported) when the default is no compile-time constant."""
    default = constant_value(param.default)
    if default is NOT_CONSTANT:
        state.fail(scope, node, UnsupportedCallError,
                   f"the default value of parameter '{param.name}' of '{fn.__name__}' is a "
                   f"{type(param.default).__name__}",
                   "defaults must be numbers, booleans, None or tuples of them; "
                   "pass the argument explicitly")
        return None
    return constant(state, scope, node, default, f"{param.name} (the default of {fn.__name__}())")


EXPRESSIONS: dict[type[ast.expr], ExprRule] = {ast.Call: lower_call}
