"""Lowering calls of NumPy: the array creation functions, and a clear error for the rest.

The callee is found by identity, as `math.sqrt` is: `np.zeros` with `import
numpy as np`, `numpy.zeros`, `from numpy import zeros` are the same function
object, looked up in `CREATION` (built on first use, so importing astjit does not
import NumPy). Any other NumPy callable (`np.sum`, `np.linalg.inv`, a ufunc) is
an UnsupportedCallError naming it ("np.linalg.inv is not supported yet").

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
from ..ir.types import F64, NUMPY_DTYPES, ScalarType
from .builtins import CallError, numpy_lookup
from .lower import LOCAL, ExpressionLowerer, is_numpy_module
from .scope import Scope
from .source import NOT_FOUND

SUPPORTED_NUMPY = ("np.empty, np.zeros, np.ones, np.full, their *_like forms, np.arange, "
                   "np.eye, np.diag, np.dot, np.matmul (and a @ b) of 1-d and 2-d arrays, "
                   "NumPy's elementwise functions (np.exp, np.maximum, np.where, ...) and "
                   "the reductions np.sum, np.mean, np.max, np.min (np.amax, np.amin, and "
                   "the methods x.sum() ...); other whole-array operations (np.prod, "
                   "np.cumsum, ...) come later: loop over the elements instead")
DTYPE_HINT = ("write the dtype as np.float64, np.float32, np.int64 or np.bool_ "
              "(or float, int, bool)")


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


def is_numpy_callable(obj: object) -> bool:
    """A function, ufunc or class of NumPy (`np.sum`, `np.sin`, `np.linalg.inv`, `np.float64`)."""
    module = getattr(obj, "__module__", None)
    return callable(obj) and isinstance(module, str) and module.partition(".")[0] == "numpy"


def numpy_dtype(obj: object) -> ScalarType | None:
    """The IR scalar type of a dtype-like compile-time object; None if unsupported."""
    import numpy

    try:
        name = numpy.dtype(obj).name
    except (TypeError, ValueError):
        return None
    found = NUMPY_DTYPES.get(name)
    return ScalarType(found) if found else None


class NumpyCallLowerer(ExpressionLowerer):
    """Expressions, plus calls of NumPy's creation functions."""

    def call_numpy(self, scope: Scope, node: ast.Call, handler: Creation | str, name: str) -> Value:
        """Lower a call of a supported NumPy function (`handler` from `numpy_handler`)."""
        try:
            if handler == ARANGE:
                return self.call_arange(scope, node, name)
            return self.call_creation(scope, node, handler, name)
        except CallError as error:
            return self.fail(scope, node, UnsupportedCallError, error.message, error.hint)

    def is_numpy_attribute(self, scope: Scope, node: ast.expr) -> bool:
        """Whether `node` is `<numpy module>.<name>` (`np.random.rand`: a method, no __module__)."""
        return isinstance(node, ast.Attribute) \
            and is_numpy_module(self.static_object(scope, node.value))

    def unsupported_numpy(self, scope: Scope, node: ast.Call, name: str) -> Value:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            self.lower_expr(scope, arg)  # for the problems the arguments may have
        return self.fail(scope, node, UnsupportedCallError, f"{name} is not supported yet",
                         f"compiled code supports {SUPPORTED_NUMPY}")

    def call_creation(self, scope: Scope, node: ast.Call, creation: Creation, name: str) -> Value:
        args = bind_arguments(node, creation.params, name)
        loc = self.loc(node)
        dtype_of = self.dtype_of_array(scope, args.get("dtype"))
        dtype = None if dtype_of is not None else self.static_dtype(scope, args.get("dtype"), name)
        if dtype is None and not (creation.like or creation.fill == "value"):
            dtype = F64
        attrs: dict = {"dtype": dtype, "fill": creation.fill}
        if creation.like:
            attrs["what"] = name  # the type rule's messages name the function
            inputs = [self.lower_expr(scope, args["a"])]
        else:
            inputs = self.lower_shape(scope, args["shape"], attrs)
        if creation.fill == "value":
            inputs.append(self.lower_expr(scope, args["fill_value"]))
        if dtype_of is not None:
            attrs["dtype_of"] = True  # type inference takes the dtype of this last input
            inputs.append(self.lower_expr(scope, dtype_of))
        op = "array_new_like" if creation.like else "array_new"
        return scope.emit(op, inputs, loc, attrs)

    def lower_shape(self, scope: Scope, shape: ast.expr, attrs: dict) -> list[Value]:
        """The dimension inputs: one per element of a display, else one packed shape value."""
        if isinstance(shape, (ast.Tuple, ast.List)) \
                and not any(isinstance(e, ast.Starred) for e in shape.elts):
            return [self.lower_expr(scope, e) for e in shape.elts]
        attrs["packed_shape"] = True
        return [self.lower_expr(scope, shape)]

    def call_arange(self, scope: Scope, node: ast.Call, name: str) -> Value:
        if node.keywords:
            word = node.keywords[0].arg
            hint = ("its dtype comes from its arguments (int64, or float64 when one is a float); "
                    "write float(n) for a float array") if word == "dtype" else \
                "pass start, stop and step by position"
            raise CallError(f"the keyword argument {word}= of {name}() is not supported", hint)
        if not 1 <= len(node.args) <= 3 or any(isinstance(a, ast.Starred) for a in node.args):
            raise CallError(f"{name}() takes 1 to 3 arguments (start, stop, step), "
                            f"got {len(node.args)}")
        inputs = [self.lower_expr(scope, arg) for arg in node.args]
        return scope.emit("array_arange", inputs, self.loc(node))

    def dtype_of_array(self, scope: Scope, node: ast.expr | None) -> ast.expr | None:
        """For `dtype=x.dtype` with `x` a local (an array), the expression `x`; else None."""
        if isinstance(node, ast.Attribute) and node.attr == "dtype" \
                and self.static_object(scope, node.value) is LOCAL:
            return node.value
        return None

    def static_dtype(self, scope: Scope, node: ast.expr | None, name: str) -> ScalarType | None:
        """The `dtype=` argument's IR type, read at compile time; None when absent or None."""
        if node is None or (isinstance(node, ast.Constant) and node.value is None):
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            obj = node.value
        else:
            obj = self.static_object(scope, node)
        if obj is LOCAL or obj is NOT_FOUND:
            raise CallError(f"the dtype of {name}() must be known at compile time, "
                            f"got '{ast.unparse(node)}'", DTYPE_HINT)
        dtype = numpy_dtype(obj)
        if dtype is None:
            raise CallError(f"dtype {ast.unparse(node)} of {name}() is not supported: compiled "
                            "code has float64, float32, int64 and bool arrays", DTYPE_HINT)
        return dtype


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
