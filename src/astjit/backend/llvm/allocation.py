"""Arrays that compiled code makes, and the references it owns (docs/arrays.md).

Allocation goes through NumPy's C API (`numpy_api`), so every array compiled
code makes is a real, C-contiguous ndarray that owns its memory; the array
value's `owner` is that ndarray, a reference the code owns:

- `array_new`: NumPy's checks first, in NumPy's order, dimension by dimension
  ("negative dimensions are not allowed", then "array is too big; ..." when
  `itemsize * size` passes the largest `npy_intp`, zero dimensions skipped, as
  `PyArray_NewFromDescr` does), then `PyArray_Zeros` for `fill=0` (calloc:
  fresh pages come zeroed) or `PyArray_NewFromDescr` otherwise, and for
  `fill=1` / `"value"` a store loop LLVM vectorizes. A NULL from NumPy (out of
  memory) clears NumPy's exception and fails with MemoryError.
- `array_new_like`: the same, of the input's shape (C order, whatever the
  input's strides).
- `array_arange`: `np.arange(start, stop, step)` (one to three inputs, like
  NumPy's) as `PyArray_ArangeObj` computes it: a zero step raises Python's
  ZeroDivisionError; the length is `ceil((stop - start) / step)`, 0 if
  negative, "arange: cannot compute length" for NaN and "Maximum allowed size
  exceeded" beyond `npy_intp`; a float quotient that underflows to zero gives
  length 1 (or 0 if it is -0.0). The elements are NumPy's too: `start`,
  `next = start + step`, then `start + i * (next - start)`. For ints the
  length is the exact integer ceiling (NumPy rounds the quotient to a double
  first: the two agree whenever |stop - start| <= 2**53).

The element strides of a new array are NumPy's for C order (an axis of length
0 counts as 1), so the entry wrapper recognizes it as covering its owner and
returns the ndarray itself.

The references these arrays are (and `array_retain` / `array_release`, `Py_IncRef` /
`Py_DecRef` of the owner) go on the invocation's owned list (owned.py).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import CompileError
from ...ir.core import Node
from ...ir.types import BOOL, F64, NONE, ArrayType, ScalarType
from . import array_layout, nests, owned
from . import messages as msg
from .compare import is_nan
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
    constant,
    element_type,
    lltype,
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


def _site(key: str) -> tuple[str, str]:
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
    **{f"fill.{ty}": _fill(ty) for ty in (DOUBLE, ir.FloatType(), I64_T, I8)},
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
    code = b.call(shared_function(em.module, f"astjit.array.check.{len(dims)}",
                                  *_check(len(dims))),
                  [ir.Constant(I64_T, itemsize), *dims])
    with b.if_then(b.icmp_unsigned("!=", code, ir.Constant(I32_T, 0)), likely=False):
        too_big = em.errors.status(*_site("too_big"), node.loc)
        negative = em.errors.status(*_site("negative"), node.loc)
        em.return_status(b.select(b.icmp_unsigned("==", code, ir.Constant(I32_T, 1)),
                                  ir.Constant(I32_T, negative), ir.Constant(I32_T, too_big)))


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


def fill_value(node: Node, t: ArrayType, args: list[ir.Value]) -> ir.Value | None:
    """The value the new array's elements get after allocation, or None (empty or zeros)."""
    kind = node.attrs.get("fill")
    if kind is None or kind == 0:
        return None
    if kind == 1:
        return constant(t.dtype, 1)
    if kind == "value":
        return args[-1]
    raise CompileError(f"unknown fill {kind!r} of {node.op}", node.loc)


def make(em: FunctionEmitter, node: Node, dims: list[ir.Value], args: list[ir.Value]) -> ir.Value:
    t = node.outputs[0].type
    check_dims(em, node, t.dtype, dims)
    value = allocate(em, node, t, dims, zeroed=node.attrs.get("fill") == 0)
    filler = fill_value(node, t, args)
    if filler is not None:
        fill(em, t.dtype, filler, em.builder.extract_value(value, ARRAY_DATA),
             size_of_dims(em.builder, dims))
    return value


