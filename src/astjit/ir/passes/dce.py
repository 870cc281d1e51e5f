"""Dead code elimination: remove what computes values nobody uses, and nothing else.

Walking each graph backwards from its outputs:

- a node without effects (see `effects.py`) whose outputs are unused goes;
- an `if` loses its unused outputs (and the matching region outputs), then its
  captured inputs that neither region uses; with no outputs left and no
  effects inside, it goes;
- a `while` keeps the carried values that are used after the loop, by its
  condition, or by the body's computation of another kept carried value
  (a fixed point), and the invariants some region uses; the loop itself stays,
  as it may not terminate;
- `call` nodes stay (the callee may raise), and so do function parameters;
- a `fused` node's kernel loses the scalar work no kernel output reads, and so do
  the kernels of a `rowwise` node's members, which stay (each has its stage); then the
  `fused` node loses the inputs its kernel no longer reads, where another input has
  their length on each of their axes (the iteration space stays the same);
- a write into memory of the invocation's own that nothing reads afterwards goes, when it
  raises nothing (`_unread_write`): reverse mode accumulates adjoints into new arrays
  (`add_into`, `add_at`), and forward mode over it computes the gradient it does not return;
- except that a node marked `recomputed` by reverse mode (`ad.recomputation`) goes when its
  results are unused, whatever its effects: the backward loop runs the same work again;
  and so does a new array of floats whose only effect is a broadcasting check that the
  graph's symbolic shapes prove passes (`effects.only_computes`).

Regions are cleaned after their node's outputs are pruned, so everything that
only fed a removed output goes too.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..core import Graph, Module, Node, Value
from ..kernels import fused_attrs
from ..ops.adjoints import ACCUMULATING
from ..shape_algebra import ONE
from ..symbolic_shapes import Shapes, symbolic_shapes
from ..types import ArrayType
from .effects import has_effects, only_computes

FRESH = frozenset({"array_new", "array_new_like", "array_copy"})
"""Ops whose array result is new memory, which only the graph's own nodes see."""


def eliminate_dead_code(module: Module) -> Module:
    """Remove dead code from every graph of `module` and all their regions."""
    for graph in module.graphs.values():
        _dce_graph(graph)
    return module


def _dce_graph(graph: Graph) -> None:
    live: set[Value] = set(graph.outputs)
    kept: list[Node] = []
    shapes: list[Shapes] = []

    def shapes_of_graph() -> Shapes:
        """The symbolic shapes of `graph` as it was (the dead nodes shape nothing that
        stays), found once a node needs them."""
        if not shapes:
            shapes.append(symbolic_shapes(graph))
        return shapes[0]

    owner = own_memory(graph)
    read = {owner[v] for v in graph.outputs if v in owner}  # memory a later node reads

    def stays(node: Node) -> bool:
        if any(out in live for out in node.outputs):
            return True
        if _unread_write(node, owner, read):
            return False
        return _must_run(node) and not only_computes(node, shapes_of_graph)

    for node in reversed(graph.nodes):
        if node.op == "if":
            _dce_if(node, live)
        elif node.op == "while":
            _dce_while(node, live)
        elif node.op == "fused":  # all region outputs are results: clean inside
            _dce_graph(node.regions[0])
            _drop_unread_inputs(node, shapes_of_graph)
        elif node.op == "rowwise":  # each member has its stage (kernels.RowGroup): kept
            for member in node.regions[0].nodes:
                if member.op == "fused":
                    _dce_graph(member.regions[0])
        if stays(node):
            kept.append(node)
            live.update(node.inputs)
            read.update(owner[v] for v in memory_reads(node) if v in owner)
    graph.nodes = kept[::-1]


def own_memory(graph: Graph) -> dict[Value, Value]:
    """Each array of `graph` in the memory of a new array it makes (`FRESH`), one of the
    views of it an `array_view` takes, or the accumulator a write returns -> that new
    array. Any other use of one (a read, a call, a region's) counts as reading it."""
    owner: dict[Value, Value] = {}
    for node in graph.nodes:
        if node.op in FRESH and isinstance(node.outputs[0].type, ArrayType):
            owner[node.outputs[0]] = node.outputs[0]
        elif (node.op in ACCUMULATING or node.op == "array_view") and node.inputs[0] in owner:
            owner[node.outputs[0]] = owner[node.inputs[0]]
    return owner


def memory_reads(node: Node) -> list[Value]:
    """The inputs `node` reads (or passes on) as arrays: all but the accumulator a write
    writes into and its view, and the array a view is taken of."""
    if node.op in ("add_into", "zero_into"):
        return node.inputs[2:]
    if node.op in ACCUMULATING or node.op == "array_view":
        return node.inputs[1:]
    return node.inputs


def _unread_write(node: Node, owner: dict[Value, Value], read: set[Value]) -> bool:
    """A write that raises nothing into memory of `graph`'s own no later node reads."""
    if node.op not in ACCUMULATING or node.inputs[0] not in owner:
        return False
    target = owner[node.inputs[0]]
    if node.op in ("add_into", "zero_into"):  # view += g: one shape by construction
        return target not in read and owner.get(node.inputs[1]) == target
    checked = node.attrs.get("boundscheck", True) and not node.attrs.get("inbounds")
    return target not in read and not checked


