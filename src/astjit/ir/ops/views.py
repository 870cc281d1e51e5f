"""Array views and slice assignment (NumPy semantics; docs/arrays.md).

A view is a new array value over the memory of its input: same `owner` (a new
reference to it, so the result is *owned*, like an allocation), other data
pointer, shape and strides. Nothing is copied, and writes through a view reach
the base array.

- `array_view {spec}`: basic indexing `x[a:b:c, i, ...]`. Inputs `[array,
  *parts]`; `spec` has one entry per index: `"i"` (an integer: the axis is
  dropped; NumPy's negative-index and bounds rules) or `"s"` followed by three
  flags `"1"`/`"0"` saying which of start, stop and step are given (each given
  one is the next input). Axes past the spec are taken whole. Slices follow
  `PySlice_AdjustIndices` (out-of-range bounds clamp; a zero step is
  ValueError "slice step cannot be zero").
- `array_transpose`: `x.T` / `np.transpose(x)`: the axes reversed.
- `array_reshape`: `x.reshape(dims)` / `np.reshape(x, dims)`; inputs `[array,
  *dims]` (before type inference a packed shape with `packed_shape=True`, as
  creation ops have). One dim may be -1 (inferred). A view where NumPy's reshape
  makes one (C-contiguous data, or strided data whose axes step through memory as
  the new shape needs: `x[::2].reshape(2, 2)`), else a new C-contiguous copy;
  ValueError "cannot reshape array of size N into shape (...)" when sizes differ.
  With `ravel=True` (np.ravel, x.ravel()), a view of C-contiguous data only, else
  a copy, as NumPy's ravel: its choice is not the reshape's.
- `array_assign`: `y[...] = v` (the frontend makes the view): copy `v` (a
  number, or an array broadcast to the destination's shape, NumPy's rules)
  into the destination. Overlapping source and destination behave as if the
  source were copied first.
- `augassign {op}`: `x op= v`, inputs `[x, v, x op v]`. What it means depends on
  x's type, so type inference replaces it (its `expand`; `inplace_problem` is
  its check): for an array, NumPy's in-place update (the new value copied into
  x, which every name bound to x sees); for anything else, Python's rebinding
  to `x op v`.
"""
from __future__ import annotations

import operator
import sys

from ..core import Node, Value
from ..shape_algebra import dims_of, same_size, unknown_length
from ..types import BOOL, I64, NONE, ArrayType, ScalarType, is_numeric
from . import vjp as v
from .adjoints import AddIntoView
from .allocation import shape_dims
from .batching import each, unbatched_operands, with_rank
from .declare import _def
from .table import OpTypeError, Refused, Routine

SLICE_STEP_ZERO = "slice step cannot be zero"


def _array(t, what):
    if not isinstance(t, ArrayType):
        raise OpTypeError(f"{what} needs an array, got {t}")
    return t


def _ints(types, what):
    for t in types:
        if t != I64:
            raise OpTypeError(f"{what} must be integers, got {t}")


def spec_inputs(spec) -> int:
    """How many inputs (after the array) a view spec takes."""
    return sum(1 if entry == "i" else entry[1:].count("1") for entry in spec)


def view_rule(types, attrs):
    array = _array(types[0], "slicing")
    spec = attrs["spec"]
    if len(spec) > array.ndim:
        raise OpTypeError(f"too many indices for a {array.ndim}-d array: {len(spec)}")
    _ints(types[1:], "slice bounds and indices")
    dropped = sum(1 for entry in spec if entry == "i")
    return [array, *[I64] * (len(types) - 1)], ArrayType(array.dtype, array.ndim - dropped)


def transpose_rule(types, attrs):
    array = _array(types[0], "transpose")
    return [array], array


def reshape_rule(types, attrs):
    array = _array(types[0], "reshape")
    _ints(types[1:], "the dimensions of reshape()")
    return [array, *[I64] * (len(types) - 1)], ArrayType(array.dtype, len(types) - 1)


