"""Inlining: every `call` of a graph outside any call-graph cycle becomes a copy of its body.

Graphs on a cycle (recursive, mutually recursive) stay as calls; what they call
off the cycle is inlined into them. A copy has fresh Values (with the callee's
names, for readability), the callee's parameters replaced by the call's
arguments, and each node keeps its own source location. Calls inside inlined
bodies are inlined in turn, which ends because no callee off a cycle reaches
itself. Graphs no longer reachable from the entry are dropped afterwards.

A call marked `noinline` stays a call: a Jacobian's loop calls the pass it repeats,
compiled once (ad/jacobians.py).

A small self-recursive graph also gets its own body inlined at each self-call,
up to SELF_INLINE_LEVELS levels (recursion unrolled, as gcc does): fib then
makes a fraction of the calls, each doing more work (docs/measurements.md). That is a
pass of its own (`unroll_recursion`), which the pipeline runs after its rounds have
simplified the graph: the rounds then work on one copy of the body instead of fifteen,
and what they would find in the copies (`(n - 1) - 1` against `n - 2`) LLVM finds too
(docs/benchmarks.md).
"""
from __future__ import annotations

from ..core import Graph, Module, Node, Value
from .rewrite import Replacement, rewrite_graph

SELF_INLINE_MAX_NODES = 200
"""How large (nodes, regions included) unrolling may make a self-recursive graph."""
SELF_INLINE_LEVELS = 3


def inline_calls(module: Module, *, keep_custom_rules: bool = False) -> Module:
    """Inline every call whose callee is on no call-graph cycle; drop unreachable graphs.

    A call of a function with a custom_vjp rule is kept as a call (with its rule)
    when `keep_custom_rules`, as reverse mode needs before differentiating;
    otherwise the rule is dropped and the call inlined like any other.
    """
    for graph in module.graphs.values():
        for node in graph.walk():
            if node.op == "call" and "custom_vjp" in node.attrs and not keep_custom_rules:
                del node.attrs["custom_vjp"]
    calls = {name: module.callees(graph) & module.graphs.keys()
             for name, graph in module.graphs.items()}
    on_cycle = {name for name in calls if name in _reachable(calls, name)}
    for graph in module.graphs.values():
        _inline_in(graph, module, on_cycle)
    if module.entry in module.graphs:
        calls = {name: module.callees(graph) for name, graph in module.graphs.items()}
        live = _reachable(calls, module.entry) | {module.entry}
        module.graphs = {name: g for name, g in module.graphs.items() if name in live}
    return module


def unroll_recursion(module: Module) -> Module:
    """Inline each small self-recursive graph's body at its self-calls, a few levels deep
    (`_unroll_recursion`)."""
    for name, graph in module.graphs.items():
        if name in module.callees(graph):
            _unroll_recursion(graph)
    return module


def _reachable(calls: dict[str, set[str]], start: str) -> set[str]:
    """The graphs some chain of one or more calls leads to from `start`."""
    seen: set[str] = set()
    todo = list(calls.get(start, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(calls.get(name, ()))
    return seen


def _inline_in(graph: Graph, module: Module, on_cycle: set[str]) -> None:
    """Replace the inlinable calls of `graph` and of its regions by copies of the callees."""

    def visit(node: Node) -> Replacement | None:
        for region in node.regions:
            _inline_in(region, module, on_cycle)
        callee = module.graphs.get(node.attrs.get("callee")) if node.op == "call" else None
        if callee is None or callee.name in on_cycle or len(callee.params) != len(node.inputs) \
                or "custom_vjp" in node.attrs or node.attrs.get("noinline"):
            return None
        mapping = dict(zip(callee.params, node.inputs))
        body = [clone_node(inner, mapping) for inner in callee.nodes]
        return Replacement(body, {node.outputs[0]: mapping[callee.outputs[0]]})

    rewrite_graph(graph, visit)


def _unroll_recursion(graph: Graph) -> None:
    """Inline `graph`'s body at its self-calls, level after level, while it stays small."""
    body = clone_graph(graph)
    size = sum(1 for _ in body.walk())
    for _ in range(SELF_INLINE_LEVELS):
        calls = [n for n in graph.walk() if n.op == "call" and n.attrs["callee"] == graph.name]
        if sum(1 for _ in graph.walk()) + len(calls) * size > SELF_INLINE_MAX_NODES:
            return
        _inline_self(graph, body, set(map(id, calls)))


def _inline_self(graph: Graph, body: Graph, targets: set[int]) -> None:
    """Replace the call nodes in `targets` (by id) by copies of `body`, a snapshot of the callee.

    Only the calls that existed before unrolling are replaced, not those the copies bring.
    """

    def visit(node: Node) -> Replacement | None:
        for region in node.regions:
            _inline_self(region, body, targets)
        if id(node) not in targets:
            return None
        mapping = dict(zip(body.params, node.inputs))
        nodes = [clone_node(inner, mapping) for inner in body.nodes]
        return Replacement(nodes, {node.outputs[0]: mapping[body.outputs[0]]})

    rewrite_graph(graph, visit)


def clone_node(node: Node, mapping: dict[Value, Value]) -> Node:
    """A copy of `node` reading `mapping`'s values, with fresh outputs added to `mapping`."""
    outputs = [Value(v.name, v.type) for v in node.outputs]
    copy = Node(node.op, [mapping[v] for v in node.inputs], outputs, dict(node.attrs),
                [clone_graph(region) for region in node.regions], node.loc)
    mapping.update(zip(node.outputs, outputs))
    return copy


def clone_graph(graph: Graph) -> Graph:
    """A copy of a region (or any graph) with fresh Values throughout."""
    params = [Value(p.name, p.type) for p in graph.params]
    mapping = dict(zip(graph.params, params))
    nodes = [clone_node(node, mapping) for node in graph.nodes]
    return Graph(graph.name, params, nodes, [mapping[v] for v in graph.outputs], graph.loc)