def _dce_if(node: Node, live: set[Value]) -> None:
    """Prune the unused outputs of an `if`, clean its regions, drop captures they don't use."""
    keep = [i for i, out in enumerate(node.outputs) if out in live]
    node.outputs = [node.outputs[i] for i in keep]
    for region in node.regions:
        region.outputs = [region.outputs[i] for i in keep]
        _dce_graph(region)
    unused = {k for k in range(len(node.inputs) - 1)
              if not any(_uses(region, region.params[k]) for region in node.regions)}
    drop_region_params(node, unused, first_input=1)


def _dce_while(node: Node, live: set[Value]) -> None:
    """Drop the dead carried values of a loop, clean its regions, drop unused invariants."""
    n_invariants = node.attrs["n_invariants"]
    cond, body = node.regions
    slots = _live_slots(node, live)
    node.outputs = [out for i, out in enumerate(node.outputs) if i in slots]
    body.outputs = [out for i, out in enumerate(body.outputs) if i in slots]
    _dce_graph(cond)
    _dce_graph(body)
    dead_carried = {n_invariants + i for i in range(len(node.inputs) - n_invariants)
                    if i not in slots}
    unused_invariants = {k for k in range(n_invariants)
                         if not any(_uses(region, region.params[k]) for region in node.regions)}
    drop_region_params(node, dead_carried | unused_invariants, first_input=0)
    node.attrs["n_invariants"] = n_invariants - len(unused_invariants)


def _live_slots(node: Node, live: set[Value]) -> set[int]:
    """The carried slots of a `while` that must stay: the liveness fixed point."""
    n_invariants = node.attrs["n_invariants"]
    cond, body = node.regions
    carried = range(len(node.outputs))
    read_by_cond = _needed(cond, cond.outputs)
    slots = {i for i in carried
             if node.outputs[i] in live or cond.params[n_invariants + i] in read_by_cond}
    while True:
        read_by_body = _needed(body, [body.outputs[i] for i in slots])
        grown = slots | {i for i in carried if body.params[n_invariants + i] in read_by_body}
        if grown == slots:
            return slots
        slots = grown


def _needed(graph: Graph, outputs: list[Value]) -> set[Value]:
    """The values `graph` may read to compute `outputs` and run its effects.

    Conservative (a nested `if` needs all its inputs), so it covers what DCE keeps.
    """
    needed = set(outputs)
    for node in reversed(graph.nodes):
        if _must_run(node) or any(out in needed for out in node.outputs):
            needed.update(node.inputs)
    return needed


def _must_run(node: Node) -> bool:
    """Whether `node` stays even when its results are unused: it has effects, and is not
    work that reverse mode repeats in a backward loop (`ad.recomputation.RECOMPUTED`)."""
    return has_effects(node) and not node.attrs.get("recomputed", False)


def _uses(graph: Graph, value: Value) -> bool:
    """Whether `graph`'s own nodes or outputs read `value`."""
    return value in graph.outputs or any(value in node.inputs for node in graph.nodes)


def drop_region_params(node: Node, positions: set[int], first_input: int) -> None:
    """Remove region parameter `k` of each region, and the node input that feeds it."""
    for region in node.regions:
        region.params = [p for k, p in enumerate(region.params) if k not in positions]
    fed = node.inputs[first_input:]
    node.inputs = node.inputs[:first_input] + [v for k, v in enumerate(fed) if k not in positions]


def _drop_unread_inputs(node: Node, shapes_of_graph: Callable[[], Shapes]) -> None:
    """Drop the inputs of `node` (a `fused` node) that its kernel does not read: a scalar
    always, an array where another array input has, on each of the array's axes (aligned
    at the end), the same symbolic length, or the array has length 1 there; so the
    broadcast iteration space is the same without it. The inputs an output may take the
    buffer of or is written into stay."""
    kernel, spec = node.regions[0], fused_attrs(node)
    read = {v for member in kernel.walk() for v in member.inputs} | set(kernel.outputs)
    unread = [k for k, p in enumerate(kernel.params) if p not in read
              and k not in (spec.reuse or ()) and k != spec.into]
    if not unread:
        return
    dropped: set[int] = set()
    for k in unread:
        if isinstance(node.inputs[k].type, ArrayType) and not _covered(
                node, k, dropped, shapes_of_graph()):
            continue
        dropped.add(k)
    if not dropped:
        return
    kept = [k for k in range(len(node.inputs)) if k not in dropped]
    renumber = {old: new for new, old in enumerate(kept)}
    node.inputs = [node.inputs[k] for k in kept]
    kernel.params = [kernel.params[k] for k in kept]
    node.attrs["fused"] = dataclasses.replace(
        spec, plan=tuple(spec.plan[k] for k in kept),
        ones=None if spec.ones is None else tuple(spec.ones[k] for k in kept),
        reuse=None if spec.reuse is None else tuple(
            None if j is None else renumber[j] for j in spec.reuse),
        into=None if spec.into is None else renumber[spec.into])


def _covered(node: Node, k: int, dropped: set[int], shapes: Shapes) -> bool:
    """Whether another array input of `node` (not in `dropped`) has input `k`'s length on
    each of its axes but those of length 1."""
    u = node.inputs[k]
    if u not in shapes:
        return False
    for j, w in enumerate(node.inputs):
        if j == k or j in dropped or not isinstance(w.type, ArrayType) or w not in shapes \
                or w.type.ndim < u.type.ndim:
            continue
        lead = w.type.ndim - u.type.ndim
        if all(d == ONE or d == shapes[w][lead + a] for a, d in enumerate(shapes[u])):
            return True
    return False
