"""Matrix products, np.diag and np.eye in compiled code (ir/ops/linalg.py).

`matmul` checks the inner dimensions (NumPy's ValueError for np.matmul or
np.dot, the sizes filled in at run time), then:

- float results call SciPy's BLAS (`blas.py`): gemm for matrix @ matrix, gemv
  for matrix @ vector and vector @ matrix, dot for vector @ vector. BLAS is
  column-major, so a C-contiguous result C = A @ B is computed as
  C^T = B^T A^T. An operand is passed as it lies when BLAS can read it: a
  2-d array with unit stride along its last axis and a leading stride at
  least its number of columns ("C layout": read column-major it is the
  transpose) or the other way round ("F layout", e.g. `a.T` of a C array);
  a vector with any nonzero stride (a negative one too). Anything else
  (`a[:, ::2]`, a zero stride, a stride past 32 bits) is first copied to a
  C-contiguous temporary, and so is an operand of another dtype than the
  result's (f32 or int64 with f64: converted as NumPy converts). Temporaries
  are released right after the call. Everything after the result's allocation
  (conversions aside) is one function the module shares per kind of product
  (`astjit.matmul.<d|s>.<ndims>`, shared.py): the layout tests, the copies and
  the BLAS call are emitted once, not at every `@`; its failure code becomes
  the site's error.
- int64 results (BLAS has no integers) run a plain loop nest, wrapping on
  overflow as NumPy's does.

The result array is new, C-contiguous, owned (on the owned list). BLAS wants
every leading dimension >= 1 and sizes in 32 bits: a zero-sized result
calls nothing, an inner dimension of 0 gives zeros without calling BLAS, and a
dimension past 2**31 - 1 is a ValueError.

`diag` of a vector allocates a zeroed square matrix and stores the vector on
diagonal k; of a matrix it is a view (copies.py's `build`: a new reference to
the owner, data at the diagonal's first element, stride s0 + s1). `eye`
allocates zeros (calloc) and stores ones on diagonal k.
"""
from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple

from llvmlite import ir

from ...ir.types import BOOL, F64, ArrayType, ScalarType
from . import allocation, array_layout, copies, nests, owned
from . import messages as msg
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
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

INT32_MAX = 2 ** 31 - 1
TOO_LARGE = "array dimensions too large for BLAS (more than 2**31 - 1)"
SENTINELS = (29, 31, 23, 37)
"""Sizes NumPy is asked to multiply to read off its message: the inner size of a, of b,
then a's rows and b's columns; in the template they become {0} ... {3}."""


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def _stride(b: ir.IRBuilder, array: ir.Value, axis: int) -> ir.Value:
    return b.extract_value(array, [ARRAY_STRIDES, axis])


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


# ---- NumPy's message for inner dimensions that differ ------------------------------------------

@functools.cache
def mismatch_message(kind: str, a_ndim: int, b_ndim: int) -> tuple[str, str]:
    """(fixed message, detail template) of NumPy's ValueError for this product, read off
    NumPy with the SENTINELS sizes, which the template names {0} (a's inner size), {1}
    (b's), {2} (a's rows) and {3} (b's columns)."""
    import numpy

    k_a, k_b, m, n = SENTINELS
    a = numpy.zeros((m, k_a) if a_ndim == 2 else (k_a,))
    b = numpy.zeros((k_b, n) if b_ndim == 2 else (k_b,))
    try:
        (numpy.dot if kind == "dot" else numpy.matmul)(a, b)
    except ValueError as error:
        text = str(error)
    else:  # pragma: no cover - NumPy refuses these shapes
        raise AssertionError("NumPy multiplied mismatched shapes")
    detail = text.replace("{", "{{").replace("}", "}}")
    for i, size in enumerate(SENTINELS):
        detail = re.sub(rf"\b{size}\b", "{%d}" % i, detail)  # noqa: UP031 - a "{0}" placeholder
    fixed = re.sub(r"(?<!\{)\{\d\}(?!\})", "?", detail).replace("{{", "{").replace("}}", "}")
    return fixed, detail


