"""NumPy's elementwise functions (ufuncs and np.where), found by identity, as primitives.

`np.exp(x)` is the same `exp` op as `math.exp(x)`; on arrays its type rule
follows NumPy (ops/elementwise.py). The table is built on first use, so
importing astjit does not import NumPy.

| NumPy | op |
|---|---|
| np.add, subtract, multiply, true_divide/divide | add, sub, mul, truediv |
| np.floor_divide, remainder/mod, power | floordiv, mod, pow |
| np.negative, positive, absolute/abs, fabs | neg, pos, abs, fabs |
| np.less, less_equal, greater, greater_equal, equal, not_equal | lt, le, gt, ge, eq, ne |
| np.minimum, np.maximum | minimum, maximum (NaN-propagating) |
| np.sqrt, exp, expm1, log, log2, log10, log1p, sin, cos, tan | the math op of that name |
| np.sinh, cosh, tanh; arcsin, arccos, arctan, arcsinh ... | sinh, cosh, tanh; asin ... |
| np.arctan2, hypot, copysign, fmod | atan2, hypot, copysign, fmod |
| np.isnan, isinf, isfinite | isnan, isinf, isfinite |
| np.where(c, a, b) | where |

On scalars they are NumPy's, unlike the `math` functions of the same ops: the
node carries attr `numpy` (ir/ops/strong.py), so `np.exp(1000.0)` is inf where
`math.exp(1000.0)` raises OverflowError, and the result is a NumPy scalar.
Keyword arguments (out=, where=, dtype=) are not supported.
"""
from __future__ import annotations

import functools

from ..ir.core import Value
from ..ir.ops import OPS
from .builtins import CallError, Emit, Handler, numpy_lookup

_NAMES = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "truediv",
    "divide": "truediv", "floor_divide": "floordiv", "remainder": "mod", "mod": "mod",
    "power": "pow", "negative": "neg", "positive": "pos", "absolute": "abs", "abs": "abs",
    "fabs": "fabs", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    "equal": "eq", "not_equal": "ne", "minimum": "minimum", "maximum": "maximum",
    "sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
    "arctan2": "atan2", "hypot": "hypot", "copysign": "copysign", "fmod": "fmod",
    "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite", "where": "where",
}
"""NumPy function name -> op."""


@functools.cache
def ufunc_table() -> dict[object, Handler]:
    import numpy

    return {getattr(numpy, name): _numpy_function(op, f"np.{name}")
            for name, op in _NAMES.items()}


def _numpy_function(op: str, what: str) -> Handler:
    """A NumPy function of exactly the op's arity: the op with NumPy's semantics."""
    arity = OPS[op].arity

    def handle(emit: Emit, args: list[Value]) -> Value:
        if len(args) != arity:
            raise CallError(f"{what}() takes {arity} argument{'s' * (arity != 1)}, "
                            f"got {len(args)}")
        return emit(op, args, {"numpy": True})
    return handle


def ufunc_handler(obj: object) -> Handler | None:
    """The handler compiling a call of `obj` if it is a supported NumPy elementwise function."""
    return numpy_lookup(ufunc_table, obj)
