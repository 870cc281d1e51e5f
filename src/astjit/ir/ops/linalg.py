"""Linear algebra primitives: matrix products, np.diag, np.eye (NumPy semantics).

- `matmul`: `a @ b`, `np.matmul(a, b)` of arrays of any ndim >= 1, `np.dot(a, b)` of
  1-d and 2-d arrays (ops/linalg_functions.py makes N-d np.dot of reshapes and this).
  Inputs `[a, b]`; attrs `kind`: `"matmul"` (the default: `@` makes the node
  without attrs) or `"dot"`. The two kinds compute the same thing for these
  ndims; `kind` only picks NumPy's error message when the inner dimensions
  differ (ValueError "matmul: Input operand 1 has a mismatch in its core
  dimension 0, ... (size 5 is different from 4)" or "shapes (3,4) and (5,) not
  aligned: 4 (dim 1) != 5 (dim 0)"). Shapes: (m,k)@(k,n) -> (m,n),
  (m,k)@(k,) -> (m,), (k,)@(k,n) -> (n,), (k,)@(k,) -> a scalar; with more than 2
  dimensions, a stack of matrices over the leading (batch) axes, broadcast against
  each other as NumPy broadcasts ((2,1,3,5)@(4,5,2) -> (2,4,3,2)), a 1-d operand a
  row (a) or a column (b) removed from the result (NumPy's ValueError when the batch
  axes do not broadcast). The result
  dtype is NumPy's promotion of the two array dtypes (f32 with f64 -> f64, an
  int with a float -> f64, i64 with i64 -> i64); the operands keep their types
  (a float operand of another dtype is converted inside the computation). A
  result array is new and C-contiguous (owned). Scalars, 0-d and bool arrays
  are type errors.
  Reverse mode: d(a@b) = (g@b.T, a.T@g) with the 1-d cases as outer products/dots;
  on stacks the same on the last two axes, summed over the batch axes an operand was
  broadcast along. Forward mode: da @ b + a @ db.
- `diag`: `np.diag(x, k)`. Inputs `[x, k]` (k an int, the diagonal's offset,
  0 the main one). A 1-d `x` gives a new square matrix of side
  `len(x) + |k|`, zero but `x` on diagonal k; a 2-d `x` gives its diagonal k
  as a 1-d *view* (empty when k is past the edge). NumPy's view is read-only;
  compiled code's is not (writing into it writes into x). Reverse mode: of a vector,
  the adjoint's diagonal k; of a matrix, g added into the adjoint's diagonal k.
- `eye`: `np.eye(n, m, k, dtype)`. Inputs `[n, m, k]` (ints; the frontend
  passes n again for a missing m); attrs `dtype` (compile-time). A new n×m
  array of zeros with ones on diagonal k; negative n or m is NumPy's
  ValueError "negative dimensions are not allowed".

None of these is pure: each makes a new array (or reads memory another node
may write), so the passes never merge, move or drop them (passes/effects.py).
"""
from __future__ import annotations

from ..shape_algebra import broadcast, broadcasts, dims_of
from ..types import BOOL, F64, I64, NUMPY_NAMES, ArrayType, ScalarType, is_numeric
from .adjoints import AddIntoView
from .batching import SHAPE_PER_EXAMPLE, NotBatchable, each, example_ndim, with_rank
from .declare import _def
from .elementwise import numpy_promote
from .table import OpTypeError, Routine


def _numpy():
    import numpy

    return numpy


def product_name(attrs: dict) -> str:
    """How messages name the product: np.dot() or '@'."""
    return "np.dot()" if attrs.get("kind") == "dot" else "'@' (np.matmul)"


def _python_type_name(t) -> str:
    return {"f64": "float", "f32": "float", "i64": "int", "i32": "int", "bool": "bool"}.get(
        str(t), str(t))


