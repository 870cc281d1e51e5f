"""Lowering NumPy's sorting, searching and order-statistic functions and methods
(`np.sort`, `x.sort()`, `np.argsort`, `np.searchsorted`, `np.unique`, `np.nonzero`,
`np.where(cond)`, `np.median`, `np.percentile`, `np.quantile`) to one `sorting_function`
node each, which type inference replaces by primitives (ir/ops/sorting_functions.py).

Arguments bind by NumPy's parameter names: the arrays (and q, v) are values; `axis`,
`kind`, `stable`, `side`, `keepdims`, `method` and `overwrite_input` are read at compile
time; NumPy's other parameters (`out=`, `sorter=`, `return_index=`, `order=` ...) are
refused unless given their default. `overwrite_input=` is accepted and ignored (compiled
code never overwrites the input; NumPy's result does not depend on it). np.where with
three arguments is the elementwise select (frontend/ufuncs.py).
"""
from __future__ import annotations

import ast
import functools

from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.ops.sorting_functions import FUNCTIONS
from .builtins import CallError, numpy_lookup
from .scope import Scope
from .signatures import bind_arguments, static_argument
from .source import NOT_CONSTANT
from .state import Lowering

VALUE, STATIC, DEFAULT_ONLY = "value", "static", "default only"

_SORT = (("a", VALUE), ("axis", STATIC, -1), ("kind", STATIC, None), ("order", DEFAULT_ONLY, None),
         ("stable", STATIC, None))
_QUANTILE = (("a", VALUE), ("q", VALUE), ("axis", STATIC, None), ("out", DEFAULT_ONLY, None),
             ("overwrite_input", STATIC, False), ("method", STATIC, "linear"),
             ("keepdims", STATIC, False), ("weights", DEFAULT_ONLY, None),
             ("interpolation", DEFAULT_ONLY, None))
SIGNATURES: dict[str, tuple] = {
    "sort": _SORT,
    "argsort": _SORT,
    "searchsorted": (("a", VALUE), ("v", VALUE), ("side", STATIC, "left"),
                     ("sorter", DEFAULT_ONLY, None)),
    "unique": (("ar", VALUE), ("return_index", DEFAULT_ONLY, False),
               ("return_inverse", DEFAULT_ONLY, False), ("return_counts", DEFAULT_ONLY, False),
               ("axis", DEFAULT_ONLY, None), ("equal_nan", DEFAULT_ONLY, True),
               ("sorted", DEFAULT_ONLY, True)),
    "nonzero": (("a", VALUE),),
    "where": (("condition", VALUE),),
    "median": (("a", VALUE), ("axis", STATIC, None), ("out", DEFAULT_ONLY, None),
               ("overwrite_input", STATIC, False), ("keepdims", STATIC, False)),
    "percentile": _QUANTILE,
    "quantile": _QUANTILE,
}
"""np.<name>: its parameters, (name, kind, default), in NumPy's order."""
assert set(SIGNATURES) == set(FUNCTIONS)

METHODS = {"sort": ("sort_in_place", _SORT), "argsort": ("argsort", _SORT),
           "nonzero": ("nonzero", (("a", VALUE),))}
"""x.<name>(...): the function it is and its parameters (the array bound to the first)."""
HINTS = {"sorter": "write np.searchsorted(a[sorter], v)",
         "order": "structured arrays are not supported",
         "out": "assign the result instead: out[...] = np.median(x)"}


@functools.cache
def _function_table() -> dict[object, str]:
    import numpy

    return {getattr(numpy, name): name for name in SIGNATURES}


def numpy_sorting_function(obj: object) -> str | None:
    """The name of `obj` if it is one of the NumPy functions lowered here, else None."""
    return numpy_lookup(_function_table, obj)


def lower_numpy_sorting_function(state: Lowering, scope: Scope, node: ast.Call, function: str,
                                 name: str) -> Value:
    if function == "where" and (len(node.args) != 1 or node.keywords):
        import numpy

        from .calls import lower_builtin_call
        from .ufuncs import ufunc_handler
        return lower_builtin_call(state, scope, node, ufunc_handler(numpy.where), name)
    return _lower(state, scope, node, function, name, SIGNATURES[function], list(node.args))


def lower_sorting_method(state: Lowering, scope: Scope, node: ast.Call) -> Value:
    """`x.sort()`, `x.argsort(axis=0)`, `x.nonzero()`."""
    function, params = METHODS[node.func.attr]
    return _lower(state, scope, node, function, node.func.attr, params,
                  [node.func.value, *node.args])


def _lower(state: Lowering, scope: Scope, node: ast.Call, function: str, name: str,
           params: tuple, args: list[ast.expr]) -> Value:
    try:
        bound = bind_arguments(node, params, args, name)
    except CallError as error:
        return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)
    inputs, attrs = [], {"function": function}
    for pname, kind, *default in params:
        expr = bound.get(pname)
        if kind == VALUE:
            inputs.append(state.lower_expr(scope, expr))
            continue
        value = default[0] if expr is None else static_argument(state, scope, expr)
        if value is NOT_CONSTANT:
            return state.fail(scope, node, UnsupportedCallError,
                              f"the argument {pname}= of {name}() must be known at compile "
                              f"time, got '{ast.unparse(expr)}'",
                              "write a literal, e.g. axis=0, or a global constant")
        if kind == DEFAULT_ONLY:
            if value != default[0] or type(value) is not type(default[0]):
                return state.fail(scope, node, UnsupportedCallError,
                                  f"the argument {pname}= of {name}() is not supported yet",
                                  HINTS.get(pname, f"leave {pname}= out"))
            continue
        if pname != "overwrite_input":
            attrs[pname] = value
    if function == "median" or function in ("percentile", "quantile"):
        attrs.setdefault("keepdims", False)
    return scope.emit("sorting_function", inputs, state.loc(node), attrs)
