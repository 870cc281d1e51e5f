"""Sorting and searching: `np.sort`, `np.argsort`, `np.searchsorted`, `np.unique`,
`np.nonzero` (and one-argument `np.where`), and the primitives they are made of.

Primitives (each with NumPy's semantics; the CPU lowerings are backend/llvm/sorting.py,
the GPU runs them in its host program):

- `sort x {axis, kind}`: a new C-contiguous array, `x` sorted along `axis` (an int,
  non-negative; `x` at least 1-d). `kind` is NumPy's: "quicksort" (its default, an
  introsort), "heapsort" or "stable"; the CPU calls NumPy's own kernel of that kind for
  the dtype, so the result is NumPy's bit for bit (NaNs last, the order of -0.0 and 0.0
  as NumPy leaves it). Its adjoint is the cotangent scattered back through the sorting
  permutation (`take_along ... {scatter}` of `argsort x`); its tangent the tangent
  gathered by it.
- `argsort x {axis, kind}`: the int64 indices that sort `x` along `axis`: NumPy's kernel
  of that kind, so ties come out in NumPy's order for every kind (only "stable"
  promises the order of the input). No derivative (an index).
- `take_along x, idx {axis, scatter}`: `np.take_along_axis(x, idx, axis)`, or with
  `scatter` its adjoint: zeros with `out[..., idx[..., j], ...] += x[..., j, ...]`. Only
  derivative code makes it, with `idx` of x's shape (a permutation along the axis).
  Linear in `x`; each form's VJP is the other.
- `searchsorted a, v {side}`: NumPy's binary search of each element of `v` (a number or
  an array) in the 1-d `a`, "left" or "right", compared in the common dtype (NaN
  greatest); int64, of `v`'s shape. No derivative.
- `unique_sorted s`: the 1-d `s` (sorted) without repeats (NaNs are one value, as
  NumPy's `equal_nan=True`); its length is known at run time only. No derivative of
  its own: `np.unique` is this of a `sort`, and the selected elements' adjoints
  would need the positions (refused: see `_unique_vjp`).
- `nonzero x`: a new int64 array of shape (x.ndim, count): row k holds the index along
  axis k of each nonzero element, in C order. No derivative (an index).

`sorting_function {function, ...}` is what the frontend emits for every call here and
for `np.median`/`percentile`/`quantile`; type inference replaces it (`expand`) by
primitives, as ops/shape_functions.py does for the shape functions: `axis=None`
flattens first, `x.sort()` is `x[...] = sort(x)`, `np.nonzero` a tuple of the rows of
`nonzero x`, and the order statistics (ops/order_statistics.py) views of a sort.
"""
from __future__ import annotations

from ..shape_algebra import like
from ..types import I64, ArrayType, ScalarType, is_numeric
from .batching import SHAPE_PER_EXAMPLE, NotBatchable, as_batched, each, ndim
from .declare import _def
from .table import OpTypeError, Routine
from .vjp import with_attrs

KINDS = ("quicksort", "heapsort", "stable")
"""NumPy's sort kinds, in the order of NumPy's kernels (NPY_QUICKSORT, NPY_HEAPSORT,
NPY_STABLESORT); 'mergesort' is 'stable'."""
SIDES = ("left", "right")


def _numpy():
    import numpy

    return numpy


def _sortable(types, what: str) -> ArrayType:
    x = types[0]
    if not isinstance(x, ArrayType):
        raise OpTypeError(f"{what} needs an array here, got {x}")
    return x


def _check_axis(x: ArrayType, attrs) -> None:
    if not 0 <= attrs["axis"] < x.ndim:
        raise OpTypeError(f"axis {attrs['axis']} is out of bounds for array of dimension {x.ndim}")


# ---- sort, argsort ----------------------------------------------------------------------

def sort_rule(types, attrs):
    x = _sortable(types, "np.sort()")
    _check_axis(x, attrs)
    return [x], ArrayType(x.dtype, x.ndim)


def argsort_rule(types, attrs):
    x = _sortable(types, "np.argsort()")
    _check_axis(x, attrs)
    return [x], ArrayType(I64, x.ndim)


def py_sort(x, *, axis: int, kind: str):
    return _numpy().sort(x, axis=axis, kind=kind)


