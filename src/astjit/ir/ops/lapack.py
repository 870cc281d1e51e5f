"""Matrix functions computed through LAPACK: np.linalg.solve, inv, det, cholesky.

Each takes float32 or float64 arrays (ops/linalg_functions.py converts others to
float64, as NumPy does, and refuses fewer than 2 dimensions); the last two axes are
the matrix, the leading ones a stack of matrices (a batch). Results are new arrays of
the input's dtype.

- `linalg_solve(a, b)`: x with a @ x = b. `b` 1-d: one vector for every matrix of `a`
  (result a.shape[:-1]); else a stack of (n, k) matrices whose batch axes broadcast
  with a's (NumPy 2's rule). LinAlgError "Singular matrix" when LU finds a zero pivot.
- `linalg_inv(a)`: the inverse (gesv with the identity, as NumPy); "Singular matrix".
- `linalg_det(a)`: the determinant, NumPy's way: LU (getrf), the sign from the pivots
  and the diagonal, sign * exp(sum(log |u_ii|)); exactly 0 for a singular matrix.
  A number for one matrix, an array for a stack.
- `linalg_cholesky(a)`: the lower factor L, a = L @ L.T (potrf on the lower triangle,
  the upper one of a never read; the result's upper triangle zero). LinAlgError
  "Matrix is not positive definite".

A matrix that is not square is NumPy's LinAlgError "Last 2 dimensions of the array must
be square"; batch axes that do not broadcast (solve) a ValueError.

Reverse mode: inv: -X^T g X^T; det: g det X^T (X the inverse); solve: adj_b =
solve(a^T, g), adj_a = -adj_b x^T; cholesky: Murray (2016), as PyTorch and JAX:
T = L^T g lower, mid = its symmetric part with the diagonal halved,
adj_a = L^-T mid L^-1. Forward mode: dX = -X da X; d det = det sum(X^T * da);
dx = solve(a, db - da x); dL = L phi(L^-1 da L^-T), phi the lower triangle with the
diagonal halved.
"""
from __future__ import annotations

from ..types import F32, F64, I64, ArrayType
from .batching import each, same_op, with_rank
from .declare import _def
from .linalg import swap_last
from .table import OpTypeError, Routine

NOT_SQUARE = "Last 2 dimensions of the array must be square"
SINGULAR = "Singular matrix"
NOT_POSITIVE_DEFINITE = "Matrix is not positive definite"


def _matrices(t, name: str) -> ArrayType:
    if not isinstance(t, ArrayType) or t.ndim < 2 or t.dtype not in (F32, F64):
        raise OpTypeError(f"np.linalg.{name}() takes float arrays of 2 or more dimensions "
                          f"here, got {t}")
    return t


def square_rule(name: str):
    def rule(types, attrs):
        (a,) = types
        _matrices(a, name)
        return [a], a
    return rule


def det_rule(types, attrs):
    (a,) = types
    _matrices(a, "det")
    return [a], a.dtype if a.ndim == 2 else ArrayType(a.dtype, a.ndim - 2)


def solve_rule(types, attrs):
    a, b = types
    _matrices(a, "solve")
    if not isinstance(b, ArrayType) or b.dtype != a.dtype:
        raise OpTypeError(f"np.linalg.solve() takes b of {a.dtype}, got {b}")
    return [a, b], ArrayType(a.dtype, a.ndim - 1 if b.ndim == 1 else max(a.ndim, b.ndim))


def _numpy():
    import numpy

    return numpy


def py_solve(a, b):
    return _numpy().linalg.solve(a, b)


def py_inv(a):
    return _numpy().linalg.inv(a)


def py_det(a):
    return _numpy().linalg.det(a)


def py_cholesky(a):
    return _numpy().linalg.cholesky(a)


# ---- derivative rules ---------------------------------------------------------------------

def _mm(e, *xs):
    result = xs[0]
    for x in xs[1:]:
        result = e.op("matmul", result, x)
    return result


def _expand(e, x, *axes):
    return e.op("array_expand_dims", x, axes=tuple(axes))


def _solve_vectors(e, a, v):
    """solve(a, v) for v a vector per matrix of a (a 1-d v, or a stack of them)."""
    if v.type.ndim == 1:
        return e.op("linalg_solve", a, v)
    x = e.op("linalg_solve", a, _expand(e, v, v.type.ndim))
    return e.op("array_squeeze", x, axes=(x.type.ndim - 1,))


def _outer_rows(e, u, v):
    """u[..., :, None] * v[..., None, :]."""
    return e.op("mul", _expand(e, u, u.type.ndim), _expand(e, v, v.type.ndim - 1))


def _inv_vjp(e, g, ins, out, needs):
    xt = swap_last(e, out)
    return [e.op("neg", _mm(e, xt, g, xt))]


def _inv_jvp(e, tangents, ins, out, attrs):
    return e.op("neg", _mm(e, out, tangents[0], out))


def _det_vjp(e, g, ins, out, needs):
    (a,) = ins
    scale = e.op("mul", g, out)
    if isinstance(scale.type, ArrayType):
        scale = _expand(e, scale, scale.type.ndim, scale.type.ndim + 1)
    return [e.op("mul", scale, swap_last(e, e.op("linalg_inv", a)))]


def _det_jvp(e, tangents, ins, out, attrs):
    (a,), (da,) = ins, tangents
    n = a.type.ndim
    share = e.op("reduce", e.op("mul", swap_last(e, e.op("linalg_inv", a)), da), kind="sum",
                 axis=(n - 2, n - 1), keepdims=False, dtype=None)
    return e.op("mul", out, share)


