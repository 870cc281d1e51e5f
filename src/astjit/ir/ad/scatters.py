"""Reverse mode of `scatter` (ops/indexing.py): `x[idx] = v`, `x[mask] = array`, the write
back of `x[idx] += v`, and `np.add.at(x, idx, v)`.

The sweep (`sweep.py`) treats a scatter as it treats an element write (`writes.py`):
the forward copy first reads what the scatter overwrites (a `gather` of the written
places), and the backward puts it back (a scatter of those values: repeated indices
read the same old value, so the order of the writes does not matter), keeping every
array as the forward sweep saw it. With `A` the written array's adjoint (an
accumulator) seen through the same views as the scatter's array:

- NumPy's scatter does not accumulate: of repeated indices the last (in C order of the
  index arrays) wins. So `v`'s element j gets `A` at its place only where no later
  element of the index writes the same place, zero elsewhere, and `A` is then zeroed at
  the written places (the values there were overwritten, nothing of them reaches the
  result). Which elements win: a scratch int array like the written one takes each
  element's number in the gather's C order (a scatter, written in the forward's order)
  and gives them back (a gather); an element wins where it reads its own number. (Made
  like `A`, the scratch is batched where `A` is, so vmap keeps it a batch.) Indices that
  cannot repeat (the rows of a mask's `nonzero`) skip that.
- `np.add.at` accumulates: every element of `v` gets `A` at its place, and `A` passes
  to the old `x` unchanged.

A scalar `v` (the same number written everywhere) gets the sum of those. The written
array's adjoint is zeroed with a plain `scatter` of 0 into the accumulator: it is an
array the sweep made for that adjoint alone, and like any write into an array it is
ordered against the reads of it (`ir/analysis.py`).
"""
from __future__ import annotations

from ..core import Node, Value
from ..types import I64, ArrayType
from .builder import GraphBuilder


def index_attrs(node: Node) -> dict:
    """The attrs that place a gather or scatter like `node`'s, bounds already checked."""
    return {"axis": node.attrs["axis"], "axes": node.attrs["axes"], "boundscheck": False}


def read_overwritten(e: GraphBuilder, dest: Value, indices: list[Value], node: Node,
                     checked: bool) -> Value:
    """What scatter `node` into `dest` overwrites: the gather of its places. `checked`:
    the indices were checked already (else this read raises the scatter's IndexError)."""
    attrs = index_attrs(node)
    if not checked:
        attrs.pop("boundscheck")
    return e.op("gather", dest, *indices, **attrs)


def restore(e: GraphBuilder, dest: Value, old: Value, indices: list[Value], node: Node) -> None:
    """Put back into `dest` what scatter `node` overwrote (`old`, its gather)."""
    e.op("scatter", dest, old, *indices, accumulate=False, **index_attrs(node))


def value_adjoint(e: GraphBuilder, target: Value, value: Value, indices: list[Value],
                  node: Node, unique: bool) -> Value:
    """The adjoint of the value scatter `node` wrote, from `target`, the written array's
    adjoint seen as the scatter saw its array (read before `zero_written`)."""
    attrs = index_attrs(node)
    read = e.op("gather", target, *indices, **attrs)
    if not node.attrs["accumulate"] and not unique:
        zero = e.const(0.0, read.type.dtype)
        read = e.op("where", winners(e, target, read, indices, node), read, zero)
    if isinstance(value.type, ArrayType):
        return read
    return e.op("reduce", read, kind="sum", axis=None, keepdims=False)


def zero_written(e: GraphBuilder, target: Value, indices: list[Value], node: Node) -> None:
    """Zero the written array's adjoint at the places a non-accumulating scatter wrote."""
    e.op("scatter", target, e.const(0.0, target.type.dtype), *indices, accumulate=False,
         **index_attrs(node))


def winners(e: GraphBuilder, target: Value, read: Value, indices: list[Value],
            node: Node) -> Value:
    """A bool array of the gather's shape (`read`'s): true where the element of the index
    is the last (C order) to write its place, so that its value is the one that stays."""
    shape = [e.op("array_dim", read, axis=j) for j in range(read.type.ndim)]
    size = e.const(1, I64)
    for d in shape:
        size = e.op("mul", size, d)
    numbers = e.op("array_reshape", e.op("array_arange", e.const(0, I64), size), *shape)
    scratch = e.op("array_new_like", target, dtype=I64, fill=None)
    attrs = index_attrs(node)
    e.op("scatter", scratch, numbers, *indices, accumulate=False, **attrs)
    return e.op("eq", e.op("gather", scratch, *indices, **attrs), numbers)


def unique_indices(indices: list[Value], defs: dict[Value, Node]) -> bool:
    """Whether the index arrays cannot repeat a place: all rows of one mask's `nonzero`
    (`x[mask] = array`), so that every element of the value wins."""
    sources = set()
    for v in indices:
        row = defs.get(v)
        if row is None or row.op != "array_view" or defs.get(row.inputs[0]) is None \
                or defs[row.inputs[0]].op != "nonzero":
            return False
        sources.add(row.inputs[0])
    return len(sources) == 1 and len(indices) == defs[next(iter(sources))].inputs[0].type.ndim
