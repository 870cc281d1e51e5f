"""The allocation ops: arrays that compiled code makes, and the references it owns
(docs/arrays.md). The checks, the allocation and the fills are new_arrays.py's.

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

from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import CompileError
from ...ir.core import Node
from ...ir.types import F64, NONE, ArrayType
from . import owned
from .compare import is_nan
from .lltypes import (
    ARRAY_DATA,
    ARRAY_SHAPE,
    DOUBLE,
    I64_T,
    constant,
    lltype,
    zero,
)
from .new_arrays import (
    INT64_MIN,
    allocate,
    check_dims,
    fill,
    helper,
    numpy_message,
    size_of_dims,
)

if TYPE_CHECKING:
    from .emitter import FunctionEmitter


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
    em.fail_if(node, b.fcmp_ordered("==", step, zero_d), *numpy_message("float_zero_step"))
    delta = b.fsub(stop, start)
    nonzero = b.fcmp_unordered("!=", delta, zero_d)  # NaN is nonzero
    quotient = b.fdiv(delta, step)
    underflow = b.fcmp_ordered("==", quotient, zero_d)
    rounded = em.call_intrinsic("llvm.ceil", [quotient])
    in_range = b.and_(b.fcmp_ordered(">=", rounded, ir.Constant(DOUBLE, float(INT64_MIN))),
                      b.fcmp_ordered("<", rounded, ir.Constant(DOUBLE, 2.0 ** 63)))
    computed = b.and_(nonzero, b.not_(underflow))
    em.fail_if_any(node, [(b.and_(computed, is_nan(b, rounded)), *numpy_message("nan_length")),
                          (b.and_(computed, b.not_(in_range)), *numpy_message("max_size"))])
    negative_zero = b.icmp_signed("<", b.bitcast(quotient, I64_T), ir.Constant(I64_T, 0))
    tiny = b.select(negative_zero, ir.Constant(I64_T, 0), ir.Constant(I64_T, 1))
    length = b.select(underflow, tiny, b.fptosi(rounded, I64_T))
    return clamp_length(b, b.select(nonzero, length, ir.Constant(I64_T, 0)))


def int_length(em, node, start, stop, step) -> ir.Value:
    """_calc_length for ints: the exact ceiling of (stop - start) / step; through doubles
    when stop - start overflows int64 (NumPy divides exact Python ints)."""
    b = em.builder
    zero_i64, one = ir.Constant(I64_T, 0), ir.Constant(I64_T, 1)
    em.fail_if(node, b.icmp_signed("==", step, zero_i64), *numpy_message("int_zero_step"))
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
    em.fail_if(node, too_big, *numpy_message("max_size"))
    zero_d = ir.Constant(DOUBLE, 0.0)
    rounded = b.select(b.fcmp_ordered(">", rounded, zero_d), rounded, zero_d)
    return clamp_length(b, b.select(overflow, b.fptosi(rounded, I64_T), exact))


# ---- references -----------------------------------------------------------------------------

def array_retain(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """A new reference to the array's owner: the same array value."""
    return owned.retained(em, args[0])


def array_release(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """Give up a reference: off the owned list, then Py_DecRef (the last one frees)."""
    owned.release_now(em, args[0])
    return zero(NONE)


ROUTINES = {"array_new": array_new, "array_new_like": array_new_like,
            "array_arange": array_arange, "array_retain": array_retain,
            "array_release": array_release}
