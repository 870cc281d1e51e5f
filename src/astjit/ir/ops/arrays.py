"""Array primitives: element reads and writes, shape queries (NumPy semantics).

Arrays here are strided views of memory someone else may also see, so reads
and writes are ordered effects: `array_get` and `array_set` are never merged,
moved or dropped by the passes (a read's bounds check must still raise). Shape
queries are pure: an array's shape never changes.

Indices are int64; a negative index counts from the end, and an index outside
the axis raises IndexError as NumPy does ("index 5 is out of bounds for axis 0
with size 5"), unless the node's attrs say `boundscheck=False`. `inbounds=True`
(passes/versioning.py) says a check before the loop proved every index within
`[0, size)` of its axis: neither the negative-index rule nor the check is
compiled, and the interpreter asserts the claim.
"""
from __future__ import annotations

from ..core import Node, Value
from ..types import BOOL, I64, NONE, NUMPY_NAMES, ArrayType, TupleType, is_strong
from . import advanced_index
from .adjoints import AddAt
from .batching import NotBatchable, as_batched, batch_size_product, each
from .declare import _def
from .sequences import key_read
from .table import OpTypeError, Refused, Routine


def _array(t, what):
    if not isinstance(t, ArrayType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    return t


def _indices(array: ArrayType, index_types, what):
    if len(index_types) != array.ndim:
        plural = "index" if array.ndim == 1 else "indices"
        raise OpTypeError(f"{what} of a {array.ndim}-d array needs {array.ndim} {plural}, "
                          f"got {len(index_types)}")
    for t in index_types:
        if t != I64:
            raise OpTypeError(f"array indices must be integers, got {t}")
    return [I64] * len(index_types)


def get_rule(types, attrs):
    array = _array(types[0], "indexing")
    return [array, *_indices(array, types[1:], "indexing")], array.dtype


def set_rule(types, attrs):
    array = _array(types[0], "item assignment")
    from ..types import is_numeric

    if not is_numeric(types[1]):
        raise OpTypeError(f"cannot store {types[1]} into {array}")
    return [array, array.dtype, *_indices(array, types[2:], "item assignment")], NONE


def dim_rule(types, attrs):
    array = _array(types[0], ".shape")
    if not 0 <= attrs["axis"] < array.ndim:
        raise OpTypeError(f"axis {attrs['axis']} is out of range for a {array.ndim}-d array")
    return [array], I64


def shape_rule(types, attrs):
    array = _array(types[0], ".shape")
    return [array], TupleType((I64,) * array.ndim)


def size_rule(types, attrs):
    return [_array(types[0], ".size")], I64


def unit_stride_rule(types, attrs):
    return [_array(types[0], "a stride")], BOOL


def ndim_rule(types, attrs):
    return [_array(types[0], ".ndim")], I64


def _normalize(array, index, inbounds=False, unit_stride=False):
    """NumPy's reading of one index tuple: negative counts from the end; out of range raises.
    `inbounds`: a pass proved every index within [0, size); `unit_stride`: that the last
    axis steps one element at a time (passes/versioning.py); a wrong proof is a bug."""
    if inbounds:
        assert all(0 <= i < size for i, size in zip(index, array.shape)), \
            f"index {index} of shape {array.shape} was proved in bounds"
    if unit_stride:
        assert _unit_stride(array, array.ndim - 1), "a unit stride was proved"
    fixed = []
    for axis, (i, size) in enumerate(zip(index, array.shape)):
        if not -size <= i < size:
            raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
        fixed.append(i + size if i < 0 else i)
    return tuple(fixed)


def py_array_get(array, *index, boundscheck=True, inbounds=False, unit_stride=False):
    found = array[_normalize(array, index, inbounds, unit_stride)]
    return found.item() if len(index) == array.ndim else found  # a row: untyped IR only


def py_array_set(array, value, *index, boundscheck=True, inbounds=False, unit_stride=False):
    array[_normalize(array, index, inbounds, unit_stride)] = value


def _unit_stride(array, axis: int) -> bool:
    return array.strides[axis] == array.itemsize


# ---- rows, which type inference makes views (OpDef.expand) --------------------------------

def _is_row(array, indices) -> bool:
    """Whether `indices` leave axes of `array` (`a[i]` of a 2-d array): a row."""
    return isinstance(array.type, ArrayType) and 0 < len(indices) < array.type.ndim


def _row_view(inference, node, array, indices, outputs, out):
    view = Node("array_view", [], outputs, attrs={"spec": ("i",) * len(indices)}, loc=node.loc)
    return inference.infer_leaf(view, [array, *indices], out)


def _row_read(inference, node, inputs, out):
    """`a[i]` of a 2-d array: a view of the remaining axes (ops/views.py); `x[idx]`,
    `x[mask]`: advanced indexing (ops/advanced_index.py); `d[k]` of a dict by a key a loop
    over it gave: that element (ops/sequences.py)."""
    if isinstance(inputs[0].type, ArrayType) and advanced_index.is_advanced(inputs[1:]):
        return advanced_index.read(inference, node, inputs[0], ("i",) * len(inputs[1:]),
                                   inputs[1:], out)
    if not _is_row(inputs[0], inputs[1:]):
        return key_read(inference, node, inputs, out)
    return _row_view(inference, node, inputs[0], inputs[1:], node.outputs, out)


def _row_write(inference, node, inputs, out):
    """`a[i] = v` of a 2-d array: v copied into the view `a[i]`; `x[idx] = v`, `x[mask] = v`:
    advanced indexing (ops/advanced_index.py)."""
    if isinstance(inputs[0].type, ArrayType) and advanced_index.is_advanced(inputs[2:]):
        return advanced_index.write(inference, node, inputs[0], inputs[1], ("i",) * len(inputs[2:]),
                                    inputs[2:], "set", out)
    if not _is_row(inputs[0], inputs[2:]):
        return None
    (row,) = _row_view(inference, node, inputs[0], inputs[2:], [Value("row", None)], out)
    assign = Node("array_assign", [], node.outputs, loc=node.loc)
    return inference.infer_leaf(assign, [row, inputs[1]], out)


# ---- symbolic shapes (ir/shape_algebra.py) ------------------------------------------------

def _axis_length(node, table):
    """`x.shape[axis]` as a length: that axis's Dim."""
    return table.shape(node.inputs[0])[node.attrs["axis"]]


def _size_length(node, table):
    """`x.size` of a 1-d array as a length: its axis's Dim (of others a product: unknown)."""
    shape = table.shape(node.inputs[0]) if isinstance(node.inputs[0].type, ArrayType) else ()
    return shape[0] if len(shape) == 1 else None


# ---- batching rules (ops/batching.py) ----------------------------------------------------

def _get_batch(b, node, ins, batched):
    """One element of each example: a view of the batch (a vector of them); at an index per
    example, a gather at (example, i, j), which checks the indices as the read does."""
    if not any(batched[1:]):
        attrs = {k: v for k, v in node.attrs.items() if k in ("boundscheck", "inbounds")}
        return each(b.op("array_view", *ins, spec=("s000",) + ("i",) * len(ins[1:]), **attrs))
    if not node.attrs.get("boundscheck", True):
        raise NotBatchable("an element read at a batched index, unchecked")
    x = as_batched(b, ins[0], batched[0])
    numbers = b.op("array_arange", b.const(0, I64), b.size)
    axes = tuple(range(len(ins) - 1))
    return each(b.op("gather", x, numbers, *ins[1:], axis=0, axes=(0, *axes)))


def _set_batch(b, node, ins, batched):
    """x[i, j] = v into each example: the batch's element column x[:, i, j] assigned; an
    index per example a scatter at (example, i, j)."""
    x, v, indices = b.writable(node.inputs[0]), ins[1], ins[2:]
    if not any(batched[2:]):
        attrs = {k: a for k, a in node.attrs.items() if k == "boundscheck"}
        view = b.op("array_view", x, *indices, spec=("s000",) + ("i",) * len(indices), **attrs)
        return [(b.op("array_assign", view, v), False)]
    if v.type != x.type.dtype and not isinstance(v.type, ArrayType):
        v = b.op("cast", v, to=x.type.dtype)
    elif isinstance(v.type, ArrayType) and v.type.dtype != x.type.dtype:
        v = b.op("array_astype", v, dtype=x.type.dtype)
    numbers = b.op("array_arange", b.const(0, I64), b.size)
    written = b.op("scatter", x, v, numbers, *indices, axis=0, axes=tuple(range(len(ins) - 1)),
                   accumulate=False)
    return [(written, False)]


def _dim_batch(b, node, ins, batched):
    """An example's length along an axis: the batch's next axis; the same for all."""
    return [(b.op("array_dim", ins[0], axis=node.attrs["axis"] + 1), False)]


def _shape_batch(b, node, ins, batched):
    dims = [b.op("array_dim", ins[0], axis=k) for k in range(1, ins[0].type.ndim)]
    return [(b.op("tuple", *dims), False)]


def _size_batch(b, node, ins, batched):
    return [(batch_size_product(b, ins[0]), False)]


def _ndim_batch(b, node, ins, batched):
    return [(b.const(ins[0].type.ndim - 1, I64), False)]


_def("array_get", -1, get_rule, py_array_get, {"*": Routine("array_get")},
     ("raises", "reads", "numpy_result", "linear"), expand=_row_read,
     vjp=lambda e, g, ins, out, needs: [AddAt(g, tuple(ins[1:]))] + [None] * len(ins[1:]),
     batch=_get_batch,
     doc="x[i, j]: one element; inputs [array, *indices]; attrs boundscheck, inbounds, "
         "unit_stride")
_def("array_set", -1, set_rule, py_array_set, {"*": Routine("array_set")},
     ("raises", "writes", "linear"),
     expand=_row_write, batch=_set_batch,
     no_vjp="reverse mode handles array writes itself (ad/writes.py, ad/sweep.py)",
     doc="x[i, j] = v; inputs [array, value, *indices]; output none; attrs boundscheck, "
         "inbounds, unit_stride")
_def("array_dim", 1, dim_rule, lambda a, axis: a.shape[axis], {"*": Routine("array_dim")}, ("pure", "reads"),
     zero_derivative="an int (the shape of an array)", shape=_axis_length, batch=_dim_batch,
     doc="x.shape[axis] for attrs['axis'] (already non-negative)")
_def("array_unit_stride", 1, unit_stride_rule, _unit_stride, {"*": Routine("array_unit_stride")},
     ("pure", "reads"), zero_derivative="a bool (how an array is laid out)",
     doc="whether axis attrs['axis'] of x steps one element at a time: loop versioning's "
         "condition for the accesses marked unit_stride (passes/versioning.py)")
_def("array_shape", 1, shape_rule, lambda a: tuple(a.shape), {"*": Routine("array_shape")}, ("pure", "reads"),
     zero_derivative="an int (the shape of an array)", batch=_shape_batch,
     doc="x.shape, a tuple of ints")
_def("array_size", 1, size_rule, lambda a: a.size, {"*": Routine("array_size")}, ("pure", "reads"),
     zero_derivative="an int (the shape of an array)", shape=_size_length, batch=_size_batch,
     doc="x.size")
_def("array_ndim", 1, ndim_rule, lambda a: a.ndim, {"*": Routine("array_ndim")}, ("pure", "reads"),
     zero_derivative="an int (the shape of an array)", batch=_ndim_batch, doc="x.ndim")


# ---- sizes in bytes: constants of the dtype ------------------------------------------------

_BYTES_RESOLVED = "type inference replaces it by a constant (times x.size for nbytes)"


def itemsize(dtype) -> int:
    """The bytes of one element of `dtype` (an IR scalar type), NumPy's itemsize."""
    import numpy

    return numpy.dtype(NUMPY_NAMES[dtype.name]).itemsize


def _bytes_rule(types, attrs):
    """Reached only where `_bytes` found no array or NumPy scalar: the error."""
    raise OpTypeError(f".{attrs['name']} needs an array or a NumPy scalar, got {types[0]}")


def _bytes(inference, node, inputs, out):
    """x.itemsize: a constant of x's dtype; x.nbytes: x.size times it (of a NumPy scalar,
    its itemsize)."""
    t = inputs[0].type
    dtype = t.dtype if isinstance(t, ArrayType) else t if is_strong(t) else None
    if dtype is None:
        return None
    made = Node("const", [], [Value("")], attrs={"value": itemsize(dtype)}, loc=node.loc)
    if node.attrs["name"] == "nbytes" and isinstance(t, ArrayType):
        size = Node("array_size", [], [Value("")], loc=node.loc)
        parts = [*inference.infer_leaf(size, inputs, out), *inference.infer_leaf(made, [], out)]
        return inference.infer_leaf(Node("mul", [], node.outputs, loc=node.loc), parts, out)
    return inference.infer_leaf(Node("const", [], node.outputs, attrs=made.attrs, loc=node.loc),
                                [], out)


_def("array_bytes", 1, _bytes_rule, lambda a, name: getattr(a, name),
     {"*": Refused(_BYTES_RESOLVED)}, cuda=Refused(_BYTES_RESOLVED), expand=_bytes,
     zero_derivative="an int (the size of an array)",
     doc="x.itemsize, x.nbytes (attrs name): replaced by constants and x.size by type inference")
