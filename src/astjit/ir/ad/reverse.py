"""Reverse-mode automatic differentiation: a typed graph in, a typed gradient graph out.

`reverse_graph(module, name, wrt)` adds to `module` a graph `{name}.vjp[i,j,...]`
with graph `name`'s parameters, returning

    tuple(value, d value / d param[wrt[0]], ..., d value / d param[wrt[-1]])

— the original float output first, then one adjoint per index in `wrt`, each of
its parameter's type. Complex values have adjoints under JAX's convention
(docs/arrays.md: gradients): the adjoint of a complex w = u + iv is dL/du - i dL/dv,
so a complex result seeded with 1 gives f'(z) where f is holomorphic. The input module
is typed and optimized (calls left are recursive); the result verifies, and is meant to
be optimized again.

The scheme (no CFG; structured regions throughout):

1. Activity analysis (`activity.py`) finds the float values that depend on the
   `wrt` parameters, and rejects ops on them that have no derivative rule.
2. The reverse sweep (`sweep.py`) copies the graph's forward computation,
   seeds the output's adjoint with 1.0, and walks the nodes backwards applying
   each op's VJP rule, summing adjoints over paths. `if` becomes a backward
   `if` on the same condition whose regions recompute their branch and sweep
   it back; `while` is taped forward and swept back by a counted loop (`loops.py`).
3. A `call` of a recursive graph F is differentiated by `call F.vjp(args, g)`:
   a helper graph with F's parameters plus the output adjoint `g`, returning the
   adjoints of all F's parameters (zero for non-floats), built the same way with
   every float parameter active. Helpers of a whole call cycle are built once
   each (mutual recursion), memoized by name within one `reverse_graph` call.
   A helper only repeats what the call it differentiates ran, so what it
   recomputes and does not read is dropped (`recomputation.py`).

Array gradients returned together are distinct arrays: one that the sweep did
not make for its parameter alone (it may be the array of another gradient,
e.g. both operands' share of `x + y`) is copied (`* 1.0`, exact, which fusion
merges into the kernel that made it).

Nothing is added to `module` unless the whole transform succeeds.
"""
from __future__ import annotations

from ..core import Graph, Module, Value
from ..types import ArrayType, ScalarType, TupleType
from .activity import active_values, is_differentiable
from .builder import GraphBuilder
from .errors import NotDifferentiableError
from .recomputation import drop_unused_recomputation
from .sweep import Differentiator
from .values import adjoint_or_zero, fresh_copies

__all__ = ["NotDifferentiableError", "reverse_graph", "vjp_graph_name"]


def vjp_graph_name(name: str, wrt: list[int]) -> str:
    """The name `reverse_graph` gives the gradient graph of graph `name`."""
    return f"{name}.vjp[{','.join(map(str, wrt))}]"


def reverse_graph(module: Module, name: str, wrt: list[int]) -> str:
    """Add the graph of (value, gradients wrt params `wrt`) of graph `name`; return its name.

    Raises `NotDifferentiableError` when the output is not a float scalar, a
    `wrt` parameter is not a float, or an op on an active value has no
    derivative rule (the error names the op and carries its location).
    """
    graph = module.graphs[name]
    _check_signature(graph, wrt)
    builder = _VjpBuilder(module)
    builder.gradient_graph(graph, wrt, vjp_graph_name(name, wrt))
    module.graphs.update(builder.built)
    return vjp_graph_name(name, wrt)


def _check_signature(graph: Graph, wrt: list[int]) -> None:
    output = graph.outputs[0].type
    if not (isinstance(output, ScalarType) and (output.is_float or output.is_complex)):
        raise NotDifferentiableError(
            f"cannot differentiate @{graph.name}: its result is {output}, not a float or a "
            "complex", None, graph.loc)
    for i in wrt:
        if not -len(graph.params) <= i < len(graph.params):
            raise IndexError(f"@{graph.name} has no parameter {i}")
        param = graph.params[i]
        if not is_differentiable(param.type) or isinstance(param.type, TupleType):
            raise NotDifferentiableError(
                f"cannot differentiate @{graph.name} with respect to parameter "
                f"'{param.name or i}' of type {param.type}: only float and complex parameters "
                "(and arrays of them) have a gradient", None, graph.loc)


class _VjpBuilder:
    """Builds the gradient graph of one request and the vjp graphs of the callees it needs."""

    def __init__(self, module: Module):
        self.module = module
        self.built: dict[str, Graph] = {}
        """The graphs built so far, by name; added to the module once all succeed."""

    def gradient_graph(self, graph: Graph, wrt: list[int], name: str) -> None:
        """(value, adjoints of params `wrt`) of `graph`, for its own parameters."""
        params = fresh_copies(graph.params)
        gradient = Graph(name, params, loc=graph.loc)
        self.built[name] = gradient
        differentiator = Differentiator(active_values(graph, [graph.params[i] for i in wrt]),
                                        self.callee_vjp)
        e = GraphBuilder(gradient, graph.loc)
        seed = e.const(1.0, graph.outputs[0].type)
        sweep = differentiator.sweep(graph, gradient, params, [seed])
        value = sweep.primal[graph.outputs[0]]
        gradients = [adjoint_or_zero(e, sweep.adjoints.get(graph.params[i]), params[i])
                     for i in wrt]
        arrays = [k for k, i in enumerate(wrt) if isinstance(params[i].type, ArrayType)]
        for k in arrays[1:]:
            param = graph.params[wrt[k]]
            if wrt[k] in wrt[:k] or (gradients[k] is sweep.adjoints.get(param)
                                     and param not in sweep.exclusive):
                # it may share its array with another gradient (`sum_to_like` of one g):
                # the caller gets arrays of its own (an exact copy, fused with its maker)
                gradients[k] = e.op("mul", gradients[k], e.const(1.0, params[wrt[k]].type.dtype))
        gradient.outputs = [e.op("tuple", value, *gradients)]

    def callee_vjp(self, callee: str) -> str:
        """The name of `callee`'s vjp graph: (callee's params..., g) -> adjoints of all params."""
        name = f"{callee}.vjp"
        if name in self.built:
            return name
        graph = self.module.graphs[callee]
        params = fresh_copies(graph.params)
        output_adjoint = Value("$g", graph.outputs[0].type)
        vjp = Graph(name, params + [output_adjoint], loc=graph.loc)
        self.built[name] = vjp  # before the sweep: the callee may call itself
        differentiator = Differentiator(active_values(graph, graph.params), self.callee_vjp)
        _, adjoints = differentiator.sweep_region(graph, vjp, params, [output_adjoint])
        e = GraphBuilder(vjp, graph.loc)
        vjp.outputs = [e.op("tuple", *[adjoint_or_zero(e, adjoint, p)
                                       for adjoint, p in zip(adjoints, params)])]
        drop_unused_recomputation(vjp, deep=True)  # the call it differentiates ran it all
        return name
