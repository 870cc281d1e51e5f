"""Matrix products, np.diag and np.eye in compiled code (ir/ops/linalg.py).

`matmul` of floats (and complex) whose result is an array is one call of the
runtime's `astjit.matmul.new.<p>.<ndims>` (new_products.py): NumPy's checks, the
result's allocation (new, C-contiguous, owned and on the owned list) and the product,
a failure code the site turns into its error. The product itself calls BLAS (NumPy's
OpenBLAS, else SciPy's: `blas.py`, through `blas_calls.py`): gemm for matrix @ matrix,
gemv for matrix @ vector and vector @ matrix, dot for vector @ vector. BLAS is
column-major, so a C-contiguous result C = A @ B is computed as C^T = B^T A^T. An
operand is passed as it lies when BLAS can read it: a 2-d array with unit stride along
its last axis and a leading stride at least its number of columns ("C layout": read
column-major it is the transpose) or the other way round ("F layout", e.g. `a.T` of a
C array); a vector with any nonzero stride (a negative one too). Anything else
(`a[:, ::2]`, a zero stride, a stride past 32 bits) is first copied to a C-contiguous
temporary, released right after the call, and an operand of another dtype than the
result's (f32 or int64 with f64) is converted first, at the site, as NumPy converts.
Stacks of matrices (more than 2 dimensions) loop over the batch axes in the runtime
(stacked_products.py). vector @ vector checks its inner dimensions here and calls the
runtime's `astjit.matmul.<d|s>.11` (ddot / sdot) into a stack slot. int64 results (BLAS
has no integers) run a plain loop nest, wrapping on overflow as NumPy's does.

BLAS wants every leading dimension >= 1 and sizes in 32 bits: a zero-sized result
calls nothing, an inner dimension of 0 gives zeros without calling BLAS, and a
dimension past 2**31 - 1 is a ValueError.

`diag` of a vector allocates a zeroed square matrix and stores the vector on
diagonal k; of a matrix it is a view (copies.py's `build`: a new reference to
the owner, data at the diagonal's first element, stride s0 + s1), which `fused` nests
read at that stride in their fast version too (`FunctionEmitter.strided`). `eye`
allocates zeros (calloc), then calls the runtime's `astjit.eye.<dtype>`, which stores ones
on diagonal k of the new matrix (its shape and k are the call's arguments): the same loop
for every np.eye of a dtype (jacfwd builds one per kernel), so it is compiled once per
process or linked from the runtime cache, not optimized and compiled again in each
kernel's loops module.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import BOOL, ArrayType, ScalarType
from . import array_layout, copies, nests, new_arrays, owned
from .blas_calls import (
    Operand,
    byte_stride,
    check_product,
    converted_copy,
    i64_constant,
    max_int,
    min_int,
    product_function,
    product_name,
    release,
)
from .complex_products import complex_dot
from .factorizations import ROUTINES as LAPACK_ROUTINES
from .lltypes import ARRAY_DATA, I1, I8, I64_T, constant, element_type, lltype
from .new_products import new_product
from .product_kernels import int_kernel, mismatch_message
from .shared import Body, shared_function
from .stacked_products import stacked_product

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter




# ---- NumPy's message for inner dimensions that differ ------------------------------------------

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
                        [k, k_b, i64_constant(0) if m is None else m, i64_constant(0) if n is None else n])
    return m, k, n


def matmul(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """a @ b / np.dot(a, b) of arrays (the module docstring)."""
    a, b = args
    out_t = node.outputs[0].type
    dtype = out_t.dtype if isinstance(out_t, ArrayType) else out_t
    inexact = dtype.is_float or dtype.is_complex
    if isinstance(out_t, ArrayType) and inexact:
        return new_product(em, node, a, b)
    if max(t.type.ndim for t in node.inputs) > 2:
        return stacked_product(em, node, a, b)
    sizes = check_inner(em, node, a, b)
    if not inexact:
        return int_product(em, node, a, b, sizes)
    if dtype.is_complex:
        return complex_dot(em, node, a, b, dtype)
    return blas_dot(em, node, a, b, dtype)


def blas_dot(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value,
             dtype: ScalarType) -> ir.Value:
    """vector @ vector: the runtime's shared `astjit.matmul.<d|s>.11` (ddot / sdot, 0 for
    empty vectors) into a stack slot, whose failure code is this site's ValueError (sizes
    past BLAS's) or MemoryError (a copy of an operand); an operand of another dtype is
    converted first, released after."""
    builder = em.builder
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    slot = em.alloca(lltype(dtype))
    x = converted_copy(em, node, a, a_t, dtype) if a_t.dtype != dtype else a
    y = converted_copy(em, node, b, b_t, dtype) if b_t.dtype != dtype else b
    product = shared_function(em.module, product_name(dtype, 1, 1), *product_function(dtype, 1, 1))
    check_product(em, node, builder.call(product, [x, y, slot]))
    release(em, [Operand(x, ir.Constant(I1, int(x is not a))),
                 Operand(y, ir.Constant(I1, int(y is not b)))])
    return builder.load(slot)


# ---- integers: a loop nest ---------------------------------------------------------------------

def int_product(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value, sizes) -> ir.Value:
    """out[i, j] += a[i, p] * b[p, j] over (i, p, j), a vector being a matrix with one row
    (a) or one column (b); wrapping arithmetic, as NumPy's integer matmul."""
    builder = em.builder
    m, k, n = sizes
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    out_t = node.outputs[0].type
    zero_i64 = i64_constant(0)
    if isinstance(out_t, ArrayType):
        dims = [d for d in (m, n) if d is not None]
        new_arrays.check_dims(em, node, out_t.dtype, dims)
        out = new_arrays.allocate(em, node, out_t, dims, zeroed=True)
        data = builder.extract_value(out, ARRAY_DATA)
        own = [byte_stride(builder, out, axis) for axis in range(out_t.ndim)]
        out_strides = own if out_t.ndim == 2 else [own[0], zero_i64] if n is None \
            else [zero_i64, own[0]]
    else:
        out, data = None, em.alloca(I64_T)
        builder.store(zero_i64, data)
        out_strides = [zero_i64, zero_i64]
    int_kernel(em, a, a_t.ndim, b, b_t.ndim, data, out_strides, sizes)
    return out if out is not None else builder.load(data)


