"""Symbolic shapes, and the `sum_to_like` nodes they prove to be the identity or a fixed sum.

Reverse mode un-broadcasts every adjoint with `sum_to_like(g, x)` (ops/adjoints.py):
`g` summed to `x`'s shape, which compiled code learns only at run time, so it tests
the shapes on every call and keeps two versions. Most of these tests have one
possible answer: the adjoint of `a + b` for two values of one shape is `a`'s shape.

The analysis (`symbolic_shapes`) gives each array value of a graph a tuple of
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

Rules (`SHAPE_RULES`, one per op; any other op's array result gets atoms of its
own): elementwise ops broadcast; a reduction drops its axes, or makes them ONE
with `keepdims`; `matmul` takes m from `a` and n from `b`; a transpose reverses;
`array_new_like`, `sum_to_like` and the accumulating ops take their shape
source's; `array_reshape` and `array_new` take their dims from their int inputs,
where an `array_dim` names an axis's dim and a literal n >= 0 its own atom (a
literal 1 is ONE; anything else, possibly -1, gets a fresh atom); a view keeps
the axes a whole slice `:` or no index touches and drops those an index takes;
a `fused` node (core.py) broadcasts its inputs by its plan, a `rowwise` node's
results get atoms of their own. Each region (`if`, `while`) is analysed on its
own, its parameters fresh; the regions of `fused` and `rowwise` nodes are never
rewritten.

The pass (`resolve_sums_to_like`, before fusion: pipeline.FINAL) rewrites
`sum_to_like(g, x)` when `x` is an array of `g`'s dtype (or a scalar of it)
and, for `x`'s axes aligned with `g`'s trailing ones, each dim of `x` is `g`'s
or ONE (with `g`'s not ONE):

- every dim the same: `g` itself. The backend's pass-through gave a new
  reference to `g` too, so no array becomes shared that was not already: reverse
  mode never wrote into such an adjoint nor returned it twice uncopied
  (ad/sweep.py `_makes_new_array`, ad/reverse.py);
- else `reduce` sum over `g`'s leading axes and those where `x` is ONE, kept
  where `x` has them (a `keepdims` reduce, then a reshape dropping the leading
  ones when there are both). A new array, as the summing `sum_to_like` gave;
  the fusion pass then sums it in the loop that computes `g`. Sums of float32
  add in float32 (NumPy's result dtype), where `sum_to_like` added in double.
"""
from __future__ import annotations

from collections.abc import Callable

from ..core import Graph, Module, Node, Value
from ..kernels import fused_attrs
from ..ops.elementwise import is_array_elementwise
from ..ops.reductions import normalize_axes, result_type
from ..types import I64, ArrayType, ScalarType
from .rewrite import Replacement, forward, make_const, rewrite_graph

Dim = frozenset
"""The atoms whose broadcast an axis's length is (the module docstring)."""
Shape = tuple
"""One Dim per axis."""
ONE: Dim = frozenset()
"""The constant length 1."""


def resolve_sums_to_like(module: Module) -> Module:
    """Replace the provable `sum_to_like` nodes of every graph of `module` and of their
    `if` / `while` regions by their operand or a `reduce`."""
    for graph in module.graphs.values():
        _resolve_graph(graph)
    return module


def symbolic_shapes(graph: Graph) -> dict[Value, Shape]:
    """The Shape of every array parameter and array node output of `graph` (not of its
    regions'), as the module docstring defines it."""
    table = _ShapeTable(graph.params)
    for node in graph.nodes:
        table.record(node)
    return table.shapes


