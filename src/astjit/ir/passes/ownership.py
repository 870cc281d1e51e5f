"""Who owns each array of a graph: the ownership rules of docs/arrays.md as code, and their checker.

Ownership is decided per *array leaf*: an array Value, or one array inside a
tuple Value (a path of tuple indices). A Value whose type holds arrays (an
array, or a tuple with arrays somewhere inside) is *managed*. Each leaf of a
managed Value is either

- *owned* by the graph: it stands for one reference the graph must give up
  exactly once, by `array_release` or by *consuming* it; or
- *borrowed*: someone else keeps the array alive for as long as the graph runs.

The table of docs/arrays.md, leaf by leaf:

| where | its leaves are |
|---|---|
| parameters of functions, of `if` regions and of `cond`; `while` invariants | borrowed |
| `while` body parameters of the carried values | owned (roots) |
| outputs of `call`, `if`, `while`, `array_retain`, `undef`, allocating ops | owned (roots) |
| `getitem t, k` | the leaves of element k of `t`, whatever they are |
| `tuple a, b` | the leaves of `a` then of `b` (it takes no reference) |

Allocating ops are every leaf op not named here that gives a managed value:
`array_new`, `array_new_like`, `array_arange`, elementwise ops on arrays (a
`where` too) and views (a view is a new reference to its base's owner); and
the structural `fused`, whose outputs are new arrays (its kernel holds scalars
only, so it owns and borrows nothing), and `rowwise`, whose region yields new
arrays of its `fused` nodes (its parameters are borrowed).

So a tuple owns nothing by itself: it groups leaves that belong to the roots
they came from, and `getitem` picks them out again. A leaf is named by its root
Value and its path in it (`Leaf`). An `undef` of a managed type is a null
array at run time: its leaves are owned, and retaining or releasing them does
nothing.

Consuming uses (the consumer takes over the reference): the graph's outputs
(returned, or yielded by a region), the initial carried values of a `while`,
the input of `array_release`, and the accumulator that `add_at` / `add_into`
write into and return. Every other use borrows: the array must stay
alive during the use, no longer. A use of a `getitem`'s input touches only the
leaves the `getitem` picks.

`check_array_ownership(module)` simulates each graph and region: every owned
leaf is consumed exactly once (a path through a graph is its node list;
branches are regions, checked one by one), no leaf is used after it was
consumed, only owned leaves are consumed, and none is consumed by a node that
also borrows it.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..core import Graph, Module, Node, Value
from ..ops.adjoints import ACCUMULATING
from ..types import ArrayType, TupleType, Type

Path = tuple[int, ...]
Leaf = tuple[Value, Path]
"""One owned array: its root Value (the node output or parameter that owns it) and
its path of tuple indices inside that Value."""

ALIASING = frozenset({"tuple", "getitem"})
"""Leaf ops whose managed result holds leaves of their inputs instead of new ones."""


class OwnershipError(Exception):
    """Managed values break an ownership rule; the message names the graph, node and value."""


def array_paths(t: Type | None) -> list[Path]:
    """The paths of the arrays inside a value of type `t`, depth first ([()] for an array)."""
    if isinstance(t, ArrayType):
        return [()]
    if isinstance(t, TupleType):
        return [(i, *p) for i, e in enumerate(t.elements) for p in array_paths(e)]
    return []


def is_managed(t: Type | None) -> bool:
    """Whether values of type `t` hold arrays, so that ownership applies to them."""
    return bool(array_paths(t))


def consumed_positions(node: Node) -> list[int]:
    """The inputs of `node` that it consumes (takes the references of)."""
    if node.op == "while":
        first = node.attrs["n_invariants"]
        return [k for k in range(first, len(node.inputs)) if is_managed(node.inputs[k].type)]
    if node.op == "array_release" or node.op in ACCUMULATING:
        return [0]  # add_at, add_into ... write into their accumulator and return it (ops/adjoints.py)
    return []


def owned_params(node: Node, role: int) -> list[bool]:
    """For region `role` of structural `node`: which of its parameters it owns.

    Only a `while` body owns parameters: the carried values (it must yield or
    release them); captures, invariants and the condition's parameters are borrowed.
    """
    region = node.regions[role]
    if node.op == "while" and role == 1:
        first = node.attrs["n_invariants"]
        return [k >= first for k in range(len(region.params))]
    return [False] * len(region.params)


def region_ownership(node: Node) -> Iterator[tuple[Graph, list[bool]]]:
    """Each region of `node`, with which of its parameters it owns."""
    for role, region in enumerate(node.regions):
        yield region, owned_params(node, role)


class LeafMap:
    """The leaves of each managed value of one graph (a list aligned with `array_paths`):
    a `Leaf` where the graph owns the array, None where it borrows it."""

    def __init__(self, graph: Graph, owned: list[bool]):
        self.of: dict[Value, list[Leaf | None]] = {}
        for param, is_owned in zip(graph.params, owned):
            self.of[param] = [(param, p) if is_owned else None for p in array_paths(param.type)]

    def leaves(self, value: Value) -> list[Leaf | None]:
        return self.of.get(value, [])

    def define(self, node: Node) -> None:
        """Record the leaves of `node`'s managed outputs."""
        for out in node.outputs:
            if not is_managed(out.type):
                continue
            if node.op == "getitem":
                self.of[out] = self.picked(node)
            elif node.op == "tuple":
                self.of[out] = [leaf for v in node.inputs for leaf in self.leaves(v)]
            elif node.op == "select" and not isinstance(node.inputs[0].type, ArrayType):
                raise OwnershipError(f"select of managed values ({out.type}) is not supported: "
                                     "its result may be either operand's array")
            else:
                self.of[out] = [(out, p) for p in array_paths(out.type)]

    def picked(self, node: Node) -> list[Leaf | None]:
        """The leaves of `getitem t, k`: those of element k of t."""
        (tuple_value,) = node.inputs
        elements = tuple_value.type.elements
        k = node.attrs["index"] % len(elements)
        return [leaf for path, leaf in zip(array_paths(tuple_value.type), self.leaves(tuple_value))
                if path[0] == k]

    def used(self, node: Node, position: int) -> list[Leaf | None]:
        """The leaves input `position` of `node` touches (a getitem: only those it picks)."""
        if node.op == "getitem":
            return self.picked(node)
        return self.leaves(node.inputs[position])