def assign_rule(types, attrs):
    dest = _array(types[0], "slice assignment")
    value = types[1]
    if isinstance(value, ArrayType):
        if value.dtype != dest.dtype:
            raise OpTypeError(f"assigning a {value} into a {dest} slice (a dtype conversion) "
                              "is not supported yet")
        if value.ndim > dest.ndim:
            raise OpTypeError(f"cannot assign a {value.ndim}-d array into a {dest.ndim}-d slice")
        return [dest, value], NONE
    if not is_numeric(value):
        raise OpTypeError(f"cannot store {value} into {dest}")
    return [dest, dest.dtype], NONE


def inplace_problem(op: str, target: ArrayType, operand, new) -> tuple[str, str] | None:
    """Why NumPy's `target op= operand` raises, as (exception, message), or None.

    NumPy computes `target op operand` into `target`, so the result must cast to
    the target's dtype under the 'same_kind' rule (`int_array += 1.5` is a
    TypeError), must not have more dimensions than the target, and `@=` needs a
    matrix on the right.
    """
    import numpy

    from ..types import NUMPY_NAMES
    from .elementwise import numpy_function

    if op == "matmul":
        if target.ndim < 1 or not isinstance(operand, ArrayType) or operand.ndim < 2:
            return "ValueError", ("inplace matrix multiplication requires the first operand to "
                                  "have at least one and the second at least two dimensions.")
        name = "matmul"
    else:
        name = numpy_function(op).__name__
    if not isinstance(new, ArrayType):
        if not (isinstance(new, ScalarType) and target.ndim == 0):
            return None
        new = ArrayType(new, 0)  # a ufunc of 0-d arrays: its scalar result (ir/infer.py)
    have, want = NUMPY_NAMES[new.dtype.name], NUMPY_NAMES[target.dtype.name]
    if not numpy.can_cast(have, want, "same_kind"):
        return "UFuncOutputCastingError", (f"Cannot cast ufunc '{name}' output from dtype('{have}') to "
                             f"dtype('{want}') with casting rule 'same_kind'")
    if new.ndim > target.ndim:
        return "ValueError", (f"non-broadcastable output operand: a {target.ndim}-d array "
                              f"cannot hold the {new.ndim}-d result of its '{name}'")
    return None


def augassign_rule(types, attrs):
    raise OpTypeError("augassign is settled by type inference")


# ---- what type inference settles (OpDef.expand, operands) ---------------------------------

def _augmented_assignment(inference, node, inputs, out):
    """`x op= v` (inputs x, v, x op v): for an array x, NumPy's in-place update, whose
    result is x itself, so every name bound to it sees the new values; NumPy's
    refusals (`inplace_problem`) raise when the statement runs, as NumPy's do. For
    anything else, Python's rebinding to x op v."""
    target, operand, new = inputs
    if not isinstance(target.type, ArrayType):
        new.name = new.name or node.outputs[0].name  # the target's name, for dumps
        return [new]
    problem = inplace_problem(node.attrs["op"], target.type, operand.type, new.type)
    if problem is None:
        assign = Node("array_assign", [], [Value("", None)], loc=node.loc)
        inference.infer_leaf(assign, [target, new], out)
    else:
        exc, message = problem
        true = out.add("const", [], attrs={"value": True, "type": BOOL}, loc=node.loc,
                       types=[BOOL]).outputs[0]
        out.add("raise_if", [true], attrs={"exc": exc, "message": message}, loc=node.loc,
                types=[NONE])
    return [target]


def _reshape_operands(inference, node, attrs, inputs, out):
    """A packed shape (`x.reshape(shape)` of a tuple) unpacked into one int per axis."""
    if attrs.pop("packed_shape", False):
        inputs = [inputs[0], *shape_dims(inputs[1], "reshape", node.loc, out)]
    return inputs


def _advanced_view(inference, node, inputs, out):
    """`a[1:, idx]`: an integer or bool array among the parts is advanced indexing
    (ops/advanced_index.py), a copy, not a view."""
    from . import advanced_index

    if isinstance(inputs[0].type, ArrayType) and advanced_index.is_advanced(inputs[1:]):
        return advanced_index.read(inference, node, inputs[0], node.attrs["spec"], inputs[1:],
                                   out)
    return None


# ---- symbolic shapes (ir/shape_algebra.py) ------------------------------------------------

