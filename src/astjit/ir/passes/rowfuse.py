"""Row-wise fusion: `fused` nodes that share their outer axes become one *row group*, a
`rowwise` node (core.py).

Runs right after elementwise fusion (fuse.py, pipeline.py FINAL), graph by
graph and region by region. Softmax over the rows of a matrix is three `fused`
nodes after fuse.py: the row max (`m`), `e = exp(x - m)` stored and summed per
row (`s`), and `e / s`. Each walks the whole matrix, so it crosses memory three
times; a row of a few KiB fits in L1, so doing the three steps row by row
reads the matrix once and writes the result once.

Geometry. The space of a `fused` node has N axes. A reduction over a trailing
run of axes `r .. N-1` with `r >= 1` (`axis=-1`, `axis=1` of a matrix) is
*row-wise*: axes `0 .. r-1` are the *outer* axes (one "row" per outer index),
the others the *inner* axes. Reductions over other axes (`axis=0`: columns)
are not row-wise and never join a group.

Grouping. Walking a node list in order, a `fused` node of N >= 2 axes (not a
group already) *joins* the open group whose values it reads when it has the
group's N, its reduction (if any) has the group's outer axes, and each group
value it reads is

- *full*: an elementwise result or a stored value of a reduction node, shaped
  as the space, read at the same point; or
- *per row*: a `keepdims` reduction's result, one value per outer index,
  broadcast along the inner axes.

A non-`keepdims` reduction's result is a member's output only for nodes
outside the group. A `fused` node whose arrays are all per row (group values,
or outside arrays known to have length 1 along the inner axes: a `keepdims`
reduction's result, fuse.py's `ones` hints) is a *row* member: it runs once
per row. Reverse-mode code (ir/ad) un-broadcasts adjoints with
`sum_to_like(g, x)`; one whose `g` is a full group value of the same type as
`x` joins too: it is the identity when `x` is full (or any outside array:
the backend checks at run time that it has the space's shape), and a row sum
when `x` is per row (float64 only: sum_to_like sums in double). So the
backward sweep of a softmax (`g - sum(g * p, axis=1, keepdims=True)`) is one
group too. A node reading several open groups, or none, starts a new one (a
`sum_to_like` never does). As in fuse.py a group is closed (nothing joins any
more) once a node outside it uses one of its values, or a node with effects
runs other than one that only allocates (`fused`, `rowwise`, `array_new`,
`array_new_like`: they allocate and may raise but are not ordered among
themselves); so the group node, placed where its last member was, comes after
every input it reads and before every outside use of its results. A group of
one member, or with no row-wise reduction or per-row `x`, is left as it was.

The group node is a `rowwise` node whose attribute is a `RowGroup` (kernels.py:
`rows`, the number of outer axes; `stages`, each member's role, `STAGES`; `ndim`,
`plan` as a Kernel's); its one region, `rows`, takes the
group's outside operands as parameters and holds the member `fused` nodes,
unchanged but for their operands (the parameters, or the earlier members'
results inside the region), and yields the member results used outside the
group, which are the group node's outputs (the very Values, so nothing outside
needs renaming). Its meaning is the region's, run as a graph: the interpreter
does just that, and so does the backend when the shapes or the layout at run
time do not allow the row-wise loop (backend/llvm/rowwise.py). The retain/release pass
places its releases inside the region as in any other.

What the backend makes of it: one loop over the outer indices; inside, each
member's loop nest over the inner axes in order. Per-row reduced values are
registers; full values used only inside the group live in row-sized scratch
buffers, or in the row of the output that the member reading them last writes
(its fuse.py `reuse` attr: `e` lives in the output row of `e / s`).
"""
from __future__ import annotations

from ..core import Graph, Module, Node, Value
from ..kernels import RowGroup, kernel_of
from ..types import ArrayType
from .effects import has_effects
from .fuse import node_uses

FULL, PER_ROW, REDUCED = "full", "per row", "reduced"
"""What a member's output is to the other members (the module docstring)."""

