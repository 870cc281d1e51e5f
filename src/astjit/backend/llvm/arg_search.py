"""The first extremum of a unit-stride row of floats or ints (np.argmax / argmin,
scans.arg_reduce) in explicit vectors: LLVM's loop vectorizer takes no index beside a
max, and a search for the max's first position after it (two passes) cost as much as
the max itself: a loop leaving at an unpredictable step.

One pass, in blocks of `BLOCK_BYTES`: a step reads `STEP_VECTORS` vectors, takes their
lane-wise best (a tree of compare-and-selects: `vmaxpd`, `vpmaxsq` ...), and where it
beats a lane's best so far (strictly) keeps it and the step's number in that lane (a
masked broadcast); an `or` of `fcmp uno` flags a NaN. At the block's end the first step
holding its best element is the least number kept by a lane holding it, and the first
position in that step holding it is the answer (`cttz` of the lanes' bits); a block that
beats the best so far (strictly), or holds the first NaN, replaces it. Where a NaN was
seen, the first NaN of its block is searched for, a vector a step.

A block's last step is read back from its end, overlapping the step before where what is
left is shorter than a step: a lane that held its best earlier keeps the earlier step. A
row shorter than a step is one block of one-vector steps (at most `STEP_VECTORS - 1` and
the last), written out one after another rather than as a loop: LLVM unrolled that loop
inside a loop over rows, and outside one it was a function of its own in the loops
module, compiled apart (docs/benchmarks.md). Rows shorter than a vector are scans.py's
element by element.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.types import BOOL, ScalarType
from . import array_layout, loop_metadata, nests
from .lltypes import I1, I64_T, lltype

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

VECTOR_BYTES = 64
"""One AVX-512 register (LLVM uses them for explicit 512-bit vectors; without AVX-512 one
is two AVX2 registers). 32 bytes ran slower (docs/measurements.md)."""
STEP_VECTORS = 4
"""Vectors per step: a step's compare and select wait on the tree of its vectors, whose
length hides their latency. 8 ran as fast, and a compile of argmax along rows ran 1.6x
the instructions (docs/measurements.md)."""
BLOCK_BYTES = 16384
"""A block (2048 float64s): a lane's step number is an integer of its element's width,
which counts the steps of a block in an int8 too."""
I32_T = ir.IntType(32)


def row_lanes(t: ScalarType) -> int | None:
    """Elements of `t` per vector, or None where rows of `t` are not searched here (bools,
    which compare as truth values, not bytes)."""
    return None if t == BOOL else VECTOR_BYTES * 8 // t.bits


def row_length(t: ScalarType) -> int:
    """Elements of `t` per step."""
    return row_lanes(t) * STEP_VECTORS


def block_length(t: ScalarType) -> int:
    """Elements of `t` per block."""
    return BLOCK_BYTES * 8 // t.bits


def _i64(value: int) -> ir.Constant:
    return ir.Constant(I64_T, value)


class _Row:
    """One row being searched: where it is, its element type and what `kind` seeks."""

    def __init__(self, em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value):
        self.em, self.b, self.kind, self.t, self.base = em, em.builder, kind, t, base
        self.lanes = row_lanes(t)
        self.vector = ir.VectorType(lltype(t), self.lanes)

    def load(self, i: ir.Value) -> ir.Value:
        """The vector of elements i, i+1, ... (aligned as one element)."""
        b = self.b
        pointer = b.bitcast(b.gep(self.base, [i], inbounds=True), self.vector.as_pointer())
        return b.load(pointer, align=array_layout.ITEM_SIZES[self.t])

    def beats(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """x > y (x < y for argmin), ordered: false where either is NaN."""
        b, op = self.b, ">" if self.kind == "max" else "<"
        if self.t.is_float:
            return b.fcmp_ordered(op, x, y)
        return b.icmp_unsigned(op, x, y) if self.t.is_unsigned else b.icmp_signed(op, x, y)

    def better(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """The greater (lesser) of x and y, y where x is NaN: one `vmaxpd x, y`."""
        return self.b.select(self.beats(x, y), x, y)

    def nan(self, x: ir.Value, y: ir.Value) -> ir.Value | None:
        """Lanes where x or y is NaN; None for ints."""
        return self.b.fcmp_unordered("uno", x, y) if self.t.is_float else None

    def equal(self, x: ir.Value, y: ir.Value) -> ir.Value:
        b = self.b
        return b.fcmp_ordered("==", x, y) if self.t.is_float else b.icmp_signed("==", x, y)

    def splat(self, value: ir.Value) -> ir.Value:
        b, vector = self.b, ir.VectorType(value.type, self.lanes)
        one = b.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(I32_T, 0))
        return b.shuffle_vector(one, ir.Constant(vector, ir.Undefined),
                                ir.Constant(ir.VectorType(I32_T, self.lanes), [0] * self.lanes))

    def across(self, v: ir.Value, combine) -> ir.Value:
        """`combine` of all lanes of `v` (halving it `log2(lanes)` times)."""
        b, width = self.b, self.lanes
        while width > 1:
            width //= 2
            low = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32_T, width), list(range(width))))
            high = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32_T, width),
                                                      list(range(width, 2 * width))))
            v = combine(high, low)
        return b.extract_element(v, ir.Constant(I32_T, 0))

    def any(self, mask: ir.Value) -> ir.Value:
        """Whether some lane of `mask` (<n x i1>) is set."""
        bits = self.b.bitcast(mask, ir.IntType(mask.type.count))
        return self.b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))


def _steps(b: ir.IRBuilder, start: ir.Value, stop: ir.Value, width: int) -> ir.Value:
    """How many whole steps of `width` elements fit in [start, stop)."""
    return b.udiv(b.sub(stop, start), _i64(width))


def _first_of(row: _Row, at: ir.Value, vectors: int, hits) -> ir.Value:
    """The first position of `vectors` vectors at `at` where `hits(vector)` holds (one
    does): the first vector's whose lanes' bits are not 0, and its first bit set."""
    b, lanes = row.b, row.lanes
    pick_at = pick_bits = None
    for j in reversed(range(vectors)):
        p = b.add(at, _i64(j * lanes), flags=["nsw"])
        v = b.bitcast(hits(row.load(p)), ir.IntType(lanes))
        v = b.zext(v, I64_T) if lanes < 64 else v
        if pick_at is None:
            pick_at, pick_bits = p, v
            continue
        some = b.icmp_unsigned("!=", v, _i64(0))
        pick_at, pick_bits = b.select(some, p, pick_at), b.select(some, v, pick_bits)
    lane = row.em.call_intrinsic("llvm.cttz", [pick_bits, ir.Constant(I1, 0)])
    return b.add(pick_at, lane, flags=["nsw"])


def _block_best(row: _Row, start: ir.Value, stop: ir.Value, vectors: int,
                written_out: int | None = None) -> tuple[ir.Value, ir.Value, ir.Value]:
    """The best element of [start, stop) (at least a step of `vectors` vectors back from
    `stop` in the row), the first position holding it, and whether some element is NaN
    (then neither is meaningful). With `written_out`, [start, stop) holds at most that
    many whole steps, taken one after another (each where it fits) without a loop."""
    em, b, lanes = row.em, row.b, row.lanes
    step = lanes * vectors
    count = ir.VectorType(ir.IntType(row.t.bits), lanes)
    acc, steps = em.alloca(row.vector), em.alloca(count)
    b.store(row.splat(b.load(b.gep(row.base, [start], inbounds=True))), acc)
    b.store(ir.Constant(count, [0] * lanes), steps)
    nan = em.alloca(ir.VectorType(I1, lanes)) if row.t.is_float else None
    if nan is not None:
        b.store(ir.Constant(nan.type.pointee, [0] * lanes), nan)

    def take(at: ir.Value, k: ir.Value) -> None:
        """The step of vectors at `at`, the `k`th (a lane's first best stays)."""
        xs = [row.load(b.add(at, _i64(j * lanes), flags=["nsw"])) for j in range(vectors)]
        if nan is not None:  # one compare flags two vectors' NaNs
            for x, y in zip(xs[::2], xs[1::2] or xs):
                b.store(b.or_(b.load(nan), row.nan(x, y)), nan)
        while len(xs) > 1:
            xs = [row.better(y, x) for x, y in zip(xs[::2], xs[1::2])]
        old = b.load(acc)
        beats = row.beats(xs[0], old)
        b.store(b.select(beats, xs[0], old), acc)
        b.store(b.select(beats, row.splat(b.trunc(k, count.element)) if count.element.width < 64
                         else row.splat(k), b.load(steps)), steps)

    whole = _steps(b, start, stop, step)
    if written_out is None:
        nests.count_up(b, _i64(0), whole, lambda k: take(
            b.add(start, b.mul(k, _i64(step), flags=["nsw"]), flags=["nsw"]), k),
            ("arg.max.head", "arg.max.body", "arg.max.done"))
    for k in range(written_out or 0):
        with b.if_then(b.icmp_signed("<", _i64(k), whole)):
            take(b.add(start, _i64(k * step), flags=["nsw"]), _i64(k))
    last = b.sub(stop, _i64(step))  # the last step, overlapping the one before
    take(last, whole)
    best = row.across(b.load(acc), row.better)
    # the first step where a lane holds the best element, and the first position in it
    first = b.select(row.equal(b.load(acc), row.splat(best)), b.load(steps),
                     ir.Constant(count, [(1 << (count.element.width - 1)) - 1] * lanes))
    k = row.across(first, lambda x, y: b.select(b.icmp_signed("<", x, y), x, y))
    k = b.sext(k, I64_T) if count.element.width < 64 else k
    # no lane holds it where the block starts with a NaN (then the NaN is the answer)
    at = b.select(b.icmp_signed(">=", k, whole), last,
                  b.add(start, b.mul(k, _i64(step), flags=["nsw"]), flags=["nsw"]))
    wanted = row.splat(best)
    position = _first_of(row, at, vectors, lambda x: row.equal(x, wanted))
    if nan is None:
        return best, position, ir.Constant(I1, 0)
    return best, position, row.any(b.load(nan))


def _first_nan(row: _Row, start: ir.Value, stop: ir.Value) -> ir.Value:
    """The first position in [start, stop) (at least one vector back from `stop` in the
    row) holding a NaN, which one does: one vector a step, leaving at the first that holds
    one, else the last vector (overlapping what was read)."""
    em, b, lanes = row.em, row.b, row.lanes
    at = em.alloca(I64_T)
    b.store(start, at)
    head, body, latch, done = (b.function.append_basic_block(f"arg.nan.{name}")
                               for name in ("head", "body", "latch", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.load(at)
    b.cbranch(b.icmp_signed("<=", b.add(i, _i64(lanes), flags=["nsw"]), stop), body, done)
    b.position_at_end(body)
    x = row.load(i)
    b.cbranch(row.any(row.nan(x, x)), done, latch)
    b.position_at_end(latch)
    b.store(b.add(i, _i64(lanes), flags=["nsw"]), at)
    loop_metadata.no_runtime_unroll(b.branch(head))
    b.position_at_end(done)
    i = b.load(at)
    i = b.select(b.icmp_signed("<=", b.add(i, _i64(lanes), flags=["nsw"]), stop), i,
                 b.sub(stop, _i64(lanes)))
    return _first_of(row, i, 1, lambda x: row.nan(x, x))


def first_extremum(em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value,
                   n: ir.Value) -> ir.Value:
    """The index of the first extremum (`kind` 'max' or 'min') of the `n` elements of `t`
    at `base`, one apart; `n` is at least `row_lanes(t)`. A row shorter than a step runs
    as one block in steps of one vector."""
    return _search(em, kind, t, base, n)


def _search(em: FunctionEmitter, kind: str, t: ScalarType, base: ir.Value,
            n: ir.Value) -> ir.Value:
    b = em.builder
    row = _Row(em, kind, t, base)
    size = block_length(t)
    best, at, found, nan_seen = (em.alloca(lltype(t)), em.alloca(I64_T), em.alloca(I64_T),
                                 em.alloca(I1))
    b.store(b.load(base), best)
    b.store(_i64(0), at)
    b.store(ir.Constant(I1, 0), nan_seen)

    def block(k):
        start = b.mul(k, _i64(size), flags=["nsw"])
        stop = b.add(start, _i64(size), flags=["nsw"])
        stop = b.select(b.icmp_signed("<", stop, n), stop, n)
        m, position, nan = _block_best(row, start, stop, STEP_VECTORS)
        take = b.and_(b.not_(b.load(nan_seen)), b.or_(nan, row.beats(m, b.load(best))))
        b.store(b.select(take, m, b.load(best)), best)
        b.store(b.select(take, start, b.load(at)), at)
        b.store(b.select(take, position, b.load(found)), found)
        b.store(b.or_(b.load(nan_seen), nan), nan_seen)
    with b.if_else(b.icmp_signed(">=", n, _i64(row_length(t))), likely=True) as (steps, short):
        with steps:
            b.store(_i64(0), found)
            blocks = b.udiv(b.add(n, _i64(size - 1)), _i64(size))
            nests.count_up(b, _i64(0), blocks, block, ("arg.blocks.head", "arg.blocks.body",
                                                         "arg.blocks.done"))
        with short:
            _, position, nan = _block_best(row, _i64(0), n, 1, STEP_VECTORS - 1)
            b.store(position, found)
            b.store(nan, nan_seen)
    if not t.is_float:
        return b.load(found)
    with b.if_then(b.load(nan_seen), likely=False):
        start = b.load(at)
        stop = b.add(start, _i64(size), flags=["nsw"])
        b.store(_first_nan(row, start, b.select(b.icmp_signed("<", stop, n), stop, n)), found)
    return b.load(found)
