"""IR types: scalars, tuples, none, and the lattice operations type inference needs.

Python `int` is `i64` (wraps on overflow, unlike Python), `float` is `f64`,
`complex` is `c128`, `bool` is `bool`. `BOTTOM` is the type of a value that has not been produced on
any path yet (an `undef` placeholder, a recursive call whose result is still
being inferred); it joins with anything to that thing.

A scalar is *weak* (a Python `int`, `float`, `complex` or `bool`) or *strong* (a NumPy
scalar: `np.float64`, `np.int64`, `np.complex128`, `np.bool_`, and every f32/i32/c64), as in NEP 50
and JAX's weak types. Strength decides promotion and semantics (ir/ops/strong.py)
and how a result is boxed; it is printed (`np.f64`) but takes no part in type
equality or hashing, so `t == F64` holds for both. Where strength must tell two
types apart (signature caches, specializations, joins) use `exact` or `TypeKey`.
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field, replace


class Type:
    """Base of all IR types; types are immutable and compared by value."""


@dataclass(frozen=True)
class ScalarType(Type):
    name: str
    """'bool', 'i8' ... 'i64', 'u8' ... 'u64', 'f32', 'f64', 'c64' or 'c128' (`NUMPY_NAMES`)."""
    strong: bool = field(default=False, compare=False)
    """A NumPy scalar rather than a Python one (always for the dtypes Python lacks: i32, f32 ...)."""

    def __post_init__(self):
        if self.name in ALWAYS_STRONG and not self.strong:
            object.__setattr__(self, "strong", True)

    def __str__(self) -> str:
        return f"np.{self.name}" if self.strong and self.name not in ALWAYS_STRONG else self.name

    @property
    def kind(self) -> str:
        """NumPy's kind letter: 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex."""
        return "b" if self.name == "bool" else self.name[0]

    @property
    def bits(self) -> int:
        """The width of one value (bool: 1; a complex: both parts)."""
        return 1 if self.name == "bool" else int(self.name[1:])

    @property
    def is_float(self) -> bool:
        return self.name[0] == "f"

    @property
    def is_int(self) -> bool:
        """A signed or unsigned integer (not a bool)."""
        return self.name[0] in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self.name[0] == "u"

    @property
    def is_complex(self) -> bool:
        return self.name[0] == "c"


@dataclass(frozen=True)
class TreeNode:
    """What container a TupleType's elements come from (docs/trees.md): its kind, its
    class, its field names or dict keys in element order, and static aux data (a
    registered class's). Part of the type: a new structure is a new specialization."""

    kind: str
    """'list', 'dict', 'namedtuple', 'dataclass', 'registered', 'object' (a user's class
    instance: its attributes) or 'treedef'."""
    cls: type | None = None
    keys: tuple = ()
    """Field names (dataclass, namedtuple) or dict keys, in element order."""
    aux: object = None
    """A registered class's aux data (hashable); an object's static attributes ((name,
    value) pairs); a treedef's TupleType of the tree."""

    def __repr__(self) -> str:
        return self.describe(("*",) * len(self.keys)) if self.keys else self.kind

    def describe(self, elements: tuple[Type, ...]) -> str:
        parts = ", ".join(map(str, elements))
        if self.kind == "list":
            return f"list<{parts}>"
        if self.kind == "treedef":
            return f"treedef<{self.aux}>"
        if self.keys:
            parts = ", ".join(f"{k}: {e}" for k, e in zip(self.keys, elements))
        name = "dict" if self.kind == "dict" else self.cls.__name__
        return f"{name}{{{parts}}}"


@dataclass(frozen=True)
class TupleType(Type):
    """A tuple, or with `node` a container flattened into one (a list, a dict, a dataclass
    ...): every pass and AD handle both as tuples. Like a scalar's strength, `node` is
    printed but takes no part in equality (passes and AD build plain tuples of the same
    elements); `exact`, hence signatures, specializations and joins, tell nodes apart."""

    elements: tuple[Type, ...]
    node: TreeNode | None = field(default=None, compare=False)
    """The container (docs/trees.md); None for a plain tuple."""

    def __str__(self) -> str:
        if self.node is not None:
            return self.node.describe(self.elements)
        return "tuple<" + ", ".join(map(str, self.elements)) + ">"


