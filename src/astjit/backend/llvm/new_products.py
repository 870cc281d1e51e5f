"""A new array = a @ b of floats in one call of the runtime (linalg.py's `matmul` whose
result is an array, of 1-d to n-d operands).

Between its operands and its result, such a product does the same at every site: NumPy's
checks of the inner dimensions (then of the batch axes, for stacks), of the result's
dimensions, the allocation of the C-contiguous result, and the product into it
(blas_calls.py's `astjit.matmul.<p>.<ndims>`, or stacked_products.py's loop of them).
Only the error each failure becomes is the site's. So all of it is one function the
runtime shares per dtype and the operands' ranks, `astjit.matmul.new.<p>.<ndims>`
(shared.py): (a, b, result slot, error numbers, the caller's owned list) -> a failure
code (`INNER` ...), or 0 with the result in its slot, a new reference on the caller's
owned list (owned.py). A site emits the call and
turns a nonzero code into its own status by a table of them: the kernel's module holds
none of the checks, the allocation or the releases of the failure exits for the product,
which were most of what LLVM compiled for a kernel like `a @ b`. Operands of another
dtype than the result's are converted at the site first (and released after), so a
conversion runs before the checks (only which error an operand that both mismatches and
cannot be converted for want of memory reports differs from NumPy's order).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import ArrayType, ScalarType
from . import array_layout, new_arrays, owned
from . import messages as msg
from .blas_calls import (
    BLAS_PREFIXES,
    PRODUCT_NO_MEMORY,
    PRODUCT_TOO_LARGE,
    TOO_LARGE,
    Operand,
    converted_copy,
    product_function,
    product_name,
    release,
)
from .emitter import error_values
from .lltypes import ARRAY_DATA, I1, I32_T, I64_T, lltype
from .product_kernels import mismatch_message
from .runtime import numpy_api
from .runtime.pyapi import PYOBJ, declare
from .shared import shared_function
from .stacked_products import (
    BATCH_DETAIL,
    BATCH_MISMATCH,
    Stack,
    broadcast_batch,
    stacked_function,
    stacked_name,
)

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter

INNER, BATCH, NEGATIVE, TOO_BIG, NO_MEMORY = range(1, 6)
"""The failure codes of `astjit.matmul.new`: the inner dimensions differ (its numbers: k of
a, k of b, m, n), the batch axes do (the axis, the two lengths), NumPy's checks of the
result's dimensions fail (new_arrays.dims_check's 1 and 2, in that order), its allocation
fails; BLAS_TOO_LARGE and COPY_NO_MEMORY, the product's own two (blas_calls.py), follow."""
BLAS_TOO_LARGE, COPY_NO_MEMORY = NO_MEMORY + PRODUCT_TOO_LARGE, NO_MEMORY + PRODUCT_NO_MEMORY


def new_product(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value) -> ir.Value:
    """The new array a @ b (floats or complex), by one call of the runtime's
    `astjit.matmul.new.<p>.<ndims>`; owned and on the owned list."""
    builder = em.builder
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    out_t = node.outputs[0].type
    x = converted_copy(em, node, a, a_t, out_t.dtype) if a_t.dtype != out_t.dtype else a
    y = converted_copy(em, node, b, b_t, out_t.dtype) if b_t.dtype != out_t.dtype else b
    name = f"astjit.matmul.new.{BLAS_PREFIXES[out_t.dtype]}.{a_t.ndim}{b_t.ndim}"
    product = shared_function(em.module, name,
                              *new_product_function(out_t.dtype, a_t.ndim, b_t.ndim))
    slot = em.alloca(lltype(out_t))
    numbers = error_values(em.module).gep([ir.Constant(I32_T, 0)] * 2)
    listed = em.held["owned"]  # a function with a product has an owned list: it allocates
    code = builder.call(product, [x, y, slot, numbers, listed.count, listed.items,
                                  ir.Constant(I64_T, listed.capacity)])
    with builder.if_then(builder.icmp_unsigned("!=", code, ir.Constant(I32_T, 0)), likely=False):
        table = status_table(em, node, stacked=max(a_t.ndim, b_t.ndim) > 2)
        em.return_status(builder.load(builder.gep(table, [ir.Constant(I32_T, 0), code])))
    out = builder.load(slot)
    release(em, [Operand(x, ir.Constant(I1, int(x is not a))),
                 Operand(y, ir.Constant(I1, int(y is not b)))])
    return out


