"""Array allocation and reference primitives: creation ops, retain and release.

Creation follows NumPy: `array_new` is `np.empty` / `np.zeros` / `np.ones` /
`np.full` of a shape given as int64 inputs (attrs `dtype`, and `fill`: None for
empty, else the inputs end with the fill value); `array_new_like` is the
`*_like` form taking dtype and shape from an array; `array_arange` is
`np.arange(start, stop, step)` with NumPy's length rule.

Ownership (see docs/arrays.md): an array Value is *owned* by the graph that
produced it by an allocating op, a call or a structural op, and *borrowed*
everywhere else. The retain/release pass (passes/retain_release.py) inserts `array_retain`
where a borrowed array must become owned (yielded, returned, carried) and
`array_release` after an owned array's last use. Both are no-ops in the
reference interpreter, where Python's garbage collector owns everything.
"""
from __future__ import annotations

from ...errors import TypingError
from ..shape_algebra import dims_of, like
from ..types import F64, I64, NONE, NUMPY_NAMES, ArrayType, ScalarType, TupleType, is_numeric
from .batching import NotBatchable, dims, each, with_rank
from .declare import _def
from .table import OpTypeError, Routine
from .vjp import with_attrs


def _dims(types):
    for t in types:
        if t != I64:
            raise OpTypeError(f"array dimensions must be ints, got {t}")


def new_rule(types, attrs):
    dtype = attrs["dtype"]
    dims = types[:-1] if attrs.get("fill") == "value" else types
    _dims(dims)
    operands = [I64] * len(dims)
    if attrs.get("fill") == "value":
        if not is_numeric(types[-1]):
            raise OpTypeError(f"cannot fill a {NUMPY_NAMES[dtype.name]} array with {types[-1]}")
        operands.append(dtype)
    return operands, ArrayType(dtype, len(dims))


def new_like_rule(types, attrs):
    like = types[0]
    if not isinstance(like, ArrayType):
        raise OpTypeError(f"{attrs.get('what', 'zeros_like')}() needs an array, got {like}")
    dtype = attrs.get("dtype") or like.dtype
    operands = [like]
    if attrs.get("fill") == "value":
        operands.append(dtype)
    return operands, ArrayType(dtype, like.ndim)


def arange_rule(types, attrs):
    for t in types:
        if not is_numeric(t):
            raise OpTypeError(f"arange() needs numbers, got {t}")
    dtype = F64 if any(t.is_float for t in types if t.name != "bool") else I64
    return [dtype] * len(types), ArrayType(dtype, 1)


def retain_rule(types, attrs):
    if not isinstance(types[0], ArrayType):
        raise OpTypeError(f"only arrays are reference counted, got {types[0]}")
    return [types[0]], types[0]


def release_rule(types, attrs):
    retain_rule(types, attrs)
    return [types[0]], NONE


def _numpy():
    import numpy

    return numpy


def py_array_new(*inputs, dtype: ScalarType, fill=None):
    numpy = _numpy()
    dims = inputs[:-1] if fill == "value" else inputs
    for d in dims:
        if d < 0:
            raise ValueError("negative dimensions are not allowed")
    out = numpy.empty(tuple(dims), dtype=NUMPY_NAMES[dtype.name])
    if fill is not None:
        out[...] = inputs[-1] if fill == "value" else fill
    return out


def py_array_new_like(like, *value, dtype: ScalarType | None = None, fill=None, what=None):
    numpy = _numpy()  # empty_like: made where `like` lives (a CuPy array's on its device)
    out = numpy.empty_like(like, dtype=NUMPY_NAMES[dtype.name] if dtype else like.dtype,
                           order="C")
    if fill is not None:
        out[...] = value[0] if fill == "value" else fill
    return out


def py_arange(*inputs):
    return _numpy().arange(*inputs)


# ---- what type inference settles (OpDef.operands) -----------------------------------------

_CREATION_NAMES = {None: "np.empty", 0: "np.zeros", 1: "np.ones", "value": "np.full"}
"""The function an `array_new` of each `fill` comes from, for messages."""


def shape_dims(shape, what: str, loc, out) -> list:
    """The dimensions of a shape value: an int, or each element of a tuple."""
    if shape.type == I64:
        return [shape]
    if isinstance(shape.type, TupleType):
        return [out.add("getitem", [shape], attrs={"index": i}, loc=loc, types=[t]).outputs[0]
                for i, t in enumerate(shape.type.elements)]
    raise TypingError(f"the shape of {what}() must be an int or a tuple of ints, "
                      f"got {shape.type}", loc, hint="e.g. np.zeros(n) or np.zeros((n, m))")