def matmul_rule(types, attrs):
    a, b = types
    name = product_name(attrs)
    if not isinstance(a, ArrayType) or not isinstance(b, ArrayType):
        if attrs.get("kind") == "dot":
            raise OpTypeError(f"np.dot() of a number is not supported yet, got {a} and {b}: "
                              "write a * b")
        if not isinstance(a, ArrayType) and not isinstance(b, ArrayType):
            raise OpTypeError(f"unsupported operand type(s) for @: '{_python_type_name(a)}' "
                              f"and '{_python_type_name(b)}'")
        raise OpTypeError(f"{name} needs two arrays, got {a} and {b}: "
                          "a number times an array is written a * b")
    for t in (a, b):
        if t.ndim == 0:
            raise OpTypeError(f"{name} of 0-d arrays is not supported yet: a number times an "
                              "array is written a * b")
        if t.ndim > 2 and attrs.get("kind") == "dot":
            raise OpTypeError("np.dot() of 3-d and larger arrays is made of reshapes and a "
                              "matrix product (ops/linalg_functions.py), not this node")
        if t.dtype == BOOL:
            raise OpTypeError(f"{name} of bool arrays is not supported yet: convert them first")
    dtype = numpy_promote([a.dtype, b.dtype], [])
    ndim = product_ndim(a.ndim, b.ndim)
    return [a, b], (dtype if ndim == 0 else ArrayType(dtype, ndim))


def product_ndim(a_ndim: int, b_ndim: int) -> int:
    """The dimensions of a @ b: the broadcast batch axes, then a's rows (when a is not a
    vector), then b's columns (when b is not a vector)."""
    batch = max(a_ndim - 2, b_ndim - 2, 0)
    return batch + (a_ndim >= 2) + (b_ndim >= 2)


def _int(t, what):
    if not is_numeric(t) or t.is_float:
        raise OpTypeError(f"{what} must be an integer, got {t}")


def diag_rule(types, attrs):
    x, k = types
    if not isinstance(x, ArrayType) or x.ndim not in (1, 2):
        raise OpTypeError(f"np.diag() needs a 1-d or 2-d array, got {x}")
    _int(k, "the diagonal k of np.diag()")
    return [x, I64], ArrayType(x.dtype, 3 - x.ndim)


def eye_rule(types, attrs):
    for t, what in zip(types, ("N", "M", "k")):
        _int(t, f"{what} of np.eye()")
    return [I64] * len(types), ArrayType(attrs.get("dtype") or F64, 2)


# ---- reference semantics ------------------------------------------------------------------

def py_matmul(a, b, kind: str = "matmul"):
    """NumPy's product, both operands first converted to the result dtype (as NumPy does);
    a Python number for two vectors."""
    np = _numpy()
    dtype = np.result_type(a.dtype, b.dtype)
    product = np.dot if kind == "dot" else np.matmul
    result = product(a.astype(dtype, copy=False), b.astype(dtype, copy=False))
    return result.item() if np.ndim(result) == 0 else result


def py_diag(x, k):
    return _numpy().diag(x, k)


def py_eye(n, m, k, dtype: ScalarType | None = None):
    return _numpy().eye(n, m, k, dtype=NUMPY_NAMES[(dtype or F64).name])


def _column(e, v):
    """A vector as an (n, 1) matrix (a view: a reshape's code would also handle a copy)."""
    return e.op("array_expand_dims", v, axes=(1,))


def _matmul_vjp(e, g, ins, out, needs):
    """d(a @ b) = (g @ b.T, a.T @ g); with a vector operand the products become outer
    products (a column times a row, by broadcasting) and dots (g times the other vector).
    With stacks of matrices: the same on the last two axes, a vector operand a matrix of
    one row (a) or one column (b), each adjoint summed over the batch axes its operand was
    broadcast along (`sum_to_like`)."""
    a, b = ins
    if max(a.type.ndim, b.type.ndim) > 2:
        return _batched_matmul_vjp(e, g, a, b, needs)
    da = db = None
    ndims = (a.type.ndim, b.type.ndim)
    if needs[0]:
        da = {(2, 2): lambda: e.op("matmul", g, e.op("array_transpose", b)),
              (2, 1): lambda: e.op("mul", _column(e, g), b),
              (1, 2): lambda: e.op("matmul", b, g),
              (1, 1): lambda: e.op("mul", g, b)}[ndims]()
    if needs[1]:
        db = {(2, 2): lambda: e.op("matmul", e.op("array_transpose", a), g),
              (2, 1): lambda: e.op("matmul", e.op("array_transpose", a), g),
              (1, 2): lambda: e.op("mul", _column(e, a), g),
              (1, 1): lambda: e.op("mul", g, a)}[ndims]()
    return [_like(e, da, a), _like(e, db, b)]