ALLOCATING = frozenset({"fused", "rowwise", "array_new", "array_new_like"})
"""Ops whose only effects are a new array and a ValueError / MemoryError: not ordered among
themselves (fuse.py), so they close no group."""


def fuse_rows(module: Module) -> Module:
    """Group the row-wise `fused` nodes of every graph of `module` (in place); return it."""
    for graph in module.graphs.values():
        _group_graph(graph)
    return module


class _RowGroup:
    def __init__(self, ndim: int) -> None:
        self.members: list[Node] = []
        self.roles: list[str] = []
        """Per member: its role (`STAGES`)."""
        self.ndim = ndim
        self.rows: int | None = None
        """The number of outer axes, once a row-wise reduction joined."""
        self.kinds: dict[Value, str] = {}
        """Each member output: FULL, PER_ROW or REDUCED."""
        self.closed = False

    def add(self, node: Node, role: str, rows: int | None) -> None:
        self.members.append(node)
        self.roles.append(role)
        if rows is not None:
            self.rows = rows
        kind = PER_ROW if role in ("row", "row sum") else FULL
        for v in node.outputs:
            self.kinds[v] = kind
        spec = kernel_of(node)
        if spec is not None and spec.reduce is not None:
            self.kinds[node.outputs[-1]] = PER_ROW if spec.reduce.keepdims else REDUCED

    def per_row(self, v: Value, ones: dict[Value, tuple[int, ...]], rows: int | None) -> bool:
        """Whether `v` holds one value per outer index (a group value, or an outside array of
        the space's ndim known to have length 1 along the inner axes)."""
        if v in self.kinds:
            return self.kinds[v] == PER_ROW
        return (rows is not None and isinstance(v.type, ArrayType) and v.type.ndim == self.ndim
                and ones.get(v) == tuple(range(rows, self.ndim)))


STAGES = ("full", "row", "same", "row sum")
"""Member roles (attr `stages` of a group node): a `fused` node over the whole space (its
reduction, if any, over the inner axes); a `fused` node over per-row values only (once per
row); a `sum_to_like` that is the identity (its target has the space's shape: its result is
its operand); a `sum_to_like` summing a full value per row (its target per row)."""


def outer_axes(node: Node) -> int | None:
    """For a `fused` node reducing a trailing run of axes r..N-1 with r >= 1: r."""
    spec = kernel_of(node)
    if spec is None or spec.reduce is None:
        return None
    axes, ndim = spec.reduce.axes, spec.ndim
    if axes and axes[0] >= 1 and axes == tuple(range(axes[0], ndim)):
        return axes[0]
    return None


def _candidate(node: Node) -> bool:
    """A plain `fused` node that may be a row group's member (or start one)."""
    spec = kernel_of(node)
    if spec is None or spec.ndim < 2:
        return False
    return spec.reduce is None or outer_axes(node) is not None


def _role(group: _RowGroup, node: Node, ones: dict) -> tuple[str, int | None] | None:
    """How `node` (reading values of `group`) joins it: its role and the outer axes it
    implies, or None."""
    if group.closed:
        return None
    if node.op == "sum_to_like":
        return _sum_role(group, node, ones)
    if kernel_of(node).ndim != group.ndim:
        return None
    rows = outer_axes(node)
    if rows is not None and group.rows not in (None, rows):
        return None
    if any(group.kinds[v] == REDUCED for v in node.inputs if v in group.kinds):
        return None
    arrays_ = [v for v in node.inputs if isinstance(v.type, ArrayType)]
    if rows is None and all(group.per_row(v, ones, group.rows) for v in arrays_):
        return "row", None
    return "full", rows


