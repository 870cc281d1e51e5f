"""Elementwise fusion: every connected group of elementwise array ops becomes one `fused` node.

Runs after the optimization rounds (pipeline.py), graph by graph and region by
region. A *member* is a leaf node computing an elementwise op over whole arrays
(`ops.elementwise.is_array_elementwise`: an array-typed add, exp, where ...).
Walking a node list in order, members that feed each other (one's array result
is another's operand) join one group. A group is *closed* (no later member may
join it) as soon as a node outside it uses one of its results, or a node with
effects runs (an element write, a call, a loop ...), unless that node writes into
no array, or only into a new array of the graph that no node has read yet (an
adjoint's accumulator: `add_into` of a slice's adjoint, `_private_write`), and
every member only computes (`effects.only_computes`: it cannot raise, so that it
runs later is not seen): so all of a group's members
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
then `a + m` with a 2-d `m`); a group where that fails is split into groups of
the members computed from the same arrays (`_exact_parts`: `a` apart from `a + m`;
one-op `fused` nodes at worst, which are always exact), and a part whose results
one other part alone reads is joined to it where symbolic shapes prove that their
results all have the shape of its space; all are placed where the group's last
member was. After this pass no array-typed elementwise leaf op remains.

Reductions (`reduce`, ops/reductions.py): a `reduce` whose operand is the
result of an open group *joins* it (when the group is exact, as above): the
group's `fused` node then carries the reduction (its Kernel's `Reduction`,
kernels.py: `axes` normalized, sorted and non-negative), its last output is the
reduce's result and its kernel's last output the reduced element, cast to the
reduction's accumulator type (a bool to int64 for a sum, an int to float64 for
a mean). The elementwise intermediate is never stored unless something else
uses it; the member results used elsewhere (`e` in `e / np.sum(e)`) come
first, stored by the same loop, so the reduction costs no second pass.
The group is closed once a reduction joins. Any other `reduce` becomes a
`fused` node of its own with an identity kernel (`reduction_node`), so there
is one lowering. After this pass no `reduce` leaf op remains. A reduction does
not close the other open groups (it allocates and may raise, as elementwise
ops do, and they are not ordered among themselves either).

Broadcast hints: an array input known to have length 1 along some axes (a
`keepdims` reduction's result, a `reshape` to a literal 1: `m` in
`x - np.max(x, axis=1, keepdims=True)`) is listed in the Kernel's
optional field `ones` (per input, the sorted tuple of those axes of its own,
None for a scalar). The backend then reads it with a constant stride 0 there,
and its innermost loop stays unit-stride and vectorizable.

Buffer reuse: an elementwise `fused` node may write an output into the memory
of an input it reads for the last time: an array another `fused` node of the
same graph made (a new array, so nobody outside the invocation sees it), of
the output's dtype and the space's ndim, used by no later node nor returned
(`e / s` in a softmax writes into `e`). The Kernel's optional field `reuse` lists, per
output, the index of such an input or None; the backend takes the buffer only
when, at run time, it is C-contiguous, of the space's shape, and its owner has
no other reference (no view of it is alive), and allocates otherwise.
"""
from __future__ import annotations

import dataclasses