def swap_last(e, x):
    """x with its last two axes swapped (a view)."""
    n = x.type.ndim
    return e.op("array_permute", x, axes=(*range(n - 2), n - 1, n - 2))


def _batched_matmul_vjp(e, g, a, b, needs):
    a2 = a if a.type.ndim >= 2 else e.op("array_expand_dims", a, axes=(0,))
    b2 = b if b.type.ndim >= 2 else e.op("array_expand_dims", b, axes=(1,))
    g2 = g
    if a.type.ndim == 1:  # g lacks the row axis of a's one row
        g2 = e.op("array_expand_dims", g2, axes=(g2.type.ndim - (b.type.ndim >= 2),))
    if b.type.ndim == 1:  # ... and the column axis of b's one column
        g2 = e.op("array_expand_dims", g2, axes=(g2.type.ndim,))
    da = db = None
    if needs[0]:
        da = e.op("sum_to_like", e.op("matmul", g2, swap_last(e, b2)), a)
    if needs[1]:
        db = e.op("matmul", swap_last(e, a2), g2)
        if b.type.ndim == 1:  # (..., k, 1) -> (..., k), which sums to b's (k,)
            db = e.op("array_squeeze", db, axes=(db.type.ndim - 1,))
        db = e.op("sum_to_like", db, b)
    return [da, db]


def _matmul_jvp(e, tangents, ins, out, attrs):
    """d(a @ b) = da @ b + a @ db (the product is bilinear)."""
    (a, b), (da, db) = ins, tangents
    parts = [e.op("matmul", da, b, **attrs) if da is not None else None,
             e.op("matmul", a, db, **attrs) if db is not None else None]
    total = None
    for part in parts:
        if part is not None:
            total = part if total is None else e.op("add", total, part)
    return total


def _like(e, adjoint, x):
    """`adjoint` in `x`'s dtype (an f32 operand of an f64 product gets an f32 adjoint)."""
    if adjoint is None or adjoint.type == x.type:
        return adjoint
    return e.op("sum_to_like", adjoint, x)


def _diag_vjp(e, g, ins, out, needs):
    """np.diag of a vector: the adjoint is g's diagonal k (a view); of a matrix (a view of
    its diagonal): g added into the same diagonal of the matrix's accumulator."""
    x, k = ins
    if x.type.ndim == 1:
        return [e.op("diag", g, k), None]
    return [AddIntoView(g, "diag", (k,), {}), None]


def _matmul_shape(node, table):
    """The broadcast batch axes, then m from `a`, n from `b` (ir/shape_algebra.py)."""
    a, b = (table.shape(v) for v in node.inputs)
    batch_a, batch_b = a[:-2], b[:-2]
    batch = broadcast([batch_a, batch_b], max(len(batch_a), len(batch_b)))
    rows = a[-2:-1]  # (..., m, k) @ ... gives m; (k,) @ ... nothing
    cols = b[-1:] if len(b) >= 2 else ()  # ... @ (..., k, n) gives n; ... @ (k,) nothing
    table.equate(a[-1], b[-2] if len(b) >= 2 else b[-1])  # k: checked equal
    return (*batch, *rows, *cols)


def _matmul_cannot_raise(node, shapes):
    """Floats (BLAS raises nothing) whose contracted lengths are one dim and whose stacks
    broadcast (ir/shape_algebra.py)."""
    if not all(isinstance(v.type, ArrayType) and (v.type.dtype.is_float or v.type.dtype.is_complex)
               for v in node.inputs):
        return False
    a, b = shapes().operands(node)
    if a is None or b is None:
        return False
    k_b = b[-2] if len(b) >= 2 else b[-1]
    batch_a, batch_b = a[:-2], b[:-2]
    return a[-1] == k_b and broadcasts([batch_a, batch_b], max(len(batch_a), len(batch_b)))