class _ShapeTable:
    """Shapes of array values, and the Dims that int values are, filled in program order."""

    def __init__(self, params: list[Value]):
        self.shapes: dict[Value, Shape] = {}
        self.dims: dict[Value, Dim] = {}
        for p in params:
            if isinstance(p.type, ArrayType):
                self.shapes[p] = fresh(p)

    def shape(self, v: Value) -> Shape:
        if v not in self.shapes:
            self.shapes[v] = fresh(v)
        return self.shapes[v]

    def dim(self, v: Value, owner: Value, axis: int) -> Dim:
        """The Dim a length given by int value `v` is; a fresh atom of `owner`'s axis
        when unknown."""
        return self.dims.get(v, frozenset({(owner.id, axis)}))

    def record(self, node: Node) -> None:
        if node.op == "array_dim":
            self.dims[node.outputs[0]] = self.shape(node.inputs[0])[node.attrs["axis"]]
        elif node.op == "const" and node.attrs.get("type") == I64 and node.attrs["value"] >= 0:
            n = node.attrs["value"]
            self.dims[node.outputs[0]] = ONE if n == 1 else frozenset({("const", n)})
        if node.op == "fused":
            found = _fused_shapes(node, self)
        elif node.op == "rowwise":
            found = []  # unknown: atoms of their own
        else:
            rule = SHAPE_RULES.get(node.op)
            if rule is None and is_array_elementwise(node):
                rule = _elementwise
            found = [rule(node, self)] if rule is not None else []
        found += [None] * (len(node.outputs) - len(found))
        for out, shape in zip(node.outputs, found):
            if isinstance(out.type, ArrayType):
                ok = shape is not None and len(shape) == out.type.ndim
                self.shapes[out] = shape if ok else fresh(out)


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


# ---- the rule of each op: the Shape of its (one) array result ------------------------------

def _elementwise(node: Node, table: _ShapeTable) -> Shape | None:
    arrays_ = [table.shape(v) for v in node.inputs if isinstance(v.type, ArrayType)]
    return broadcast(arrays_, node.outputs[0].type.ndim)