from ..core import Graph, Module, Node, Value
from ..kernels import Kernel, Reduction, kernel_of
from ..ops.adjoints import ACCUMULATING
from ..ops.elementwise import BOOL_LOGIC, array_plan, is_array_elementwise
from ..ops.reductions import accumulator as reduction_dtype
from ..ops.reductions import normalize_axes
from ..shape_algebra import ONE, broadcast, settled
from ..symbolic_shapes import symbolic_shapes
from ..types import BOOL, ArrayType
from .dce import memory_reads, own_memory
from .effects import has_effects, may_write, only_computes


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
    uses = node_uses(graph)
    shapes = symbolic_shapes(graph)
    owner = own_memory(graph)
    exposed: set[Value] = set()  # the graph's new arrays some node has read so far
    for node in graph.nodes:
        exposed.update(owner[v] for v in memory_reads(node) if v in owner)
        if is_reduction(node):
            group = group_of.get(node.inputs[0])
            if group is None or group.closed or not _absorbs(group, node, uses):
                if group is not None:
                    group.closed = True  # its result is read from outside
                group = _Group()
                groups.append(group)
            group.members.append(node)
            group.closed = True
            continue
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
            writes = may_write(node) and not _private_write(node, owner, exposed)
            for g in groups:
                g.closed = g.closed or writes or not all(
                    only_computes(m, lambda: shapes) for m in g.members)
    groups = [g for g in groups if g.members]
    consts = {n.outputs[0]: n for n in graph.nodes if n.op == "const"}
    ones = _known_ones(shapes)
    _mark_reducing(graph, ones)
    if not groups:
        return
    replacement: dict[Node, list[Node]] = {}
    for group in groups:
        whole = group.members[-1].op == "reduce" or _exact(group.members, uses)
        for member in group.members:
            replacement[member] = []
        replacement[group.members[-1]] = [
            _build(members, uses, consts, ones)
            for members in ([group.members] if whole
                            else _exact_parts(group.members, uses, shapes))]
    graph.nodes = [new for n in graph.nodes for new in replacement.get(n, [n])]
    _mark_reuse(graph)


def _private_write(node: Node, owner: dict[Value, Value], exposed: set[Value]) -> bool:
    """Whether `node` accumulates into a new array of the graph (dce.py `own_memory`: an
    adjoint's accumulator) that no node has read so far: no open group reads its memory,
    so the groups may be moved past the write (reverse mode's `add_into` of each slice's
    adjoint would otherwise cut the elementwise work around it into separate loops)."""
    if node.op not in ACCUMULATING or node.inputs[0] not in owner:
        return False
    target = owner[node.inputs[0]]
    if node.op in ("add_into", "zero_into") and owner.get(node.inputs[1]) != target:
        return False
    return target not in exposed


def _exact_parts(members: list[Node], uses: dict[Value, set[int]],
                 shapes: dict[Value, tuple]) -> list[list[Node]]:
    """A group that is not exact split into groups that are, in an order each can run in
    (`_split_by_reads`), then each part whose results only one other part reads joined
    to it where the two make a group whose results all have the shape of its whole space
    (`shapes`, symbolic: the group exact in effect)."""
    order = {id(m): k for k, m in enumerate(members)}
    parts = _split_by_reads(members, uses)
    joined = True
    while joined:
        joined = False
        for i, part in enumerate(parts):
            results = set(_outputs(part, uses))
            readers = [j for j, other in enumerate(parts)
                       if j != i and any(v in results for m in other for v in m.inputs)]
            if len(readers) != 1:
                continue
            merged = sorted(part + parts[readers[0]], key=lambda m: order[id(m)])
            if _fills_its_space(merged, uses, shapes):
                parts[readers[0]] = merged  # the reader comes later: its place serves both
                del parts[i]
                joined = True
                break
    return parts


def _split_by_reads(members: list[Node], uses: dict[Value, set[int]]) -> list[list[Node]]:
    """Exact groups of `members`: those computed from the same arrays of the group's
    operands together (`a` and `a * a` of `x`, apart from `(a * a) * m` of `x` and `m`),
    those from fewer first (a member reads only what is computed from fewer of them or
    the same); a part that is still not exact split again (the arrays it reads of the
    others count), until one op per group."""
    produced = {m.outputs[0] for m in members}
    reads: dict[Value, frozenset] = {}
    parts: dict[frozenset, list[Node]] = {}
    for m in members:
        seen = frozenset().union(*(reads[v] if v in produced else {v} for v in m.inputs
                                   if v in produced or isinstance(v.type, ArrayType)))
        reads[m.outputs[0]] = seen
        parts.setdefault(seen, []).append(m)
    if len(parts) == 1:  # one set of arrays, and still not exact
        return [[m] for m in members]
    ordered = sorted(parts.items(), key=lambda item: len(item[0]))
    return [piece for _, part in ordered
            for piece in ([part] if _exact(part, uses) else _split_by_reads(part, uses))]