# ---- the checker --------------------------------------------------------------------------

def check_array_ownership(module: Module) -> None:
    """Raise OwnershipError unless every graph of `module` keeps the ownership rules."""
    for graph in module.graphs.values():
        _check_graph(graph, [False] * len(graph.params), f"@{graph.name}")


def _check_graph(graph: Graph, owned: list[bool], path: str) -> None:
    leaves = LeafMap(graph, owned)
    live: set[Leaf] = {leaf for p in graph.params for leaf in leaves.leaves(p) if leaf}
    for node in graph.nodes:
        where = f"{path}, node '{node.op}'" + (f" at {node.loc}" if node.loc else "")
        for region, region_owned in region_ownership(node):
            _check_graph(region, region_owned, f"{path}/{node.op}.{region.name}")
        consumed = set(consumed_positions(node))
        borrowed = set()
        for k in range(len(node.inputs)):
            for leaf in leaves.used(node, k):
                if leaf is not None and leaf not in live:
                    raise OwnershipError(f"in {where}: input {k} {node.inputs[k]!r} uses an array "
                                         f"of {leaf[0]!r} after it was released or consumed")
                if k not in consumed and leaf is not None:
                    borrowed.add(leaf)
        for k in sorted(consumed):
            _consume(leaves.leaves(node.inputs[k]), live, borrowed, f"in {where}: input {k}",
                     node.inputs[k])
        leaves.define(node)
        for out in node.outputs:
            for leaf in leaves.leaves(out):
                if leaf is not None and leaf[0] is out:
                    live.add(leaf)
    for k, out in enumerate(graph.outputs):
        _consume(leaves.leaves(out), live, set(), f"in {path}: output {k}", out)
    if live:
        leaf = min(live, key=lambda item: (item[0].id, item[1]))
        where = f"element {list(leaf[1])} of " if leaf[1] else ""
        raise OwnershipError(f"in {path}: {where}{leaf[0]!r} is owned but never released "
                             "or consumed (a leak)")


def _consume(leaves: list[Leaf | None], live: set[Leaf], borrowed: set[Leaf], where: str,
             value: Value) -> None:
    for leaf in leaves:
        if leaf is None:
            raise OwnershipError(f"{where} {value!r} consumes a borrowed array "
                                 "(retain it first)")
        if leaf not in live:
            raise OwnershipError(f"{where} {value!r} consumes an array of {leaf[0]!r} "
                                 "already released or consumed")
        if leaf in borrowed:
            raise OwnershipError(f"{where} {value!r} consumes an array of {leaf[0]!r} "
                                 "that the same node also borrows")
        live.discard(leaf)

