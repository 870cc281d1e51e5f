"""Element writes and slice assignments in reverse mode: which arrays they write, and the
undo logs that let the backward sweep see every array as the forward sweep saw it.

An array is memory: `y[i] = v` (`array_set`) and `y[a:b] = v` (`array_assign` of
a view) change what later reads of `y` give, with no new SSA value. Reverse
mode treats `y`'s adjoint as the adjoint of that memory (one accumulator,
`sweep.py`), walked backwards in program order:

- a write's backward reads the adjoint at the written place into `v`'s adjoint
  (what reached `y[i]` after the write came from `v`) and zeroes it there (the
  overwritten value reached nothing after the write): `set_at` / `zero_into`;
- the forward copy reads the value a write overwrites (`old`), and the
  backward puts it back (`y[i] = old`): the *memory invariant* — wherever the
  backward sweep is, every array holds what it held at that point of the
  forward sweep, so VJP rules that read a whole array (`y * w`) and the
  recomputation of loop bodies see the right values. The gradient graph thus
  leaves the arrays it was given (an argument written into) as it found them.

Writes inside a loop. An array only written by a loop (never rebound) is an
invariant of the `while`. Its backward loop recomputes each iteration's body
from the iteration's entry (`loops.py`), which needs the memory as it was at
that entry, while the array holds what the later iterations left. So the
taped forward loop keeps an *undo log* per array it writes: a tape of
`(old value, *indices)`, one entry per element write anywhere in the body
(threaded through inner loops and branches as a carried / captured value).
When every write is in the body's own node list, each iteration pushes a
fixed number of entries; otherwise the loop records the log's length at each
iteration's entry on its tape. Each backward iteration first undoes its
iteration's writes, newest first, then recomputes and sweeps the body (whose
own write backwards restore what the recomputation wrote again; a write that
nothing in the body reads afterwards is not recomputed at all). O(1) per
write, forward and backward.

Writes inside an `if`: the forward copy logs them the same way (a log per
captured array written, made before the `if`); the backward first undoes the
whole log, then the backward `if` recomputes the branch, which writes again,
and sweeps it back; the written arrays' accumulators go into the backward
`if` and come out of it.

Limits, refused with a `NotDifferentiableError` naming the construct and
line: writes into an array a loop carries (rebinds), where it is active or the body
reads it (an int array too: its elements may feed a derivative); slice assignment
and writes through a view inside a loop; a write inside an `if` into a view
taken outside it; writes through a `reshape`, `np.ascontiguousarray` or
`x.view(dtype)`; a view used after its array was written into (other than through
it). And before differentiating (`refusals.py`): a loop, branch or call writing into an
array it also receives under another name (a region keeps one adjoint per parameter;
the optimizer gives an array bound twice one parameter, cse.py), and a write into an
array a branch, loop or call returned that may be one it was given.
"""
from __future__ import annotations

from ..core import Graph, Node, Value
from ..types import I64, ArrayType, TapeType, TupleType
from .builder import GraphBuilder
from .errors import NotDifferentiableError

WRITE_OPS = frozenset({"array_set", "array_assign", "scatter"})
"""Leaf ops that write into their first input (an array, or a view of one)."""
VIEW_OPS = frozenset({"array_view", "array_transpose", "array_permute", "array_expand_dims",
                      "array_squeeze", "complex_part"})
"""Leaf ops whose result is always a view of their first input: writes reach the base
(through np.real/np.imag of a complex array too: its op's `write_adjoint`)."""
READ_VIEW_OPS = {"array_reshape": "a reshape", "array_contiguous": "np.ascontiguousarray",
                 "array_view_as": "x.view(dtype)"}
"""Leaf ops whose result may be a view of their first input, through which AD follows
reads but refuses writes (`view_chain`): a reshape and np.ascontiguousarray (a view or a
copy, depending on the strides), a view of the bits as another dtype."""
LOG = "$log"
"""The name of undo-log values."""


def defining_nodes(graph: Graph) -> dict[Value, Node]:
    """Each value `graph`'s own nodes define -> its node (regions not included)."""
    return {out: node for node in graph.nodes for out in node.outputs}


