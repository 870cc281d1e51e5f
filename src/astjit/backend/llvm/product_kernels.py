"""What the 1-d/2-d products (linalg.py) and the stacks of products (stacked_products.py)
share: NumPy's message for inner dimensions that differ, read off NumPy itself, and the
integer product kernel (BLAS multiplies floats only)."""
from __future__ import annotations

import functools
import itertools
from typing import TYPE_CHECKING

from llvmlite import ir

from . import nests
from .blas_calls import byte_stride, i64_constant
from .lltypes import ARRAY_DATA

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

SENTINELS = (29, 31, 23, 37)
"""Sizes NumPy is asked to multiply to read off its message: the inner size of a, of b,
then a's rows and b's columns; in the template they become {0} ... {3}."""


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
    detail = _sentinels_marked(text.replace("{", "{{").replace("}", "}}"), lambda i: f"{{{i}}}")
    return _sentinels_marked(text, lambda _: "?"), detail


def _sentinels_marked(text: str, mark) -> str:
    """`text` with each number in it that is one of the SENTINELS replaced by mark(its index)
    (a scan of the digit runs: no regular expression to compile at a first product)."""
    runs = ("".join(group) for _, group in itertools.groupby(text, str.isdigit))
    return "".join(mark(SENTINELS.index(int(run))) if run.isdigit() and int(run) in SENTINELS
                   else run for run in runs)


def int_kernel(em: FunctionEmitter, a: ir.Value, a_ndim: int, b: ir.Value, b_ndim: int,
               data: ir.Value, out_strides: list[ir.Value], sizes: tuple) -> None:
    """data[i, j] += a[i, p] * b[p, j] (the (i, j) element at `out_strides`) for 1-d or
    2-d `a` and `b` (`sizes`: (m, k, n), None for a vector's missing axis)."""
    builder = em.builder
    m, k, n = sizes
    zero_i64, one = i64_constant(0), i64_constant(1)
    a_strides = [byte_stride(builder, a, 0), byte_stride(builder, a, 1)] if a_ndim == 2 \
        else [zero_i64, byte_stride(builder, a, 0)]
    b_strides = [byte_stride(builder, b, 0), byte_stride(builder, b, 1)] if b_ndim == 2 \
        else [byte_stride(builder, b, 0), zero_i64]

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