def _sum_role(group: _RowGroup, node: Node, ones: dict) -> tuple[str, int | None] | None:
    g, target = node.inputs
    if group.kinds.get(g) != FULL or target.type != g.type:
        return None
    double = g.type.dtype.name == "f64"  # sum_to_like sums in double: so does a f64 row sum
    if target in group.kinds:
        kind = group.kinds[target]
        if kind == FULL:
            return "same", None
        return ("row sum", None) if kind == PER_ROW and double else None
    known = ones.get(target, ())
    if not known:
        return "same", None  # the backend checks that the target has the space's shape
    rows = known[0]
    if known != tuple(range(rows, group.ndim)) or rows == 0 or not double \
            or group.rows not in (None, rows):
        return None
    return "row sum", rows


def _group_graph(graph: Graph) -> None:
    for node in graph.nodes:
        if node.op not in ("fused", "rowwise"):  # scalars only; a group already
            for region in node.regions:
                _group_graph(region)
    ones = _known_ones(graph)
    group_of: dict[Value, _RowGroup] = {}
    groups: list[_RowGroup] = []
    for node in graph.nodes:
        read = {id(g): g for v in node.inputs if (g := group_of.get(v)) is not None}
        if _candidate(node) or node.op == "sum_to_like" and len(read) == 1:
            (only,) = read.values() if len(read) == 1 else (None,)
            role = _role(only, node, ones) if only is not None else None
            if role is not None:
                group = only
            else:
                for g in read.values():
                    g.closed = True
                if node.op == "sum_to_like":
                    continue
                group = _RowGroup(kernel_of(node).ndim)
                groups.append(group)
                role = ("full", outer_axes(node))
            group.add(node, *role)
            group_of.update((v, group) for v in node.outputs)
            continue
        for g in read.values():
            g.closed = True
        if node.op not in ALLOCATING and has_effects(node):
            for g in groups:
                g.closed = True
    kept = [g for g in groups if len(g.members) > 1 and g.rows is not None]
    if not kept:
        return
    uses = node_uses(graph)
    replacement: dict[int, Node | None] = {}
    for group in kept:
        for member in group.members:
            replacement[id(member)] = None
        replacement[id(group.members[-1])] = _build(group, uses)
    graph.nodes = [replacement.get(id(n), n) for n in graph.nodes
                   if replacement.get(id(n), n) is not None]


def _known_ones(graph: Graph) -> dict[Value, tuple[int, ...]]:
    """Arrays known to have length 1 along some axes: `keepdims` reductions' results, and
    what the `ones` hints of fuse.py say of the `fused` nodes' inputs."""
    ones: dict[Value, tuple[int, ...]] = {}
    for node in graph.nodes:
        spec = kernel_of(node)
        if spec is None:
            continue
        for v, known in zip(node.inputs, spec.ones or ()):
            if known:
                ones[v] = known
        if spec.reduce is not None and spec.reduce.keepdims:
            ones[node.outputs[-1]] = spec.reduce.axes
    return ones


def _build(group: _RowGroup, uses: dict[Value, set[int]]) -> Node:
    """The `rowwise` node: its members moved into its `rows` region (the module docstring)."""
    members = group.members
    inside = {id(m) for m in members}
    outputs = [v for m in members for v in m.outputs if uses.get(v, set()) - inside]
    if not outputs:
        outputs = [members[-1].outputs[0]]  # nothing used: still run (it may raise)
    body = Graph("rows")
    inputs: list[Value] = []
    local: dict[Value, Value] = {}  # outside value -> the region's value
    for m in members:
        for k, v in enumerate(m.inputs):
            if v not in local:
                local[v] = Value(v.name, v.type)
                inputs.append(v)
                body.params.append(local[v])
            m.inputs[k] = local[v]
        for k, v in enumerate(m.outputs):
            local[v] = m.outputs[k] = Value(v.name, v.type)
        body.nodes.append(m)
    body.outputs = [local[v] for v in outputs]
    plan = tuple(v.type.ndim if isinstance(v.type, ArrayType) else None for v in inputs)
    attrs = {"rowwise": RowGroup(group.ndim, group.rows, plan, tuple(group.roles))}
    return Node("rowwise", inputs, outputs, attrs, [body], members[-1].loc)
