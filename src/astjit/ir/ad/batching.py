"""`vmap` as a derived graph: the function applied to every example of a batch.

`batched_graph` builds, in the derived graph, the function's graph rewritten for whole
batches (`vectorized`) where it can, else a loop over the examples (`looped`).

Rewritten: each value of the function either is the same for every example
(*unbatched*: computed once, as the function computes it) or carries a leading axis of
length B, one entry per example (*batched*). The arguments batched along their
`in_axes` axis get it by a transposing view; each op with a batched operand is
replaced by what its batching rule (`OpDef.batch`, ops/batching.py) computes; the
result's batch axis goes to `out_axes` (a view), an unbatched result is repeated.
So `jit(vmap(grad(f)))` is one program of whole-batch array operations that fuse like
any other. Where some op has no rule (a call left in the graph) or its rule refuses (a
write into an array every example shares, a length per example, code that could raise
or write under a condition per example, but for element reads and the adjoints added at
them), the whole function takes the loop. `vectorized_call` is the same rewriting for other
transforms (jacfwd: the forward pass over every basis vector at once).

The loop: example b of each batched argument is its view at index b along its
`in_axes` axis (no copy), the function is applied to the examples and the unbatched
arguments, and each leaf of the result is written into slot b of its output along
its `out_axes` axis. Example 0 runs before the loop, which gives the outputs' shapes
and dtypes (a function whose result's shape depends on the example is refused at run
time by the writes: NumPy's broadcast error), so it needs at least one example
(ValueError). The rewritten function takes an empty batch.

Every batched argument must have the same batch length (ValueError, as JAX's).
"""
from __future__ import annotations

from ...errors import DifferentiationError
from ..core import Graph, Value
from ..ops import OPS
from ..ops.batching import NotBatchable
from ..types import I64, ArrayType, ScalarType, TupleType, weak
from .builder import GraphBuilder
from .jacobians import counted_loop
from .vectorize import vectorized_call

EMPTY_BATCH = "vmap needs a batch of at least one example: the result's shape comes from one"
UNEQUAL_BATCH = "vmap got batched arguments of different lengths along their in_axes"
SHAPE_PER_EXAMPLE = ("vmap: the examples' results differ in shape (a length that depends on "
                     "the example's values: np.nonzero, np.unique, x[mask]), and vmap stacks "
                     "results of one shape; keep one shape per example (np.where(mask, x, 0) "
                     "for x[mask], a sum over the mask for a sum of the selection)")


def batched_graph(graph: Graph, inner: Graph, args: list[Value], in_axes: tuple,
                  out_axes: int) -> Value:
    """The results of `inner` over the batch, built in `graph` (whose params are `args`):
    rewritten for whole batches where every op has a batching rule, else a loop."""
    if all(axis is None for axis in in_axes):
        raise DifferentiationError("vmap with every in_axes None has no batch", inner.loc,
                                   hint="give the batched arguments' axis in in_axes")
    try:
        return vectorized(graph, inner, args, in_axes, out_axes)
    except NotBatchable:
        return looped(graph, inner, args, in_axes, out_axes)


def vectorized(graph: Graph, inner: Graph, args: list[Value], in_axes: tuple,
               out_axes: int) -> Value:
    """`inner` rewritten for whole batches (vectorize.py), built in `graph`; NotBatchable
    (nothing built) where some op has no batching rule."""
    scratch = Graph(graph.name, loc=inner.loc)
    e = GraphBuilder(scratch, inner.loc)
    fronts = [a if axis is None else _to_front(e, a, axis % a.type.ndim)
              for a, axis in zip(args, in_axes)]
    batched = [axis is not None for axis in in_axes]
    lengths = [e.op("array_dim", a, axis=0) for a, f in zip(fronts, batched) if f]
    n = lengths[0]
    for length in lengths[1:]:
        _raise_if(e, e.op("ne", length, n), UNEQUAL_BATCH)
    value, flag = vectorized_call(scratch, inner, fronts, batched)
    result = _placed(e, value, flag, n, out_axes, inner)
    graph.nodes.extend(scratch.nodes)
    return result