def _creation_operands(inference, node, attrs, inputs, out):
    """`np.zeros(shape)` and the like as typed IR has them (see frontend/creation.py):
    a packed shape unpacked into one int per axis, and the dtype in `attrs` made
    explicit (`np.full`'s is its fill value's, a `*_like`'s its argument's)."""
    what = _CREATION_NAMES.get(attrs.get("fill"), "np.full")
    if attrs.pop("dtype_of", False):  # dtype=x.dtype: the last input is x
        *inputs, source = inputs
        if not isinstance(source.type, ArrayType):
            raise TypingError(f"dtype= of {what}() reads the dtype of an array, got "
                              f"{source.type}", node.loc)
        attrs["dtype"] = source.type.dtype
    if attrs.pop("packed_shape", False):
        inputs = shape_dims(inputs[0], what, node.loc, out) + inputs[1:]
    if attrs.get("dtype") is not None:
        return inputs
    if node.op == "array_new_like":
        if isinstance(inputs[0].type, ArrayType):  # else the type rule reports it
            attrs["dtype"] = inputs[0].type.dtype
    elif attrs.get("fill") == "value" and is_numeric(inputs[-1].type):
        attrs["dtype"] = inputs[-1].type
    else:
        raise TypingError(f"{what}() fills an array with a number, got {inputs[-1].type}",
                          node.loc)
    return inputs


# ---- symbolic shapes (ir/shape_algebra.py) ------------------------------------------------

def _new_shape(node, table):
    """The dims its int inputs give."""
    return dims_of(node, node.inputs[:-1] if node.attrs.get("fill") == "value" else node.inputs,
                   table)



def _like_cannot_raise(node, shapes):
    """A new array of its operand's dtype (so of a size that exists), filled with nothing, a
    constant or a number of the same kind (no conversion that raises)."""
    dtype = node.outputs[0].type.dtype
    value = node.inputs[-1].type if node.attrs.get("fill") == "value" else dtype
    return (dtype == node.inputs[0].type.dtype and isinstance(value, ScalarType)
            and (value.name == dtype.name or dtype.is_float and value.is_float
                 or dtype.is_complex and (value.is_float or value.is_complex)))


@with_attrs
def _fill_vjp(e, g, ins, out, needs, attrs):
    """np.full(shape, v) / np.full_like(x, v): v's adjoint is the sum of g; nothing else has one."""
    adjoints = [None] * len(ins)
    if attrs.get("fill") == "value" and needs[-1]:
        adjoints[-1] = e.op("sum_to_like", g, ins[-1])
    return adjoints


def _fill_jvp(op: str):
    """np.full(shape, v) / np.full_like(x, v): an array of v's tangent; the tangent of any
    other creation is zeros (a new array: it may be written into)."""
    def jvp(e, tangents, ins, out, attrs):
        if attrs.get("fill") == "value":
            if tangents[-1] is not None:
                return e.op(op, *ins[:-1], tangents[-1], **attrs)
            ins = ins[:-1]
        return e.op(op, *ins, **{**attrs, "fill": 0})
    jvp.tangent_inputs = _fill_value
    return jvp


def _fill_value(attrs, ins):
    """The inputs whose tangents reach a creation's: its fill value's alone. The shape, or the
    array a `*_like` takes it from, changes no number of the result, so forward mode's activity
    (ad/forward_activity.py) gives no tangent to `np.full_like(x, c)` of an active `x`."""
    return ins[-1:] if attrs.get("fill") == "value" else []


def _filled_batch(b, node, ins, batched):
    """A new array per example: of the batch's shape (`*_like` of a batch), or filled with a
    number per example (each one's repeated over its example's shape)."""
    like, filled = node.op == "array_new_like", node.attrs.get("fill") == "value"
    if not like and any(batched[:len(ins) - filled]):
        raise NotBatchable("an array of a length that differs per example")
    if not (filled and batched[-1]):
        return each(b.op(node.op, *ins, **node.attrs))
    shape = dims(b, ins[0])[1 if batched[0] else 0:] if like else ins[:-1]
    dtype = node.outputs[0].type.dtype
    value = ins[-1] if ins[-1].type.dtype == dtype else b.op("array_astype", ins[-1], dtype=dtype)
    repeated = b.op("array_broadcast_to", with_rank(b, value, len(shape)), b.size, *shape)
    return each(b.op("array_copy", repeated))


_FILLED = ("raises", "allocates", "holomorphic")
"""Creations: linear in their fill value, whose rules hold on complex numbers too."""
_def("array_new", -1, new_rule, py_array_new, {"*": Routine("array_new")}, _FILLED,
     vjp=_fill_vjp, jvp=_fill_jvp("array_new"), operands=_creation_operands, shape=_new_shape,
     batch=_filled_batch,
     doc="np.empty/zeros/ones/full(shape): inputs are the dims (then the fill value)")
_def("array_new_like", -1, new_like_rule, py_array_new_like, {"*": Routine("array_new_like")},
     (*_FILLED, "reads"), vjp=_fill_vjp, jvp=_fill_jvp("array_new_like"),
     cannot_raise=_like_cannot_raise,
     batch=_filled_batch,
     operands=_creation_operands,
     shape=like(0), doc="np.empty_like/zeros_like/ones_like/full_like(x)")
_def("array_arange", -1, arange_rule, py_arange, {"*": Routine("array_arange")}, ("raises", "allocates"),
     zero_derivative="ints or evenly spaced values from its bounds",
     doc="np.arange(start, stop, step); ValueError for a zero step")
_def("array_retain", 1, retain_rule, lambda a: a, {"*": Routine("array_retain")}, (), shape=like(0),
     no_vjp="memory management, added after differentiation",
     doc="a new owned reference to a (borrowed) array: the same array")
_def("array_release", 1, release_rule, lambda a: None, {"*": Routine("array_release")}, (),
     zero_derivative="no result",
     doc="give up an owned reference (the last one frees the memory)")
