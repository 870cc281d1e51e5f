"""Jacobians as loops of directional derivatives, built into a derived graph (derive.py).

- `forward_jacobian`: the Jacobian of a function's result with respect to one argument:
  column k is the tangent of the result along the k-th basis vector (JAX's `jacfwd`;
  cheap for few inputs). The forward-mode pass (`jvp`) runs on every basis vector at
  once, rewritten for that batch (vectorize.py: vmap of jvp, as JAX does), or, where
  some op of the pass has no batching rule, once per element of the argument in a loop.
- `reverse_jacobians`: the Jacobians with respect to several arguments, one reverse-mode
  pass (a `vjp` graph) per element of the result: row k is the cotangent of the
  arguments for the k-th basis cotangent (JAX's `jacrev`; cheap for few outputs).

A Jacobian has the result's shape followed by the argument's (a float has none); a
float result's Jacobian is its gradient, a float argument's its tangent, with no loop.
The loops are counted `while` nodes in the graph, so a Jacobian compiles as one
program, fuses like any other and can be differentiated again (`hessian` is
`jacfwd(jacrev(f))`). The basis vector is one array, its element set to 1 before a
pass and back to 0 after; each pass gets copies of the arrays the function may write
into (forward mode writes into the tangents too, where it writes into any), so that every
pass sees them as they were on entry, and so does the caller afterwards, as after a
gradient.
"""
from __future__ import annotations

from collections.abc import Callable

from ...errors import DifferentiationError
from ..core import Graph, Value
from ..ops.batching import NotBatchable
from ..types import I64, ArrayType, ScalarType, Type
from .builder import GraphBuilder
from .derived_graphs import item
from .forward_activity import written_memory
from .forward_rules import copy_array
from .vectorize import vectorized_call


def forward_jacobian(graph: Graph, inner: Graph, jvp: Graph, i: int, args: list[Value],
                     writes: bool) -> Value:
    """The Jacobian of `inner`'s result w.r.t. `args[i]`, built in `graph` from `jvp`
    (`inner`'s params, then a tangent of param i -> (value, tangent))."""
    e = GraphBuilder(graph, inner.loc)
    x = args[i]
    result = _result_type(inner)
    if isinstance(x.type, ScalarType):  # the tangent, as strong as the value (a Python complex's)
        pair = _call(graph, jvp, [*_unwritten(e, args, inner), _unit(e, 1.0, x.type)])
        return item(graph, pair, 1, like=pair.type.elements[0])
    try:
        return _batched_forward_jacobian(graph, inner, jvp, i, args)
    except NotBatchable:
        pass
    n, x_dims = _dims(e, x)  # the result's shape from a pass along zeros: no other code
    out = e.op("getitem", _call(graph, jvp, [*_unwritten(e, args, inner), e.op(
        "array_new_like", x, fill=0, dtype=x.type.dtype)]), index=1)
    rows, out_dims = _dims(e, out)
    jacobian = e.op("array_new", *out_dims, *x_dims, fill=0, dtype=result)
    columns = e.op("array_reshape", jacobian, rows, n)
    basis = e.op("array_new", n, fill=0, dtype=x.type.dtype)

    def column(b: GraphBuilder, k: Value, inv: list[Value]) -> None:
        *given, columns, basis = inv
        b.op("array_set", basis, _unit(b, 1.0, x.type.dtype), k)
        tangent = b.op("array_reshape", basis, *_dims(b, given[i])[1])
        passed = _unwritten(b, given, inner)
        if writes:
            tangent = copy_array(b, tangent)
        t = b.op("getitem", _call(b.graph, jvp, [*passed, tangent]), index=1)
        if isinstance(t.type, ArrayType):
            target = b.op("array_view", columns, k, spec=("s000", "i"))
            b.op("array_assign", target, b.op("array_reshape", t, _dims(b, t)[0]))
        else:
            b.op("array_set", columns, _as(b, t, result), b.const(0, I64), k)
        b.op("array_set", basis, _unit(b, 0.0, x.type.dtype), k)

    counted_loop(graph, n, [*args, columns, basis], column, inner)
    return jacobian


