"""How an array is laid out, in compiled code and in NumPy's objects: what every lowering
and the entry wrapper share about arrays.

An array value is the struct of `lltypes.array_struct`: `{T* data, [n x i64]
shape, [n x i64] strides, i8* owner}`, strides in elements. Element
`(i_0, ..., i_{n-1})` lives at `data + sum(i_k * strides[k])`. `dim` reads a
length, `element_pointer` the address of an element, after NumPy's index rules:
a negative index counts from the end of its axis, and one outside the axis fails
with NumPy's IndexError ("index 5 is out of bounds for axis 0 with size 5"; the
index and the size travel with the error, see `FunctionEmitter.fail_with_values`),
unless the node's attrs say `boundscheck=False` (negative indices still count from
the end then) or `inbounds=True` (a check before the loop proved the index within
`[0, size)`: neither the negative-index rule nor the check is emitted). With
`unit_stride=True` (a check before the loop proved the last axis's stride 1) the last
index is not multiplied by its stride: an index computed from data (`counts[k]`) then
addresses its element without a multiplication on the way.

For the optimizer: the check is `wrapped <u size` on the very `shape` value the
loop bound comes from (`len(a)`, `a.shape[k]`), so LLVM removes it from loops
that stay within the axis; the address arithmetic is `nsw` and the GEP
`inbounds` (a valid index stays inside the array).

The entry side: `numpy_layout()` finds (and checks, on real arrays) where
NumPy keeps an array's data, dimensions, strides, descriptor and flags, and
`accepts(value, t)` says in Python which arrays the wrapper takes for an
`ArrayType` parameter: exactly `numpy.ndarray` (no subclass), `t.ndim`
dimensions, a native-byte-order dtype of `t.dtype`, and aligned (the data
pointer and the byte stride of every axis longer than 1 are multiples of the
item size; an empty array always counts as aligned, as for NumPy).
`ir.analysis.written_parameters` says which parameters compiled code may
write to, so the wrapper can refuse read-only arrays for them.
"""
from __future__ import annotations

import ctypes
import functools
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import CompileError
from ...ir.types import NUMERIC_RANK, NUMPY_DTYPES, ArrayType, ScalarType
from . import messages as msg
from .lltypes import ARRAY_DATA, ARRAY_SHAPE, ARRAY_STRIDES, I64_T

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

