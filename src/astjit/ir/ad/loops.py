"""Reverse mode through a `while` loop whose trip count is known only at run time.

The forward copy of a loop with active carried values records, on a tape, the
carried values at the entry of each iteration that the backward loop reads,
and counts the iterations (`emit_taped_while`):

    tape0 = tape_new {element: tuple<types of the recorded carried values>}
    c.n, tape, trips = while [inv] (c.0, tape0, 0) {
      cond (inv, c, tape, trips) { the original condition }
      body (inv, c, tape, trips) {
        tape.1 = tape_push tape, (tuple recorded c);  trips.1 = trips + 1
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
those of the invariants. An array invariant's `dinv` is an accumulator
(`sweep.py`): the body's sweep starts its adjoint from it and adds into it,
in place for element reads and views, so `x[i]` in the loop costs O(1) per
backward iteration, not a copy of x's adjoint. Only active carried slots and invariants get
adjoint slots. The condition region is never differentiated (it yields a
bool), and runs only forward.

The backward body repeats work the forward copy ran already, on the same
values; so what of the recomputation it does not read is dropped, effects and
all (at its top level: `recomputation.py`). And what it keeps, the forward copy
need not run for anything but its results: the loops, branches and calls of
the forward body whose twins the backward body keeps are marked `recomputed`,
which lets dead code elimination delete them when only the gradient is wanted.

What is recorded is decided once the backward body is built: the forward loop
is first emitted recording every carried value, and `backward_while` re-emits
it recording only those the backward body still reads once its dead code is
gone. A carried value that only feeds others the backward does not need (a
running sum, say) is then no longer kept alive by the tape, so when only the
gradient is wanted the forward loop's work on it is dead code too. A loop whose
backward reads no carried value (only the trip count) gets no tape, and a loop
no adjoint reaches is copied plain, with neither tape nor counter.

A nested loop is handled by the same scheme inside the recomputed body. Its
tape is made once, before the backward loop, carried through it, cleared
where each iteration used to make a fresh one, and freed after it.

A loop that writes into arrays it does not carry (`y[i] = f(y[i-1])`) is taped
when one of them is active, and keeps an undo log per array it writes
(`writes.py`): the forward loop carries the logs and, where an iteration's
number of writes is not fixed (writes in inner loops or branches), records
their lengths at each iteration's entry as extra tape fields (after the
carried values); the backward loop reads the logs, carries the position it
has undone them to,
and starts each iteration by undoing the iteration's writes, so that the
recomputation sees the memory of the forward iteration. Its accumulators of
the written arrays' adjoints start from the adjoints the code after the loop
gave them (a write zeroes what reached the place it overwrote), and replace
them after the loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ..core import Graph, Node, Value
from ..passes.inline import clone_graph, clone_node
from ..types import I64, ArrayType, TupleType
from .builder import GraphBuilder
from .recomputation import drop_unused_recomputation, mark_recomputed
from .values import add_adjoints, adjoint_name, adjoint_or_zero, fresh_copies, zero
from .writes import LOG, emit_undo, emit_undo_entries, log_type, thread_logs, write_count, written_invariants

if TYPE_CHECKING:
    from .sweep import RegionSweep

TAPE, TRIPS, REMAINING = "$tape", "$trips", "$k"
"""Names of the values the transform adds to loops."""


def carries_active(node: Node, active: set[Value]) -> bool:
    """Whether a `while` has an active carried value, and so needs a tape."""
    n_invariants = node.attrs["n_invariants"]
    params = node.regions[1].params
    return (any(p in active for p in params[n_invariants:])
            or any(params[k] in active for k in written_invariants(node, active)))


# ---- the forward loop, taped ----------------------------------------------------------------

@dataclass
class TapedLoop:
    """The forward copy of a loop, as emitted into the forward graph."""

    nodes: list[Node]
    """Its nodes, consecutive in the forward graph: const 0, [tape_new,] the `while`."""
    fields: list[int]
    """The carried slots each tape element records, in order; a field `n_carried + j`
    records the length of undo log j at the iteration's entry."""
    log_slots: list[int]
    """The invariants the loop writes into, each with an undo log."""
    log_sites: list[int | None]
    """Per log, how many entries each iteration pushes when fixed; None: the length at
    each iteration's entry is recorded (a field of the tape)."""
    logs: list[Value]
    """The undo logs after the loop."""
    tape: Value | None
    """The tape after the loop; None when nothing is recorded."""
    trips: Value
    """How many iterations ran."""
    copies: dict[Node, Node]
    """A node of the loop's body -> its copy in the taped body."""

    @property
    def loop(self) -> Node:
        return self.nodes[-1]