def _fills_its_space(members: list[Node], uses: dict[Value, set[int]],
                     shapes: dict[Value, tuple]) -> bool:
    """Whether every result of `members` used elsewhere has, symbolically, the shape of
    the broadcast of all the arrays they read (shape_algebra.py: then the same lengths),
    as it is where the kernel runs: an axis with one literal length has that length."""
    produced = {m.outputs[0] for m in members}
    inputs = [shapes.get(v) for m in members for v in m.inputs
              if v not in produced and isinstance(v.type, ArrayType)]
    outputs = _outputs(members, uses)
    ndim = max(v.type.ndim for v in outputs)
    space = None if None in inputs else broadcast(inputs, ndim)
    if space is None:
        return False
    space = tuple(map(settled, space))  # where it runs, its broadcast passed its check
    return all(shapes.get(v) == space for v in outputs)


def _mark_reuse(graph: Graph) -> None:
    """Give each elementwise `fused` node its `reuse` attr (the module docstring)."""
    made = {v for n in graph.nodes if n.op == "fused" for v in n.outputs}  # new arrays
    last_use: dict[Value, int] = {}
    for i, node in enumerate(graph.nodes):
        for v in node.inputs:
            last_use[v] = i
    for v in graph.outputs:
        last_use[v] = len(graph.nodes)
    for i in reversed(range(len(graph.nodes))):  # an element lives as long as its tuple
        node = graph.nodes[i]
        if node.op == "tuple":
            for v in node.inputs:
                last_use[v] = max(last_use[v], last_use.get(node.outputs[0], i))
    for i, node in enumerate(graph.nodes):
        spec = kernel_of(node)
        if spec is None or spec.reduce is not None:
            continue
        taken: set[int] = set()
        reuse = []
        ones = spec.ones or [()] * len(node.inputs)
        # a donor known to have length 1 where the space may not is never the right shape
        ndim = spec.ndim
        space_ones = {a for a in range(ndim) if all(
            a < ndim - v.type.ndim or a - (ndim - v.type.ndim) in k
            for v, k in zip(node.inputs, ones) if isinstance(v.type, ArrayType))}
        for out in node.outputs:
            found = next((j for j, v in enumerate(node.inputs) if j not in taken and v in made
                          and last_use[v] == i and v.type == out.type
                          and set(ones[j]) <= space_ones), None)
            if found is not None:
                taken.add(found)
            reuse.append(found)
        if taken:
            node.attrs["fused"] = dataclasses.replace(spec, reuse=tuple(reuse))


def _mark_reducing(graph: Graph, ones: dict[Value, tuple[int, ...]]) -> None:
    """Give attr `reduces` to each `sum_to_like` onto an array of the adjoint's ndim that is
    known to have length 1 along an axis the adjoint is not known to: it sums (the gradient
    of `x - m` for a keepdims `m`), so the backend emits the sum alone, without the
    same-shape test and its pass-through version."""
    for node in graph.nodes:
        if node.op != "sum_to_like":
            continue
        g, x = node.inputs
        if (isinstance(x.type, ArrayType) and x.type.ndim == g.type.ndim
                and set(ones.get(x, ())) - set(ones.get(g, ()))):
            node.attrs["reduces"] = True


def _known_ones(shapes: dict[Value, tuple]) -> dict[Value, tuple[int, ...]]:
    """The array values known to have length 1 along some axes, and those axes: where
    their symbolic shape (`shapes`, a graph's `symbolic_shapes`) is the constant 1, as a
    `keepdims` reduction's result, a reshape to a literal 1, and what they carry to
    (`stop_gradient`, `new_like`, a gradient's `sum_to_like` onto them, elementwise ops
    where every operand has it)."""
    ones = {}
    for value, shape in shapes.items():
        axes = tuple(k for k, dim in enumerate(shape) if dim == ONE)
        if axes:
            ones[value] = axes
    return ones


def is_reduction(node: Node) -> bool:
    """A typed `reduce` leaf node (of an array)."""
    return node.op == "reduce" and node.inputs and isinstance(node.inputs[0].type, ArrayType)


