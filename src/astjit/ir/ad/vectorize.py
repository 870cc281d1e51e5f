"""A graph rewritten to run on every example of a batch at once (vmap's batching transform).

`vectorized_call(graph, callee, args, batched)` appends to `graph` the nodes of
`callee` applied to `args`, where `batched[i]` says whether args[i] carries a leading
batch axis (the examples along axis 0). A value whose inputs are all unbatched is
computed once, by a copy of its node; a node with a batched input is replaced by what
its op's batching rule (`OpDef.batch`, ops/batching.py) builds. It returns the result
and whether it is batched (for a tuple, a tuple of such flags), or raises
`NotBatchable` (ops/batching.py), having appended nothing, where an op has no rule
for its operands or where running the function once per batch instead of once per
example would change what it does (a write into an array, a tape, a callback).
"""
from __future__ import annotations

from ..core import Graph, Node, Value
from ..ops import OPS
from ..ops.batching import NotBatchable
from ..passes.inline import clone_node
from ..types import ArrayType, ScalarType, TupleType, Type
from .builder import GraphBuilder

REPEATED_EFFECTS = ("tape_new", "tape_push", "tape_get", "tape_len", "tape_clear", "tape_free",
                    "callback")
"""Ops whose effect depends on how often they run, beyond the writes into arrays."""


def vectorized_call(graph: Graph, callee: Graph, args: list[Value],
                    batched: list[bool]) -> tuple[Value, object]:
    """`callee` applied to the batch `args` (batched along axis 0 where `batched` says),
    built in `graph`: (its result, whether batched)."""
    _check_repeatable(callee)
    scratch = Graph(graph.name, loc=callee.loc)
    b = BatchBuilder(scratch, callee.loc)
    b.size = next(b.op("array_dim", a, axis=0) for a, f in zip(args, batched) if f)
    b.values.update((p, (a, f)) for p, a, f in zip(callee.params, args, batched))
    for node in callee.nodes:
        b.emit(node)
    graph.nodes.extend(scratch.nodes)
    return b.values[callee.outputs[0]]


class BatchBuilder(GraphBuilder):
    """Builds the batched nodes (the `Batching` a rule gets, ops/batching.py): the
    rewritten value of each of the function's values and whether it is batched."""

    def __init__(self, graph: Graph, loc):
        super().__init__(graph, loc)
        self.size: Value | None = None
        self.values: dict[Value, tuple[Value, object]] = {}
        self.definitions: dict[Value, Node] = {}

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        """A typed node; a scalar operand is cast to the type the op's rule asks."""
        operand_types, result = OPS[name].rule([v.type for v in inputs], attrs)
        operands = []
        for v, t in zip(inputs, operand_types):
            if v.type != t:
                if not (isinstance(v.type, ScalarType) and isinstance(t, ScalarType)):
                    raise NotBatchable(f"{name} of {v.type} needs a {t}")
                v = super().op("cast", v, to=t)
            operands.append(v)
        return self.graph.add(name, operands, attrs=attrs, loc=self.loc, types=[result]).outputs[0]

    def rebuilt(self, value: Value, base: Value, new_base: Value) -> Value:
        """`value`, a chain of views of `base` (the function's values), made again from
        `new_base`, the batched copy of `base`."""
        if value is base:
            return new_base
        node = self.definitions.get(value)
        if node is None or "view" not in OPS[node.op].traits or OPS[node.op].batch is None:
            raise NotBatchable("an accumulation into an array viewed another way")
        inputs = [self.rebuilt(node.inputs[0], base, new_base),
                  *(self.values[v][0] for v in node.inputs[1:])]
        flags = [True, *(self.values[v][1] for v in node.inputs[1:])]
        ((out, _),) = OPS[node.op].batch(self, node, inputs, flags)
        return out

    def emit(self, node: Node) -> None:
        """`node` for the whole batch: a copy if no input is batched, else its rule's nodes."""
        inputs = [self.values[v] for v in node.inputs]
        for v in node.outputs:
            self.definitions[v] = node
        if not any(_some(flag) for _, flag in inputs):
            mapping = {old: new for old, (new, _) in zip(node.inputs, inputs)}
            self.graph.nodes.append(clone_node(node, mapping))
            self.values.update((v, (mapping[v], False)) for v in node.outputs)
            return
        rule = OPS[node.op].batch if node.op in OPS else None
        if rule is None:
            raise NotBatchable(f"{node.op} has no batching rule")
        results = rule(self, node, [v for v, _ in inputs], [f for _, f in inputs])
        for old, (new, flag) in zip(node.outputs, results):
            if not _batched_type(old.type, new.type, flag):
                raise NotBatchable(f"{node.op} of a batch gives a {new.type}, not a batch of "
                                   f"{old.type}")
            self.values[old] = (new, flag)


def _some(flag) -> bool:
    """Whether a value of flag `flag` has a batched part."""
    return any(map(_some, flag)) if isinstance(flag, tuple) else bool(flag)


def _batched_type(example: Type, t: Type, flag) -> bool:
    """Whether `t` is the type of a batch of `example`s (where `flag`) or `example`."""
    if isinstance(flag, tuple):
        return isinstance(t, TupleType) and len(flag) == len(t.elements) == len(example.elements) \
            and all(map(_batched_type, example.elements, t.elements, flag))
    if not flag:
        return t == example
    dtype = example.dtype if isinstance(example, ArrayType) else example
    ndim = example.ndim if isinstance(example, ArrayType) else 0
    return isinstance(t, ArrayType) and t.ndim == ndim + 1 and t.dtype == dtype


def _check_repeatable(graph: Graph) -> None:
    """Refuse a function whose effects depend on how often it runs: computing a value
    once for every example, not once per example, must not change them."""
    for node in graph.walk():
        opdef = OPS.get(node.op)
        if opdef and ("writes" in opdef.traits and opdef.batch is None
                      or node.op in REPEATED_EFFECTS):
            raise NotBatchable(f"{node.op}: an effect per example")