def check_inner(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value) -> tuple:
    """NumPy's ValueError unless a's last dimension is b's first; (m, k, n), with None for
    the dimension a vector operand lacks."""
    builder = em.builder
    a_ndim, b_ndim = node.inputs[0].type.ndim, node.inputs[1].type.ndim
    k = array_layout.dim(builder, a, a_ndim - 1)
    k_b = array_layout.dim(builder, b, 0)
    m = array_layout.dim(builder, a, 0) if a_ndim == 2 else None
    n = array_layout.dim(builder, b, 1) if b_ndim == 2 else None
    fixed, detail = mismatch_message(node.attrs.get("kind", "matmul"), a_ndim, b_ndim)
    em.fail_with_values(node, builder.icmp_signed("!=", k, k_b), "ValueError", fixed, detail,
                        [k, k_b, _i64(0) if m is None else m, _i64(0) if n is None else n])
    return m, k, n


def address(b: ir.IRBuilder, array: ir.Value, strides: list[ir.Value],
            indices: list[ir.Value]) -> ir.Value:
    offset = _i64(0)
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
    fresh = allocation.allocate(em, node, ArrayType(dtype, t.ndim), dims, zeroed=False)
    source_strides = [_stride(b, source, axis) for axis in range(t.ndim)]
    fresh_strides = [_stride(b, fresh, axis) for axis in range(t.ndim)]
    target = element_type(dtype)

    def body(indices):
        value = b.load(address(b, source, source_strides, indices),
                       align=array_layout.ITEM_SIZES[t.dtype])
        value = b.fpext(value, target) if t.dtype.is_float else b.sitofp(value, target)
        b.store(value, address(b, fresh, fresh_strides, indices),
                align=array_layout.ITEM_SIZES[dtype])
    nests.loop_nest(em, dims, body, "convert")
    return fresh


def operand(em: FunctionEmitter, node: Node, array: ir.Value, t: ArrayType, dtype: ScalarType,
            readable) -> Operand:
    """`array` as BLAS can read it: itself where `readable(array)` holds (and its dtype is
    `dtype`), else a C-contiguous copy (converted to `dtype`)."""
    b = em.builder
    if t.dtype != dtype:
        return Operand(converted_copy(em, node, array, t, dtype), ir.Constant(I1, 1))
    usable = readable(b, array)
    before = b.block
    with b.if_then(b.not_(usable), likely=False):
        fresh = copies.contiguous_copy(em, node, array, t)
        copied_block = b.block
    merged = b.phi(array.type)
    merged.add_incoming(array, before)
    merged.add_incoming(fresh, copied_block)
    return Operand(merged, b.not_(usable))


def release(em: FunctionEmitter, operands: list[Operand]) -> None:
    """Release the temporaries among `operands`."""
    for op in operands:
        if isinstance(op.copied, ir.Constant):
            if op.copied.constant:
                owned.release_now(em, op.array)
            continue
        with em.builder.if_then(op.copied, likely=False):
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
    s0, s1 = _stride(b, array, 0), _stride(b, array, 1)
    one, limit = _i64(1), _i64(INT32_MAX)

    def fits(along, lead, n_along, n_lead):
        ld = b.select(b.icmp_signed("<=", n_lead, one), _max(b, n_along, one), lead)
        unit = b.or_(b.icmp_signed("<=", n_along, one), b.icmp_signed("==", along, one))
        apart = b.and_(b.icmp_signed(">=", ld, _max(b, n_along, one)),
                       b.icmp_signed("<=", ld, limit))
        return b.and_(unit, apart), ld
    c_ok, c_ld = fits(s1, s0, cols, rows)
    f_ok, f_ld = fits(s0, s1, rows, cols)
    return Layout(c_ok, b.select(c_ok, c_ld, f_ld), b.or_(c_ok, f_ok))


def vector_readable(b: ir.IRBuilder, array: ir.Value) -> ir.Value:
    n, s = array_layout.dim(b, array, 0), _stride(b, array, 0)
    magnitude = b.select(b.icmp_signed("<", s, _i64(0)), b.neg(s), s)
    good = b.and_(b.icmp_signed("!=", s, _i64(0)), b.icmp_signed("<=", magnitude,
                                                                  _i64(INT32_MAX)))
    return b.or_(b.icmp_signed("<=", n, _i64(1)), good)


