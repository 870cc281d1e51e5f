"""Whole-module facts about a typed Module that backends ask for: which graphs the entry
reaches, which entry parameters compiled code may write through, whether it calls Python."""
from __future__ import annotations

from collections import defaultdict

from ..errors import Loc
from .core import Module
from .ops import OPS
from .types import ArrayType, TupleType, Type

ALLOCATING = frozenset(name for name, op in OPS.items() if "allocates" in op.traits)
"""Ops whose result is a fresh array (no argument's memory flows into it)."""


def reachable_graphs(module: Module) -> list[str]:
    """The entry's name, then every graph it calls directly or not, in discovery order."""
    order, pending = [module.entry], [module.entry]
    while pending:
        for callee in sorted(module.callees(module.graphs[pending.pop()])):
            if callee not in order:
                order.append(callee)
                pending.append(callee)
    return order


def calls_python(module: Module) -> bool:
    """Whether compiled code of `module` may call Python (a `callback`): its effects are seen,
    so a call must never be run twice (a first tier leaving part-way, api.py)."""
    return any(node.op == "callback" for name in reachable_graphs(module)
               for node in module.graphs[name].walk())


def contains_array(t: Type | None) -> bool:
    """Whether a value of type `t` is or holds (in nested tuples) an array."""
    if isinstance(t, TupleType):
        return any(contains_array(e) for e in t.elements)
    return isinstance(t, ArrayType)


def written_parameters(module: Module) -> dict[int, Loc | None]:
    """Entry parameter index -> where an `array_set` may write into one of its arrays.

    An array is an entry argument or one compiled code made (an op with the 'allocates' trait,
    which no argument's memory flows into); arguments reach their uses through
    region parameters and outputs, call arguments and results, tuples, selects,
    retains and any other op with an array result (a view); this follows those
    flows to a fixpoint (per graph, not per call site: it may over-approximate).
    """
    entry = module.entry_graph
    origins: dict = defaultdict(set)
    for i, param in enumerate(entry.params):
        if contains_array(param.type):
            origins[param].add(i)
    flows = defaultdict(list)

    def flow(sources, targets):
        for source, target in zip(sources, targets):
            if contains_array(source.type):
                flows[source].append(target)

    writes = []
    for name in reachable_graphs(module):
        for node in module.graphs[name].walk():
            if node.op == "if":
                for region in node.regions:
                    flow(node.inputs[1:], region.params)
                    flow(region.outputs, node.outputs)
            elif node.op == "while":
                n = node.attrs["n_invariants"]
                cond, body = node.regions
                for region in node.regions:
                    flow(node.inputs, region.params)
                    flow(body.outputs, region.params[n:])
                flow(node.inputs[n:], node.outputs)
                flow(body.outputs, node.outputs)
            elif node.op == "call":
                callee = module.graphs[node.attrs["callee"]]
                flow(node.inputs, callee.params)
                flow(callee.outputs, node.outputs)
            else:
                if node.op in ("array_set", "array_assign", "scatter"):
                    writes.append(node)
                if node.op in ALLOCATING or node.op in ("fused", "rowwise"):
                    continue  # new arrays (a fused kernel reads scalars, a group fused nodes)
                for output in node.outputs:
                    if contains_array(output.type):
                        flow(node.inputs, [output] * len(node.inputs))
    pending = list(origins)
    while pending:
        source = pending.pop()
        for target in flows.get(source, ()):
            if not origins[source] <= origins[target]:
                origins[target] |= origins[source]
                pending.append(target)
    written: dict[int, Loc | None] = {}
    for node in writes:
        for i in sorted(origins.get(node.inputs[0], ())):
            written.setdefault(i, node.loc)
    return written
