"""What the AD transforms refuse of a whole module before differentiating it: writes that
neither mode would follow, because the array written is also read under another name.

Both modes follow an array by the values that name it: reverse mode keeps an adjoint
per name (an accumulator, `sweep.py`), forward mode a tangent per name (copied where
a leaf op may share memory, `forward_activity.py`). Where one memory has two names and
is written through one, the write would not reach what is read through the other, and
the derivative would be wrong; these checks refuse such programs instead, each with the
line and what to write. `derive.py` runs them on the optimized copy it differentiates,
after inlining, when one array passed twice has become one name (`passes/cse.py`).
"""
from __future__ import annotations

from collections.abc import Iterator

from ...errors import DifferentiationError
from ..core import Graph, Module, Value
from ..ops import OPS
from ..types import ArrayType
from .activity import is_differentiable
from .errors import NotDifferentiableError
from .writes import WRITE_OPS, defining_nodes, region_bindings, view_chain, written_captures


def refuse_writes_in_conditions(module: Module) -> None:
    """Refuse a `while` whose condition writes into an array (`while i < n and h(x)`, `h`
    writing x): both modes take a condition for its truth alone, so the write reached
    neither mode's derivatives (fuzz seed 41312, program 1348: both gave 6 where the write
    had made the result a constant)."""
    for graph in module.graphs.values():
        for node in graph.walk():
            if node.op == "while" and _writes(module, node.regions[0], set()):
                raise DifferentiationError("cannot differentiate a loop whose condition writes into "
                                           "an array: make the write a statement of the body",
                                           node.loc)


def refuse_writes_through_two_names(module: Module) -> None:
    """Refuse a loop, branch or call that receives one float array through two names (the
    same array twice, or an array and a view of it) and writes into it through one. Reverse
    mode keeps an adjoint per name, so a write's backward never reaches what was read
    through the other name (fuzz seed 41313, program 7257: `for e in a: b[0] = e` with `a`
    and `b` one array). Forward mode keeps tangents as memory, like the arrays, and needs
    no such rule. The optimizer gives an array bound twice one name where it can (cse.py)."""
    for graph in module.graphs.values():
        _refuse_two_names_in(module, graph)


def _refuse_two_names_in(module: Module, graph: Graph) -> None:
    defs = defining_nodes(graph)
    for node in graph.nodes:
        for region in node.regions:
            _refuse_two_names_in(module, region)
        if node.op not in ("while", "if", "call"):
            continue
        bound = node.inputs[1:] if node.op == "if" else node.inputs
        names: dict[Value, list[int]] = {}
        for k, v in enumerate(bound):
            if is_differentiable(v.type) and isinstance(v.type, ArrayType):
                names.setdefault(view_chain(v, defs, writing=False)[0], []).append(k)
        shared = {k for ks in names.values() if len(ks) > 1 for k in ks}
        if not shared:
            continue
        if node.op == "call":
            written = shared if _writes(module, module.graphs[node.attrs["callee"]], set()) \
                else set()
        else:
            written = set(written_captures(node))
        if shared & written:
            raise DifferentiationError(
                f"cannot differentiate a {'function call' if node.op == 'call' else 'loop or branch'}"
                " that writes into an array it also reads through another name (the same array "
                "twice, or the array and a view of it) yet: use one name, or write into a copy",
                node.loc)


def refuse_writes_into_returned_inputs(module: Module) -> None:
    """Refuse a write into an array that a branch, loop or call returned, where it may be an
    array it was given (`q = p if c else np.zeros(3)`, then `q[0] = v`): both modes follow
    an array by the value that names it, so the write never reached what was read through
    the other name (fuzz seed 41314, program 8832: the gradient of np.std of an array
    written later through such a name). One every path makes anew is written as any other.
    So is a write through np.ascontiguousarray or x.view(dtype), a view or not of an array
    forward mode copied the tangent of (`writes.READ_VIEW_OPS`)."""
    for graph in module.graphs.values():
        received = _received(graph)
        for region in _graphs_in(graph):
            defs = defining_nodes(region)
            for node in region.nodes:
                if node.op not in WRITE_OPS:
                    continue
                root, chain = view_chain(node.inputs[0], defs, writing=False)
                if any(view.op in ("array_contiguous", "array_view_as") for view in chain):
                    try:
                        view_chain(node.inputs[0], defs)  # refuses it, in both modes
                    except NotDifferentiableError as error:
                        raise DifferentiationError(str(error), error.loc) from None
                scope, scope_defs = region, defs
                while root in received:  # written inside a region: what it received
                    scope, root = received[root]
                    scope_defs = defining_nodes(scope)
                    root = view_chain(root, scope_defs, writing=False)[0]
                maker = scope_defs.get(root)
                if maker is not None and maker.op in ("if", "while", "call") \
                        and not _new_memory(scope, root):
                    construct = {"if": "branch", "while": "loop", "call": "call"}[maker.op]
                    raise DifferentiationError(
                        f"cannot differentiate a write into the array '{root.name or 'returned'}'"
                        f" a {construct} returned, which may be an array it was given, yet: "
                        "write into a copy (q = q.copy()) or into the array by its own name",
                        node.loc)


def _new_memory(graph: Graph, value: Value, carried: Value | None = None) -> bool:
    """Whether array `value` of `graph` is memory its graph made, on every path: made by an
    allocating or elementwise op (not through a view), or returned by a branch whose every
    region makes it, or carried by a loop that starts with and keeps such an array
    (`carried`: the body's parameter of that slot, new by induction)."""
    defs = defining_nodes(graph)
    root = view_chain(value, defs, writing=False)[0]
    node = defs.get(root)
    if root is carried:
        return True
    if node is None:  # a parameter
        return False
    if node.op in OPS:
        return node.op not in ("callback", "array_astype") and bool(  # astype: x itself
            OPS[node.op].traits & {"allocates", "elementwise"})          # for x's dtype
    slot = node.outputs.index(root)
    if node.op == "if":
        return all(_new_memory(region, region.outputs[slot]) for region in node.regions)
    if node.op == "while":
        body = node.regions[1]
        n_invariants = node.attrs["n_invariants"]
        return (_new_memory(graph, node.inputs[n_invariants + slot])
                and _new_memory(body, body.outputs[slot], body.params[n_invariants + slot]))
    return False


def _received(graph: Graph) -> dict[Value, tuple[Graph, Value]]:
    """For each parameter of a branch of `graph` and each invariant of its loops (in their
    regions, at any depth), the graph around it and the value it receives there: the same
    array under the region's name (a carried slot is not: the body's last value is)."""
    received = {}
    for scope in _graphs_in(graph):
        for node in scope.nodes:
            for _, params, inputs in region_bindings(node):
                shared = len(params) if node.op == "if" else node.attrs.get("n_invariants", 0)
                received.update((p, (scope, v)) for p, v in zip(params[:shared], inputs))
    return received


def _graphs_in(graph: Graph) -> Iterator[Graph]:
    """`graph` and every region within it."""
    yield graph
    for node in graph.walk():
        yield from node.regions


def _writes(module: Module, graph: Graph, seen: set[str]) -> bool:
    """Whether `graph`, its regions or what they call writes into an array."""
    for node in graph.walk():
        if node.op in WRITE_OPS:
            return True
        callee = node.attrs.get("callee") if node.op == "call" else None
        if callee is not None and callee not in seen:
            seen.add(callee)
            if _writes(module, module.graphs[callee], seen):
                return True
    return False
