"""Lowering the calls that run in the interpreter: `astjit.callback(fn, ...)` and `print(...)`.

Both become one `callback` node (ir/ops/callbacks.py) holding a `Callback`: the
function found at compile time and the IR type of its result, read from the
`result=` keyword (`float`, `int`, `bool`, None, `astjit.ArraySpec(dtype,
ndim)`, or a tuple of them). `print` is a callback of a `Printer`, which holds
the constant strings of the call and the `sep=` / `end=` keywords, and prints
them around the values compiled code passes, as Python's print would.
"""
from __future__ import annotations

import ast
import builtins
from typing import Any

from ..callbacks import ArraySpec
from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.ops.callbacks import Callback
from ..ir.types import BOOL, F64, I64, NONE, ArrayType, TupleType, Type
from .resolve import LOCAL, numpy_dtype, static_object
from .scope import Scope
from .source import NOT_FOUND
from .state import Lowering

_RESULTS = "result= must be float, int, bool, None, astjit.ArraySpec(dtype, ndim) or a tuple of them"


def callback_function(obj: object) -> object:
    """`astjit.callback` itself, else None."""
    return obj if getattr(obj, "__astjit_callback__", False) else None


def print_function(obj: object) -> object:
    return obj if obj is builtins.print else None


def lower_callback(state: Lowering, scope: Scope, node: ast.Call, found: object,
                   name: str) -> Value:
    """`callback(fn, *args, result=T)`: a `callback` node of fn on the args."""
    if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}() takes the function and its arguments one by one",
                          "write callback(fn, x, y, result=float)")
    fn = static_object(state, scope, node.args[0])
    if fn is LOCAL or fn is NOT_FOUND or not callable(fn):
        return state.fail(scope, node, UnsupportedCallError,
                          f"the function of {name}() must be known at compile time, got "
                          f"'{ast.unparse(node.args[0])}'", "pass a global function by its name")
    keywords = {k.arg: k.value for k in node.keywords}
    if set(keywords) - {"result"}:
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}() takes only the keyword result=", _RESULTS)
    result = result_type(state, scope, keywords.get("result"))
    if result is None:
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}(): '{ast.unparse(keywords['result'])}' is not a result type",
                          _RESULTS)
    values = [state.lower_expr(scope, arg) for arg in node.args[1:]]
    return scope.emit("callback", values, state.loc(node), {"fn": Callback(fn, result)})


def result_type(state: Lowering, scope: Scope, node: ast.expr | None) -> Type | None:
    """The IR type `result=` names; None if it names none."""
    if node is None or isinstance(node, ast.Constant) and node.value is None:
        return NONE
    if isinstance(node, ast.Tuple):
        parts = [result_type(state, scope, e) for e in node.elts]
        return None if None in parts else TupleType(tuple(parts))
    if isinstance(node, ast.Call) and static_object(state, scope, node.func) is ArraySpec:
        args = [static_object(state, scope, a) if not isinstance(a, ast.Constant) else a.value
                for a in node.args]
        args += [static_object(state, scope, k.value) if not isinstance(k.value, ast.Constant)
                 else k.value.value for k in node.keywords]
        try:
            spec = ArraySpec(*args[:len(node.args)],
                             **{k.arg: v for k, v in zip(node.keywords, args[len(node.args):])})
        except TypeError:
            return None
        return _spec_type(spec)
    return _spec_type(static_object(state, scope, node))


def _spec_type(spec: object) -> Type | None:
    if spec is None:
        return NONE
    if isinstance(spec, tuple):
        parts = [_spec_type(s) for s in spec]
        return None if None in parts else TupleType(tuple(parts))
    if isinstance(spec, ArraySpec):
        dtype = numpy_dtype(spec.dtype)
        ok = dtype is not None and isinstance(spec.ndim, int) and spec.ndim >= 0
        return ArrayType(dtype, spec.ndim) if ok else None
    return {float: F64, int: I64, bool: BOOL}.get(spec) if isinstance(spec, type) else None


# ---- print --------------------------------------------------------------------------------

class Printer:
    """Python's print of constant strings (`texts`, None where a value goes) and the values
    compiled code passes, with constant `sep`, `end` and `flush`."""

    __slots__ = ("end", "flush", "sep", "texts")

    def __init__(self, texts: tuple[str | None, ...], sep: str | None, end: str | None,
                 flush: bool):
        self.texts, self.sep, self.end, self.flush = texts, sep, end, flush

    def __call__(self, *values: Any) -> None:
        given = iter(values)
        items = [next(given) if text is None else text for text in self.texts]
        print(*items, sep=self.sep, end=self.end, flush=self.flush)

    def __repr__(self) -> str:
        return "print"


def lower_print(state: Lowering, scope: Scope, node: ast.Call, found: object, name: str) -> Value:
    """`print(...)`: constant strings stay in the Printer, other arguments are operands."""
    options: dict[str, Any] = {"sep": None, "end": None, "flush": False}
    for keyword in node.keywords:
        value = keyword.value.value if isinstance(keyword.value, ast.Constant) else NOT_FOUND
        wanted = bool if keyword.arg == "flush" else (str, type(None))
        if keyword.arg not in options or not isinstance(value, wanted):
            return state.fail(scope, node, UnsupportedCallError,
                              f"print(..., {ast.unparse(keyword)}) is not supported",
                              "compiled print takes constant sep=, end= and flush=; it "
                              "writes to sys.stdout")
        options[keyword.arg] = value
    texts: list[str | None] = []
    values = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            return state.unsupported(scope, arg)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            texts.append(arg.value)
            continue
        texts.append(None)
        values.append(state.lower_expr(scope, arg))
    printer = Printer(tuple(texts), options["sep"], options["end"], options["flush"])
    return scope.emit("callback", values, state.loc(node), {"fn": Callback(printer, NONE, "print")})