@dataclass(frozen=True)
class ArrayType(Type):
    """A strided NumPy array of `dtype` elements with `ndim` dimensions (NumPy semantics)."""

    dtype: ScalarType
    ndim: int

    def __post_init__(self):
        object.__setattr__(self, "dtype", weak(self.dtype))  # one spelling of each dtype

    def __str__(self) -> str:
        return f"array<{self.dtype}, {self.ndim}>"


NUMPY_NAMES = {"f64": "float64", "f32": "float32", "i64": "int64", "i32": "int32",
               "i16": "int16", "i8": "int8", "u64": "uint64", "u32": "uint32", "u16": "uint16",
               "u8": "uint8", "c128": "complex128", "c64": "complex64", "bool": "bool"}
"""The NumPy dtype name of each IR scalar type name: the one dtype-name map."""

NUMPY_DTYPES = {numpy: name for name, numpy in NUMPY_NAMES.items()}
"""The NumPy dtypes compiled code takes, by name, and their IR scalar type names."""

NUMPY_SCALARS = NUMPY_DTYPES
"""The NumPy scalar types compiled code takes as arguments (strong scalars), by dtype name."""


@dataclass(frozen=True)
class TapeType(Type):
    """A growable stack of `element` values: what a differentiated `while` records per iteration."""

    element: Type

    def __str__(self) -> str:
        return f"tape<{self.element}>"


@dataclass(frozen=True)
class IntOrBoolType(Type):
    """A Python int that is a bool on some paths (`n > 0 or m`, `found = False` then
    `found = k`): an i64 with a tag saying whether it is a bool, so it reaches Python as
    CPython's value would (`True`, not `1`). Every operation reads it as its i64 (True
    is 1, which is all Python's arithmetic sees of a bool): type inference puts an
    `untag` before it, and a `tag` where a bool or an int becomes one."""

    def __str__(self) -> str:
        return "int|bool"


@dataclass(frozen=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True)
class KeyType(Type):
    """A dict's key as a loop over the dict gives it (`for k in d`): a string known at
    compile time, held by the type alone (nothing at run time), read by the ops that
    take keys (`d[k]`, a dict comprehension's key)."""

    key: str

    def __str__(self) -> str:
        return f"key<{self.key!r}>"


@dataclass(frozen=True)
class BottomType(Type):
    def __str__(self) -> str:
        return "bottom"


ALWAYS_STRONG = ("f32", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "c64")
"""Scalar types only NumPy has: their values are always NumPy scalars."""

BOOL = ScalarType("bool")
I8 = ScalarType("i8")
I16 = ScalarType("i16")
I32 = ScalarType("i32")
I64 = ScalarType("i64")
U8 = ScalarType("u8")
U16 = ScalarType("u16")
U32 = ScalarType("u32")
U64 = ScalarType("u64")
F32 = ScalarType("f32")
F64 = ScalarType("f64")
C64 = ScalarType("c64")
C128 = ScalarType("c128")
NONE = NoneType()
BOTTOM = BottomType()
INT_OR_BOOL = IntOrBoolType()

NUMERIC_RANK = {BOOL: 0, I8: 1, U8: 1, I16: 1, U16: 1, I32: 1, U32: 1, I64: 2, U64: 2,
                F32: 3, F64: 4, C64: 5, C128: 6}
"""Every numeric type; Python's promotion orders the ones Python has (bool < i64 < f64 <
c128)."""


def is_numeric(t: Type) -> bool:
    return t in NUMERIC_RANK


