"""Argument types -> signature -> cached compiled specialization, and the fast call path.

The object `@jit` returns is a `functools.partial` around the newest compiled
entry: a builtin function emitted in LLVM with CPython's calling convention,
which checks its own signature and unboxes, runs and boxes in native code.
`functools.partial` is the one builtin callable that carries attributes
(`.ir`, `.py_func`), supports vectorcall (no argument tuple is built) and can
be re-targeted in place (`__setstate__`) when a new specialization is
compiled, so a call costs one partial hop plus the wrapper.

Whatever the entry does not take exactly — another signature, keywords,
an int subclass, an int beyond int64 — goes to `Dispatcher.call_slow`, which
binds the arguments as Python would, compiles a new specialization if needed
and calls it.

A NumPy scalar argument of a supported type (`np.float64`, `np.float32`,
`np.int64`, `np.bool_`) is a strong scalar (ir/types.py): its own signature,
NumPy's semantics, and results that are NumPy scalars where NumPy gives them.
Other NumPy scalars (`np.int8` ... `np.uint64`, `np.float16`) are refused with a
TypeError naming the argument: computing them as int64 would silently differ.
Signatures are `TypeKey`s, which tell `f(np.float64(1.0))` from `f(1.0)`.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import tree
from .ir.types import NUMPY_DTYPES, NUMPY_SCALARS, TupleType, Type, TypeKey, python_type_of

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def make_entry(target: Callable, method: bool = False) -> functools.partial:
    """A re-targetable, attribute-carrying, vectorcall callable around `target`; for a
    function defined in a class body (`method`), one that binds as a method does."""
    return MethodEntry(target) if method else functools.partial(target)


class MethodEntry(functools.partial):
    """The entry of a method jitted in its class body: `obj.method(x)` calls it with `obj`
    first, as a function's binding does (a plain partial does not bind). Only methods pay
    for the subclass's slower call."""

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)


def is_function_argument(value: Any) -> bool:
    """A function passed as an argument (`two_layer(gelu, x)`): compiled code calls it
    directly, so it is part of the specialization, not a value passed at run time."""
    numpy = sys.modules.get("numpy")
    return (isinstance(value, (types.FunctionType, types.BuiltinFunctionType))
            or type(value) is functools.partial or callable(getattr(value, "py_func", None))
            or numpy is not None and isinstance(value, numpy.ufunc))


def function_key(value: Any) -> Any:
    """What identifies a function argument's specialization: the function, or a partial's
    function and bound values (two equal partials share one)."""
    if type(value) is functools.partial:
        key = (function_key(value.func), value.args, tuple(sorted(value.keywords.items())))
        try:
            hash(key)
        except TypeError:
            raise TypeError(f"a functools.partial passed to compiled code must bind numbers or "
                            f"other hashable constants: {value!r:.80}") from None
        return key
    return getattr(value, "py_func", value)


def defined_in_a_class(fn: Callable) -> bool:
    """Whether `fn` was defined in a class body (`Model.__call__`), not in a function."""
    parts = getattr(fn, "__qualname__", "").split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def retarget(entry: functools.partial, target: Callable) -> None:
    """Make `entry` call `target` from now on, keeping its attributes. The target it had is
    kept as long as the entry (`RETIRED`): a partial holds no reference of its own to the
    function it is calling, and the call that retargets may run inside it (a first tier's
    machine code calls the general tier, `Dispatcher.call_general`, and gets its result
    back): freed then, compiled code would return into unmapped memory."""
    entry.__dict__.setdefault(RETIRED, []).append(entry.func)
    entry.__setstate__((target, (), None, entry.__dict__))


RETIRED = "_astjit_retired_targets"
"""The entry attribute listing the targets `retarget` replaced."""


