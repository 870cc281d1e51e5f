"""BLAS-call plumbing for the float matrix products (linalg.py): operands as BLAS reads
them, the calls, and the one function per kind of product a module shares.

- An operand is passed as it lies when BLAS can read it (`layout`: a 2-d array in C or F
  layout, leading dimension within 32 bits; `vector_readable`: a vector with a nonzero
  stride within 32 bits), else as a C-contiguous temporary; `converted_copy` / `release`:
  one converted to the result's dtype where it differs, released after the call.
- `Call`: BLAS's by-pointer arguments in entry-block stack slots; `gemm`, `gemv` on
  column-major BLAS (C = A @ B computed as C^T = B^T A^T).
- `product_function(dtype, a_ndim, b_ndim)`: the body of the shared
  `astjit.matmul.<d|s>.<ndims>` (zeros without BLAS for an empty sum, the size checks,
  copies where BLAS cannot read an operand, the call: gemm, gemv, or dot of two vectors),
  failing with PRODUCT_TOO_LARGE or PRODUCT_NO_MEMORY.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from ...ir.types import C64, C128, F32, F64, ArrayType, ScalarType
from . import array_layout, copies, nests, new_arrays, owned
from . import messages as msg
from .conversions import complex_cast
from .lltypes import (
    ARRAY_DATA,
    ARRAY_OWNER,
    ARRAY_STRIDES,
    I1,
    I8,
    I32_T,
    I64_T,
    constant,
    element_type,
    lltype,
)
from .runtime import blas, numpy_api, pyapi

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

INT32_MAX = 2 ** 31 - 1
BLAS_PREFIXES = {F64: "d", F32: "s", C128: "z", C64: "c"}
"""The letter BLAS names its routines of a dtype by (`dgemm`, `zgemm`)."""
TOO_LARGE = "array dimensions too large for BLAS (more than 2**31 - 1)"


def i64_constant(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def byte_stride(b: ir.IRBuilder, array: ir.Value, axis: int) -> ir.Value:
    return b.extract_value(array, [ARRAY_STRIDES, axis])


def max_int(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def min_int(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def address(b: ir.IRBuilder, array: ir.Value, strides: list[ir.Value],
            indices: list[ir.Value]) -> ir.Value:
    offset = i64_constant(0)
    for index, stride in zip(indices, strides):
        offset = b.add(offset, b.mul(index, stride))
    return b.gep(b.extract_value(array, ARRAY_DATA), [offset])


# ---- operands as BLAS reads them --------------------------------------------------------------

class Operand(NamedTuple):
    """An operand ready for BLAS, and the temporary it may be a copy in."""

    array: ir.Value
    """The array BLAS reads: the argument itself, or a C-contiguous copy."""
    copied: ir.Value
    """i1: whether `array` is a temporary to release after the call."""


def converted_copy(em: FunctionEmitter, node: Node, source: ir.Value, t: ArrayType,
                   dtype: ScalarType) -> ir.Value:
    """A new C-contiguous array (owned, on the list) of `source`'s elements as `dtype`."""
    b = em.builder
    if t.dtype == dtype:
        return copies.contiguous_copy(em, node, source, t)
    dims = [array_layout.dim(b, source, axis) for axis in range(t.ndim)]
    fresh = new_arrays.allocate(em, node, ArrayType(dtype, t.ndim), dims, zeroed=False)
    source_strides = [byte_stride(b, source, axis) for axis in range(t.ndim)]
    fresh_strides = [byte_stride(b, fresh, axis) for axis in range(t.ndim)]
    target = element_type(dtype)

    def body(indices):
        value = b.load(address(b, source, source_strides, indices),
                       align=array_layout.ITEM_SIZES[t.dtype])
        if dtype.is_complex:
            value = complex_cast(b, value, t.dtype, dtype)
        else:
            value = b.fpext(value, target) if t.dtype.is_float else b.sitofp(value, target)
        b.store(value, address(b, fresh, fresh_strides, indices),
                align=array_layout.ITEM_SIZES[dtype])
    nests.loop_nest(em, dims, body, "convert")
    return fresh


