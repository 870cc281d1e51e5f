"""`vmap` as a derived graph: the function applied to each example of a batch, in a loop.

`batched_graph` builds, in the derived graph, a counted loop over the batch: example b
of each batched argument is its view at index b along its `in_axes` axis (no copy),
the function is applied to the examples and the unbatched arguments, and each leaf of
the result is written into slot b of its output along its `out_axes` axis. Example 0
runs before the loop, which gives the outputs' shapes and dtypes (a function whose
result's shape depends on the example is refused at run time by the writes: NumPy's
broadcast error). So `jit(vmap(grad(f)))` is one compiled program, and `vmap(vmap(f))`
a nest of two loops; the per-example code is the function's own, inlined into the loop
(not rewritten into batched array operations: each example's arrays are its own).

A batch must hold at least one example (ValueError otherwise: the result's shape
comes from running one), and every batched argument must have the same batch length
(ValueError, as JAX's).
"""
from __future__ import annotations

from ...errors import DifferentiationError
from ..core import Graph, Value
from ..ops import OPS
from ..types import I64, ArrayType, ScalarType, TupleType, weak
from .builder import GraphBuilder
from .jacobians import counted_loop

EMPTY_BATCH = "vmap needs a batch of at least one example: the result's shape comes from one"
UNEQUAL_BATCH = "vmap got batched arguments of different lengths along their in_axes"


def batched_graph(graph: Graph, inner: Graph, args: list[Value], in_axes: tuple,
                  out_axes: int) -> Value:
    """The results of `inner` over the batch, built in `graph` (whose params are `args`)."""
    e = GraphBuilder(graph, inner.loc)
    batched = [i for i, axis in enumerate(in_axes) if axis is not None]
    if not batched:
        raise DifferentiationError("vmap with every in_axes None has no batch", inner.loc,
                                   hint="give the batched arguments' axis in in_axes")
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


def _raise_if(e: GraphBuilder, condition: Value, message: str) -> None:
    e.op("raise_if", condition, exc="ValueError", message=message)


def _call(graph: Graph, callee: Graph, args: list[Value], inline: bool) -> Value:
    attrs = {"callee": callee.name} if inline else {"callee": callee.name, "noinline": True}
    return graph.add("call", args, attrs=attrs, loc=callee.loc,
                     types=[callee.outputs[0].type]).outputs[0]