def _to_front(e: GraphBuilder, a: Value, axis: int) -> Value:
    """`a` with axis `axis` first (a view)."""
    if axis == 0:
        return a
    rest = [k for k in range(a.type.ndim) if k != axis]
    return e.op("array_permute", a, axes=(axis, *rest))


def _placed(e: GraphBuilder, value: Value, flag, n: Value, out_axes: int, inner: Graph) -> Value:
    """The rewritten result as vmap returns it: each leaf's batch axis at `out_axes`, an
    unbatched leaf repeated for every example, containers kept."""
    t = value.type
    if isinstance(t, TupleType):
        flags = flag if isinstance(flag, tuple) else (flag,) * len(t.elements)
        parts = [_placed(e, e.op("getitem", value, index=k), f, n, out_axes, inner)
                 for k, f in enumerate(flags)]
        return e.op("tuple", *parts, **({"node": t.node} if t.node is not None else {}))
    if not isinstance(t, (ArrayType, ScalarType)):
        raise DifferentiationError(f"vmap of a function returning {t}: only numbers, arrays "
                                   "and containers of them can be batched", inner.loc)
    example_ndim = t.ndim - 1 if flag else getattr(t, "ndim", 0)
    if not -example_ndim - 1 <= out_axes <= example_ndim:
        raise DifferentiationError(f"vmap: out_axes {out_axes} is out of range for a result "
                                   f"of {example_ndim} axes", inner.loc)
    if not flag and isinstance(t, ArrayType):
        dims = [e.op("array_dim", value, axis=k) for k in range(t.ndim)]
        value = e.op("array_copy", e.op("array_broadcast_to", value, n, *dims))
    elif not flag:
        value = e.op("array_new", n, value, fill="value", dtype=weak(t))
    axis = out_axes % (example_ndim + 1)
    if axis == 0:
        return value
    axes = (*range(1, axis + 1), 0, *range(axis + 1, example_ndim + 1))
    return e.op("array_permute", value, axes=axes)


def looped(graph: Graph, inner: Graph, args: list[Value], in_axes: tuple,
           out_axes: int) -> Value:
    """The results of `inner` over the batch, a loop over the examples built in `graph`."""
    e = GraphBuilder(graph, inner.loc)
    batched = [i for i, axis in enumerate(in_axes) if axis is not None]
    axes = {i: in_axes[i] % args[i].type.ndim for i in batched}
    n = e.op("array_dim", args[batched[0]], axis=axes[batched[0]])
    for i in batched[1:]:
        _raise_if(e, e.op("ne", e.op("array_dim", args[i], axis=axes[i]), n), UNEQUAL_BATCH)
    _raise_if(e, e.op("lt", n, e.const(1, I64)), EMPTY_BATCH)
    first = _call(graph, inner, _examples(e, args, axes, e.const(0, I64)), inline=False)
    leaves = _leaves(e, first)
    outputs = [_allocate(e, leaf, n, out_axes, inner) for leaf in leaves]
    for leaf, output in zip(leaves, outputs):
        _store(e, output, leaf, e.const(0, I64), out_axes)

    def example(b: GraphBuilder, k: Value, inv: list[Value]) -> None:
        given, targets = inv[:len(args)], inv[len(args):]
        index = b.op("add", k, b.const(1, I64))
        result = _call(b.graph, inner, _examples(b, given, axes, index), inline=True)
        for leaf, target in zip(_leaves(b, result), targets):
            _check_shape(b, leaf, target, out_axes)
            _store(b, target, leaf, index, out_axes)

    counted_loop(graph, e.op("sub", n, e.const(1, I64)), [*args, *outputs], example, inner)
    return _rebuild(e, first.type, iter(outputs))


def _examples(e: GraphBuilder, args: list[Value], axes: dict, index: Value) -> list[Value]:
    """Each batched argument's example `index` along its batch axis (a view, or an element
    of a vector); the others as they are."""
    return [e.op(*_example_op(a.type, axes[i]), a, index, **_example_attrs(a.type, axes[i]))
            if i in axes else a for i, a in enumerate(args)]


def _example_op(t: ArrayType, axis: int) -> tuple[str]:
    return ("array_get",) if t.ndim == 1 else ("array_view",)


