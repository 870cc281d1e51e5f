"""vector @ vector of complexes (np.dot, `@`, np.vdot's product) in compiled code: linalg.py's
matmul for a complex result without axes.

BLAS's zdotu/cdotu return their complex by value, which BLAS builds return differently
(in registers, or through a hidden pointer), so the product is gemv's instead: `a` read as
a 1 x k matrix (a row view: its stride the matrix's leading one), times `b`, written into
one stack slot, by the module's shared `astjit.matmul.<z|c>.21` (blas_calls.py's
`product_function`: an operand BLAS cannot read, a negative stride, is copied first; an
empty sum gives 0). An operand of another dtype (a float vector with a complex one) is
converted whole first, as NumPy converts it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import ArrayType, ScalarType
from . import array_layout, copies
from .blas_calls import (
    BLAS_PREFIXES,
    Operand,
    byte_stride,
    check_product,
    converted_copy,
    i64_constant,
    product_function,
    release,
)
from .lltypes import ARRAY_DATA, ARRAY_OWNER, I1, lltype
from .shared import shared_function

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def complex_dot(em: FunctionEmitter, node: Node, a: ir.Value, b: ir.Value,
                dtype: ScalarType) -> ir.Value:
    """sum(a[i] * b[i]) of two complex (or one complex, one real) vectors, by gemv."""
    builder = em.builder
    a_t, b_t = node.inputs[0].type, node.inputs[1].type
    x = converted_copy(em, node, a, a_t, dtype) if a_t.dtype != dtype else a
    y = converted_copy(em, node, b, b_t, dtype) if b_t.dtype != dtype else b
    stride = byte_stride(builder, x, 0)
    row = copies.build(builder, ArrayType(dtype, 2), builder.extract_value(x, ARRAY_DATA),
                       builder.extract_value(x, ARRAY_OWNER),
                       [i64_constant(1), array_layout.dim(builder, x, 0)], [stride, stride])
    name = f"astjit.matmul.{BLAS_PREFIXES[dtype]}.21"
    product = shared_function(em.module, name, *product_function(dtype, 2, 1))
    slot = em.alloca(lltype(dtype))
    code = builder.call(product, [row, y, slot])
    check_product(em, node, code)
    release(em, [Operand(x, ir.Constant(I1, int(x is not a))),
                 Operand(y, ir.Constant(I1, int(y is not b)))])
    return builder.load(slot)
