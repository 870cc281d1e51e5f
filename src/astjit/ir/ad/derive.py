"""Derived graphs: the typed graph of `grad(f)`, `value_and_grad(f)` or `jvp(f)` for one signature.

`derive(module, name, spec)` takes graph `name` of a typed module (with what it
calls), differentiates an optimized copy of it, shapes the result as the API
returns it, optimizes again (AD after optimization, then optimization of the
AD output), and adds the graphs to `module` under names prefixed with the
derived function's own name. It returns that name. The copy differentiated
is optimized without elementwise fusion (the rules are written for the
elementwise ops, not for `fused` kernels); the result is fused with the rest.
A derived function called by the function differentiated (`grad(grad(f))`) is
derived again, unfused, for it; a gradient's call gets a reverse-mode rule of
its own (reverse over forward, `_gradient_vjp`).

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


def derive(module: Module, name: str, spec: tuple, fuse: bool = True) -> str:
    """Add the derived graph for `spec` of typed graph `name` to `module`; return its name.
    `fuse=False`: leave it unfused, to be differentiated in turn."""
    from ..passes.pipeline import optimize

    scratch = Module(graphs=_reachable_copy(module, name), entry=name)
    kind = spec[0]
    reverse = kind in REVERSE_KINDS
    if kind != "vmap":
        _unfused_derived_calls(scratch)
    if reverse:
        _rules_of_gradient_calls(scratch)
    optimize(scratch, keep_custom_rules=reverse, fuse=False)
    if kind == "jvp":
        core = _jvp(scratch, spec[1])
    elif kind == "vjp":
        core = _vjp(scratch)
    elif kind in ("jacfwd", "jacrev"):
        core = _jacobian(scratch, spec)
    elif kind == "vmap":
        core = _vmap(scratch, spec)
    else:
        core = _gradient(scratch, list(spec[1]))
    scratch.entry = _shape(scratch, core, spec)
    declared = scratch.entry_graph.outputs[0].type
    optimize(scratch, fuse=fuse)
    out = scratch.entry_graph.outputs[0]
    if exact(out.type) != exact(declared):  # strength, which boxing reads (`_shape`)
        out.type = declared
    prefix = f"{_spec_name(spec)}({name})" if fuse else f"unfused-{_spec_name(spec)}({name})"
    return _merge(module, scratch, prefix)


REVERSE_KINDS = ("grad", "value_and_grad", "jacrev", "vjp")
"""The derived functions computed in reverse mode (jvp and jacfwd use forward mode;
vmap differentiates nothing)."""


def _spec_name(spec: tuple) -> str:
    if spec[0] in ("jvp", "vjp"):
        return spec[0]
    if spec[0] == "vmap":
        return f"vmap[{spec[1]},{spec[2]}]".replace(" ", "")  # the types are the caller's
    wrt = ",".join(map(str, spec[1]))
    return f"{spec[0]}[{wrt}]"


def _reachable_copy(module: Module, name: str) -> dict[str, Graph]:
    """Deep copies of graph `name` and of every graph it calls (and that the derived
    functions it calls derive), by name."""
    names, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in names:
            names.add(current)
            graph = module.graphs[current]
            todo.extend(module.callees(graph))
            todo.extend(n.attrs["primal"] for n in graph.walk() if "primal" in n.attrs)
    return copy.deepcopy({n: module.graphs[n] for n in names})


def _unfused_derived_calls(module: Module) -> None:
    """Retarget each call of a derived function (`grad(f)` called in the function about to
    be differentiated) to a derivation of the same function that is not fused."""
    for graph in list(module.graphs.values()):
        for node in graph.walk():
            if node.op == "call" and "derived" in node.attrs:
                node.attrs["callee"] = derive(module, node.attrs["primal"], node.attrs["derived"],
                                              fuse=False)


def _rules_of_gradient_calls(module: Module) -> None:
    """Give each call of a gradient (`grad(f)` called in the function differentiated) its
    reverse-mode rule, so that reverse mode never differentiates gradient code."""
    for graph in list(module.graphs.values()):
        for node in graph.walk():
            spec = node.attrs.get("derived")
            if node.op == "call" and spec and spec[0] in ("grad", "value_and_grad") \
                    and "custom_vjp" not in node.attrs:
                node.attrs["custom_vjp"] = _gradient_vjp(module, node.attrs["primal"], spec,
                                                         node.outputs[0].type)


def _gradient_vjp(module: Module, primal: str, spec: tuple, result: Type) -> str:
    """The custom_vjp rule `rule(args..., out, g)` of a call of grad(f) / value_and_grad(f):
    the adjoints of the arguments, as the gradient of the scalar

        s(args) = <g, grad f(args)> (+ g_value * f(args) for value_and_grad)

    where <g, grad f> is f's directional derivative along g (forward mode): reverse over
    forward. (The VJP of a gradient is a Hessian-vector product; JAX's grad of grad, the
    gradient penalty of a GAN, a Hessian row.)"""
    from ..passes.pipeline import optimize
    from .builder import GraphBuilder
    from .forward_activity import differentiable
    from .forward_rules import zeros_like

    kind, wrt, single = spec
    sub = Module(graphs=_reachable_copy(module, primal), entry=primal)
    optimize(sub, fuse=False)
    inner = sub.entry_graph
    jvp = sub.graphs[_forward(sub, inner.name, list(wrt))]
    args = [Value(p.name, p.type) for p in inner.params]
    g = Value("$g", result)
    along = Graph(f"{inner.name}.along", [*args, g], loc=inner.loc)
    e = GraphBuilder(along, inner.loc)
    grads = _item(along, g, 1) if kind == "value_and_grad" else g
    directions = [grads] if single else [_item(along, grads, k) for k in range(len(wrt))]
    directions = [_cast_to(e, d, inner.params[i].type) for d, i in zip(directions, wrt)]
    pair = _call(along, jvp, [*args, *directions])
    total = _item(along, pair, 1)
    if kind == "value_and_grad":
        total = e.op("add", total, e.op("mul", _item(along, pair, 0),
                                        _cast_to(e, _item(along, g, 0), total.type)))
    along.outputs = [total]
    sub.graphs[along.name] = along
    sub.entry = along.name
    optimize(sub, fuse=False)
    floats = [i for i, p in enumerate(inner.params) if differentiable(p.type)]
    core = sub.graphs[_gradient(sub, floats)]
    params = [Value(p.name, p.type) for p in inner.params]
    rule = Graph(f"{inner.name}.gradient_vjp", [*params, Value("out", result), Value("g", result)],
                 loc=inner.loc)
    e = GraphBuilder(rule, inner.loc)
    adjoints = _call(rule, core, [*params, rule.params[-1]])
    rule.outputs = [e.op("tuple", *(_item(rule, adjoints, floats.index(i) + 1, like=p.type)
                                    if i in floats else zeros_like(e, p)
                                    for i, p in enumerate(params)))]
    sub.graphs[rule.name] = rule
    sub.entry = rule.name
    optimize(sub, fuse=False)
    return _merge(module, sub, f"vjp-of-{_spec_name(spec)}({primal})")


def _cast_to(e, value: Value, t: Type) -> Value:
    """`value` as type `t` (a float of the other strength: a gradient's type is its
    argument's, but a NumPy scalar's and a Python float's differ)."""
    return value if value.type == t or not isinstance(t, ScalarType) else e.op("cast", value, to=t)


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


def _vjp(module: Module) -> str:
    """(one cotangent per argument) for the arguments, then a cotangent `ct` of the result:
    the gradient of <ct, f(args)> (reverse mode), zeros for arguments with no float."""
    from .builder import GraphBuilder
    from .forward_activity import differentiable
    from .forward_rules import zeros_like

    inner = module.entry_graph
    args = [Value(p.name, p.type) for p in inner.params]
    dot = Graph(f"{inner.name}.dot", [*args, Value("ct", inner.outputs[0].type)], loc=inner.loc)
    mapping = dict(zip(inner.params, args))
    dot.nodes += [clone_node(node, mapping) for node in inner.nodes]
    dot.outputs = [_inner_product(GraphBuilder(dot, inner.loc), mapping[inner.outputs[0]],
                                  dot.params[-1])]
    module.graphs[dot.name] = dot
    entry, module.entry = module.entry, dot.name
    floats = [i for i, p in enumerate(inner.params) if differentiable(p.type)]
    core = module.graphs[_gradient(module, floats)]
    module.entry = entry
    params = [Value(p.name, p.type) for p in dot.params]
    pullback = Graph(f"{inner.name}.pullback", params, loc=inner.loc)
    e = GraphBuilder(pullback, inner.loc)
    result = _call(pullback, core, params)
    pullback.outputs = [e.op("tuple", *(_item(pullback, result, floats.index(i) + 1, like=p.type)
                                        if i in floats else zeros_like(e, p)
                                        for i, p in enumerate(params[:-1])))]
    module.graphs[pullback.name] = pullback
    return pullback.name


def _inner_product(e, a: Value, b: Value) -> Value:
    """The sum of the products of `a`'s and `b`'s float leaves, as an f64 (f32 where
    every leaf is one)."""
    if isinstance(a.type, TupleType):
        terms = [_inner_product(e, e.op("getitem", a, index=k), e.op("getitem", b, index=k))
                 for k in range(len(a.type.elements))]
    elif _is_float(a.type):
        product = e.op("mul", a, b)
        if isinstance(product.type, ArrayType):
            product = e.op("reduce", product, kind="sum", axis=None, keepdims=False)
        terms = [product]
    else:
        terms = []
    if not terms:
        return e.const(0.0, F64)
    t = F32 if all(term.type in (F32, strong(F32)) for term in terms) else F64
    total = None
    for term in terms:
        term = term if term.type == t else e.op("cast", term, to=t)
        total = term if total is None else e.op("add", total, term)
    return total


def _jacobian(module: Module, spec: tuple) -> str:
    """The Jacobians of the entry's result w.r.t. the arguments `spec[1]` (jacobians.py):
    one forward pass per input element (jacfwd) or one reverse pass per output (jacrev)."""
    from .forward import writes_into_arrays
    from .jacobians import forward_jacobian, reverse_jacobians

    kind, wrt, single = spec
    inner = module.entry_graph
    for i in wrt:
        if not _is_float(inner.params[i].type):
            _check_float_params(inner, [i])
    outer = Graph(f"{inner.name}.{kind}", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    if kind == "jacfwd":
        writes = any(writes_into_arrays(graph) for graph in module.graphs.values())
        jacobians = [forward_jacobian(outer, inner, module.graphs[_forward(module, inner.name, [i])],
                                      i, outer.params, writes) for i in wrt]
    else:
        jacobians = reverse_jacobians(outer, inner, module.graphs[_vjp(module)], list(wrt),
                                      outer.params)
    outer.outputs = [jacobians[0] if single else _tuple(outer, jacobians)]
    module.graphs[outer.name] = outer
    return outer.name


def _vmap(module: Module, spec: tuple) -> str:
    """The entry applied to each example of a batch (batching.py)."""
    from .batching import batched_graph

    _, in_axes, out_axes, batched = spec
    inner = module.entry_graph
    outer = Graph(f"{inner.name}.vmap", [Value(p.name, t) for p, t in zip(inner.params, batched)],
                  loc=inner.loc)
    outer.outputs = [batched_graph(outer, inner, outer.params, in_axes, out_axes)]
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
    if spec[0] in ("jvp", "vjp", "jacfwd", "jacrev", "vmap"):
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
