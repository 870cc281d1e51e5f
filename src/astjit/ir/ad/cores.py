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
    C64,
    C128,
    F32,
    F64,
    ArrayType,
    ScalarType,
    TupleType,
    Type,
    strong,
)
from .derived_graphs import (
    add_param,
    call,
    gather_leaves,
    is_inexact,
    item,
    leaf_params,
    leaf_reads,
    mapped_leaves,
    tuple_of,
)
from .errors import holds_complex


def gradient(module: Module, wrt: list[int], output: str = "real") -> str:
    """Graph returning (value, d/d wrt[0], ...): reverse mode, or forward mode per argument.
    `output`: the result the function must have (`check_params`)."""
    from .reverse import NotDifferentiableError, reverse_graph

    if any(isinstance(module.entry_graph.params[i].type, TupleType) for i in wrt):
        return _tree_gradient(module, wrt, output)
    check_params(module.entry_graph, wrt, output)
    try:
        return reverse_graph(module, module.entry, wrt)
    except NotDifferentiableError as error:
        if getattr(error, "op", None) not in ("tape_new", "tape_push", "tape_get", "tape_clear",
                                               "tape_free"):
            raise DifferentiationError(str(error), getattr(error, "loc", None)) from None
    return _gradient_by_forward_mode(module, wrt)


def _tree_gradient(module: Module, wrt: list[int], output: str) -> str:
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
    flat_wrt = [j for i in wrt for j in spans[i] if is_inexact(flat.params[j].type)]
    for i in wrt:
        if not any(j in flat_wrt for j in spans[i]):
            check_params(inner, [i], output)  # says why (a container without float leaves)
    module.entry = flat.name
    core = module.graphs[gradient(module, flat_wrt, output)]
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


def check_params(graph: Graph, wrt: list[int], output: str = "real") -> None:
    """DifferentiationError unless the arguments `wrt` are floats or complex numbers (arrays
    of them) and the result is what `output` says: "real" a float (`grad`), "complex" a
    complex, every argument `wrt` one too (`grad(f, holomorphic=True)`), "any" either (a
    pullback's inner product). JAX's rules, and its messages' substance."""
    for i in wrt:
        param = graph.params[i]
        t = param.type
        if output == "complex" and not holds_complex(t):
            raise DifferentiationError(
                f"grad with holomorphic=True needs complex arguments, but argument "
                f"'{param.name}' is {t}", graph.loc,
                hint="pass a complex number (np.complex128(x)), or leave out holomorphic=True")
        if not is_inexact(t):
            raise DifferentiationError(
                f"cannot differentiate with respect to argument '{param.name}' of type "
                f"{param.type}: only float and complex arguments (and arrays of them) have a "
                "gradient", graph.loc,
                hint="pass a float (2.0, not 2) or a float array, or leave this argument out of "
                     "argnums")
    result = graph.outputs[0].type
    if not wrt:
        return
    if output == "real" and result not in (F64, F32):
        hint = ("for the derivative of a holomorphic function, pass holomorphic=True; "
                "else differentiate np.real or np.abs of the result" if holds_complex(result)
                else "")
        raise DifferentiationError(f"cannot take the gradient of a function returning {result}: "
                                   "the result must be a float", graph.loc, hint=hint)
    if output == "complex" and not (isinstance(result, ScalarType) and result.is_complex):
        raise DifferentiationError(
            f"grad with holomorphic=True needs a complex result, but the function returns "
            f"{result}", graph.loc, hint="leave out holomorphic=True for a float result")


def _gradient_by_forward_mode(module: Module, wrt: list[int]) -> str:
    """(value, d/d wrt[0], ...) from one forward-mode pass per argument, tangent 1.0 each."""
    inner = module.entry_graph
    outer = Graph(f"{inner.name}.fwdgrad", [Value(p.name, p.type) for p in inner.params],
                  loc=inner.loc)
    from .builder import GraphBuilder

    e = GraphBuilder(outer, inner.loc)
    value = None
    derivatives = []
    for i in wrt:
        t = inner.params[i].type
        jvp = module.graphs[forward_core(module, inner.name, [i])]
        one = outer.add("const", [], attrs={"value": complex(1.0) if holds_complex(t) else 1.0,
                                            "type": t}, loc=inner.loc, types=[t]).outputs[0]
        result = call(outer, jvp, [*outer.params, one])
        value = item(outer, result, 0)
        derivative = item(outer, result, 1)
        if holds_complex(t) and not holds_complex(value.type):
            derivative = _conjugate_gradient(e, outer, jvp, t, derivative)
        derivatives.append(derivative)
    outer.outputs = [tuple_of(outer, [value, *derivatives])]
    module.graphs[outer.name] = outer
    return outer.name