def view_chain(value: Value, defs: dict[Value, Node],
               writing: bool = True) -> tuple[Value, list[Node]]:
    """The array `value` is a view of, in its graph, and the views from it to `value`.

    A reshape is a view or a copy depending on the strides. A write through one is
    refused (`writing`); a question about reads (which views a write makes stale, whether
    a written array is read later) takes it for a view, the answer that keeps more."""
    chain: list[Node] = []
    node = defs.get(value)
    while node is not None and (node.op in VIEW_OPS or not writing and node.op in READ_VIEW_OPS):
        chain.append(node)
        value = node.inputs[0]
        node = defs.get(value)
    if node is not None and node.op in READ_VIEW_OPS:
        why = ("it reinterprets the bits" if node.op == "array_view_as"
               else "it is a view or a copy depending on the strides")
        raise NotDifferentiableError(f"cannot differentiate a write through "
                                     f"{READ_VIEW_OPS[node.op]}: {why}", node.op, node.loc)
    return value, chain[::-1]


def region_bindings(node: Node) -> list[tuple[Graph, list[Value], list[Value]]]:
    """(region, its params, the `node` inputs they receive), for each region of `node`."""
    if node.op == "if":
        return [(r, r.params, node.inputs[1:]) for r in node.regions]
    return [(r, r.params, node.inputs) for r in node.regions]


def written_roots(graph: Graph) -> set[Value]:
    """The values of `graph` (parameters or results of its nodes) whose memory `graph` or
    one of its regions writes into: the written arrays, traced back through views and
    region parameters."""
    defs = defining_nodes(graph)
    roots: set[Value] = set()
    for node in graph.nodes:
        if node.op in WRITE_OPS:
            roots.add(view_chain(node.inputs[0], defs)[0])
        for region, params, inputs in region_bindings(node):
            inner = written_roots(region)
            roots.update(view_chain(v, defs)[0] for p, v in zip(params, inputs) if p in inner)
    return roots


def written_invariants(node: Node, active: set[Value]) -> list[int]:
    """The invariants of `while` `node` its body writes into (their indices). A loop that
    writes into an array it carries is refused where the array is active, or where the
    body reads it: no undo log follows a carried array, so the backward recomputation of
    the body would read what later writes left (an int array's element read before a write
    feeds a float's derivative: fuzz seed 41311, program 1827)."""
    body = node.regions[1]
    inner = written_roots(body)
    n_invariants = node.attrs["n_invariants"]
    for p in body.params[n_invariants:]:
        if p in inner and (p in active or reads_array(body, p)):
            raise NotDifferentiableError(
                f"cannot differentiate a loop that writes into the array '{p.name}' it also "
                "rebinds (a carried value) yet", "array_set", node.loc)
    return [k for k, p in enumerate(node.regions[1].params[:n_invariants]) if p in inner]


def reads_array(graph: Graph, array: Value) -> bool:
    """Whether `graph` (or a region of it) reads the memory of its value `array`: uses it, or
    a view of it, other than as the array a write writes into."""
    defs = defining_nodes(graph)
    for node in graph.nodes:
        for k, v in enumerate(node.inputs):
            if not isinstance(v.type, ArrayType) or view_chain(v, defs, writing=False)[0] is not array:
                continue
            if node.op in VIEW_OPS or node.op in READ_VIEW_OPS or (k == 0 and node.op in WRITE_OPS):
                continue  # a view is read where it is used; a write's target is not read
            if not node.regions:
                return True
            if any(reads_array(region, p) for region, params, inputs in region_bindings(node)
                   for p, bound in zip(params, inputs) if bound is v):
                return True
    return False


def check_views_of_written(graph: Graph, active: set[Value]) -> None:
    """Refuse a view of an active array used after the array was written into (other than
    through that view): its adjoint would reach the array's only where the view was made,
    past the write. (A view made right before the write, a slice assignment, is fine.)"""
    defs = defining_nodes(graph)
    views: dict[Value, list[Value]] = {}
    stale: set[Value] = set()
    for node in graph.nodes:
        used = next((v for v in node.inputs if v in stale), None)
        if used is not None:
            raise NotDifferentiableError(
                f"cannot differentiate a use of the view '{used.name or 'of an array'}' after "
                "its array was written into: take the view after the write", node.op, node.loc)
        for root in _roots_written_by(node, defs):
            if root in active:
                through = set(view_chain(node.inputs[0], defs)[1]) if node.op in WRITE_OPS else ()
                stale.update(v for v in views.get(root, []) if defs[v] not in through)
        if node.op in VIEW_OPS:
            views.setdefault(view_chain(node.outputs[0], defs, writing=False)[0],
                             []).append(node.outputs[0])