def int_range(t: ScalarType) -> tuple[int, int]:
    """The lowest and highest value of an int (or bool) type."""
    if t.kind in "bu":
        return 0, (1 << t.bits) - 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def promote(*types: Type) -> Type:
    """The common type of numeric operands, as Python's arithmetic computes it.

    bool and int meet at i64 (True + True == 2), any float wins over ints. Operands
    of one NumPy-only dtype (a scalar rule applied to NumPy's computation type, ops/
    elementwise.py) keep it; of several, they meet as NumPy's promotion has them.
    """
    first = types[0]
    if all(t == first for t in types) and first != BOOL:
        return weak(first)
    if any(t.name in ALWAYS_STRONG for t in types):
        return numpy_promote([weak(t) for t in types if t.name in ALWAYS_STRONG],
                             [t for t in types if t.name not in ALWAYS_STRONG])
    best = max(types, key=NUMERIC_RANK.__getitem__)
    return I64 if best == BOOL else weak(best)


def strong(t: Type) -> Type:
    """`t` as a NumPy scalar type (tuples elementwise; other types unchanged)."""
    if isinstance(t, ScalarType):
        return t if t.strong else replace(t, strong=True)
    if isinstance(t, TupleType):
        return TupleType(tuple(strong(e) for e in t.elements), t.node)
    return t


def weak(t: Type) -> Type:
    """`t` as a Python scalar type where Python has one (f32 and i32 stay strong)."""
    if isinstance(t, ScalarType):
        return replace(t, strong=False) if t.strong and t.name not in ALWAYS_STRONG else t
    return t


def is_strong(t: Type) -> bool:
    return isinstance(t, ScalarType) and t.strong


def exact(t: Type) -> object:
    """A hashable key of `t` that, unlike `t` itself, tells strong scalars from weak ones."""
    if isinstance(t, ScalarType):
        return (t.name, t.strong)
    if isinstance(t, TupleType):
        return ("tuple", tuple(exact(e) for e in t.elements), t.node)
    return t


class TypeKey(tuple):
    """A tuple of types as a cache key (argument types of a signature or specialization):
    equal to another only when every type is exactly equal, strength included."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple):
            return NotImplemented
        return len(self) == len(other) and all(exact(a) == exact(b) for a, b in zip(self, other))

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(tuple(exact(t) for t in self))


def join(a: Type, b: Type) -> Type | None:
    """The type a variable has after two paths merge, or None when they cannot meet.

    Weak numbers meet at their promoted type (an int on one path and a float on
    the other gives float, as Numba does), but a bool and an int meet at
    `INT_OR_BOOL`, which keeps which one it is. Where one is a NumPy scalar, they meet
    as NumPy would combine them (`numpy_join`): `s = 0.0` then
    `s += x[i]` makes `s` an np.float64 (np.float32 for an f32 array) on both
    paths. Tuples meet elementwise; containers only of the same kind and fields.
    """
    if isinstance(a, TupleType) and isinstance(b, TupleType) and a.node != b.node:
        return None  # containers meet only with the same structure
    if {a, b} <= {BOOL, I64, INT_OR_BOOL} and a != b and not is_strong(a) and not is_strong(b):
        return INT_OR_BOOL  # a bool on one path, an int on the other: each keeps its type
    if INT_OR_BOOL in (a, b) and a != b:
        return join(I64, b if a == INT_OR_BOOL else a)  # with a float: a float, as an int's
    if is_numeric(a) and is_numeric(b) and (a.strong or b.strong):
        return numpy_join(a, b)
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
        return None if None in parts else TupleType(tuple(parts), a.node)
    return None


def python_type_of(value) -> Type | None:
    """The IR type of a Python constant or argument value, or None if it has none.

    A NumPy scalar of a supported dtype (`NUMPY_SCALARS`) is a strong scalar, and
    of another dtype has none; a NumPy array of a supported dtype is an ArrayType.
    """
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.ndarray):
        return _array_type(value.dtype, value.ndim)
    if numpy is not None and isinstance(value, numpy.generic):
        name = NUMPY_SCALARS.get(value.dtype.name)
        return ScalarType(name, strong=True) if name else None
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I64
    if isinstance(value, float):
        return F64
    if isinstance(value, complex):
        return C128
    if value is None:
        return NONE
    if isinstance(value, tuple):
        parts = [python_type_of(v) for v in value]
        return None if None in parts else TupleType(tuple(parts))
    return None


def device_type_of(value) -> Type | None:
    """`python_type_of`, and a CuPy array's ArrayType too: the argument types of
    target="gpu" (where a NumPy array stands for a device array in `f.ir(...)`, and the
    device entry refuses one in a call, saying what to pass)."""
    cupy = sys.modules.get("cupy")  # never imported here: a CuPy array implies cupy
    if cupy is not None and isinstance(value, cupy.ndarray):
        return _array_type(value.dtype, value.ndim)
    return python_type_of(value)


def _array_type(dtype, ndim: int) -> ArrayType | None:
    known = _ARRAY_TYPES.get(dtype)
    if known is None:
        known = _array_types(dtype)
    if not known:
        return None
    element, by_ndim = known
    if ndim >= len(by_ndim):
        return ArrayType(element, ndim)
    made = by_ndim[ndim]
    if made is None:  # (two threads may both make it: equal types, either kept)
        made = by_ndim[ndim] = ArrayType(element, ndim)
    return made


_ARRAY_TYPES: dict = {}
"""A NumPy dtype object -> its IR scalar type and the ArrayTypes of its arrays by ndim (up
to 8, each made when first asked for), or () for a dtype compiled code does not take:
`python_type_of` looks a dtype up by the object (`dtype.name` is slow Python code in
NumPy), and makes no ArrayType per call, nor nine at a process's first array argument (a
frozen dataclass each, made for ranks its calls seldom pass)."""


def _array_types(dtype) -> tuple:
    name = NUMPY_DTYPES.get(dtype.name)
    known = (ScalarType(name), [None] * 9) if name else ()
    if len(_ARRAY_TYPES) < 256:  # a few dtypes in practice; structured ones are not kept
        _ARRAY_TYPES[dtype] = known
    return known


# ---- NumPy's promotion -------------------------------------------------------------------

_DEFAULT = {"b": BOOL, "i": I64, "f": F64, "c": C128}
"""The dtype a Python scalar of each kind becomes alone: NumPy's default int, float, complex."""
_KIND_ORDER = "biufc"


