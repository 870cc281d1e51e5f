"""Reverse-mode rules of the array ops, and un-broadcasting around every elementwise rule.

Imported after `elementwise.py` (whose ops `where`, `minimum`, `maximum` get
their rules here) and the other array ops. What it adds to the table:

- Un-broadcasting (`_unbroadcasting`, wrapped once around every elementwise
  op's rule, as `elementwise.lift` wraps their type rules): the rules of
  vjp.py give each operand an adjoint of the result's shape; an operand of
  another shape gets it reduced back, `sum_to_like(adjoint, operand)`: a scalar
  operand the sum, an array operand the sum over the axes it was broadcast
  along, in its own dtype (an f32 array mixed with an f64 array gets an f32
  adjoint). Where the operand is provably of the result's shape and dtype (the
  only array operand), the adjoint is used as it is.
- Element reads and views: `x[i, j]` gives `AddAt(g, (i, j))`, a slice or a
  row `AddIntoView(g, ...)`: contributions the reverse sweep adds in place into
  an accumulator of x's adjoint (`ad/adjoints.py`, `ops/adjoints.py`).
  Transpose and reshape give the same view of the adjoint.
- Creation ops: only a fill value has a derivative (the sum of the adjoint).
- `reduce` (sum, mean, max, min over axes) and `matmul` (1-d and 2-d operands).

A rule that needs the node's attrs is marked `takes_attrs` and called with
them as a sixth argument (`call_vjp`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..types import I64, ArrayType
from . import elementwise, linalg, reductions  # noqa: F401 - the entries ruled here
from .adjoints import AddAt, AddIntoView
from .reductions import normalize_axes
from .table import OPS
from .vjp import _c, _div, _min_max_vjp, _select, _vjp


def _with_attrs(rule: Callable) -> Callable:
    rule.takes_attrs = True
    return rule


def call_vjp(op: str, e, g, inputs, out, needs, attrs):
    """Run the VJP rule of `op` (with the node's attrs if it takes them)."""
    rule = OPS[op].vjp
    if getattr(rule, "takes_attrs", False):
        return rule(e, g, inputs, out, needs, attrs)
    return rule(e, g, inputs, out, needs)


def _is_array(value) -> bool:
    return isinstance(value.type, ArrayType)


# ---- elementwise: np.where, np.maximum, np.minimum; un-broadcasting ---------------------------

_vjp("where", lambda e, g, ins, out, needs: [
    None, _select(e, ins[0], g, _c(e, 0.0, g)) if needs[1] else None,
    _select(e, ins[0], _c(e, 0.0, g), g) if needs[2] else None])
_vjp("maximum", _min_max_vjp("gt"))
_vjp("minimum", _min_max_vjp("lt"))


def reduce_to(e, adjoint, operand, inputs, out):
    """`adjoint` (of `out`'s shape and dtype) reduced to `operand`'s shape and type."""
    if adjoint is None or not _is_array(adjoint):
        return adjoint
    if _is_array(operand):
        arrays = {v.id for v in inputs if _is_array(v)}
        if arrays == {operand.id} and adjoint.type == operand.type:
            return adjoint  # the only array operand: of the result's shape
    return e.op("sum_to_like", adjoint, operand)


def _unbroadcasting(rule: Callable) -> Callable:
    def unbroadcast(e, g, inputs, out, needs):
        adjoints = rule(e, g, inputs, out, needs)
        return [reduce_to(e, a, x, inputs, out) if need else None
                for a, x, need in zip(adjoints, inputs, needs)]
    unbroadcast.__doc__ = rule.__doc__
    return unbroadcast


for _name, _opdef in list(OPS.items()):
    if "elementwise" in _opdef.traits and _opdef.vjp is not None:
        OPS[_name] = dataclasses.replace(_opdef, vjp=_unbroadcasting(_opdef.vjp))


# ---- element reads, views ------------------------------------------------------------------

_vjp("array_get", lambda e, g, ins, out, needs: [AddAt(g, tuple(ins[1:]))] + [None] * len(ins[1:]))
_vjp("array_view", _with_attrs(lambda e, g, ins, out, needs, attrs: [
    AddIntoView(g, "array_view", tuple(ins[1:]), dict(attrs))] + [None] * len(ins[1:])))
_vjp("array_transpose", lambda e, g, ins, out, needs: [e.op("array_transpose", g)])


def _reshape_vjp(e, g, ins, out, needs):
    """The adjoint reshaped back to the input's shape (a view when contiguous)."""
    x = ins[0]
    dims = [e.op("array_dim", x, axis=k) for k in range(x.type.ndim)]
    return [e.op("array_reshape", g, *dims)] + [None] * len(ins[1:])


_vjp("array_reshape", _reshape_vjp)


# ---- creation: a fill value's adjoint ------------------------------------------------------

def _fill_vjp(e, g, ins, out, needs, attrs):
    """np.full(shape, v) / np.full_like(x, v): v's adjoint is the sum of g; nothing else has one."""
    adjoints = [None] * len(ins)
    if attrs.get("fill") == "value" and needs[-1]:
        adjoints[-1] = e.op("sum_to_like", g, ins[-1])
    return adjoints


_vjp("array_new", _with_attrs(_fill_vjp))
_vjp("array_new_like", _with_attrs(_fill_vjp))


# ---- reductions --------------------------------------------------------------------------

def _expand(e, v, x, axes: tuple[int, ...], keepdims: bool):
    """A reduction's result (or adjoint) `v` with the reduced axes of `x` back, of length 1,
    so that it broadcasts against `x` (a scalar broadcasts as it is)."""
    if not _is_array(v) or keepdims:
        return v
    dims = [e.const(1, I64) if k in axes else e.op("array_dim", x, axis=k)
            for k in range(x.type.ndim)]
    return e.op("array_reshape", v, *dims)


def _count(e, x, axes: tuple[int, ...], like):
    """How many elements each result of reducing `axes` of `x` summed, as `like`'s float."""
    n = e.const(1, I64)
    for k in axes:
        n = e.op("mul", n, e.op("array_dim", x, axis=k))
    return e.op("cast", n, to=_c(e, 0.0, like).type)


def _reduce_vjp(e, g, ins, out, needs, attrs):
    """sum: g spread back over the reduced axes; mean: that over the count; max / min: g to
    the positions holding the result (each of several equal ones gets all of it)."""
    x = ins[0]
    if not x.type.dtype.is_float:
        return [None]
    kind, keepdims = attrs["kind"], bool(attrs.get("keepdims"))
    axes = normalize_axes(attrs.get("axis"), x.type.ndim)
    spread = _expand(e, g, x, axes, keepdims)
    if kind in ("max", "min"):
        picked = e.op("eq", x, _expand(e, out, x, axes, keepdims))
        return [_select(e, picked, spread, _c(e, 0.0, g))]
    if kind == "mean":
        spread = _div(e, spread, _count(e, x, axes, g))
    return [e.op("add", e.op("array_new_like", x, fill=0), spread)]  # spread to x's shape


_vjp("reduce", _with_attrs(_reduce_vjp))


# ---- matrix products ---------------------------------------------------------------------

def _column(e, v):
    """A vector as an (n, 1) matrix (a view when contiguous)."""
    return e.op("array_reshape", v, e.op("array_dim", v, axis=0), e.const(1, I64))


def _matmul_vjp(e, g, ins, out, needs):
    """d(a @ b) = (g @ b.T, a.T @ g); with a vector operand the products become outer
    products (a column times a row, by broadcasting) and dots (g times the other vector)."""
    a, b = ins
    da = db = None
    ndims = (a.type.ndim, b.type.ndim)
    if needs[0]:
        da = {(2, 2): lambda: e.op("matmul", g, e.op("array_transpose", b)),
              (2, 1): lambda: e.op("mul", _column(e, g), b),
              (1, 2): lambda: e.op("matmul", b, g),
              (1, 1): lambda: e.op("mul", g, b)}[ndims]()
    if needs[1]:
        db = {(2, 2): lambda: e.op("matmul", e.op("array_transpose", a), g),
              (2, 1): lambda: e.op("matmul", e.op("array_transpose", a), g),
              (1, 2): lambda: e.op("mul", _column(e, a), g),
              (1, 1): lambda: e.op("mul", g, a)}[ndims]()
    return [_like(e, da, a), _like(e, db, b)]


def _like(e, adjoint, x):
    """`adjoint` in `x`'s dtype (an f32 operand of an f64 product gets an f32 adjoint)."""
    if adjoint is None or adjoint.type == x.type:
        return adjoint
    return e.op("sum_to_like", adjoint, x)


_vjp("matmul", _matmul_vjp)