def _reduce(node: Node, table: _ShapeTable) -> Shape:
    shape = table.shape(node.inputs[0])
    axes = normalize_axes(node.attrs.get("axis"), len(shape))
    if node.attrs.get("keepdims"):
        return tuple(ONE if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def _matmul(node: Node, table: _ShapeTable) -> Shape:
    a, b = (table.shape(v) for v in node.inputs)
    rows = a[:-1]  # (m,k)@... gives m; (k,)@... nothing
    cols = b[1:]  # ...@(k,n) gives n; ...@(k,) nothing
    return rows + cols


def _reshape(node: Node, table: _ShapeTable) -> Shape | None:
    if node.attrs.get("packed_shape"):
        return None
    out = node.outputs[0]
    return tuple(table.dim(d, out, k) for k, d in enumerate(node.inputs[1:]))


def _new(node: Node, table: _ShapeTable) -> Shape:
    dims = node.inputs[:-1] if node.attrs.get("fill") == "value" else node.inputs
    out = node.outputs[0]
    return tuple(table.dim(d, out, k) for k, d in enumerate(dims))


def _view(node: Node, table: _ShapeTable) -> Shape:
    shape, out, dims = table.shape(node.inputs[0]), node.outputs[0], []
    spec = node.attrs["spec"]
    for k, d in enumerate(shape):
        entry = spec[k] if k < len(spec) else "s000"
        if entry == "s000":  # `:` or no index: the whole axis
            dims.append(d)
        elif entry != "i":  # a slice with bounds: a length of its own
            dims.append(frozenset({(out.id, len(dims))}))
    return tuple(dims)


def _like(k: int) -> Callable[[Node, _ShapeTable], Shape | None]:
    """The rule of an op whose result has input k's shape (when it is an array)."""
    def rule(node: Node, table: _ShapeTable) -> Shape | None:
        v = node.inputs[k]
        return table.shape(v) if isinstance(v.type, ArrayType) else None
    return rule


SHAPE_RULES: dict[str, Callable[[Node, _ShapeTable], Shape | None]] = {
    "reduce": _reduce,
    "matmul": _matmul,
    "array_transpose": lambda node, table: table.shape(node.inputs[0])[::-1],
    "array_reshape": _reshape,
    "array_new": _new,
    "array_view": _view,
    "array_new_like": _like(0),  # np.zeros_like(x): x's shape
    "stop_gradient": _like(0),
    "array_retain": _like(0),
    "sum_to_like": _like(1),  # g summed to x's shape
    "add_at": _like(0),  # the accumulators, written and returned
    "add_into": _like(0),
    "set_at": _like(0),
    "zero_into": _like(0),
}
"""Op -> the Shape of its array result (None: unknown); elementwise ops broadcast."""


def _fused_shapes(node: Node, table: _ShapeTable) -> list[Shape | None]:
    """A `fused` node's outputs: the broadcast of its inputs (its iteration space), the
    reduction's, if any, last."""
    spec = fused_attrs(node)
    arrays_ = [table.shape(v) for v in node.inputs if isinstance(v.type, ArrayType)]
    space = broadcast(arrays_, spec.ndim)
    if space is None or spec.reduce is None:
        return [space] * len(node.outputs)
    axes = spec.reduce.axes
    if spec.reduce.keepdims:
        reduced = tuple(ONE if k in axes else d for k, d in enumerate(space))
    else:
        reduced = tuple(d for k, d in enumerate(space) if k not in axes)
    return [space] * (len(node.outputs) - 1) + [reduced]


# ---- the rewrite ---------------------------------------------------------------------------

def _resolve_graph(graph: Graph) -> None:
    table = _ShapeTable(graph.params)

    def visit(node: Node) -> Replacement | None:
        if node.op not in ("fused", "rowwise"):  # kernels hold no arrays; groups stay whole
            for region in node.regions:
                _resolve_graph(region)
        if node.op == "sum_to_like":
            replacement = _resolved(node, table)
            if replacement is not None:
                return replacement
        table.record(node)
        return None

    rewrite_graph(graph, visit)


def summed_axes(node: Node, shapes: dict[Value, Shape]) -> list[int] | None:
    """The axes of `g` that `node`, a `sum_to_like(g, x)`, provably sums (none: it is the
    identity), or None when that depends on the shapes at run time (or it converts the
    dtype); `shapes` as `symbolic_shapes` gives them."""
    g, x = node.inputs
    if isinstance(x.type, ScalarType):
        return list(range(g.type.ndim)) if x.type == g.type.dtype else None
    if x.type.dtype != g.type.dtype:
        return None
    g_shape, x_shape = shapes[g], shapes[x]
    lead = len(g_shape) - len(x_shape)
    axes = list(range(lead))
    for k, (dx, dg) in enumerate(zip(x_shape, g_shape[lead:])):
        if dx == dg:
            continue
        if dx != ONE:
            return None  # g's axis may be x's, or x's may be 1: only the run time knows
        axes.append(lead + k)
    return axes


def _resolved(node: Node, table: _ShapeTable) -> Replacement | None:
    """`node` (a `sum_to_like`) as its operand or a `reduce`, or None."""
    axes = summed_axes(node, table.shapes)
    if axes is None:
        return None
    g, x = node.inputs
    if not axes:
        return forward(node, [g])
    (out,) = node.outputs
    lead = g.type.ndim - (x.type.ndim if isinstance(x.type, ArrayType) else 0)
    if 0 < lead < len(axes):  # summed leading axes go, the other summed ones stay
        return Replacement(_sum_then_reshape(node, axes, lead), {})
    keepdims = lead == 0
    if result_type("sum", g.type.dtype, g.type.ndim, tuple(axes), keepdims) != out.type:
        return None  # a 0-d target: the reduce would give a scalar
    attrs = {"kind": "sum", "axis": tuple(axes), "keepdims": keepdims}
    return Replacement([Node("reduce", [g], [out], attrs, loc=node.loc)], {})


def _sum_then_reshape(node: Node, axes: list[int], lead: int) -> list[Node]:
    """`sum_to_like(g, x)` as a keepdims sum over `axes`, reshaped to drop the `lead`
    leading axes (length 1 after the sum)."""
    g = node.inputs[0]
    summed = Value("", ArrayType(g.type.dtype, g.type.ndim))
    nodes = [Node("reduce", [g], [summed], {"kind": "sum", "axis": tuple(axes),
                                             "keepdims": True}, loc=node.loc)]
    dims = []
    for axis in range(lead, g.type.ndim):
        dim = Node("array_dim", [summed], [Value("", I64)], {"axis": axis}, loc=node.loc)
        if axis in axes:  # summed, kept: length 1
            dim = Node("const", [], [Value("", I64)], loc=node.loc)
            make_const(dim, 1)
        nodes.append(dim)
        dims.append(dim.outputs[0])
    nodes.append(Node("array_reshape", [summed, *dims], node.outputs, loc=node.loc))
    return nodes
