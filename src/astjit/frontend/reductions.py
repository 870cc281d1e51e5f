"""Lowering reductions: NumPy's reducing functions and their array methods.

| call | node |
|---|---|
| `np.sum(x)`, `x.sum()`, `np.prod`, `np.any`, `np.nanmax` ... | `reduce x {kind, axis, ...}` |
| `np.var(x, axis, ddof=1)`, `np.ptp`, `np.nanmean` ... | `statistic x, ddof {kind, axis, ...}` |
| `np.argmax(x, axis)`, `x.argmin()` | `arg_reduce x {kind, axis, keepdims}` |
| `np.cumsum(x, axis)`, `x.cumprod()` | `scan x {kind, axis, dtype}` |

(`reduce`: a row of ir/ops/reductions.py; `statistic`: ir/ops/statistics.py; `arg_reduce`
and `scan`: ir/ops/scans.py.)

Arguments bind as NumPy's signatures do (`PARAMETERS`: positional or by keyword).
`axis`, `keepdims` and `dtype` are read at compile time (`compile_time_value`: a
literal, a global constant, a static parameter): the result's type depends on them.
`axis` is None, an int or (where NumPy takes one) a tuple of ints, stored as None or
a tuple; it is checked against the array's ndim by type inference, which knows it.
`dtype=y.dtype` takes y's dtype, read by type inference (an `array_function` making the
op). `ddof` is an operand (any int or float), and so is `initial=` of the extrema (max, min,
nanmax, nanmin), which makes the call an `array_function` (ir/ops/shape_functions.py:
`extremum`). NumPy's other parameters (`out=`, `where=`, ...) are reported as not
supported.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.ops.reductions import REDUCTIONS
from ..ir.ops.shape_functions import EXTREMA
from ..ir.ops.statistics import STATISTICS
from ..ir.types import BOOL
from .builtins import CallError, numpy_lookup
from .resolve import compile_time_value, dtype_of_array, static_dtype
from .scope import Scope
from .source import NOT_CONSTANT

AXIS_HINT = "write the axis as a constant: x.sum(axis=1), np.max(x, axis=(0, 1)), or leave it out"
SUPPORTED = ("axis", "keepdims", "dtype", "ddof")
"""The parameters compiled code takes; the others must be left out (or None)."""


@dataclass(frozen=True)
class Reducer:
    """How one NumPy function lowers."""

    op: str
    """The IR op: 'reduce', 'statistic', 'arg_reduce' or 'scan'."""
    kind: str
    """Its `kind` attr."""
    params: tuple[str, ...]
    """NumPy's parameters after the array, in positional order."""
    tuple_axis: bool = True
    """NumPy takes a tuple of axes (argmax and cumsum take one int)."""


_ROW = ("axis", "dtype", "out", "keepdims", "initial", "where")
_EXTREMUM = ("axis", "out", "keepdims", "initial", "where")
_LOGICAL = ("axis", "out", "keepdims", "where")
_VAR = ("axis", "dtype", "out", "ddof", "keepdims", "where", "mean", "correction")
_PARAMS = {"sum": _ROW, "prod": _ROW, "mean": ("axis", "dtype", "out", "keepdims", "where"),
           "max": _EXTREMUM, "min": _EXTREMUM, "nanmax": _EXTREMUM, "nanmin": _EXTREMUM,
           "any": _LOGICAL, "all": _LOGICAL, "var": _VAR, "std": _VAR, "nanvar": _VAR,
           "nanstd": _VAR, "nanmean": ("axis", "dtype", "out", "keepdims", "where"),
           "nansum": _ROW, "nanprod": _ROW, "ptp": ("axis", "out", "keepdims"),
           "count_nonzero": ("axis", "keepdims")}