def _view_shape(node, table):
    """The axes a whole slice `:` or no index takes kept, those an index takes dropped,
    a bounded slice's of a length of its own: one that slices of one axis length by the
    same literal bounds share (`x[12:16]` and `eye(n)[:, 12:16]` of an `x` of length n)."""
    shape, out, dims = table.shape(node.inputs[0]), node.outputs[0], []
    spec, parts = node.attrs["spec"], iter(node.inputs[1:])
    for k, d in enumerate(shape):
        entry = spec[k] if k < len(spec) else "s000"
        bounds = [next(parts) if flag == "1" else None for flag in entry[1:]]
        if entry == "s000":  # `:` or no index: the whole axis
            dims.append(d)
        elif entry != "i":  # a slice with bounds
            given = [b for b in bounds if b is not None]
            literal = [_literal(table.dim(b, out, len(dims))) for b in given]
            dims.append(frozenset({("slice", d, entry, *literal)} if None not in literal
                                  else {(out.id, len(dims))}))
    return tuple(dims)


def _literal(d):
    """The int a Dim is when it is a literal length (ONE: 1), else None."""
    if not d:
        return 1
    (atom,) = d if len(d) == 1 else (None,)
    return atom[1] if isinstance(atom, tuple) and atom[0] == "const" else None


def _reshape_shape(node, table):
    """The dims its int inputs give (unknown while the shape is packed); where they are
    literals and the operand has one length that is not, the check makes that one known."""
    if node.attrs.get("packed_shape"):
        return None
    shape = dims_of(node, node.inputs[1:], table)
    found = unknown_length(table.shape(node.inputs[0]), shape)
    if found is not None:
        table.equate(*found)
    return shape


def _view_cannot_raise(node, shapes):
    """Slices without a step (bounds clamp), and indices proved or assumed in bounds."""
    fine = node.attrs.get("inbounds") or node.attrs.get("boundscheck", True) is False
    return all(entry[-1] == "0" if entry != "i" else fine for entry in node.attrs["spec"])


def _reshape_cannot_raise(node, shapes):
    """Sizes the symbolic shapes prove equal (a reshape back to a shape of the same size)."""
    table = shapes()
    source, result = table.operands(node)[0], table.get(node.outputs[0])
    return (not node.attrs.get("packed_shape") and None not in (source, result)
            and same_size(source, result))


# ---- reference semantics -------------------------------------------------------------

def _clamp(bound, length, lower, upper):
    if bound < 0:
        return max(bound + length, lower)
    return min(bound, upper)


def adjust_slice(length, start, stop, step):
    """PySlice_AdjustIndices: the clamped start and the length of the slice."""
    if step == 0:
        raise ValueError(SLICE_STEP_ZERO)
    lower, upper = (0, length) if step > 0 else (-1, length - 1)
    start = (lower if step > 0 else upper) if start is None else _clamp(start, length, lower, upper)
    stop = (upper if step > 0 else lower) if stop is None else _clamp(stop, length, lower, upper)
    if step > 0:
        n = (stop - start - 1) // step + 1 if start < stop else 0
    else:
        n = (start - stop - 1) // (-step) + 1 if stop < start else 0
    return start, n


def py_array_view(array, *parts, spec, boundscheck=True, inbounds=False):
    parts = list(parts)
    index = []
    for axis, entry in enumerate(spec):
        if entry == "i":
            i, size = parts.pop(0), array.shape[axis]
            assert not inbounds or 0 <= i < size, f"index {i} of size {size} proved in bounds"
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
            index.append(i)
        else:
            bounds = [parts.pop(0) if flag == "1" else None for flag in entry[1:]]
            if bounds[2] == 0:
                raise ValueError(SLICE_STEP_ZERO)
            index.append(slice(*bounds))
    return array[tuple(index)]


def py_reshape(array, *dims, packed_shape=False, ravel=False):
    if ravel:  # np.ravel's choice, not the reshape's: a view of C-contiguous data only
        array = array if array.flags.c_contiguous else array.copy()
    if packed_shape:
        dims = dims[0] if isinstance(dims[0], tuple) else (dims[0],)
    return array.reshape(tuple(dims))