def release(em: FunctionEmitter, operands: list[Operand]) -> None:
    """Release the temporaries among `operands`: those whose `copied` is the constant true
    (`converted_copy`'s; a product's other copies are the shared function's own)."""
    for op in operands:
        if op.copied.constant:
            owned.release_now(em, op.array)


class Layout(NamedTuple):
    """How BLAS reads a 2-d array: column-major as its transpose (C layout) or not, with
    leading dimension `ld`."""

    c_layout: ir.Value
    ld: ir.Value
    readable: ir.Value


def layout(b: ir.IRBuilder, array: ir.Value) -> Layout:
    """C layout (unit stride along columns, rows at least `cols` apart) is preferred; then
    F layout; a length-1 axis's stride does not matter; ld within 32 bits."""
    rows, cols = array_layout.dim(b, array, 0), array_layout.dim(b, array, 1)
    s0, s1 = byte_stride(b, array, 0), byte_stride(b, array, 1)
    one, limit = i64_constant(1), i64_constant(INT32_MAX)

    def fits(along, lead, n_along, n_lead):
        ld = b.select(b.icmp_signed("<=", n_lead, one), max_int(b, n_along, one), lead)
        unit = b.or_(b.icmp_signed("<=", n_along, one), b.icmp_signed("==", along, one))
        apart = b.and_(b.icmp_signed(">=", ld, max_int(b, n_along, one)),
                       b.icmp_signed("<=", ld, limit))
        return b.and_(unit, apart), ld
    c_ok, c_ld = fits(s1, s0, cols, rows)
    f_ok, f_ld = fits(s0, s1, rows, cols)
    return Layout(c_ok, b.select(c_ok, c_ld, f_ld), b.or_(c_ok, f_ok))


def vector_readable(b: ir.IRBuilder, array: ir.Value) -> ir.Value:
    n, s = array_layout.dim(b, array, 0), byte_stride(b, array, 0)
    magnitude = b.select(b.icmp_signed("<", s, i64_constant(0)), b.neg(s), s)
    good = b.and_(b.icmp_signed("!=", s, i64_constant(0)), b.icmp_signed("<=", magnitude,
                                                                  i64_constant(INT32_MAX)))
    return b.or_(b.icmp_signed("<=", n, i64_constant(1)), good)


