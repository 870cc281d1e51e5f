"""Advanced indexing primitives: gathers and scatters by integer arrays, selections by
boolean masks (NumPy semantics; docs/arrays.md 'Indexing').

Type inference makes them from subscripts (advanced_index.py), after the basic part of
the index (slices, `None`, `...`) became views, so each op sees the advanced indices
applied to consecutive axes `axis, axis + 1, ...` of its array:

- `gather x, *idx {axis, axes}`: `x[:, ..., idx_0, idx_1, ...]` with the indices at axes
  `axis ...`: a new C-contiguous array of shape `x.shape[:axis] + B + x.shape[axis+k:]`,
  `B` the shape of the index arrays (type inference broadcast them to one shape; an
  index may also be an int, the same for every element). Negative indices count from
  the end; one outside its axis raises NumPy's IndexError, which names `axes[j]`, the
  axis of the array the user indexed. Linear in `x`; its adjoint is `gather_adjoint`.
- `gather_adjoint g, x, *idx {axis, axes}`: zeros of `x`'s shape with `g` added at the
  gathered places, every occurrence of a repeated index adding (`np.add.at`): the
  scatter-add that is a gather's VJP. Indices already checked by the gather.
- `scatter x, v, *idx {axis, axes, accumulate}`: `x[..., idx, ...] = v` (the last of
  repeated indices wins, as in NumPy, elements written in C order), or with
  `accumulate` `np.add.at(x, (..., idx, ...), v)`. `v` is a number or an array of the
  gather's result shape (a broadcast view), of `x`'s dtype. Checked as `gather` is.
- `compress x, m {axis}`: `x[:, ..., m]`, `m` a bool array over axes `axis ...
  axis + m.ndim - 1`, which it must match exactly (NumPy's IndexError otherwise): the
  selected elements in C order along one new axis (its length known at run time).
  Its adjoint is `compress_adjoint`.
- `compress_adjoint g, m, x {axis}`: zeros of `x`'s shape with `g` at the places `m`
  selects.
"""
from __future__ import annotations

from ..core import Value
from ..types import BOOL, I64, NONE, ArrayType
from .batching import SHAPE_PER_EXAMPLE, NotBatchable, as_batched, dims, each, with_rank
from .declare import _def
from .table import OpTypeError, Routine
from .vjp import tangent_of_first, with_attrs

MASK_MISMATCH = ("boolean index did not match indexed array along axis {axis}; size of axis is "
                 "{size} but size of corresponding boolean axis is {mask}")
OUT_OF_BOUNDS = "index {index} is out of bounds for axis {axis} with size {size}"


def _numpy():
    import numpy

    return numpy


def is_int_array(t) -> bool:
    """An array that indexes (an int dtype; not bool, not float)."""
    return isinstance(t, ArrayType) and t.dtype != BOOL and t.dtype.is_int


def _index_ndim(x: ArrayType, indices, axis: int, what: str) -> int:
    """The ndim of the index arrays (all of one shape), after checking the operands."""
    if not isinstance(x, ArrayType):
        raise OpTypeError(f"{what} needs an array, got {x}")
    arrays = [t for t in indices if isinstance(t, ArrayType)]
    if not arrays or any(not is_int_array(t) for t in arrays) \
            or any(t != I64 for t in indices if not isinstance(t, ArrayType)):
        raise OpTypeError(f"{what} needs integer arrays (and ints), got "
                          f"{', '.join(map(str, indices))}")
    if len({t.ndim for t in arrays}) != 1 or axis + len(indices) > x.ndim:
        raise OpTypeError(f"{what} of {x}: indices {', '.join(map(str, indices))} at axis {axis}")
    return arrays[0].ndim


def _result(x: ArrayType, indices, axis: int, what: str) -> ArrayType:
    b = _index_ndim(x, indices, axis, what)
    return ArrayType(x.dtype, x.ndim - len(indices) + b)


def gather_rule(types, attrs):
    x, *indices = types
    return list(types), _result(x, indices, attrs["axis"], "an integer-array index")


