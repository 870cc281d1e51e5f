"""The graph IR data model: Module, Graph, Node, Value.

Invariants (checked by `verify.py`):

- SSA: every Value is defined exactly once — as a Graph parameter or as a Node
  output — and used only after its definition, in the same Graph.
- No free variables: a region (a subgraph held by an `if` / `while` node) sees
  only its own parameters; values enter through the node's inputs and leave
  through the region's outputs.
- Structural ops form a closed set, handled by hand by every consumer:

  ``if``    inputs ``[cond, *captured]``; regions ``[then, else]``, each with
            parameters matching ``captured`` and outputs matching the node's outputs.
  ``while`` inputs ``[*invariants, *carried]`` with ``attrs["n_invariants"]``;
            regions ``[cond, body]``, both with parameters ``invariants + carried``;
            ``cond`` returns one bool, ``body`` returns the new carried values;
            the node's outputs are the final carried values.
  ``call``  ``attrs["callee"]`` names a Graph of the Module; inputs are its
            arguments, the single output its result.
  ``fused`` elementwise work over whole arrays (passes/fuse.py); its one attribute,
            ``attrs["fused"]``, is a ``Kernel`` (kernels.py): one loop nest over a
            broadcast iteration space of rank ``ndim``. inputs: the arrays and scalars
            the kernel reads, each once; an array of ndim k (its ``plan`` entry; None
            for a scalar) is aligned with the last k axes of the space (NumPy
            broadcasting: a size-1 axis stretches, other sizes must agree, ValueError
            "operands could not be broadcast together with shapes ..." otherwise).
            region ``[kernel]``: one parameter per input (an array's element type, a
            scalar's own type), scalar leaf ops
            only (elementwise ops, ``cast``, ``const``, ``select``), one scalar output
            per node output, run once per point with NumPy's semantics (no exceptions:
            1/0 is inf, integer division by zero 0, NaN from math functions, integers
            wrap). outputs: new arrays (owned) ``array<dtype of kernel output k, ndim>``
            shaped as the space; with a ``Reduction`` (kind: a row of
            ``ops/reductions.REDUCTIONS``; axes; keepdims) the kernel's last output is
            the element reduced, already of the accumulator type, and the node's last
            output that reduction (``reductions.result_type``: a scalar when every
            axis goes and none is kept, else a new array).
  ``rowwise`` a row group (passes/rowfuse.py); ``attrs["rowwise"]`` is a ``RowGroup``
            (kernels.py). region ``[rows]``: a graph of `fused` nodes of the same
            ndim (reducing the axes after the ``rows`` outer ones), `sum_to_like`
            nodes and their releases, one parameter per input and one output per
            node output; it means that graph, which a backend may run row by row.

  Every other op is a leaf primitive from the table in `ops/`.
- A function's Graph has exactly one output (its return value; a tuple-typed
  value for `return a, b`).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import Loc
from .types import Type

STRUCTURAL_OPS = frozenset({"if", "while", "call", "fused", "rowwise"})
REGION_ROLES = {"if": ("then", "else"), "while": ("cond", "body"), "fused": ("kernel",),
                "rowwise": ("rows",)}
"""What each region of a structural op is, in order."""

_ids = itertools.count()


@dataclass(eq=False)
class Value:
    """An SSA value: defined once, by a Graph parameter or a Node output."""

    name: str = ""
    """The user's variable name this value holds, or '' for a temporary."""
    type: Type | None = None
    """None until type inference has run."""
    id: int = field(default_factory=lambda: next(_ids))
    """Unique and increasing: gives printing a stable order."""

    def __repr__(self) -> str:
        return f"%{self.name or 't'}#{self.id}" + (f": {self.type}" if self.type else "")


@dataclass(eq=False)
class Node:
    """One operation: a primitive from the table, or a structural op with regions."""

    op: str
    inputs: list[Value]
    outputs: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    """Op parameters: `value` of a const, `to` of a cast, `index` of getitem, ..."""
    regions: list[Graph] = field(default_factory=list)
    loc: Loc | None = None

    def __repr__(self) -> str:
        return f"Node({self.op}, in={self.inputs}, out={self.outputs}, attrs={self.attrs})"


@dataclass(eq=False)
class Graph:
    """A function body or a region: parameters, an ordered node list, outputs."""

    name: str
    params: list[Value] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    loc: Loc | None = None

    def add(self, op: str, inputs: list[Value], n_outputs: int = 1, *, attrs: dict | None = None,
            regions: list[Graph] | None = None, loc: Loc | None = None,
            names: list[str] | None = None, types: list[Type] | None = None) -> Node:
        """Append a node and return it; its outputs are fresh Values."""
        names = names or [""] * n_outputs
        types = types or [None] * n_outputs
        outs = [Value(n, t) for n, t in zip(names, types)]
        node = Node(op, list(inputs), outs, dict(attrs or {}), list(regions or []), loc)
        self.nodes.append(node)
        return node

    def walk(self) -> Iterator[Node]:
        """Every node of this graph and of its regions, depth first, in order."""
        for node in self.nodes:
            yield node
            for region in node.regions:
                yield from region.walk()


@dataclass(eq=False)
class Module:
    """Graphs by name; `entry` is the function the user jitted."""

    graphs: dict[str, Graph] = field(default_factory=dict)
    entry: str = ""
    lower_callee: Any = field(default=None, repr=False)
    """Set by the frontend: lowers a Python function found only during type inference (a
    method of an argument's class, `self.forward(x)`) into this module; its graph name."""

    @property
    def entry_graph(self) -> Graph:
        return self.graphs[self.entry]

    def callees(self, graph: Graph) -> set[str]:
        """The graphs `graph` calls, and the custom_vjp rules of those calls."""
        return {n.attrs[key] for n in graph.walk() if n.op == "call"
                for key in ("callee", "custom_vjp") if key in n.attrs}
