"""Reverse mode through a `while` loop whose trip count is known only at run time.

The forward copy of a loop with active carried values records, on a tape, the
carried values at the entry of each iteration, and counts the iterations
(`emit_taped_while`):

    tape0 = tape_new {element: tuple<carried types>}
    c.n, tape, trips = while [inv] (c.0, tape0, 0) {
      cond (inv, c, tape, trips) { the original condition }
      body (inv, c, tape, trips) {
        tape.1 = tape_push tape, (tuple c);  trips.1 = trips + 1
        the original body;  yield c.1, tape.1, trips.1
      }
    }

The backward loop runs `trips` times, newest iteration first (`backward_while`).
Each iteration reads its entry values back from the tape, recomputes the body
forward from them and sweeps it back, turning the adjoints of the carried
values at the iteration's exit into those at its entry, and adding the
invariants' share to their accumulators:

    k, dc, dinv = while [tape, inv] (trips, dc.n, 0) {
      cond { k > 0 }
      body { k.1 = k - 1;  c = tape_get tape, k.1;  recompute and sweep the body
             from (inv, c) with adjoints dc;  yield k.1, dc at entry, dinv + its share }
    }
    tape_free tape

`dc` then holds the adjoints of the loop's initial carried values, `dinv`
those of the invariants. Only active carried slots and invariants get
adjoint slots; the tape keeps every carried value, which the recomputation
reads. The condition region is never differentiated (it yields a bool). A
nested loop is handled by the same scheme inside the recomputed body: it gets
its own tape, freed at the end of each backward iteration.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core import Graph, Node, Value
from ..passes.inline import clone_graph
from ..types import I64, TapeType, TupleType
from .emit import Emitter
from .values import add_adjoints, adjoint_name, adjoint_or_zero, zero

if TYPE_CHECKING:
    from .adjoints import RegionSweep

TAPE, TRIPS, REMAINING = "$tape", "$trips", "$k"
"""Names of the values the transform adds to loops."""


def carries_active(node: Node, active: set[Value]) -> bool:
    """Whether a `while` has an active carried value, and so needs a tape."""
    n_invariants = node.attrs["n_invariants"]
    return any(p in active for p in node.regions[1].params[n_invariants:])


# ---- the forward loop, taped ----------------------------------------------------------------

def emit_taped_while(sweep: RegionSweep, node: Node) -> None:
    """Append the forward copy of `node` that tapes its carried values and counts its trips."""
    n_invariants = node.attrs["n_invariants"]
    carried = node.inputs[n_invariants:]
    e = Emitter(sweep.dst, node.loc)
    tape = e.op("tape_new", element=TupleType(tuple(v.type for v in carried)))
    trips = e.const(0, I64)
    cond, body = node.regions
    cond_copy = clone_graph(cond)
    cond_copy.params += [Value(TAPE, tape.type), Value(TRIPS, I64)]
    regions = [cond_copy, _taped_body(body, tape.type, n_invariants)]
    inputs = [sweep.primal[v] for v in node.inputs] + [tape, trips]
    loop = sweep.dst.add("while", inputs, len(node.outputs) + 2,
                         attrs={"n_invariants": n_invariants}, regions=regions, loc=node.loc,
                         names=[v.name for v in node.outputs] + [TAPE, TRIPS],
                         types=[v.type for v in node.outputs] + [tape.type, I64])
    sweep.primal.update(zip(node.outputs, loop.outputs))
    sweep.tapes[node] = (loop.outputs[-2], loop.outputs[-1])


def _taped_body(body: Graph, tape_type: TapeType, n_invariants: int) -> Graph:
    """A copy of `body` that first pushes its carried values onto the tape and counts."""
    copy = clone_graph(body)
    tape, trips = Value(TAPE, tape_type), Value(TRIPS, I64)
    taped = Graph(body.name, copy.params + [tape, trips], loc=body.loc)
    e = Emitter(taped, body.loc)
    pushed = e.op("tape_push", tape, e.op("tuple", *copy.params[n_invariants:]))
    counted = e.op("add", trips, e.const(1, I64))
    taped.nodes += copy.nodes
    taped.outputs = copy.outputs + [pushed, counted]
    return taped


# ---- the backward loop ----------------------------------------------------------------------

@dataclass(frozen=True)
class _BackwardLayout:
    """How the backward loop's values are laid out: invariants [tape, *inv], then carried
    [k, *carried adjoints (of `carried_slots`), *invariant adjoints (of `invariant_slots`)]."""

    n_invariants: int
    carried_slots: list[int]
    invariant_slots: list[int]

    def split(self, values: list[Value]):
        """(tape, invariants, k, carried adjoints, invariant adjoints) of the values in order."""
        n, c = self.n_invariants, len(self.carried_slots)
        return values[0], values[1:1 + n], values[1 + n], values[2 + n:2 + n + c], values[2 + n + c:]


def backward_while(sweep: RegionSweep, node: Node) -> None:
    """Sweep the adjoints of a taped loop's results back to its inputs; free its tape."""
    if node not in sweep.tapes:
        return
    tape, trips = sweep.tapes[node]
    grads = [sweep.adjoints.get(v) for v in node.outputs]
    if any(g is not None for g in grads):
        _emit_backward_loop(sweep, node, tape, trips, grads)
    Emitter(sweep.dst, node.loc).op("tape_free", tape)


