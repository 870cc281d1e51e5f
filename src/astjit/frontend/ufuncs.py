"""NumPy's elementwise functions (ufuncs and np.where), found by identity, as primitives.

`np.exp(x)` is the same `exp` op as `math.exp(x)`; on arrays its type rule
follows NumPy (ops/elementwise.py). The table is built on first use, so
importing astjit does not import NumPy.

Each op declares the NumPy functions that are it (`OpDef.numpy`: `np.add` is
`add`, `np.arcsin` is `asin`, `np.minimum` is the NaN-propagating `minimum`);
the table here is derived from those declarations.

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

_NAMES = {name: op for op, opdef in OPS.items() for name in opdef.numpy}
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
