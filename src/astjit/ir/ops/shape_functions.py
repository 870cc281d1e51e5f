"""NumPy's shape, joining and conversion functions, made of primitives by type inference.

The frontend cannot know an array's ndim, which these functions need (a negative
axis, `np.stack`'s new axis, `np.tile`'s reps), so a call lowers to one
`array_function {function, arguments, ...}` node that type inference replaces
(`expand`) by the primitives NumPy's definition composes, with NumPy's semantics:

| function | made of |
|---|---|
| `np.flip(m, axis)` | `array_view` with step -1 along the axes (a view) |
| `np.swapaxes`, `np.moveaxis` | `array_permute` (a view) |
| `np.squeeze`, `np.expand_dims` | `array_squeeze`, `array_expand_dims` (views) |
| `np.ravel` | `array_reshape` (a view of C-contiguous data, else a copy) |
| `np.ascontiguousarray` | `array_contiguous` (the same rule, no reshape) |
| `x.flatten()` | `array_reshape` of an `array_copy` |
| `np.concatenate`, `np.stack`, `np.hstack`, `np.vstack` | `array_concatenate` (of expand_dims views) |
| `np.split(a, n or indices, axis)` | a tuple of `array_view`s (NumPy's list) |
| `np.roll(a, shift, axis)` | `array_concatenate` of two views (of `ravel(a)` without axis) |
| `np.tile`, `np.repeat` | `array_copy` of an `array_broadcast_to` view, reshaped |
| `np.broadcast_to` | `array_broadcast_to` (a view) |
| `np.copy`, `x.copy()`, `x.astype(dtype)` | `array_copy`, `array_astype` |
| `x.view(dtype)` (one item size) | `array_view_as` (a view; reinterpret.py) |
| `np.array(numbers or arrays)` | `array_pack` (numbers), `np.stack` (arrays), a copy (an array) |
| `np.linspace` | `array_linspace` |
| `np.take`, `np.compress`, `np.diagonal` (and methods) | indexing primitives (selections.py) |
| `np.max(x, axis, initial=v)`, min, nanmax, nanmin | `np.maximum(v, reduce)` (minimum, fmax, fmin) |
| `np.sum(x, dtype=y.dtype)` and the other reductions | their op with y's dtype |

`arguments` says how the node's inputs map to the call's: `(name, count)` pairs in
order, `count` None for one value, k for a display of k values (a tuple or list
written in the call), -1 for one value that is a tuple, unpacked here. Compile-time
arguments (`axis`, `dtype`, `endpoint`, `copy`, `shape` of a nested `np.array`) are
the node's other attrs (`dtype=y.dtype`: y is the input `dtype_of`). Errors that types
decide (an axis out of range) are compile errors with NumPy's message; those that depend
on lengths raise at run time as NumPy's.
"""
from __future__ import annotations

from ...errors import TypingError
from ..core import Node, Value
from ..types import (
    BOOL,
    F64,
    I64,
    NONE,
    NUMPY_DTYPES,
    NUMPY_NAMES,
    ArrayType,
    ScalarType,
    TupleType,
    int_range,
    is_numeric,
    strong,
    weak,
)
from . import selections
from .allocation import shape_dims
from .declare import _def
from .shaping import linspace_compute_type
from .table import OpTypeError, Refused
from .vjp import select

_RESOLVED = "np.<function>() calls are replaced by their primitives in type inference"
NEGATIVE_DIMENSIONS = "negative dimensions are not allowed"
SQUEEZE_UNKNOWN = ("np.squeeze(a) without axis= needs the length-1 axes known at compile time, "
                   "and an axis of length 1 here was not: write np.squeeze(a, axis=...)")


def _numpy():
    import numpy

    return numpy