def gather_adjoint_rule(types, attrs):
    g, x, *indices = types
    if not (isinstance(g, ArrayType) and isinstance(x, ArrayType) and g.dtype == x.dtype):
        raise OpTypeError(f"gather_adjoint needs two arrays of one dtype, got {g}, {x}")
    if _result(x, indices, attrs["axis"], "gather_adjoint") != g:
        raise OpTypeError(f"gather_adjoint: {g} is not the gather of {x}")
    return list(types), x


def scatter_rule(types, attrs):
    x, v, *indices = types
    result = _result(x, indices, attrs["axis"], "an integer-array index assignment")
    if v != x.dtype and v != result:
        raise OpTypeError(f"a scatter into {x} needs a {x.dtype} or a {result}, got {v}")
    return list(types), NONE


def compress_rule(types, attrs):
    x, m = types
    if not (isinstance(x, ArrayType) and isinstance(m, ArrayType) and m.dtype == BOOL):
        raise OpTypeError(f"a boolean index needs an array and a bool array, got {x}, {m}")
    if attrs["axis"] + m.ndim > x.ndim or m.ndim == 0:
        raise OpTypeError(f"too many indices for array: array is {x.ndim}-dimensional, but "
                          f"{attrs['axis'] + m.ndim} were indexed")
    return [x, m], ArrayType(x.dtype, x.ndim - m.ndim + 1)


def compress_adjoint_rule(types, attrs):
    g, m, x = types
    if compress_rule([x, m], attrs)[1] != g:
        raise OpTypeError(f"compress_adjoint: {g} is not the selection of {x} by {m}")
    return list(types), x


# ---- reference semantics (the interpreter's) -----------------------------------------------

def check_indices(x, indices, axis: int, axes) -> list:
    """The indices with negative ones counted from the end; NumPy's IndexError naming the
    first index outside its axis (index operands in order, elements in C order). NumPy's
    functions only, which dispatch to CuPy's on the GPU's arrays (backend/cuda/host.py)."""
    np = _numpy()
    fixed = []
    for j, index in enumerate(indices):
        size = x.shape[axis + j]
        index = index if hasattr(index, "ndim") else np.int64(index)
        outside = np.flatnonzero((index.reshape(-1) < -size) | (index.reshape(-1) >= size))
        if outside.size:
            bad = int(index.reshape(-1)[int(outside[0])])
            raise IndexError(OUT_OF_BOUNDS.format(index=bad, axis=axes[j], size=size))
        fixed.append(np.where(index < 0, index + size, index).astype(np.int64))
    return fixed


def _place(indices, axis: int) -> tuple:
    return (slice(None),) * axis + tuple(indices)


def py_gather(x, *indices, axis, axes, boundscheck=True):
    np = _numpy()
    return np.ascontiguousarray(x[_place(check_indices(x, indices, axis, axes), axis)])


def py_gather_adjoint(g, x, *indices, axis, axes):
    np = _numpy()
    out = np.zeros_like(x)
    np.add.at(out, _place(check_indices(x, indices, axis, axes), axis), g)
    return out


def py_scatter(x, v, *indices, axis, axes, accumulate, boundscheck=True):
    np = _numpy()
    place = _place(check_indices(x, indices, axis, axes), axis)
    if accumulate:
        np.add.at(x, place, v)
    else:
        x[place] = v


def check_mask(x, m, axis: int) -> None:
    for k, (size, mask) in enumerate(zip(x.shape[axis:], m.shape)):
        if size != mask:
            raise IndexError(MASK_MISMATCH.format(axis=axis + k, size=size, mask=mask))


def py_compress(x, m, axis):
    np = _numpy()
    check_mask(x, m, axis)
    return np.ascontiguousarray(x[(slice(None),) * axis + (m,)])


def py_compress_adjoint(g, m, x, axis):
    np = _numpy()
    out = np.zeros_like(x)
    out[(slice(None),) * axis + (m,)] = g
    return out


# ---- derivatives ----------------------------------------------------------------------------

@with_attrs
def _gather_vjp(e, g, ins, out, needs, attrs):
    """The cotangent scattered back, repeated indices adding up."""
    return [e.op("gather_adjoint", g, ins[0], *ins[1:], **attrs)] + [None] * len(ins[1:])


@with_attrs
def _gather_adjoint_vjp(e, g, ins, out, needs, attrs):
    return [e.op("gather", g, *ins[2:], **attrs)] + [None] * len(ins[1:])


