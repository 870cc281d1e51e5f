"""IR types: scalars, tuples, none, and the lattice operations type inference needs.

Python `int` is `i64` (wraps on overflow, unlike Python), `float` is `f64`,
`bool` is `bool`. `BOTTOM` is the type of a value that has not been produced on
any path yet (an `undef` placeholder, a recursive call whose result is still
being inferred); it joins with anything to that thing.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass


class Type:
    """Base of all IR types; types are immutable and compared by value."""


@dataclass(frozen=True)
class ScalarType(Type):
    name: str
    """'bool', 'i32', 'i64', 'f32' or 'f64'."""

    def __str__(self) -> str:
        return self.name

    @property
    def is_float(self) -> bool:
        return self.name.startswith("f")

    @property
    def is_int(self) -> bool:
        return self.name.startswith("i")


@dataclass(frozen=True)
class TupleType(Type):
    elements: tuple[Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elements)) + ">"


@dataclass(frozen=True)
class ArrayType(Type):
    """A strided NumPy array of `dtype` elements with `ndim` dimensions (NumPy semantics)."""

    dtype: ScalarType
    ndim: int

    def __str__(self) -> str:
        return f"array<{self.dtype}, {self.ndim}>"


NUMPY_DTYPES = {"float64": "f64", "float32": "f32", "int64": "i64", "bool": "bool"}
"""The NumPy dtypes compiled code takes, by name, and their IR scalar type names."""


@dataclass(frozen=True)
class TapeType(Type):
    """A growable stack of `element` values: what a differentiated `while` records per iteration."""

    element: Type

    def __str__(self) -> str:
        return f"tape<{self.element}>"


@dataclass(frozen=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True)
class BottomType(Type):
    def __str__(self) -> str:
        return "bottom"


BOOL = ScalarType("bool")
I32 = ScalarType("i32")
I64 = ScalarType("i64")
F32 = ScalarType("f32")
F64 = ScalarType("f64")
NONE = NoneType()
BOTTOM = BottomType()

NUMERIC_RANK = {BOOL: 0, I32: 1, I64: 2, F32: 3, F64: 4}


def is_numeric(t: Type) -> bool:
    return t in NUMERIC_RANK


def promote(*types: Type) -> Type:
    """The common type of numeric operands, as Python's arithmetic computes it.

    bool and int meet at i64 (True + True == 2), any float wins over ints.
    """
    best = max(types, key=NUMERIC_RANK.__getitem__)
    if best == BOOL or best == I32:
        return I64
    return best


def join(a: Type, b: Type) -> Type | None:
    """The type a variable has after two paths merge, or None when they cannot meet.

    Numbers meet at their promoted type (an int on one path and a float on the
    other gives float, as Numba does); tuples meet elementwise.
    """
    if a == b:
        return a
    if a == BOTTOM:
        return b
    if b == BOTTOM:
        return a
    if is_numeric(a) and is_numeric(b):
        return promote(a, b)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elements) == len(b.elements):
        parts = [join(x, y) for x, y in zip(a.elements, b.elements)]
        return None if None in parts else TupleType(tuple(parts))
    return None


def python_type_of(value) -> Type | None:
    """The IR type of a Python constant or argument value, or None if it has none.

    NumPy scalars are normalized to Python scalars before they get here; a NumPy
    array of a supported dtype is an ArrayType.
    """
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        name = NUMPY_DTYPES.get(value.dtype.name)
        return ArrayType(ScalarType(name), value.ndim) if name else None
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I64
    if isinstance(value, float):
        return F64
    if value is None:
        return NONE
    if isinstance(value, tuple):
        parts = [python_type_of(v) for v in value]
        return None if None in parts else TupleType(tuple(parts))
    return None
