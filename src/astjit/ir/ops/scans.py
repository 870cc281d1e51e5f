"""Reductions that are not one accumulator's fold: `np.argmax` / `np.argmin` (an index)
and `np.cumsum` / `np.cumprod` (a scan: every prefix's result).

- `arg_reduce x {kind, axis, keepdims}`: `kind` "max" or "min"; `axis` None (the
  index into the array flattened in C order) or a 1-tuple (an int, possibly
  negative); the result int64: a scalar for `axis=None` without `keepdims`, else an
  array of the input's ndim less the axis (kept with length 1 under `keepdims`).
  The first extremum wins; a NaN is an extremum (the first NaN wins), as in NumPy;
  an empty reduced axis is NumPy's ValueError "attempt to get argmax of an empty
  sequence". No derivative (an index).
- `scan x {kind, axis, dtype, reverse}`: `kind` "sum" or "prod"; `axis` as above
  (None: the result is 1-d, the input flattened in C order); `dtype` None or
  NumPy's `dtype=` (the type elements are converted to and accumulated in; by
  default the kind's row's: int64 for bool and int, the float itself); `reverse`
  (only in derivative code) scans from the end of the axis. The result has the
  input's shape. cumsum is linear: its VJP is the reverse cumsum of the adjoint,
  its tangent the cumsum of the tangent; cumprod's adjoint is the reverse cumsum of
  `g * out` over `x` (NaN at an element that is exactly 0, unlike JAX's).

Both lower to loops of their own on the CPU (backend/llvm/scans.py) and run on the
GPU's host program (`OnHost`: NumPy's function on CuPy's arrays).
"""
from __future__ import annotations

from ..shape_algebra import reduced
from ..types import I64, ArrayType
from .batching import NotBatchable, batch_size_product, each, shifted
from .declare import _def
from .reductions import _sum_dtype, normalize_axes
from .table import OpTypeError, Routine
from .vjp import div, with_attrs

EMPTY_ARG = "attempt to get arg{kind} of an empty sequence"
"""NumPy's ValueError for the index of an extremum of nothing."""


def _axes(attrs, x: ArrayType, what: str) -> tuple[int, ...]:
    axis = attrs.get("axis")
    if axis is not None and len(axis) != 1:
        raise OpTypeError(f"{what}() takes one axis, got {axis}")
    if axis is None:
        return tuple(range(x.ndim))
    if x.ndim == 0:
        raise OpTypeError(f"axis {axis[0]} is out of bounds for array of dimension 0")
    return normalize_axes(axis, x.ndim)


def _array(types, what: str) -> ArrayType:
    (x,) = types
    if not isinstance(x, ArrayType):
        raise OpTypeError(f"np.{what}() needs an array here, got {x}")
    return x


# ---- argmax, argmin ----------------------------------------------------------------------

def arg_rule(types, attrs):
    x = _array(types, "arg" + attrs["kind"])
    axes = _axes(attrs, x, "arg" + attrs["kind"])
    if x.dtype.is_complex:  # NumPy orders complexes lexicographically; np.max refuses them too
        raise OpTypeError(f"np.arg{attrs['kind']}() of a complex array is not supported yet "
                          "(docs/arrays.md: complex)")
    keepdims = bool(attrs.get("keepdims"))
    if not keepdims and (x.ndim == 0 or attrs.get("axis") is None or x.ndim == 1):
        return [x], I64
    return [x], ArrayType(I64, x.ndim if keepdims else x.ndim - len(axes))


def py_arg_reduce(x, *, kind: str, axis=None, keepdims: bool = False):
    import numpy

    found = getattr(numpy, "arg" + kind)(x, axis=None if axis is None else axis[0],
                                         keepdims=keepdims)
    return found if isinstance(found, numpy.ndarray) and found.ndim else int(found)


def _arg_shape(node, table):
    shape = table.shape(node.inputs[0])
    return reduced(shape, _axes(node.attrs, node.inputs[0].type, "argmax"),
                   node.attrs.get("keepdims"))


def _along_axis_batch(op: str):
    """argmax / cumsum of each example: along its axis shifted past the batch axis, or
    along each example flattened (axis=None)."""
    def rule(b, node, ins, batched):
        x, axis = ins[0], node.attrs.get("axis")
        if x.type.ndim == 1 or axis is None and node.attrs.get("keepdims"):
            raise NotBatchable(f"{op} of 0-d arrays, or of all axes kept")
        if axis is None:
            x = b.op("array_reshape", x, b.size, batch_size_product(b, x))
            return each(b.op(op, x, **{**node.attrs, "axis": (1,)}))
        return each(b.op(op, x, **{**node.attrs,
                                   "axis": shifted(normalize_axes(axis, x.type.ndim - 1))}))
    return rule


