"""Parallel loops on the CPU (`jit(parallel=True)`, marked by ir/passes/parallel.py): a
fused kernel's nest split along its outer axis (`nest`), a reduction over chunks into
per-chunk partials (`reduce_in_chunks`), and a `prange` loop (`emit_prange`). Each chunk
is an outlined function run by the runtime's threads (outline.py, runtime/threads.py).

Reductions: each chunk reduces its own range, from the reduction's identity, into a
partial (vectorized as the serial loop is); the partials are then combined on the calling
thread in chunk order (a prange loop's onto the value from before the loop). The chunks of
a loop of n iterations are fixed by n and the thread count, so for a given thread count a
float reduction gives the same result at every call; it differs from the serial one by
rounding only. Integer results are identical.

Errors: the lowest failing chunk's (runtime/threads.py), which is the one a serial loop
meets first; what the loop wrote into arrays before it failed is unspecified.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import ScalarType
from . import nests, new_arrays
from .lltypes import I32_T, I64_T, lltype
from .outline import MIN_CHUNK_WORK, chunk_count, outlined, run_chunks
from .runtime.threads import MAX_THREADS

if TYPE_CHECKING:
    from ...ir.core import Node
    from .emitter import FunctionEmitter


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


def in_parallel(em: FunctionEmitter, node: Node) -> bool:
    """Whether `node`'s loops run in parallel: marked so, and not already in a chunk."""
    return bool(node.attrs.get("parallel")) and not outlined(em)


VECTOR_GRAIN = 256
"""Where a nest's last axis is split (the loop LLVM vectorizes), its chunks start at
multiples of this many elements, a multiple of any vector loop's step (lanes times
interleaving: at most 64 bytes of 1-byte elements by 4). Each chunk's vector loop then
leaves remainder iterations only where the serial loop does, at the end: those may call
libm where the vector body calls libmvec (vecmath.py; where LLVM does not run them as
masked vector steps, nests.count_up), which may differ in the last bit,
so elsewhere a chunk's end would give elements other values than serial code gives them."""


def nest(em: FunctionEmitter, node: Node, dims: list[ir.Value], body, label: str) -> None:
    """`nests.loop_nest(em, dims, body, label)` split into chunks when `node` runs in
    parallel: along its last axis where the others have length 1 (a nest of one axis, or
    one whose axes fused.py merged into its last: the serial nest's one loop), else along
    its first; `body(indices)` must touch only what its point owns."""
    if not dims or not in_parallel(em, node):
        nests.loop_nest(em, dims, body, label)
        return
    b = em.builder
    work = new_arrays.size_of_dims(b, dims)
    if len(dims) == 1:
        _split(em, dims, body, label, work, last=True)
        return
    one_line = b.icmp_signed("==", new_arrays.size_of_dims(b, dims[:-1]), _i64(1))
    with b.if_else(one_line) as (line, rows):
        with line:
            _split(em, dims, body, label, work, last=True)
        with rows:
            _split(em, dims, body, label, work, last=False)


def _split(em: FunctionEmitter, dims: list[ir.Value], body, label: str, work: ir.Value,
           last: bool) -> None:
    """The nest in chunks of its first axis, or (`last`: the others of length 1) of its
    last in `VECTOR_GRAIN`s."""
    b = em.builder
    n = dims[-1] if last else dims[0]
    grain = VECTOR_GRAIN if last else 1
    units = in_units(b, n, grain)
    split = chunk_count(em, units, work)
    names = tuple(f"{label}.{name}" for name in ("head", "body", "done"))

    def chunk(k: ir.Value, start: ir.Value, stop: ir.Value) -> None:
        b = em.builder
        if not last:
            nests.count_up(b, start, stop,
                           lambda i: nests.loop_nest(em, dims[1:], body, label, (i,)), names)
            return
        start, stop = _elements(b, start, stop, n, grain)
        nests.count_up(b, start, stop, lambda i: body([_i64(0)] * (len(dims) - 1) + [i]), names,
                       rows=len(dims) > 1)  # as the serial nest's innermost loop is
    run_chunks(em, units, split, chunk)


def in_units(b: ir.IRBuilder, n: ir.Value, grain: int) -> ir.Value:
    """How many units of `grain` iterations [0, n) has, the last maybe shorter."""
    return b.sdiv(b.add(n, _i64(grain - 1)), _i64(grain)) if grain > 1 else n


def _elements(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, n: ir.Value, grain: int
              ) -> tuple[ir.Value, ir.Value]:
    """The iterations of units [start, stop) of `grain` iterations of [0, n)."""
    if grain == 1:
        return start, stop
    start, stop = b.mul(start, _i64(grain)), b.mul(stop, _i64(grain))
    return start, b.select(b.icmp_signed("<", stop, n), stop, n)