# ---- np.diag, np.eye --------------------------------------------------------------------------

def diagonal_length(b: ir.IRBuilder, rows: ir.Value, cols: ir.Value, k: ir.Value) -> ir.Value:
    """How many elements diagonal k of a rows x cols matrix has (0 past the edges)."""
    above = b.icmp_signed(">=", k, i64_constant(0))
    length = b.select(above, min_int(b, rows, b.sub(cols, k)), min_int(b, b.add(rows, k), cols))
    return max_int(b, length, i64_constant(0))


def diagonal_start(b: ir.IRBuilder, k: ir.Value, s0: ir.Value, s1: ir.Value) -> ir.Value:
    """The element offset of diagonal k's first element: column k, or row -k."""
    return b.select(b.icmp_signed(">=", k, i64_constant(0)), b.mul(k, s1), b.mul(b.neg(k), s0))


def store_diagonal(em: FunctionEmitter, out: ir.Value, t: ArrayType, k: ir.Value,
                   value_at) -> None:
    """out's diagonal k [i] = value_at(i) (a value of the array's storage type)."""
    b = em.builder
    rows, cols = array_layout.dim(b, out, 0), array_layout.dim(b, out, 1)
    s0, s1 = byte_stride(b, out, 0), byte_stride(b, out, 1)
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
        s0, s1 = byte_stride(b, x, 0), byte_stride(b, x, 1)
        length = diagonal_length(b, rows, cols, k)
        start = b.select(b.icmp_signed(">", length, i64_constant(0)), diagonal_start(b, k, s0, s1),
                         i64_constant(0))
        data = b.gep(b.extract_value(x, ARRAY_DATA), [start])
        em.strided.add(node.outputs[0])
        return copies.build(b, out_t, data, owned.new_reference(em, x), [length],
                           [b.add(s0, s1)])
    n = array_layout.dim(b, x, 0)
    magnitude = b.select(b.icmp_signed("<", k, i64_constant(0)), b.neg(k), k)
    side = b.add(n, magnitude)
    new_arrays.check_dims(em, node, t.dtype, [side, side])
    out = new_arrays.allocate(em, node, out_t, [side, side], zeroed=True)
    source, stride = b.extract_value(x, ARRAY_DATA), byte_stride(b, x, 0)
    store_diagonal(em, out, out_t, k, lambda i: b.load(b.gep(source, [b.mul(i, stride)]),
                                                       align=array_layout.ITEM_SIZES[t.dtype]))
    return out


def eye(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    """np.eye(n, m, k, dtype): zeros (calloc), then the runtime's `astjit.eye.<dtype>`."""
    b = em.builder
    n, m, k = args
    dtype = node.outputs[0].type.dtype
    new_arrays.check_dims(em, node, dtype, [n, m])
    out = new_arrays.allocate(em, node, node.outputs[0].type, [n, m], zeroed=True)
    ones = shared_function(em.module, f"astjit.eye.{dtype}", *_eye_function(dtype))
    b.call(ones, [b.extract_value(out, ARRAY_DATA), n, m, k])
    return out


def _eye_function(dtype: ScalarType):
    """(data, rows, cols, k): ones on diagonal k of a new C-contiguous rows x cols matrix."""
    def emit(fn, b, data, rows, cols, k):
        one = ir.Constant(I8, 1) if dtype == BOOL else constant(dtype, 1)
        start = diagonal_start(b, k, cols, i64_constant(1))
        step = b.add(cols, i64_constant(1))

        def store_one(indices):
            (i,) = indices
            b.store(one, b.gep(data, [b.add(start, b.mul(i, step))]),
                    align=array_layout.ITEM_SIZES[dtype])
        nests.loop_nest(Body(fn, b), [diagonal_length(b, rows, cols, k)], store_one, "diagonal")
        b.ret_void()
    return ir.FunctionType(ir.VoidType(), [element_type(dtype).as_pointer()] + [I64_T] * 3), emit


ROUTINES = {"matmul": matmul, "diag": diag, "eye": eye, **LAPACK_ROUTINES}