def py_argsort(x, *, axis: int, kind: str):
    return _numpy().argsort(x, axis=axis, kind=kind)


@with_attrs
def _sort_vjp(e, g, ins, out, needs, attrs):
    """The cotangent scattered back to where each sorted element came from; of a complex
    array too (sorted by real, then imaginary part, it is the same permutation)."""
    x = ins[0]
    if not (x.type.dtype.is_float or x.type.dtype.is_complex):
        return [None]
    order = e.op("argsort", x, **attrs)
    return [e.op("take_along", g, order, axis=attrs["axis"], scatter=True)]


def _sort_jvp(e, tangents, ins, out, attrs):
    """The tangent gathered by the sorting permutation."""
    order = e.op("argsort", ins[0], **attrs)
    return e.op("take_along", tangents[0], order, axis=attrs["axis"], scatter=False)


def _along_batch(b, node, ins, batched):
    """Each example sorted (or gathered) along its axis: the batch along that axis + 1."""
    operands = [as_batched(b, v, f) for v, f in zip(ins, batched)]
    return each(b.op(node.op, *operands, **{**node.attrs, "axis": node.attrs["axis"] + 1}))


_def("sort", 1, sort_rule, py_sort, {"*": Routine("sort")},
     ("pure", "reads", "allocates", "raises", "complex_rule"), vjp=_sort_vjp, jvp=_sort_jvp,
     shape=like(0), batch=_along_batch,
     doc="np.sort(x, axis, kind): attrs axis (non-negative int), kind ('quicksort', "
         "'heapsort', 'stable')")
_def("argsort", 1, argsort_rule, py_argsort, {"*": Routine("argsort")},
     ("pure", "reads", "allocates", "raises"), zero_derivative="an index", shape=like(0),
     batch=_along_batch, doc="np.argsort(x, axis, kind): attrs axis (non-negative int), kind")


# ---- take_along (derivative code) ----------------------------------------------------------

def take_along_rule(types, attrs):
    x, idx = types
    if not (isinstance(x, ArrayType) and isinstance(idx, ArrayType) and idx.dtype == I64
            and idx.ndim == x.ndim):
        raise OpTypeError(f"take_along needs an array and int64 indices of its ndim, got {x}, {idx}")
    _check_axis(x, attrs)
    return [x, idx], ArrayType(x.dtype, x.ndim)


def py_take_along(x, idx, *, axis: int, scatter: bool):
    numpy = _numpy()
    if not scatter:
        return numpy.take_along_axis(x, idx, axis=axis)
    out = numpy.zeros(x.shape, x.dtype)
    along = numpy.moveaxis(out, axis, -1)
    rows = numpy.indices(along.shape[:-1]) if along.ndim > 1 else ()
    numpy.add.at(along, (*[r[..., None] for r in rows], numpy.moveaxis(idx, axis, -1)),
                 numpy.moveaxis(x, axis, -1))
    return out


@with_attrs
def _take_along_vjp(e, g, ins, out, needs, attrs):
    """A gather's adjoint is the scatter-add of the cotangent, a scatter's the gather."""
    return [e.op("take_along", g, ins[1], axis=attrs["axis"], scatter=not attrs["scatter"]),
            None]


_def("take_along", 2, take_along_rule, py_take_along, {"*": Routine("take_along")},
     ("pure", "reads", "allocates", "linear"), vjp=_take_along_vjp, shape=like(0),
     batch=_along_batch, doc="np.take_along_axis(x, idx, axis) (scatter: its adjoint): derivative code")


# ---- searchsorted ---------------------------------------------------------------------------

def search_type(a: ScalarType, v: ScalarType) -> ScalarType:
    """The dtype NumPy compares `a`'s and `v`'s elements in."""
    from ..types import NUMPY_DTYPES, NUMPY_NAMES, weak

    name = _numpy().result_type(NUMPY_NAMES[weak(a).name], NUMPY_NAMES[weak(v).name]).name
    if name not in NUMPY_DTYPES:
        raise OpTypeError(f"np.searchsorted() compares in {name}, which compiled code does not have")
    return ScalarType(NUMPY_DTYPES[name])