class _Emitter:
    """Typed nodes appended to the graph type inference builds, at the call's location."""

    def __init__(self, inference, node: Node, out):
        self.inference, self.node, self.out, self.loc = inference, node, out, node.loc

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        made = Node(name, [], [Value("", None)], attrs=attrs, loc=self.loc)
        return self.inference.infer_leaf(made, list(inputs), self.out)[0]

    def const(self, value) -> Value:
        return self.op("const", value=value)

    def dim(self, x: Value, axis: int) -> Value:
        return self.op("array_dim", x, axis=axis)

    def dims(self, x: Value) -> list[Value]:
        return [self.dim(x, k) for k in range(x.type.ndim)]

    def fail(self, message: str, hint: str = ""):
        raise TypingError(message, self.loc, hint=hint)

    def raise_if(self, condition: Value, exc: str, message: str) -> None:
        self.out.add("raise_if", [condition], attrs={"exc": exc, "message": message},
                     loc=self.loc, types=[NONE])

    def as_array(self, x: Value) -> Value:
        """An array as it is; a number as a new 0-d array (NumPy's asarray)."""
        if isinstance(x.type, ArrayType):
            return x
        if not is_numeric(x.type):
            self.fail(f"np.{self.node.attrs['function']}() needs arrays or numbers, got {x.type}")
        return self.op("array_new", x, dtype=weak(x.type), fill="value")

    def axis(self, axis: int, ndim: int, prefix: str = "") -> int:
        """`axis` made non-negative; NumPy's AxisError message when out of range."""
        if not isinstance(axis, int) or isinstance(axis, bool):
            self.fail(f"{prefix}an axis must be an int, got {axis!r}")
        if not -ndim <= axis < ndim:
            self.fail(f"{prefix}axis {axis} is out of bounds for array of dimension {ndim}")
        return axis + ndim if axis < 0 else axis

    def axes(self, axis, ndim: int) -> tuple[int, ...]:
        fixed = [self.axis(a, ndim) for a in (axis if isinstance(axis, tuple) else (axis,))]
        if len(set(fixed)) != len(fixed):
            self.fail("repeated axis")
        return tuple(sorted(fixed))

    def reshape(self, x: Value, dims: list[Value]) -> Value:
        return self.op("array_reshape", x, *dims)

    def ravel(self, x: Value) -> Value:
        return self.op("array_reshape", self.as_array(x), self.const(-1), ravel=True)

    def astype(self, x: Value, dtype: ScalarType) -> Value:
        return x if x.type.dtype == dtype else self.op("array_astype", x, dtype=dtype)


def _arguments(em: _Emitter, inputs: list[Value]) -> dict[str, Value | list[Value]]:
    """The call's dynamic arguments by name: one value, or a list for a sequence."""
    found, rest = {}, list(inputs)
    for name, count in em.node.attrs["arguments"]:
        if count is None:
            found[name] = rest.pop(0)
        elif count >= 0:
            found[name], rest = rest[:count], rest[count:]
        else:
            found[name] = _unpack(em, rest.pop(0), name)
    return found


def _unpack(em: _Emitter, value: Value, name: str) -> list[Value]:
    if not isinstance(value.type, TupleType):
        em.fail(f"np.{em.node.attrs['function']}() takes a tuple of arrays as {name}, "
                f"got {value.type}", "write them as a tuple display: np.concatenate((a, b))")
    return [em.op("getitem", value, index=i) for i in range(len(value.type.elements))]


def _ints(em: _Emitter, value: Value, what: str) -> list[Value]:
    """An int, or a tuple of ints, as a list of int values."""
    values = _unpack(em, value, what) if isinstance(value.type, TupleType) else [value]
    for v in values:
        if v.type not in (I64, BOOL):
            em.fail(f"{what} of np.{em.node.attrs['function']}() must be ints, got {v.type}")
    return values


def _result_dtype(em: _Emitter, dtypes) -> ScalarType:
    name = _numpy().result_type(*(NUMPY_NAMES[weak(t).name] for t in dtypes)).name
    if name not in NUMPY_DTYPES:
        em.fail(f"np.{em.node.attrs['function']}() gives {name}, which compiled code does not "
                "have")
    return ScalarType(NUMPY_DTYPES[name])


# ---- joining ------------------------------------------------------------------------------