@tangent_of_first
def _gather_adjoint_jvp(e, tangents, ins, out, attrs):
    return e.op("gather_adjoint", tangents[0], *ins[1:], **attrs)


@with_attrs
def _compress_vjp(e, g, ins, out, needs, attrs):
    return [e.op("compress_adjoint", g, ins[1], ins[0], **attrs), None]


@with_attrs
def _compress_adjoint_vjp(e, g, ins, out, needs, attrs):
    return [e.op("compress", g, ins[1], **attrs), None, None]


@tangent_of_first
def _compress_adjoint_jvp(e, tangents, ins, out, attrs):
    return e.op("compress_adjoint", tangents[0], *ins[1:], **attrs)


# ---- batching rules (ops/batching.py) -------------------------------------------------

def _to_front(b, v: Value, axis: int) -> Value:
    """`v` with its axis `axis` moved to the front (a view)."""
    if axis == 0:
        return v
    order = (axis, *range(axis), *range(axis + 1, v.type.ndim))
    return b.op("array_permute", v, axes=order)


def _from_front(b, v: Value, axis: int) -> Value:
    """`v` with its first axis moved to position `axis` (a view)."""
    if axis == 0:
        return v
    order = (*range(1, axis + 1), 0, *range(axis + 1, v.type.ndim))
    return b.op("array_permute", v, axes=order)


def _batched_indices(b, node, ins, batched, first: int, numbered: bool = True):
    """The indices of a gather-like `node` with a batched one, all of the batch's shape
    (ints that are the same everywhere stay); `numbered`: with one more index first, the
    example's number, and the attrs that place them at the example's `axis`, where the
    batch axis is moved to."""
    operands = list(zip(ins[first:], batched[first:], node.inputs[first:]))
    v, f, example = next((v, f, o.type) for v, f, o in operands if isinstance(o.type, ArrayType))
    shape = [b.size, *dims(b, v)[1 if f else 0:]]
    indices = []
    for v, f, _ in operands:
        if not f and not isinstance(v.type, ArrayType):
            indices.append(v)
            continue
        v = with_rank(b, v, example.ndim) if f else v
        indices.append(b.op("array_broadcast_to", v, *shape))
    if not numbered:
        return indices, node.attrs
    numbers = b.op("array_arange", b.const(0, I64), b.size)
    if example.ndim:
        numbers = b.op("array_expand_dims", numbers, axes=tuple(range(1, 1 + example.ndim)))
    axes = node.attrs["axes"]
    attrs = {**node.attrs, "axes": (axes[0], *axes)}
    return [b.op("array_broadcast_to", numbers, *shape), *indices], attrs


def _gather_batch(b, node, ins, batched):
    """Unbatched indices: the gather one axis further in. A batched index into an
    unbatched array: one gather by the batch of indices, whose batch axis lands at `axis`
    (no copy of the array per example to pick from). Into a batched array: the example's
    number as one more index, over the batch axis moved next to the indexed ones."""
    axis = node.attrs["axis"]
    if not any(batched[1:]):
        return each(b.op("gather", ins[0], *ins[1:], **{**node.attrs, "axis": axis + 1}))
    indices, attrs = _batched_indices(b, node, ins, batched, 1, numbered=batched[0])
    if not batched[0]:
        return each(_to_front(b, b.op("gather", ins[0], *indices, **attrs), axis))
    x = _from_front(b, as_batched(b, ins[0], batched[0]), axis)
    return each(_to_front(b, b.op("gather", x, *indices, **attrs), axis))


def _gather_adjoint_batch(b, node, ins, batched):
    """The same places as `_gather_batch`'s, the cotangent's batch axis moved as the
    gather's result had it."""
    axis = node.attrs["axis"]
    g, x = (as_batched(b, v, f) for v, f in zip(ins[:2], batched[:2]))
    if not any(batched[2:]):
        return each(b.op("gather_adjoint", g, x, *ins[2:], **{**node.attrs, "axis": axis + 1}))
    indices, attrs = _batched_indices(b, node, ins, batched, 2)
    out = b.op("gather_adjoint", _from_front(b, g, axis), _from_front(b, x, axis), *indices,
               **attrs)
    return each(_to_front(b, out, axis))


