"""NumPy's matrix functions made of primitives by type inference: the frontend lowers each
call to one `linalg_function {function, ...}` node (its arrays the inputs, its
compile-time arguments attrs), replaced here (`expand`) as NumPy defines the function:

- `np.dot(a, b)`: a number: `a * b`; 1-d/2-d: `matmul {kind="dot"}`; N-d: reshapes
  around a 2-d `matmul` (a's last axis with b's second-to-last).
- `np.outer(a, b)`: `ravel(a)[:, None] * ravel(b)[None, :]`.
- `np.trace(a, offset, axis1, axis2, dtype)`: 2-d: `sum(diag(a, offset))`; N-d:
  `sum(a * eye)` over the last two axes after moving axis1, axis2 there.
- `np.einsum(subscripts, *operands)`: each operand summed over the letters used nowhere
  else; then left to right, each pair a broadcast multiply (no letter summed) or a
  (batched) `matmul` between transposes and reshapes; a final transpose.
- `np.linalg.norm(x, ord, axis, keepdims)`: without axis, of ord None (any x), 'fro' (a
  matrix) or 2 (a vector), as NumPy: `sqrt(v @ v)` of `v = ravel(x)`, BLAS's dot (of a
  complex v, its real and imaginary parts' dots added), so the same BLAS call on the same
  vector gives NumPy's bits. NumPy ravels in memory order ('K'), compiled code in C
  order (strides are known at run time only): of an array not in C order (Fortran
  order, a transpose) the same sum in another order. Otherwise reductions:
  `sqrt(sum(|x|^2))` (None, 2 of vectors, 'fro'), `max/min(abs)` (inf, -inf),
  `sum(abs)` (1), `sum(x != 0)` (0), `sum(abs ** p) ** (1/p)`; a matrix's 1, -1, inf,
  -inf as NumPy (sums, then max/min).
- `np.linalg.solve/inv/det/cholesky`: ops/lapack.py's primitives, ints and bools first
  converted to float64.

Refused at compile time, with what to write instead: einsum's `...`, a letter repeated in
one operand (a diagonal), subscripts that do not match the operands; norm's ord 2, -2
and 'nuc' of matrices (they need an SVD); N-d np.dot of a number with ... (it is
`a * b`). Shape errors that only the run time sees are NumPy's ValueError (the
reshaped sizes may appear in np.dot's message).
"""
from __future__ import annotations

from ..types import BOOL, C64, C128, F32, F64, I64, ArrayType, ScalarType, strong
from .declare import _def
from .shape_functions import _Emitter as Emitter
from .shape_functions import extremum
from .table import OpTypeError, Refused

_RESOLVED = "np.dot(), np.einsum(), np.linalg.* calls are replaced by primitives in type inference"


def _product(em: Emitter, dims):
    total = em.const(1)
    for d in dims:
        total = em.op("mul", total, d)
    return total


def _float(em: Emitter, x, dtype=None):
    """x as float (ints and bools become float64, as NumPy's linalg converts them)."""
    x = em.as_array(x)
    target = dtype or (x.type.dtype if x.type.dtype in (F32, F64) else F64)
    return em.astype(x, target)


# ---- products ---------------------------------------------------------------------------

def dot(em: Emitter, a, b):
    if not isinstance(a.type, ArrayType) or not isinstance(b.type, ArrayType) \
            or a.type.ndim == 0 or b.type.ndim == 0:
        return em.op("mul", a, b)
    if max(a.type.ndim, b.type.ndim) <= 2 or b.type.ndim == 1:
        return em.op("matmul", a, b, kind="dot" if max(a.type.ndim, b.type.ndim) <= 2
                     else "matmul")
    # sum over a's last axis and b's second-to-last: (P, k) @ (k, Q), reshaped back
    a_dims, b_dims = em.dims(a), em.dims(b)
    nb = b.type.ndim
    moved = em.op("array_permute", b, axes=(nb - 2, *range(nb - 2), nb - 1))
    left = em.reshape(a, [_product(em, a_dims[:-1]), a_dims[-1]])
    right = em.reshape(moved, [b_dims[-2], _product(em, b_dims[:-2] + b_dims[-1:])])
    product = em.op("matmul", left, right, kind="dot")
    return em.reshape(product, a_dims[:-1] + b_dims[:-2] + b_dims[-1:])