def concatenate(em: _Emitter, arrays: list[Value], axis, stacking: bool = False) -> Value:
    arrays = [em.as_array(a) for a in arrays]
    if not arrays:
        em.fail("need at least one array to concatenate")
    if axis is None:
        arrays, axis = [em.ravel(a) for a in arrays], 0
    ndim = arrays[0].type.ndim
    if ndim == 0:
        em.fail("zero-dimensional arrays cannot be concatenated")
    for i, a in enumerate(arrays):
        if a.type.ndim != ndim:
            em.fail("all input arrays must have the same shape" if stacking else
                    f"all the input arrays must have same number of dimensions, but the array "
                    f"at index 0 has {ndim} dimension(s) and the array at index {i} has "
                    f"{a.type.ndim} dimension(s)")
    axis = em.axis(axis, ndim)
    dtype = _result_dtype(em, [a.type.dtype for a in arrays])
    return em.op("array_concatenate", *(em.astype(a, dtype) for a in arrays), axis=axis,
                 stacking=stacking)


def stack(em: _Emitter, arrays: list[Value], axis) -> Value:
    arrays = [em.as_array(a) for a in arrays]
    if not arrays:
        em.fail("need at least one array to stack")
    ndim = arrays[0].type.ndim
    if any(a.type.ndim != ndim for a in arrays):
        em.fail("all input arrays must have the same shape")
    axis = em.axis(axis, ndim + 1)
    expanded = [em.op("array_expand_dims", a, axes=(axis,)) for a in arrays]
    return concatenate(em, expanded, axis, stacking=True)


def _at_least(em: _Emitter, x: Value, ndim: int) -> Value:
    """np.atleast_1d / atleast_2d: a 0-d array (1,) or (1, 1), a 1-d one (1, n)."""
    x = em.as_array(x)
    missing = ndim - x.type.ndim
    return em.op("array_expand_dims", x, axes=tuple(range(missing))) if missing > 0 else x


def hstack(em: _Emitter, arrays: list[Value]) -> Value:
    arrays = [_at_least(em, a, 1) for a in arrays]
    return concatenate(em, arrays, 0 if arrays and arrays[0].type.ndim == 1 else 1)


def vstack(em: _Emitter, arrays: list[Value]) -> Value:
    return concatenate(em, [_at_least(em, a, 2) for a in arrays], 0)


def _slice_along(em: _Emitter, x: Value, axis: int, start: Value | None, stop: Value | None):
    entry = "s" + ("0" if start is None else "1") + ("0" if stop is None else "1") + "0"
    bounds = [b for b in (start, stop) if b is not None]
    return em.op("array_view", x, *bounds, spec=("s000",) * axis + (entry,))


def split(em: _Emitter, x: Value, sections, axis) -> Value:
    """NumPy's list of views, as a tuple: n equal sections (ValueError "array split does not
    result in an equal division" otherwise) or the pieces between constant indices."""
    if not isinstance(x.type, ArrayType):
        em.fail(f"np.split() needs an array, got {x.type}")
    axis = em.axis(axis, x.type.ndim)
    if isinstance(sections, tuple):
        bounds = [None, *(em.const(i) for i in sections), None]
        parts = [_slice_along(em, x, axis, a, b) for a, b in zip(bounds, bounds[1:])]
        return em.op("tuple", *parts)
    if sections <= 0:
        em.fail("number sections must be larger than 0.")
    n = em.dim(x, axis)
    em.raise_if(em.op("ne", em.op("mod", n, em.const(sections)), em.const(0)), "ValueError",
                "array split does not result in an equal division")
    length = em.op("floordiv", n, em.const(sections))
    starts = [em.op("mul", length, em.const(k)) for k in range(sections + 1)]
    return em.op("tuple", *(_slice_along(em, x, axis, a, b) for a, b in zip(starts, starts[1:])))


# ---- rearranging ----------------------------------------------------------------------------

def squeeze(em: _Emitter, x: Value, axis) -> Value:
    x = em.as_array(x)
    if axis is not None:
        return em.op("array_squeeze", x, axes=em.axes(axis, x.type.ndim))
    ones = known_unit_axes(em.out, x)
    for k in range(x.type.ndim):  # an axis of length 1 not known here: not NumPy's result
        if k not in ones:
            em.raise_if(em.op("eq", em.dim(x, k), em.const(1)), "ValueError", SQUEEZE_UNKNOWN)
    return em.op("array_squeeze", x, axes=tuple(sorted(ones)))