def _scatter_batch(b, node, ins, batched):
    """Into a batch (an unbatched array the function made is copied per example first,
    `Batching.writable`): the value as a batch of the gather's shape (a number stays
    one), placed as `_gather_batch` places a gather."""
    axis, (x, v, *index) = node.attrs["axis"], [b.writable(node.inputs[0]), *ins[1:]]
    if batched[1] and not isinstance(node.inputs[1].type, ArrayType):
        shape = _example_gather_dims(b, node, ins, batched)
        v = b.op("array_broadcast_to", with_rank(b, v, len(shape)), b.size, *shape)
    elif not batched[1] and isinstance(v.type, ArrayType):
        v = b.op("array_broadcast_to", v, b.size, *dims(b, v))
    if not any(batched[2:]):
        return [(b.op("scatter", x, v, *index, **{**node.attrs, "axis": axis + 1}), False)]
    indices, attrs = _batched_indices(b, node, ins, batched, 2)
    if isinstance(v.type, ArrayType):
        v = _from_front(b, v, axis)
    return [(b.op("scatter", _from_front(b, x, axis), v, *indices, **attrs), False)]


def _example_gather_dims(b, node, ins, batched) -> list:
    """The shape of one example's gather by a scatter's indices (ins[2:]), x batched."""
    axis, k = node.attrs["axis"], len(ins) - 2
    x = dims(b, ins[0])[1:]
    v, f = next((v, f) for v, f, o in zip(ins[2:], batched[2:], node.inputs[2:])
                if isinstance(o.type, ArrayType))
    return x[:axis] + dims(b, v)[1 if f else 0:] + x[axis + k:]


def _compress_batch(b, node, ins, batched):
    """One mask for every example: the selection one axis further in. A mask per example
    selects a number of elements per example: NotBatchable (each example's own length)."""
    if batched[1]:
        raise NotBatchable(SHAPE_PER_EXAMPLE.format(what="x[mask] with a mask per example"))
    x, m = ins
    return each(b.op("compress", x, m, axis=node.attrs["axis"] + 1))


def _compress_adjoint_batch(b, node, ins, batched):
    if batched[1]:
        raise NotBatchable(SHAPE_PER_EXAMPLE.format(what="x[mask] with a mask per example"))
    g, m, x = ins
    return each(b.op("compress_adjoint", as_batched(b, g, batched[0]), m,
                     as_batched(b, x, batched[2]), axis=node.attrs["axis"] + 1))


_READS = ("pure", "reads", "allocates", "raises")
_def("gather", -1, gather_rule, py_gather, {"*": Routine("gather")}, (*_READS, "linear"),
     vjp=_gather_vjp, batch=_gather_batch,
     doc="x[..., idx_0, idx_1, ...] at attrs['axis'] (integer arrays of one shape, or ints); "
         "attrs axes (the user's axis of each index, for messages)")
_def("gather_adjoint", -1, gather_adjoint_rule, py_gather_adjoint, {"*": Routine("gather_adjoint")},
     ("pure", "reads", "allocates"), vjp=_gather_adjoint_vjp, jvp=_gather_adjoint_jvp,
     batch=_gather_adjoint_batch,
     doc="zeros like x, np.add.at of g at the gathered places: a gather's adjoint")
_def("scatter", -1, scatter_rule, py_scatter, {"*": Routine("scatter")},
     ("raises", "reads", "writes", "linear"),
     no_vjp="reverse mode handles array writes itself (ad/writes.py, ad/scatters.py)",
     batch=_scatter_batch,
     doc="x[..., idx, ...] = v (attrs accumulate: np.add.at); output none")
_def("compress", 2, compress_rule, py_compress, {"*": Routine("compress")}, (*_READS, "linear"),
     vjp=_compress_vjp, batch=_compress_batch,
     doc="x[..., m] at attrs['axis']: the elements a bool mask selects")
_def("compress_adjoint", 3, compress_adjoint_rule, py_compress_adjoint,
     {"*": Routine("compress_adjoint")}, ("pure", "reads", "allocates"),
     vjp=_compress_adjoint_vjp, jvp=_compress_adjoint_jvp, batch=_compress_adjoint_batch,
     doc="zeros like x with g at the places m selects: a compress's adjoint")

