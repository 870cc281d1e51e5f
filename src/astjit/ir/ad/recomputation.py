"""Recomputed code: dropping the copies nothing reads, marking the ones the backward repeats.

Reverse mode recomputes instead of storing: a backward `if` recomputes its
branch (`sweep.backward_branch`), a backward loop recomputes the body of each
iteration (`loops.py`), a callee's vjp graph recomputes the callee. Such a
recomputation repeats, on the same values, work that also runs elsewhere. When
its results are unused it is dead code, yet dead code elimination
(`passes.dce`) keeps whatever may raise or not terminate (`sin`, `/`, a
`while`, a `call`). The transform knows where the other copy runs, so:

- `drop_unused_recomputation` cleans a region that repeats work which ran, and
  returned, before it on the same operands (the forward copy of the `if`, of
  the loop body, the call): every node whose results are unused goes, whatever
  its effects, but those that touch memory (tape and array ops) stay. Backward branches
  and vjp graphs are cleaned throughout; a backward loop's body only at its top
  level, for the forward copy counts on the nodes it keeps (next point).
- `RECOMPUTED` marks a structural node (`while`, `if`, `call`) of a taped
  loop's forward body whose twin the backward loop's body keeps: the backward
  loop runs the same work again, every iteration, from the same values, so the
  forward copy matters only for its results. A pass may delete a marked node
  whose results are unused, whatever its effects (an error it would raise, its
  twin raises in the backward sweep). When only the gradient is wanted, that is
  what computed the function's value: the inner loops of `newton_sum`.

Every piece of work thus still runs at least once.
"""
from __future__ import annotations

from ..core import STRUCTURAL_OPS, Graph, Module, Node, Value
from ..ops import OPS
from ..passes.dce import eliminate_dead_code
from ..passes.effects import has_effects

RECOMPUTED = "recomputed"
"""Attribute of a structural node: the backward sweep repeats its work and keeps that
copy, so this one may be deleted, effects and all, when its results are unused."""


def drop_unused_recomputation(graph: Graph, *, deep: bool) -> None:
    """Remove from `graph` every node whose results are unused and that touches no memory,
    in its regions too when `deep`. All `graph` recomputes must have run before it."""
    eliminate_dead_code(Module({graph.name: graph}, graph.name))  # unused results of regions
    _drop_unused(graph, set(graph.outputs), deep)


def mark_recomputed(node: Node) -> None:
    """Mark `node`, of a taped loop's forward body, as repeated by the backward loop.

    Only structural ops with effects get the mark: other ops go when unused
    anyway, and a leaf op's attributes are its operands (the interpreter and
    constant folding pass them on).
    """
    if node.op in STRUCTURAL_OPS and has_effects(node) and not _touches_memory(node):
        node.attrs[RECOMPUTED] = True


def _drop_unused(graph: Graph, live: set[Value], deep: bool) -> None:
    kept: list[Node] = []
    for node in reversed(graph.nodes):
        if any(out in live for out in node.outputs) or _touches_memory(node):
            if deep:
                for region in node.regions:
                    _drop_unused(region, set(region.outputs), deep)
            kept.append(node)
            live.update(node.inputs)
    graph.nodes = kept[::-1]


def _touches_memory(node: Node) -> bool:
    """Whether `node`, or a node in its regions, is an op that is not pure other than
    `raise_if` (an error check, which the earlier run made already): the tape and array
    ops, whose effects a repetition does not undo or cover."""
    if node.op in OPS:
        return "pure" not in OPS[node.op].traits and node.op != "raise_if"
    return any(_touches_memory(inner) for region in node.regions for inner in region.nodes)