def emit_taped_while(sweep: RegionSweep, node: Node) -> None:
    """Append the forward copy of `node` that tapes all its carried values and counts its trips."""
    n_carried = len(node.inputs) - node.attrs["n_invariants"]
    counted = [n_carried + j for j, sites in enumerate(_log_sites(node, sweep.ad.active))
               if sites is None]
    taped = _taped_loop(sweep, node, list(range(n_carried)) + counted)
    sweep.dst.nodes += taped.nodes
    sweep.primal.update(zip(node.outputs, taped.loop.outputs))
    sweep.tapes[node] = taped
    sweep.copies[node] = taped.loop


def _log_sites(node: Node, active: set[Value]) -> list[int | None]:
    """For each invariant `while` `node` writes into, the number of element writes into it
    each iteration makes when fixed (all in the body's own node list), else None."""
    body = node.regions[1]
    return [write_count(body, body.params[k]) for k in written_invariants(node, active)]


def _taped_loop(sweep: RegionSweep, node: Node, fields: list[int],
                reuse: TapedLoop | None = None) -> TapedLoop:
    """The nodes of the forward copy of `node` recording carried `fields` (none: no tape).

    With `reuse`, the loop's results are `reuse`'s Values (which later code already reads).
    """
    n_invariants = node.attrs["n_invariants"]
    carried = node.inputs[n_invariants:]
    log_slots = written_invariants(node, sweep.ad.active)
    forward = Graph("forward")  # a scratch graph: the caller splices its nodes in
    e = GraphBuilder(forward, node.loc)
    names, extra = [TRIPS], [e.const(0, I64)]
    if fields:
        types = [carried[i].type if i < len(carried) else I64 for i in fields]
        names, extra = [TAPE, TRIPS], [e.op("tape_new", element=TupleType(tuple(types))), *extra]
    logs = [e.op("tape_new", element=log_type(node.inputs[k].type).element) for k in log_slots]
    names, extra = [LOG] * len(logs) + names, logs + extra
    cond = clone_graph(node.regions[0])
    cond.params += _params(names, extra)
    body, copies = _taped_body(node.regions[1], _params(names, extra), n_invariants, fields,
                               log_slots)
    inputs = [sweep.primal[v] for v in node.inputs] + extra
    loop = forward.add("while", inputs, len(node.outputs) + len(extra),
                       attrs={"n_invariants": n_invariants}, regions=[cond, body], loc=node.loc,
                       names=[v.name for v in node.outputs] + names,
                       types=[v.type for v in node.outputs] + [v.type for v in extra])
    if reuse is not None:
        n = len(node.outputs)
        loop.outputs = reuse.loop.outputs[:n] + loop.outputs[n:-1] + [reuse.trips]
    n = len(node.outputs)
    tape = loop.outputs[-2] if fields else None
    return TapedLoop(forward.nodes, fields, log_slots, _log_sites(node, sweep.ad.active),
                     loop.outputs[n:n + len(logs)], tape, loop.outputs[-1], copies)


def _taped_body(body: Graph, extra: list[Value], n_invariants: int, fields: list[int],
                log_slots: list[int]) -> tuple[Graph, dict[Node, Node]]:
    """A copy of `body`, with parameters `extra` ([*logs,] [tape,] trips) added, that first
    pushes carried `fields` (and log lengths) onto the tape (if any) and counts, and logs
    its writes into the invariants `log_slots`; and what each node became in it."""
    params = fresh_copies(body.params)
    taped = Graph(body.name, params + extra, loc=body.loc)
    e = GraphBuilder(taped, body.loc)
    carried = params[n_invariants:]
    logs = extra[:len(log_slots)]
    recorded = [carried[i] if i < len(carried) else e.op("tape_len", logs[i - len(carried)])
                for i in fields]
    pushed = ([e.op("tape_push", extra[len(logs)], e.op("tuple", *recorded))]
              if fields else [])
    counted = e.op("add", extra[-1], e.const(1, I64))
    mapping = dict(zip(body.params, params))
    copies = {node: clone_node(node, mapping) for node in body.nodes}
    taped.nodes += copies.values()
    after = thread_logs(taped, {params[k]: log for k, log in zip(log_slots, logs)})
    taped.outputs = ([mapping[v] for v in body.outputs] + [after[params[k]] for k in log_slots]
                     + pushed + [counted])
    return taped, copies


