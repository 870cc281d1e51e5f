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

An op's check also teaches what holds after it: a rule may `equate` two lengths the op
raises unless equal (`matmul`'s contracted ones, a reshape's sizes), and every value
made after it has its atoms named by one atom of each class of equal ones (a literal
length if the class has one). Only values made after the check are so named: a
value's shape says what holds wherever it exists, and nothing proves a node before
the check cannot raise by what the check will find.
"""
from __future__ import annotations

from .core import Graph, Node, Value
from .kernels import fused_attrs
from .ops import OPS
from .shape_algebra import ONE, Dim, Shape, broadcast, fresh, reduced, settled
from .types import ArrayType


def symbolic_shapes(graph: Graph) -> Shapes:
    """The Shape of every array parameter and array node output of `graph` (not of its
    regions'), as the module docstring defines it."""
    table = ShapeTable(graph.params)
    for node in graph.nodes:
        table.record(node)
    return table.shapes


class Shapes(dict):
    """Value -> Shape, each as known where the value is made; `operands(node)`: the array
    operands' Shapes as known where `node` runs (after the checks before it)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[Node, list[Shape | None]] = {}

    def operands(self, node: Node) -> list[Shape | None]:
        """Each input's Shape where `node` runs (None: not an array, or not analysed)."""
        return self.seen.get(node) or [self.get(v) for v in node.inputs]


class ShapeTable:
    """Shapes of array values, and the Dims that int values are, filled in program order
    (a `shape_algebra.ShapeContext` for the ops' rules)."""

    def __init__(self, params: list[Value]):
        self.shapes = Shapes()
        self.dims: dict[Value, Dim] = {}
        self.named: dict[object, object] = {}
        """Atom -> an atom of equal length recorded later (union-find; `equate`)."""
        for p in params:
            if isinstance(p.type, ArrayType):
                self.shapes[p] = fresh(p)

    def shape(self, v: Value) -> Shape:
        if v not in self.shapes:
            self.shapes[v] = fresh(v)
        shape = self.shapes[v]  # canonical as made: as it is while nothing was equated
        return tuple(map(self.canonical, shape)) if self.named else shape

    def dim(self, v: Value, owner: Value, axis: int) -> Dim:
        """The Dim a length given by int value `v` is; a fresh atom of `owner`'s axis
        when unknown."""
        return self.canonical(self.dims.get(v, frozenset({(owner.id, axis)})))

    def equate(self, a: Dim, b: Dim) -> None:
        """Lengths `a` and `b` are equal from here on (the node being recorded checks it).
        Known only of single atoms (a broadcast's length is not one atom's)."""
        a, b = self.canonical(a), self.canonical(b)
        if len(a) == len(b) == 1 and a != b:
            (x,), (y,) = a, b
            if _is_literal(x):
                x, y = y, x
            self.named[x] = y  # a literal names its class
        elif len(a) == 1 and b == ONE or a == ONE and len(b) == 1:
            (x,) = a or b
            self.named[x] = ("const", 1)

    def canonical(self, d: Dim) -> Dim:
        """`d` with each atom named by its class's (`equate`), a length-1 one dropped; a
        broadcast with one literal length is that length (the others are it or 1)."""
        if self.named and d:
            atoms = set()
            for atom in d:
                while atom in self.named:
                    atom = self.named[atom]
                atoms.add(atom)
            atoms.discard(("const", 1))
            d = frozenset(atoms)
        return settled(d)

    def record(self, node: Node) -> None:
        if self.named:  # else as made
            self.shapes.seen[node] = [self.shape(v) if isinstance(v.type, ArrayType) else None
                                      for v in node.inputs]
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
                self.shapes[out] = tuple(map(self.canonical, shape)) if ok else fresh(out)
            elif isinstance(shape, frozenset):
                self.dims[out] = self.canonical(shape)  # an int: the length it is


def _is_literal(atom: object) -> bool:
    return isinstance(atom, tuple) and atom[0] == "const"


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