def reduce_in_chunks(em: FunctionEmitter, n: ir.Value, work: ir.Value, types: list[ir.Type],
                     partial: Callable[[ir.Value, ir.Value], list[ir.Value]],
                     combine: Callable[[int, ir.Value, ir.Value], ir.Value],
                     initial: list[ir.Value] | None = None, grain: int = 1) -> list[ir.Value]:
    """Reductions over [0, n) in chunks (`work`: the loop's whole work, for the chunk
    count; `grain`: chunks start at multiples of it, `VECTOR_GRAIN` where [0, n) is a
    vectorized loop): `partial(start, stop)` (emitted in the chunk) reduces a range to one
    value per reduction, of `types`; the partials are combined in chunk order by
    `combine(j, acc, x)`, onto `initial` (None: from the first chunk's)."""
    b = em.builder
    partials = [em.alloca(ir.ArrayType(t, MAX_THREADS)) for t in types]

    def slot(j: int, k: ir.Value) -> ir.Value:
        return em.builder.gep(partials[j], [ir.Constant(I32_T, 0), k], inbounds=True)

    def chunk(k: ir.Value, start: ir.Value, stop: ir.Value) -> None:
        for j, value in enumerate(partial(*_elements(em.builder, start, stop, n, grain))):
            em.builder.store(value, slot(j, k))

    units = in_units(b, n, grain)
    split = chunk_count(em, units, work)
    run_chunks(em, units, split, chunk)
    accs = [em.alloca(t) for t in types]
    for j, acc in enumerate(accs):
        b.store(b.load(slot(j, _i64(0))) if initial is None else initial[j], acc)

    def fold(k: ir.Value) -> None:
        for j, acc in enumerate(accs):
            b.store(combine(j, b.load(acc), b.load(slot(j, k))), acc)
    nests.count_up(b, _i64(1 if initial is None else 0), split.chunks, fold,
                   ("partials", "partials.body", "partials.done"))
    return [b.load(acc) for acc in accs]


# ---- prange loops ---------------------------------------------------------------------------

_IDENTITIES = {"add": 0, "sub": 0, "mul": 1, "bitor": 0, "bitxor": 0, "bitand": -1}


def _identity(op: str, t: ScalarType) -> ir.Constant:
    value = _IDENTITIES[op]
    if t.is_float:
        return ir.Constant(lltype(t), -0.0 if op == "add" else float(value))
    return ir.Constant(lltype(t), value)


def emit_prange(em: FunctionEmitter, node: Node) -> list[ir.Value]:
    """A parallel prange loop (a `while` with a `ParallelLoop`): its iterations split into
    chunks; its reductions reduced per chunk, then combined in order onto their values
    from before the loop."""
    plan = node.attrs["parallel"]
    n_inv = node.attrs["n_invariants"]
    b = em.builder
    invariants = em.values_of(node.inputs[:n_inv])
    initial = em.values_of(node.inputs[n_inv:])
    start, stop = initial[0], invariants[plan.stop]
    n = b.sub(stop, start)
    n = b.select(b.icmp_signed("<", n, _i64(0)), _i64(0), n)
    body = node.regions[1]
    made = {out: inner for inner in body.nodes for out in inner.outputs}
    reduced = [c for c, role in enumerate(plan.roles) if role == "reduce"]
    types = [v.type for v in node.outputs]

    def run(lo: ir.Value, hi: ir.Value) -> list[ir.Value]:
        """The body over iterations lo..hi-1 (in a chunk); the reductions' partials."""
        slots = [em.alloca(lltype(types[c])) for c in reduced]
        for c, s in zip(reduced, slots):
            em.builder.store(_identity(made[body.outputs[c]].op, types[c]), s)

        def step(j: ir.Value) -> None:
            carried = [em.builder.add(start, j)] + initial[1:]
            for c, s in zip(reduced, slots):
                carried[c] = em.builder.load(s)
            outs = em.emit_graph(body, invariants + carried)
            for c, s in zip(reduced, slots):
                em.builder.store(outs[c], s)
        nests.count_up(em.builder, lo, hi, step, ("prange.head", "prange.body", "prange.done"))
        return [em.builder.load(s) for s in slots]

    results = list(initial)
    # An iteration running a loop of its own is worth a chunk alone (a row of a matrix).
    work = b.mul(n, _i64(MIN_CHUNK_WORK)) if any(inner.op == "while" for inner in body.walk()) \
        else n
    if reduced:
        def combine(j: int, acc: ir.Value, x: ir.Value) -> ir.Value:
            c = reduced[j]
            op, param = made[body.outputs[c]], body.params[n_inv + c]
            if op.op == "sub":  # a partial of `s -= x` is minus its terms' sum: s - (0 - p)
                x = _apply(em, op, param, _identity("sub", types[c]), x)
            return _apply(em, op, param, acc, x)
        combined = reduce_in_chunks(em, n, work, [lltype(types[c]) for c in reduced], run,
                                    combine, [initial[c] for c in reduced])
        for c, value in zip(reduced, combined):
            results[c] = value
    else:
        run_chunks(em, n, chunk_count(em, n, work), lambda k, lo, hi: run(lo, hi))
    results[0] = b.add(start, n)
    ran = b.icmp_signed(">", n, _i64(0))
    for c, role in enumerate(plan.roles):
        if role == "last":
            results[c] = b.select(ran, b.sub(results[0], _i64(1)), initial[c])
    return results


def _apply(em: FunctionEmitter, op_node: Node, param, acc: ir.Value, x: ir.Value) -> ir.Value:
    """The reduction's own op (the body's `s op x`, with its semantics) on `acc` and `x`."""
    other = next(v for v in op_node.inputs if v is not param)
    saved = {v: em.values[v] for v in (param, other) if v in em.values}
    em.values[param], em.values[other] = acc, x
    try:
        (result,) = em.emit_node(em, op_node)
    finally:
        for v in (param, other):
            em.values.pop(v, None)
        em.values.update(saved)
    return result
