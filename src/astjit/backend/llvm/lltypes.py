"""IR types as LLVM types, and IR constants as LLVM constants.

bool is `i1`, ints are `iN` of their width (LLVM's ints have no sign: the ops of
unsigned ones choose unsigned instructions, ops/table.py's kind 'u'), floats
`float`/`double`, a complex the vector `<2 x float>` or `<2 x double>` (NumPy's
layout: real part first; `fadd`, `fsub`, `fneg` act on both parts), a tuple is a
literal struct of its elements, and `none` is the empty struct `{}` (a value
that takes no space, so it can flow through phis and tuples like any other).
`bottom`, the type of a value no path ever produces (a loop's return slot
that is never assigned), is the empty struct too. A tape, whatever its element,
is a pointer to the `TAPE_HEADER` that `tapes.py` describes.

An array of `ndim` dimensions is the literal struct

    {T* data, [ndim x i64] shape, [ndim x i64] strides, i8* owner}

passed by value: `strides` count ELEMENTS, not bytes (the entry wrapper divides
NumPy's byte strides by the item size), and `owner` is the `PyObject *` that
owns the memory: the ndarray itself, borrowed, for an argument; the ndarray
NumPy allocated for an array compiled code made (`new_arrays.py`). `T` is the
element's storage type, which is its value type except for bool: NumPy keeps
a bool in one byte, so a bool array stores `i8` and its elements are `i1`
once loaded (`element_type`).
"""
from __future__ import annotations

import functools

from llvmlite import ir

from ...errors import CompileError
from ...ir.types import (
    BOOL,
    F32,
    F64,
    INT_OR_BOOL,
    NUMERIC_RANK,
    ArrayType,
    BottomType,
    NoneType,
    ScalarType,
    TapeType,
    TupleType,
    Type,
)

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32_T = ir.IntType(32)
I64_T = ir.IntType(64)
DOUBLE = ir.DoubleType()
STATUS = I32_T
"""The return type of every compiled graph: 0 = OK, k > 0 = error site k."""
BYTES = I8.as_pointer()
TAPE_HEADER = ir.LiteralStructType([I64_T, I64_T, BYTES, BYTES, BYTES.as_pointer(),
                                    BYTES.as_pointer()])
"""{len, cap, data, next, link, owner} of a tape, on the C heap (see `tapes.py`)."""
TAPE = TAPE_HEADER.as_pointer()

FLOAT = ir.FloatType()


def _scalar_type(t: ScalarType) -> ir.Type:
    if t.is_float:
        return FLOAT if t == F32 else DOUBLE
    if t.is_complex:
        return ir.VectorType(FLOAT if t.bits == 64 else DOUBLE, 2)
    return ir.IntType(t.bits)


_SCALARS = {t: _scalar_type(t) for t in NUMERIC_RANK}
ARRAY_DATA, ARRAY_SHAPE, ARRAY_STRIDES, ARRAY_OWNER = range(4)
"""The fields of an array's struct."""


def element_type(dtype: ScalarType) -> ir.Type:
    """How an array stores one element of `dtype`: its value type, but `i8` for bool."""
    return I8 if dtype == BOOL else lltype(dtype)


@functools.cache
def array_struct(t: ArrayType) -> ir.LiteralStructType:
    """{data, shape, strides, owner}: one object per array type (llvmlite builds a struct
    type slowly, and an MLP step asks for hundreds)."""
    dims = ir.ArrayType(I64_T, t.ndim)
    return ir.LiteralStructType([element_type(t.dtype).as_pointer(), dims, dims, BYTES])


def contains_array(t: Type | None) -> bool:
    """Whether a value of type `t` is or holds (in nested tuples) an array."""
    if isinstance(t, TupleType):
        return any(contains_array(e) for e in t.elements)
    return isinstance(t, ArrayType)


INT_OR_BOOL_T = ir.LiteralStructType([I1, I64_T])
"""An int|bool: whether it is a bool, and its value as an int."""