def vector_args(b: ir.IRBuilder, array: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(pointer, increment) of a readable vector: BLAS reads a negative increment from the
    lowest address, the last element."""
    n, s = array_layout.dim(b, array, 0), _stride(b, array, 0)
    inc = b.select(b.icmp_signed("<=", n, _i64(1)), _i64(1), s)
    last = b.mul(b.sub(n, _i64(1)), inc)
    start = b.select(b.icmp_signed("<", inc, _i64(0)), last, _i64(0))
    return b.gep(b.extract_value(array, ARRAY_DATA), [start]), inc


# ---- BLAS calls ------------------------------------------------------------------------------

class Call:
    """Arguments passed by pointer: each a stack slot in the entry block of the function
    `builder` is in."""

    def __init__(self, builder: ir.IRBuilder, dtype: ScalarType):
        self.builder, self.dtype = builder, dtype
        self.prefix = "d" if dtype == F64 else "s"

    def slot(self, value: ir.Value) -> ir.Value:
        with self.builder.goto_entry_block():
            pointer = self.builder.alloca(value.type)
        self.builder.store(value, pointer)
        return pointer

    def int(self, value: ir.Value) -> ir.Value:
        return self.slot(self.builder.trunc(value, I32_T))

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
                  call.int(_max(builder, n, _i64(1)))])


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
                  call.int(_i64(1))])


def matmul(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """a @ b / np.dot(a, b) of 1-d and 2-d arrays (the module docstring)."""
    a, b = args
    out_t = node.outputs[0].type
    dtype = out_t.dtype if isinstance(out_t, ArrayType) else out_t
    sizes = check_inner(em, node, a, b)
    if not dtype.is_float:
        return int_product(em, node, a, b, sizes)
    if not isinstance(out_t, ArrayType):
        return blas_dot(em, node, a, b, dtype, sizes[1])
    return blas_product(em, node, a, b, out_t, sizes)


def check_blas_sizes(em: FunctionEmitter, node: Node, sizes: list[ir.Value]) -> None:
    """ValueError unless every size fits BLAS's 32-bit ints."""
    b = em.builder
    too_large = ir.Constant(I1, 0)
    for d in sizes:
        too_large = b.or_(too_large, b.icmp_signed(">", d, _i64(INT32_MAX)))
    em.fail_if(node, too_large, "ValueError", TOO_LARGE)


def blas_dot(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value, dtype: ScalarType,
             k: ir.Value) -> ir.Value:
    """vector @ vector: ddot / sdot (0 for empty vectors)."""
    builder, call = em.builder, Call(em.builder, dtype)
    check_blas_sizes(em, node, [k])
    x = operand(em, node, a, node.inputs[0].type, dtype, vector_readable)
    y = operand(em, node, b, node.inputs[1].type, dtype, vector_readable)
    (px, incx), (py, incy) = vector_args(builder, x.array), vector_args(builder, y.array)
    result = call("dot", [call.int(k), px, call.int(incx), py, call.int(incy)])
    release(em, [x, y])
    return result


def blas_product(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value, out_t: ArrayType,
                 sizes: tuple) -> ir.Value:
    """A new array = a @ b: allocated here, computed by the module's shared
    `astjit.matmul.<d|s>.<ndim a><ndim b>` (`_product`), whose failure code is this site's
    ValueError (sizes past BLAS's) or MemoryError (a copy of an operand)."""
    builder, dtype = em.builder, out_t.dtype
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    m, k, n = sizes
    dims = [d for d in (m, n) if d is not None]
    allocation.check_dims(em, node, dtype, dims)
    out = allocation.allocate(em, node, out_t, dims, zeroed=False)
    x = converted_copy(em, node, a, a_t, dtype) if a_t.dtype != dtype else a
    y = converted_copy(em, node, b, b_t, dtype) if b_t.dtype != dtype else b
    name = f"astjit.matmul.{Call(builder, dtype).prefix}.{a_t.ndim}{b_t.ndim}"
    product = shared_function(em.module, name, *_product(dtype, a_t.ndim, b_t.ndim))
    code = builder.call(product, [x, y, builder.extract_value(out, ARRAY_DATA)])
    with builder.if_then(builder.icmp_unsigned("!=", code, ir.Constant(I32_T, 0)),
                         likely=False):
        too_large = em.errors.status("ValueError", TOO_LARGE, node.loc)
        no_memory = em.errors.status(msg.OUT_OF_MEMORY, allocation.ALLOCATION_FAILED, node.loc)
        em.return_status(builder.select(
            builder.icmp_unsigned("==", code, ir.Constant(I32_T, PRODUCT_TOO_LARGE)),
            ir.Constant(I32_T, too_large), ir.Constant(I32_T, no_memory)))
    release(em, [Operand(x, ir.Constant(I1, int(x is not a))),
                 Operand(y, ir.Constant(I1, int(y is not b)))])
    return out


PRODUCT_TOO_LARGE, PRODUCT_NO_MEMORY = 1, 2
"""The failure codes of `_product`."""


def _product(dtype: ScalarType, a_ndim: int, b_ndim: int):
    def emit(fn, builder, a, b, out):
        """out = a @ b (of `dtype`, 1-d or 2-d): zeros without BLAS when k or the result is
        empty, else gemm / gemv on operands as they lie or on C-contiguous copies (released
        after the call). 0, or PRODUCT_TOO_LARGE, or PRODUCT_NO_MEMORY (a failed copy)."""
        k = array_layout.dim(builder, a, a_ndim - 1)
        m = array_layout.dim(builder, a, 0) if a_ndim == 2 else None
        n = array_layout.dim(builder, b, 1) if b_ndim == 2 else None
        dims = [d for d in (m, n) if d is not None]
        size = allocation.size_of_dims(builder, dims)
        trivial = builder.or_(builder.icmp_signed("==", k, _i64(0)),
                              builder.icmp_signed("==", size, _i64(0)))
        with builder.if_then(trivial, likely=False):  # an empty sum is 0
            allocation.fill_with(builder, dtype, constant(dtype, 0.0), out, size)
            builder.ret(ir.Constant(I32_T, 0))
        too_large = ir.Constant(I1, 0)
        for d in [m, k, n]:
            if d is not None:
                too_large = builder.or_(too_large, builder.icmp_signed(">", d, _i64(INT32_MAX)))
        with builder.if_then(too_large, likely=False):
            builder.ret(ir.Constant(I32_T, PRODUCT_TOO_LARGE))
        readable = {1: vector_readable, 2: lambda bb, array: layout(bb, array).readable}
        x = _readable_operand(builder, a, ArrayType(dtype, a_ndim), readable[a_ndim], [])
        y = _readable_operand(builder, b, ArrayType(dtype, b_ndim), readable[b_ndim], [x])
        call = Call(builder, dtype)
        result = builder.insert_value(ir.Constant(a.type, None), out, ARRAY_DATA)
        if a_ndim == 2 and b_ndim == 2:
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
        obj = builder.call(allocation.new_ndarray(module, t.ndim, zeroed=False),
                           [numpy_api.descr_constant(t.dtype), *dims])
        with builder.if_then(builder.icmp_unsigned("==", obj, ir.Constant(obj.type, None)),
                             likely=False):
            _drop_copies(builder, made_copies)
            builder.ret(ir.Constant(I32_T, PRODUCT_NO_MEMORY))
        fresh = allocation.c_order_value(builder, t, obj, dims)
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


# ---- integers: a loop nest ---------------------------------------------------------------------

def int_product(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value, sizes) -> ir.Value:
    """out[i, j] += a[i, p] * b[p, j] over (i, p, j), a vector being a matrix with one row
    (a) or one column (b); wrapping arithmetic, as NumPy's integer matmul."""
    builder = em.builder
    m, k, n = sizes
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    out_t = node.outputs[0].type
    zero_i64, one = _i64(0), _i64(1)
    a_strides = [_stride(builder, a, 0), _stride(builder, a, 1)] if a_t.ndim == 2 \
        else [zero_i64, _stride(builder, a, 0)]
    b_strides = [_stride(builder, b, 0), _stride(builder, b, 1)] if b_t.ndim == 2 \
        else [_stride(builder, b, 0), zero_i64]
    if isinstance(out_t, ArrayType):
        dims = [d for d in (m, n) if d is not None]
        allocation.check_dims(em, node, out_t.dtype, dims)
        out = allocation.allocate(em, node, out_t, dims, zeroed=True)
        data = builder.extract_value(out, ARRAY_DATA)
        own = [_stride(builder, out, axis) for axis in range(out_t.ndim)]
        out_strides = own if out_t.ndim == 2 else [own[0], zero_i64] if n is None \
            else [zero_i64, own[0]]
    else:
        out, data = None, em.alloca(I64_T)
        builder.store(zero_i64, data)
        out_strides = [zero_i64, zero_i64]

    def at(base, strides, i, j):
        offset = builder.add(builder.mul(i, strides[0]), builder.mul(j, strides[1]))
        return builder.gep(base, [offset])

    a_data, b_data = (builder.extract_value(v, ARRAY_DATA) for v in (a, b))

    def body(indices):
        i, p, j = indices
        product = builder.mul(builder.load(at(a_data, a_strides, i, p), align=8),
                              builder.load(at(b_data, b_strides, p, j), align=8))
        target = at(data, out_strides, i, j)
        builder.store(builder.add(builder.load(target, align=8), product), target, align=8)
    nests.loop_nest(em, [one if m is None else m, k, one if n is None else n], body, "matmul")
    return out if out is not None else builder.load(data)


# ---- np.diag, np.eye --------------------------------------------------------------------------

def diagonal_length(b: ir.IRBuilder, rows: ir.Value, cols: ir.Value, k: ir.Value) -> ir.Value:
    """How many elements diagonal k of a rows x cols matrix has (0 past the edges)."""
    above = b.icmp_signed(">=", k, _i64(0))
    length = b.select(above, _min(b, rows, b.sub(cols, k)), _min(b, b.add(rows, k), cols))
    return _max(b, length, _i64(0))


def diagonal_start(b: ir.IRBuilder, k: ir.Value, s0: ir.Value, s1: ir.Value) -> ir.Value:
    """The element offset of diagonal k's first element: column k, or row -k."""
    return b.select(b.icmp_signed(">=", k, _i64(0)), b.mul(k, s1), b.mul(b.neg(k), s0))


def store_diagonal(em: FunctionEmitter, out: ir.Value, t: ArrayType, k: ir.Value,
                   value_at) -> None:
    """out's diagonal k [i] = value_at(i) (a value of the array's storage type)."""
    b = em.builder
    rows, cols = array_layout.dim(b, out, 0), array_layout.dim(b, out, 1)
    s0, s1 = _stride(b, out, 0), _stride(b, out, 1)
    start = diagonal_start(b, k, s0, s1)
    step = b.add(s0, s1)
    data = b.extract_value(out, ARRAY_DATA)

    def body(indices):
        (i,) = indices
        b.store(value_at(i), b.gep(data, [b.add(start, b.mul(i, step))]),
                align=array_layout.ITEM_SIZES[t.dtype])
    nests.loop_nest(em, [diagonal_length(b, rows, cols, k)], body, "diagonal")


def diag(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.diag(v, k): a new matrix with v on diagonal k; np.diag(A, k): a view of it."""
    b = em.builder
    x, k = args
    t, out_t = node.inputs[0].type, node.outputs[0].type
    if t.ndim == 2:
        rows, cols = array_layout.dim(b, x, 0), array_layout.dim(b, x, 1)
        s0, s1 = _stride(b, x, 0), _stride(b, x, 1)
        length = diagonal_length(b, rows, cols, k)
        start = b.select(b.icmp_signed(">", length, _i64(0)), diagonal_start(b, k, s0, s1),
                         _i64(0))
        data = b.gep(b.extract_value(x, ARRAY_DATA), [start])
        return copies.build(b, out_t, data, owned.new_reference(em, x), [length],
                           [b.add(s0, s1)])
    n = array_layout.dim(b, x, 0)
    magnitude = b.select(b.icmp_signed("<", k, _i64(0)), b.neg(k), k)
    side = b.add(n, magnitude)
    allocation.check_dims(em, node, t.dtype, [side, side])
    out = allocation.allocate(em, node, out_t, [side, side], zeroed=True)
    source, stride = b.extract_value(x, ARRAY_DATA), _stride(b, x, 0)
    store_diagonal(em, out, out_t, k, lambda i: b.load(b.gep(source, [b.mul(i, stride)]),
                                                       align=array_layout.ITEM_SIZES[t.dtype]))
    return out


def eye(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.eye(n, m, k, dtype): zeros (calloc), then ones on diagonal k."""
    n, m, k = args
    out_t = node.outputs[0].type
    allocation.check_dims(em, node, out_t.dtype, [n, m])
    out = allocation.allocate(em, node, out_t, [n, m], zeroed=True)
    one = ir.Constant(I8, 1) if out_t.dtype == BOOL else constant(out_t.dtype, 1)
    store_diagonal(em, out, out_t, k, lambda i: one)
    return out


ROUTINES = {"matmul": matmul, "diag": diag, "eye": eye}