def outer(em: Emitter, a, b):
    column = em.op("array_expand_dims", em.ravel(a), axes=(1,))
    row = em.op("array_expand_dims", em.ravel(b), axes=(0,))
    return em.op("mul", column, row)


def trace(em: Emitter, a, offset, axis1, axis2, dtype):
    a = em.as_array(a)
    if a.type.ndim < 2:
        em.fail("diag requires an array of at least two dimensions")
    n = a.type.ndim
    axis1, axis2 = em.axis(axis1, n, "axis1: "), em.axis(axis2, n, "axis2: ")
    if axis1 == axis2:
        em.fail("axis1 and axis2 cannot be the same")
    if not isinstance(offset, int):
        em.fail(f"the offset of np.trace() must be an int, got {offset!r}")
    attrs = {"kind": "sum", "keepdims": False, "dtype": dtype}
    if n == 2:
        matrix = a if (axis1, axis2) == (0, 1) else em.op("array_transpose", a)
        return em.op("reduce", em.op("diag", matrix, em.const(offset)), axis=None, **attrs)
    rest = tuple(k for k in range(n) if k not in (axis1, axis2))
    moved = em.op("array_permute", a, axes=(*rest, axis1, axis2))
    eye = em.op("eye", em.dim(moved, n - 2), em.dim(moved, n - 1), em.const(offset),
                dtype=a.type.dtype if a.type.dtype != BOOL else I64)
    return em.op("reduce", em.op("mul", moved, eye), axis=(n - 2, n - 1), **attrs)


# ---- norms ------------------------------------------------------------------------------

def _reduce(em: Emitter, x, kind: str, axes, keepdims: bool):
    return em.op("reduce", x, kind=kind, axis=axes, keepdims=keepdims, dtype=None)


def _largest(em: Emitter, magnitudes, kind: str, axes, keepdims: bool):
    """The max (or min) of non-negative `magnitudes` along `axes`: NumPy's norms take the max
    with `initial=0`, so an empty axis gives 0 (a NaN still propagates), and the min without,
    so an empty axis raises NumPy's ValueError."""
    if kind == "max":
        return extremum(em, magnitudes, em.const(0), "max", axes, keepdims)
    return _reduce(em, magnitudes, kind, axes, keepdims)


def _two_norm(em: Emitter, x, axes, keepdims: bool):
    """sqrt(sum(|x|^2)): of a complex x, |x|^2 is real(x)^2 + imag(x)^2 (NumPy's)."""
    if x.type.dtype.is_complex:
        re, im = em.op("real", x), em.op("imag", x)
        squares = em.op("add", em.op("mul", re, re), em.op("mul", im, im))
    else:
        squares = em.op("mul", x, x)
    return em.op("sqrt", _reduce(em, squares, "sum", axes, keepdims))


def _dot_norm(em: Emitter, x, keepdims: bool):
    """sqrt(v @ v) of v = ravel(x), BLAS's dot as NumPy's (of a complex v, the dots of its
    real and imaginary parts, strided views, added).

    BLAS sums a strided vector in another order than a contiguous one, so v must be the
    contiguous vector NumPy's ravel gives: a vector is raveled as a (1, n) row, since the
    shapes pass takes a vector's own ravel, only read, for the vector itself."""
    row = em.op("array_expand_dims", x, axes=(0,)) if x.type.ndim == 1 else x
    flat = em.ravel(row)
    if flat.type.dtype.is_complex:
        re, im = em.op("real", flat), em.op("imag", flat)
        squares = em.op("add", em.op("matmul", re, re, kind="dot"),
                        em.op("matmul", im, im, kind="dot"))
    else:
        squares = em.op("matmul", flat, flat, kind="dot")
    root = em.op("sqrt", squares)
    if not keepdims or x.type.ndim == 0:
        return root
    return em.op("array_new", *[em.const(1)] * x.type.ndim, root, dtype=root.type, fill="value")