def _roots_written_by(node: Node, defs: dict[Value, Node]) -> set[Value]:
    if node.op in WRITE_OPS:
        return {view_chain(node.inputs[0], defs)[0]}
    roots = set()
    for region, params, inputs in region_bindings(node):
        inner = written_roots(region)
        roots.update(view_chain(v, defs)[0] for p, v in zip(params, inputs) if p in inner)
    return roots


def unread_writes(graph: Graph) -> set[Node]:
    """The writes of `graph`'s node list after which nothing in `graph` uses the array
    written (its memory, a view of it), nor yields it: a recomputation may leave them out."""
    defs = defining_nodes(graph)
    root_of = {}
    for node in graph.nodes:
        for v in node.inputs:
            if isinstance(v.type, ArrayType) and v not in root_of:
                root_of[v] = view_chain(v, defs, writing=False)[0]
    used_later: set[Value] = {root_of.get(v, v) for v in graph.outputs}
    unread = set()
    for node in reversed(graph.nodes):
        if node.op in WRITE_OPS and root_of[node.inputs[0]] not in used_later:
            unread.add(node)
        used_later.update(root_of[v] for v in node.inputs if v in root_of)
    return unread


def write_count(body: Graph, array: Value) -> int | None:
    """How many times one run of `body` writes into its parameter `array`, when fixed:
    every write in `body`'s own node list; None when a region of it writes too."""
    defs = defining_nodes(body)
    count = 0
    for node in body.nodes:
        if node.op in WRITE_OPS and view_chain(node.inputs[0], defs)[0] is array:
            count += 1
        for region, params, inputs in region_bindings(node):
            inner = written_roots(region)
            if any(p in inner and view_chain(v, defs)[0] is array for p, v in zip(params, inputs)):
                return None
    return count


def log_type(array: ArrayType) -> TapeType:
    """The undo log of writes into an array of type `array`: (old value, *indices)."""
    return TapeType(TupleType((array.dtype, *(I64,) * array.ndim)))


# ---- threading undo logs through a loop body (the forward copy) ---------------------------

def thread_logs(body: Graph, logs: dict[Value, Value]) -> dict[Value, Value]:
    """Make every write into the arrays `logs` maps (parameters of `body`) push
    (old value, *indices) onto the array's log, in place; return the logs after `body`.

    `logs`: a parameter of `body` -> the log value at its entry. Inner loops that
    write into one carry its log; every other way of writing into one is refused.
    """
    current = dict(logs)
    defs = defining_nodes(body)
    nodes: list[Node] = []
    for node in body.nodes:
        if node.op in WRITE_OPS:
            root, chain = view_chain(node.inputs[0], defs)
            if root in current:
                if chain or node.op != "array_set":
                    raise NotDifferentiableError(
                        "cannot differentiate a slice assignment, an assignment by an index "
                        "array or mask, or a write through a view inside a loop or branch "
                        "yet: write element by element (y[i] = v)", node.op, node.loc)
                current[root] = _logged_set(nodes, node, current[root])
                continue
        elif node.regions:
            _thread_region_node(node, current, defs)
        nodes.append(node)
    body.nodes = nodes
    return current


def _logged_set(nodes: list[Node], node: Node, log: Value) -> Value:
    """Append `old = y[i]; y[i] = v; log.1 = push log (old, i)` to `nodes`; return log.1."""
    scratch = Graph("log")
    e = GraphBuilder(scratch, node.loc)
    array, _, *indices = node.inputs
    old = e.op("array_get", array, *indices)
    scratch.nodes.append(node)
    pushed = e.op("tape_push", log, e.op("tuple", old, *indices))
    nodes += scratch.nodes
    return pushed