def _absorbs(group: _Group, reduce: Node, uses: dict[Value, set[int]]) -> bool:
    """Whether `reduce` can join `group`: the value it reduces, and every result of the
    group used elsewhere (still stored, by the same loop), is computed from every array
    the group reads (the space is their shape)."""
    return _exact(group.members, uses)


def _index(graph: Graph, node: Node) -> int:
    return next(i for i, n in enumerate(graph.nodes) if n is node)


def node_uses(graph: Graph) -> dict[Value, set[int]]:
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


def reduction_node(node: Node) -> Node:
    """The `fused` node computing a typed `reduce` node alone: an identity kernel (but for
    the accumulator cast). Used for a reduce that joins no group, and by backends that
    meet a `reduce` leaf."""
    return _build([node], {}, {}, {})


def _build(members: list[Node], uses: dict[Value, set[int]], consts: dict[Value, Node],
           ones: dict[Value, tuple[int, ...]]) -> Node:
    """The `fused` node computing `members` (in order; a `reduce` can only come last)."""
    reduce = members[-1] if members[-1].op == "reduce" else None
    if reduce is not None:
        members = members[:-1]
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
        if plan.result == BOOL and all(t == BOOL for t in plan.operands):
            op = BOOL_LOGIC.get(op, op)  # NumPy's bool + bool is or
            if op is None:  # np.abs, np.floor ... of a bool: the bool itself
                env[m.outputs[0]] = args[0]
                continue
        # NumPy's powers computed as sqrt at 0.5 (ops/scalar.py `_pow_operands`)
        attrs = {"sqrt_at_half": True} if m.attrs.get("sqrt_at_half") else {}
        out = kernel.add(op, args, attrs=attrs, loc=m.loc, names=[m.outputs[0].name],
                         types=[plan.result])
        env[m.outputs[0]] = out.outputs[0]
    if reduce is not None:
        inside = {id(m) for m in members} | {id(reduce)}
        stored = [m.outputs[0] for m in members if uses.get(m.outputs[0], set()) - inside]
        fused = _reduction(reduce, kernel, inputs, env, operand, stored)
    else:
        outputs = _outputs(members, uses)
        kernel.outputs = [env[v] for v in outputs]
        ndim = max(v.type.ndim for v in outputs)
        fused = Node("fused", inputs, outputs, {"fused": Kernel(ndim, _plan(inputs))}, [kernel],
                     members[-1].loc)
    if any(v in ones for v in inputs):
        known = tuple(ones.get(v, ()) if isinstance(v.type, ArrayType) else None for v in inputs)
        fused.attrs["fused"] = dataclasses.replace(fused.attrs["fused"], ones=known)
    return fused


def _plan(inputs: list[Value]) -> tuple:
    return tuple(v.type.ndim if isinstance(v.type, ArrayType) else None for v in inputs)


def _reduction(reduce: Node, kernel: Graph, inputs: list[Value], env: dict[Value, Value],
               operand, stored: list[Value]) -> Node:
    """The `fused` node of a reduction of `reduce`'s operand (computed in `kernel`, or read),
    also storing the `stored` values of the kernel (used elsewhere) as arrays."""
    (source,) = reduce.inputs
    value = env[source] if source in env else operand(source)
    kind, t = reduce.attrs["kind"], source.type
    accumulator = reduction_dtype(kind, reduce.attrs, t.dtype)
    if value.type != accumulator:
        value = kernel.add("cast", [value], attrs={"to": accumulator}, loc=reduce.loc,
                           types=[accumulator]).outputs[0]
    kernel.outputs = [env[v] for v in stored] + [value]
    reduction = Reduction(kind, normalize_axes(reduce.attrs.get("axis"), t.ndim),
                          bool(reduce.attrs.get("keepdims")))
    attrs = {"fused": Kernel(t.ndim, _plan(inputs), reduction)}
    return Node("fused", inputs, [*stored, *reduce.outputs], attrs, [kernel], reduce.loc)
