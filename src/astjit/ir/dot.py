"""Graphviz DOT export of a Module: operators are nodes, values are edges.

Each function graph is a cluster holding one ellipse per parameter, a box per
operator (its op and attributes as the text printer shows them, operands left
to the edges, then its result types) and a `return` ellipse. Each use of a
value is an edge from the operator (or parameter) that defines it to the one
that uses it, labelled with the value's name as the text printer shows it. A
structural op's regions are nested clusters (`then`/`else`, `cond`/`body`,
`kernel`, or a row group's `rows`) with their own parameters and a `yield`;
dashed edges link the op to its regions' parameters and their yields back to
the op.
"""
from __future__ import annotations

from collections.abc import Callable

from .core import REGION_ROLES, Graph, Module, Node, Value
from .printer import ValueNames, format_attrs, format_op, region_roles


def format_dot(module: Module, node_class: Callable[[Node], str | None] | None = None) -> str:
    """The whole module as one `digraph`, each graph (the entry first) in a cluster;
    `node_class(node)`, where given, is an operator's `class` attribute, which Graphviz's
    SVG output copies onto the node's group (the IR explorer marks source lines so)."""
    writer = _DotWriter(node_class)
    for name in sorted(module.graphs, key=lambda name: name != module.entry):
        writer.function(module.graphs[name])
    header = ["digraph astjit {", "  compound=true;",
              '  node [shape=box, fontname="monospace"];',
              '  edge [fontname="monospace", fontsize=10];']
    return "\n".join(header + writer.lines + ["}"]) + "\n"


def quote(text: str) -> str:
    """A DOT string literal: backslashes and quotes escaped, newlines as `\\n`."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _types_line(values: list[Value]) -> str:
    types = [str(v.type) for v in values if v.type is not None]
    return "\n" + ", ".join(types) if types else ""


class _DotWriter:
    """Emits the clusters, operator nodes and value edges of the graphs it is given."""

    def __init__(self, node_class: Callable[[Node], str | None] | None = None):
        self.node_class = node_class
        self.lines: list[str] = []
        self.n_ids = 0
        self.names: ValueNames | None = None
        self.producers: dict[Value, str] = {}
        """The DOT node that defines each value of the current function graph."""

    def new_id(self, prefix: str = "n") -> str:
        self.n_ids += 1
        return f"{prefix}{self.n_ids}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def function(self, graph: Graph) -> None:
        self.names = ValueNames(graph)
        self.producers = {}
        self.cluster(f"@{graph.name}", graph, "return", 1)

    def cluster(self, label: str, graph: Graph, sink: str, depth: int) -> str:
        """A cluster for `graph`: parameters, nodes, and a `sink` node taking its outputs.

        Returns the sink's id.
        """
        self.emit(depth, f"subgraph {self.new_id('cluster_')} {{")
        self.emit(depth + 1, f"label={quote(label)};")
        for param in graph.params:
            self.producers[param] = self.new_id()
            self.emit(depth + 1, f"{self.producers[param]} [shape=ellipse, "
                                 f"label={quote(self.names[param] + _types_line([param]))}];")
        for node in graph.nodes:
            self.node(node, depth + 1)
        sink_id = self.new_id()
        self.emit(depth + 1, f"{sink_id} [shape=ellipse, label={quote(sink)}];")
        self.value_edges(graph.outputs, sink_id, depth + 1)
        self.emit(depth, "}")
        return sink_id

    def node(self, node: Node, depth: int) -> None:
        node_id = self.new_id()
        if node.op == "call":
            label = f"call @{node.attrs.get('callee')}" + format_attrs(node, self.names)
        elif node.op in REGION_ROLES:
            label = node.op + format_attrs(node, self.names)
        else:
            label = format_op(node, self.names, operands=False)
        css = self.node_class(node) if self.node_class is not None else None
        extra = f", class={quote(css)}" if css else ""
        self.emit(depth, f"{node_id} [label={quote(label + _types_line(node.outputs))}{extra}];")
        self.value_edges(node.inputs, node_id, depth)
        roles = region_roles(node) if node.op in REGION_ROLES else ()
        for role, region in zip(roles, node.regions):
            yield_id = self.cluster(role, region, "yield", depth)
            for param in region.params:
                self.emit(depth, f"{node_id} -> {self.producers[param]} [style=dashed];")
            self.emit(depth, f"{yield_id} -> {node_id} [style=dashed, constraint=false];")
        for value in node.outputs:
            self.producers[value] = node_id

    def value_edges(self, values: list[Value], target: str, depth: int) -> None:
        """One edge per use, from the value's producer; an undefined value gets a red node."""
        for value in values:
            if value not in self.producers:
                self.producers[value] = self.new_id()
                self.emit(depth, f"{self.producers[value]} [shape=ellipse, color=red, "
                                 f"label={quote(self.names[value] + ' (undefined)')}];")
            self.emit(depth, f"{self.producers[value]} -> {target} "
                             f"[label={quote(self.names[value])}];")