@dataclass
class Signature:
    """The parameter names of a function and how Python binds calls to them."""

    function: Callable
    leaf_type: Callable[[Any], Type | None] = python_type_of
    """The IR type of an argument that is no container (`device_type_of` for the GPU)."""
    inspected: inspect.Signature = field(init=False)

    def __post_init__(self):
        self.inspected = inspect.signature(self.function)
        self._names = tuple(self.inspected.parameters)
        # Whether a positional call can fill every parameter (no keyword-only ones, no
        # *args): only then may the compiled entry, which takes every parameter
        # positionally, be called directly, and a call of the right arity skip binding.
        self.all_positional = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                  for p in self.inspected.parameters.values())

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def bind(self, args: tuple, kwargs: dict) -> list[Any]:
        """Positional argument values after keywords and defaults, as Python binds them."""
        if not kwargs and self.all_positional and len(args) == len(self._names):
            arguments = zip(self._names, args)  # one value per parameter: nothing to bind
        else:
            bound = self.inspected.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = bound.arguments.items()
            args = tuple(bound.arguments.values())
        for name, value in arguments:
            problem = array_problem(value) or container_problem(value)
            if problem:
                raise TypeError(f"argument '{name}' of {self.function.__name__}() is {problem}")
        return [normalize_argument(v) for v in args]

    def types_of(self, values: list[Any], names: list[str] | None = None) -> TypeKey:
        """The IR types of bound argument values (of parameters `names`, by default all);
        TypeError naming a bad parameter."""
        types = []
        for name, value in zip(names or self.names, values):
            t = tree.ir_type(value, self.leaf_type)  # a container's: a TupleType with its node
            if t is None and is_numpy_scalar(value):
                raise TypeError(f"argument '{name}' of {self.function.__name__}() is "
                                f"{describe_argument(value)}, which compiled code does not "
                                f"take; pass {numpy_scalar_hint(name, value)}")
            if t is None:
                raise TypeError(f"argument '{name}' of {self.function.__name__}() is "
                                f"{describe_argument(value)}; {ACCEPTED}")
            for leaf in tree.entry_leaves([value], []):
                check_int_range(name, leaf)
            types.append(t)
        return TypeKey(types)


ACCEPTED = ("compiled functions take int, float, bool, NumPy scalars of type "
            f"{', '.join(NUMPY_SCALARS)}, NumPy arrays of dtype {', '.join(NUMPY_DTYPES)} "
            "and containers of them (tuples, lists, dicts, namedtuples, dataclasses, "
            "classes registered with astjit.tree.register)")


def is_numpy_scalar(value: Any) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.generic)


def numpy_scalar_hint(name: str, value: Any) -> str:
    """What to pass instead of a NumPy scalar of an unsupported type."""
    kind = value.dtype.kind
    if kind == "b":
        return f"bool({name}) (Python's bool) or np.bool_({name})"
    if kind in "iu":
        return f"int({name}) (Python's int, int64 in compiled code) or np.int64({name})"
    if kind == "f":
        return f"float({name}) (Python's float) or np.float64({name})"
    return f"a Python scalar or a NumPy scalar of type {', '.join(NUMPY_SCALARS)}"