NPY_ARRAY_WRITEABLE = 0x0400
"""The flag bit of a writeable array."""
ITEM_SIZES = {t: max(t.bits // 8, 1) for t in NUMERIC_RANK}
"""Bytes per element of each dtype an array may have."""


# ---- the array struct ------------------------------------------------------------------

def dim(b: ir.IRBuilder, array: ir.Value, axis: int) -> ir.Value:
    """The length of `array` along `axis`. A parameter's is read once, in the entry block,
    and every use gets that one value: then a loop over `range(len(x))` and the bounds
    checks of its `x[i]` compare the same value, which LLVM sees even after the loop
    is extracted into a function of its own (split.py), and drops the checks."""
    if not isinstance(array, ir.Argument):
        return b.extract_value(array, [ARRAY_SHAPE, axis])
    # Kept on the function itself, so that it goes with it: (parameter, axis) -> length.
    read = b.function.__dict__.setdefault("astjit_parameter_dims", {})
    key = (array, axis)
    if key not in read:
        with b.goto_entry_block():
            read[key] = b.extract_value(array, [ARRAY_SHAPE, axis])
    return read[key]


def element_pointer(em: FunctionEmitter, node: Node, array: ir.Value,
                    indices: list[ir.Value]) -> ir.Value:
    """The address of element `indices`, after NumPy's negative-index and bounds rules."""
    b = em.builder
    inbounds = node.attrs.get("inbounds", False)  # proved within [0, size): passes/versioning.py
    unit_stride = node.attrs.get("unit_stride", False)  # the last axis's stride 1: the same
    check = node.attrs.get("boundscheck", True) and not inbounds
    offset = None
    for axis, index in enumerate(indices):
        known = em.indices.get((array, axis, index))
        conversion = em.take_deferred(index)  # a[int(x)]: int(x)'s check, not emitted yet
        if inbounds or (known is not None and (known[1] or not check)):
            if conversion is not None:
                conversion()
            # a[k] += 1: the read found k's place; the write takes it
            wrapped = index if inbounds else known[0]
        else:
            wrapped = _wrapped(em, node, array, axis, index, check, conversion)
            em.indices[(array, axis, index)] = (wrapped, check)
        if unit_stride and axis == len(indices) - 1:
            term = wrapped
        else:
            term = b.mul(wrapped, b.extract_value(array, [ARRAY_STRIDES, axis]), flags=["nsw"])
        offset = term if offset is None else b.add(offset, term, flags=["nsw"])
    data = b.extract_value(array, ARRAY_DATA)
    return data if offset is None else b.gep(data, [offset], inbounds=True)


def _wrapped(em: FunctionEmitter, node: Node, array: ir.Value, axis: int, index: ir.Value,
             check: bool, conversion: Callable[[], None] | None) -> ir.Value:
    """`index` within [0, size): as it is, or counted from the end when negative; outside
    the axis an IndexError where `check`, else undefined (boundscheck=False).

    The hot path is one branch, `index <u size` (unsigned: a negative index fails it
    too), that takes the index as it is; the negative-index rule and the error are on
    the cold path. An element's address then waits for the index only, not for a
    select computing the wrap, and a check LLVM proves true takes the branch with it.
    `conversion` emits the check of the int(x) that gave `index`, which fails only for
    an index no axis has (`conversions.float_to_int`): first thing on the cold path,
    as Python raises its error before indexing, also with boundscheck=False.
    """
    b = em.builder
    size = dim(b, array, axis)
    entry = b.block
    with b.if_then(b.icmp_unsigned(">=", index, size), likely=False):
        if conversion is not None:
            conversion()
        negative = b.icmp_signed("<", index, ir.Constant(I64_T, 0))
        from_end = b.select(negative, b.add(index, size), index)
        if check:
            # Still outside [0, size): below -size, or at or past size.
            em.fail_with_values(node, b.icmp_unsigned(">=", from_end, size), "IndexError",
                                msg.INDEX_OUT_OF_BOUNDS.format(axis=axis),
                                msg.INDEX_OUT_OF_BOUNDS_DETAIL.format(axis=axis),
                                [index, size])
        cold = b.block
    result = b.phi(I64_T)
    result.add_incoming(index, entry)
    result.add_incoming(from_end, cold)
    return result


@dataclass(frozen=True)
class NumpyLayout:
    """Byte offsets into NumPy's array and descriptor objects, and the objects compared with."""

    ndarray: type
    data: int
    nd: int
    dimensions: int
    strides: int
    descr: int
    flags: int
    descr_byteorder: int
    descr_type_num: int
    descr_elsize: int
    type_nums: dict
    """IR dtype -> the descriptor type numbers of the native NumPy dtypes that are it
    (int64 is both C `long` and `long long` on LP64 platforms)."""
    foreign_byteorder: bytes
    """The byte order character of a non-native descriptor on this host."""


@functools.cache
def numpy_layout() -> NumpyLayout:
    """NumPy 2.x's PyArrayObject and PyArray_Descr fields, checked on real arrays.

    PyArrayObject: header, char *data, int nd, npy_intp *dimensions, *strides,
    PyObject *base, PyArray_Descr *descr, int flags, PyObject *weakreflist.
    PyArray_Descr: header, PyTypeObject *typeobj, char kind, type, byteorder,
    flags, int type_num, npy_uint64 flags, npy_intp elsize.
    """
    try:
        import numpy
    except ImportError as exc:  # pragma: no cover - arrays imply numpy
        raise CompileError("array arguments need NumPy") from exc
    pointer, c_int = ctypes.sizeof(ctypes.c_void_p), ctypes.sizeof(ctypes.c_int)
    header = object.__basicsize__
    data = header
    nd = data + pointer
    dimensions = _align(nd + c_int, pointer)
    strides = dimensions + pointer
    descr = strides + 2 * pointer  # after `base`
    flags = descr + pointer
    kind = header + pointer  # after `typeobj`; then the chars type, byteorder, former flags
    type_num = _align(kind + 4, c_int)
    elsize = _align(type_num + c_int, 8) + 8  # after the npy_uint64 flags
    type_nums = defaultdict(set)
    by_dtype = {numpy.dtype(numpy_name): name for numpy_name, name in NUMPY_DTYPES.items()}
    for code in numpy.typecodes["All"]:
        dt = numpy.dtype(code)
        name = by_dtype.get(dt)  # equal dtypes ('l', 'q'): one entry; not `dt.name`, slow
        if name is not None and dt.isnative:
            type_nums[ScalarType(name)].add(dt.num)
    layout = NumpyLayout(numpy.ndarray, data, nd, dimensions, strides, descr, flags,
                         kind + 2, type_num, elsize,
                         {k: frozenset(v) for k, v in type_nums.items()},
                         b">" if sys.byteorder == "little" else b"<")
    _verify(layout, numpy)
    return layout


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


def _verify(layout: NumpyLayout, numpy) -> None:
    """Read real arrays through the offsets; CompileError if NumPy's layout differs."""
    base = numpy.arange(24, dtype=numpy.float64).reshape(4, 6)
    samples = [base, base[::2, 1:], base.T, numpy.zeros(3, numpy.float32),
               numpy.ones((), numpy.bool_), numpy.arange(5, dtype=">i8")[::-1]]
    samples[-1].flags.writeable = False
    for a in samples:
        address = id(a)

        def read(offset, ctype, at=address):
            return ctype.from_address(at + offset).value

        descr = read(layout.descr, ctypes.c_void_p)
        dims = read(layout.dimensions, ctypes.c_void_p)
        strides = read(layout.strides, ctypes.c_void_p)
        ok = (read(layout.data, ctypes.c_void_p) == a.ctypes.data
              and read(layout.nd, ctypes.c_int) == a.ndim
              and all(ctypes.c_ssize_t.from_address(dims + 8 * k).value == a.shape[k]
                      and ctypes.c_ssize_t.from_address(strides + 8 * k).value == a.strides[k]
                      for k in range(a.ndim))
              and descr == id(a.dtype)
              and bool(read(layout.flags, ctypes.c_int) & NPY_ARRAY_WRITEABLE) == a.flags.writeable
              and read(layout.descr_type_num, ctypes.c_int, descr) == a.dtype.num
              and read(layout.descr_elsize, ctypes.c_ssize_t, descr) == a.dtype.itemsize
              and read(layout.descr_byteorder, ctypes.c_char, descr) == a.dtype.byteorder.encode())
        if not ok:
            raise CompileError(f"NumPy {numpy.__version__}'s array layout is not the one the "
                               "compiled entry reads (NumPy 2.x's); arrays cannot be passed")


def accepts(value, t: ArrayType) -> bool:
    """Whether the fast entry takes `value` for a parameter of type `t` (what the wrapper
    checks in LLVM, in Python: the slow path must not hand back an array it refuses)."""
    layout = numpy_layout()
    if type(value) is not layout.ndarray or value.ndim != t.ndim:
        return False
    dt = value.dtype
    if dt.num not in layout.type_nums.get(t.dtype, ()) or dt.itemsize != ITEM_SIZES[t.dtype] \
            or dt.byteorder.encode() == layout.foreign_byteorder:
        return False
    if value.size == 0:
        return True
    item = dt.itemsize
    return value.ctypes.data % item == 0 and all(
        stride % item == 0 for size, stride in zip(value.shape, value.strides) if size > 1)


def c_strides(b: ir.IRBuilder, dims: list[ir.Value]) -> list[ir.Value]:
    """Element strides of a C-contiguous array of shape `dims` (the last one the constant 1)."""
    strides, stride = [], ir.Constant(I64_T, 1)
    for d in reversed(dims):
        strides.append(stride)
        stride = b.mul(stride, d, flags=["nsw"])
    return strides[::-1]