def _batched_forward_jacobian(graph: Graph, inner: Graph, jvp: Graph, i: int,
                              args: list[Value]) -> Value:
    """The Jacobian w.r.t. array `args[i]` as `jvp` over every basis vector at once, the
    pass rewritten for the batch of them (vectorize.py; JAX's jacfwd, vmap of jvp): the
    tangents of the result, one per basis vector along axis 0, moved to the last axis and
    reshaped to the result's shape followed by the argument's. NotBatchable (nothing
    built) where the pass has an op without a batching rule."""
    scratch = Graph(graph.name, loc=inner.loc)
    e = GraphBuilder(scratch, inner.loc)
    x = args[i]
    n, x_dims = _dims(e, x)
    zero = e.const(0, I64)
    basis = e.op("eye", n, n, zero, dtype=x.type.dtype)
    tangents = basis if x.type.ndim == 1 else e.op("array_reshape", basis, n, *x_dims)
    pair, flags = vectorized_call(scratch, jvp, [*_unwritten(e, args, inner), tangents],
                                  [False] * len(args) + [True])
    if not isinstance(flags, tuple) or not flags[1]:
        raise NotBatchable("a result that does not depend on the argument")
    t = e.op("getitem", pair, index=1)
    out_dims = [e.op("array_dim", t, axis=k) for k in range(1, t.type.ndim)]
    if out_dims:
        t = e.op("array_permute", t, axes=(*range(1, t.type.ndim), 0))
    if x.type.ndim != 1:  # else t has the shape already
        t = e.op("array_reshape", t, *out_dims, *x_dims)
    jacobian = e.op("array_contiguous", t)
    if jacobian.type.dtype != _result_type(inner):
        raise NotBatchable("a tangent of another dtype than the result")
    graph.nodes.extend(scratch.nodes)
    return jacobian


def reverse_jacobians(graph: Graph, inner: Graph, vjp: Graph, wrt: list[int],
                      args: list[Value]) -> list[Value]:
    """The Jacobians of `inner`'s result w.r.t. `args[i]` for each i of `wrt`, built in
    `graph` from `vjp` (`inner`'s params, then a cotangent -> the cotangent of each param
    of `wrt`, in order: cores.pullback). A pass of `vjp` leaves the arrays it is given as
    they were (its undo log); the pass of `inner` for the result's shape gets copies."""
    e = GraphBuilder(graph, inner.loc)
    if isinstance(inner.outputs[0].type, ScalarType):  # the gradient: no pass for the shape
        cotangents = _call(graph, vjp, [*args, _unit(e, 1.0, inner.outputs[0].type)])
        return [e.op("getitem", cotangents, index=k) for k in range(len(wrt))]
    out = _call(graph, inner, _unwritten(e, args, inner))
    m, out_dims = _dims(e, out)
    jacobians, rows, types = [], [], []
    for i in wrt:
        n, x_dims = _dims(e, args[i])
        types.append(_cotangent_type(inner, args[i].type))
        jacobians.append(e.op("array_new", *out_dims, *x_dims, fill=0, dtype=types[-1]))
        rows.append(e.op("array_reshape", jacobians[-1], m, *([n] if x_dims else [])))
    basis = e.op("array_new", m, fill=0, dtype=out.type.dtype)

    def row(b: GraphBuilder, k: Value, inv: list[Value]) -> None:
        given, basis = inv[:len(args)], inv[len(args)]
        targets, dims = inv[len(args) + 1:len(args) + 1 + len(wrt)], inv[len(args) + 1 + len(wrt):]
        b.op("array_set", basis, _unit(b, 1.0, out.type.dtype), k)
        cotangents = _call(b.graph, vjp, [*given, b.op("array_reshape", basis, *dims)])
        for j, target in enumerate(targets):
            c = b.op("getitem", cotangents, index=j)
            if isinstance(c.type, ArrayType):
                b.op("array_assign", b.op("array_view", target, k, spec=("i",)),
                     b.op("array_reshape", c, _dims(b, c)[0]))
            else:
                b.op("array_set", target, _as(b, c, types[j]), k)
        b.op("array_set", basis, _unit(b, 0.0, out.type.dtype), k)

    counted_loop(graph, m, [*args, basis, *rows, *out_dims], row, inner)
    return jacobians


