"""Primitives that reverse-mode code of array programs is made of: un-broadcasting and
in-place accumulation of adjoints.

- `sum_to_like(g, x)`: the adjoint `g` of a broadcast result, summed back to the
  shape of operand `x` (known only at run time) and converted to `x`'s float
  or complex type (a complex to a float: its real part, the adjoint of a real
  operand). `x` a scalar: the sum of all of `g`. `x` an array of ndim n <= g's: `g`
  summed over its leading `g.ndim - n` axes, then over every axis where `x`
  has size 1 and `g` has not (kept, size 1). The result is *owned*, and may be
  `g` itself (a new reference) when the shapes and dtypes already agree: no
  copy for the common case of operands of one shape. So it may alias `g`:
  adjoint code never writes into an adjoint it did not make itself (below).
- `add_at(acc, g, *indices)`: `acc[indices] += g` for a scalar `g` (the adjoint
  of an element read `x[i, j]`); returns `acc`. Indices are the ones the
  forward read checked: negative ones count from the end, no bounds check.
- `add_into(acc, view, g)`: `view += g`, where `view` is a view of `acc` of
  `g`'s shape (the adjoint of a slice, a row); returns `acc`.
- `set_at(acc, v, *indices)`: `acc[indices] = v` (the adjoint of an element
  write `y[i] = v` zeroes the element: what reached y[i] after the write went to
  v, none of it to the value it overwrote); returns `acc`.
- `zero_into(acc, view)`: `view[...] = 0`, `view` a view of `acc` (the same for
  a slice assignment `y[a:b] = v`); returns `acc`.

`add_at`, `add_into`, `set_at` and `zero_into` write into `acc` and *consume* it (ownership.py): the
result is the same array, owned in its place, and later code reads only the
result. That keeps the mutation in the data flow: no pass can move a read of
the accumulator across the write. The invariant that makes writing safe, kept
by the reverse sweep (`ad/sweep.py`): `acc` is an *accumulator*, an array
the sweep made for one adjoint alone (`zeros_like`, a sum of two adjoints, or
an earlier accumulation), that nothing else holds. So a loop reading `x[i]`
adds its adjoint in O(1) per iteration into one array carried by the backward
loop, rather than copying the whole adjoint per iteration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..shape_algebra import like
from ..types import I64, ArrayType, ScalarType, weak
from .batching import (
    as_batched,
    dims,
    each,
    materialized,
    shifted,
    with_rank,
)
from .complexes import part_type
from .declare import _def
from .table import OpTypeError, Routine
from .vjp import tangent_of_first


def _float_array(t, what) -> ArrayType:
    """A float or complex array (complex adjoints: docs/arrays.md, gradients)."""
    if not (isinstance(t, ArrayType) and (t.dtype.is_float or t.dtype.is_complex)):
        raise OpTypeError(f"{what} needs a float or complex array, got {t}")
    return t


def sum_to_like_rule(types, attrs):
    g, x = types
    _float_array(g, "sum_to_like")
    if isinstance(x, ArrayType):
        _float_array(x, "sum_to_like")
        if x.ndim > g.ndim:
            raise OpTypeError(f"cannot sum a {g} to the shape of a {x}")
        return [g, x], x
    if not (isinstance(x, ScalarType) and (x.is_float or x.is_complex)):
        raise OpTypeError(f"sum_to_like needs a float or complex target, got {x}")
    return [g, x], x


def _element_write_rule(name: str):
    """The type rule of `name(acc, v, *indices)`: one element of a float array written."""
    def rule(types, attrs):
        acc, v, *indices = types
        _float_array(acc, name)
        if v != acc.dtype or len(indices) != acc.ndim or any(t != I64 for t in indices):
            raise OpTypeError(f"{name} of {acc} needs a {acc.dtype} and {acc.ndim} int indices, "
                              f"got {', '.join(map(str, types[1:]))}")
        return list(types), acc
    return rule


add_at_rule = _element_write_rule("add_at")
set_at_rule = _element_write_rule("set_at")


def zero_into_rule(types, attrs):
    acc, view = types
    _float_array(acc, "zero_into")
    if not (isinstance(view, ArrayType) and view.dtype in (acc.dtype, part_type(acc.dtype))):
        raise OpTypeError(f"zero_into needs a view of {acc} (or of its real or imaginary "
                          f"part), got {view}")
    return list(types), acc


def add_into_rule(types, attrs):
    acc, view, g = types
    _float_array(acc, "add_into")
    if not (isinstance(view, ArrayType) and view.dtype == acc.dtype and g == view):
        raise OpTypeError(f"add_into needs a view of {acc} and an adjoint of its type, got "
                          f"{view} and {g}")
    return list(types), acc


# ---- reference semantics (the interpreter's) ---------------------------------------------

def _numpy():
    import numpy

    return numpy


def py_sum_to_like(g, x, reduces=False):
    """`reduces` (set by the fusion pass) only tells the backend which version to emit."""
    np = _numpy()
    if isinstance(x, (int, float, np.generic)):
        return type(x)(g.sum())  # the interpreter rounds an f32 result itself
    lead = g.ndim - x.ndim  # array methods only: g and x may be CuPy's (backend/cuda)
    summed = g.sum(axis=tuple(range(lead))) if lead else g
    stretched = tuple(k for k, n in enumerate(x.shape) if n == 1 and summed.shape[k] != 1)
    if stretched:
        summed = summed.sum(axis=stretched, keepdims=True)
    return summed.astype(x.dtype, copy=True)


def py_add_at(acc, g, *indices, boundscheck=True):
    acc[indices] += g
    return acc


def py_add_into(acc, view, g):
    view += g
    return acc


def py_set_at(acc, v, *indices, boundscheck=True):
    acc[indices] = v
    return acc


def py_zero_into(acc, view):
    view[...] = 0
    return acc


_ADJOINT_OP = "an adjoint op: reverse mode makes it, never differentiates it"

# ---- batching rules (ops/batching.py) ----------------------------------------------------

def _sum_to_like_batch(b, node, ins, batched):
    """Each example's adjoint summed to the example's shape: the batch axis kept, the
    axes the examples were broadcast along given unit length, then squeezed out."""
    g = as_batched(b, ins[0], batched[0])
    rank, target = g.type.ndim - 1, node.inputs[1].type
    if isinstance(target, ScalarType):
        total = b.op("reduce", g, kind="sum", axis=shifted(range(rank)), keepdims=False) \
            if rank else g
        return each(total if total.type.dtype == target else
                    b.op("array_astype", total, dtype=weak(target)))
    like = with_rank(b, as_batched(b, ins[1], batched[1]), rank)
    summed = b.op("sum_to_like", g, like)
    extra = tuple(range(1, 1 + rank - target.ndim))
    return each(b.op("array_squeeze", summed, axes=extra) if extra else summed)


def _accumulator(b, node, ins, batched):
    """The accumulator (ins[0]) and its view (ins[1]) as batches: copied for every example
    where only what is added is batched."""
    if batched[0]:
        return ins[0], ins[1]
    acc = materialized(b, ins[0])
    return acc, b.rebuilt(node.inputs[1], node.inputs[0], acc)


def _add_into_batch(b, node, ins, batched):
    acc, view = _accumulator(b, node, ins, batched)
    g = ins[2]
    if not batched[2]:
        g = b.op("array_broadcast_to", g, *dims(b, view))
    return each(b.op("add_into", acc, view, g))


def _add_at_batch(b, node, ins, batched):
    """acc[:, indices] += g: a view of each example's element; at an index per example, a
    scatter that accumulates at (example, i, j) (the read whose adjoint this is checked the
    indices, as `boundscheck` says)."""
    acc = ins[0] if batched[0] else materialized(b, ins[0])
    attrs = {k: v for k, v in node.attrs.items() if k == "boundscheck"}
    if any(batched[2:]):
        numbers = b.op("array_arange", b.const(0, I64), b.size)
        b.op("scatter", acc, ins[1], numbers, *ins[2:], axis=0,
             axes=tuple(range(len(ins) - 1)), accumulate=True, **attrs)
        return each(acc)
    view = b.op("array_view", acc, *ins[2:], spec=("s000",) + ("i",) * len(ins[2:]), **attrs)
    return each(b.op("add_into", acc, view, as_batched(b, ins[1], batched[1])))


def _zero_into_batch(b, node, ins, batched):
    return each(b.op("zero_into", *_accumulator(b, node, ins, batched)))


_def("sum_to_like", 2, sum_to_like_rule, py_sum_to_like, {"*": Routine("sum_to_like")},
     ("pure", "reads", "linear"), no_vjp=_ADJOINT_OP, shape=like(1),
     jvp=tangent_of_first(lambda e, tangents, ins, out, attrs:
                          e.op("sum_to_like", tangents[0], ins[1])),
     batch=_sum_to_like_batch,
     doc="g summed to x's shape and dtype (un-broadcasting); may be g itself")
_def("add_at", -1, add_at_rule, py_add_at, {"*": Routine("add_at")}, ("writes", "linear"), no_vjp=_ADJOINT_OP,
     shape=like(0), batch=_add_at_batch,
     doc="acc[indices] += g; consumes and returns the accumulator acc")
_def("add_into", 3, add_into_rule, py_add_into, {"*": Routine("add_into")}, ("writes", "linear"),
     no_vjp=_ADJOINT_OP,
     shape=like(0), batch=_add_into_batch,
     doc="view += g, view a view of acc; consumes and returns the accumulator acc")

_def("set_at", -1, set_at_rule, py_set_at, {"*": Routine("set_at")}, ("writes", "linear"), no_vjp=_ADJOINT_OP,
     shape=like(0),
     doc="acc[indices] = v; consumes and returns the accumulator acc")
_def("zero_into", 2, zero_into_rule, py_zero_into, {"*": Routine("zero_into")}, ("writes", "linear"),
     no_vjp=_ADJOINT_OP, shape=like(0), batch=_zero_into_batch,
     doc="view[...] = 0, view a view of acc; consumes and returns the accumulator acc")

ACCUMULATING = frozenset({"add_at", "add_into", "set_at", "zero_into"})
"""Ops that write into their first input and consume it (ownership.py)."""


# ---- contributions a VJP rule asks the reverse sweep to add in place ----------------------

@dataclass(frozen=True)
class AddAt:
    """A rule's adjoint for an array input read at one element: add `g` at `indices` of the
    input's accumulator (`add_at`), rather than building an array of zeros around it."""

    g: Any
    indices: tuple


@dataclass(frozen=True)
class AddIntoView:
    """A rule's adjoint for an array input read through a view: add `g` into the same view
    (`op` of the accumulator with `parts` and `attrs`) of the input's accumulator."""

    g: Any
    op: str
    parts: tuple
    attrs: dict = field(default_factory=dict)