def _matmul_batch(b, node, ins, batched):
    """Products of the examples: one product of the batch where NumPy's shapes already say
    it (a batch of vectors or matrices times one matrix or vector: BLAS), a sum of the
    products of two batches of vectors; else each vector made a row or column, the batch
    axis one of a stack of matrices, and the unit axes squeezed out of the product."""
    x, y = ins
    (fx, fy), rx, ry = batched, example_ndim(x, batched[0]), example_ndim(y, batched[1])
    attrs = node.attrs
    if fx and not fy and ry <= 2 or not fx and rx <= 2 <= ry:
        return each(b.op("matmul", x, y, **attrs))
    if not fx and ry == 1 and rx <= 2:
        return each(b.op("matmul", y, x if rx == 1 else b.op("array_transpose", x), **attrs))
    if rx == ry == 1:
        return each(b.op("reduce", b.op("mul", x, y), kind="sum", axis=(1,), keepdims=False))
    if rx == 1:
        x = b.op("array_expand_dims", x, axes=(1,) if fx else (0,))
    if ry == 1:
        y = b.op("array_expand_dims", y, axes=(y.type.ndim,))
    stacks = max(example_ndim(x, fx), example_ndim(y, fy))
    x, y = (with_rank(b, v, stacks) if f else v for v, f in ((x, fx), (y, fy)))
    product = b.op("matmul", x, y, **attrs)
    n = product.type.ndim
    unit = (*([n - 2] if rx == 1 else []), *([n - 1] if ry == 1 else []))
    return each(b.op("array_squeeze", product, axes=unit) if unit else product)


_def("matmul", 2, matmul_rule, py_matmul, {"*": Routine("matmul")},
     ("raises", "allocates", "reads", "numpy_result", "holomorphic"), vjp=_matmul_vjp,
     jvp=_matmul_jvp,
     shape=_matmul_shape, cannot_raise=_matmul_cannot_raise, batch=_matmul_batch,
     doc="a @ b, np.matmul (stacks of matrices too), np.dot of 1-d/2-d arrays through BLAS; "
         "attrs['kind'] picks the error message")
def _diag_batch(b, node, ins, batched):
    """A matrix per example: its diagonal k, a strided slice of each flattened matrix (a
    view of the batch where it is C-contiguous, as every accumulator reverse mode adds a
    diagonal's adjoint into is; else of a copy, which reads the same). A vector per
    example: zero matrices with the vector scattered onto diagonal k. One k for every
    example (else each its own shape)."""
    if batched[1]:
        raise NotBatchable(SHAPE_PER_EXAMPLE.format(what="np.diag(x, k) with a k per example"))
    x, k = ins
    zero = b.const(0, I64)
    row0, col0 = b.op("max", zero, b.op("neg", k)), b.op("max", zero, k)
    if x.type.ndim == 3:
        n, m = b.op("array_dim", x, axis=1), b.op("array_dim", x, axis=2)
        length = b.op("max", zero, b.op("min", b.op("sub", n, row0), b.op("sub", m, col0)))
        step = b.op("add", m, b.const(1, I64))
        start = b.op("add", b.op("mul", row0, m), col0)
        stop = b.op("add", start, b.op("max", zero, b.op("sub", b.op("mul", length, step), m)))
        flat = b.op("array_reshape", x, b.size, b.op("mul", n, m))
        return each(b.op("array_view", flat, start, stop, step, spec=("s000", "s111")))
    n = b.op("array_dim", x, axis=1)
    size = b.op("add", n, b.op("abs", k))
    out = b.op("array_new", b.size, size, size, fill=0, dtype=x.type.dtype)
    i = b.op("array_arange", zero, n)
    numbers = b.op("array_expand_dims", b.op("array_arange", zero, b.size), axes=(1,))
    places = [b.op("array_broadcast_to", v, b.size, n)
              for v in (numbers, b.op("add", i, row0), b.op("add", i, col0))]
    b.op("scatter", out, x, *places, axis=0, axes=(0, 1, 2), accumulate=False)
    return each(out)


_def("diag", 2, diag_rule, py_diag, {"*": Routine("diag")}, ("raises", "view", "linear"),
     vjp=_diag_vjp, batch=_diag_batch,
     doc="np.diag(x, k): a new matrix from a vector, or a view of a matrix's diagonal")
_def("eye", 3, eye_rule, py_eye, {"*": Routine("eye")}, ("raises", "allocates"),
     no_vjp="not differentiable in reverse mode yet",
     shape=lambda node, table: dims_of(node, node.inputs[:2], table),  # n x m
     doc="np.eye(n, m, k, dtype): a new matrix with ones on diagonal k")
