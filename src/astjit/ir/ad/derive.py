"""Derived graphs: the typed graph of `grad(f)`, `value_and_grad(f)` or `jvp(f)` for one signature.

`derive(module, name, spec)` takes graph `name` of a typed module (with what it
calls), differentiates an optimized copy of it, shapes the result as the API
returns it, optimizes again (AD after optimization, then optimization of the
AD output), and adds the graphs to `module` under names prefixed with the
derived function's own name. It returns that name. The copy differentiated
is optimized without elementwise fusion (the rules are written for the
elementwise ops, not for `fused` kernels); the result is fused with the rest.

Reverse mode is used for gradients. A graph reverse mode cannot handle — one
that is itself a gradient, whose loops record tapes — is differentiated in
forward mode instead, one pass per argument (forward-over-reverse: how
`grad(grad(f))` gets second derivatives through loops).
"""
from __future__ import annotations

import copy

from ...errors import DifferentiationError
from ..core import Graph, Module, Value
from ..passes.dce import eliminate_dead_code
from ..passes.fold import fold_constants
from ..passes.inline import clone_node
from ..types import (
    F32,
    F64,
    I64,
    NONE,
    ArrayType,
    ScalarType,
    TupleType,
    Type,
    exact,
    strong,
    weak,
)


def derive(module: Module, name: str, spec: tuple) -> str:
    """Add the derived graph for `spec` of typed graph `name` to `module`; return its name."""
    from ..passes.pipeline import optimize

    scratch = Module(graphs=_reachable_copy(module, name), entry=name)
    optimize(scratch, keep_custom_rules=spec[0] != "jvp", fuse=False)
    kind = spec[0]
    if kind == "jvp":
        core = _jvp(scratch, spec[1])
    else:
        core = _gradient(scratch, list(spec[1]))
    scratch.entry = _shape(scratch, core, spec)
    declared = scratch.entry_graph.outputs[0].type
    optimize(scratch)
    out = scratch.entry_graph.outputs[0]
    if exact(out.type) != exact(declared):  # strength, which boxing reads (`_shape`)
        out.type = declared
    prefix = f"{_spec_name(spec)}({name})"
    return _merge(module, scratch, prefix)


def _spec_name(spec: tuple) -> str:
    if spec[0] == "jvp":
        return "jvp"
    wrt = ",".join(map(str, spec[1]))
    return f"{spec[0]}[{wrt}]"


def _reachable_copy(module: Module, name: str) -> dict[str, Graph]:
    """Deep copies of graph `name` and of every graph it calls, by name."""
    names, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in names:
            names.add(current)
            todo.extend(module.callees(module.graphs[current]))
    return copy.deepcopy({n: module.graphs[n] for n in names})


def _gradient(module: Module, wrt: list[int]) -> str:
    """Graph returning (value, d/d wrt[0], ...): reverse mode, or forward mode per argument."""
    from .reverse import NotDifferentiableError, reverse_graph

    if any(isinstance(module.entry_graph.params[i].type, TupleType) for i in wrt):
        return _tree_gradient(module, wrt)
    _check_float_params(module.entry_graph, wrt)
    try:
        return reverse_graph(module, module.entry, wrt)
    except NotDifferentiableError as error:
        if getattr(error, "op", None) not in ("tape_new", "tape_push", "tape_get", "tape_clear",
                                               "tape_free"):
            raise DifferentiationError(str(error), getattr(error, "loc", None)) from None
    return _gradient_by_forward_mode(module, wrt)