def _emit_backward_loop(sweep: RegionSweep, node: Node, tape: Value, trips: Value,
                        grads: list[Value | None]) -> None:
    n_invariants = node.attrs["n_invariants"]
    invariants, carried = node.inputs[:n_invariants], node.inputs[n_invariants:]
    body_params = node.regions[1].params
    layout = _BackwardLayout(
        n_invariants,
        [i for i, p in enumerate(body_params[n_invariants:]) if sweep.ad.wants_adjoint(p)],
        [k for k, p in enumerate(body_params[:n_invariants]) if sweep.ad.wants_adjoint(p)])
    e = Emitter(sweep.dst, node.loc)
    fixed = [tape] + [sweep.primal[v] for v in invariants]
    initial = ([trips] + [adjoint_or_zero(e, grads[i], carried[i].type) for i in layout.carried_slots]
               + [zero(e, invariants[k].type) for k in layout.invariant_slots])
    names = ([TAPE] + [v.name for v in invariants] + [REMAINING]
             + [adjoint_name(carried[i]) for i in layout.carried_slots]
             + [adjoint_name(invariants[k]) for k in layout.invariant_slots])
    inputs = fixed + initial
    regions = [_count_down(_params(names, inputs), layout),
               _backward_body(sweep, node, _params(names, inputs), layout)]
    loop = sweep.dst.add("while", inputs, len(initial), attrs={"n_invariants": len(fixed)},
                         regions=regions, loc=node.loc, names=names[len(fixed):],
                         types=[v.type for v in initial])
    n_carried = len(layout.carried_slots)
    for i, adjoint in zip(layout.carried_slots, loop.outputs[1:1 + n_carried]):
        sweep.accumulate(e, carried[i], adjoint)
    for k, adjoint in zip(layout.invariant_slots, loop.outputs[1 + n_carried:]):
        sweep.accumulate(e, invariants[k], adjoint)


def _params(names: list[str], inputs: list[Value]) -> list[Value]:
    """Region parameters receiving `inputs`, named `names`."""
    return [Value(name, v.type) for name, v in zip(names, inputs)]


def _count_down(params: list[Value], layout: _BackwardLayout) -> Graph:
    """The backward loop's condition: iterations remain (k > 0)."""
    cond = Graph("cond", params)
    e = Emitter(cond)
    _, _, left, _, _ = layout.split(params)
    cond.outputs = [e.op("gt", left, e.const(0, I64))]
    return cond


def _backward_body(sweep: RegionSweep, node: Node, params: list[Value],
                   layout: _BackwardLayout) -> Graph:
    """One backward iteration: pop the entry values, recompute the body, sweep it back."""
    body = node.regions[1]
    tape, invariants, left, carried_adjoints, invariant_adjoints = layout.split(params)
    graph = Graph("body", params, loc=body.loc)
    e = Emitter(graph, node.loc)
    remaining = e.op("sub", left, e.const(1, I64))
    entry = e.op("tape_get", tape, remaining)
    at_entry = [e.op("getitem", entry, index=i) for i in range(len(entry.type.elements))]
    output_adjoints: list[Value | None] = [None] * len(body.outputs)
    for i, adjoint in zip(layout.carried_slots, carried_adjoints):
        output_adjoints[i] = adjoint
    _, param_adjoints = sweep.ad.sweep_region(body, graph, invariants + at_entry, output_adjoints)
    n = layout.n_invariants
    new_carried = [adjoint_or_zero(e, param_adjoints[n + i], at_entry[i].type)
                   for i in layout.carried_slots]
    new_invariant = [total if param_adjoints[k] is None else add_adjoints(e, total, param_adjoints[k])
                     for total, k in zip(invariant_adjoints, layout.invariant_slots)]
    graph.outputs = [remaining, *new_carried, *new_invariant]
    return graph
