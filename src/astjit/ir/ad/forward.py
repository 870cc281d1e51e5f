"""Forward-mode automatic differentiation (JVP) as a graph transform on typed IR.

`forward_graph(module, name, tangent_params)` adds to `module` a graph that
takes graph `name`'s parameters followed by one tangent per parameter in
`tangent_params`, and returns ``tuple(value, tangent)``: the original result
and its directional derivative, of the same type (a tuple result has a tuple
tangent, with 0 / False for its int and bool elements; an int or bool result
has a zero tangent).

The new graph is a copy of the original in which each active value (see
`forward_activity.py`) is followed by the nodes computing its tangent (see
`forward_rules.py`). The structural ops are handled here:

- ``if``: the active captured values' tangents are captured too; each region
  returns its outputs, then the tangents of the active ones.
- ``while``: the tangents of active invariants follow the invariants, those of
  active carried values follow the carried values; ``cond`` ignores them,
  ``body`` updates them.
- ``call`` of a (recursive) graph F with an active argument becomes a call of
  ``F.jvp``, made once per module, which takes F's parameters followed by a
  tangent for each of them that can carry one and returns ``(value, tangent)``.

Forward mode handles every op, tapes included, so it differentiates reverse-mode
gradient graphs too: forward-over-reverse gives second derivatives.
"""
from __future__ import annotations

from ..core import Graph, Module, Node, Value
from ..ops import OPS
from ..passes.inline import clone_node
from ..types import TapeType, TupleType
from .builder import GraphBuilder
from .errors import NotDifferentiableError
from .forward_activity import SHARING_OPS, active_values, differentiable, written_memory
from .forward_rules import leaf_tangent, zeros_like

__all__ = ["NotDifferentiableError", "forward_graph", "jvp_graph_name"]


def forward_graph(module: Module, name: str, tangent_params: list[int]) -> str:
    """Add the JVP graph of typed graph `name` for tangents of `tangent_params`; return its name.

    The new graph's parameters are `name`'s, then one tangent per index of
    `tangent_params` (each a distinct parameter with a float in it: a float, a float
    array, a container of them); its output is ``tuple(value, tangent)``.
    """
    graph = module.graphs[name]
    if len(set(tangent_params)) != len(tangent_params):
        raise ValueError(f"tangent_params {tangent_params} names a parameter twice")
    for i in tangent_params:
        param = graph.params[i]
        if not differentiable(param.type) or isinstance(param.type, TapeType):
            raise NotDifferentiableError(
                f"cannot differentiate @{name} with respect to parameter '{param.name}' "
                f"of type {param.type}: only floats, float arrays and containers of them "
                "have a tangent", loc=graph.loc)
    jvp_name = jvp_graph_name(name, tangent_params)
    _build_jvp(module, graph, jvp_name, [graph.params[i] for i in tangent_params])
    return jvp_name


def jvp_graph_name(name: str, tangent_params: list[int]) -> str:
    """The name `forward_graph` gives the JVP graph of graph `name`."""
    return f"{name}.jvp[{','.join(map(str, tangent_params))}]"


def callee_jvp(module: Module, callee: str) -> str:
    """The name of ``callee.jvp`` (made on first use): it takes a tangent for each parameter
    of `callee` that can carry one."""
    jvp_name = f"{callee}.jvp"
    if jvp_name not in module.graphs:
        graph = module.graphs[callee]
        params = [p for p in graph.params if differentiable(p.type)]
        _build_jvp(module, graph, jvp_name, params)
    return jvp_name


def _build_jvp(module: Module, graph: Graph, jvp_name: str, tangent_params: list[Value]) -> None:
    """Add graph `jvp_name`: `graph`'s params, then tangents of `tangent_params`, -> (value, tangent).

    The graph is registered before its body is built, so recursive calls can name it.
    """
    transform = _Transform(module, active_values(graph, tangent_params), written_memory(graph))
    jvp = Graph(jvp_name, loc=graph.loc)
    jvp.params = transform.params(graph.params, tangent_params)
    _zero_tangents_of_other_params(graph, jvp, transform)
    module.graphs[jvp_name] = jvp
    try:
        transform.body(graph, jvp)
    except Exception:
        del module.graphs[jvp_name]
        raise
    out = graph.outputs[0]
    pair = GraphBuilder(jvp, graph.loc).op("tuple", transform.mapping[out], transform.tangent(out, jvp))
    jvp.outputs = [pair]