def _tree_gradient(module: Module, wrt: list[int]) -> str:
    """(value, d/d wrt[0], ...) where some arguments are containers (docs/trees.md): the
    gradient of a graph taking their leaves as parameters, gathered back into each
    container's structure; a leaf that is not a float gets 0 (None stays None)."""
    inner = module.entry_graph
    flat = Graph(f"{inner.name}.leaves", [], loc=inner.loc)
    args, spans = [], []
    for i, p in enumerate(inner.params):
        start = len(flat.params)
        args.append(_leaf_params(flat, p.type, p.name) if i in wrt else _param(flat, p))
        spans.append(range(start, len(flat.params)))
    # The body itself, not a call of it: reverse mode then sees that only the leaves of
    # the differentiated containers need adjoints (a call's would cover every argument).
    mapping = dict(zip(inner.params, args))
    flat.nodes += [clone_node(node, mapping) for node in inner.nodes]
    flat.outputs = [mapping[inner.outputs[0]]]
    # The containers rebuilt from the leaves are read by getitems: folded and dropped, so
    # an adjoint goes to its leaf, not through a zero-filled tuple of adjoints.
    eliminate_dead_code(fold_constants(Module(graphs={flat.name: flat}, entry=flat.name)))
    module.graphs[flat.name] = flat
    flat_wrt = [j for i in wrt for j in spans[i] if _is_float(flat.params[j].type)]
    for i in wrt:
        if not any(j in flat_wrt for j in spans[i]):
            _check_float_params(inner, [i])  # says why (a container without float leaves)
    module.entry = flat.name
    core = module.graphs[_gradient(module, flat_wrt)]
    module.entry = inner.name
    outer = Graph(f"{inner.name}.treegrad", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    leaves = [v for i, p in enumerate(outer.params)
              for v in (_leaf_reads(outer, p) if i in wrt else [p])]
    result = _call(outer, core, leaves)
    adjoints = {j: _item(outer, result, k + 1, like=flat.params[j].type)
                for k, j in enumerate(flat_wrt)}
    grads = [_gather(outer, p.type, iter(spans[i]), adjoints) for i, p in
             ((i, outer.params[i]) for i in wrt)]
    outer.outputs = [_tuple(outer, [_item(outer, result, 0), *grads])]
    module.graphs[outer.name] = outer
    return outer.name


def _is_float(t: Type) -> bool:
    return t in (F64, F32) or (isinstance(t, ArrayType) and t.dtype in (F64, F32))


def _param(graph: Graph, like: Value) -> Value:
    graph.params.append(Value(like.name, like.type))
    return graph.params[-1]


def _leaf_params(graph: Graph, t: Type, name: str) -> Value:
    """A value of type `t` built from new parameters of `graph`, one per leaf."""
    if not isinstance(t, TupleType):
        return _param(graph, Value(name, t))
    parts = [_leaf_params(graph, e, f"{name}.{k}") for k, e in enumerate(t.elements)]
    return _tuple(graph, parts, t)


def _leaf_reads(graph: Graph, value: Value) -> list[Value]:
    if not isinstance(value.type, TupleType):
        return [value]
    return [leaf for k in range(len(value.type.elements))
            for leaf in _leaf_reads(graph, _item(graph, value, k))]


def _gather(graph: Graph, t: Type, positions, adjoints: dict) -> Value:
    """The gradient of a value of type `t` whose leaves are at `positions`."""
    if isinstance(t, TupleType):
        return _tuple(graph, [_gather(graph, e, positions, adjoints) for e in t.elements], t)
    j = next(positions)
    if j in adjoints:
        return adjoints[j]
    zero = None if t == NONE else 0
    return graph.add("const", [], attrs={"value": zero, "type": NONE if t == NONE else I64},
                     loc=graph.loc, types=[NONE if t == NONE else I64]).outputs[0]


def _gradient_by_forward_mode(module: Module, wrt: list[int]) -> str:
    """(value, d/d wrt[0], ...) from one forward-mode pass per argument, tangent 1.0 each."""
    inner = module.entry_graph
    outer = Graph(f"{inner.name}.fwdgrad", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    value = None
    derivatives = []
    for i in wrt:
        jvp_name = _forward(module, inner.name, [i])
        one = outer.add("const", [], attrs={"value": 1.0, "type": inner.params[i].type},
                        loc=inner.loc, types=[inner.params[i].type]).outputs[0]
        result = _call(outer, module.graphs[jvp_name], [*outer.params, one])
        value = _item(outer, result, 0)
        derivatives.append(_item(outer, result, 1))
    outer.outputs = [_tuple(outer, [value, *derivatives])]
    module.graphs[outer.name] = outer
    return outer.name


def _forward(module: Module, name: str, tangent_params: list[int]) -> str:
    """`forward_graph`, its errors reported as the API's."""
    from .forward import NotDifferentiableError, forward_graph

    try:
        return forward_graph(module, name, tangent_params)
    except NotDifferentiableError as error:
        raise DifferentiationError(str(error), error.loc) from None


def _jvp(module: Module, n_primals: int) -> str:
    """(value, tangent) for primals and one tangent per primal, in forward mode; the
    tangents of int and bool primals are taken and ignored (their derivative is zero), as
    JAX does. The tangents given are copied where the function writes into arrays (their
    tangents see the same writes), so the caller's are left as they were."""
    from .forward import writes_into_arrays
    from .forward_activity import differentiable
    from .forward_rules import copy_array

    inner = module.entry_graph
    wrt = [i for i, p in enumerate(inner.params) if differentiable(p.type)]
    core = module.graphs[_forward(module, inner.name, wrt)]
    tangents = [Value(f"d{p.name}", p.type) for p in inner.params]
    outer = Graph(f"{inner.name}.jvp", [Value(p.name, p.type) for p in inner.params] + tangents,
                  loc=inner.loc)
    given = [tangents[i] for i in wrt]
    if any(writes_into_arrays(graph) for graph in module.graphs.values()):
        from .builder import GraphBuilder

        e = GraphBuilder(outer, inner.loc)
        given = [_mapped_leaves(outer, t, lambda leaf: copy_array(e, leaf)
                                if isinstance(leaf.type, ArrayType) else leaf) for t in given]
    outer.outputs = [_call(outer, core, [*outer.params[:n_primals], *given])]
    module.graphs[outer.name] = outer
    return outer.name


def _mapped_leaves(graph: Graph, value: Value, fn) -> Value:
    """`value` with `fn` applied to each of its leaves (itself, when not a container)."""
    if not isinstance(value.type, TupleType):
        return fn(value)
    parts = [_mapped_leaves(graph, _item(graph, value, k), fn)
             for k in range(len(value.type.elements))]
    return _tuple(graph, parts, value.type)


def _check_float_params(graph: Graph, wrt: list[int]) -> None:
    for i in wrt:
        param = graph.params[i]
        t = param.type
        if t not in (F64, F32) and not (isinstance(t, ArrayType) and t.dtype in (F64, F32)):
            raise DifferentiationError(
                f"cannot differentiate with respect to argument '{param.name}' of type "
                f"{param.type}: only float and float array arguments have a gradient",
                graph.loc, hint="pass a float (2.0, not 2) or a float array, or leave this "
                "argument out of argnums")
    output = graph.outputs[0].type
    if output not in (F64, F32) and not wrt == []:
        raise DifferentiationError(f"cannot take the gradient of a function returning {output}: "
                                   "the result must be a float", graph.loc)


def _shape(module: Module, core: str, spec: tuple) -> str:
    """A graph giving the derived function's result in the shape the API promises."""
    inner = module.graphs[core]
    outer = Graph(f"{core}.result", [Value(p.name, p.type) for p in inner.params], loc=inner.loc)
    result = _call(outer, inner, outer.params)
    if spec[0] == "jvp":
        outer.outputs = [result]
    else:
        _, wrt, single = spec
        grads = [_item(outer, result, k + 1, like=inner.params[i].type)
                 for k, i in enumerate(wrt)]
        gradient = grads[0] if single else _tuple(outer, grads)
        outer.outputs = [_tuple(outer, [_item(outer, result, 0), gradient])
                         if spec[0] == "value_and_grad" else gradient]
    module.graphs[outer.name] = outer
    return outer.name


def _call(graph: Graph, callee: Graph, args: list[Value]) -> Value:
    return graph.add("call", args, attrs={"callee": callee.name}, loc=callee.loc,
                     types=[callee.outputs[0].type]).outputs[0]


def _item(graph: Graph, value: Value, index: int, like: Type | None = None) -> Value:
    """Element `index` of a tuple; with `like`, of `like`'s strength (ir/types.py): the
    gradient with respect to a Python float is a Python float, to a NumPy scalar one of those."""
    t = value.type.elements[index]
    if isinstance(like, ScalarType) and isinstance(t, ScalarType):
        t = strong(t) if like.strong else weak(t)
    return graph.add("getitem", [value], attrs={"index": index}, loc=graph.loc,
                     types=[t]).outputs[0]


def _tuple(graph: Graph, parts: list[Value], like: TupleType | None = None) -> Value:
    """A tuple of `parts`; with `like`, the container `like` is (its node)."""
    node = like.node if like is not None else None
    return graph.add("tuple", parts, attrs={"node": node} if node else {}, loc=graph.loc,
                     types=[TupleType(tuple(p.type for p in parts), node)]).outputs[0]


def _merge(module: Module, scratch: Module, prefix: str) -> str:
    """Add `scratch`'s graphs to `module` renamed `prefix/...`; return the entry's new name."""
    renamed = {old: f"{prefix}/{old}" for old in scratch.graphs}
    for old, graph in scratch.graphs.items():
        graph.name = renamed[old]
        for node in graph.walk():
            for key in ("callee", "custom_vjp"):
                if node.op == "call" and key in node.attrs:
                    node.attrs[key] = renamed[node.attrs[key]]
        module.graphs[graph.name] = graph
    return renamed[scratch.entry]
