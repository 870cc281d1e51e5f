"""Symbolic shapes: the algebra, and what the ops' shape rules are built from.

The analysis (symbolic_shapes.py) gives each array value of a graph a tuple of
*dims*, one per axis. A dim is a frozenset of *atoms* and stands for the NumPy
broadcast of the atoms' lengths: the one length other than 1 among them (or 1).
An atom is an axis of a value whose length nothing here explains, a parameter's
or an unknown op's (`(value.id, axis)`), or a literal length (`("const", n)`);
`ONE`, the empty set, is the constant 1. Broadcasting is the union, axis by axis
(trailing axes aligned). That is sound for every call that gets past the ops' own
run-time checks: a value of dim S exists only if each broadcast that built it
passed its check, which makes the lengths of S's atoms other than 1 all equal; so
two values whose axes have the same dim have the same length there. `a + b` of two
parameters of shape (n,) has dim {a0, b0}, not a0: `b` may have length 1 at run time.

An op declares its rule with its block (`OpDef.shape`, ir/ops/): `rule(node,
table)` gives the Shape of its (one) array result, or the Dim its int result is
(an axis's length), from what `table` (a `ShapeContext`) knows of its operands;
None where it does not know. Elementwise ops broadcast (`broadcast_rule`, which
ops/declare.py gives them).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .core import Node, Value
from .types import ArrayType

Dim = frozenset
"""The atoms whose broadcast an axis's length is (the module docstring)."""
Shape = tuple
"""One Dim per axis."""
ONE: Dim = frozenset()
"""The constant length 1."""


class ShapeContext(Protocol):
    """What a shape rule may ask of the analysis (symbolic_shapes.py `ShapeTable`)."""

    def shape(self, v: Value) -> Shape:
        """The Shape of array value `v` (atoms of its own when nothing is known)."""

    def dim(self, v: Value, owner: Value, axis: int) -> Dim:
        """The Dim a length given by int value `v` is; a fresh atom of `owner`'s axis
        when unknown."""

    def equate(self, a: Dim, b: Dim) -> None:
        """Lengths `a` and `b` are equal after the node being recorded: it raises otherwise."""


ShapeRule = Callable[[Node, ShapeContext], "Shape | Dim | None"]
"""An op's rule: the Shape of its array result or the Dim of its int result (None: unknown)."""


def fresh(v: Value) -> Shape:
    """Atoms of `v`'s own for each of its axes."""
    return tuple(frozenset({(v.id, k)}) for k in range(v.type.ndim))


def broadcast(shapes: list[Shape], ndim: int) -> Shape | None:
    """NumPy's broadcast of `shapes` (trailing axes aligned) to `ndim` axes; None when an
    axis is in none of them."""
    dims = []
    for axis in range(ndim):
        aligned = [s[axis - (ndim - len(s))] for s in shapes if axis >= ndim - len(s)]
        if not aligned:
            return None
        dims.append(frozenset().union(*aligned))
    return tuple(dims)


def settled(d: Dim) -> Dim:
    """`d` where it holds one literal length among other atoms: that length (a broadcast
    that passed its check has it, the others being it or 1)."""
    if len(d) > 1:
        literals = [atom for atom in d if isinstance(atom, tuple) and atom[0] == "const"]
        if len(literals) == 1:
            return frozenset(literals)
    return d


def broadcasts(shapes: list[Shape], ndim: int) -> bool:
    """Whether NumPy's broadcast of `shapes` to `ndim` axes provably succeeds: on each axis
    one of them has the union of the others' dims. That value exists, so its atoms' lengths
    other than 1 agree (the module docstring), and every subset of them has that length or 1."""
    for axis in range(ndim):
        aligned = [s[axis - (ndim - len(s))] for s in shapes if axis >= ndim - len(s)]
        if aligned and frozenset().union(*aligned) not in aligned:
            return False
    return True


def same_size(a: Shape, b: Shape) -> bool:
    """Whether two shapes provably hold as many elements: the same literal lengths'
    product, and the same other dims, counted with repeats (each one length, the module
    docstring)."""
    (n, rest_a), (m, rest_b) = _factors(a), _factors(b)
    return n == m and sorted(map(sorted_atoms, rest_a)) == sorted(map(sorted_atoms, rest_b))


def unknown_length(source: Shape, result: Shape) -> tuple[Dim, Dim] | None:
    """Where `source`, reshaped to `result` of literal lengths, has one length that is not a
    literal: that Dim, and the literal it is once the sizes are equal. (Never one of
    `result`'s: a reshape's own dims are what its check is about.)"""
    (known, unknown), (total, others) = _factors(source), _factors(result)
    if len(unknown) == 1 and not others and known and total % known == 0:
        length = total // known
        return unknown[0], ONE if length == 1 else frozenset({("const", length)})
    return None


def _factors(shape: Shape) -> tuple[int, list[Dim]]:
    """The product of a shape's literal lengths, and its other dims (not ONE)."""
    product, others = 1, []
    for d in shape:
        (atom,) = d if len(d) == 1 else (None,)
        if isinstance(atom, tuple) and atom[0] == "const":
            product *= atom[1]
        elif d != ONE:
            others.append(d)
    return product, others


def sorted_atoms(d: Dim) -> list:
    """A Dim's atoms in a fixed order (to compare multisets of dims)."""
    return sorted(d, key=repr)


def reduced(shape: Shape, axes: tuple[int, ...], keepdims: bool) -> Shape:
    """`shape` reduced over `axes`: those made ONE with `keepdims`, else dropped."""
    if keepdims:
        return tuple(ONE if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


# ---- rules ops declare ---------------------------------------------------------------------

def broadcast_rule(node: Node, table: ShapeContext) -> Shape | None:
    """An elementwise op's: the broadcast of its array operands (when its result is an array)."""
    if not node.outputs or not isinstance(node.outputs[0].type, ArrayType):
        return None
    arrays = [table.shape(v) for v in node.inputs if isinstance(v.type, ArrayType)]
    return broadcast(arrays, node.outputs[0].type.ndim)


def like(k: int) -> ShapeRule:
    """The rule of an op whose result has input k's shape (when it is an array)."""
    def rule(node: Node, table: ShapeContext) -> Shape | None:
        v = node.inputs[k]
        return table.shape(v) if isinstance(v.type, ArrayType) else None
    return rule


def dims_of(node: Node, dims: list[Value], table: ShapeContext) -> Shape:
    """The Shape whose axes are the lengths int values `dims` give (a creation's, a
    reshape's): an `array_dim` names an axis's dim, a literal its own atom or ONE."""
    out = node.outputs[0]
    return tuple(table.dim(d, out, k) for k, d in enumerate(dims))
