"""The builtins and `math` functions compiled code may call, and the primitives they lower to.

`call_handler(obj)` finds the handler of a builtin or math function by identity
(so `from math import sqrt` and `math.sqrt` are the same). A handler receives
the lowered positional arguments and an `emit(op, inputs, attrs)` callback and
returns the result; it raises `CallError` for a form that is not supported
(wrong arity, `round(x, n)`), with a suggested rewrite. A handler taking keyword
arguments (`cmath.isclose`'s tolerances) is a `WithKeywords`.

`math_attribute(name)` gives what `math.<name>` means: a constant's value, a
supported function, or None; `cmath_attribute(name)` what `cmath.<name>` means.
"""
from __future__ import annotations

import builtins
import cmath
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ..ir.core import Value
from ..ir.ops import OPS
from ..ir.ops.python_complex import PREDICATES
from ..ir.types import BOOL, C128, F64, I64

Emit = Callable[..., Value]
Handler = Callable[[Emit, list[Value]], Value]


class CallError(Exception):
    """A call of a supported function in an unsupported form."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


MATH_CONSTANTS = {name: getattr(math, name) for name in ("pi", "e", "tau", "inf", "nan")}

_MATH_OPS = {spelling.removeprefix("math."): op for op, opdef in OPS.items()
             for spelling in opdef.python if spelling.startswith("math.")}
"""`math` function name -> op, as the ops declare their spellings (`math.pow` is `fpow`)."""


def _fixed(op: str, what: str, scalars_only: bool = False) -> Handler:
    """A function of exactly the op's arity. `scalars_only`: Python's function of numbers
    (`math.sqrt`), which type inference refuses to apply to arrays, as Python does."""
    arity = OPS[op].arity
    attrs = {"scalar_function": what} if scalars_only else None

    def handle(emit: Emit, args: list[Value]) -> Value:
        if len(args) != arity:
            raise CallError(f"{what}() takes {arity} argument{'s' * (arity != 1)}, "
                            f"got {len(args)}")
        return emit(op, args, attrs) if attrs else emit(op, args)
    return handle


def _min_max(op: str) -> Handler:
    """min/max of two or more numbers, folded left to right as Python compares them."""
    def handle(emit: Emit, args: list[Value]) -> Value:
        if len(args) < 2:
            raise CallError(f"{op}() of one iterable argument is not supported",
                            f"pass the numbers themselves: {op}(a, b, ...)")
        result = args[0]
        for arg in args[1:]:
            result = emit(op, [result, arg])
        return result
    return handle


def _conversion(to, empty: object) -> Handler:
    """int(x), float(x), bool(x); with no argument, the type's zero."""
    def handle(emit: Emit, args: list[Value]) -> Value:
        if not args:
            return emit("const", [], {"value": empty})
        if len(args) > 1:
            raise CallError(f"{type(empty).__name__}() with more than one argument is not supported",
                            "strings and bases are not supported in compiled code")
        return emit("cast", args, {"to": to, "builtin": True})
    return handle


def _round(emit: Emit, args: list[Value]) -> Value:
    if len(args) == 2:
        raise CallError("round() with a number of digits is not supported",
                        "round(x) gives the nearest int; for n digits write "
                        "round(x * 10.0 ** n) / 10.0 ** n (the last digit may differ)")
    return _fixed("round", "round")(emit, args)


def _pow(emit: Emit, args: list[Value]) -> Value:
    if len(args) != 2:
        raise CallError("pow() takes 2 arguments here", "pow(a, b, mod) is not supported")
    return emit("pow", args)


def _divmod(emit: Emit, args: list[Value]) -> Value:
    """divmod(a, b): the tuple (a // b, a % b), the two ops' numbers, semantics and
    gradients; attr `divmod` gives their ZeroDivisionError and TypeError divmod()'s words.
    Of arrays or NumPy scalars it is np.divmod, as those are NumPy's // and %."""
    if len(args) != 2:
        raise CallError(f"divmod() takes 2 arguments, got {len(args)}")
    return emit("tuple", [emit(op, args, {"divmod": True}) for op in ("floordiv", "mod")])


def _complex(emit: Emit, args: list[Value]) -> Value:
    """complex(), complex(x) (a cast: of a complex its value), complex(a, b) of two reals."""
    if not args:
        return emit("const", [], {"value": 0j})
    if len(args) == 1:
        return emit("cast", args, {"to": C128})
    if len(args) == 2:
        return emit("complex_new", args)
    raise CallError("complex() takes at most 2 arguments")


def _range(emit: Emit, args: list[Value]) -> Value:
    raise CallError("range() is supported only as the iterable of a for loop",
                    "write: for i in range(...):")


