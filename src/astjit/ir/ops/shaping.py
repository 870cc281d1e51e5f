"""Array shaping, joining and conversion primitives (NumPy semantics; docs/arrays.md).

The NumPy functions built from them (`np.stack`, `np.roll`, `np.tile` ...) are
expanded by type inference (shape_functions.py); these are what remains.

Views (a new reference to the input's owner; writes through them reach the base):

- `array_squeeze {axes}`: the axes `axes` (non-negative, sorted) dropped; ValueError
  "cannot select an axis to squeeze out which has size not equal to one" unless each
  has length 1.
- `array_expand_dims {axes}`: length-1 axes inserted at `axes` (non-negative, sorted
  positions in the result).
- `array_permute {axes}`: `np.transpose(x, axes)`: result axis k is input axis
  `axes[k]` (`np.swapaxes`, `np.moveaxis`; `x.T` is views.py's `array_transpose`).
- `array_broadcast_to(x, *dims)`: x broadcast to the shape `dims` (NumPy's
  `broadcast_to`: x's axes align with the last ones, a length-1 axis stretches with
  stride 0; NumPy's ValueErrors for a negative length and for shapes that do not
  broadcast). NumPy's result is read-only; compiled code does not check writes to it.

New C-contiguous arrays:

- `array_concatenate(*arrays) {axis}`: arrays of one dtype and ndim (type inference
  converts them), joined along `axis` (non-negative); ValueError, NumPy's message, when
  another axis differs.
- `array_copy(x)`: a copy (`np.copy`, `x.copy()`).
- `array_contiguous(x)`: `np.ascontiguousarray(x)`: x itself (a view) when C-contiguous, else
  a copy.
- `array_astype(x) {dtype}`: a copy converted to `dtype` as NumPy's `astype` does (C's
  conversions: a float truncates toward zero into an int; NaN and out-of-range floats
  give what the CPU's conversion gives, as in NumPy).
- `array_pack(*numbers) {dtype, shape}`: `np.array` of a (nested) tuple of numbers, each
  converted to `dtype` (type inference casts them), in C order into `shape`.
- `array_linspace(start, stop, num) {endpoint, dtype, compute}`: NumPy's algorithm in the
  float type `compute` (step = (stop - start) / div, y = i * step + start, the last
  element `stop` exactly when `endpoint`), converted to `dtype` (an int dtype floors
  first); ValueError "Number of samples, -1, must be non-negative."
"""
from __future__ import annotations

from ..shape_algebra import ONE, dims_of, like
from ..types import BOOL, F32, F64, I64, NUMPY_NAMES, ArrayType, ScalarType, is_numeric, weak
from .batching import (
    SHAPE_PER_EXAMPLE,
    NotBatchable,
    as_batched,
    each,
    same_op,
    shifted,
    unbatched_operands,
    with_rank,
)
from .declare import _def
from .table import OpTypeError, Routine
from .vjp import with_attrs

SQUEEZE_NOT_ONE = "cannot select an axis to squeeze out which has size not equal to one"
BROADCAST_NEGATIVE = "all elements of broadcast shape must be non-negative"
BROADCAST_MISMATCH = "operands could not be broadcast together with remapped shapes"
CONCATENATE_MISMATCH = ("all the input array dimensions except for the concatenation axis "
                        "must match exactly")
SUPPORTED_DTYPES = (F64, F32, I64, BOOL)


def _numpy():
    import numpy

    return numpy


