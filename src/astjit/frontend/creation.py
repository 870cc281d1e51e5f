"""Lowering calls of NumPy's array creation functions.

The callee is found by identity, as `math.sqrt` is: `np.zeros` with `import
numpy as np`, `numpy.zeros`, `from numpy import zeros` are the same function
object, looked up in `creation_table()` (built on first use, so importing astjit
does not import NumPy). A NumPy callable that no module lowers (`np.linalg.eig`)
is calls.py's UnsupportedCallError ("np.linalg.eig is not supported yet").

| call | node |
|---|---|
| `np.empty/zeros/ones(shape, dtype=float64)` | `array_new(*dims) {dtype, fill=None/0/1}` |
| `np.full(shape, v, dtype=None)` | `array_new(*dims, v) {dtype, fill="value"}` |
| `np.empty/zeros/ones_like(x, dtype=None)` | `array_new_like(x) {dtype, fill, what}` |
| `np.full_like(x, v, dtype=None)` | `array_new_like(x, v) {dtype, fill="value", what}` |
| `np.arange(stop)`, `(start, stop)`, `(start, stop, step)` | `array_arange(...)` |

A shape written as a tuple display (`(n, m)`, or a list) gives one dimension
input per element. Any other shape expression (`n`, `a.shape`, a tuple
variable) is one input whose type the frontend does not know: the node then has
`packed_shape=True`, and type inference replaces it by its elements (one for an
int, one per element of a tuple of ints), dropping the marker.

`dtype=x.dtype` takes the dtype of array `x` (an extra last input, marked
`dtype_of`, which type inference reads and drops). Any other `dtype=` is read
at compile time: anything `numpy.dtype` accepts (`np.float32`,
`float`, `"int64"`, `np.bool_` ...) that is one of the dtypes compiled code
supports (float64, float32, int64, bool). Left out, `np.full`'s dtype is that
of its fill value (as NumPy's: `np.full(3, 7)` holds int64), which type
inference fills in (`dtype=None` until then); a `*_like`'s is its argument's.
"""
from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from ..errors import UnsupportedCallError
from ..ir.core import Value
from ..ir.types import F64
from .builtins import CallError, numpy_lookup
from .resolve import dtype_of_array, static_dtype
from .scope import Scope
from .state import Lowering


@dataclass(frozen=True)
class Creation:
    """One NumPy creation function: how its arguments map to the node it becomes."""

    name: str
    """'zeros', 'full_like', ...: shown in messages as np.<name>."""
    params: tuple[str, ...]
    """Its leading parameters, by NumPy's names; the last is always `dtype`."""
    fill: object
    """The node's `fill` attr: None (empty), 0, 1, or "value" (the inputs end with it)."""

    @property
    def like(self) -> bool:
        return self.name.endswith("_like")


def _creations() -> tuple[Creation, ...]:
    made = []
    for base, fill in (("empty", None), ("zeros", 0), ("ones", 1), ("full", "value")):
        value = ("fill_value",) if fill == "value" else ()
        made.append(Creation(base, ("shape", *value, "dtype"), fill))
        made.append(Creation(f"{base}_like", ("a", *value, "dtype"), fill))
    return tuple(made)


ARANGE = "arange"


@functools.cache
def creation_table() -> dict[object, Creation | str]:
    """NumPy function object -> its Creation (or ARANGE). Imports NumPy: call it only
    once a NumPy object has been seen."""
    import numpy

    table: dict[object, Creation | str] = {getattr(numpy, c.name): c for c in _creations()}
    table[numpy.arange] = ARANGE
    return table


def numpy_handler(obj: object) -> Creation | str | None:
    """What compiling a call of `obj` takes, if it is a NumPy function compiled code supports."""
    return numpy_lookup(creation_table, obj)


def lower_numpy_creation(state: Lowering, scope: Scope, node: ast.Call, handler: Creation | str,
                         name: str) -> Value:
    """Lower a call of a supported NumPy function (`handler` from `numpy_handler`)."""
    try:
        if handler == ARANGE:
            return _arange(state, scope, node, name)
        return _creation(state, scope, node, handler, name)
    except CallError as error:
        return state.fail(scope, node, UnsupportedCallError, error.message, error.hint)


def _creation(state: Lowering, scope: Scope, node: ast.Call, creation: Creation,
              name: str) -> Value:
    args = bind_arguments(node, creation.params, name)
    loc = state.loc(node)
    dtype_of = dtype_of_array(state, scope, args.get("dtype"))
    dtype = None if dtype_of is not None else static_dtype(state, scope, args.get("dtype"), name)
    if dtype is None and not (creation.like or creation.fill == "value"):
        dtype = F64
    attrs: dict = {"dtype": dtype, "fill": creation.fill}
    if creation.like:
        attrs["what"] = name  # the type rule's messages name the function
        inputs = [state.lower_expr(scope, args["a"])]
    else:
        inputs = _shape(state, scope, args["shape"], attrs)
    if creation.fill == "value":
        inputs.append(state.lower_expr(scope, args["fill_value"]))
    if dtype_of is not None:
        attrs["dtype_of"] = True  # type inference takes the dtype of this last input
        inputs.append(state.lower_expr(scope, dtype_of))
    op = "array_new_like" if creation.like else "array_new"
    return scope.emit(op, inputs, loc, attrs)


def _shape(state: Lowering, scope: Scope, shape: ast.expr, attrs: dict) -> list[Value]:
    """The dimension inputs: one per element of a display, else one packed shape value."""
    if isinstance(shape, (ast.Tuple, ast.List)) \
            and not any(isinstance(e, ast.Starred) for e in shape.elts):
        return [state.lower_expr(scope, e) for e in shape.elts]
    attrs["packed_shape"] = True
    return [state.lower_expr(scope, shape)]


def _arange(state: Lowering, scope: Scope, node: ast.Call, name: str) -> Value:
    if node.keywords:
        word = node.keywords[0].arg
        hint = ("its dtype comes from its arguments (int64, or float64 when one is a float); "
                "write float(n) for a float array") if word == "dtype" else \
            "pass start, stop and step by position"
        raise CallError(f"the keyword argument {word}= of {name}() is not supported", hint)
    if not 1 <= len(node.args) <= 3 or any(isinstance(a, ast.Starred) for a in node.args):
        raise CallError(f"{name}() takes 1 to 3 arguments (start, stop, step), "
                        f"got {len(node.args)}")
    inputs = [state.lower_expr(scope, arg) for arg in node.args]
    return scope.emit("array_arange", inputs, state.loc(node))


def bind_arguments(node: ast.Call, params: tuple[str, ...], name: str) -> dict[str, ast.expr]:
    """Parameter name -> argument expression, bound as Python binds them; CallError otherwise."""
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None
                                                                 for k in node.keywords):
        raise CallError("*args and **kwargs arguments are not supported",
                        "pass each argument explicitly")
    if len(node.args) > len(params):
        raise CallError(f"{name}() takes at most {len(params)} positional arguments here "
                        f"({', '.join(params)}), got {len(node.args)}")
    bound = dict(zip(params, node.args))
    for keyword in node.keywords:
        if keyword.arg not in params:
            raise CallError(f"the keyword argument {keyword.arg}= of {name}() is not supported",
                            f"compiled code takes {name}({', '.join(params)})")
        if keyword.arg in bound:
            raise CallError(f"{name}() got multiple values for argument '{keyword.arg}'")
        bound[keyword.arg] = keyword.value
    missing = [p for p in params if p != "dtype" and p not in bound]
    if missing:
        raise CallError(f"{name}() is missing the argument '{missing[0]}'")
    return bound
