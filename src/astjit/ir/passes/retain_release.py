"""The retain/release pass: makes array ownership explicit with `array_retain` and `array_release`.

It runs last, after every other pass (api.py runs it on the optimized module,
so the "optimized" stage shows its result), because the other passes move,
merge and drop nodes freely while reference counts are implicit. Ownership is
per array leaf (an array, or an array inside a tuple), as ownership.py
defines it; in short: function and region parameters borrow, but a `while`
body owns its carried values; allocations, calls, `if` and `while` give owned
arrays; `tuple` and `getitem` only regroup arrays; returning, yielding, passing
a `while` its initial carried values and `array_release` consume.

Each graph and each region is handled on its own (regions first), as a
straight list of nodes:

1. the *last use* of each owned leaf: the index of the last node that touches
   it (a use inside a region is a use by the node holding the region), or the
   end of the graph when an output holds it;
2. where a node consumes a value (a `while`'s initial carried values; the
   graph's outputs at the end), each of its leaves is *moved* (handed over as
   it is) when the graph owns it, this is its last use, the same node does not
   also borrow it, and it was not handed over once already; otherwise the
   consumer gets a new reference: `array_retain` of the array (a tuple is
   rebuilt from its elements, each moved or retained);
3. right after its last use, an owned leaf that was not moved is released
   (`array_release` of the array, picked out of its tuple by `getitem`s); an
   owned array nobody uses is released right after the node that made it, or
   at the start of a `while` body for a carried value the body ignores.

So a `while` body releases the carried arrays it does not yield, and a region
yielding an array it borrows retains it first. Errors: a node that raises
leaves the graph early, past the releases that follow; the backend releases
what the invocation owns at that point (it keeps a list of its references), so
the IR has nothing for error paths. Running the
pass twice changes nothing: the second run finds every leaf consumed already.
`check_array_ownership` (ownership.py) verifies the result.
"""
from __future__ import annotations

from collections import defaultdict

from ...errors import Loc
from ..core import Graph, Module, Node, Value
from ..types import NONE, ArrayType, Type
from .ownership import (
    Leaf,
    LeafMap,
    check_array_ownership,
    consumed_positions,
    is_managed,
    region_ownership,
)


def insert_array_ownership(module: Module) -> Module:
    """Add the retains and releases every graph of `module` needs (in place); return it."""
    for graph in module.graphs.values():
        _erase_identities(graph)
        _place_in(graph, [False] * len(graph.params))
    return module


def _erase_identities(graph: Graph) -> None:
    """Drop `stop_gradient` nodes (the identity once no gradient is taken any more), so
    that an array flowing through one is one reference, not two."""
    alias: dict[Value, Value] = {}
    kept = []
    for node in graph.nodes:
        node.inputs = [alias.get(v, v) for v in node.inputs]
        for region in node.regions:
            _erase_identities(region)
        if node.op == "stop_gradient":
            alias[node.outputs[0]] = node.inputs[0]
        else:
            kept.append(node)
    graph.nodes = kept
    graph.outputs = [alias.get(v, v) for v in graph.outputs]


def _place_in(graph: Graph, owned: list[bool]) -> None:
    """Regions first, then `graph`'s own list (which owns the parameters flagged in `owned`)."""
    for node in graph.nodes:
        for region, region_owned in region_ownership(node):
            _place_in(region, region_owned)
    values = [*graph.params, *(v for n in graph.nodes for v in n.outputs)]
    if any(is_managed(v.type) for v in values):
        _Placement(graph, owned).run()


class _Placement:
    """The retains and releases of one graph's node list."""

    def __init__(self, graph: Graph, owned: list[bool]):
        self.graph = graph
        self.leaves = LeafMap(graph, owned)
        self.nodes: list[Node] = []
        """The new node list, built by `run`."""

    def run(self) -> None:
        graph, old = self.graph, list(self.graph.nodes)
        last, borrowed = self.last_uses(old)
        end = len(old)
        dying: dict[int, list[Leaf]] = defaultdict(list)
        for leaf, i in last.items():
            dying[i].append(leaf)
        params = [leaf for p in graph.params for leaf in self.leaves.leaves(p) if leaf]
        self.release([leaf for leaf in params if leaf not in last], graph.loc)
        for i, node in enumerate(old):
            moved: set[Leaf] = set()
            for k in consumed_positions(node):
                node.inputs[k] = self.own(node.inputs[k], i, last, borrowed[i], moved, node.loc)
            self.nodes.append(node)
            made = [leaf for out in node.outputs for leaf in self.leaves.leaves(out)
                    if leaf is not None and leaf[0] is out]
            unused = [leaf for leaf in made if leaf not in last]
            self.release([leaf for leaf in dying[i] if leaf not in moved] + unused, node.loc)
        moved = set()
        graph.outputs = [self.own(v, end, last, set(), moved, graph.loc) for v in graph.outputs]
        self.release([leaf for leaf in dying[end] if leaf not in moved], graph.loc)
        graph.nodes = self.nodes

    def last_uses(self, nodes: list[Node]) -> tuple[dict[Leaf, int], list[set[Leaf]]]:
        """Owned leaf -> index of its last use (len(nodes): an output); and for each node,
        the owned leaves it borrows (uses other than consuming)."""
        last: dict[Leaf, int] = {}
        borrowed: list[set[Leaf]] = []
        for i, node in enumerate(nodes):
            consumed = consumed_positions(node)
            borrowed.append(set())
            for k in range(len(node.inputs)):
                for leaf in self.leaves.used(node, k):
                    if leaf is not None:
                        last[leaf] = i
                        if k not in consumed:
                            borrowed[i].add(leaf)
            self.leaves.define(node)
        for out in self.graph.outputs:
            last.update((leaf, len(nodes)) for leaf in self.leaves.leaves(out) if leaf)
        return last, borrowed

    def own(self, value: Value, i: int, last: dict[Leaf, int], borrowed: set[Leaf],
            moved: set[Leaf], loc: Loc | None) -> Value:
        """`value` for a consumer at position `i`: itself when each of its leaves can be
        moved (then recorded in `moved`), else a copy holding new references where needed."""
        leaves = self.leaves.leaves(value)
        handed: set[Leaf] = set()
        for leaf in leaves:
            if leaf is None or last.get(leaf) != i or leaf in borrowed or leaf in moved \
                    or leaf in handed:
                break
            handed.add(leaf)
        else:
            moved |= handed
            return value
        if isinstance(value.type, ArrayType):
            return self.emit("array_retain", [value], value.type, loc, name=value.name)
        parts = []
        for k, t in enumerate(value.type.elements):
            part = self.emit("getitem", [value], t, loc, {"index": k})
            parts.append(self.own(part, i, last, borrowed, moved, loc) if is_managed(t) else part)
        return self.emit("tuple", parts, value.type, loc, name=value.name)

    def release(self, leaves: list[Leaf], loc: Loc | None) -> None:
        """Append an `array_release` of each leaf (in a stable order)."""
        for root, path in sorted(leaves, key=lambda leaf: (leaf[0].id, leaf[1])):
            value = root
            for k in path:
                value = self.emit("getitem", [value], value.type.elements[k], loc, {"index": k})
            self.emit("array_release", [value], NONE, loc)

    def emit(self, op: str, inputs: list[Value], t: Type, loc: Loc | None,
             attrs: dict | None = None, name: str = "") -> Value:
        node = Node(op, inputs, [Value(name, t)], dict(attrs or {}), [], loc)
        self.nodes.append(node)
        self.leaves.define(node)
        return node.outputs[0]


__all__ = ["check_array_ownership", "insert_array_ownership"]