FUNCTIONS: dict[str, Reducer] = {
    **{name: Reducer("reduce", row.name, _PARAMS.get(row.name, _ROW))
       for row in REDUCTIONS.values() for name in row.spellings},
    **{kind: Reducer("statistic", kind, _PARAMS[kind]) for kind in STATISTICS},
    **{f"arg{kind}": Reducer("arg_reduce", kind, ("axis", "out", "keepdims"), False)
       for kind in ("max", "min")},
    **{f"cum{kind}": Reducer("scan", kind, ("axis", "dtype", "out"), False)
       for kind in ("sum", "prod")},
}
"""NumPy function name -> how it lowers."""
METHODS = ("sum", "mean", "max", "min", "prod", "any", "all", "var", "std", "argmax", "argmin",
           "cumsum", "cumprod")
"""The array methods that are reductions (NumPy's, with its functions' parameters)."""
FLOAT_DTYPE = ("mean", "var", "std", "nanvar", "nanstd", "nanmean")
"""The kinds whose `dtype=` must be a float type (the others also take int64)."""


@functools.cache
def _function_table() -> dict[object, str]:
    import numpy

    return {getattr(numpy, name): name for name in FUNCTIONS if hasattr(numpy, name)}


def numpy_reduction(obj: object) -> str | None:
    """The name of `obj` if it is np.sum, np.var, np.argmax ... else None."""
    return numpy_lookup(_function_table, obj)


def lower_numpy_reduction(lowerer, scope: Scope, node: ast.Call, function: str,
                          name: str) -> Value:
    """`np.sum(x, axis, keepdims=...)`: the array is the first argument."""
    if not node.args and not any(k.arg == "a" for k in node.keywords):
        return lowerer.fail(scope, node, UnsupportedCallError, f"{name}() needs an array")
    args = list(node.args)
    keywords = list(node.keywords)
    array_node = args.pop(0) if args else next(k.value for k in keywords if k.arg == "a")
    keywords = [k for k in keywords if k.arg != "a"]
    return _lower(lowerer, scope, node, FUNCTIONS[function], name, array_node, args, keywords)


def lower_reduction_method(lowerer, scope: Scope, node: ast.Call) -> Value:
    """`x.sum(axis, keepdims=...)`: the array is the method's object."""
    name = node.func.attr
    return _lower(lowerer, scope, node, FUNCTIONS[name], name, node.func.value, list(node.args),
                  list(node.keywords))


def _lower(lowerer, scope: Scope, node: ast.Call, reducer: Reducer, name: str,
           array_node: ast.expr, args: list[ast.expr], keywords: list[ast.keyword]) -> Value:
    try:
        given = _bind(reducer, name, args, keywords)
    except CallError as error:
        return lowerer.fail(scope, node, UnsupportedCallError, error.message, error.hint)
    array = lowerer.lower_expr(scope, array_node)
    loc = lowerer.loc(node)
    axis = _static_axis(lowerer, scope, given.get("axis"), name, reducer.tuple_axis)
    keepdims = _static_keepdims(lowerer, scope, given.get("keepdims"), name)
    dtype_of = dtype_of_array(lowerer, scope, given.get("dtype"))
    try:
        dtype = None if dtype_of else _dtype(lowerer, scope, given.get("dtype"), name, reducer)
    except CallError as error:
        return lowerer.fail(scope, node, UnsupportedCallError, error.message, error.hint)
    if axis is NOT_CONSTANT or keepdims is NOT_CONSTANT:
        return scope.emit("undef", [], loc)
    attrs = {"kind": reducer.kind, "axis": axis}
    if reducer.op != "scan":
        attrs["keepdims"] = keepdims
    if dtype is not None:
        attrs["dtype"] = dtype
    initial = given.get("initial")
    if initial is not None and not (isinstance(initial, ast.Constant) and initial.value is None):
        # np.max(x, initial=v): made of primitives by type inference
        attrs = {"function": reducer.kind, "arguments": (("a", None), ("initial", None)),
                 "axis": axis, "keepdims": keepdims}
        return scope.emit("array_function", [array, lowerer.lower_expr(scope, initial)], loc,
                          attrs)
    inputs = [array]
    if reducer.op == "statistic":
        ddof = given.get("ddof")
        inputs.append(lowerer.lower_expr(scope, ddof) if ddof is not None
                      else scope.const(0, loc))
    if dtype_of is not None:  # dtype=y.dtype: the op made by inference, which knows y's
        named = (("a", None), ("ddof", None))[:len(inputs)] + (("dtype_of", None),)
        attrs = {**attrs, "function": "reduction", "op": reducer.op, "arguments": named,
                 "dtype": None}
        return scope.emit("array_function", [*inputs, lowerer.lower_expr(scope, dtype_of)],
                          loc, attrs)
    return scope.emit(reducer.op, inputs, loc, attrs)