def norm(em: Emitter, x, ord, axis, keepdims: bool):
    """NumPy's norm, of the float type NumPy gives (a complex's real one)."""
    x = em.as_array(x)
    x = x if x.type.dtype.is_complex else _float(em, x)
    n = x.type.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and n == 2) or (ord == 2 and n == 1):
            return _dot_norm(em, x, keepdims)
        if n not in (1, 2):
            em.fail("Improper number of dimensions to norm.")
        axis = tuple(range(n))
    axes = tuple(em.axis(a, n) for a in (axis if isinstance(axis, tuple) else (axis,)))
    if len(axes) == 1:
        return _vector_norm(em, x, ord, axes, keepdims)
    if len(axes) != 2 or axes[0] == axes[1]:
        em.fail("Duplicate axes given." if len(axes) == 2 else "Improper number of dimensions to norm.")
    return _matrix_norm(em, x, ord, axes, keepdims)


def _vector_norm(em: Emitter, x, ord, axes, keepdims: bool):
    inf = float("inf")
    if ord is None or ord == 2:
        return _two_norm(em, x, axes, keepdims)
    if isinstance(ord, str) or isinstance(ord, bool):
        em.fail(f"Invalid norm order '{ord}' for vectors")
    if ord in (inf, -inf):
        return _largest(em, em.op("abs", x), "max" if ord > 0 else "min", axes, keepdims)
    if ord == 0:
        real = {C64: F32, C128: F64}.get(x.type.dtype, x.type.dtype)
        nonzero = em.astype(em.op("ne", x, em.const(0.0)), real)
        return _reduce(em, nonzero, "sum", axes, keepdims)
    if ord == 1:
        return _reduce(em, em.op("abs", x), "sum", axes, keepdims)
    p = float(ord)
    powered = em.op("pow", em.op("abs", x), em.const(p))
    return em.op("pow", _reduce(em, powered, "sum", axes, keepdims), em.const(1.0 / p))


def _matrix_norm(em: Emitter, x, ord, axes, keepdims: bool):
    inf = float("inf")
    row, col = axes
    if ord in (None, "f", "fro"):
        return _two_norm(em, x, tuple(sorted(axes)), keepdims)
    if ord in (2, -2, "nuc"):
        em.fail(f"np.linalg.norm(x, ord={ord!r}) of a matrix needs its singular values, which "
                "compiled code does not compute yet", "compute it outside the compiled function")
    if ord not in (1, -1, inf, -inf) or isinstance(ord, bool):
        em.fail("Invalid norm order for matrices.")
    absx = em.op("abs", x)
    kind = "max" if ord > 0 else "min"
    summed, last = (row, col) if ord in (1, -1) else (col, row)
    if keepdims:  # the axes stay where they are
        return _largest(em, _reduce(em, absx, "sum", (summed,), True), kind, (last,), True)
    last -= last > summed
    return _largest(em, _reduce(em, absx, "sum", (summed,), False), kind, (last,), False)


# ---- LAPACK functions ---------------------------------------------------------------------

def _matrices(em: Emitter, a, name: str):
    a = _float(em, a)
    if a.type.ndim < 2:
        em.fail(f"{a.type.ndim}-dimensional array given. Array must be at least "
                f"two-dimensional", f"np.linalg.{name}() takes a matrix or a stack of them")
    return a