def _replace(sweep: RegionSweep, taped: TapedLoop, nodes: list[Node]) -> None:
    """Put `nodes` where `taped`'s nodes stand in the forward graph."""
    dst = sweep.dst.nodes
    start = next(i for i, n in enumerate(dst) if n is taped.nodes[0])
    dst[start:start + len(taped.nodes)] = nodes


def _retape(sweep: RegionSweep, node: Node, taped: TapedLoop, fields: list[int]) -> TapedLoop:
    """Re-emit the forward copy of `node` recording only carried `fields` (of all of them)."""
    if fields == taped.fields:
        return taped
    narrowed = _taped_loop(sweep, node, fields, reuse=taped)
    _replace(sweep, taped, narrowed.nodes)
    sweep.tapes[node] = narrowed
    sweep.copies[node] = narrowed.loop
    return narrowed


def _untape(sweep: RegionSweep, node: Node, taped: TapedLoop) -> None:
    """Replace the forward copy of `node` by a plain one: no adjoint reaches the loop."""
    plain = clone_node(node, {v: sweep.primal[v] for v in node.inputs})
    plain.outputs = taped.loop.outputs[:len(node.outputs)]
    _replace(sweep, taped, [plain])
    del sweep.tapes[node]
    sweep.copies[node] = plain


# ---- the backward loop ----------------------------------------------------------------------

class _BackwardLayout(NamedTuple):
    """How the backward loop's values are laid out: invariants [tape, *inv, *logs], then
    carried [k, *carried adjoints (of `carried_slots`), *invariant adjoints (of
    `invariant_slots`), *log positions]. The tape is dropped from the invariants when the
    body reads nothing from it. (A NamedTuple: a frozen dataclass makes six methods from
    source text when the module is imported, which a loop's first gradient waits for.)"""

    n_invariants: int
    carried_slots: list[int]
    invariant_slots: list[int]
    log_slots: list[int]
    log_sites: list[int | None]

    def split(self, values: list[Value]):
        """(tape, invariants, logs, k, carried adjoints, invariant adjoints, log positions)
        of the values in order."""
        n, c, i, g = (self.n_invariants, len(self.carried_slots), len(self.invariant_slots),
                      len(self.log_slots))
        k = 1 + n + g
        return (values[0], values[1:1 + n], values[1 + n:k], values[k],
                values[k + 1:k + 1 + c], values[k + 1 + c:k + 1 + c + i], values[k + 1 + c + i:])


def backward_while(sweep: RegionSweep, node: Node) -> None:
    """Sweep the adjoints of a taped loop's results back to its inputs; free its tape."""
    taped = sweep.tapes.get(node)
    if taped is None:
        return
    grads = [sweep.adjoints.get(v) for v in node.outputs]
    if all(g is None for g in grads) and not taped.log_slots:
        _untape(sweep, node, taped)
        return
    taped = _emit_backward_loop(sweep, node, taped, grads)
    e = GraphBuilder(sweep.dst, node.loc)
    for tape in ([taped.tape] if taped.tape is not None else []) + taped.logs:
        e.op("tape_free", tape)