def _array(t, what) -> ArrayType:
    if not isinstance(t, ArrayType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    return t


def _axes_in(axes, ndim, what):
    if any(not 0 <= a < ndim for a in axes) or list(axes) != sorted(set(axes)):
        raise OpTypeError(f"{what}: axes {axes} do not fit a {ndim}-d array")


# ---- type rules -------------------------------------------------------------------------

def squeeze_rule(types, attrs):
    array = _array(types[0], "np.squeeze")
    _axes_in(attrs["axes"], array.ndim, "np.squeeze")
    return [array], ArrayType(array.dtype, array.ndim - len(attrs["axes"]))


def expand_dims_rule(types, attrs):
    array = _array(types[0], "np.expand_dims")
    ndim = array.ndim + len(attrs["axes"])
    _axes_in(attrs["axes"], ndim, "np.expand_dims")
    return [array], ArrayType(array.dtype, ndim)


def permute_rule(types, attrs):
    array = _array(types[0], "np.transpose")
    if sorted(attrs["axes"]) != list(range(array.ndim)):
        raise OpTypeError(f"axes {attrs['axes']} are not a permutation of a {array.ndim}-d "
                          "array's")
    return [array], array


def broadcast_to_rule(types, attrs):
    array = _array(types[0], "np.broadcast_to")
    if any(t != I64 for t in types[1:]):
        raise OpTypeError(f"the shape of np.broadcast_to must be ints, got {types[1:]}")
    if len(types) - 1 < array.ndim:
        raise OpTypeError("input operand has more dimensions than allowed by the axis remapping")
    return [array, *[I64] * (len(types) - 1)], ArrayType(array.dtype, len(types) - 1)


def concatenate_rule(types, attrs):
    first = _array(types[0], "np.concatenate")
    for t in types:
        if _array(t, "np.concatenate") != first:
            raise OpTypeError(f"array_concatenate joins arrays of one type, got {types}")
    if first.ndim == 0:
        raise OpTypeError("zero-dimensional arrays cannot be concatenated")
    if not 0 <= attrs["axis"] < first.ndim:
        raise OpTypeError(f"axis {attrs['axis']} is out of bounds for array of dimension "
                          f"{first.ndim}")
    return list(types), first


def copy_rule(types, attrs):
    array = _array(types[0], "np.copy")
    return [array], array


def astype_rule(types, attrs):
    array = _array(types[0], "astype")
    return [array], ArrayType(attrs["dtype"], array.ndim)


def pack_rule(types, attrs):
    for t in types:
        if not is_numeric(t):
            raise OpTypeError(f"np.array() takes numbers here, got {t}")
    count = 1
    for n in attrs["shape"]:
        count *= n
    if count != len(types):
        raise OpTypeError(f"np.array() of {len(types)} numbers into shape {attrs['shape']}")
    return [attrs["dtype"]] * len(types), ArrayType(attrs["dtype"], len(attrs["shape"]))


def linspace_rule(types, attrs):
    start, stop, num = types
    if not (is_numeric(start) and is_numeric(stop)):
        raise OpTypeError(f"np.linspace() needs numbers, got {start} and {stop}")
    if num not in (I64, BOOL):
        raise OpTypeError(f"'{num}' object cannot be interpreted as an integer")
    compute = attrs["compute"]
    return [compute, compute, I64], ArrayType(attrs["dtype"] or compute, 1)


def linspace_compute_type(start, stop) -> ScalarType:
    """NumPy's computation type of linspace: the inexact result type of start and stop
    (two float32 NumPy scalars compute in float32, anything else in float64)."""
    return F32 if all(t.strong and weak(t) == F32 for t in (start, stop)) else F64


# ---- reference semantics ------------------------------------------------------------------

def py_squeeze(x, axes):
    return _numpy().squeeze(x, axis=tuple(axes))


def py_expand_dims(x, axes):
    return _numpy().expand_dims(x, tuple(axes))


def py_broadcast_to(x, *dims):
    return _numpy().broadcast_to(x, tuple(dims))


def py_concatenate(*arrays, axis, stacking=False):
    return _numpy().concatenate(arrays, axis=axis)


def py_astype(x, dtype):
    return x.astype(NUMPY_NAMES[dtype.name])


def py_pack(*numbers, dtype, shape):
    return _numpy().array(numbers, dtype=NUMPY_NAMES[dtype.name]).reshape(shape)


def py_linspace(start, stop, num, endpoint, dtype, compute):
    numpy = _numpy()
    kind = numpy.dtype(NUMPY_NAMES[compute.name]).type
    return numpy.linspace(kind(start), kind(stop), num, endpoint=endpoint,
                          dtype=NUMPY_NAMES[dtype.name] if dtype is not None else None)


# ---- symbolic shapes ----------------------------------------------------------------------

def _squeeze_shape(node, table):
    shape = table.shape(node.inputs[0])
    return tuple(d for k, d in enumerate(shape) if k not in node.attrs["axes"])


def _expand_dims_shape(node, table):
    rest = iter(table.shape(node.inputs[0]))
    ndim = node.outputs[0].type.ndim
    return tuple(ONE if k in node.attrs["axes"] else next(rest) for k in range(ndim))


# ---- VJP rules ----------------------------------------------------------------------------

@with_attrs
def _squeeze_vjp(e, g, ins, out, needs, attrs):
    return [e.op("array_expand_dims", g, axes=attrs["axes"])]


@with_attrs
def _expand_dims_vjp(e, g, ins, out, needs, attrs):
    return [e.op("array_squeeze", g, axes=attrs["axes"])]


@with_attrs
def _permute_vjp(e, g, ins, out, needs, attrs):
    axes = attrs["axes"]
    return [e.op("array_permute", g, axes=tuple(sorted(range(len(axes)), key=axes.__getitem__)))]


def _broadcast_to_vjp(e, g, ins, out, needs):
    return [e.op("sum_to_like", g, ins[0])] + [None] * len(ins[1:])


@with_attrs
def _concatenate_vjp(e, g, ins, out, needs, attrs):
    """Each input's adjoint: its slice of g along the axis."""
    axis, adjoints = attrs["axis"], []
    start = e.const(0, I64)
    spec = ("s000",) * axis + ("s110",)
    for x, need in zip(ins, needs):
        stop = e.op("add", start, e.op("array_dim", x, axis=axis))
        adjoints.append(e.op("array_view", g, start, stop, spec=spec) if need else None)
        start = stop
    return adjoints


def _copy_vjp(e, g, ins, out, needs):
    return [g]


def _astype_vjp(e, g, ins, out, needs):
    """g cast back to x's dtype: between float and complex, JAX's transpose (a complex
    adjoint's real part for a float x), as ops/scalar.py's cast."""
    x = ins[0].type
    if not (x.dtype.is_float or x.dtype.is_complex):
        return [None]
    return [g if g.type == x else e.op("array_astype", g, dtype=x.dtype)]


@with_attrs
def _pack_vjp(e, g, ins, out, needs, attrs):
    """Element k of g (in C order) for number k."""
    numpy = _numpy()
    adjoints = []
    for k, (x, need) in enumerate(zip(ins, needs)):
        if not need or not (x.type.is_float or x.type.is_complex):
            adjoints.append(None)
            continue
        index = numpy.unravel_index(k, attrs["shape"]) if attrs["shape"] else ()
        part = e.op("array_get", g, *(e.const(int(i), I64) for i in index))
        adjoints.append(part if part.type == x.type else e.op("cast", part, to=x.type))
    return adjoints


@with_attrs
def _linspace_vjp(e, g, ins, out, needs, attrs):
    """y_i = start + t_i (stop - start), t = linspace(0, 1, num): d start = sum(g (1 - t)),
    d stop = sum(g t)."""
    compute = attrs["compute"]
    t = e.op("array_linspace", e.const(0.0, compute), e.const(1.0, compute), ins[2],
             endpoint=attrs["endpoint"], dtype=g.type.dtype, compute=compute)
    d_stop = e.op("reduce", e.op("mul", g, t), kind="sum", axis=None, keepdims=False)
    d_start = e.op("sub", e.op("reduce", g, kind="sum", axis=None, keepdims=False), d_stop)
    return [e.op("cast", d, to=compute) if d.type != compute else d for d in (d_start, d_stop)] \
        + [None]


def _axes_batch(op: str):
    """The rule of an op taking example axes `axes`: the same axes of the batch, shifted."""
    def rule(b, node, ins, batched):
        axes = shifted(node.attrs["axes"])
        return each(b.op(op, ins[0], axes=(0, *axes) if op == "array_permute" else axes))
    return rule


def _broadcast_to_batch(b, node, ins, batched):
    unbatched_operands(node, batched)
    x = with_rank(b, ins[0], len(ins) - 1)
    return each(b.op("array_broadcast_to", x, b.size, *ins[1:]))


def _concatenate_batch(b, node, ins, batched):
    parts = [as_batched(b, v, f) for v, f in zip(ins, batched)]
    return each(b.op("array_concatenate", *parts, axis=node.attrs["axis"] + 1))


_VIEW = ("pure", "view", "linear")
_def("array_squeeze", 1, squeeze_rule, py_squeeze, {"*": Routine("array_squeeze")},
     ("raises", "view", "linear"), vjp=_squeeze_vjp, shape=_squeeze_shape,
     batch=_axes_batch("array_squeeze"),
     doc="np.squeeze(x, axis): a view without the length-1 axes `axes`")
_def("array_expand_dims", 1, expand_dims_rule, py_expand_dims,
     {"*": Routine("array_expand_dims")}, _VIEW, vjp=_expand_dims_vjp,
     shape=_expand_dims_shape, batch=_axes_batch("array_expand_dims"),
     doc="np.expand_dims(x, axis): a view with length-1 axes added")
_def("array_permute", 1, permute_rule, lambda x, axes: x.transpose(axes),
     {"*": Routine("array_permute")}, _VIEW, vjp=_permute_vjp,
     shape=lambda node, table: tuple(table.shape(node.inputs[0])[k] for k in node.attrs["axes"]),
     batch=_axes_batch("array_permute"), doc="np.transpose(x, axes): a view with the axes permuted")
def _broadcast_to_cannot_raise(node, shapes):
    """Each axis of `x` is ONE or the target's own dim there (trailing axes aligned), and
    every target length is one (not an int of unknown sign: an atom of the result's own)."""
    table, out = shapes(), node.outputs[0]
    source, target = table.operands(node)[0], table.get(out)
    if source is None or target is None or len(source) > len(target) \
            or any(isinstance(a, tuple) and a[0] == out.id for d in target for a in d):
        return False
    aligned = target[len(target) - len(source):]
    return all(d == ONE or d == t for d, t in zip(source, aligned))


_def("array_broadcast_to", -1, broadcast_to_rule, py_broadcast_to,
     {"*": Routine("array_broadcast_to")}, ("raises", "view", "linear"), vjp=_broadcast_to_vjp,
     shape=lambda node, table: dims_of(node, node.inputs[1:], table),
     cannot_raise=_broadcast_to_cannot_raise,
     batch=_broadcast_to_batch,
     doc="np.broadcast_to(x, shape): a view, stride 0 along the stretched axes")
_def("array_concatenate", -1, concatenate_rule, py_concatenate,
     {"*": Routine("array_concatenate")}, ("raises", "allocates", "reads", "linear"),
     vjp=_concatenate_vjp, batch=_concatenate_batch,
     doc="np.concatenate(arrays, axis): a new array")
_def("array_copy", 1, copy_rule, lambda x: x.copy(), {"*": Routine("array_copy")},
     ("raises", "allocates", "reads", "linear"), vjp=_copy_vjp, shape=like(0),
     batch=same_op, doc="np.copy(x), x.copy(): a new C-contiguous array")
_def("array_contiguous", 1, copy_rule, lambda x: _numpy().ascontiguousarray(x),
     {"*": Routine("array_contiguous")}, ("pure", "view", "linear"), vjp=_copy_vjp,
     shape=like(0), batch=same_op,
     doc="np.ascontiguousarray(x): x when C-contiguous, else a copy")
_def("array_astype", 1, astype_rule, py_astype, {"*": Routine("array_astype")},
     ("raises", "allocates", "reads", "linear"), vjp=_astype_vjp, shape=like(0),
     batch=same_op,
     doc="x.astype(dtype): a new array, NumPy's conversions (linear from float to float)")
def _pack_batch(b, node, ins, batched):
    """np.array((a, b, ...)) per example: the numbers' batches side by side along a new
    axis after the batch axis, reshaped to the batch of `shape`."""
    columns = [b.op("array_expand_dims", as_batched(b, v, f), axes=(1,))
               for v, f in zip(ins, batched)]
    rows = b.op("array_concatenate", *columns, axis=1)
    dims = [b.const(n, I64) for n in node.attrs["shape"]]
    return each(b.op("array_reshape", rows, b.size, *dims))


def _linspace_batch(b, node, ins, batched):
    """np.linspace of a start and stop per example (one `num`): NumPy's algorithm with
    each example's step, y = i * step + start ((i / div) * delta where the step is 0,
    i * delta where div is 0), the last element stop exactly; an int dtype floors."""
    if batched[2]:
        raise NotBatchable(SHAPE_PER_EXAMPLE.format(what="np.linspace with a num per example"))
    compute, (start, stop, num) = node.attrs["compute"], ins
    start, stop = (b.op("array_expand_dims", as_batched(b, v, f), axes=(1,))
                   for v, f in zip((start, stop), batched))
    zero, one = b.const(0, I64), b.const(1, I64)
    div = b.op("sub", num, one) if node.attrs["endpoint"] else num
    safe = b.op("cast", b.op("max", div, one), to=compute)
    i = b.op("array_astype", b.op("array_arange", zero, num), dtype=compute)
    delta = b.op("sub", stop, start)
    step = b.op("truediv", delta, safe, numpy=True)
    spaced = b.op("where", b.op("eq", step, b.const(0.0, compute)),
                  b.op("mul", b.op("truediv", i, safe), delta), b.op("mul", i, step))
    y = b.op("add", b.op("where", b.op("gt", div, zero), spaced, b.op("mul", i, delta)), start)
    if node.attrs["endpoint"]:
        last = b.op("bitand", b.op("eq", b.op("array_arange", zero, num), b.op("sub", num, one)),
                    b.op("gt", num, one))
        y = b.op("where", last, stop, y)
    dtype = node.attrs["dtype"] or compute
    if dtype.is_int:
        y = b.op("numpy_floor", y)
    return each(y if y.type.dtype == dtype else b.op("array_astype", y, dtype=dtype))


_def("array_pack", -1, pack_rule, py_pack, {"*": Routine("array_pack")},
     ("raises", "allocates", "linear"), vjp=_pack_vjp, batch=_pack_batch,
     doc="np.array((a, b, ...)) of numbers: a new array of `shape`")
_def("array_linspace", 3, linspace_rule, py_linspace, {"*": Routine("array_linspace")},
     ("raises", "allocates", "linear"), vjp=_linspace_vjp, batch=_linspace_batch,
     doc="np.linspace(start, stop, num, endpoint, dtype)")
