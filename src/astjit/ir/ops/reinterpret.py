"""`x.view(dtype)`: an array's memory read as another dtype of the same item size.

- `array_view_as x {dtype}`: a view of x (same shape and strides, a new reference to
  its owner: writes through it reach x) whose elements are x's bytes read as `dtype`,
  as NumPy's `x.view(dtype)`: float64 as int64 or uint64, float32 as int32, int8 as
  uint8, complex64 as float64 ... Type inference makes it only between dtypes of one
  item size, neither of them bool (a bool array must hold 0 and 1: NumPy's view of
  other bytes is a bool that compiled code's kernels do not read as NumPy does).
  No derivative: bits, not numbers (grad through it is refused, naming the op).
"""
from __future__ import annotations

from ..types import BOOL, NUMPY_NAMES, ArrayType
from .batching import each
from .declare import _def
from .table import OpTypeError, Routine

SAME_SIZE = ("x.view({dtype}) of a {source} array is not supported: compiled code reads an "
             "array's memory as a dtype of the same item size only, neither of them bool")


def _view_as_rule(types, attrs):
    (x,) = types
    if not isinstance(x, ArrayType):
        raise OpTypeError(f"x.view(dtype) needs an array, got {x}")
    if not reinterpretable(x.dtype, attrs["dtype"]):
        raise OpTypeError(SAME_SIZE.format(dtype=NUMPY_NAMES[attrs["dtype"].name],
                                           source=NUMPY_NAMES[x.dtype.name]))
    return [x], ArrayType(attrs["dtype"], x.ndim)


def reinterpretable(source, target) -> bool:
    """Whether compiled code reads `source`'s memory as `target` (a view)."""
    import numpy

    def size(t):
        return numpy.dtype(NUMPY_NAMES[t.name]).itemsize

    return BOOL not in (source, target) and size(source) == size(target)


def _view_as(x, dtype):
    return x.view(NUMPY_NAMES[dtype.name])


_def("array_view_as", 1, _view_as_rule, _view_as, {"*": Routine("view_as")}, ("pure", "view"),
     no_vjp="x.view(dtype) reinterprets bits: not differentiable",
     shape=lambda node, table: table.shape(node.inputs[0]),
     batch=lambda b, node, ins, batched: each(b.op("array_view_as", ins[0], **node.attrs)),
     doc="x.view(dtype): x's memory read as attrs['dtype'], of the same item size (a view)")
