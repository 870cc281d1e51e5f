"""np.linalg.solve, inv, det, cholesky in compiled code: LAPACK calls (ir/ops/lapack.py),
to NumPy's own OpenBLAS where it has one, else SciPy's (runtime/lapack.py).

As NumPy does, each matrix of the (possibly stacked) input is first copied into a
Fortran-ordered scratch buffer, which LAPACK overwrites; then

- `linalg_inv`: gesv(A, I): the right-hand side an identity in a second buffer, copied
  into the result;
- `linalg_solve`: gesv(A, B), B copied into the second buffer (one column for a vector b);
- `linalg_det`: getrf(A); sign from the pivots and the diagonal's signs, then
  sign * exp(sum(log |u_ii|)) (NumPy's det_from_slogdet); 0 when getrf reports a zero pivot;
- `linalg_cholesky`: potrf('L', A); the result is the lower triangle, zeros above.

The scratch buffers (and the pivots) are allocated once per call, not per matrix, as
new arrays released after the loop over the batch (or by the failure exit). A stack is
one loop nest over the broadcast batch axes (stacked_products.py's `Stack`). LAPACK's
info > 0 is NumPy's LinAlgError ("Singular matrix", "Matrix is not positive definite");
a non-square matrix is LinAlgError "Last 2 dimensions of the array must be square"; a
dimension past 2**31 - 1 a ValueError (SciPy's LAPACK's ints are 32 bits; kept with
NumPy's 64-bit ones: no such matrix fits in memory). An empty matrix calls
LAPACK with n = 0 (lda 1), which returns at once: det of a 0x0 matrix is 1.0.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops.lapack import NOT_POSITIVE_DEFINITE, NOT_SQUARE, SINGULAR
from ...ir.types import I64, ArrayType, ScalarType
from . import copies, nests, new_arrays, owned
from .blas_calls import INT32_MAX, TOO_LARGE, Call, byte_stride, i64_constant, max_int
from .lltypes import ARRAY_DATA, ARRAY_OWNER, ARRAY_SHAPE, I8, I64_T, constant, element_type
from .runtime import lapack
from .stacked_products import Stack, batch_lengths

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

SOLVE_MISMATCH = {True: "(m,m),(m)->(m)", False: "(m,m),(m,n)->(m,n)"}
"""The gufunc signature NumPy's mismatch message names, for a vector b or a matrix b."""


class Scratch:
    """A Fortran-ordered rows x cols buffer (a new 1-d array), and its 2-d view."""

    def __init__(self, em: FunctionEmitter, node: Node, dtype: ScalarType, rows: ir.Value,
                 cols: ir.Value):
        b = em.builder
        self.array = new_arrays.allocate(em, node, ArrayType(dtype, 1), [b.mul(rows, cols)],
                                         zeroed=False)
        self.data = b.extract_value(self.array, ARRAY_DATA)
        self.ld = max_int(b, rows, i64_constant(1))
        self.view = copies.build(b, ArrayType(dtype, 2), self.data,
                                 b.extract_value(self.array, ARRAY_OWNER), [rows, cols],
                                 [i64_constant(1), self.ld])
        self.column = copies.build(b, ArrayType(dtype, 1), self.data,
                                   b.extract_value(self.array, ARRAY_OWNER), [rows],
                                   [i64_constant(1)])

    def fill_from(self, b: ir.IRBuilder, matrix: ir.Value, t: ArrayType) -> None:
        """The buffer = `matrix` (a 2-d array value), in Fortran order: copied as the
        transposes of both, so that the writes are contiguous (the reads strided)."""
        copies.copy_with(b, transposed(b, matrix, t), t, transposed(b, self.view, t), t)

    def at(self, b: ir.IRBuilder, i: ir.Value, j: ir.Value) -> ir.Value:
        return b.gep(self.data, [b.add(i, b.mul(j, self.ld))])


def transposed(b: ir.IRBuilder, matrix: ir.Value, t: ArrayType) -> ir.Value:
    """The transpose of a 2-d array value (a view: its lengths and strides swapped)."""
    dims = [b.extract_value(matrix, [ARRAY_SHAPE, k]) for k in (1, 0)]
    return copies.build(b, t, b.extract_value(matrix, ARRAY_DATA),
                        b.extract_value(matrix, ARRAY_OWNER), dims,
                        [byte_stride(b, matrix, k) for k in (1, 0)])


def _pivots(em: FunctionEmitter, node: Node, n: ir.Value,
            index: ir.IntType) -> tuple[ir.Value, ir.Value]:
    """(the array holding n pivots, LAPACK's ints `index` (at most 64 bits), their pointer)."""
    array = new_arrays.allocate(em, node, ArrayType(I64, 1), [n], zeroed=False)
    return array, em.builder.bitcast(em.builder.extract_value(array, ARRAY_DATA),
                                     index.as_pointer())