def status_table(em: FunctionEmitter, node: Node, stacked: bool) -> ir.GlobalVariable:
    """The site's statuses by failure code (0 first, unused): a constant of the module."""
    a_ndim, b_ndim = (min(t.type.ndim, 2) for t in node.inputs)
    kind = "matmul" if stacked else node.attrs.get("kind", "matmul")
    fixed, detail = mismatch_message(kind, a_ndim, b_ndim)
    errors, loc = em.errors, node.loc
    no_memory = errors.status(msg.OUT_OF_MEMORY, new_arrays.ALLOCATION_FAILED, loc)
    by_code = {INNER: errors.status("ValueError", fixed, loc, detail),
               NEGATIVE: errors.status(*new_arrays.numpy_message("negative"), loc),
               TOO_BIG: errors.status(*new_arrays.numpy_message("too_big"), loc),
               NO_MEMORY: no_memory, BLAS_TOO_LARGE: errors.status("ValueError", TOO_LARGE, loc),
               COPY_NO_MEMORY: no_memory}
    if stacked:
        by_code[BATCH] = errors.status("ValueError", BATCH_MISMATCH, loc, BATCH_DETAIL)
    statuses = [by_code.get(code, 0) for code in range(COPY_NO_MEMORY + 1)]
    table_t = ir.ArrayType(I32_T, len(statuses))
    table = ir.GlobalVariable(em.module, table_t, em.module.get_unique_name("astjit.statuses"))
    table.linkage, table.global_constant = "private", True
    table.initializer = ir.Constant(table_t, statuses)
    return table


def new_product_function(dtype: ScalarType, a_ndim: int, b_ndim: int):
    """The runtime's `astjit.matmul.new.<p>.<ndims>`: (a, b, slot, numbers, owned list) -> 0
    with the new array a @ b stored at `slot` and pushed on the list, or a failure code
    (the inner dimensions' or the batch axes' numbers left at `numbers`), nothing left
    allocated."""
    out_batch = max(a_ndim - min(a_ndim, 2), b_ndim - min(b_ndim, 2))
    out_t = ArrayType(dtype, out_batch + (a_ndim >= 2) + (b_ndim >= 2))

    def emit(fn, builder, a, b, slot, numbers, count, items, capacity):
        def fail(cond: ir.Value, code: int, values: list[ir.Value]) -> None:
            with builder.if_then(cond, likely=False):
                for i, value in enumerate(values):
                    builder.store(value, builder.gep(numbers, [ir.Constant(I32_T, i)]))
                builder.ret(ir.Constant(I32_T, code))

        x, y = Stack(builder, a, a_ndim), Stack(builder, b, b_ndim)
        zero = ir.Constant(I64_T, 0)
        k, k_b = x.dims[-1], y.dims[-2] if b_ndim >= 2 else y.dims[0]
        m = x.dims[-2] if a_ndim >= 2 else None
        n = y.dims[-1] if b_ndim >= 2 else None
        fail(builder.icmp_signed("!=", k, k_b), INNER, [k, k_b, zero if m is None else m,
                                                     zero if n is None else n])
        lengths = broadcast_batch(builder, [x, y], out_batch,
                                  lambda clash, values: fail(clash, BATCH, values))
        dims = lengths + [d for d in (m, n) if d is not None]
        checked = builder.call(new_arrays.dims_check(fn.module, len(dims)),
                               [ir.Constant(I64_T, array_layout.ITEM_SIZES[dtype]), *dims])
        with builder.if_then(builder.icmp_unsigned("!=", checked, ir.Constant(I32_T, 0)),
                             likely=False):
            builder.ret(builder.add(checked, ir.Constant(I32_T, NEGATIVE - 1)))
        obj = builder.call(new_arrays.new_ndarray(fn.module, len(dims), zeroed=False),
                           [numpy_api.descr_constant(dtype), *dims])
        with builder.if_then(builder.icmp_unsigned("==", obj, ir.Constant(PYOBJ, None)),
                             likely=False):
            builder.ret(ir.Constant(I32_T, NO_MEMORY))
        out = new_arrays.c_order_value(builder, out_t, obj, dims)
        builder.store(out, slot)
        if out_batch:
            code = builder.call(shared_function(fn.module, stacked_name(dtype, a_ndim, b_ndim),
                                                *stacked_function(dtype, a_ndim, b_ndim)),
                                [a, b, out])
        else:
            code = builder.call(shared_function(fn.module, product_name(dtype, a_ndim, b_ndim),
                                                *product_function(dtype, a_ndim, b_ndim)),
                                [a, b, builder.extract_value(out, ARRAY_DATA)])
        with builder.if_then(builder.icmp_unsigned("!=", code, ir.Constant(I32_T, 0)),
                             likely=False):
            builder.call(declare(fn.module, "Py_DecRef"), [obj])
            builder.ret(builder.add(code, ir.Constant(I32_T, NO_MEMORY)))
        builder.call(owned.helper(fn.module, "push"), [count, items, capacity, obj])
        builder.ret(ir.Constant(I32_T, 0))
    fnty = ir.FunctionType(I32_T, [lltype(ArrayType(dtype, a_ndim)),
                                   lltype(ArrayType(dtype, b_ndim)),
                                   lltype(out_t).as_pointer(), I64_T.as_pointer(),
                                   *owned.LIST_PARAMS, I64_T])
    return fnty, emit

