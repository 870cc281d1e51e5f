"""NumPy's selections by index and condition, made of the indexing primitives by type
inference (`array_function`, shape_functions.py):

| function | made of |
|---|---|
| `np.take(a, indices, axis, mode)`, `x.take` | `array_index` along `axis` (of `ravel(a)` without one) |
| `np.compress(condition, a, axis)`, `x.compress` | `gather` of the rows of `nonzero(condition)` |
| `np.diagonal(a, offset, axis1, axis2)`, `x.diagonal` | `diag` of the matrix (a view) |
| `x.item()`, `x.item(i, j, ...)`, `x.flat[i]` | `array_get` (a flat i: its axis indices, `flat_element`) |

np.take copies (an int index of an n-d array makes a view, copied); x.item() gives
Python's scalar (`python_scalar`). So their numbers, IndexErrors and derivatives are those
of the primitives. `mode='wrap'` and `'clip'` map the indices into range first (`mod`,
`clip`), as NumPy does. NumPy's np.compress is np.take of the nonzero positions, so a
condition longer than the axis is an IndexError only where it selects past the end, and
a shorter one selects among the first elements. Each function takes `em`,
shape_functions' emitter of typed nodes.
"""
from __future__ import annotations

from ..core import Value
from ..types import BOOL, C128, F64, I64, ArrayType, ScalarType, is_numeric
from .indexing import is_int_array

ITEM_SIZE = "can only convert an array of size 1 to a Python scalar"
TAKE_MODES = ("raise", "wrap", "clip")
DIAGONAL_ND = ("np.diagonal() of an array of more than 2 dimensions is not supported yet: "
               "its result is a view no compiled primitive makes")