def _thread_region_node(node: Node, current: dict[Value, Value], defs) -> None:
    """Thread the logs of the arrays a structural `node` writes into through it."""
    written: dict[int, tuple[Value, list[Node]]] = {}
    """The slots (indices into the regions' parameters) written into -> (root, views)."""
    for region, params, inputs in region_bindings(node):
        inner = written_roots(region)
        for k, (p, v) in enumerate(zip(params, inputs)):
            if p in inner and view_chain(v, defs)[0] in current:
                written.setdefault(k, view_chain(v, defs))
    if not written:
        return
    if node.op not in ("while", "if"):
        raise NotDifferentiableError(
            f"cannot differentiate writes into an array inside '{node.op}' inside a loop yet",
            node.op, node.loc)
    first = 1 if node.op == "if" else 0
    n_fixed = node.attrs["n_invariants"] if node.op == "while" else len(node.inputs)
    roots = [root for root, _ in written.values()]
    for k, (root, chain) in written.items():
        # (by slot, not by the value bound there: `for e in y: y[0] = ...` binds y to the
        # loop twice, as what it iterates over and as what it writes into)
        if chain or k + first >= n_fixed or roots.count(root) > 1:
            raise NotDifferentiableError(
                "cannot differentiate writes through a view, into a carried array, or into "
                "one array through two names, in an inner loop or branch yet", node.op, node.loc)
        current[root] = pass_log(node, [k], [current[root]])[0]


def pass_log(node: Node, slots: list[int], logs: list[Value]) -> list[Value]:
    """Make structural `node` (a `while`: carried; an `if`: captured and returned) take
    `logs` for the arrays its regions receive as parameters `slots`, push their writes
    onto them, and give them back; return the logs after `node`."""
    for region in node.regions:
        params = [Value(LOG, log.type) for log in logs]
        entry = {region.params[k]: p for k, p in zip(slots, params)}
        region.params += params
        if node.op == "while" and region is node.regions[0]:
            continue  # the condition only passes them on
        after = thread_logs(region, entry)
        region.outputs += [after[region.params[k]] for k in slots]
    node.inputs += logs
    outs = [Value(LOG, log.type) for log in logs]
    node.outputs += outs
    return outs


def written_captures(node: Node) -> list[int]:
    """The region parameters (indices) the regions of `node` write into: for an `if`, its
    captured values (indices into `inputs[1:]`); for a `while`, into its inputs."""
    written = set()
    for region in node.regions:
        inner = written_roots(region)
        written.update(k for k, p in enumerate(region.params) if p in inner)
    return sorted(written)


# ---- undoing one iteration's writes (the backward loop) -----------------------------------

def emit_undo_entries(graph: Graph, loc, log: Value, array: Value, stop: Value,
                      count: int) -> Value:
    """Append to `graph` the restores of the `count` writes that log entries stop-1 down to
    stop-count record, newest first; return stop-count."""
    e = GraphBuilder(graph, loc)
    position = stop
    for _ in range(count):
        position = e.op("sub", position, e.const(1, I64))
        entry = e.op("tape_get", log, position)
        parts = [e.op("getitem", entry, index=i) for i in range(len(entry.type.elements))]
        e.op("array_set", array, parts[0], *parts[1:], boundscheck=False)
    return position


def emit_undo(graph: Graph, loc, log: Value, array: Value, start: Value, stop: Value) -> None:
    """Append to `graph` a loop that restores, newest first, the writes that log entries
    stop-1 down to `start` record: `array[i] = old` for each (old, *i)."""
    element = log.type.element
    params = [Value(LOG, log.type), Value(array.name, array.type), Value("", I64),
              Value("$j", I64)]
    cond = Graph("cond", params)
    ec = GraphBuilder(cond, loc)
    cond.outputs = [ec.op("gt", params[3], params[2])]
    body_params = [Value(p.name, p.type) for p in params]
    body = Graph("body", body_params)
    eb = GraphBuilder(body, loc)
    j = eb.op("sub", body_params[3], eb.const(1, I64))
    entry = eb.op("tape_get", body_params[0], j)
    parts = [eb.op("getitem", entry, index=i) for i in range(len(element.elements))]
    eb.op("array_set", body_params[1], parts[0], *parts[1:], boundscheck=False)
    body.outputs = [j]
    graph.add("while", [log, array, start, stop], 1, attrs={"n_invariants": 3},
              regions=[cond, body], loc=loc, names=["$j"], types=[I64])