def py_assign(dest, value):
    dest[...] = value


_INPLACE = {"add": operator.iadd, "sub": operator.isub, "mul": operator.imul,
            "truediv": operator.itruediv, "floordiv": operator.ifloordiv, "mod": operator.imod,
            "pow": operator.ipow, "lshift": operator.ilshift, "rshift": operator.irshift,
            "bitand": operator.iand, "bitor": operator.ior, "bitxor": operator.ixor,
            "matmul": operator.imatmul}


def py_augassign(x, v, new, op):
    """Python's own `x op= v` for an array (NumPy's in-place ufunc); `new` otherwise."""
    numpy = sys.modules.get("numpy")
    return _INPLACE[op](x, v) if numpy and isinstance(x, numpy.ndarray) else new



def _view_batch(b, node, ins, batched):
    """Each example's view: the batch's, with its batch axis whole."""
    unbatched_operands(node, batched)
    return each(b.op("array_view", *ins, **{**node.attrs, "spec": ("s000", *node.attrs["spec"])}))


def _assign_batch(b, node, ins, batched):
    """y[...] = v into each example: a batch of values broadcast as each example's is."""
    dest, v = b.writable(node.inputs[0]), ins[1]
    if batched[1]:
        v = with_rank(b, v, dest.type.ndim - 1)
    return [(b.op("array_assign", dest, v), False)]


def _transpose_batch(b, node, ins, batched):
    return each(b.op("array_permute", ins[0], axes=(0, *range(ins[0].type.ndim - 1, 0, -1))))


def _reshape_batch(b, node, ins, batched):
    unbatched_operands(node, batched)
    return each(b.op("array_reshape", ins[0], b.size, *ins[1:], **node.attrs))


def _reshape_vjp(e, g, ins, out, needs):
    """The adjoint reshaped back to the input's shape (a view when contiguous)."""
    x = ins[0]
    dims = [e.op("array_dim", x, axis=k) for k in range(x.type.ndim)]
    return [e.op("array_reshape", g, *dims)] + [None] * len(ins[1:])


_def("array_view", -1, view_rule, py_array_view, {"*": Routine("array_view")},
     ("raises", "view", "linear"),
     shape=_view_shape, cannot_raise=_view_cannot_raise, expand=_advanced_view,
     vjp=v.with_attrs(lambda e, g, ins, out, needs, attrs: [
         AddIntoView(g, "array_view", tuple(ins[1:]), dict(attrs))] + [None] * len(ins[1:])),
     batch=_view_batch,
     doc="x[a:b:c, i]: a view; inputs [array, *parts] as attrs['spec'] says; attrs boundscheck, "
         "inbounds (its integer parts, as array_get's)")
_def("array_transpose", 1, transpose_rule, lambda a: a.T, {"*": Routine("array_transpose")},
     ("pure", "view", "linear"),
     vjp=lambda e, g, ins, out, needs: [e.op("array_transpose", g)],
     shape=lambda node, table: table.shape(node.inputs[0])[::-1],
     batch=_transpose_batch, doc="x.T: a view with the axes reversed")
_def("array_reshape", -1, reshape_rule, py_reshape, {"*": Routine("array_reshape")},
     ("raises", "view", "linear"), vjp=_reshape_vjp, operands=_reshape_operands, shape=_reshape_shape,
     cannot_raise=_reshape_cannot_raise, batch=_reshape_batch,
     doc="x.reshape(dims): a view where NumPy's reshape makes one, else a copy; attrs "
         "ravel (a view of C-contiguous data only, as np.ravel)")
_def("array_assign", 2, assign_rule, py_assign, {"*": Routine("array_assign")},
     ("raises", "writes", "linear"), batch=_assign_batch,
     no_vjp="reverse mode handles array writes itself (ad/writes.py)",
     doc="y[...] = v: copy v (broadcast) into the array y")
_def("augassign", 3, augassign_rule, py_augassign,
     {"*": Refused("`x op= v` is replaced in type inference")}, ("raises", "writes"),
     no_vjp="type inference replaces it", expand=_augmented_assignment,
     doc="x op= v: in place for an array x, a rebinding otherwise; type inference replaces it")
