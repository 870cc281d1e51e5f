"""New arrays with NumPy's checks, and the store loops that fill them: what every lowering
that makes an array shares (the allocation ops themselves: allocation.py).

- `check_dims`: NumPy's checks, in NumPy's order, dimension by dimension ("negative
  dimensions are not allowed", then "array is too big; ..." when `itemsize * size`
  passes the largest `npy_intp`, zero dimensions skipped, as `PyArray_NewFromDescr`
  does); `numpy_message(key)`: NumPy's message for a failing case, read off NumPy.
- `allocate`: `PyArray_Zeros` (calloc: fresh pages come zeroed) or
  `PyArray_NewFromDescr` through a function the module shares per rank
  (`new_ndarray`); a NULL from NumPy (out of memory) clears NumPy's exception and
  fails with MemoryError. The array goes on the owned list (owned.py). Element strides
  are NumPy's for C order (`c_order_value`; an axis of length 0 counts as 1), so the
  entry wrapper recognizes it as covering its owner and returns the ndarray itself.
- `fill` / `fill_with`: a store loop LLVM vectorizes, one helper per element type and
  module (`helper`, `HELPERS`, which also holds arange's).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import CompileError
from ...ir.core import Node
from ...ir.types import BOOL, NUMERIC_RANK, ArrayType, ScalarType
from . import array_layout, nests, owned
from . import messages as msg
from .lltypes import (
    ARRAY_DATA,
    ARRAY_OWNER,
    ARRAY_SHAPE,
    ARRAY_STRIDES,
    DOUBLE,
    I1,
    I8,
    I32_T,
    I64_T,
    element_type,
    zero,
)
from .runtime import numpy_api
from .runtime.pyapi import PYOBJ, VOID, declare, load_field
from .shared import shared_function

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


# ---- NumPy's messages, read off NumPy ------------------------------------------------------

def _message(failing) -> tuple[str, str]:
    try:
        failing()
    except Exception as exc:  # noqa: BLE001 - whatever NumPy raises is what we report
        return type(exc).__name__, str(exc)
    raise AssertionError("expected an exception")  # pragma: no cover


@functools.cache
def messages() -> dict[str, tuple[str, str]]:
    """(exception name, message) of each allocation error, as the host NumPy raises it."""
    import numpy

    return {
        "negative": _message(lambda: numpy.empty(-1)),
        "too_big": _message(lambda: numpy.empty((2 ** 62, 4))),
        "int_zero_step": _message(lambda: numpy.arange(0, 1, 0)),
        "float_zero_step": _message(lambda: numpy.arange(0.0, 1.0, 0.0)),
        "max_size": _message(lambda: numpy.arange(0.0, float("inf"), 1.0)),
        "nan_length": _message(lambda: numpy.arange(0.0, float("nan"), 1.0)),
    }


def numpy_message(key: str) -> tuple[str, str]:
    return messages()[key]


ALLOCATION_FAILED = "Unable to allocate memory for an array"
"""The message of the MemoryError when NumPy cannot allocate (NumPy's names the size)."""


# ---- the fill helpers, one of each per LLVM module ---------------------------------------------

def helper(module: ir.Module, name: str) -> ir.Function:
    """The shared function `astjit.array.<name>` (a fill) of `module` (shared.py), made on
    first use."""
    fnty, emit = HELPERS[name]
    return shared_function(module, "astjit.array." + name, fnty, emit)


def _fill(element: ir.Type):
    def emit(fn, b, data, n, value):
        """data[0:n] = value."""
        nests.count_up(b, ir.Constant(I64_T, 0), n,
                        lambda i: b.store(value, b.gep(data, [i], inbounds=True)),
                        flags=("nsw", "nuw"))
        b.ret_void()
    return ir.FunctionType(VOID, [element.as_pointer(), I64_T, element]), emit


def _arange(element: ir.Type):
    def emit(fn, b, data, n, start, next_):
        """NumPy's fill: data[0] = start, data[1] = next, data[i] = start + i * (next - start)."""
        one, two = ir.Constant(I64_T, 1), ir.Constant(I64_T, 2)
        with b.if_then(b.icmp_signed(">=", n, one)):
            b.store(start, data)
        with b.if_then(b.icmp_signed(">=", n, two)):
            b.store(next_, b.gep(data, [one], inbounds=True))
        is_float = element == DOUBLE
        delta = b.fsub(next_, start) if is_float else b.sub(next_, start)

        def store(i):
            if is_float:
                value = b.fadd(start, b.fmul(b.sitofp(i, DOUBLE), delta))
            else:
                value = b.add(start, b.mul(i, delta))
            b.store(value, b.gep(data, [i], inbounds=True))
        nests.count_up(b, two, n, store, flags=("nsw", "nuw"))
        b.ret_void()
    return ir.FunctionType(VOID, [element.as_pointer(), I64_T, element, element]), emit


HELPERS = {
    **{f"fill.{ty}": _fill(ty) for ty in {element_type(t) for t in NUMERIC_RANK}},
    **{f"arange.{ty}": _arange(ty) for ty in (DOUBLE, I64_T)},
}


# ---- allocation ---------------------------------------------------------------------------------

def check_dims(em: FunctionEmitter, node: Node, dtype: ScalarType, dims: list[ir.Value]) -> None:
    """NumPy's checks of a new array's dimensions (PyArray_NewFromDescr): any negative one
    first, then whether `itemsize` times the nonzero ones passes the largest npy_intp.
    The checks run in the module's `astjit.array.check.<ndim>`, which says which failed;
    constant dimensions that pass need none."""
    itemsize = array_layout.ITEM_SIZES[dtype]
    if not dims or _dims_pass(itemsize, dims):
        return
    b = em.builder
    code = b.call(dims_check(em.module, len(dims)), [ir.Constant(I64_T, itemsize), *dims])
    with b.if_then(b.icmp_unsigned("!=", code, ir.Constant(I32_T, 0)), likely=False):
        too_big = em.errors.status(*numpy_message("too_big"), node.loc)
        negative = em.errors.status(*numpy_message("negative"), node.loc)
        em.return_status(b.select(b.icmp_unsigned("==", code, ir.Constant(I32_T, 1)),
                                  ir.Constant(I32_T, negative), ir.Constant(I32_T, too_big)))


def dims_check(module: ir.Module, ndim: int) -> ir.Function:
    """`module`'s `astjit.array.check.<ndim>`: (itemsize, dims...) -> 0 if NumPy's checks
    pass, 1 if a dimension is negative, 2 if the array is too big."""
    return shared_function(module, f"astjit.array.check.{ndim}", *_check(ndim))


def _dims_pass(itemsize: int, dims: list[ir.Value]) -> bool:
    """Whether `dims` are constants NumPy's checks pass."""
    if not all(isinstance(d, ir.Constant) for d in dims):
        return False
    sizes = [d.constant for d in dims]
    nbytes = itemsize
    for d in sizes:
        nbytes *= max(d, 1)
    return min(sizes) >= 0 and nbytes <= INT64_MAX


def _check(ndim: int):
    def emit(fn, b, nbytes, *dims):
        """0 if the dimensions pass, 1 if one is negative, 2 if the size is too big."""
        zero_i64 = ir.Constant(I64_T, 0)
        negative = overflow = ir.Constant(I1, 0)
        for d in dims:
            negative = b.or_(negative, b.icmp_signed("<", d, zero_i64))
            product = b.smul_with_overflow(nbytes, d)
            skip = b.icmp_signed("<=", d, zero_i64)
            overflow = b.or_(overflow, b.and_(b.not_(skip), b.extract_value(product, 1)))
            nbytes = b.select(skip, nbytes, b.extract_value(product, 0))
        b.ret(b.select(negative, ir.Constant(I32_T, 1),
                       b.select(overflow, ir.Constant(I32_T, 2), ir.Constant(I32_T, 0))))
    return ir.FunctionType(I32_T, [I64_T] * (ndim + 1)), emit


def _new(ndim: int, zeroed: bool):
    def emit(fn, b, descr, *dims):
        """A new C-contiguous ndarray of `descr` (a reference NumPy steals) and shape `dims`:
        PyArray_Zeros or PyArray_NewFromDescr; NULL, NumPy's exception cleared, if it fails."""
        shape = b.alloca(ir.ArrayType(I64_T, max(ndim, 1)))
        for axis, d in enumerate(dims):
            b.store(d, b.gep(shape, [ir.Constant(I32_T, 0), ir.Constant(I32_T, axis)],
                             inbounds=True))
        shape_ptr = b.gep(shape, [ir.Constant(I32_T, 0), ir.Constant(I32_T, 0)], inbounds=True)
        b.call(declare(fn.module, "Py_IncRef"), [descr])
        nd = ir.Constant(I32_T, ndim)
        if zeroed:
            obj = b.call(numpy_api.declare(fn.module, "PyArray_Zeros"),
                         [nd, shape_ptr, descr, ir.Constant(I32_T, 0)])
        else:
            null_dims = ir.Constant(I64_T.as_pointer(), None)
            obj = b.call(numpy_api.declare(fn.module, "PyArray_NewFromDescr"),
                         [numpy_api.ndarray_type(), descr, nd, shape_ptr, null_dims,
                          ir.Constant(PYOBJ, None), ir.Constant(I32_T, 0),
                          ir.Constant(PYOBJ, None)])
        with b.if_then(b.icmp_unsigned("==", obj, ir.Constant(PYOBJ, None)), likely=False):
            b.call(declare(fn.module, "PyErr_Clear"), [])
        b.ret(obj)
    return ir.FunctionType(PYOBJ, [PYOBJ] + [I64_T] * ndim), emit


def allocate(em: FunctionEmitter, node: Node, t: ArrayType, dims: list[ir.Value],
             zeroed: bool) -> ir.Value:
    """A new C-contiguous ndarray of shape `dims` (already checked), owned and on the list;
    its array value, with NumPy's C-order element strides. NumPy is called by the module's
    `astjit.array.zeros.<ndim>` / `astjit.array.empty.<ndim>`; a NULL is a MemoryError."""
    b = em.builder
    if t.ndim > numpy_api.NPY_MAXDIMS:
        raise CompileError(f"NumPy arrays have at most {numpy_api.NPY_MAXDIMS} dimensions, "
                           f"not {t.ndim}", node.loc)
    obj = b.call(new_ndarray(em.module, t.ndim, zeroed),
                 [numpy_api.descr_constant(t.dtype), *dims])
    with b.if_then(b.icmp_unsigned("==", obj, ir.Constant(PYOBJ, None)), likely=False):
        status = em.errors.status(msg.OUT_OF_MEMORY, ALLOCATION_FAILED, node.loc)
        em.return_status(ir.Constant(I32_T, status))
    owned.push(em, obj)
    return c_order_value(b, t, obj, dims)


def new_ndarray(module: ir.Module, ndim: int, zeroed: bool) -> ir.Function:
    """`PyObject *(descr, dims...)`: a new ndarray, or NULL (NumPy's exception cleared)."""
    kind = "zeros" if zeroed else "empty"
    return shared_function(module, f"astjit.array.{kind}.{ndim}", *_new(ndim, zeroed))


def c_order_value(b: ir.IRBuilder, t: ArrayType, obj: ir.Value,
                  dims: list[ir.Value]) -> ir.Value:
    """The array value of a new C-contiguous ndarray `obj` of shape `dims`."""
    layout = array_layout.numpy_layout()
    data = b.bitcast(load_field(b, obj, layout.data, PYOBJ), element_type(t.dtype).as_pointer())
    value = zero(t)
    value = b.insert_value(value, data, ARRAY_DATA)
    value = b.insert_value(value, obj, ARRAY_OWNER)
    stride = ir.Constant(I64_T, 1)
    for axis in reversed(range(t.ndim)):
        d = dims[axis]
        value = b.insert_value(value, d, [ARRAY_SHAPE, axis])
        value = b.insert_value(value, stride, [ARRAY_STRIDES, axis])
        nonzero = b.select(b.icmp_signed("==", d, ir.Constant(I64_T, 0)), ir.Constant(I64_T, 1), d)
        stride = b.mul(stride, nonzero, flags=["nsw"])
    return value


def size_of_dims(b: ir.IRBuilder, dims: list[ir.Value]) -> ir.Value:
    size = ir.Constant(I64_T, 1)
    for d in dims:
        size = b.mul(size, d, flags=["nsw"])
    return size


def fill(em: FunctionEmitter, dtype: ScalarType, value: ir.Value, data: ir.Value,
         size: ir.Value) -> None:
    """Store `value` (of `dtype`) into the `size` elements at `data`."""
    fill_with(em.builder, dtype, value, data, size)


def fill_with(b: ir.IRBuilder, dtype: ScalarType, value: ir.Value, data: ir.Value,
              size: ir.Value) -> None:
    """`fill` in the function `b` is in."""
    if dtype == BOOL:
        value = b.zext(value, I8)
    b.call(helper(b.function.module, f"fill.{element_type(dtype)}"), [data, size, value])