def _example_attrs(t: ArrayType, axis: int) -> dict:
    return {} if t.ndim == 1 else {"spec": ("s000",) * axis + ("i",)}


def example_types(types: list, in_axes: tuple, loc) -> list:
    """The types of one example of arguments of `types` batched along `in_axes`: what the
    function vmap applies is specialized for."""
    found = []
    for t, axis in zip(types, in_axes):
        if axis is None:
            found.append(t)
            continue
        if not isinstance(t, ArrayType) or not -t.ndim <= axis < t.ndim:
            raise DifferentiationError(f"vmap: in_axes {axis} names no axis of a {t}", loc,
                                       hint="batch an array along one of its axes")
        axis %= t.ndim
        (op,) = _example_op(t, axis)
        found.append(OPS[op].rule([t, I64], _example_attrs(t, axis))[1])
    return found


def _leaves(e: GraphBuilder, value: Value) -> list[Value]:
    if not isinstance(value.type, TupleType):
        return [value]
    return [leaf for k in range(len(value.type.elements))
            for leaf in _leaves(e, e.op("getitem", value, index=k))]


def _rebuild(e: GraphBuilder, t, outputs) -> Value:
    """The outputs in the structure of the result's type `t` (its containers kept)."""
    if not isinstance(t, TupleType):
        return next(outputs)
    parts = [_rebuild(e, element, outputs) for element in t.elements]
    return e.op("tuple", *parts, **({"node": t.node} if t.node is not None else {}))


def _allocate(e: GraphBuilder, leaf: Value, n: Value, out_axis: int, inner: Graph) -> Value:
    """The output of a result leaf: its shape with the batch axis inserted at `out_axis`."""
    t = leaf.type
    if isinstance(t, ArrayType):
        dims, dtype = [e.op("array_dim", leaf, axis=k) for k in range(t.ndim)], t.dtype
    elif isinstance(t, ScalarType):
        dims, dtype = [], weak(t)
    else:
        raise DifferentiationError(f"vmap of a function returning {t}: only numbers, arrays "
                                   "and containers of them can be batched", inner.loc)
    if not -len(dims) - 1 <= out_axis <= len(dims):
        raise DifferentiationError(f"vmap: out_axes {out_axis} is out of range for a result "
                                   f"of {len(dims)} axes", inner.loc)
    axis = out_axis % (len(dims) + 1)
    return e.op("array_new", *dims[:axis], n, *dims[axis:], fill=0, dtype=dtype)


def _store(e: GraphBuilder, output: Value, leaf: Value, index: Value, out_axis: int) -> None:
    """Slot `index` of `output` along the batch axis := `leaf`."""
    axis = out_axis % output.type.ndim
    if isinstance(leaf.type, ArrayType):
        view = e.op("array_view", output, index, spec=("s000",) * axis + ("i",))
        e.op("array_assign", view, leaf)
    else:
        value = leaf if leaf.type == output.type.dtype else e.op("cast", leaf, to=output.type.dtype)
        e.op("array_set", output, value, index)


def _check_shape(e: GraphBuilder, leaf: Value, output: Value, out_axis: int) -> None:
    """Refuse an example whose result leaf has another shape than example 0's (which
    shaped `output`): a length decided by the example's values (np.nonzero, x[mask])."""
    if not isinstance(leaf.type, ArrayType):
        return
    axis = out_axis % output.type.ndim
    rest = [k for k in range(output.type.ndim) if k != axis]
    for k, j in enumerate(rest):
        differs = e.op("ne", e.op("array_dim", leaf, axis=k), e.op("array_dim", output, axis=j))
        _raise_if(e, differs, SHAPE_PER_EXAMPLE)


def _raise_if(e: GraphBuilder, condition: Value, message: str) -> None:
    e.op("raise_if", condition, exc="ValueError", message=message)


def _call(graph: Graph, callee: Graph, args: list[Value], inline: bool) -> Value:
    attrs = {"callee": callee.name} if inline else {"callee": callee.name, "noinline": True}
    return graph.add("call", args, attrs=attrs, loc=callee.loc,
                     types=[callee.outputs[0].type]).outputs[0]