def solve(em: Emitter, a, b):
    a, b = em.as_array(a), em.as_array(b)
    dtype = F32 if a.type.dtype == F32 and b.type.dtype == F32 else F64
    a = _matrices(em, _float(em, a, dtype), "solve")
    b = _float(em, b, dtype)
    if b.type.ndim == 0:
        em.fail("0-dimensional array given. Array must be at least one-dimensional")
    return em.op("linalg_solve", a, b)


def cholesky(em: Emitter, a, upper: bool):
    """The lower factor; upper=True: the upper factor of a's upper triangle, the transpose
    of the lower factor of a.T (NumPy reads the upper triangle then)."""
    a = _matrices(em, a, "cholesky")
    if not upper:
        return em.op("linalg_cholesky", a)
    n = a.type.ndim
    swap = (*range(n - 2), n - 1, n - 2)
    factor = em.op("linalg_cholesky", em.op("array_permute", a, axes=swap))
    return em.op("array_permute", factor, axes=swap)


# ---- einsum -----------------------------------------------------------------------------

def parse_einsum(em: Emitter, subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """The operands' letters and the output's; compile errors for what is not lowered."""
    text = subscripts.replace(" ", "")
    if "." in text:
        em.fail("np.einsum() with '...' is not supported yet",
                "name every axis with a letter: np.einsum('bij,bjk->bik', a, b)")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        em.fail("more operands provided to einstein sum function than specified in the "
                "subscripts string" if len(ndims) > len(terms) else
                "fewer operands provided to einstein sum function than specified in the "
                "subscripts string")
    for term, ndim in zip(terms, ndims):
        if not all(c.isalpha() for c in term):
            em.fail(f"invalid subscript in einstein sum subscripts string: '{subscripts}'")
        if len(term) != ndim:
            em.fail(f"operand has {'more' if ndim > len(term) else 'fewer'} dimensions than "
                    "subscripts given in einstein sum")
        if len(set(term)) != len(term):
            em.fail("np.einsum() with a letter repeated in one operand (a diagonal) is not "
                    "supported yet", "take the diagonal first: np.diagonal / np.trace")
    if not arrow:
        counts = {c: inputs.count(c) for c in set(inputs) if c.isalpha()}
        output = "".join(sorted(c for c, k in counts.items() if k == 1))
    if len(set(output)) != len(output) or any(c not in inputs for c in output):
        em.fail(f"einstein sum subscripts string included output subscript(s) not in the "
                f"inputs or repeated: '{output}'")
    return terms, output


def _sum_out(em: Emitter, x, letters: str, keep: set) -> tuple:
    """x summed over its letters not in `keep`."""
    gone = tuple(k for k, c in enumerate(letters) if c not in keep)
    if not gone:
        return x, letters
    return (_reduce(em, x, "sum", gone, False),
            "".join(c for c in letters if c in keep))


def _arrange(em: Emitter, x, letters: str, order: str):
    if letters == order:
        return x
    return em.op("array_permute", x, axes=tuple(letters.index(c) for c in order))


def _contract(em: Emitter, x, xs: str, y, ys: str, keep: set):
    """x, y with letters xs, ys contracted into the letters of `keep` they have."""
    x, xs = _sum_out(em, x, xs, keep | set(ys))
    y, ys = _sum_out(em, y, ys, keep | set(xs))
    if not xs or not ys:  # one of them summed to a number
        return em.op("mul", x, y), xs + ys
    batch = "".join(c for c in xs if c in ys and c in keep)
    summed = "".join(c for c in xs if c in ys and c not in keep)
    x_free = "".join(c for c in xs if c not in ys)
    y_free = "".join(c for c in ys if c not in xs)
    if not summed:  # a broadcast multiply: y's own axes after x's
        x = em.op("array_expand_dims", _arrange(em, x, xs, batch + x_free),
                  axes=tuple(range(len(batch + x_free), len(batch + x_free + y_free))))
        y = em.op("array_expand_dims", _arrange(em, y, ys, batch + y_free),
                  axes=tuple(range(len(batch), len(batch + x_free))))
        return em.op("mul", x, y), batch + x_free + y_free
    x = _arrange(em, x, xs, batch + x_free + summed)
    y = _arrange(em, y, ys, batch + summed + y_free)
    if not batch and not x_free and not y_free:
        return em.op("matmul", em.ravel(x), em.ravel(y)), ""
    xd, yd = em.dims(x), em.dims(y)
    nb, nx = len(batch), len(x_free)
    size = lambda dims: _product(em, dims)  # noqa: E731
    left = em.reshape(x, xd[:nb] + [size(xd[nb:nb + nx]), size(xd[nb + nx:])])
    right = em.reshape(y, yd[:nb] + [size(yd[nb:nb + len(summed)]), size(yd[nb + len(summed):])])
    product = em.op("matmul", left, right)
    return em.reshape(product, xd[:nb + nx] + yd[nb + len(summed):]), batch + x_free + y_free


def einsum(em: Emitter, subscripts: str, operands: list):
    operands = [em.as_array(x) for x in operands]
    if not operands:
        em.fail("No input operands")
    terms, output = parse_einsum(em, subscripts, [x.type.ndim for x in operands])
    value, letters = operands[0], terms[0]
    rest = list(zip(operands[1:], terms[1:]))
    later = set(output).union(*terms[1:])
    value, letters = _sum_out(em, value, letters, later)
    for k, (y, ys) in enumerate(rest):
        keep = set(output).union(*terms[k + 2:])
        value, letters = _contract(em, value, letters, y, ys, keep)
    value, letters = _sum_out(em, value, letters, set(output))
    if not isinstance(value.type, ArrayType):
        return value
    if value.type.ndim == 0 and not output:
        return value
    return _arrange(em, value, letters, output)


# ---- the node ---------------------------------------------------------------------------

def _expand(inference, node, inputs, out):
    em = Emitter(inference, node, out)
    at = node.attrs
    function = at["function"]
    if function == "dot":
        result = dot(em, *inputs)
    elif function == "outer":
        result = outer(em, *inputs)
    elif function == "trace":
        result = trace(em, inputs[0], at["offset"], at["axis1"], at["axis2"], at.get("dtype"))
    elif function == "einsum":
        result = einsum(em, at["subscripts"], inputs)
    elif function == "linalg.norm":
        result = norm(em, inputs[0], at["ord"], at["axis"], bool(at["keepdims"]))
    elif function == "linalg.solve":
        result = solve(em, *inputs)
    elif function == "linalg.cholesky":
        result = cholesky(em, inputs[0], bool(at["upper"]))
    else:
        name = function.partition(".")[2]
        result = em.op(f"linalg_{name}", _matrices(em, inputs[0], name))
    if isinstance(result.type, ScalarType) and not result.type.strong:
        result = em.op("cast", result, to=strong(result.type))  # NumPy's is a NumPy scalar
    result.name = result.name or node.outputs[0].name
    return [result]


def _function_rule(types, attrs):
    raise OpTypeError(_RESOLVED)


def py_linalg_function(*inputs, function, **statics):
    """The call itself, NumPy's (the interpreter's, on untyped IR)."""
    import numpy

    if function == "einsum":
        return numpy.einsum(statics["subscripts"], *inputs)
    module, _, name = function.rpartition(".")
    return getattr(numpy.linalg if module else numpy, name)(*inputs, **statics)


_def("linalg_function", -1, _function_rule, py_linalg_function, {"*": Refused(_RESOLVED)},
     ("raises",), no_vjp="type inference replaces it by the primitives it is made of",
     expand=_expand, cuda=Refused(_RESOLVED),
     doc="np.dot/outer/trace/einsum/linalg.norm/solve/inv/det/cholesky(...): replaced by "
         "primitives in type inference (ops/linalg_functions.py)")