def take(em, a: Value, indices: Value, axis, mode: str) -> Value:
    """np.take: `a[..., indices]` along `axis` (of the flattened `a` when None), a new
    array (NumPy's take copies; an int index of an n-d array takes a view, copied)."""
    a = em.as_array(a)
    if mode not in TAKE_MODES:
        em.fail(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    if axis is None:
        a, axis = em.ravel(a), 0
    axis = em.axis(axis, a.type.ndim)
    if indices.type == BOOL or (isinstance(indices.type, ArrayType)
                                and indices.type.dtype == BOOL):
        indices = em.astype(indices, I64) if isinstance(indices.type, ArrayType) \
            else em.op("cast", indices, to=I64)  # NumPy's take reads bools as 0 and 1
    if not (indices.type == I64 or is_int_array(indices.type)):
        em.fail(f"np.take() needs integer indices, got {indices.type}",
                "convert them first: indices.astype(np.int64)")
    if mode != "raise":
        indices = _into_range(em, indices, em.dim(a, axis), mode)
    along = ("s000",) * axis + ("i",)  # a[:, ..., indices] with indices at `axis`
    if isinstance(indices.type, ArrayType):
        return em.op("array_index", a, indices, spec=along)
    if a.type.ndim == 1:
        return em.op("array_get", a, indices)  # the element, a NumPy scalar
    return em.op("array_copy", em.op("array_index", a, indices, spec=along))


def _into_range(em, indices: Value, length: Value, mode: str) -> Value:
    """mode 'wrap': the indices modulo the axis's length; 'clip': clipped to [0, length - 1].
    An empty axis stays an IndexError (an index 0 outside it), as NumPy's."""
    if mode == "wrap":
        return em.op("mod", indices, em.op("max", length, em.const(1)))
    last = em.op("sub", length, em.const(1))
    if isinstance(indices.type, ArrayType):
        return em.op("numpy_clip", indices, em.const(0), last, numpy=True)
    return em.op("max", em.const(0), em.op("min", indices, last))


def compress(em, condition: Value, a: Value, axis) -> Value:
    """np.compress: np.take of the positions where `condition` (1-d) is nonzero."""
    if not isinstance(condition.type, ArrayType) or condition.type.ndim != 1:
        em.fail("condition must be a 1-d array", "pass a 1-d array of bools")
    rows = em.op("nonzero", condition)
    positions = em.op("array_view", rows, em.const(0), spec=("i",))
    return take(em, a, positions, axis, "raise")


def diagonal(em, a: Value, offset: Value | None, axis1, axis2) -> Value:
    """np.diagonal of a 2-d array: `diag`'s view of the matrix (transposed when axis1 is
    after axis2; offset None: 0). NumPy's view is read-only; this one is not
    (docs/arrays.md)."""
    a = em.as_array(a)
    offset = em.const(0) if offset is None else offset
    n = a.type.ndim
    if n < 2:
        em.fail("diag requires an array of at least two dimensions")
    axis1, axis2 = em.axis(axis1, n, "axis1: "), em.axis(axis2, n, "axis2: ")
    if axis1 == axis2:
        em.fail("axis1 and axis2 cannot be the same")
    if n > 2:
        em.fail(DIAGONAL_ND, "take np.diagonal of each matrix, or write the loop")
    if offset.type != I64:
        em.fail(f"the offset of np.diagonal() must be an int, got {offset.type}")
    matrix = a if axis1 < axis2 else em.op("array_transpose", a)
    return em.op("diag", matrix, offset)


FLAT_USES = ("item", "copy", "iterate")
"""How compiled code takes an array's `x.flat`: indexed by one value (`x.flat[i]`,
`x.flat[idx]`), indexed so that several elements may be selected (`x.flat[a:b]`,
"copy": NumPy copies them) or iterated; not kept as a value nor written through."""
FLAT_REFUSED = ("x.flat of an array can be indexed (x.flat[i], x.flat[a:b]) and iterated "
                "(for e in x.flat) in compiled code, not kept or written")
FLAT_OUT_OF_BOUNDS = "index out of bounds for the size of the flattened array"


def flat(em, x: Value, index: Value | None, use: str) -> Value:
    """`x.flat[index]` (use "item"), `x.flat` to be sliced ("copy") or iterated: an
    element read at its C-order position (`flat_element`) for an int, else of
    ravel(x) (a view of C-contiguous x, else a copy), copied for "copy"."""
    if use not in FLAT_USES:
        em.fail(FLAT_REFUSED, "read x.ravel(), and write x's elements by x's indices")
    if use == "item" and is_numeric(index.type) and index.type.is_int and index.type != BOOL:
        return flat_element(em, x, em.op("cast", index, to=I64) if index.type != I64 else index)
    if use == "copy":
        x = em.op("array_copy", x)
    flattened = em.ravel(x)
    return flattened if use != "item" else em.op("array_index", flattened, index, spec=("i",))


def flat_element(em, x: Value, i: Value) -> Value:
    """x's element at C-order position i (negative from the end): x[i] of a 1-d array,
    else IndexError outside [-size, size), then the index of each axis by // and %."""
    if x.type.ndim == 1:
        return em.op("array_get", x, i)
    size = em.op("array_size", x)
    i = em.op("select", em.op("lt", i, em.const(0)), em.op("add", i, size), i)
    outside = em.op("bitor", em.op("lt", i, em.const(0)), em.op("ge", i, size))
    em.raise_if(outside, "IndexError", FLAT_OUT_OF_BOUNDS)
    indices = []
    for k in reversed(range(x.type.ndim)):  # C order: the last axis varies fastest
        length = em.dim(x, k)
        indices.append(em.op("mod", i, length))
        i = em.op("floordiv", i, length)
    return em.op("array_get", x, *reversed(indices))


def python_scalar(t: ScalarType) -> ScalarType:
    """The Python type x.item() gives for an element of type t: bool, int, float or complex."""
    return BOOL if t == BOOL else C128 if t.is_complex else F64 if t.is_float else I64


def item(em, x: Value, indices: list[Value]) -> Value:
    """x.item(*indices) as NumPy's: no index, the one element (ValueError unless x has
    size 1); one, the element at that flat (C-order) position; one per axis, x[i, j, ...].
    A Python scalar (a uint64 above 2**63 - 1 wraps to a negative int: compiled code's int
    is int64)."""
    if not isinstance(x.type, ArrayType):
        if not is_numeric(x.type):
            em.fail(f"item() of {x.type} is not supported")
        return em.op("cast", x, to=python_scalar(x.type))
    for i in indices:
        if i.type not in (I64, BOOL):
            em.fail(f"the indices of item() must be ints, got {i.type}",
                    "pass each index as an int: x.item(i, j)")
    if not indices:
        size = em.op("array_size", x)
        em.raise_if(em.op("ne", size, em.const(1)), "ValueError", ITEM_SIZE)
        indices = [em.const(0)]
    if len(indices) == 1:
        element = flat_element(em, x, indices[0])
    elif len(indices) == x.type.ndim:
        element = em.op("array_get", x, *indices)
    else:
        em.fail("incorrect number of indices for array (NumPy's ValueError)",
                f"pass no index, one flat index or {x.type.ndim}")
    return em.op("cast", element, to=python_scalar(x.type.dtype))