def _solve_vjp(e, g, ins, out, needs):
    a, b = ins
    vector = b.type.ndim == 1
    adj_b = _solve_vectors(e, swap_last(e, a), g) if vector else \
        e.op("linalg_solve", swap_last(e, a), g)
    adj_a = None
    if needs[0]:
        product = _outer_rows(e, adj_b, out) if vector else _mm(e, adj_b, swap_last(e, out))
        adj_a = e.op("sum_to_like", e.op("neg", product), a)
    return [adj_a, e.op("sum_to_like", adj_b, b) if needs[1] else None]


def _solve_jvp(e, tangents, ins, out, attrs):
    (a, b), (da, db) = ins, tangents
    vector = b.type.ndim == 1
    rhs = db
    if da is not None:
        if vector:
            moved = e.op("array_squeeze", _mm(e, da, _expand(e, out, out.type.ndim)),
                         axes=(out.type.ndim,))
        else:
            moved = _mm(e, da, out)
        rhs = e.op("neg", moved) if rhs is None else e.op("sub", rhs, moved)
    return _solve_vectors(e, a, rhs) if vector else e.op("linalg_solve", a, rhs)


def _lower_half_diagonal(e, x, diagonal: float):
    """x's lower triangle (last two axes), its diagonal times `diagonal`, zero above."""
    dt = x.type.dtype
    n = e.op("array_dim", x, axis=x.type.ndim - 1)
    i = e.op("array_arange", e.const(0, I64), n, e.const(1, I64))
    rows, cols = _expand(e, i, 1), _expand(e, i, 0)
    below = e.op("array_astype", e.op("gt", rows, cols), dtype=dt)
    on = e.op("array_astype", e.op("eq", rows, cols), dtype=dt)
    mask = e.op("add", below, e.op("mul", on, e.const(diagonal, dt)))
    return e.op("mul", x, mask)


def _cholesky_vjp(e, g, ins, out, needs):
    lt = swap_last(e, out)
    t = _mm(e, lt, g)
    lower, strict = _lower_half_diagonal(e, t, 1.0), _lower_half_diagonal(e, t, 0.0)
    mid = e.op("mul", e.op("add", lower, swap_last(e, strict)), e.const(0.5, t.type.dtype))
    inverse = e.op("linalg_inv", out)
    return [_mm(e, swap_last(e, inverse), mid, inverse)]


def _cholesky_jvp(e, tangents, ins, out, attrs):
    inverse = e.op("linalg_inv", out)
    inner = _mm(e, inverse, tangents[0], swap_last(e, inverse))
    return _mm(e, out, _lower_half_diagonal(e, inner, 0.5))


def _batch_shape(node, table):
    return table.shape(node.inputs[0])[:-2]


def _solve_shape(node, table):
    from ..shape_algebra import broadcast

    a, b = (table.shape(v) for v in node.inputs)
    if len(b) == 1:
        return a[:-1]
    batch = broadcast([a[:-2], b[:-2]], max(len(a), len(b)) - 2)
    return (*batch, a[-2], b[-1])


def _solve_batch(b, node, ins, batched):
    """A stack of systems: the batch axis leads the stack axes. A vector b per example is
    a column (NumPy takes a 1-d b only as one vector), a smaller operand gets unit stack
    axes after the batch axis so that the stacks broadcast as each example's do."""
    (a, rhs), (fa, fb) = ins, batched
    ra, rb = node.inputs[0].type.ndim, node.inputs[1].type.ndim
    if rb == 1 and not fb:
        return each(b.op("linalg_solve", a, rhs))
    if rb == 1:
        column = b.op("array_expand_dims", rhs, axes=tuple(range(1, ra - 1)) + (ra,))
        x = b.op("linalg_solve", with_rank(b, a, ra) if fa else a, column)
        return each(b.op("array_squeeze", x, axes=(x.type.ndim - 1,)))
    rank = max(ra, rb)
    operands = [with_rank(b, v, rank) if f else v for v, f in ((a, fa), (rhs, fb))]
    return each(b.op("linalg_solve", *operands))


_TRAITS = ("raises", "allocates", "reads")
_def("linalg_solve", 2, solve_rule, py_solve, {"*": Routine("linalg_solve")}, _TRAITS,
     vjp=_solve_vjp, jvp=_solve_jvp, shape=_solve_shape, batch=_solve_batch,
     doc="np.linalg.solve(a, b) through LAPACK gesv; stacks of matrices")
_def("linalg_inv", 1, square_rule("inv"), py_inv, {"*": Routine("linalg_inv")}, _TRAITS,
     vjp=_inv_vjp, jvp=_inv_jvp, shape=lambda node, table: table.shape(node.inputs[0]),
     batch=same_op,
     doc="np.linalg.inv(a) through LAPACK gesv; stacks of matrices")
_def("linalg_det", 1, det_rule, py_det, {"*": Routine("linalg_det")}, _TRAITS,
     vjp=_det_vjp, jvp=_det_jvp, shape=_batch_shape, batch=same_op,
     doc="np.linalg.det(a) through LAPACK getrf (NumPy's sign * exp(logdet)); stacks")
_def("linalg_cholesky", 1, square_rule("cholesky"), py_cholesky,
     {"*": Routine("linalg_cholesky")}, _TRAITS,
     vjp=_cholesky_vjp, jvp=_cholesky_jvp, shape=lambda node, table: table.shape(node.inputs[0]),
     batch=same_op,
     doc="np.linalg.cholesky(a): the lower factor, through LAPACK potrf; stacks of matrices")
