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
from .builtins import CallError, Emit, Handler, WithKeywords, numpy_lookup

_NAMES = {name: op for op, opdef in OPS.items() for name in opdef.numpy}
"""NumPy function name -> op."""


@functools.cache
def ufunc_table() -> dict[object, Handler]:
    import numpy

    table = {getattr(numpy, name): _numpy_function(op, f"np.{name}")
             for name, op in _NAMES.items()}
    table.update({getattr(numpy, name): _composed(arity, f"np.{name}", build)
                  for name, (arity, build) in _COMPOSED.items()})
    table[numpy.clip] = WithKeywords(_clip_function, ("a_min", "a_max", "min", "max"))
    return table


def clip_method() -> Handler:
    """`x.clip(min, max)`: np.clip with the array the method's object (the caller puts it
    first among the arguments); an absent bound is None."""
    return WithKeywords(_clip_bounds("clip", ("min", "max"), method=True), ("min", "max"))


def _clip_function(emit: Emit, args: list[Value], **given: Value) -> Value:
    """np.clip(a, a_min, a_max), or with neither given np.clip(a, min=..., max=...) (NumPy
    2.1's names, an absent one None), as NumPy binds them."""
    old = {"a_min", "a_max"} & given.keys()
    if len(args) > 1 or old:
        missing = [name for position, name in enumerate(("a_min", "a_max"), 1)
                   if len(args) <= position and name not in given]
        if missing:
            raise CallError(f"np.clip() missing 1 required positional argument: '{missing[0]}'",
                            "give both bounds (None for an absent one), or neither and "
                            "min=..., max=...")
        if {"min", "max"} & given.keys():
            raise CallError("np.clip() takes min= and max= only where a_min and a_max are "
                            "not given")
        return _clip_bounds("np.clip", ("a_min", "a_max"))(emit, args, **given)
    return _clip_bounds("np.clip", ("min", "max"))(emit, args, **given)


def _clip_bounds(what: str, names: tuple[str, str], method: bool = False):
    """Op `numpy_clip` of the array and its two bounds, by position or by `names`; an
    absent bound None (type inference then makes it np.maximum or np.minimum alone);
    `method`: called as the array's method, which a Python number does not have."""
    def handle(emit: Emit, args: list[Value], **given: Value) -> Value:
        if not 1 <= len(args) <= 3:
            raise CallError(f"{what}() takes an array and two bounds, got {len(args) - 1} "
                            "arguments after the array")
        bounds = [*args[1:], None, None][:2]
        for position, name in enumerate(names):
            if name in given:
                if bounds[position] is not None:
                    raise CallError(f"{what}() got multiple values for argument '{name}'")
                bounds[position] = given[name]
        if bounds == [None, None]:
            raise CallError(f"{what}() needs a bound", "give min or max (or both)")
        bounds = [emit("const", [], {"value": None}) if b is None else b for b in bounds]
        return emit("numpy_clip", [args[0], *bounds], {"numpy": True, "method": method})
    return handle


def _numpy_function(op: str, what: str) -> Handler:
    """A NumPy function of exactly the op's arity: the op with NumPy's semantics."""
    arity = OPS[op].arity

    def handle(emit: Emit, args: list[Value]) -> Value:
        if len(args) != arity:
            raise CallError(f"{what}() takes {arity} argument{'s' * (arity != 1)}, "
                            f"got {len(args)}")
        return emit(op, args, {"numpy": True})
    return handle


class _Composer:
    """What a composed NumPy function is built with: ops with NumPy's semantics, constants."""

    def __init__(self, emit: Emit):
        self.emit = emit

    def op(self, name: str, *operands: Value) -> Value:
        return self.emit(name, list(operands), {"numpy": True})

    def const(self, value: object) -> Value:
        return self.emit("const", [], {"value": value})


def _composed(arity: int, what: str, build) -> Handler:
    """A NumPy function that is a composition of ops: `build(composer, *args)`."""
    def handle(emit: Emit, args: list[Value]) -> Value:
        if len(args) != arity:
            raise CallError(f"{what}() takes {arity} argument{'s' * (arity != 1)}, "
                            f"got {len(args)}")
        return build(_Composer(emit), *args)
    return handle


def _truth(c: _Composer, x: Value) -> Value:
    """NumPy's truth of each element: nonzero (a NaN is true)."""
    return c.op("ne", x, c.const(0))


def _divmod(c: _Composer, a: Value, b: Value) -> Value:
    """np.divmod: the tuple (np.floor_divide(a, b), np.remainder(a, b)), NumPy's one loop
    computing both as those two do (npy_divmod)."""
    return c.emit("tuple", [c.op("floordiv", a, b), c.op("mod", a, b)])


_COMPOSED = {
    "divmod": (2, _divmod),
    "logical_not": (1, lambda c, a: c.op("eq", a, c.const(0))),
    "logical_and": (2, lambda c, a, b: c.op("bitand", _truth(c, a), _truth(c, b))),
    "logical_or": (2, lambda c, a, b: c.op("bitor", _truth(c, a), _truth(c, b))),
    "logical_xor": (2, lambda c, a, b: c.op("ne", _truth(c, a), _truth(c, b))),
}
"""NumPy functions that are compositions of the ops (their semantics, gradients and
lowerings are the ops')."""


def ufunc_handler(obj: object) -> Handler | None:
    """The handler compiling a call of `obj` if it is a supported NumPy elementwise function."""
    return numpy_lookup(ufunc_table, obj)