def _emit_backward_loop(sweep: RegionSweep, node: Node, taped: TapedLoop,
                        grads: list[Value | None]) -> TapedLoop:
    """Emit the backward loop; return the forward copy, re-emitted to record what it reads."""
    n_invariants = node.attrs["n_invariants"]
    invariants, carried = node.inputs[:n_invariants], node.inputs[n_invariants:]
    body_params = node.regions[1].params
    layout = _BackwardLayout(
        n_invariants,
        [i for i, p in enumerate(body_params[n_invariants:]) if sweep.ad.wants_adjoint(p)],
        [k for k, p in enumerate(body_params[:n_invariants]) if sweep.ad.wants_adjoint(p)],
        taped.log_slots, taped.log_sites)
    e = GraphBuilder(sweep.dst, node.loc)
    fixed = [taped.tape] + [sweep.primal[v] for v in invariants] + list(taped.logs)
    initial = ([taped.trips]
               + [adjoint_or_zero(e, grads[i], sweep.primal[node.outputs[i]])
                  for i in layout.carried_slots]
               + [sweep.accumulator(e, invariants[k]) if k in taped.log_slots
                  else zero(e, sweep.primal[invariants[k]]) for k in layout.invariant_slots]
               + [e.op("tape_len", log) for log in taped.logs])
    names = ([TAPE] + [v.name for v in invariants] + [LOG] * len(taped.logs) + [REMAINING]
             + [adjoint_name(carried[i]) for i in layout.carried_slots]
             + [adjoint_name(invariants[k]) for k in layout.invariant_slots]
             + ["$undone"] * len(taped.logs))
    params = _params(names, fixed + initial)
    body, read, repeated = _backward_body(sweep, node, params, layout)
    taped = _retape(sweep, node, taped, read)
    fixed[1 + n_invariants:] = taped.logs
    lengths = [n for n in sweep.dst.nodes if n.op == "tape_len" and n.outputs[0] in initial]
    for length, log in zip(lengths, taped.logs):  # the logs of the re-emitted forward loop
        length.inputs[0] = log
    for inner in repeated:
        mark_recomputed(taped.copies[inner])
    if taped.tape is None:  # the body reads no carried value: the loop needs only its count
        fixed, names, params = fixed[1:], names[1:], params[1:]
        body.params = body.params[1:]
    else:
        params[0].type = taped.tape.type
        fixed[0] = taped.tape
    reused = [e.op("tape_new", element=element) for element in _reuse_tapes(body)]
    inputs = fixed + initial + reused
    names += [TAPE] * len(reused)
    cond = _count_down(_params(names, inputs), len(fixed))
    loop = sweep.dst.add("while", inputs, len(initial) + len(reused),
                         attrs={"n_invariants": len(fixed)}, regions=[cond, body], loc=node.loc,
                         names=names[len(fixed):], types=[v.type for v in initial + reused])
    n_carried, n_written = len(layout.carried_slots), len(layout.invariant_slots)
    for i, adjoint in zip(layout.carried_slots, loop.outputs[1:1 + n_carried]):
        sweep.accumulate(e, carried[i], adjoint)
    for k, adjoint in zip(layout.invariant_slots,
                          loop.outputs[1 + n_carried:1 + n_carried + n_written]):
        if k in taped.log_slots:  # its accumulator started from the adjoint after the loop
            sweep.adjoints[invariants[k]] = adjoint
            sweep.exclusive.add(invariants[k])
        else:
            sweep.accumulate(e, invariants[k], adjoint, fresh=True)  # an accumulator
    for tape in loop.outputs[len(initial):]:
        e.op("tape_free", tape)
    return taped


def _reuse_tapes(body: Graph) -> list[TupleType]:
    """Make the tapes `body` makes and frees (its nested loops') carried values of the loop
    instead, cleared where they were made; return their element types, in order.

    The caller makes each before the loop and frees it after: one allocation for
    all the iterations, rather than one per iteration (malloc, realloc, 2 frees).
    """
    made: dict[Value, Node] = {}
    """A tape value of `body` -> the `tape_new` it comes from."""
    elements = []
    for node in list(body.nodes):
        if node.op == "tape_new":
            made[node.outputs[0]] = node
        elif node.op == "tape_push" and node.inputs[0] in made:
            made[node.outputs[0]] = made[node.inputs[0]]
        elif node.op == "while":
            n_invariants = node.attrs["n_invariants"]
            made.update((out, made[v]) for v, out in zip(node.inputs[n_invariants:], node.outputs)
                        if v in made)
        elif node.op == "tape_free" and node.inputs[0] in made:
            new = made[node.inputs[0]]
            tape = Value(TAPE, new.outputs[0].type)
            new.op, new.inputs, new.attrs = "tape_clear", [tape], {}
            body.nodes.remove(node)
            body.params.append(tape)
            body.outputs.append(node.inputs[0])
            elements.append(tape.type.element)
    return elements


