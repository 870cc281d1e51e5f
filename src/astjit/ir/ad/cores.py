"""The core graph of each kind of derived function, in a scratch module (derive.py
shapes the result as the API returns it, optimizes and merges it).

- `gradient`: (value, d/d wrt...) by reverse mode (reverse.py); a container argument's
  by its leaves (`_tree_gradient`); a graph reverse mode cannot handle (one whose
  loops record tapes: a gradient) by forward mode, one pass per argument.
- `jvp_core`: (value, tangent) by forward mode (forward.py).
- `pullback`: one cotangent per argument for a cotangent of the result: the gradient
  of the inner product <ct, f(args)>.
- `jacobians`: loops of jvp or vjp passes (jacobians.py).
- `batched`: vmap's loop over a batch (batching.py).
"""
from __future__ import annotations

from ...errors import DifferentiationError
from ..core import Graph, Module, Value
from ..passes.dce import eliminate_dead_code
from ..passes.fold import fold_constants
from ..passes.inline import clone_node
from ..types import (
    F32,
    F64,
    ArrayType,
    TupleType,
    strong,
)
from .derived_graphs import (
    add_param,
    call,
    gather_leaves,
    is_float,
    item,
    leaf_params,
    leaf_reads,
    mapped_leaves,
    tuple_of,
)
from .errors import holds_complex