def vector_args(b: ir.IRBuilder, array: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(pointer, increment) of a readable vector: BLAS reads a negative increment from the
    lowest address, the last element."""
    n, s = array_layout.dim(b, array, 0), byte_stride(b, array, 0)
    inc = b.select(b.icmp_signed("<=", n, i64_constant(1)), i64_constant(1), s)
    last = b.mul(b.sub(n, i64_constant(1)), inc)
    start = b.select(b.icmp_signed("<", inc, i64_constant(0)), last, i64_constant(0))
    return b.gep(b.extract_value(array, ARRAY_DATA), [start]), inc


# ---- BLAS calls ------------------------------------------------------------------------------

class Call:
    """Arguments passed by pointer: each a stack slot in the entry block of the function
    `builder` is in; ints of type `index` (BLAS's: `blas.int_type()`; LAPACK's: 32 bits)."""

    def __init__(self, builder: ir.IRBuilder, dtype: ScalarType, index: ir.IntType = I32_T):
        self.builder, self.dtype, self.index = builder, dtype, index
        self.prefix = BLAS_PREFIXES[dtype]

    def slot(self, value: ir.Value) -> ir.Value:
        with self.builder.goto_entry_block():
            pointer = self.builder.alloca(value.type)
        self.builder.store(value, pointer)
        return pointer

    def int(self, value: ir.Value) -> ir.Value:
        """`value` (an i64 within 32 bits) as the routine's int."""
        if value.type != self.index:
            value = self.builder.trunc(value, self.index)
        return self.slot(value)

    def real(self, value: float) -> ir.Value:
        return self.slot(constant(self.dtype, value))

    def trans(self, transposed: ir.Value) -> ir.Value:
        """'T' where `transposed`, else 'N'."""
        return self.slot(self.builder.select(transposed, ir.Constant(I8, ord("T")),
                                             ir.Constant(I8, ord("N"))))

    def __call__(self, name: str, args: list[ir.Value]) -> ir.Value:
        module = self.builder.function.module
        return self.builder.call(blas.declare(module, self.prefix + name), args)


def gemm(call: Call, out: ir.Value, a: Operand, b: Operand, m, k, n) -> None:
    """C = A @ B, C-contiguous: column-major C^T = B^T A^T."""
    builder = call.builder
    la, lb = layout(builder, a.array), layout(builder, b.array)
    data = lambda op: builder.extract_value(op.array, ARRAY_DATA)
    # B^T is what B's memory is read as column-major in C layout: no transpose then.
    call("gemm", [call.trans(builder.not_(lb.c_layout)), call.trans(builder.not_(la.c_layout)),
                  call.int(n), call.int(m), call.int(k), call.real(1.0), data(b), call.int(lb.ld),
                  data(a), call.int(la.ld), call.real(0.0), builder.extract_value(out, ARRAY_DATA),
                  call.int(max_int(builder, n, i64_constant(1)))])


def gemv(call: Call, out: ir.Value, matrix: Operand, vector: Operand, transposed: bool) -> None:
    """y = M @ x (or M.T @ x when `transposed`, for x @ M)."""
    builder = call.builder
    lm = layout(builder, matrix.array)
    rows, cols = array_layout.dim(builder, matrix.array, 0), array_layout.dim(builder, matrix.array, 1)
    # column-major, the memory is M^T (C layout) or M: its dimensions and the op to apply
    mem_rows = builder.select(lm.c_layout, cols, rows)
    mem_cols = builder.select(lm.c_layout, rows, cols)
    trans = builder.xor(lm.c_layout, ir.Constant(I1, int(transposed)))
    x, incx = vector_args(builder, vector.array)
    call("gemv", [call.trans(trans), call.int(mem_rows), call.int(mem_cols), call.real(1.0),
                  builder.extract_value(matrix.array, ARRAY_DATA), call.int(lm.ld), x,
                  call.int(incx), call.real(0.0), builder.extract_value(out, ARRAY_DATA),
                  call.int(i64_constant(1))])


PRODUCT_TOO_LARGE, PRODUCT_NO_MEMORY = 1, 2
"""The failure codes of `product_function`."""


def check_product(em: FunctionEmitter, node: Node, code: ir.Value) -> None:
    """Return a `product_function` call's failure `code` as Python's exception: ValueError
    past BLAS's sizes, MemoryError where a copy could not be allocated."""
    builder = em.builder
    with builder.if_then(builder.icmp_unsigned("!=", code, ir.Constant(I32_T, 0)), likely=False):
        too_large = em.errors.status("ValueError", TOO_LARGE, node.loc)
        no_memory = em.errors.status(msg.OUT_OF_MEMORY, new_arrays.ALLOCATION_FAILED, node.loc)
        em.return_status(builder.select(
            builder.icmp_unsigned("==", code, ir.Constant(I32_T, PRODUCT_TOO_LARGE)),
            ir.Constant(I32_T, too_large), ir.Constant(I32_T, no_memory)))


def product_name(dtype: ScalarType, a_ndim: int, b_ndim: int) -> str:
    """The runtime's name of `product_function(dtype, a_ndim, b_ndim)`."""
    return f"astjit.matmul.{BLAS_PREFIXES[dtype]}.{a_ndim}{b_ndim}"


def product_function(dtype: ScalarType, a_ndim: int, b_ndim: int):
    def emit(fn, builder, a, b, out):
        """out = a @ b (of `dtype`, 1-d or 2-d; of two vectors, out[0]): zeros without BLAS
        when k or the result is empty, else gemm / gemv / dot on operands as they lie or on
        C-contiguous copies (released after the call). 0, or PRODUCT_TOO_LARGE, or
        PRODUCT_NO_MEMORY (a failed copy)."""
        k = array_layout.dim(builder, a, a_ndim - 1)
        m = array_layout.dim(builder, a, 0) if a_ndim == 2 else None
        n = array_layout.dim(builder, b, 1) if b_ndim == 2 else None
        dims = [d for d in (m, n) if d is not None]
        size = new_arrays.size_of_dims(builder, dims)
        trivial = builder.or_(builder.icmp_signed("==", k, i64_constant(0)),
                              builder.icmp_signed("==", size, i64_constant(0)))
        with builder.if_then(trivial, likely=False):  # an empty sum is 0
            new_arrays.fill_with(builder, dtype, constant(dtype, 0.0), out, size)
            builder.ret(ir.Constant(I32_T, 0))
        too_large = ir.Constant(I1, 0)
        for d in [m, k, n]:
            if d is not None:
                too_large = builder.or_(too_large, builder.icmp_signed(">", d, i64_constant(INT32_MAX)))
        with builder.if_then(too_large, likely=False):
            builder.ret(ir.Constant(I32_T, PRODUCT_TOO_LARGE))
        readable = {1: vector_readable, 2: lambda bb, array: layout(bb, array).readable}
        x = _readable_operand(builder, a, ArrayType(dtype, a_ndim), readable[a_ndim], [])
        y = _readable_operand(builder, b, ArrayType(dtype, b_ndim), readable[b_ndim], [x])
        call = Call(builder, dtype, blas.int_type())
        result = builder.insert_value(ir.Constant(a.type, None), out, ARRAY_DATA)
        if a_ndim == 1 and b_ndim == 1:
            (px, incx), (py, incy) = vector_args(builder, x.array), vector_args(builder, y.array)
            builder.store(call("dot", [call.int(k), px, call.int(incx), py, call.int(incy)]), out)
        elif a_ndim == 2 and b_ndim == 2:
            gemm(call, result, x, y, m, k, n)
        elif a_ndim == 2:
            gemv(call, result, x, y, transposed=False)
        else:
            gemv(call, result, y, x, transposed=True)
        _drop_copies(builder, [x, y])
        builder.ret(ir.Constant(I32_T, 0))
    array = lltype(ArrayType(dtype, a_ndim)), lltype(ArrayType(dtype, b_ndim))
    fnty = ir.FunctionType(I32_T, [*array, element_type(dtype).as_pointer()])
    return fnty, emit


def _readable_operand(builder: ir.IRBuilder, array: ir.Value, t: ArrayType, readable,
                      made_copies: list[Operand]) -> Operand:
    """`array` where BLAS can read it, else a C-contiguous copy (a new ndarray); returns
    PRODUCT_NO_MEMORY, dropping `made_copies` first, when the copy cannot be made."""
    usable = readable(builder, array)
    before = builder.block
    with builder.if_then(builder.not_(usable), likely=False):
        module = builder.function.module
        dims = [array_layout.dim(builder, array, axis) for axis in range(t.ndim)]
        obj = builder.call(new_arrays.new_ndarray(module, t.ndim, zeroed=False),
                           [numpy_api.descr_constant(t.dtype), *dims])
        with builder.if_then(builder.icmp_unsigned("==", obj, ir.Constant(obj.type, None)),
                             likely=False):
            _drop_copies(builder, made_copies)
            builder.ret(ir.Constant(I32_T, PRODUCT_NO_MEMORY))
        fresh = new_arrays.c_order_value(builder, t, obj, dims)
        copies.copy_with(builder, array, t, fresh, t)
        copied_block = builder.block
    merged = builder.phi(array.type)
    merged.add_incoming(array, before)
    merged.add_incoming(fresh, copied_block)
    return Operand(merged, builder.not_(usable))


def _drop_copies(builder: ir.IRBuilder, operands: list[Operand]) -> None:
    for op in operands:
        with builder.if_then(op.copied, likely=False):
            builder.call(pyapi.declare(builder.function.module, "Py_DecRef"),
                         [builder.extract_value(op.array, ARRAY_OWNER)])