def _bind(reducer: Reducer, name: str, args: list[ast.expr],
          keywords: list[ast.keyword]) -> dict[str, ast.expr]:
    """NumPy's parameters given, by name; a CallError for what compiled code does not take."""
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in keywords):
        raise CallError("*args and **kwargs arguments are not supported",
                        "pass each argument explicitly")
    if len(args) > len(reducer.params):
        raise CallError(f"{name}() takes at most {len(reducer.params) + 1} positional "
                        f"arguments ({len(args) + 1} given)")
    given = dict(zip(reducer.params, args))
    for k in keywords:
        if k.arg not in reducer.params:
            raise CallError(f"{name}() got an unexpected keyword argument '{k.arg}'")
        if k.arg in given:
            raise CallError(f"{name}() got multiple values for argument '{k.arg}'")
        given[k.arg] = k.value
    for param, value in given.items():
        if param == "initial" and reducer.op == "reduce" and reducer.kind in EXTREMA:
            continue
        if param not in SUPPORTED and not (isinstance(value, ast.Constant) and value.value is None):
            takes = ", ".join(f"{p}=" for p in reducer.params if p in SUPPORTED)
            raise CallError(f"the argument {param}= of {name}() is not supported yet",
                            f"compiled code takes {name}(x, {takes})")
    return given


def _dtype(lowerer, scope: Scope, node: ast.expr | None, name: str, reducer: Reducer):
    """The `dtype=` argument's IR type, or None; a CallError where the kind can't take it."""
    dtype = static_dtype(lowerer, scope, node, name)
    if dtype is None:
        return None
    if dtype == BOOL or reducer.kind in FLOAT_DTYPE and not dtype.is_float:
        what = "a float type" if reducer.kind in FLOAT_DTYPE else "a float type or int64"
        raise CallError(f"dtype={ast.unparse(node)} of {name}() is not supported: it takes {what}")
    return dtype


def _static_axis(lowerer, scope: Scope, node: ast.expr | None, name: str, tuples: bool):
    """None or a tuple of ints; NOT_CONSTANT (reported) when not a compile-time constant."""
    if node is None:
        return None
    value = compile_time_value(lowerer, scope, node)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if tuples and isinstance(value, tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    what = "is not a compile-time constant" if value is NOT_CONSTANT \
        else "is not an int or a tuple of ints" if tuples else "is not an int"
    lowerer.report(UnsupportedCallError, f"the axis of {name}() ({ast.unparse(node)}) {what}",
                   node, AXIS_HINT)
    return NOT_CONSTANT


def _static_keepdims(lowerer, scope: Scope, node: ast.expr | None, name: str):
    """The keepdims flag; NOT_CONSTANT (reported) unless a compile-time bool."""
    if node is None:
        return False
    value = compile_time_value(lowerer, scope, node)
    if isinstance(value, bool):
        return value
    lowerer.report(UnsupportedCallError,
                   f"keepdims= of {name}() must be True or False at compile time, "
                   f"got '{ast.unparse(node)}'", node)
    return NOT_CONSTANT
