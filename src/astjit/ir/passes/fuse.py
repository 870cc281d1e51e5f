"""Elementwise fusion: every connected group of elementwise array ops becomes one `fused` node.

Runs after the optimization rounds (pipeline.py), graph by graph and region by
region. A *member* is a leaf node computing an elementwise op over whole arrays
(`ops.elementwise.is_array_elementwise`: an array-typed add, exp, where ...).
Walking a node list in order, members that feed each other (one's array result
is another's operand) join one group. A group is *closed* (no later member may
join it) as soon as a node outside it uses one of its results, or a node with
effects runs (an element write, a call, a loop ...): so all of a group's members
sit between nodes it may be moved across, and the `fused` node, placed where
the group's last member was, sees all its inputs defined and comes before every
outside use of its results.

The `fused` node (see core.py) reads the group's outside operands (each once;
constants are copied into the kernel instead), and its outputs are the member
results used outside the group (or by the graph's outputs): the very same
Values, so nothing needs renaming. The kernel holds the members' scalar ops,
with the element conversions each op's plan asks for (`cast`), and `where`
as a scalar `select`.

All outputs of a `fused` node have the shape of the whole iteration space, so
a member result that is an output must be computed from every array input of
the group (otherwise its own shape could be smaller: `a = x * 2` used outside,
then `a + m` with a 2-d `m`); a group where that fails is split into one-op
`fused` nodes, which is always exact. After this pass no array-typed
elementwise leaf op remains.
"""
from __future__ import annotations

from ..core import Graph, Module, Node, Value
from ..ops.elementwise import array_plan, is_array_elementwise
from ..types import ArrayType
from .effects import has_effects


def fuse_elementwise(module: Module) -> Module:
    """Replace the elementwise array ops of every graph of `module` by `fused` nodes."""
    for graph in module.graphs.values():
        _fuse_graph(graph)
    return module


class _Group:
    def __init__(self) -> None:
        self.members: list[Node] = []
        self.closed = False


def _fuse_graph(graph: Graph) -> None:
    for node in graph.nodes:
        for region in node.regions:
            _fuse_graph(region)
    group_of: dict[Value, _Group] = {}  # member result -> its group
    groups: list[_Group] = []
    for node in graph.nodes:
        if is_array_elementwise(node):
            joined = {id(g): g for v in node.inputs
                      if (g := group_of.get(v)) is not None and not g.closed}
            group = _Group()
            for g in joined.values():  # merge, keeping program order
                group.members.extend(g.members)
                g.members = []
                g.closed = True
            group.members = sorted(group.members, key=lambda n: _index(graph, n))
            group.members.append(node)
            groups.append(group)
            for member in group.members:
                group_of[member.outputs[0]] = group
            continue
        for v in node.inputs:
            if v in group_of:
                group_of[v].closed = True
        if has_effects(node):
            for g in groups:
                g.closed = True
    groups = [g for g in groups if g.members]
    if not groups:
        return
    uses = _outside_uses(graph)
    consts = {n.outputs[0]: n for n in graph.nodes if n.op == "const"}
    replacement: dict[Node, Node | None] = {}
    for group in groups:
        parts = [group.members] if _exact(group.members, uses) else [[m] for m in group.members]
        for members in parts:
            fused = _build(members, uses, consts)
            for member in members:
                replacement[member] = None
            replacement[members[-1]] = fused
    graph.nodes = [replacement.get(n, n) for n in graph.nodes if replacement.get(n, n) is not None]


def _index(graph: Graph, node: Node) -> int:
    return next(i for i, n in enumerate(graph.nodes) if n is node)


def _outside_uses(graph: Graph) -> dict[Value, set[int]]:
    """For each value, the ids of the nodes using it (-1 for the graph's outputs)."""
    uses: dict[Value, set[int]] = {}
    for node in graph.nodes:
        for v in node.inputs:
            uses.setdefault(v, set()).add(id(node))
    for v in graph.outputs:
        uses.setdefault(v, set()).add(-1)
    return uses


def _outputs(members: list[Node], uses: dict[Value, set[int]]) -> list[Value]:
    inside = {id(m) for m in members}
    used = [m.outputs[0] for m in members if uses.get(m.outputs[0], set()) - inside]
    return used or [members[-1].outputs[0]]  # unused: still run (it may raise), one output


def _exact(members: list[Node], uses: dict[Value, set[int]]) -> bool:
    """Whether every output of the group is computed from all of the group's array inputs."""
    produced = {m.outputs[0]: m for m in members}
    reads: dict[Value, frozenset] = {}
    for m in members:
        seen = set()
        for v in m.inputs:
            if v in produced:
                seen |= reads[v]
            elif isinstance(v.type, ArrayType):
                seen.add(v)
        reads[m.outputs[0]] = frozenset(seen)
    everything = frozenset().union(*reads.values())
    return all(reads[v] == everything for v in _outputs(members, uses))


def _build(members: list[Node], uses: dict[Value, set[int]], consts: dict[Value, Node]) -> Node:
    """The `fused` node computing `members` (in order)."""
    kernel = Graph("kernel")
    inputs: list[Value] = []
    env: dict[Value, Value] = {}  # outer value -> kernel value
    produced = {m.outputs[0] for m in members}

    def operand(v: Value) -> Value:
        if v not in env:
            if v.type is not None and not isinstance(v.type, ArrayType) and v in consts:
                c = consts[v]
                env[v] = kernel.add("const", [], attrs=dict(c.attrs), types=[v.type]).outputs[0]
            else:
                element = v.type.dtype if isinstance(v.type, ArrayType) else v.type
                param = Value(v.name, element)
                kernel.params.append(param)
                inputs.append(v)
                env[v] = param
        return env[v]

    for m in members:
        plan = array_plan(m.op, tuple(v.type for v in m.inputs))
        args = []
        for v, want in zip(m.inputs, plan.operands):
            x = operand(v) if v not in produced else env[v]
            if x.type != want:
                x = kernel.add("cast", [x], attrs={"to": want}, loc=m.loc, types=[want]).outputs[0]
            args.append(x)
        op = "select" if m.op == "where" else m.op
        out = kernel.add(op, args, loc=m.loc, names=[m.outputs[0].name], types=[plan.result])
        env[m.outputs[0]] = out.outputs[0]
    outputs = _outputs(members, uses)
    kernel.outputs = [env[v] for v in outputs]
    ndim = max(v.type.ndim for v in outputs)
    plan = tuple(v.type.ndim if isinstance(v.type, ArrayType) else None for v in inputs)
    return Node("fused", inputs, outputs, {"ndim": ndim, "plan": plan}, [kernel], members[-1].loc)