def known_unit_axes(graph, x: Value) -> set[int]:
    """The axes of `x` its producer makes length 1 (or less, checked by the squeeze): an
    expand_dims, a keepdims reduction, a slice with constant bounds at most 1 apart, a
    reshape or creation with a literal 1."""
    producer = next((n for n in reversed(graph.nodes) if x in n.outputs), None)
    if producer is None:
        return set()
    constant = {n.outputs[0]: n.attrs["value"] for n in graph.nodes if n.op == "const"}
    if producer.op == "array_expand_dims":
        return set(producer.attrs["axes"])
    if producer.op == "reduce" and producer.attrs.get("keepdims"):
        ndim = x.type.ndim
        axis = producer.attrs["axis"]
        return set(range(ndim)) if axis is None else {a % ndim for a in axis}
    if producer.op in ("array_reshape", "array_new"):
        return {k for k, d in enumerate(producer.inputs[1:] if producer.op == "array_reshape"
                                        else producer.inputs[:x.type.ndim])
                if constant.get(d) == 1}
    if producer.op == "array_view":
        return _unit_slices(producer, constant)
    return set()


def _unit_slices(view: Node, constant: dict) -> set[int]:
    parts, found, position = list(view.inputs[1:]), set(), 0
    for entry in view.attrs["spec"]:
        if entry == "i":
            parts.pop(0)
            continue
        bounds = [constant.get(parts.pop(0), "?") if flag == "1" else None for flag in entry[1:]]
        start, stop, step = bounds
        if step in (None, 1) and isinstance(stop, int) and (start is None and stop == 1 or (
                isinstance(start, int) and 0 <= start and stop - start == 1)):
            found.add(position)
        position += 1
    return found


def expand_dims(em: _Emitter, x: Value, axis) -> Value:
    x = em.as_array(x)
    count = len(axis) if isinstance(axis, tuple) else 1
    return em.op("array_expand_dims", x, axes=em.axes(axis, x.type.ndim + count))


def flip(em: _Emitter, x: Value, axis) -> Value:
    x = em.as_array(x)
    ndim = x.type.ndim
    if ndim == 0:  # NumPy indexes a 0-d array with (): its element
        return em.op("array_get", x)
    axes = tuple(range(ndim)) if axis is None else em.axes(axis, ndim)
    spec = tuple("s001" if k in axes else "s000" for k in range(max(axes, default=-1) + 1))
    return em.op("array_view", x, *(em.const(-1) for _ in axes), spec=spec)


def swapaxes(em: _Emitter, x: Value, axis1, axis2) -> Value:
    ndim = x.type.ndim if isinstance(x.type, ArrayType) else 0
    a, b = em.axis(axis1, ndim, "axis1: "), em.axis(axis2, ndim, "axis2: ")
    order = list(range(ndim))
    order[a], order[b] = order[b], order[a]
    return em.op("array_permute", em.as_array(x), axes=tuple(order))