def _zero_tangents_of_other_params(graph: Graph, jvp: Graph, transform: _Transform) -> None:
    """A parameter the analysis made active without giving it a tangent (an array an active
    value is written into) starts with a zero tangent; a tape cannot."""
    e = GraphBuilder(jvp, graph.loc)
    for param in graph.params:
        if param in transform.active and param not in transform.tangents:
            if isinstance(param.type, TapeType):
                raise NotDifferentiableError(
                    f"parameter '{param.name}' of @{graph.name} ({param.type}) would need a "
                    "tangent: a tape passed in as a parameter cannot be differentiated",
                    loc=graph.loc)
            transform.tangents[param] = zeros_like(e, transform.mapping[param])


def writes_into_arrays(graph: Graph) -> bool:
    """Whether `graph` may write into an array: a write, or a call (its callee may)."""
    return any(node.op == "call" or node.op in OPS and "writes" in OPS[node.op].traits
               for node in graph.walk())


def _tangent_value(original: Value) -> Value:
    """A fresh Value for the tangent of `original`: its type, its name with a 'd' before."""
    return Value(f"d{original.name}" if original.name else "", original.type)


class _Transform:
    """Copies a function graph's nodes into a new graph, with tangent nodes after active values.

    `mapping` takes each original value to its copy, `tangents` each active
    original value to its tangent in the new graph; Values are unique, so one
    map of each serves the function and all its regions. `written`: the values whose
    memory the graph may write into (`written_memory`), so that a new array made from
    or into one of them does not share its tangent with another array (forward_rules.py).
    """

    def __init__(self, module: Module, active: set[Value], written: set[Value]):
        self.module = module
        self.active = active
        self.written = written
        self.mapping: dict[Value, Value] = {}
        self.tangents: dict[Value, Value] = {}

    def params(self, originals: list[Value], with_tangents: list[Value]) -> list[Value]:
        """Copies of `originals`, then a tangent parameter for each of `with_tangents`."""
        copies = [Value(p.name, p.type) for p in originals]
        self.mapping.update(zip(originals, copies))
        tangents = [_tangent_value(p) for p in with_tangents]
        self.tangents.update(zip(with_tangents, tangents))
        return copies + tangents

    def tangent(self, value: Value, graph: Graph) -> Value:
        """The tangent of original `value`: its tangent if active, else zeros added to `graph`."""
        if value in self.tangents:
            return self.tangents[value]
        return zeros_like(GraphBuilder(graph, graph.loc), self.mapping[value])

    def body(self, source: Graph, target: Graph) -> None:
        """Append to `target` the copy of `source`'s nodes with their tangents."""
        for node in source.nodes:
            if not any(v in self.active for v in node.inputs + node.outputs):
                target.nodes.append(clone_node(node, self.mapping))
            elif node.op == "if":
                self.if_node(node, target)
            elif node.op == "while":
                self.while_node(node, target)
            elif node.op == "call":
                self.call_node(node, target)
            elif node.regions:
                raise NotDifferentiableError(f"forward mode does not handle '{node.op}'",
                                             node.op, node.loc)
            else:
                self.leaf_node(node, target)

    # ---- leaf ops --------------------------------------------------------------------

    def leaf_node(self, node: Node, target: Graph) -> None:
        """The copy of a leaf op, then its result's tangent (a freed tape frees its tangent,
        a write into an active array writes into its tangent)."""
        copy = clone_node(node, self.mapping)
        target.nodes.append(copy)
        e = GraphBuilder(target, node.loc)
        if node.op == "tape_free":  # the tangent tape goes when its tape does
            e.op("tape_free", self.tangents[node.inputs[0]])
            return
        out = node.outputs[0]
        writes = "writes" in OPS[node.op].traits and node.inputs[0] in self.active
        if out not in self.active and not writes:
            return
        tangents = [self.tangents.get(v) for v in node.inputs]
        fresh = node.op not in SHARING_OPS and not self.written.isdisjoint([out, *node.inputs])
        tangent = leaf_tangent(e, node, copy.inputs, copy.outputs[0], tangents, fresh=fresh)
        if out in self.active:
            self.tangents[out] = tangent

    # ---- structural ops ------------------------------------------------------------------

    def if_node(self, node: Node, target: Graph) -> None:
        """`if` capturing the active values' tangents too, returning the active outputs' tangents."""
        captured = node.inputs[1:]
        active_in = [k for k, v in enumerate(captured) if v in self.active]
        active_out = [k for k, v in enumerate(node.outputs) if v in self.active]
        inputs = [self.mapping[v] for v in node.inputs]
        inputs += [self.tangents[captured[k]] for k in active_in]
        layout = [(range(len(captured)), False), (active_in, True)]
        regions = [self.region(region, layout, active_out) for region in node.regions]
        self.append_structural(node, target, inputs, regions, active_out, dict(node.attrs))

    def while_node(self, node: Node, target: Graph) -> None:
        """`while` with the active invariants' and carried values' tangents after each group."""
        n_invariants = node.attrs["n_invariants"]
        invariants, carried = node.inputs[:n_invariants], node.inputs[n_invariants:]
        active_inv = [j for j, v in enumerate(invariants) if v in self.active]
        active_carried = [k for k, v in enumerate(node.outputs) if v in self.active]
        inputs = [self.mapping[v] for v in invariants]
        inputs += [self.tangents[invariants[j]] for j in active_inv]
        inputs += [self.mapping[v] for v in carried]
        inputs += [self.tangent(carried[k], target) for k in active_carried]
        layout = [(range(n_invariants), False), (active_inv, True),
                  (range(n_invariants, len(node.inputs)), False),
                  ([n_invariants + k for k in active_carried], True)]
        cond, body = node.regions
        regions = [self.region(cond, layout, []), self.region(body, layout, active_carried)]
        attrs = {**node.attrs, "n_invariants": n_invariants + len(active_inv)}
        self.append_structural(node, target, inputs, regions, active_carried, attrs)

    def region(self, source: Graph, layout: list[tuple], tangent_outputs: list[int]) -> Graph:
        """A copy of region `source` with extra tangent parameters and outputs.

        `layout` lists the new parameters in order as (positions, is_tangent)
        groups; the outputs are the copied ones, then the tangents of
        `tangent_outputs`.
        """
        region = Graph(source.name, loc=source.loc)
        for positions, is_tangent in layout:
            group = [source.params[k] for k in positions]
            region.params += (self.params([], group) if is_tangent else self.params(group, []))
        self.body(source, region)
        outputs = [self.mapping[v] for v in source.outputs]
        region.outputs = outputs + [self.tangent(source.outputs[k], region)
                                    for k in tangent_outputs]
        return region

    def append_structural(self, node: Node, target: Graph, inputs: list[Value],
                          regions: list[Graph], tangent_outputs: list[int], attrs: dict) -> None:
        """Append the rebuilt `if` / `while`: the copied outputs, then the listed ones' tangents."""
        outputs = [Value(v.name, v.type) for v in node.outputs]
        self.mapping.update(zip(node.outputs, outputs))
        for k in tangent_outputs:
            self.tangents[node.outputs[k]] = _tangent_value(node.outputs[k])
            outputs.append(self.tangents[node.outputs[k]])
        target.nodes.append(Node(node.op, inputs, outputs, attrs, regions, node.loc))

    def call_node(self, node: Node, target: Graph) -> None:
        """A call with an active argument: call ``callee.jvp`` and take (value, tangent) apart."""
        out = node.outputs[0]
        if out not in self.active:
            target.nodes.append(clone_node(node, self.mapping))
            return
        callee = self.module.graphs[node.attrs["callee"]]
        jvp_name = callee_jvp(self.module, callee.name)
        args = [self.mapping[v] for v in node.inputs]
        args += [self.tangent(v, target) for v, p in zip(node.inputs, callee.params)
                 if differentiable(p.type)]
        pair = target.add("call", args, attrs={"callee": jvp_name}, loc=node.loc,
                          types=[TupleType((out.type, out.type))]).outputs[0]
        e = GraphBuilder(target, node.loc)
        self.mapping[out] = e.op("getitem", pair, index=0)
        self.tangents[out] = e.op("getitem", pair, index=1)