def _conjugate_gradient(e, outer: Graph, jvp: Graph, t: Type, along_one: Value) -> Value:
    """df/dx - i df/dy of a real-valued f at a complex scalar (JAX's `grad`), from its
    tangents along 1 (`along_one`, df/dx) and along i (a second pass, df/dy)."""
    if not isinstance(t, ScalarType):
        raise DifferentiationError(
            "cannot take this gradient with respect to a complex array yet: it is computed in "
            "forward mode (a gradient of loops that record tapes)", outer.loc,
            hint="pass the real and imaginary parts as two float arrays")
    along_i = item(outer, call(outer, jvp, [*outer.params, e.const(1j, t)]), 1)
    parts = [e.op("cast", d, to=t) for d in (along_one, along_i)]
    return e.op("sub", parts[0], e.op("mul", parts[1], e.const(1j, t)))


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
    pair = call(outer, core, [*outer.params[:n_primals], *given])
    outer.outputs = [tuple_of(outer, [item(outer, pair, 0),
                                      _as_strong_as(outer, pair, 1, pair.type.elements[0])])]
    module.graphs[outer.name] = outer
    return outer.name


def _as_strong_as(graph: Graph, container: Value, index: int, like: Type) -> Value:
    """Element `index` of `container` with the strength of `like`'s scalars, leaf by leaf:
    the tangent of a Python complex is a Python complex, though the forward rules compute
    with complexes as NumPy does (ad/builder.py), making NumPy complexes."""
    element = item(graph, container, index, like=like)
    if not isinstance(like, TupleType):
        return element
    return tuple_of(graph, [_as_strong_as(graph, element, k, e) for k, e in enumerate(like.elements)],
                    element.type)


def pullback(module: Module, wrt: list[int] | None = None) -> str:
    """(one cotangent per argument) for the arguments, then a cotangent `ct` of the result:
    the gradient of <ct, f(args)> (reverse mode), zeros for arguments with no float. With
    `wrt` (float arguments), their cotangents alone, in order: a Jacobian's passes compute
    no cotangent nobody reads (dead array code stays: it may raise)."""
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
    floats = [i for i, p in enumerate(inner.params)
              if differentiable(p.type) and (wrt is None or i in wrt)]
    core = module.graphs[gradient(module, floats, output="any")]
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
    """The sum of the products of `a`'s and `b`'s float and complex leaves, as an f64 (f32
    where every leaf is one), a complex where a leaf is one. Not conjugated: JAX's pullback
    of a complex result is the transpose of the derivative (`ct * f'(z)`, docs/arrays.md)."""
    if isinstance(a.type, TupleType):
        terms = [_inner_product(e, e.op("getitem", a, index=k), e.op("getitem", b, index=k))
                 for k in range(len(a.type.elements))]
    elif is_inexact(a.type):
        product = e.op("mul", a, b)
        if isinstance(product.type, ArrayType):
            product = e.op("reduce", product, kind="sum", axis=None, keepdims=False)
        terms = [product]
    else:
        terms = []
    if not terms:
        return e.const(0.0, F64)
    t = F32 if all(term.type in (F32, strong(F32), C64) for term in terms) else F64
    if any(term.type.is_complex for term in terms):
        t = C64 if t == F32 else C128
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

    kind, wrt, single = spec[:3]
    inner = module.entry_graph
    check_jacobian(kind, inner, wrt, len(spec) > 3 and spec[3])
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


def check_jacobian(kind: str, graph: Graph, wrt: tuple[int, ...], holomorphic: bool) -> None:
    """DifferentiationError (a TypeError) where JAX's `kind` (jacfwd / jacrev) refuses the
    arguments `wrt` or the result, with its messages' substance: `holomorphic=True` needs
    complex arguments and a complex result; else jacfwd takes float arguments (the
    Jacobian of a real-valued function of z is not complex-linear in dz) and jacrev a
    float result (complex arguments allowed: df/dx - i df/dy per element, as `grad`)."""
    result = graph.outputs[0].type
    for i in wrt:
        param = graph.params[i]
        if holomorphic and not holds_complex(param.type):
            raise DifferentiationError(
                f"{kind} with holomorphic=True needs complex arguments, but argument "
                f"'{param.name}' is {param.type}", graph.loc,
                hint="pass a complex array (z.astype(np.complex128)), or leave out "
                     "holomorphic=True")
        if not is_inexact(param.type):
            check_params(graph, [i])  # says why (an int, a container without floats)
        if kind == "jacfwd" and not holomorphic and holds_complex(param.type):
            raise DifferentiationError(
                f"jacfwd needs float arguments, but argument '{param.name}' is {param.type}",
                graph.loc, hint="pass holomorphic=True for a holomorphic function; else use "
                                "jacrev (df/dx - i df/dy of a float result) or jvp")
    if holomorphic and not holds_complex(result):
        raise DifferentiationError(
            f"{kind} with holomorphic=True needs a complex result, but the function returns "
            f"{result}", graph.loc, hint="leave out holomorphic=True for a float result")
    if kind == "jacrev" and not holomorphic and holds_complex(result):
        raise DifferentiationError(
            f"jacrev needs a float result, but the function returns {result}", graph.loc,
            hint="pass holomorphic=True for a holomorphic function; else use jacfwd of float "
                 "arguments, or vjp")


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