@functools.cache
def _strong(a: ScalarType, b: ScalarType) -> ScalarType:
    """NumPy's promotion of two array dtypes (`np.promote_types`: u64 with i64 is f64)."""
    if a == b:
        return a
    import numpy

    name = numpy.promote_types(NUMPY_NAMES[a.name], NUMPY_NAMES[b.name]).name
    return ScalarType(NUMPY_DTYPES[name])


def _with_weak(result: ScalarType, scalar: ScalarType) -> ScalarType:
    """NEP 50: a Python scalar joins the arrays' dtype only where it is of a higher kind
    (a float with ints gives float64, a float with complex64 stays complex64)."""
    kind = "i" if scalar.kind == "u" else scalar.kind
    if _KIND_ORDER.index(kind) <= _KIND_ORDER.index(result.kind) or kind == "u":
        return result
    if kind == "c" and result.kind == "f":
        return C64 if result == F32 else C128
    return _DEFAULT[kind]


def numpy_promote(arrays: list[ScalarType], scalars: list[ScalarType]) -> ScalarType:
    """NEP 50: the dtypes of the arrays promote strongly, then the (weak) scalars join in."""
    if not arrays:
        best = max(scalars, key=lambda s: _KIND_ORDER.index(s.kind))
        return _DEFAULT["i" if best.kind == "u" else best.kind]
    result = functools.reduce(_strong, arrays)
    for s in scalars:
        result = _with_weak(result, s)
    return result


def numpy_join(a: ScalarType, b: ScalarType) -> ScalarType:
    """Where a strong scalar meets another scalar at a merge: NumPy's promotion, strong."""
    if a.strong and b.strong:
        return strong(_strong(weak(a), weak(b)))
    strong_one, weak_one = (a, b) if a.strong else (b, a)
    return strong(numpy_promote([weak(strong_one)], [weak(weak_one)]))