def array_new(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.empty / zeros / ones / full(shape): inputs are the dims (then the fill value)."""
    n = node.outputs[0].type.ndim
    return make(em, node, args[:n], args)


def array_new_like(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.empty_like / zeros_like / ones_like / full_like(x): x's shape, C order."""
    n = node.outputs[0].type.ndim
    dims = [em.builder.extract_value(args[0], [ARRAY_SHAPE, axis]) for axis in range(n)]
    return make(em, node, dims, args)


def array_arange(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.arange(stop) / (start, stop) / (start, stop, step), NumPy's length and elements."""
    t = node.outputs[0].type
    is_float = t.dtype == F64
    ty = lltype(t.dtype)
    one = ir.Constant(ty, 1.0 if is_float else 1)
    if len(args) == 1:
        start, stop, step = ir.Constant(ty, 0.0 if is_float else 0), args[0], one
    elif len(args) == 2:
        (start, stop), step = args, one
    elif len(args) == 3:
        start, stop, step = args
    else:
        raise CompileError(f"arange() takes 1 to 3 numbers, got {len(args)}", node.loc)
    length = (float_length if is_float else int_length)(em, node, start, stop, step)
    check_dims(em, node, t.dtype, [length])
    value = allocate(em, node, t, [length], zeroed=False)
    b = em.builder
    next_ = b.fadd(start, step) if is_float else b.add(start, step)
    b.call(helper(em.module, f"arange.{ty}"),
           [b.extract_value(value, ARRAY_DATA), length, start, next_])
    return value


def clamp_length(b: ir.IRBuilder, length: ir.Value) -> ir.Value:
    zero_i64 = ir.Constant(I64_T, 0)
    return b.select(b.icmp_signed("<", length, zero_i64), zero_i64, length)


def float_length(em, node, start, stop, step) -> ir.Value:
    """_calc_length of PyArray_ArangeObj for floats."""
    b = em.builder
    zero_d = ir.Constant(DOUBLE, 0.0)
    em.fail_if(node, b.fcmp_ordered("==", step, zero_d), *_site("float_zero_step"))
    delta = b.fsub(stop, start)
    nonzero = b.fcmp_unordered("!=", delta, zero_d)  # NaN is nonzero
    quotient = b.fdiv(delta, step)
    underflow = b.fcmp_ordered("==", quotient, zero_d)
    rounded = em.call_intrinsic("llvm.ceil", [quotient])
    in_range = b.and_(b.fcmp_ordered(">=", rounded, ir.Constant(DOUBLE, float(INT64_MIN))),
                      b.fcmp_ordered("<", rounded, ir.Constant(DOUBLE, 2.0 ** 63)))
    computed = b.and_(nonzero, b.not_(underflow))
    em.fail_if_any(node, [(b.and_(computed, is_nan(b, rounded)), *_site("nan_length")),
                          (b.and_(computed, b.not_(in_range)), *_site("max_size"))])
    negative_zero = b.icmp_signed("<", b.bitcast(quotient, I64_T), ir.Constant(I64_T, 0))
    tiny = b.select(negative_zero, ir.Constant(I64_T, 0), ir.Constant(I64_T, 1))
    length = b.select(underflow, tiny, b.fptosi(rounded, I64_T))
    return clamp_length(b, b.select(nonzero, length, ir.Constant(I64_T, 0)))


def int_length(em, node, start, stop, step) -> ir.Value:
    """_calc_length for ints: the exact ceiling of (stop - start) / step; through doubles
    when stop - start overflows int64 (NumPy divides exact Python ints)."""
    b = em.builder
    zero_i64, one = ir.Constant(I64_T, 0), ir.Constant(I64_T, 1)
    em.fail_if(node, b.icmp_signed("==", step, zero_i64), *_site("int_zero_step"))
    difference = b.ssub_with_overflow(stop, start)
    delta, overflow = b.extract_value(difference, 0), b.extract_value(difference, 1)
    # INT64_MIN / -1 overflows too (a length of 2**63): the double path reports it.
    minus_one = ir.Constant(I64_T, -1)
    overflow = b.or_(overflow, b.and_(b.icmp_signed("==", delta, ir.Constant(I64_T, INT64_MIN)),
                                      b.icmp_signed("==", step, minus_one)))
    safe_step = b.select(overflow, one, step)
    quotient = b.sdiv(delta, safe_step)
    remainder = b.srem(delta, safe_step)
    up = b.and_(b.icmp_signed("!=", remainder, zero_i64),
                b.icmp_signed(">=", b.xor(remainder, safe_step), zero_i64))
    exact = b.add(quotient, b.zext(up, I64_T))
    approx = b.fdiv(b.fsub(b.sitofp(stop, DOUBLE), b.sitofp(start, DOUBLE)),
                    b.sitofp(step, DOUBLE))
    rounded = em.call_intrinsic("llvm.ceil", [approx])
    too_big = b.and_(overflow, b.fcmp_unordered(">=", rounded, ir.Constant(DOUBLE, 2.0 ** 63)))
    em.fail_if(node, too_big, *_site("max_size"))
    zero_d = ir.Constant(DOUBLE, 0.0)
    rounded = b.select(b.fcmp_ordered(">", rounded, zero_d), rounded, zero_d)
    return clamp_length(b, b.select(overflow, b.fptosi(rounded, I64_T), exact))


# ---- references -----------------------------------------------------------------------------

def array_retain(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """A new reference to the array's owner: the same array value."""
    owner = em.builder.extract_value(args[0], ARRAY_OWNER)
    em.builder.call(declare(em.module, "Py_IncRef"), [owner])
    owned.push(em, owner)
    return args[0]


def array_release(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """Give up a reference: off the owned list, then Py_DecRef (the last one frees)."""
    owned.release_now(em, args[0])
    return zero(NONE)


ROUTINES = {"array_new": array_new, "array_new_like": array_new_like,
            "array_arange": array_arange, "array_retain": array_retain,
            "array_release": array_release}