def _lapack_call(em: FunctionEmitter, dtype: ScalarType) -> tuple[Call, ir.Value]:
    """A call's arguments in LAPACK's ints (`lapack.int_type`), and the slot of its info."""
    index = lapack.int_type()
    return Call(em.builder, dtype, index), em.alloca(index)


def _call(call: Call, name: str, args: list[ir.Value]) -> None:
    module = call.builder.function.module
    call.builder.call(lapack.declare(module, call.prefix + name), args)


def _square(em: FunctionEmitter, node: Node, x: Stack) -> ir.Value:
    """The side n of x's matrices: LinAlgError unless square, ValueError past 32 bits."""
    b = em.builder
    n = x.dims[-1]
    em.fail_if(node, b.icmp_signed("!=", n, x.dims[-2]), "LinAlgError", NOT_SQUARE)
    em.fail_if(node, b.icmp_signed(">", n, i64_constant(INT32_MAX)), "ValueError", TOO_LARGE)
    return n


def _info(em: FunctionEmitter, node: Node, call: Call, info: ir.Value, message: str) -> None:
    b = em.builder
    em.fail_if(node, b.icmp_signed(">", b.load(info), ir.Constant(info.type.pointee, 0)),
               "LinAlgError", message)


def _release(em: FunctionEmitter, arrays: list[ir.Value]) -> None:
    for array in arrays:
        owned.release_now(em, array)


