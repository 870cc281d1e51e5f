"""Lowering NumPy's matrix functions: np.dot, np.matmul, np.diag, np.eye (ir/ops/linalg.py).

Found by identity, as the creation functions are (the table is built on first
use, so importing astjit does not import NumPy). `a @ b` itself is the
`matmul` op of the binary operator table (operators.py).

| call | node |
|---|---|
| `np.matmul(a, b)` | `matmul(a, b)` (as `a @ b`) |
| `np.dot(a, b)` | `matmul(a, b) {kind="dot"}` (NumPy's np.dot error message) |
| `np.diag(v, k=0)` | `diag(v, k)` |
| `np.eye(N, M=None, k=0, dtype=float)` | `eye(N, M or N, k) {dtype}` |

`dtype=` is read at compile time (`resolve.static_dtype`); `out=` and
the other keywords of the ufunc np.matmul are not supported.
"""
from __future__ import annotations

import ast
import functools

from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.types import F64
from .builtins import CallError, numpy_lookup
from .resolve import static_dtype
from .scope import Scope
from .state import Lowering

SIGNATURES: dict[str, tuple[tuple[str, ...], int]] = {
    "matmul": (("x1", "x2"), 2), "dot": (("a", "b"), 2),
    "diag": (("v", "k"), 1), "eye": (("N", "M", "k", "dtype"), 1),
}
"""Function name -> (its parameters, by NumPy's names; how many are required)."""


@functools.cache
def linalg_table() -> dict[object, str]:
    import numpy

    return {getattr(numpy, name): name for name in SIGNATURES}


def numpy_linalg(obj: object) -> str | None:
    """'dot', 'matmul', 'diag' or 'eye' when `obj` is that NumPy function, else None."""
    return numpy_lookup(linalg_table, obj)


def bind(node: ast.Call, which: str, name: str) -> dict[str, ast.expr]:
    """Parameter name -> argument expression (None literals left out); CallError otherwise."""
    params, required = SIGNATURES[which]
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None
                                                                 for k in node.keywords):
        raise CallError("*args and **kwargs arguments are not supported",
                        "pass each argument explicitly")
    if len(node.args) > len(params):
        raise CallError(f"{name}() takes at most {len(params)} arguments here "
                        f"({', '.join(params)}), got {len(node.args)}")
    bound = dict(zip(params, node.args))
    positional_only = which == "matmul"
    for keyword in node.keywords:
        if keyword.arg not in params or positional_only:
            raise CallError(f"the keyword argument {keyword.arg}= of {name}() is not supported",
                            f"compiled code takes {name}({', '.join(params)})")
        if keyword.arg in bound:
            raise CallError(f"{name}() got multiple values for argument '{keyword.arg}'")
        bound[keyword.arg] = keyword.value
    missing = [p for p in params[:required] if p not in bound]
    if missing:
        raise CallError(f"{name}() is missing the argument '{missing[0]}'")
    return {p: e for p, e in bound.items()
            if not (isinstance(e, ast.Constant) and e.value is None)}


def lower_numpy_linalg(state: Lowering, scope: Scope, node: ast.Call, which: str, name: str) -> Value:
    """The node of a call of np.dot / np.matmul / np.diag / np.eye (`which`)."""
    loc = state.loc(node)
    try:
        args = bind(node, which, name)
        if which == "eye":
            dtype = static_dtype(state, scope, args.get("dtype"), name) or F64
    except CallError as error:
        return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)

    def value(param: str, default: int | None = None) -> Value:
        if param not in args:
            return scope.const(default, loc)
        return state.lower_expr(scope, args[param])

    if which in ("dot", "matmul"):
        first, second = SIGNATURES[which][0]
        attrs = {"kind": "dot"} if which == "dot" else None
        return scope.emit("matmul", [value(first), value(second)], loc, attrs)
    if which == "diag":
        return scope.emit("diag", [value("v"), value("k", 0)], loc)
    n = value("N")
    m = value("M") if "M" in args else n
    return scope.emit("eye", [n, m, value("k", 0)], loc, {"dtype": dtype})
