"""Derived graphs: the typed graph of `grad(f)`, `value_and_grad(f)` or `jvp(f)` for one signature.

`derive(module, name, spec)` takes graph `name` of a typed module (with what it
calls), differentiates an optimized copy of it, shapes the result as the API
returns it, optimizes again (AD after optimization, then optimization of the
AD output), and adds the graphs to `module` under names prefixed with the
derived function's own name. It returns that name. The copy differentiated
is optimized without elementwise fusion (the rules are written for the
elementwise ops, not for `fused` kernels); the result is fused with the rest.
A copy of the result as it was before fusion is added too, under the name
prefixed `unfused-`: a function calling the derived function that is
differentiated in turn (`grad(grad(f))`, `hessian`) differentiates that copy,
not a derivation made again; a gradient's call gets a reverse-mode rule of
its own (reverse over forward, `_gradient_vjp`). The core graph of each kind is
built by cores.py, with the helpers of derived_graphs.py.

Reverse mode is used for gradients. A graph reverse mode cannot handle — one
that is itself a gradient, whose loops record tapes — is differentiated in
forward mode instead, one pass per argument (forward-over-reverse: how
`grad(grad(f))` gets second derivatives through loops).
"""
from __future__ import annotations

from ..core import Graph, Module, Value
from ..passes.inline import clone_graph
from ..types import (
    Type,
    exact,
)
from .cores import batched, forward_core, gradient, jacobians, jvp_core, pullback
from .derived_graphs import call, cast_to, item, tuple_of
from .refusals import (
    refuse_writes_in_conditions,
    refuse_writes_into_returned_inputs,
    refuse_writes_through_two_names,
)


def derive(module: Module, name: str, spec: tuple, fuse: bool = True) -> str:
    """Add the derived graph for `spec` of typed graph `name` to `module`; return its name.
    `fuse=False`: leave it unfused, to be differentiated in turn."""
    from ..passes.pipeline import optimize

    scratch = Module(graphs=_reachable_copy(module, name), entry=name)
    kind = spec[0]
    reverse = kind in REVERSE_KINDS
    _unfused_derived_calls(scratch)
    if kind in BATCHING_KINDS:
        _inlinable_passes(scratch)
    if reverse:
        _rules_of_gradient_calls(scratch)
    optimize(scratch, keep_custom_rules=reverse, fuse=False)
    if kind != "vmap":
        refuse_writes_in_conditions(scratch)
        refuse_writes_into_returned_inputs(scratch)
    if reverse:
        refuse_writes_through_two_names(scratch)
    if kind == "jvp":
        core = jvp_core(scratch, spec[1])
    elif kind == "vjp":
        core = pullback(scratch)
    elif kind in ("jacfwd", "jacrev"):
        core = jacobians(scratch, spec)
    elif kind == "vmap":
        core = batched(scratch, spec)
    else:
        core = gradient(scratch, list(spec[1]), "complex" if is_holomorphic(spec) else "real")
    scratch.entry = _shape(scratch, core, spec)
    declared = scratch.entry_graph.outputs[0].type
    unfused = f"unfused-{_spec_name(spec)}({name})"

    def keep_unfused(optimized: Module) -> None:
        copy = Module(graphs={n: clone_graph(g) for n, g in optimized.graphs.items()},
                      entry=optimized.entry)
        _merge(module, _declared(copy, declared), unfused)

    optimize(scratch, fuse=fuse, before_final=keep_unfused)
    return _merge(module, _declared(scratch, declared), f"{_spec_name(spec)}({name})"
                  if fuse else unfused)


def _declared(module: Module, declared: Type) -> Module:
    """`module` whose entry's result has the strength `declared` (which boxing reads:
    `_shape`) where the passes put an equal value of the other strength there."""
    out = module.entry_graph.outputs[0]
    if exact(out.type) != exact(declared):
        out.type = declared
    return module


def is_holomorphic(spec: tuple) -> bool:
    """Whether a grad / value_and_grad spec asks for holomorphic=True (autodiff.py)."""
    return spec[3:] == (True,)


REVERSE_KINDS = ("grad", "value_and_grad", "jacrev", "vjp")
"""The derived functions computed in reverse mode (jvp and jacfwd use forward mode;
vmap differentiates nothing)."""


def _spec_name(spec: tuple) -> str:
    if spec[0] in ("jvp", "vjp"):
        return spec[0]
    if spec[0] == "vmap":
        return f"vmap[{spec[1]},{spec[2]}]".replace(" ", "")  # the types are the caller's
    wrt = ",".join(map(str, spec[1]))
    return f"{spec[0]}[{wrt}]" + (",holomorphic" if is_holomorphic(spec) else "")


