"""The typed attributes of the array structural ops (core.py): what they compute, in one
dataclass.

- A `fused` node's `attrs["fused"]` is a `Kernel`: one loop nest over a broadcast
  iteration space, running the node's `kernel` region at every point
  (passes/fuse.py), storing each output and, with a `Reduction`, reducing the
  last one;
- a `rowwise` node's `attrs["rowwise"]` is a `RowGroup`: its region `rows` holds
  plain `fused` nodes a backend may run row by row (passes/rowfuse.py).

Every consumer gets them with `kernel_of(node)` / `row_group_of(node)` (or
`fused_attrs` / `rowwise_attrs` where the op is known) and matches on the op. The
printer shows the fields as attributes: `{ndim=2, reduce='sum', axes=(1,),
keepdims=True, ones={%m: (1,)}, reuse=%e.1}` (or `into=%x`). The dataclasses are frozen: a
pass that refines one (buffer reuse) replaces it with `dataclasses.replace`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .core import Node


@dataclass(frozen=True)
class Reduction:
    """A kernel's reduction of its last kernel output into its last node output."""

    kind: str
    """A row of `ops/reductions.REDUCTIONS` ("sum", "mean", "max", "min")."""
    axes: tuple[int, ...]
    """The reduced axes of the space: sorted, non-negative."""
    keepdims: bool
    """Each reduced axis stays, with length 1."""


@dataclass(frozen=True)
class Kernel:
    """An elementwise kernel over an iteration space of rank `ndim`, maybe reducing."""

    ndim: int
    """The rank of the iteration space."""
    plan: tuple[int | None, ...]
    """Per input: its ndim (an array, aligned with the space's last axes) or None (a scalar)."""
    reduce: Reduction | None = None
    """The reduction the last output holds, or None: every output is stored."""
    ones: tuple[tuple[int, ...] | None, ...] | None = None
    """Per input: its axes known to have length 1 (None for a scalar); None: none known."""
    reuse: tuple[int | None, ...] | None = None
    """Per output: the index of the input whose buffer it may take, or None; None: none."""
    into: int | None = None
    """The input an assignment copies the one output into, which the output may be written
    into directly (passes/into.py), or None."""


@dataclass(frozen=True)
class RowGroup:
    """A region of kernels over the same space that a backend may run row by row."""

    ndim: int
    """The rank of every member's iteration space."""
    rows: int
    """The number of outer axes a row is indexed by; members reduce the axes after them."""
    plan: tuple[int | None, ...]
    """Per input: its ndim (an array) or None (a scalar), as a Kernel's."""
    stages: tuple[str, ...]
    """Per member of the region (retains and releases left out): its role in a row."""


TYPED_ATTRS: dict[str, type] = {"fused": Kernel, "rowwise": RowGroup}
"""Op -> the dataclass its `attrs[op]` holds (its only attribute but for bookkeeping)."""

TypedAttrs = Kernel | RowGroup


def fused_attrs(node: Node) -> Kernel:
    """The Kernel of a `fused` node."""
    return node.attrs["fused"]


def rowwise_attrs(node: Node) -> RowGroup:
    """The RowGroup of a `rowwise` node."""
    return node.attrs["rowwise"]


def kernel_of(node: Node) -> Kernel | None:
    """A `fused` node's Kernel, or None (another op)."""
    found = node.attrs.get("fused") if node.op == "fused" else None
    return found if isinstance(found, Kernel) else None


def row_group_of(node: Node) -> RowGroup | None:
    """A `rowwise` node's RowGroup, or None (another op)."""
    found = node.attrs.get("rowwise") if node.op == "rowwise" else None
    return found if isinstance(found, RowGroup) else None


def typed_attrs(node: Node) -> TypedAttrs | None:
    """The typed attributes of a `fused` or `rowwise` node (of the right type), or None."""
    expected = TYPED_ATTRS.get(node.op)
    found = node.attrs.get(node.op) if expected is not None else None
    return found if expected is not None and isinstance(found, expected) else None


def fields_of(attrs: TypedAttrs) -> dict[str, object]:
    """The fields as printed attributes, in order, those at their default left out:
    a Reduction shows as `reduce=kind, axes=..., keepdims=...`."""
    if isinstance(attrs, RowGroup):
        return {"ndim": attrs.ndim, "rows": attrs.rows, "plan": attrs.plan, "stages": attrs.stages}
    shown: dict[str, object] = {"ndim": attrs.ndim, "plan": attrs.plan}
    if attrs.reduce is not None:
        shown.update(reduce=attrs.reduce.kind, axes=attrs.reduce.axes,
                     keepdims=attrs.reduce.keepdims)
    if attrs.ones is not None:
        shown["ones"] = attrs.ones
    if attrs.reuse is not None:
        shown["reuse"] = attrs.reuse
    if attrs.into is not None:
        shown["into"] = attrs.into
    return shown


def reduction_of(node: Node) -> Reduction | None:
    """A Kernel `fused` node's Reduction, or None (no reduction, or not a Kernel)."""
    spec = kernel_of(node)
    return spec.reduce if spec is not None else None