def searchsorted_rule(types, attrs):
    a, v = types
    if not isinstance(a, ArrayType) or a.ndim != 1:
        raise OpTypeError("object too deep for desired array" if isinstance(a, ArrayType)
                          else f"np.searchsorted() needs a 1-d array to search, got {a}")
    element = v.dtype if isinstance(v, ArrayType) else v
    if not is_numeric(element):
        raise OpTypeError(f"np.searchsorted() needs numbers to look up, got {v}")
    search_type(a.dtype, element)
    if isinstance(v, ArrayType):
        return [a, v], ArrayType(I64, v.ndim)
    return [a, v], I64


def py_searchsorted(a, v, *, side: str):
    found = _numpy().searchsorted(a, v, side=side)
    return found if isinstance(found, _numpy().ndarray) and found.ndim else int(found)


def _searchsorted_batch(b, node, ins, batched):
    """Unbatched `a`: every example's values searched at once (any shape). A batched `a`
    (a sorted row per example): each value's position is the count of the row's
    elements before it, NaN greatest ('left': a < v, 'right': a <= v)."""
    a, v = ins
    if not batched[0]:
        return each(b.op("searchsorted", a, v, **node.attrs))
    rank = ndim(node.inputs[1].type)
    v = as_batched(b, v, batched[1])
    rows = b.op("array_expand_dims", a, axes=tuple(range(1, 1 + rank))) if rank else a
    values = b.op("array_expand_dims", v, axes=(rank + 1,))
    before = b.op("lt" if node.attrs["side"] == "left" else "le", rows, values)
    if values.type.dtype.is_float:
        nan = b.op("isnan", values)
        if node.attrs["side"] == "right":
            before = b.op("bitor", before, nan)
        elif rows.type.dtype.is_float:
            before = b.op("bitor", before, b.op("bitand", nan, b.op("invert", b.op("isnan", rows))))
        else:
            before = b.op("bitor", before, nan)
    count = b.op("reduce", before, kind="sum", axis=(rank + 1,), keepdims=False)
    return each(count if count.type.dtype == I64 else b.op("array_astype", count, dtype=I64))


_def("searchsorted", 2, searchsorted_rule, py_searchsorted, {"*": Routine("searchsorted")},
     ("pure", "reads", "allocates", "numpy_result"), zero_derivative="an index", shape=like(1),
     batch=_searchsorted_batch, doc="np.searchsorted(a, v, side): attrs side ('left', 'right')")


# ---- unique, nonzero ------------------------------------------------------------------------

def unique_rule(types, attrs):
    s = _sortable(types, "np.unique()")
    if s.ndim != 1:
        raise OpTypeError(f"unique_sorted needs a 1-d array, got {s}")
    return [s], s


def py_unique_sorted(s):
    return _numpy().unique(s)


def nonzero_rule(types, attrs):
    x = _sortable(types, "np.nonzero()")
    if x.ndim == 0:
        raise OpTypeError(NONZERO_0D)
    return [x], ArrayType(I64, 2)


def py_nonzero(x):
    numpy = _numpy()
    return numpy.array(numpy.nonzero(x), dtype=numpy.int64).reshape(x.ndim, -1)


NONZERO_0D = ("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() "
              "instead. If the context of this error is of the form `arr[nonzero(cond)]`, just "
              "use `arr[cond]`.")
_UNIQUE = ("the derivative of np.unique() is not supported: differentiate through np.sort() "
           "instead, or wrap the call in astjit.stop_gradient()")
def _values_decide_length(what: str):
    """The rule of an op whose result's length depends on the example's values."""
    def rule(b, node, ins, batched):
        raise NotBatchable(SHAPE_PER_EXAMPLE.format(what=what))
    return rule


_def("unique_sorted", 1, unique_rule, py_unique_sorted, {"*": Routine("unique_sorted")},
     ("pure", "reads", "allocates"), no_vjp=_UNIQUE, batch=_values_decide_length("np.unique"),
     doc="np.unique of a sorted 1-d array: its distinct elements (one NaN)")
_def("nonzero", 1, nonzero_rule, py_nonzero, {"*": Routine("nonzero")},
     ("pure", "reads", "allocates"), zero_derivative="an index",
     batch=_values_decide_length("np.nonzero"),
     doc="np.nonzero(x) as one (x.ndim, count) int64 array: row k the indices along axis k")
