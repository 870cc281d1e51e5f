"""The `callback` op: compiled code calling a Python function in the interpreter.

`astjit.callback(fn, *args, result=T)` and `print(...)` lower to one `callback`
node whose `fn` attribute is a `Callback`: the function, the IR type its result
must have, and a name for messages and dumps. Evaluating the node (the
interpreter, the GPU's host program) calls the function and converts its result
to that type (`Callback.evaluate`: a TypeError naming the function when it does
not fit). Compiled code calls the `Callback` object itself through the C API
(backend/llvm/callbacks.py): the same, except that an exception is not raised
across native frames but kept (`semantics.keep_pending`) and `FAILED` returned;
the error site then re-raises it as it was (`semantics.CALLBACK_ERROR`).

Its VJP is the function's `custom_vjp` rule, called back the same way with the
arguments, the result and its adjoint; a function without one is a
DifferentiationError naming it.
"""
from __future__ import annotations

import operator

from ...errors import DifferentiationError
from ..types import (
    BOOL,
    NONE,
    ArrayType,
    BottomType,
    NoneType,
    ScalarType,
    TupleType,
    Type,
)
from .declare import _def
from .semantics import keep_pending
from .table import OnHost, OpTypeError, Routine
from .vjp import with_attrs


class Failed:
    """What a `Callback` called from compiled code returns when the function raised."""

    def __repr__(self) -> str:
        return "<astjit callback failed>"


FAILED = Failed()


class Callback:
    """A Python function compiled code calls, and the type its result must have."""

    __slots__ = ("fn", "name", "result")

    def __init__(self, fn: object, result: Type, name: str | None = None):
        self.fn = fn
        self.result = result
        self.name = name or getattr(fn, "__name__", None) or repr(fn)

    def evaluate(self, *args: object) -> object:
        """`fn(*args)`, converted to the result type (the interpreter's semantics)."""
        return convert(self.fn(*args), self.result, self.name)

    def __call__(self, *args: object) -> object:
        """`evaluate`, for compiled code: an exception is kept, and FAILED returned."""
        try:
            return self.evaluate(*args)
        except BaseException as error:  # noqa: BLE001 - re-raised by the error handler
            keep_pending(error)
            return FAILED

    def __deepcopy__(self, memo: dict) -> Callback:
        return self  # the function is not the IR's to copy

    def __repr__(self) -> str:
        return self.name


def convert(value: object, t: Type, name: str) -> object:
    """`value` as compiled code takes a value of type `t` (exact Python or NumPy types);
    a TypeError naming the callback `name` when it is not one."""
    if isinstance(t, NoneType):
        return None
    if isinstance(t, TupleType):
        if not isinstance(value, (tuple, list)):
            value = (value,) if len(t.elements) == 1 else value
        if not isinstance(value, (tuple, list)) or len(value) != len(t.elements):
            raise _mismatch(value, t, name)
        return tuple(convert(v, e, name) for v, e in zip(value, t.elements))
    import numpy

    if isinstance(t, ArrayType):
        dtype = numpy.dtype(_NUMPY[t.dtype.name])
        if not isinstance(value, numpy.ndarray) or value.ndim != t.ndim or value.dtype != dtype:
            raise _mismatch(value, t, name)
        return value if type(value) is numpy.ndarray and value.flags.aligned \
            else numpy.array(value, dtype=dtype)
    if not isinstance(t, ScalarType) or isinstance(value, (str, bytes)):
        raise _mismatch(value, t, name)
    is_bool = isinstance(value, (bool, numpy.bool_))
    if t.name == BOOL.name:
        if not is_bool:
            raise _mismatch(value, t, name)
        result = bool(value)
    elif t.is_float:
        if is_bool or not isinstance(value, (int, float, numpy.integer, numpy.floating)):
            raise _mismatch(value, t, name)
        result = float(value)
    else:
        try:
            result = operator.index(value)
        except TypeError:
            raise _mismatch(value, t, name) from None
        if is_bool or not -(2 ** 63) <= result < 2 ** 63:
            raise _mismatch(value, t, name)
    return getattr(numpy, _NUMPY[t.name])(result) if t.strong else result


_NUMPY = {"f64": "float64", "f32": "float32", "i64": "int64", "i32": "int32", "bool": "bool_"}


def _mismatch(value: object, t: Type, name: str) -> TypeError:
    return TypeError(f"astjit.callback: {name}() returned {_describe(value)}, but its result= "
                     f"says {_spelling(t)}")


def _describe(value: object) -> str:
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "dtype", None) is not None and shape != ():
        return f"a {type(value).__name__} of {value.dtype} with {len(shape)} dimensions"
    return f"a {type(value).__name__} ({value!r:.40})"


def _spelling(t: Type) -> str:
    if isinstance(t, ArrayType):
        return f"a {t.dtype} array with {t.ndim} dimensions"
    if isinstance(t, TupleType):
        return "(" + ", ".join(map(_spelling, t.elements)) + ")"
    return {"f64": "float", "f32": "float", "i64": "int", "i32": "int", "bool": "bool"}.get(
        getattr(t, "name", ""), str(t))


def _boxable(t: Type) -> bool:
    """Whether compiled code can pass a value of type `t` to Python."""
    if isinstance(t, TupleType):
        return all(map(_boxable, t.elements))
    return isinstance(t, (ScalarType, ArrayType, NoneType, BottomType))


def callback_rule(types, attrs):
    callback = attrs["fn"]
    for t in types:
        if not _boxable(t):
            raise OpTypeError(f"compiled code cannot pass a {t} to {callback.name}()")
    return list(types), callback.result


def custom_rule(fn: object) -> object | None:
    """The reverse-mode rule `rule(*args, out, g)` of a `custom_vjp` function, else None."""
    try:
        return fn.__astjit_custom_vjp__[1]
    except (AttributeError, TypeError):
        return None


@with_attrs
def callback_vjp(e, g, ins, out, needs, attrs):
    """The adjoints from the function's custom_vjp rule, itself a callback."""
    callback = attrs["fn"]
    if not any(needs):
        return [None] * len(ins)
    rule = custom_rule(callback.fn)
    if rule is None:
        raise DifferentiationError(
            f"cannot differentiate through astjit.callback of {callback.name}(): it runs in "
            "the interpreter and has no derivative", e.loc,
            hint=f"decorate {callback.name} with @astjit.custom_vjp and give it a rule "
                 "with defvjp")
    kinds = TupleType(tuple(v.type if need else NONE for v, need in zip(ins, needs)))
    adjoints = e.op("callback", *ins, out, g,
                    fn=Callback(rule, kinds, f"{callback.name}'s custom_vjp rule"))
    return [e.op("getitem", adjoints, index=i) if need else None for i, need in enumerate(needs)]


_def("callback", -1, callback_rule, lambda *args, fn: fn.evaluate(*args),
     {"*": Routine("callback")}, ("raises", "allocates"), vjp=callback_vjp, cuda=OnHost(),
     doc="attrs['fn'](*operands): a Python function called from compiled code (a Callback), "
         "its result converted to attrs['fn'].result")
