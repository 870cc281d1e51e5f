"""Parallel loops (`jit(parallel=True)`): which loops a backend may split over threads.

`mark_parallel(module)` runs after every other pass, on the module a backend compiles. It
sets `attrs["parallel"]` on
- every `fused` node (`True`): its points are independent, so its nest may be split along
  its outer axis; a reduction over the whole space into per-chunk partials, combined in
  chunk order;
- every `while` node the frontend made of `for i in astjit.prange(...)` (`attrs["prange"]`)
  whose iterations are independent but for reductions: a `ParallelLoop` saying what each
  carried value is (Numba's rules for `prange`: `s += x` is a reduction, `out[i] = x`
  writes disjoint elements, anything else carried makes the loop serial).

A prange loop stays serial (`prange` is `range`, the same semantics) where its body calls
a function or Python, makes an array or a view (those touch reference counts, which are
not atomic), carries a value other than the counter, the loop variable and reductions
(`s = s * 0.5 + x`, a `break` or `return`'s flag), or steps by other than 1. Iterations
must not read what other iterations write: as in Numba, that is the program's
responsibility (a race, not a refusal).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis import contains_array
from ..core import Graph, Module, Node, Value
from ..types import ScalarType

REDUCTIONS = frozenset({"add", "sub", "mul", "bitor", "bitand", "bitxor"})
"""The ops whose `s = s op x` in a prange body is a reduction: associative and commutative
(floats: up to rounding), so per-chunk partials combined in order give the result; `sub`
(`s -= x`, s on the left only) as the sum of the negated terms."""

SERIAL_OPS = frozenset({"call", "callback"})
"""Ops that keep a prange body serial: they run other graphs (with their own checks of
the stack) or Python."""


@dataclass(frozen=True)
class ParallelLoop:
    """What a parallel prange loop's carried values are."""

    stop: int
    """The invariant the counter runs up to (exclusive); the counter starts at its initial
    value and steps by 1."""
    roles: tuple[str, ...]
    """Per carried value: 'counter' (the first), 'same' (unchanged), 'last' (the counter's
    last value: the loop variable bound before the loop, unread in the body) or 'reduce' (the body's
    output is `op(value, x)`, `op` in `REDUCTIONS`, and the body reads it nowhere else)."""


def mark_parallel(module: Module) -> Module:
    """Mark the loops of `module` that may run in parallel (in place); return it."""
    for graph in module.graphs.values():
        for node in graph.walk():
            if node.op == "fused":
                node.attrs["parallel"] = True
            elif node.op == "while" and node.attrs.get("prange"):
                plan = parallel_loop(node)
                if plan is not None:
                    node.attrs["parallel"] = plan
    return module


def parallel_loop(loop: Node) -> ParallelLoop | None:
    """The roles of a prange loop's carried values, or None where it must run serially."""
    n_inv = loop.attrs["n_invariants"]
    cond, body = loop.regions
    stop = _stop(cond, n_inv)
    if stop is None or not _steps_by_one(body, n_inv) or not _safe(body):
        return None
    made = {out: node for node in body.nodes for out in node.outputs}
    counter = body.params[n_inv]
    roles = ["counter"]
    for param, out in zip(body.params[n_inv + 1:], body.outputs[1:]):
        if out is param:
            roles.append("same")
        elif out is counter and _reads(param, body) == 0:
            roles.append("last")
        elif _reduces(made.get(out), param, body):
            roles.append("reduce")
        else:
            return None
    return ParallelLoop(stop, tuple(roles))


def _stop(cond: Graph, n_inv: int) -> int | None:
    """The invariant `cond` compares the counter with (`counter < stop`), if that is all
    it does."""
    if len(cond.nodes) != 1:
        return None
    (test,) = cond.nodes
    if test.op != "lt" or cond.outputs[0] is not test.outputs[0] \
            or test.inputs[0] is not cond.params[n_inv] or test.inputs[1] not in cond.params[:n_inv]:
        return None
    return cond.params.index(test.inputs[1])


def _steps_by_one(body: Graph, n_inv: int) -> bool:
    made = {out: node for node in body.nodes for out in node.outputs}
    step = made.get(body.outputs[0])
    if step is None or step.op != "add" or step.inputs[0] is not body.params[n_inv]:
        return False
    one = made.get(step.inputs[1])
    return one is not None and one.op == "const" and one.attrs["value"] == 1


def _safe(body: Graph) -> bool:
    return not any(node.op in SERIAL_OPS or any(contains_array(v.type) for v in node.outputs)
                   for node in body.walk())


def _reduces(node: Node | None, param: Value, body: Graph) -> bool:
    """Whether `node` is `param op x` (or `x op param`), a reduction, and the only read of
    `param` in `body`."""
    if node is None or node.op not in REDUCTIONS or node.inputs.count(param) != 1 \
            or not isinstance(param.type, ScalarType) or param.type.is_complex \
            or (node.op == "sub" and node.inputs[0] is not param):
        return False
    return _reads(param, body) == 1


def _reads(value: Value, body: Graph) -> int:
    """How many times `body` (its nodes, their regions, its outputs) reads `value`."""
    return sum(v is value for n in body.walk() for v in n.inputs) \
        + sum(v is value for v in body.outputs)