def lltype(t: Type) -> ir.Type:
    """The LLVM type that holds a value of IR type `t`."""
    if t in _SCALARS:
        return _SCALARS[t]
    if t == INT_OR_BOOL:
        return INT_OR_BOOL_T
    if isinstance(t, TupleType):
        return ir.LiteralStructType([lltype(e) for e in t.elements])
    if isinstance(t, (NoneType, BottomType)):
        return ir.LiteralStructType([])
    if isinstance(t, TapeType):
        return TAPE
    if isinstance(t, ArrayType) and t.dtype in _SCALARS:
        return array_struct(t)
    raise CompileError(f"the CPU backend cannot represent values of type {t}")


def wrap_int(value: int, bits: int) -> int:
    """`value` wrapped to a signed `bits`-bit integer, as compiled arithmetic wraps."""
    half = 1 << (bits - 1)
    return ((int(value) + half) % (1 << bits)) - half


def constant(t: Type, value) -> ir.Constant:
    """The LLVM constant of IR type `t` holding the Python value `value`."""
    ty = lltype(t)
    if t == BOOL:
        return ir.Constant(ty, int(bool(value)))
    if isinstance(t, ScalarType) and t.is_int:
        return ir.Constant(ty, wrap_int(value, ty.width))
    if t in (F32, F64):
        return ir.Constant(ty, float(value))
    if isinstance(t, ScalarType) and t.is_complex:
        value = complex(value)
        return ir.Constant(ty, [ir.Constant(ty.element, value.real),
                                ir.Constant(ty.element, value.imag)])
    if isinstance(t, TupleType):
        return ir.Constant(ty, [constant(e, v) for e, v in zip(t.elements, value)])
    if t == INT_OR_BOOL:
        return ir.Constant(ty, [ir.Constant(I1, isinstance(value, bool)),
                                ir.Constant(I64_T, wrap_int(value, 64))])
    if isinstance(t, ArrayType):
        raise CompileError(f"an array constant ({t}) cannot be compiled yet: pass the array "
                           "as an argument")
    return ir.Constant(ty, None)


def zero(t: Type) -> ir.Constant:
    """The all-zero value of type `t` (what `undef` placeholders become)."""
    return ir.Constant(lltype(t), None)


def size_of(ty: ir.Type) -> ir.Constant:
    """The allocation size of `ty` in bytes, as an i64 constant expression (the distance
    between consecutive elements of an array of `ty`)."""
    one_past_null = ir.Constant(ty.as_pointer(), None).gep([ir.Constant(I32_T, 1)])
    return one_past_null.ptrtoint(I64_T)


NOT_BUILTIN = frozenset({"fmod", "fmodf"})
"""C math functions declared `nobuiltin`, so that LLVM calls them and never rewrites them by
what it knows of the C function. LLVM 22's libcall simplifier turns fmod(x, y), where it
can prove x finite-or-NaN and y nonzero, into an `frem nnan`: poison when x is a NaN, so
that `p3 + fmod(nan, 9.0)` became `p3` (fuzz seed 41320, program 6580; LLVM fixed it after
22 by not setting the flag, llvm-project pull 199284). It costs no optimization astjit
relies on: its own constant folding has run before LLVM sees the call."""


def declare_libm(module: ir.Module, name: str, ty: ir.Type, arity: int) -> ir.Function:
    """The C math function `name` (on `ty`, of `arity` operands) declared in `module`
    once: it unwinds nowhere; those in NOT_BUILTIN are called as they are."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)
        fn.attributes.add("nounwind")
        if name in NOT_BUILTIN:
            fn.attributes.add("nobuiltin")
    return fn


def call_intrinsic(builder: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """A call of the LLVM intrinsic `name` overloaded on its first operand's type, declared
    in the builder's module: the intrinsic itself, never the vector-math call
    `FunctionEmitter.call_intrinsic` may make instead."""
    ty = args[0].type
    fnty = ir.FunctionType(ty, [a.type for a in args])
    return builder.call(builder.module.declare_intrinsic(name, [ty], fnty), args)