def describe_argument(value: Any) -> str:
    """What an argument compiled code cannot take is, for the TypeError: its type, or its
    dtype for a NumPy array, or the first such element of a tuple."""
    numpy, cupy = sys.modules.get("numpy"), sys.modules.get("cupy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return f"a NumPy array of dtype {value.dtype}"
    if cupy is not None and isinstance(value, cupy.ndarray):
        return ("a CuPy array, which target='cpu' does not take: pass cupy.asnumpy(x), or jit "
                "with target='gpu'")
    if numpy is not None and isinstance(value, numpy.generic):
        return f"a numpy.{type(value).__name__} ({value!r:.40})"
    found = tree.children(value)
    if found is not None:
        for i, element in enumerate(found[1]):
            if tree.ir_type(element, python_type_of) is None:
                what = f"field '{found[0].keys[i]}'" if found[0].keys else f"element {i}"
                return f"a {type(value).__name__} whose {what} is {describe_argument(element)}"
    hint = ""
    return f"{type(value).__name__} ({value!r:.40}){hint}"


def normalize_argument(value: Any) -> Any:
    """Exactly bool, int or float (int subclasses...); tuples elementwise; a NumPy scalar
    as it is (a strong scalar, or one `types_of` refuses).

    Compiled entries accept only the exact types, so this is what keeps
    the slow path from handing them something they pass back. A NumPy array is
    never copied, as compiled code writes into the caller's array: it is returned
    as it is, or for a subclass (`numpy.memmap` ...) as a plain `ndarray` view of
    the same memory.
    """
    numpy = sys.modules.get("numpy")  # never imported here: a NumPy scalar implies numpy
    if numpy is not None and isinstance(value, numpy.generic):
        return value
    if numpy is not None and isinstance(value, numpy.ndarray):
        return value if type(value) is numpy.ndarray else value.view(numpy.ndarray)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if type(value) is tuple:  # other containers' leaves: in flatten_values
        return tuple(normalize_argument(v) for v in value)
    return value


def array_problem(value: Any) -> str:
    """Why compiled code cannot take this array (or an array in this tuple), or ''.

    The compiled entry takes native-byte-order arrays of a supported dtype; an unaligned
    one (Dask hands those out) goes through an aligned copy (`call_aligned`). Converting any
    other array would copy it, and writes would not reach the caller's, so it is refused;
    so are masked arrays and matrices, whose elements mean something else than their memory.
    """
    numpy = sys.modules.get("numpy")
    if isinstance(value, tuple):
        return next((f"a tuple whose element {i} is {problem}" for i, element in enumerate(value)
                     if (problem := array_problem(element))), "")
    if numpy is None or not isinstance(value, numpy.ndarray) or python_type_of(value) is None:
        return ""
    dtype = value.dtype
    copy = "(a copy: writes to it do not reach the original)"
    masked = sys.modules.get("numpy.ma")  # NumPy imports it lazily, at the cost of a compile:
    # no masked array exists before it is imported
    if isinstance(value, numpy.matrix) or (masked and isinstance(value, masked.MaskedArray)):
        return (f"a {type(value).__name__}, which compiled code does not take; pass an ndarray, "
                "e.g. x.filled(0.0) or np.asarray(x)")
    if not dtype.isnative:
        return (f"a {dtype.name} array in non-native byte order ({dtype.str}), which compiled "
                f"code does not take; pass x.astype(x.dtype.newbyteorder('=')) {copy}")
    return ""


def is_unaligned(value: Any) -> bool:
    """Whether an array argument is one the compiled entry does not take as it is: its data
    address or the byte stride of an axis longer than 1 not a multiple of its item size
    (the entry's own test, `array_layout.accepts`); never an empty one."""
    numpy = sys.modules.get("numpy")
    if numpy is None or type(value) is not numpy.ndarray or value.size == 0:
        return False
    item = value.dtype.itemsize
    return bool(value.ctypes.data % item or any(
        stride % item for size, stride in zip(value.shape, value.strides) if size > 1))


def call_aligned(call: Callable, leaves: list[Any], module: Any) -> Any:
    """`call(*leaves)` where some array leaves may be unaligned: each goes as an aligned copy
    (`AlignedCopy`), whose elements are copied back into it afterwards (even where the call
    raised) when the compiled `module` may write it (`ir.analysis.written_parameters`; every
    one where `module` is None: a specialization loaded from the disk cache has no IR); a
    result array that is a copy, or a view of one, is returned as the original or the same
    view of it."""
    copies = {i: AlignedCopy(v) for i, v in enumerate(leaves) if is_unaligned(v)}
    if not copies:
        return call(*leaves)
    written = copies.keys() if module is None else _written.get(module)
    if written is None:
        from .ir.analysis import written_parameters  # the compiler's: loaded by now

        written = _written[module] = frozenset(written_parameters(module))
    try:
        result = call(*[copies[i].copy if i in copies else v for i, v in enumerate(leaves)])
    finally:
        for i, c in copies.items():
            if i in written and c.original.flags.writeable:
                c.copy_back()
    return tree.map(lambda leaf: next(
        (m for c in copies.values() if (m := c.original_of(leaf)) is not None), leaf), result)


class AlignedCopy:
    """An aligned copy of an unaligned array: where its strides are multiples of the item
    size, the same strides over an aligned copy of the bytes it spans (so that a view of
    the copy is the same view of the original); else a C-contiguous copy, of which only the
    whole array maps back. Read-only where the original is."""

    def __init__(self, original: Any):
        numpy = sys.modules["numpy"]
        self.original = original
        item = original.itemsize
        offsets = [(n - 1) * s for n, s in zip(original.shape, original.strides)]
        low = sum(o for o in offsets if o < 0)
        high = sum(o for o in offsets if o > 0) + item
        self.same_strides = all(s % item == 0 for s in original.strides)
        self.start = original.ctypes.data + low
        if self.same_strides:  # the spanned bytes copied as bytes: NumPy's memcpy
            self.spanned = numpy.asarray(_View(original, self.start, (high - low,), (1,), "|u1"))
            self.buffer = self.spanned.copy()
            self.copy = numpy.ndarray(original.shape, original.dtype, self.buffer, -low,
                                      original.strides)
        else:
            self.copy = numpy.ascontiguousarray(original)
            self.buffer = self.copy.view(numpy.uint8).reshape(-1)
        self.copy.flags.writeable = original.flags.writeable

    def copy_back(self) -> None:
        """The copy's elements into the original: its bytes where the original spans only
        its own elements (contiguous), else element by element."""
        numpy = sys.modules["numpy"]
        if self.same_strides and self.spanned.size == self.original.nbytes:
            numpy.copyto(self.spanned, self.buffer)
        else:
            numpy.copyto(self.original, self.copy)

    def original_of(self, value: Any) -> Any:
        """The original (or the same view of it) for `value` if it is the copy or a view of
        it; else None."""
        numpy = sys.modules["numpy"]
        if value is self.copy:
            return self.original
        if not isinstance(value, numpy.ndarray):
            return None
        base, offset = self.buffer.ctypes.data, value.ctypes.data - self.buffer.ctypes.data
        if not (0 <= offset < self.buffer.size or value.size == 0 and value.ctypes.data == base):
            return None
        if not self.same_strides:
            raise TypeError("compiled code returned a view of an argument whose strides are "
                            "not multiples of its item size, which it took as a copy; pass "
                            "np.array(x) (a copy) and return that")
        return numpy.asarray(_View(self.original, self.start + offset, value.shape,
                                   value.strides, value.dtype.str))


class _View:
    """The array interface of an array of `shape`, `strides` and `typestr` at `address`,
    inside the memory of `owner`, which it keeps alive (the view's base)."""

    def __init__(self, owner: Any, address: int, shape: tuple, strides: tuple, typestr: str):
        self.owner = owner
        self.__array_interface__ = {"shape": shape, "strides": strides, "typestr": typestr,
                                    "data": (address, not owner.flags.writeable), "version": 3}


_written: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Compiled module -> the leaves its code may write (`call_aligned`), found once."""


def container_problem(value: Any) -> str:
    """Why compiled code cannot take an array in this container (astjit.tree), or ''."""
    if isinstance(value, tuple) or tree.children(value) is None:
        return ""
    problems = [p for p in map(array_problem, tree.entry_leaves([value], [])) if p]
    return f"a {type(value).__name__} holding {problems[0]}" if problems else ""


def check_int_range(name: str, value: Any) -> None:
    if isinstance(value, tuple):
        for v in value:
            check_int_range(name, v)
    elif isinstance(value, int) and not isinstance(value, bool) \
            and not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError(f"argument '{name}' = {value} does not fit in int64, "
                            "astjit's int")


def flatten_values(values: list[Any]) -> list[Any]:
    """Container arguments (tuples, dataclasses ...: astjit.tree) travel to compiled code
    as their leaves, in order."""
    return [normalize_argument(v) for v in tree.entry_leaves(values, [])]


def has_tuples(types: tuple[Type, ...]) -> bool:
    return any(isinstance(t, TupleType) for t in types)
