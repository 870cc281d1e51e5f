"""The symbolic-shape analysis: which axes of a graph's arrays provably have one length.

`symbolic_shapes(graph)` gives each array value of a graph a Shape, one Dim
per axis (shape_algebra.py says what they stand for), filled in program order
by the rule each op declares (`OpDef.shape`; any other op's array result gets
atoms of its own): elementwise ops broadcast; a reduction drops its axes, or
makes them ONE with `keepdims`; `matmul` takes m from `a` and n from `b`; a
transpose reverses; `array_new_like`, `sum_to_like` and the accumulating ops take
their shape source's; `array_reshape` and `array_new` take their dims from their
int inputs, where an `array_dim` names an axis's dim and a literal n >= 0 its own
atom (a literal 1 is ONE; anything else, possibly -1, gets a fresh atom); a view
keeps the axes a whole slice `:` or no index touches and drops those an index
takes. The structural ops are handled here: a `fused` node (core.py) broadcasts
its inputs by its plan, a `rowwise` node's results get atoms of their own. Each
region (`if`, `while`) is analysed on its own, its parameters fresh.
"""
from __future__ import annotations

from .core import Graph, Node, Value
from .kernels import fused_attrs
from .ops import OPS
from .shape_algebra import Dim, Shape, broadcast, fresh, reduced
from .types import ArrayType


def symbolic_shapes(graph: Graph) -> dict[Value, Shape]:
    """The Shape of every array parameter and array node output of `graph` (not of its
    regions'), as the module docstring defines it."""
    table = ShapeTable(graph.params)
    for node in graph.nodes:
        table.record(node)
    return table.shapes


class ShapeTable:
    """Shapes of array values, and the Dims that int values are, filled in program order
    (a `shape_algebra.ShapeContext` for the ops' rules)."""

    def __init__(self, params: list[Value]):
        self.shapes: dict[Value, Shape] = {}
        self.dims: dict[Value, Dim] = {}
        for p in params:
            if isinstance(p.type, ArrayType):
                self.shapes[p] = fresh(p)

    def shape(self, v: Value) -> Shape:
        if v not in self.shapes:
            self.shapes[v] = fresh(v)
        return self.shapes[v]

    def dim(self, v: Value, owner: Value, axis: int) -> Dim:
        """The Dim a length given by int value `v` is; a fresh atom of `owner`'s axis
        when unknown."""
        return self.dims.get(v, frozenset({(owner.id, axis)}))

    def record(self, node: Node) -> None:
        if node.op == "fused":
            found = _fused_shapes(node, self)
        elif node.op == "rowwise":
            found = []  # unknown: atoms of their own
        else:
            rule = OPS[node.op].shape if node.op in OPS else None
            found = [rule(node, self)] if rule is not None else []
        found += [None] * (len(node.outputs) - len(found))
        for out, shape in zip(node.outputs, found):
            if isinstance(out.type, ArrayType):
                ok = isinstance(shape, tuple) and len(shape) == out.type.ndim
                self.shapes[out] = shape if ok else fresh(out)
            elif isinstance(shape, frozenset):
                self.dims[out] = shape  # an int: the length it is


def _fused_shapes(node: Node, table: ShapeTable) -> list[Shape | None]:
    """A `fused` node's outputs: the broadcast of its inputs (its iteration space), the
    reduction's, if any, last."""
    spec = fused_attrs(node)
    arrays_ = [table.shape(v) for v in node.inputs if isinstance(v.type, ArrayType)]
    space = broadcast(arrays_, spec.ndim)
    if space is None or spec.reduce is None:
        return [space] * len(node.outputs)
    reduced_ = reduced(space, spec.reduce.axes, spec.reduce.keepdims)
    return [space] * (len(node.outputs) - 1) + [reduced_]