def _reachable_copy(module: Module, name: str) -> dict[str, Graph]:
    """Copies of graph `name` and of every graph it calls (and that the derived functions
    it calls derive), by name: fresh Values and Nodes throughout (`clone_graph`), the
    attributes' values shared, as the passes share them (they replace an attribute, never
    change one in place). `copy.deepcopy`'s generic walk of the same graphs cost several
    times as much (docs/benchmarks.md)."""
    names, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in names:
            names.add(current)
            graph = module.graphs[current]
            todo.extend(module.callees(graph))
            for node in graph.walk():
                if "primal" in node.attrs:
                    todo.append(node.attrs["primal"])
                    if _unfused_name(node.attrs["callee"]) in module.graphs:
                        todo.append(_unfused_name(node.attrs["callee"]))
    return {n: clone_graph(module.graphs[n]) for n in names}


BATCHING_KINDS = ("vmap", "jacfwd")
"""The derived functions that rewrite the function for whole batches (ad/vectorize.py),
which needs its calls inlined: a Jacobian's passes too."""


def _inlinable_passes(module: Module) -> None:
    """Let the inliner take the calls of a Jacobian's passes (marked noinline)."""
    for graph in module.graphs.values():
        for node in graph.walk():
            if node.op == "call":
                node.attrs.pop("noinline", None)


def _unfused_derived_calls(module: Module) -> None:
    """Retarget each call of a derived function (`grad(f)` called in the function about to
    be differentiated) to its copy before fusion (`derive`), or to a derivation of the same
    function that is not fused where there is none."""
    for graph in list(module.graphs.values()):
        for node in graph.walk():
            if node.op == "call" and "derived" in node.attrs:
                kept = _unfused_name(node.attrs["callee"])
                node.attrs["callee"] = kept if kept in module.graphs else derive(
                    module, node.attrs["primal"], node.attrs["derived"], fuse=False)


def _unfused_name(callee: str) -> str:
    """The name of a derived graph's copy before fusion (`derive`)."""
    return f"unfused-{callee}"


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

    kind, wrt, single = spec[:3]
    sub = Module(graphs=_reachable_copy(module, primal), entry=primal)
    optimize(sub, fuse=False)
    inner = sub.entry_graph
    jvp = sub.graphs[forward_core(sub, inner.name, list(wrt))]
    args = [Value(p.name, p.type) for p in inner.params]
    g = Value("$g", result)
    along = Graph(f"{inner.name}.along", [*args, g], loc=inner.loc)
    e = GraphBuilder(along, inner.loc)
    grads = item(along, g, 1) if kind == "value_and_grad" else g
    directions = [grads] if single else [item(along, grads, k) for k in range(len(wrt))]
    directions = [cast_to(e, d, inner.params[i].type) for d, i in zip(directions, wrt)]
    pair = call(along, jvp, [*args, *directions])
    total = item(along, pair, 1)
    if kind == "value_and_grad":
        total = e.op("add", total, e.op("mul", item(along, pair, 0),
                                        cast_to(e, item(along, g, 0), total.type)))
    along.outputs = [total]
    sub.graphs[along.name] = along
    sub.entry = along.name
    optimize(sub, fuse=False)
    floats = [i for i, p in enumerate(inner.params) if differentiable(p.type)]
    core = sub.graphs[gradient(sub, floats, "any")]  # complex: a holomorphic f's f'(z) g
    params = [Value(p.name, p.type) for p in inner.params]
    rule = Graph(f"{inner.name}.gradient_vjp", [*params, Value("out", result), Value("g", result)],
                 loc=inner.loc)
    e = GraphBuilder(rule, inner.loc)
    adjoints = call(rule, core, [*params, rule.params[-1]])
    rule.outputs = [e.op("tuple", *(item(rule, adjoints, floats.index(i) + 1, like=p.type)
                                    if i in floats else zeros_like(e, p)
                                    for i, p in enumerate(params)))]
    sub.graphs[rule.name] = rule
    sub.entry = rule.name
    optimize(sub, fuse=False)
    return _merge(module, sub, f"vjp-of-{_spec_name(spec)}({primal})")


def _shape(module: Module, core: str, spec: tuple) -> str:
    """A graph giving the derived function's result in the shape the API promises."""
    inner = module.graphs[core]
    outer = Graph(f"{core}.result", [Value(p.name, p.type) for p in inner.params], loc=inner.loc)
    result = call(outer, inner, outer.params)
    if spec[0] in ("jvp", "vjp", "jacfwd", "jacrev", "vmap"):
        outer.outputs = [result]
    else:
        _, wrt, single = spec[:3]
        grads = [item(outer, result, k + 1, like=inner.params[i].type)
                 for k, i in enumerate(wrt)]
        gradient = grads[0] if single else tuple_of(outer, grads)
        outer.outputs = [tuple_of(outer, [item(outer, result, 0), gradient])
                         if spec[0] == "value_and_grad" else gradient]
    module.graphs[outer.name] = outer
    return outer.name


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