_def("arg_reduce", 1, arg_rule, py_arg_reduce, {"*": Routine("arg_reduce")},
     ("pure", "raises", "reads", "allocates", "numpy_result"), zero_derivative="an index",
     shape=_arg_shape, batch=_along_axis_batch("arg_reduce"),
     doc="np.argmax/argmin(x, axis, keepdims): attrs kind ('max', 'min'), axis (None or a "
         "1-tuple), keepdims")


# ---- cumsum, cumprod ---------------------------------------------------------------------

def scan_dtype(attrs, x: ArrayType):
    """The result's dtype: `dtype=`, else int64 for bool and int, the float (complex) itself."""
    dtype = attrs.get("dtype")
    if dtype is not None and x.dtype.is_complex and not dtype.is_complex:
        raise OpTypeError(f"cum{attrs['kind']}() of a complex array to {dtype} is not supported "
                          "(NumPy drops the imaginary parts, with a ComplexWarning): take "
                          "np.real of the result instead")
    if dtype is not None and x.dtype.is_float and not (dtype.is_float or dtype.is_complex):
        raise OpTypeError(f"cum{attrs['kind']}() of a float array to {dtype} is not supported: "
                          "convert the result instead")
    return dtype or _sum_dtype(x.dtype)


def scan_rule(types, attrs):
    x = _array(types, "cum" + attrs["kind"])
    _axes(attrs, x, "cum" + attrs["kind"])
    return [x], ArrayType(scan_dtype(attrs, x), 1 if attrs.get("axis") is None else x.ndim)


def py_scan(x, *, kind: str, axis=None, dtype=None, reverse: bool = False):
    import numpy

    from ..types import NUMPY_NAMES

    a = None if axis is None else axis[0]
    flip = (lambda v: numpy.flip(v, axis=a)) if reverse else (lambda v: v)
    if reverse and a is None:
        x = numpy.ravel(x)
    return flip(getattr(numpy, "cum" + kind)(flip(x), axis=a,
                                             dtype=dtype and NUMPY_NAMES[dtype.name]))


def _scan_shape(node, table):
    """The input's, along an axis; flattened, unknown (but for a 1-d input)."""
    shape = table.shape(node.inputs[0])
    if node.attrs.get("axis") is None and len(shape) != 1:
        return None
    return shape


def _reverse_sum(attrs) -> dict:
    """The attrs of the reverse cumsum (of an adjoint, already of the result's dtype)."""
    return {"kind": "sum", "axis": attrs.get("axis"), "reverse": not attrs.get("reverse", False)}


@with_attrs
def _scan_vjp(e, g, ins, out, needs, attrs):
    """Reverse mode: cumsum's adjoint is the reverse cumsum of g (back to x's shape where
    the axis was None); cumprod's that of g * out, over x."""
    x = ins[0]
    if not (x.type.dtype.is_float or x.type.dtype.is_complex):
        return [None]
    if attrs["kind"] == "prod":
        g = e.op("mul", g, out)
    back = e.op("scan", g, **_reverse_sum(attrs))
    if attrs.get("axis") is None and x.type.ndim != 1:
        dims = [e.op("array_dim", x, axis=k) for k in range(x.type.ndim)]
        back = e.op("array_reshape", back, *dims)
    back = div(e, back, x) if attrs["kind"] == "prod" else back
    if back.type.dtype.is_complex and not x.type.dtype.is_complex:  # a float x, dtype=complex
        back = e.op("real", back)  # JAX's transpose (docs/arrays.md: gradients)
    return [back]


def _scan_jvp(e, tangents, ins, out, attrs):
    """Forward mode: cumsum of the tangent; cumprod's: out times the cumsum of dx / x."""
    (dx,) = tangents
    if attrs["kind"] == "sum":
        return e.op("scan", dx, **attrs)
    return e.op("mul", out, e.op("scan", div(e, dx, ins[0]), **{**attrs, "kind": "sum"}))


_def("scan", 1, scan_rule, py_scan, {"*": Routine("scan")},
     ("pure", "reads", "allocates", "holomorphic"), vjp=_scan_vjp, jvp=_scan_jvp, shape=_scan_shape,
     batch=_along_axis_batch("scan"),
     doc="np.cumsum/cumprod(x, axis, dtype): attrs kind ('sum', 'prod'), axis (None or a "
         "1-tuple), dtype, reverse (derivative code: from the end of the axis)")