_BUILTIN_HANDLERS: dict[object, Handler] = {
    builtins.abs: _fixed("abs", "abs"),
    builtins.min: _min_max("min"),
    builtins.max: _min_max("max"),
    builtins.int: _conversion(I64, 0),
    builtins.float: _conversion(F64, 0.0),
    builtins.bool: _conversion(BOOL, False),
    builtins.complex: _complex,
    builtins.round: _round,
    builtins.len: _fixed("len", "len"),
    builtins.pow: _pow,
    builtins.divmod: _divmod,
    builtins.range: _range,
}
_MATH_HANDLERS = {getattr(math, name): _fixed(op, f"math.{name}", scalars_only=True)
                  for name, op in _MATH_OPS.items()}


CMATH_CONSTANTS = {name: getattr(cmath, name)
                   for name in ("pi", "e", "tau", "inf", "nan", "infj", "nanj")}


def _cmath(op: str, what: str) -> Handler:
    """A cmath function: its arguments made Python complexes (cmath's conversion; rect's
    stay reals), then the op; polar a tuple of the magnitude and the phase."""
    def handle(emit: Emit, args: list[Value]) -> Value:
        arity = 2 if op == "cmath_rect" else 1
        if op == "cmath_log" and len(args) == 2:
            return emit("cmath_log_base", [emit("cast", [a], {"to": C128}) for a in args])
        if len(args) != arity:
            raise CallError(f"{what}() takes {arity} argument{'s' * (arity != 1)} here, "
                            f"got {len(args)}")
        if op == "cmath_rect":
            return emit(op, args)
        z = emit("cast", args, {"to": C128})
        if op == "polar":
            magnitude, angle = emit("cmath_abs", [z]), emit("cmath_phase", [z], {"polar": True})
            return emit("tuple", [magnitude, angle])
        return emit(op, [z])
    return handle


@dataclass(frozen=True)
class WithKeywords:
    """A handler that also takes the keyword arguments named `keywords`: those written
    are passed by name, after the emit callback and the positional arguments."""

    handle: Callable[..., Value]
    keywords: tuple[str, ...]

    def __call__(self, emit: Emit, args: list[Value], **kwargs: Value) -> Value:
        return self.handle(emit, args, **kwargs)


def _isclose(emit: Emit, args: list[Value], rel_tol: Value | None = None,
             abs_tol: Value | None = None) -> Value:
    """cmath.isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0): a and b made Python complexes."""
    if len(args) != 2:
        raise CallError(f"cmath.isclose() takes 2 positional arguments, got {len(args)}",
                        "pass the tolerances by keyword: rel_tol=..., abs_tol=...")
    tolerances = [emit("const", [], {"value": default}) if given is None else given
                  for given, default in ((rel_tol, 1e-09), (abs_tol, 0.0))]
    return emit("cmath_isclose", [*(emit("cast", [a], {"to": C128}) for a in args), *tolerances])


_CMATH_OPS = {**{spelling: op for op, opdef in OPS.items() for spelling in opdef.python
                 if spelling.startswith("cmath.") and op != "cmath_isclose"},
              **PREDICATES, "cmath.polar": "polar"}
_CMATH_HANDLERS = {getattr(cmath, name.removeprefix("cmath.")): _cmath(op, name)
                   for name, op in _CMATH_OPS.items()}
_CMATH_HANDLERS[cmath.isclose] = WithKeywords(_isclose, ("rel_tol", "abs_tol"))


def cmath_attribute(name: str) -> object:
    """The value of `cmath.<name>`: a constant's, or the function (whose calls `call_handler`
    compiles or refuses); None for anything else."""
    if name in CMATH_CONSTANTS:
        return CMATH_CONSTANTS[name]
    return getattr(cmath, name) if callable(getattr(cmath, name, None)) else None


def call_handler(obj: object) -> Handler | None:
    """The handler compiling calls of `obj`, or None when `obj` is not a supported builtin."""
    try:
        return _BUILTIN_HANDLERS.get(obj) or _MATH_HANDLERS.get(obj) or _CMATH_HANDLERS.get(obj)
    except TypeError:  # an unhashable callable
        return None


def numpy_lookup(table: Callable[[], dict], obj: object):
    """`table()[obj]` for a NumPy function `obj`, else None. No NumPy function can reach
    here before NumPy is imported, so `table` (which imports it) is called only after."""
    if "numpy" not in sys.modules:
        return None
    try:
        return table().get(obj)
    except TypeError:  # unhashable
        return None


def math_attribute(name: str) -> object:
    """The value of `math.<name>` if compiled code supports it, else None."""
    if name in MATH_CONSTANTS:
        return MATH_CONSTANTS[name]
    return getattr(math, name) if name in _MATH_OPS else None


def primitive_handler(obj: object) -> Handler | None:
    """Calls of a function marked `__astjit_op__ = "name"` (astjit.stop_gradient ...): that op."""
    op = getattr(obj, "__astjit_op__", None)
    return _fixed(op, getattr(obj, "__name__", op)) if op in OPS else None
