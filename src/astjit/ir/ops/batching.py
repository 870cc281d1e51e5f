"""What batching rules (`OpDef.batch`) are written with; ad/batching.py applies them (vmap).

A *batched* value holds one value per example along a leading axis of length B (the
batch): example b of it is `x[b]`, of the example's dtype, an array of one more axis
than the example's (a number per example is a vector). An *unbatched* value is the
same for every example and has the example's own type. A rule

    batch(b, node, inputs, batched) -> [(value, batched), ...]

computes `node` for every example at once: `inputs` are the node's inputs rewritten
(`batched[i]` says which carry the batch axis; for a tuple, a tuple of such flags),
at least one batched; it returns each output and whether it is batched. `b` builds
the nodes (`Batching`). A rule that cannot batch its inputs (a batched index, a
length that differs per example) raises `NotBatchable`: vmap then runs the function
in a loop over the examples.
"""
from __future__ import annotations

from typing import Protocol

from ..core import Node, Value
from ..types import I64, ArrayType
from .python_scalars import python_scalar_batch
from .table import OPS


class NotBatchable(Exception):
    """What vmap cannot compute on whole batches: it loops over the examples instead."""


SHAPE_PER_EXAMPLE = ("{what} gives each example a result of its own length: no batch "
                     "holds them")
"""The reason of a rule that refuses a result whose shape depends on the example's values
(np.nonzero, np.unique, x[mask]): vmap then loops, which works where the function's
results still have one shape (docs/arrays.md, vmap)."""


class Batching(Protocol):
    """The builder a batching rule gets (ad/batching.py `BatchBuilder`)."""

    size: Value
    """The batch length B (an i64)."""

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        """A typed node appended; scalar operands are cast to what the op's rule asks."""

    def const(self, value, t) -> Value:
        """A constant."""

    def rebuilt(self, value: Value, base: Value, new_base: Value) -> Value:
        """`value`, a view of `base` in the function (old values both), made again as a
        view of `new_base`, a batched copy of `base`."""

    def writable(self, dest: Value) -> Value:
        """The batch of array `dest` (an old value) that a batched value is written into:
        an unbatched one copied per example with the array it views (NotBatchable where
        that array is one every example shares)."""

    def recording(self, tape: Value) -> Value:
        """The tape of batches that tape `tape` (an old value, unbatched) becomes when a
        batched value is pushed onto it: one the function made and has recorded nothing
        on yet (NotBatchable otherwise)."""


def ndim(t) -> int:
    return t.ndim if isinstance(t, ArrayType) else 0


def example_ndim(v: Value, batched: bool) -> int:
    """The number of axes of one example of `v`."""
    return ndim(v.type) - 1 if batched else ndim(v.type)


def shifted(axes) -> tuple:
    """Example axes (non-negative) as axes of the batched array."""
    return tuple(a + 1 for a in axes)


def dims(b: Batching, v: Value) -> list[Value]:
    return [b.op("array_dim", v, axis=k) for k in range(ndim(v.type))]


def with_rank(b: Batching, v: Value, rank: int) -> Value:
    """Batched `v` with unit axes after the batch axis, so that its example has `rank`
    axes: NumPy's broadcasting of the examples aligns their last axes."""
    missing = rank - example_ndim(v, True)
    return b.op("array_expand_dims", v, axes=tuple(range(1, 1 + missing))) if missing > 0 else v


def broadcast(b: Batching, v: Value) -> Value:
    """Unbatched `v` as a batched value (a view repeating it, or a vector of a number)."""
    if isinstance(v.type, ArrayType):
        return b.op("array_broadcast_to", v, b.size, *dims(b, v))
    return b.op("array_new", b.size, v, fill="value", dtype=v.type)


def materialized(b: Batching, v: Value) -> Value:
    """Unbatched array `v` copied once per example: a new batched array, to write into."""
    return b.op("array_copy", broadcast(b, v))


def as_batched(b: Batching, v: Value, batched: bool) -> Value:
    return v if batched else broadcast(b, v)


def each(v: Value) -> list[tuple[Value, bool]]:
    """The one output of a rule, batched."""
    return [(v, True)]


def without_numpy(attrs: dict) -> dict:
    """A scalar node's attrs for its array form (arrays always compute as NumPy does)."""
    return {k: v for k, v in attrs.items() if k != "numpy"}


def elementwise(op: str | None = None):
    """The rule of an elementwise op (as op `op` on arrays, where the op itself has no array
    form): examples broadcast as NumPy broadcasts them, so each batched operand gets unit
    axes up to the largest example rank; unbatched operands align with the last axes as
    they are. A number computed with Python's semantics where one of them raises (1/0,
    math.sqrt(-1)) is the array form plus checks that raise Python's errors
    (python_scalars.py)."""
    def rule(b: Batching, node: Node, ins: list[Value], batched: list[bool]):
        rank = max(example_ndim(v, f) for v, f in zip(ins, batched))
        operands = [with_rank(b, v, rank) if f else v for v, f in zip(ins, batched)]
        scalars = not any(isinstance(v.type, ArrayType) for v in node.inputs)
        if scalars and "raises" in OPS[node.op].traits and not node.attrs.get("numpy"):
            found = python_scalar_batch(b, node, operands)
            if found is None:
                raise NotBatchable(f"{node.op} of numbers raises as Python's does")
            return each(found)
        return each(b.op(op or node.op, *operands, **without_numpy(node.attrs)))
    return rule


def same_op(b: Batching, node: Node, ins: list[Value], batched: list[bool]):
    """The rule of an op that computes each example's part of a batched array alike (a
    copy, a conversion): the op on the batched array."""
    if not all(batched):
        raise NotBatchable(f"{node.op} of unbatched operands with batched ones")
    return each(b.op(node.op, *ins, **node.attrs))


def unbatched_operands(node: Node, batched: list, first: int = 1) -> None:
    """Refuse a batched operand past the first ones (an index, a length)."""
    if any(batched[first:]):
        raise NotBatchable(f"{node.op} with a batched index or length")


def batch_size_product(b: Batching, v: Value) -> Value:
    """The number of elements of one example of batched array `v`."""
    size = b.const(1, I64)
    for k in range(1, ndim(v.type)):
        size = b.op("mul", size, b.op("array_dim", v, axis=k))
    return size
