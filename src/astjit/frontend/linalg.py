"""Lowering NumPy's matrix functions: np.matmul, np.diag, np.eye (ir/ops/linalg.py) and
np.dot, np.outer, np.trace, np.einsum, np.linalg.norm/solve/inv/det/cholesky, which lower
to one `linalg_function` node each that type inference replaces by primitives
(ir/ops/linalg_functions.py).

Found by identity, as the creation functions are (the table is built on first
use, so importing astjit does not import NumPy). `a @ b` itself is the
`matmul` op of the binary operator table (operators.py).

| call | node |
|---|---|
| `np.matmul(a, b)` | `matmul(a, b)` (as `a @ b`) |
| `np.dot(a, b)` | `linalg_function(a, b) {function="dot"}` |
| `np.outer`, `np.trace`, `np.linalg.*` | `linalg_function(arrays) {function, statics}` |
| `np.einsum(subscripts, *operands)` | `linalg_function(*operands) {function="einsum", subscripts}` |
| `np.diag(v, k=0)` | `diag(v, k)` |
| `np.eye(N, M=None, k=0, dtype=float)` | `eye(N, M or N, k) {dtype}` |

`dtype=` is read at compile time (`resolve.static_dtype`), and so are `ord=`, `axis=`,
`keepdims=`, `offset=`, `axis1=`/`axis2=`, `upper=` and einsum's subscripts (a string);
`out=` and the other keywords of the ufunc np.matmul are not supported, einsum's
`optimize=` is accepted and ignored (the result does not depend on it).
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
from .signatures import bind_arguments, static_argument
from .source import NOT_CONSTANT
from .state import Lowering

SIGNATURES: dict[str, tuple[tuple[str, ...], int]] = {
    "matmul": (("x1", "x2"), 2),
    "diag": (("v", "k"), 1), "eye": (("N", "M", "k", "dtype"), 1),
}
"""Function name -> (its parameters, by NumPy's names; how many are required)."""

VALUE, STATIC, DTYPE, DEFAULT_ONLY = "value", "static", "dtype", "default only"
FUNCTIONS: dict[str, tuple] = {
    "dot": (("a", VALUE), ("b", VALUE), ("out", DEFAULT_ONLY, None)),
    "outer": (("a", VALUE), ("b", VALUE), ("out", DEFAULT_ONLY, None)),
    "trace": (("a", VALUE), ("offset", STATIC, 0), ("axis1", STATIC, 0), ("axis2", STATIC, 1),
              ("dtype", DTYPE, None), ("out", DEFAULT_ONLY, None)),
    "linalg.norm": (("x", VALUE), ("ord", STATIC, None), ("axis", STATIC, None),
                    ("keepdims", STATIC, False)),
    "linalg.solve": (("a", VALUE), ("b", VALUE)),
    "linalg.inv": (("a", VALUE),),
    "linalg.det": (("a", VALUE),),
    "linalg.cholesky": (("a", VALUE), ("upper", STATIC, False)),
}
"""np.<name>: its parameters (name, kind[, default]) in NumPy's order; np.einsum apart."""


@functools.cache
def linalg_table() -> dict[object, str]:
    import numpy

    def function(name):
        module, _, attr = name.rpartition(".")
        return getattr(numpy.linalg if module else numpy, attr)
    return {function(name): name for name in (*SIGNATURES, *FUNCTIONS, "einsum")}


def numpy_linalg(obj: object) -> str | None:
    """The name ('dot', 'linalg.inv' ...) when `obj` is a NumPy function lowered here."""
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
    """The node of a call of np.matmul / np.diag / np.eye / np.dot ... (`which`)."""
    if which == "einsum":
        return _lower_einsum(state, scope, node, name)
    if which in FUNCTIONS:
        return _lower_function(state, scope, node, which, name)
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

    if which == "matmul":
        return scope.emit("matmul", [value("x1"), value("x2")], loc)
    if which == "diag":
        return scope.emit("diag", [value("v"), value("k", 0)], loc)
    n = value("N")
    m = value("M") if "M" in args else n
    return scope.emit("eye", [n, m, value("k", 0)], loc, {"dtype": dtype})


def _lower_function(state: Lowering, scope: Scope, node: ast.Call, which: str,
                    name: str) -> Value:
    params = FUNCTIONS[which]
    try:
        bound = bind_arguments(node, params, list(node.args), name)
    except CallError as error:
        return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)
    inputs, attrs = [], {"function": which}
    for pname, kind, *default in params:
        expr = bound.get(pname)
        if kind == VALUE:
            inputs.append(state.lower_expr(scope, expr))
            continue
        if kind == DTYPE:
            attrs[pname] = None if expr is None else static_dtype(state, scope, expr, name)
            continue
        value = default[0] if expr is None else static_argument(state, scope, expr)
        if value is NOT_CONSTANT:
            return state.fail(scope, node, UnsupportedCallError,
                              f"the argument {pname}= of {name}() must be known at compile "
                              f"time, got '{ast.unparse(expr)}'",
                              "write a literal, e.g. axis=0, or a global constant")
        if kind == DEFAULT_ONLY:
            if value is not default[0]:
                return state.fail(scope, node, UnsupportedCallError,
                                  f"the argument {pname}= of {name}() is not supported",
                                  "assign the result instead")
            continue
        attrs[pname] = value
    return scope.emit("linalg_function", inputs, state.loc(node), attrs)


def _lower_einsum(state: Lowering, scope: Scope, node: ast.Call, name: str) -> Value:
    """np.einsum(subscripts, *operands, optimize=...): the subscripts a string known at
    compile time, the operands values."""
    hint = "write the subscripts as a string literal: np.einsum('ij,jk->ik', a, b)"
    if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
        return state.fail(scope, node, UnsupportedCallError,
                          f"{name}() takes the subscripts string, then the operands", hint)
    for keyword in node.keywords:
        if keyword.arg != "optimize":
            return state.fail(scope, node, UnsupportedCallError,
                              f"the argument {keyword.arg}= of {name}() is not supported",
                              "only optimize= is accepted (and ignored)")
    subscripts = static_argument(state, scope, node.args[0])
    if not isinstance(subscripts, str):
        return state.fail(scope, node, UnsupportedCallError,
                          f"the subscripts of {name}() must be a string known at compile time",
                          hint)
    inputs = [state.lower_expr(scope, a) for a in node.args[1:]]
    return scope.emit("linalg_function", inputs, state.loc(node),
                      {"function": "einsum", "subscripts": subscripts})