def gradient(module: Module, wrt: list[int]) -> str:
    """Graph returning (value, d/d wrt[0], ...): reverse mode, or forward mode per argument."""
    from .reverse import NotDifferentiableError, reverse_graph

    if any(isinstance(module.entry_graph.params[i].type, TupleType) for i in wrt):
        return _tree_gradient(module, wrt)
    check_float_params(module.entry_graph, wrt)
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
        args.append(leaf_params(flat, p.type, p.name) if i in wrt else add_param(flat, p))
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
    flat_wrt = [j for i in wrt for j in spans[i] if is_float(flat.params[j].type)]
    for i in wrt:
        if not any(j in flat_wrt for j in spans[i]):
            check_float_params(inner, [i])  # says why (a container without float leaves)
    module.entry = flat.name
    core = module.graphs[gradient(module, flat_wrt)]
    module.entry = inner.name
    outer = Graph(f"{inner.name}.treegrad", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    leaves = [v for i, p in enumerate(outer.params)
              for v in (leaf_reads(outer, p) if i in wrt else [p])]
    result = call(outer, core, leaves)
    adjoints = {j: item(outer, result, k + 1, like=flat.params[j].type)
                for k, j in enumerate(flat_wrt)}
    grads = [gather_leaves(outer, p.type, iter(spans[i]), adjoints) for i, p in
             ((i, outer.params[i]) for i in wrt)]
    outer.outputs = [tuple_of(outer, [item(outer, result, 0), *grads])]
    module.graphs[outer.name] = outer
    return outer.name


def refuse_complex_params(graph: Graph) -> None:
    """A complex argument is refused where jvp and vjp take every argument: taken as an int's
    (ignored, a zero cotangent) its derivative would be silently wrong."""
    for param in graph.params:
        if holds_complex(param.type):
            raise DifferentiationError(
                f"cannot differentiate with respect to argument '{param.name}' of type "
                f"{param.type}: complex arguments have no derivative yet", graph.loc,
                hint="pass the real and imaginary parts as two float arguments (docs/arrays.md)")


def check_float_params(graph: Graph, wrt: list[int]) -> None:
    for i in wrt:
        param = graph.params[i]
        t = param.type
        if t not in (F64, F32) and not (isinstance(t, ArrayType) and t.dtype in (F64, F32)):
            hint = ("complex arguments have no gradient yet (docs/arrays.md): pass the real and "
                    "imaginary parts as two float arguments" if holds_complex(t) else
                    "pass a float (2.0, not 2) or a float array, or leave this argument out of "
                    "argnums")
            raise DifferentiationError(
                f"cannot differentiate with respect to argument '{param.name}' of type "
                f"{param.type}: only float and float array arguments have a gradient",
                graph.loc, hint=hint)
    output = graph.outputs[0].type
    if output not in (F64, F32) and not wrt == []:
        raise DifferentiationError(f"cannot take the gradient of a function returning {output}: "
                                   "the result must be a float", graph.loc)


def _gradient_by_forward_mode(module: Module, wrt: list[int]) -> str:
    """(value, d/d wrt[0], ...) from one forward-mode pass per argument, tangent 1.0 each."""
    inner = module.entry_graph
    outer = Graph(f"{inner.name}.fwdgrad", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    value = None
    derivatives = []
    for i in wrt:
        jvp_name = forward_core(module, inner.name, [i])
        one = outer.add("const", [], attrs={"value": 1.0, "type": inner.params[i].type},
                        loc=inner.loc, types=[inner.params[i].type]).outputs[0]
        result = call(outer, module.graphs[jvp_name], [*outer.params, one])
        value = item(outer, result, 0)
        derivatives.append(item(outer, result, 1))
    outer.outputs = [tuple_of(outer, [value, *derivatives])]
    module.graphs[outer.name] = outer
    return outer.name


def forward_core(module: Module, name: str, tangent_params: list[int]) -> str:
    """`forward_graph`, its errors reported as the API's."""
    from .forward import NotDifferentiableError, forward_graph

    try:
        return forward_graph(module, name, tangent_params)
    except NotDifferentiableError as error:
        raise DifferentiationError(str(error), error.loc) from None


def jvp_core(module: Module, n_primals: int) -> str:
    """(value, tangent) for primals and one tangent per primal, in forward mode; the
    tangents of int and bool primals are taken and ignored (their derivative is zero), as
    JAX does. The tangents given are copied where the function writes into arrays (their
    tangents see the same writes), so the caller's are left as they were."""
    from .forward import writes_into_arrays
    from .forward_activity import differentiable
    from .forward_rules import copy_array

    inner = module.entry_graph
    refuse_complex_params(inner)
    wrt = [i for i, p in enumerate(inner.params) if differentiable(p.type)]
    core = module.graphs[forward_core(module, inner.name, wrt)]
    tangents = [Value(f"d{p.name}", p.type) for p in inner.params]
    outer = Graph(f"{inner.name}.jvp", [Value(p.name, p.type) for p in inner.params] + tangents,
                  loc=inner.loc)
    given = [tangents[i] for i in wrt]
    if any(writes_into_arrays(graph) for graph in module.graphs.values()):
        from .builder import GraphBuilder

        e = GraphBuilder(outer, inner.loc)
        given = [mapped_leaves(outer, t, lambda leaf: copy_array(e, leaf)
                                if isinstance(leaf.type, ArrayType) else leaf) for t in given]
    outer.outputs = [call(outer, core, [*outer.params[:n_primals], *given])]
    module.graphs[outer.name] = outer
    return outer.name


def pullback(module: Module, wrt: list[int] | None = None) -> str:
    """(one cotangent per argument) for the arguments, then a cotangent `ct` of the result:
    the gradient of <ct, f(args)> (reverse mode), zeros for arguments with no float. With
    `wrt` (float arguments), their cotangents alone, in order: a Jacobian's passes compute
    no cotangent nobody reads (dead array code stays: it may raise)."""
    from .builder import GraphBuilder
    from .forward_activity import differentiable
    from .forward_rules import zeros_like

    inner = module.entry_graph
    refuse_complex_params(inner)
    args = [Value(p.name, p.type) for p in inner.params]
    dot = Graph(f"{inner.name}.dot", [*args, Value("ct", inner.outputs[0].type)], loc=inner.loc)
    mapping = dict(zip(inner.params, args))
    dot.nodes += [clone_node(node, mapping) for node in inner.nodes]
    dot.outputs = [_inner_product(GraphBuilder(dot, inner.loc), mapping[inner.outputs[0]],
                                  dot.params[-1])]
    module.graphs[dot.name] = dot
    entry, module.entry = module.entry, dot.name
    floats = [i for i, p in enumerate(inner.params)
              if differentiable(p.type) and (wrt is None or i in wrt)]
    core = module.graphs[gradient(module, floats)]
    module.entry = entry
    params = [Value(p.name, p.type) for p in dot.params]
    graph = Graph(f"{inner.name}.pullback", params, loc=inner.loc)
    e = GraphBuilder(graph, inner.loc)
    result = call(graph, core, params)
    graph.outputs = [e.op("tuple", *(item(graph, result, floats.index(i) + 1, like=p.type)
                                     if i in floats else zeros_like(e, p)
                                     for i, p in enumerate(params[:-1])
                                     if wrt is None or i in wrt))]
    module.graphs[graph.name] = graph
    return graph.name


def _inner_product(e, a: Value, b: Value) -> Value:
    """The sum of the products of `a`'s and `b`'s float leaves, as an f64 (f32 where
    every leaf is one)."""
    if isinstance(a.type, TupleType):
        terms = [_inner_product(e, e.op("getitem", a, index=k), e.op("getitem", b, index=k))
                 for k in range(len(a.type.elements))]
    elif is_float(a.type):
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


def jacobians(module: Module, spec: tuple) -> str:
    """The Jacobians of the entry's result w.r.t. the arguments `spec[1]` (jacobians.py):
    one forward pass per input element (jacfwd) or one reverse pass per output (jacrev)."""
    from .forward import writes_into_arrays
    from .jacobians import forward_jacobian, reverse_jacobians

    kind, wrt, single = spec
    inner = module.entry_graph
    for i in wrt:
        if not is_float(inner.params[i].type):
            check_float_params(inner, [i])
    outer = Graph(f"{inner.name}.{kind}", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    if kind == "jacfwd":
        writes = any(writes_into_arrays(graph) for graph in module.graphs.values())
        found = [forward_jacobian(outer, inner, module.graphs[forward_core(module, inner.name, [i])],
                                  i, outer.params, writes) for i in wrt]
    else:
        vjp = module.graphs[pullback(module, list(wrt))]
        found = reverse_jacobians(outer, inner, vjp, list(wrt), outer.params)
    outer.outputs = [found[0] if single else tuple_of(outer, found)]
    module.graphs[outer.name] = outer
    return outer.name


def batched(module: Module, spec: tuple) -> str:
    """The entry applied to each example of a batch (batching.py)."""
    from .batching import batched_graph

    _, in_axes, out_axes, types = spec
    inner = module.entry_graph
    outer = Graph(f"{inner.name}.vmap", [Value(p.name, t) for p, t in zip(inner.params, types)],
                  loc=inner.loc)
    outer.outputs = [batched_graph(outer, inner, outer.params, in_axes, out_axes)]
    module.graphs[outer.name] = outer
    return outer.name