def linalg_inv(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, t = em.builder, node.inputs[0].type
    x = Stack(b, args[0], t.ndim)
    n = _square(em, node, x)
    lengths = x.dims[:-2]
    out = new_arrays.allocate(em, node, t, [*lengths, n, n], zeroed=False)
    result = Stack(b, out, t.ndim)
    fa, fb = Scratch(em, node, t.dtype, n, n), Scratch(em, node, t.dtype, n, n)
    call, info = _lapack_call(em, t.dtype)
    pivots, ipiv = _pivots(em, node, n, call.index)
    matrix = ArrayType(t.dtype, 2)
    zero, one = constant(t.dtype, 0.0), constant(t.dtype, 1.0)

    def item(indices):
        fa.fill_from(b, x.item(b, t, indices), matrix)
        new_arrays.fill_with(b, t.dtype, zero, fb.data, b.mul(n, n))
        nests.loop_nest(em, [n], lambda ii: b.store(one, fb.at(b, ii[0], ii[0])), "identity")
        _call(call, "gesv", [call.int(n), call.int(n), fa.data, call.int(fa.ld), ipiv, fb.data,
                             call.int(fb.ld), info])
        _info(em, node, call, info, SINGULAR)
        copies.copy_with(b, fb.view, matrix, result.item(b, t, indices), matrix)
    nests.loop_nest(em, lengths, item, "inv")
    _release(em, [fa.array, fb.array, pivots])
    return out


def linalg_solve(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b = em.builder
    a_t, b_t, out_t = node.inputs[0].type, node.inputs[1].type, node.outputs[0].type
    vector = b_t.ndim == 1
    x, y = Stack(b, args[0], a_t.ndim), Stack(b, args[1], b_t.ndim)
    n = _square(em, node, x)
    rows = y.dims[0] if vector else y.dims[-2]
    k = i64_constant(1) if vector else y.dims[-1]
    name = "solve1" if vector else "solve"
    fixed = (f"{name}: Input operand 1 has a mismatch in its core dimension 0, with gufunc "
             f"signature {SOLVE_MISMATCH[vector]}")
    em.fail_with_values(node, b.icmp_signed("!=", rows, n), "ValueError", fixed,
                        fixed + " (size {0} is different from {1})", [rows, n])
    em.fail_if(node, b.icmp_signed(">", k, i64_constant(INT32_MAX)), "ValueError", TOO_LARGE)
    out_batch = out_t.ndim - y.core
    lengths = batch_lengths(em, node, [x, y], out_batch)
    core = [n] if vector else [n, k]
    new_arrays.check_dims(em, node, out_t.dtype, lengths + core)
    out = new_arrays.allocate(em, node, out_t, lengths + core, zeroed=False)
    result = Stack(b, out, out_t.ndim)
    result.core, result.batch = y.core, out_batch
    fa, fb = Scratch(em, node, a_t.dtype, n, n), Scratch(em, node, a_t.dtype, n, k)
    call, info = _lapack_call(em, a_t.dtype)
    pivots, ipiv = _pivots(em, node, n, call.index)
    matrix, rhs = ArrayType(a_t.dtype, 2), ArrayType(a_t.dtype, y.core)
    rhs_view = fb.column if vector else fb.view

    def item(indices):
        fa.fill_from(b, x.item(b, a_t, indices), matrix)
        copies.copy_with(b, y.item(b, b_t, indices), rhs, rhs_view, rhs)
        _call(call, "gesv", [call.int(n), call.int(k), fa.data, call.int(fa.ld), ipiv, fb.data,
                             call.int(fb.ld), info])
        _info(em, node, call, info, SINGULAR)
        copies.copy_with(b, rhs_view, rhs, result.item(b, out_t, indices), rhs)
    nests.loop_nest(em, lengths, item, "solve")
    _release(em, [fa.array, fb.array, pivots])
    return out


def linalg_det(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, t = em.builder, node.inputs[0].type
    dtype = t.dtype
    x = Stack(b, args[0], t.ndim)
    n = _square(em, node, x)
    lengths = x.dims[:-2]
    out = new_arrays.allocate(em, node, ArrayType(dtype, len(lengths)), lengths, zeroed=False) \
        if lengths else None
    fa = Scratch(em, node, dtype, n, n)
    call, info = _lapack_call(em, dtype)
    pivots, ipiv = _pivots(em, node, n, call.index)
    matrix, value = ArrayType(dtype, 2), em.alloca(element_type(dtype))

    def item(indices):
        fa.fill_from(b, x.item(b, t, indices), matrix)
        _call(call, "getrf", [call.int(n), call.int(n), fa.data, call.int(fa.ld), ipiv, info])
        b.store(_determinant(em, fa, ipiv, n, b.load(info), dtype), value)
        if out is not None:
            offset = i64_constant(0)
            for index, stride in zip(indices, Stack(b, out, len(lengths)).strides):
                offset = b.add(offset, b.mul(index, stride))
            b.store(b.load(value), b.gep(b.extract_value(out, ARRAY_DATA), [offset]))
    nests.loop_nest(em, lengths, item, "det")
    _release(em, [fa.array, pivots])
    return out if out is not None else b.load(value)


def _determinant(em: FunctionEmitter, fa: Scratch, ipiv: ir.Value, n: ir.Value, info: ir.Value,
                 dtype: ScalarType) -> ir.Value:
    """sign * exp(logdet) of getrf's factors (NumPy's det); 0 when info > 0."""
    b = em.builder
    ty = element_type(dtype)
    sign, logdet = em.alloca(ty), em.alloca(ty)
    b.store(constant(dtype, 1.0), sign)
    b.store(constant(dtype, 0.0), logdet)
    log = b.module.declare_intrinsic("llvm.log", [ty])
    fabs = b.module.declare_intrinsic("llvm.fabs", [ty])
    exp = b.module.declare_intrinsic("llvm.exp", [ty])

    def body(indices):
        (i,) = indices
        u = b.load(fa.at(b, i, i))
        pivot = b.load(b.gep(ipiv, [i]))
        pivot = b.sext(pivot, I64_T) if pivot.type != I64_T else pivot
        swapped = b.icmp_signed("!=", pivot, b.add(i, i64_constant(1)))
        negative = b.fcmp_ordered("<", u, constant(dtype, 0.0))
        flip = b.xor(swapped, negative)
        s = b.load(sign)
        b.store(b.select(flip, b.fneg(s), s), sign)
        b.store(b.fadd(b.load(logdet), b.call(log, [b.call(fabs, [u])])), logdet)
    nests.loop_nest(em, [n], body, "det.diagonal")
    det = b.fmul(b.load(sign), b.call(exp, [b.load(logdet)]))
    return b.select(b.icmp_signed(">", info, ir.Constant(info.type, 0)), constant(dtype, 0.0),
                    det)


def linalg_cholesky(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    b, t = em.builder, node.inputs[0].type
    x = Stack(b, args[0], t.ndim)
    n = _square(em, node, x)
    lengths = x.dims[:-2]
    out = new_arrays.allocate(em, node, t, [*lengths, n, n], zeroed=False)
    result = Stack(b, out, t.ndim)
    fa = Scratch(em, node, t.dtype, n, n)
    call, info = _lapack_call(em, t.dtype)
    matrix, zero = ArrayType(t.dtype, 2), constant(t.dtype, 0.0)
    lower = call.slot(ir.Constant(I8, ord("L")))

    def item(indices):
        fa.fill_from(b, x.item(b, t, indices), matrix)
        _call(call, "potrf", [lower, call.int(n), fa.data, call.int(fa.ld), info])
        _info(em, node, call, info, NOT_POSITIVE_DEFINITE)
        target = result.item(b, t, indices)
        data = b.extract_value(target, ARRAY_DATA)
        s0, s1 = (byte_stride(b, target, axis) for axis in (0, 1))

        def store(ij):
            i, j = ij
            v = b.select(b.icmp_signed("<=", j, i), b.load(fa.at(b, i, j)), zero)
            b.store(v, b.gep(data, [b.add(b.mul(i, s0), b.mul(j, s1))]))
        nests.loop_nest(em, [n, n], store, "cholesky.lower")
    nests.loop_nest(em, lengths, item, "cholesky")
    _release(em, [fa.array])
    return out


ROUTINES = {"linalg_solve": linalg_solve, "linalg_inv": linalg_inv, "linalg_det": linalg_det,
            "linalg_cholesky": linalg_cholesky}