def _params(names: list[str], inputs: list[Value]) -> list[Value]:
    """Region parameters receiving `inputs`, named `names`."""
    return [Value(name, v.type) for name, v in zip(names, inputs)]


def _count_down(params: list[Value], k: int) -> Graph:
    """The backward loop's condition: iterations remain (params[k] > 0)."""
    cond = Graph("cond", params)
    e = GraphBuilder(cond)
    cond.outputs = [e.op("gt", params[k], e.const(0, I64))]
    return cond


def _backward_body(sweep: RegionSweep, node: Node, params: list[Value],
                   layout: _BackwardLayout) -> tuple[Graph, list[int], list[Node]]:
    """One backward iteration: pop the entry values, recompute the body, sweep it back.

    Returns the body; the carried slots it reads from the tape; and the nodes
    of the loop's body it recomputes and keeps (see `recomputation.py`). It is
    built reading every carried value from a tape of them all, then cleaned of
    unused code, recomputed or not, and left reading only the slots it still
    needs, as the fields, in order, of a narrower tape element (the tape
    parameter keeps the wide type, for the caller to set).
    """
    body = node.regions[1]
    (tape, invariants, logs, left, carried_adjoints, invariant_adjoints,
     undone) = layout.split(params)
    graph = Graph("body", params, loc=body.loc)
    e = GraphBuilder(graph, node.loc)
    remaining = e.op("sub", left, e.const(1, I64))
    entry = e.op("tape_get", tape, remaining)
    at_entry = [e.op("getitem", entry, index=i) for i in range(len(entry.type.elements))]
    n_carried = len(body.params) - layout.n_invariants
    recorded = iter(at_entry[n_carried:])
    starts = []
    for log, k, stop, sites in zip(logs, layout.log_slots, undone, layout.log_sites):
        if sites is None:
            starts.append(next(recorded))
            emit_undo(graph, node.loc, log, invariants[k], starts[-1], stop)
        else:
            starts.append(emit_undo_entries(graph, node.loc, log, invariants[k], stop, sites))
    at_entry = at_entry[:n_carried]
    output_adjoints: list[Value | None] = [None] * len(body.outputs)
    for i, adjoint in zip(layout.carried_slots, carried_adjoints):
        output_adjoints[i] = adjoint
    accumulators = {body.params[k]: total
                    for total, k in zip(invariant_adjoints, layout.invariant_slots)
                    if isinstance(total.type, ArrayType)}
    recompute = sweep.ad.sweep(body, graph, invariants + at_entry, output_adjoints, accumulators,
                               recomputing=True)
    param_adjoints = [recompute.adjoints.get(p) for p in body.params]
    n = layout.n_invariants
    new_carried = [adjoint_or_zero(e, param_adjoints[n + i], at_entry[i])
                   for i in layout.carried_slots]
    new_invariant = [param_adjoints[k] if isinstance(total.type, ArrayType)  # accumulated into
                     else total if param_adjoints[k] is None
                     else add_adjoints(e, total, param_adjoints[k])
                     for total, k in zip(invariant_adjoints, layout.invariant_slots)]
    graph.outputs = [remaining, *new_carried, *new_invariant, *starts]
    drop_unused_recomputation(graph, deep=False)
    kept = set(graph.nodes)
    repeated = [inner for inner in body.nodes if recompute.copies.get(inner) in kept]
    return graph, _renumber_reads(graph, entry), repeated


def _renumber_reads(graph: Graph, entry: Value) -> list[int]:
    """The indices of the fields of tuple `entry` that `graph` reads; its reads renumbered
    as if `entry` held just those, which its type becomes."""
    reads = [n for n in graph.nodes if n.op == "getitem" and n.inputs[0] is entry]
    fields = sorted({n.attrs["index"] for n in reads})
    for read in reads:
        read.attrs["index"] = fields.index(read.attrs["index"])
    entry.type = TupleType(tuple(entry.type.elements[i] for i in fields))
    return fields