def moveaxis(em: _Emitter, x: Value, source, destination) -> Value:
    x = em.as_array(x)
    ndim = x.type.ndim
    source = source if isinstance(source, tuple) else (source,)
    destination = destination if isinstance(destination, tuple) else (destination,)
    src = [em.axis(a, ndim, "source: ") for a in source]
    dst = [em.axis(a, ndim, "destination: ") for a in destination]
    if len(set(src)) != len(src):
        em.fail("repeated axis in `source` argument")
    if len(set(dst)) != len(dst):
        em.fail("repeated axis in `destination` argument")
    if len(src) != len(dst):
        em.fail("`source` and `destination` arguments must have the same number of elements")
    order = [k for k in range(ndim) if k not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return em.op("array_permute", x, axes=tuple(order))


def roll(em: _Emitter, x: Value, shift: Value, axis) -> Value:
    x = em.as_array(x)
    if axis is None:
        flat = _roll_axis(em, em.ravel(x), _ints(em, shift, "shift")[0], 0)
        return em.reshape(flat, em.dims(x))
    axes = axis if isinstance(axis, tuple) else (axis,)
    shifts = _ints(em, shift, "shift")
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        em.fail("'shift' and 'axis' should be scalars or 1D sequences")
    for s, a in zip(shifts, axes):
        x = _roll_axis(em, x, s, em.axis(a, x.type.ndim))
    return x


def _roll_axis(em: _Emitter, x: Value, shift: Value, axis: int) -> Value:
    n = em.dim(x, axis)
    offset = em.op("mod", shift, em.op("max", n, em.const(1)))
    cut = em.op("sub", n, offset)
    tail, head = _slice_along(em, x, axis, cut, None), _slice_along(em, x, axis, None, cut)
    return em.op("array_concatenate", tail, head, axis=axis, stacking=False)


def _repeat_axes(em: _Emitter, x: Value, counts: list[Value]) -> Value:
    """Element j of axis k repeated counts[k] times in place (len(counts) == x.ndim):
    x viewed with a length-1 axis before each, broadcast to the counts, copied, merged."""
    for r in counts:
        em.raise_if(em.op("lt", r, em.const(0)), "ValueError", NEGATIVE_DIMENSIONS)
    dims = em.dims(x)
    ndim = x.type.ndim
    spread = em.op("array_expand_dims", x, axes=tuple(2 * k for k in range(ndim)))
    shape = [d for r, n in zip(counts, dims) for d in (r, n)]
    copied = em.op("array_copy", em.op("array_broadcast_to", spread, *shape))
    return em.reshape(copied, [em.op("mul", r, n) for r, n in zip(counts, dims)])


def tile(em: _Emitter, x: Value, reps: Value) -> Value:
    x = em.as_array(x)
    counts = _ints(em, reps, "reps")
    ndim = max(x.type.ndim, len(counts))
    x = _at_least(em, x, ndim)
    counts = [em.const(1)] * (ndim - len(counts)) + counts
    return _repeat_axes(em, x, counts)


def repeat(em: _Emitter, x: Value, repeats: Value, axis) -> Value:
    if isinstance(repeats.type, ArrayType):
        em.fail("np.repeat with an array of counts is not supported yet",
                "pass one int count for every element")
    (count,) = _ints(em, repeats, "repeats")
    x = em.as_array(x)
    if axis is None:
        x, axis = em.ravel(x), 0
    axis = em.axis(axis, x.type.ndim)
    # element j of `axis` repeated in place: a length-1 axis after it, broadcast, merged
    em.raise_if(em.op("lt", count, em.const(0)), "ValueError", NEGATIVE_DIMENSIONS)
    dims = em.dims(x)
    spread = em.op("array_expand_dims", x, axes=(axis + 1,))
    shape = dims[:axis + 1] + [count] + dims[axis + 1:]
    copied = em.op("array_copy", em.op("array_broadcast_to", spread, *shape))
    merged = dims[:axis] + [em.op("mul", dims[axis], count)] + dims[axis + 1:]
    return em.reshape(copied, merged)


def broadcast_to(em: _Emitter, x: Value, shape: Value) -> Value:
    dims = shape_dims(shape, "np.broadcast_to", em.loc, em.out)
    return em.op("array_broadcast_to", em.as_array(x), *dims)


# ---- reductions given a dtype or an initial value -----------------------------------------

def reduction(em: _Emitter, x: Value, ddof: Value | None, op: str, attrs: dict) -> Value:
    """np.sum(x, dtype=y.dtype) and the other reductions given a dtype by an array: the
    reduction's op (`reduce`, `statistic`, `scan`) with y's dtype, checked as the frontend
    checks a dtype it reads (frontend/reductions.py)."""
    dtype, kind = attrs["dtype"], attrs["kind"]
    floats = kind in ("mean", "var", "std", "nanvar", "nanstd", "nanmean")
    if dtype == BOOL or floats and not dtype.is_float:
        em.fail(f"dtype={NUMPY_NAMES[dtype.name]} of np.{kind}() is not supported: it takes "
                + ("a float type" if floats else "a float type or int64"))
    made = {k: attrs[k] for k in ("kind", "axis", "keepdims") if k in attrs}
    return em.op(op, *([x] if ddof is None else [x, ddof]), dtype=dtype, **made)


def extremum(em: _Emitter, x: Value, initial: Value, kind: str, axis, keepdims: bool) -> Value:
    """np.max(x, axis, initial=v) (min, nanmax, nanmin): NumPy's loop starts the reduction
    from v, which is `np.maximum(v', R)` (np.minimum; fmax, fmin for the nan kinds) of v'
    (v cast to x's dtype, as NumPy casts it) and R, x reduced by the kind's row that gives its
    identity where a row is empty (`<kind>_or_identity`): x is read once, never copied.
    np.maximum's order (v' first) is NumPy's: a tie gives R, so the sign of a zero is x's."""
    x = em.as_array(x)
    if not is_numeric(initial.type) or initial.type.is_complex:  # NumPy: TypeError for 1j
        em.fail(f"the initial value of np.{kind}() must be a real number, got {initial.type}")
    axes = em.axes(axis, x.type.ndim) if axis is not None else None
    start = _initial_value(em, initial, x.type.dtype)
    rest = em.op("reduce", x, kind=f"{kind}_or_identity", axis=axes, keepdims=keepdims,
                 dtype=None)
    larger = "maximum" if kind in ("max", "nanmax") else "minimum"
    if kind.startswith("nan") and x.type.dtype.is_float:  # fmax: a NaN operand gives the other
        start, rest = (select(em, em.op("isnan", start), rest, start),
                       select(em, em.op("isnan", rest), start, rest))
    return em.op(larger, start, rest, numpy=True)  # NumPy's ufunc on scalars too (bools stay)


def _initial_value(em: _Emitter, initial: Value, dtype: ScalarType) -> Value:
    """`initial` cast to `dtype`, as NumPy casts it: a float to an int as Python's int()
    (toward zero; ValueError for NaN, OverflowError for infinity), and OverflowError where
    the int is out of `dtype`'s range (NumPy 2's error, not a wrapped value)."""
    value, target = initial, strong(dtype)
    if dtype.is_int:
        if value.type.is_float:  # through int64: 2**63 and above raise (docs/arrays.md)
            value = em.op("cast", value, to=I64)
        if value.type.is_int:
            (low, high), (own_low, own_high) = int_range(dtype), int_range(value.type)
            message = f"Python integer out of bounds for {NUMPY_NAMES[dtype.name]} (initial=)"
            if own_low < low:
                em.raise_if(em.op("lt", value, em.const(low)), "OverflowError", message)
            if own_high > high:
                em.raise_if(em.op("gt", value, em.const(high)), "OverflowError", message)
    return em.op("cast", value, to=target)


# ---- copies, conversions, creation ------------------------------------------------------------

def ascontiguousarray(em: _Emitter, x: Value) -> Value:
    x = em.as_array(x)
    if x.type.ndim == 0:
        return em.reshape(x, [em.const(1)])
    return em.op("array_contiguous", x)


def astype(em: _Emitter, x: Value, dtype: ScalarType, copy: bool) -> Value:
    if not isinstance(x.type, ArrayType):
        em.fail(f"astype() of a {x.type} is not supported", "convert a number with "
                "np.float32(x), float(x), int(x)")
    if x.type.dtype == dtype:
        return em.op("array_copy", x) if copy else x
    return em.op("array_astype", x, dtype=dtype)


def view(em: _Emitter, x: Value, dtype: ScalarType) -> Value:
    """x.view(dtype): x itself for its own dtype, else `array_view_as` (same item size)."""
    if not isinstance(x.type, ArrayType):
        em.fail(f"x.view(dtype) needs an array, got {x.type}")
    return x if x.type.dtype == dtype else em.op("array_view_as", x, dtype=dtype)


def array(em: _Emitter, values: list[Value], shape: tuple[int, ...] | None,
          dtype: ScalarType | None) -> Value:
    """np.array(...) of a display of numbers (`shape` its nesting), of a display of arrays
    (np.stack), or of one value (`shape` None): an array is copied, a tuple unpacked."""
    if shape is None:
        value = values
        if isinstance(value.type, TupleType):
            values = _unpack(em, value, "object")
            shape = (len(values),)
        else:
            x = em.as_array(value)
            copied = em.op("array_copy", x) if x is value else x
            return em.astype(copied, dtype or x.type.dtype)
    if values and all(isinstance(v.type, ArrayType) for v in values):
        if len(shape) != 1:
            em.fail("np.array() of nested displays of arrays is not supported",
                    "write np.stack of np.stack")
        stacked = stack(em, values, 0)
        return em.astype(stacked, dtype) if dtype is not None else stacked
    if any(not is_numeric(v.type) for v in values):
        em.fail("np.array() takes numbers or arrays (not a mix) here, got "
                + ", ".join(str(v.type) for v in values))
    dtype = dtype or (_result_dtype(em, [v.type for v in values]) if values else F64)
    return em.op("array_pack", *values, dtype=dtype, shape=shape)


def linspace(em: _Emitter, start: Value, stop: Value, num: Value, endpoint: bool,
             dtype: ScalarType | None) -> Value:
    for v in (start, stop):
        if not is_numeric(v.type):
            em.fail(f"np.linspace() takes numbers for start and stop here, got {v.type}",
                    "arrays of starts and stops are not supported yet")
    compute = linspace_compute_type(start.type, stop.type)
    return em.op("array_linspace", start, stop, num, endpoint=endpoint, dtype=dtype,
                 compute=compute)


# ---- the node -------------------------------------------------------------------------------

def _dtype_of(em: _Emitter, value: Value) -> ScalarType:
    """The dtype `dtype=y.dtype` names: y's, an array's or a NumPy scalar's."""
    t = value.type
    if isinstance(t, ArrayType):
        return t.dtype
    if isinstance(t, ScalarType) and t.strong:
        return weak(t)
    em.fail(f"a {t} has no dtype (Python's AttributeError)", "take the dtype of an array")


def _expand(inference, node, inputs, out):
    em = _Emitter(inference, node, out)
    a, at = _arguments(em, inputs), dict(node.attrs)
    for name in [name for name in a if name.endswith("_of")]:
        at[name[:-len("_of")]] = _dtype_of(em, a.pop(name))
    function = at["function"]
    calls = {
        "concatenate": lambda: concatenate(em, a["arrays"], at["axis"]),
        "stack": lambda: stack(em, a["arrays"], at["axis"]),
        "hstack": lambda: hstack(em, a["tup"]),
        "vstack": lambda: vstack(em, a["tup"]),
        "split": lambda: split(em, a["ary"], at["indices_or_sections"], at["axis"]),
        "squeeze": lambda: squeeze(em, a["a"], at["axis"]),
        "expand_dims": lambda: expand_dims(em, a["a"], at["axis"]),
        "ravel": lambda: em.ravel(a["a"]),
        "flatten": lambda: em.ravel(em.op("array_copy", em.as_array(a["a"]))),
        "flip": lambda: flip(em, a["m"], at["axis"]),
        "roll": lambda: roll(em, a["a"], a["shift"], at["axis"]),
        "tile": lambda: tile(em, a["A"], a["reps"]),
        "repeat": lambda: repeat(em, a["a"], a["repeats"], at["axis"]),
        "broadcast_to": lambda: broadcast_to(em, a["array"], a["shape"]),
        "swapaxes": lambda: swapaxes(em, a["a"], at["axis1"], at["axis2"]),
        "moveaxis": lambda: moveaxis(em, a["a"], at["source"], at["destination"]),
        "copy": lambda: em.op("array_copy", em.as_array(a["a"])),
        "ascontiguousarray": lambda: ascontiguousarray(em, a["a"]),
        "astype": lambda: astype(em, a["a"], at["dtype"], at["copy"]),
        "view": lambda: view(em, a["a"], at["dtype"]),
        "array": lambda: array(em, a["object"], at["shape"], at["dtype"]),
        "linspace": lambda: linspace(em, a["start"], a["stop"], a["num"], at["endpoint"],
                                     at["dtype"]),
        **dict.fromkeys(EXTREMA, lambda: extremum(em, a["a"], a["initial"], function,
                                                  at["axis"], at["keepdims"])),
        "reduction": lambda: reduction(em, a["a"], a.get("ddof"), at["op"], at),
        "take": lambda: selections.take(em, a["a"], a["indices"], at["axis"], at["mode"]),
        "compress": lambda: selections.compress(em, a["condition"], a["a"], at["axis"]),
        "diagonal": lambda: selections.diagonal(em, a["a"], a.get("offset"), at["axis1"],
                                                at["axis2"]),
    }
    result = calls[function]()
    result.name = result.name or node.outputs[0].name
    return [result]


def _function_rule(types, attrs):
    raise OpTypeError(_RESOLVED)


def py_array_function(*inputs, function, arguments, **statics):
    """The call itself, NumPy's (the interpreter's, on untyped IR)."""
    numpy, rest, args = _numpy(), list(inputs), []
    for _name, count in arguments:
        if count is None or count < 0:
            args.append(rest.pop(0))
        else:
            args.append(tuple(rest[:count]))
            rest = rest[count:]
    dtype = statics.pop("dtype", None)
    dtype = NUMPY_NAMES[dtype.name] if dtype is not None else None
    if arguments and arguments[-1][0] == "dtype_of":  # dtype=y.dtype: y, the last input
        dtype, args = args[-1].dtype, args[:-1]
    if function in ("flatten", "astype", "view"):
        x = args[0]
        if function == "view":
            return x.view(dtype)
        return x.flatten() if function == "flatten" else x.astype(dtype, copy=statics["copy"])
    if function == "array":
        shape = statics.get("shape")
        value = args[0] if shape is None else numpy.reshape(args[0], shape)
        return numpy.array(value, dtype=dtype)
    if function in ("linspace",):
        return numpy.linspace(*args, endpoint=statics["endpoint"], dtype=dtype)
    if function == "reduction":  # np.<kind>(x, dtype=y.dtype): y the last input
        name = f"cum{statics['kind']}" if statics["op"] == "scan" else statics["kind"]
        keep = {k: statics[k] for k in ("axis", "keepdims") if k in statics}
        axis = keep.get("axis")
        keep["axis"] = axis[0] if isinstance(axis, tuple) and len(axis) == 1 else axis
        more = {"ddof": args[1]} if statics["op"] == "statistic" else {}
        return getattr(numpy, name)(args[0], dtype=dtype, **keep, **more)
    if function in EXTREMA:
        return getattr(numpy, function)(args[0], initial=args[1], **statics)
    if function == "compress":  # x.compress(condition) binds the array first
        named = dict(zip((name for name, _ in arguments), args))
        return numpy.compress(named["condition"], named["a"], **statics)
    if function == "split":
        statics = {"indices_or_sections": statics["indices_or_sections"], "axis": statics["axis"]}
        return tuple(numpy.split(*args, **statics))
    return getattr(numpy, function)(*args, **statics)


_def("array_function", -1, _function_rule, py_array_function, {"*": Refused(_RESOLVED)},
     ("raises",), no_vjp="type inference replaces it by the primitives it is made of",
     expand=_expand, cuda=Refused(_RESOLVED),
     doc="np.<function>(...) of shape_functions.py: replaced by primitives in type inference")

EXTREMA = ("max", "min", "nanmax", "nanmin")
"""The reductions whose `initial=` compiled code takes: np.max(x, initial=v) is an
`array_function` (`extremum`), without it a `reduce`."""
FUNCTIONS = ("concatenate", "stack", "hstack", "vstack", "split", "squeeze", "expand_dims",
             "ravel", "flip", "roll", "tile", "repeat", "broadcast_to", "swapaxes", "moveaxis",
             "copy", "ascontiguousarray", "array", "linspace", "take", "compress", "diagonal")
"""The NumPy functions (np.<name>) that lower to `array_function`."""
METHODS = ("ravel", "flatten", "copy", "astype", "squeeze", "swapaxes", "repeat", "take",
           "compress", "diagonal", "view")
"""The array methods (x.<name>()) that lower to `array_function`."""