def _result_type(inner: Graph) -> Type:
    """The dtype of a Jacobian: the float or complex the result is made of."""
    t = inner.outputs[0].type
    dtype = t.dtype if isinstance(t, ArrayType) else t
    if not (isinstance(dtype, ScalarType) and (dtype.is_float or dtype.is_complex)):
        raise DifferentiationError(f"a Jacobian needs a function returning a float or complex "
                                   f"number or array, not {t}", inner.loc,
                                   hint="return an array (np.stack the results)")
    return ScalarType(dtype.name)


def _cotangent_type(inner: Graph, arg: Type) -> Type:
    """The dtype of a reverse-mode Jacobian w.r.t. an argument of type `arg`: the result's,
    or the argument's complex (as JAX's, a cotangent has its primal's dtype)."""
    dtype = arg.dtype if isinstance(arg, ArrayType) else arg
    return ScalarType(dtype.name) if dtype.is_complex else _result_type(inner)


def _unit(e: GraphBuilder, value: float, t: Type) -> Value:
    """The constant `value` (0 or 1) of float or complex type `t`: an element of a basis."""
    return e.const(complex(value) if t.is_complex else value, t)


def _dims(e: GraphBuilder, v: Value) -> tuple[Value, list[Value]]:
    """(the number of elements, the length of each axis) of an array; (1, []) of a scalar."""
    if not isinstance(v.type, ArrayType):
        return e.const(1, I64), []
    dims = [e.op("array_dim", v, axis=k) for k in range(v.type.ndim)]
    return e.op("array_size", v), dims


def _as(e: GraphBuilder, v: Value, t: Type) -> Value:
    return v if v.type == t else e.op("cast", v, to=t)


def _unwritten(e: GraphBuilder, args: list[Value], inner: Graph) -> list[Value]:
    """`args`, each array `inner` may write into (`written_memory`) a copy, for a pass
    that must leave the caller's arrays as they are for the next passes."""
    written = written_memory(inner)
    return [copy_array(e, a) if p in written and isinstance(a.type, ArrayType) else a
            for p, a in zip(inner.params, args)]


def _call(graph: Graph, callee: Graph, args: list[Value]) -> Value:
    """A call of `callee` that stays a call: a pass compiled once, however often it is
    repeated (the inliner leaves it: passes/inline.py)."""
    return graph.add("call", args, attrs={"callee": callee.name, "noinline": True},
                     loc=callee.loc, types=[callee.outputs[0].type]).outputs[0]


def counted_loop(graph: Graph, n: Value, invariants: list[Value],
                  body: Callable[[GraphBuilder, Value, list[Value]], None], inner: Graph) -> None:
    """`for k in range(n): body(builder, k, invariants)` as a `while` node in `graph`; the
    body sees the invariants as its region's parameters, in order."""
    every = [*invariants, n]

    def region(name: str) -> Graph:
        params = [Value(v.name, v.type) for v in every]
        return Graph(name, [*params, Value("k", I64)], loc=inner.loc)

    cond = region("cond")
    cond.outputs = [GraphBuilder(cond, inner.loc).op("lt", cond.params[-1], cond.params[-2])]
    loop = region("body")
    b = GraphBuilder(loop, inner.loc)
    body(b, loop.params[-1], loop.params[:len(invariants)])
    loop.outputs = [b.op("add", loop.params[-1], b.const(1, I64))]
    zero = GraphBuilder(graph, inner.loc).const(0, I64)
    graph.add("while", [*every, zero], 1, attrs={"n_invariants": len(every)},
              regions=[cond, loop], loc=inner.loc, types=[I64])
