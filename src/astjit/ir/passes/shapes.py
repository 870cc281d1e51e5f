"""The `sum_to_like` nodes symbolic shapes prove to be the identity or a fixed sum.

Reverse mode un-broadcasts every adjoint with `sum_to_like(g, x)` (ops/adjoints.py):
`g` summed to `x`'s shape, which compiled code learns only at run time, so it tests
the shapes on every call and keeps two versions. Most of these tests have one
possible answer: the adjoint of `a + b` for two values of one shape is `a`'s shape.

The symbolic-shape analysis (ir/symbolic_shapes.py, its algebra in
ir/shape_algebra.py, each op's rule declared with the op: `OpDef.shape`) gives
each array value a Dim per axis; two axes of the same Dim have the same length
on every call. Each region (`if`, `while`) is analysed on its own; the regions of
`fused` and `rowwise` nodes are never rewritten.

Two more facts the shapes prove, for the fusion pass after it: an `array_broadcast_to`
or `array_reshape` of an array to its own shape is the array itself, where the view is
only read (through further views too) or the array is a new one nothing else uses
(np.einsum's operands and result, reshaped to the shapes they have, compiled as glue
each; np.outer's ravel of a vector, in a graph that writes no array, where no matmul
reads it: `_read_by_blas`); and an
`array_dim` of an elementwise op's result reads the same length from the operand that has its dim there,
so that it does not keep the op out of a fused group with its successors (an
`array_new_like` the same from an operand of its shape and dtype, so that it keeps no
op alive only for its shape).

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

from collections import Counter

from ..core import Graph, Module, Node, Value
from ..ops import OPS
from ..ops.elementwise import is_array_elementwise
from ..ops.reductions import result_type
from ..shape_algebra import ONE, Shape
from ..symbolic_shapes import ShapeTable
from ..types import I64, ArrayType, ScalarType
from .rewrite import Replacement, forward, make_const, rewrite_graph


def resolve_sums_to_like(module: Module) -> Module:
    """Replace the provable `sum_to_like` nodes of every graph of `module` and of their
    `if` / `while` regions by their operand or a `reduce`."""
    for graph in module.graphs.values():
        _resolve_graph(graph)
    return module


# ---- the rewrite ---------------------------------------------------------------------------

def _resolve_graph(graph: Graph) -> None:
    table = ShapeTable(graph.params)
    made_by: dict[Value, Node] = {}
    only_read = _only_read(graph)
    only_measured = _only_measured(graph)
    to_blas = _read_by_blas(graph)
    uses = Counter(v for node in graph.nodes for v in node.inputs)
    uses.update(graph.outputs)
    writes = any(node.op in ("call", "callback") or node.op in OPS
                 and "writes" in OPS[node.op].traits for node in graph.walk())

    def visit(node: Node) -> Replacement | None:
        if node.op not in ("fused", "rowwise"):  # kernels hold no arrays; groups stay whole
            for region in node.regions:
                _resolve_graph(region)
        if node.op == "sum_to_like":
            replacement = _resolved(node, table)
            if replacement is not None:
                return replacement
            if isinstance(node.inputs[1].type, ArrayType):
                _ask_like(node, table, made_by, position=1)
        if node.op == "array_dim":
            _ask_operand(node, table, made_by)
        elif node.op == "array_new_like" or (
                node.op == "array_broadcast_to" and node.outputs[0] in only_measured):
            _ask_like(node, table, made_by)
        table.record(node)
        if node.op in ("array_broadcast_to", "array_reshape") \
                and (node.outputs[0] in only_read or _made_for(node, made_by, uses)) \
                and node.outputs[0].type == node.inputs[0].type \
                and (table.shape(node.outputs[0]) == table.shape(node.inputs[0])
                     or _flattened_vector(node, made_by) and not writes
                     and node.outputs[0] not in to_blas):
            return forward(node, [node.inputs[0]])
        made_by.update((v, node) for v in node.outputs)
        return None

    rewrite_graph(graph, visit)


def _flattened_vector(node: Node, made_by: dict[Value, Node]) -> bool:
    """Whether `node` reshapes a 1-D array to (-1,) (np.ravel of a vector, np.outer's of
    its operands): its own shape, whose length the shapes name afresh (-1 is no length).
    Of a strided vector that is a copy (np.ravel's), which only a graph that writes no
    array (nor calls what might) cannot tell from the vector itself."""
    if node.op != "array_reshape" or len(node.inputs) != 2 or node.inputs[0].type.ndim != 1:
        return False
    length = made_by.get(node.inputs[1])
    return length is not None and length.op == "const" and length.attrs.get("value") == -1


def _read_by_blas(graph: Graph) -> set[Value]:
    """The values of `graph` a `matmul` reads, directly or through views: BLAS picks its
    kernel, and with it the order of a dot product's sum, by the operands' strides, so
    np.ravel's contiguous copy of a strided vector and the vector itself give different
    last bits (`np.dot(np.ravel(v), w)` is NumPy's contiguous ddot)."""
    read: set[Value] = set()
    for node in reversed(graph.nodes):
        if node.op == "matmul" or node.op in OPS and "view" in OPS[node.op].traits \
                and read.intersection(node.outputs):
            read.update(node.inputs)
    return read


def _made_for(node: Node, made_by: dict[Value, Node], uses: Counter) -> bool:
    """Whether `node`'s operand is a new array (of an op of this graph; not a callback's,
    which may be one the caller holds) that nothing else uses: its view of its own shape
    may be that array itself (einsum's result, reshaped to the shape it has)."""
    source = node.inputs[0]
    producer = made_by.get(source)
    return producer is not None and producer.op in OPS and producer.op != "callback" \
        and "allocates" in OPS[producer.op].traits and uses[source] == 1


def _only_read(graph: Graph) -> set[Value]:
    """The values of `graph` only read by what uses them: elementwise ops, ops that read
    arrays to make new ones or numbers (not `sum_to_like`, which may return its operand),
    and views whose results are only read in turn (np.outer's ravel of a row, then its
    new axis: read by the product alone). Walked from the last node, so that a view's
    results are settled before the view."""
    used_otherwise = set(graph.outputs)
    for node in reversed(graph.nodes):
        traits = OPS[node.op].traits if node.op in OPS else frozenset()
        makes_new = "allocates" in traits or not any(
            isinstance(v.type, ArrayType) for v in node.outputs)
        read_through = "view" in traits and not used_otherwise.intersection(node.outputs)
        if "elementwise" not in traits and not ("reads" in traits and makes_new) \
                and not read_through:
            used_otherwise.update(node.inputs)
    return {v for node in graph.nodes for v in node.inputs} - used_otherwise


def _ask_operand(node: Node, table: ShapeTable, made_by: dict[Value, Node]) -> None:
    """Point `node`, an `array_dim` of an elementwise op's result, at the operand (of the
    earliest such op) that has the same dim there: the fusion pass closes a group whose
    result something outside reads, and a length is the same read from either."""
    (v,), axis = node.inputs, node.attrs["axis"]
    while (producer := made_by.get(v)) is not None and is_array_elementwise(producer):
        for u in producer.inputs:
            k = axis - (v.type.ndim - u.type.ndim) if isinstance(u.type, ArrayType) else -1
            if k >= 0 and table.shape(u)[k] == table.shape(v)[axis]:
                v, axis = u, k
                break
        else:
            break
    node.inputs, node.attrs["axis"] = [v], axis


def _only_measured(graph: Graph) -> set[Value]:
    """The values of `graph` whose uses read only their shape and dtype: `array_dim`,
    `array_new_like`, and the target of a `sum_to_like` (its second operand)."""
    measured: set[Value] = set()
    used_otherwise = set(graph.outputs)
    for node in graph.nodes:
        for k, v in enumerate(node.inputs):
            if node.op in ("array_dim", "array_new_like") and k == 0 \
                    or node.op == "sum_to_like" and k == 1:
                measured.add(v)
            else:
                used_otherwise.add(v)
    return measured - used_otherwise


def _ask_like(node: Node, table: ShapeTable, made_by: dict[Value, Node],
              position: int = 0) -> None:
    """Point `node`'s operand at `position`, of which `node` reads only the shape and dtype
    (an `array_new_like`'s, a `sum_to_like`'s target, an `array_broadcast_to` whose result
    is only measured), at the operand of the elementwise op or kernel making it that has
    both (of the earliest such op): `zeros_like(y ** 2)` keeps no kernel computing `y ** 2`
    for its shape, nor does the adjoint `sum_to_like(g, y ** 2)`."""
    v = node.inputs[position]
    while (producer := made_by.get(v)) is not None and (
            is_array_elementwise(producer) or producer.op == "fused"):
        u = next((u for u in producer.inputs
                  if u.type == v.type and table.shape(u) == table.shape(v)), None)
        if u is None:
            break
        v = u
    node.inputs[position] = v


def summed_axes(node: Node, shapes: dict[Value, Shape]) -> list[int] | None:
    """The axes of `g` that `node`, a `sum_to_like(g, x)`, provably sums (none: it is the
    identity), or None when that depends on the shapes at run time (or it converts the
    dtype); `shapes` as `symbolic_shapes` (ir/symbolic_shapes.py) gives them."""
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


def _resolved(node: Node, table: ShapeTable) -> Replacement | None:
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
