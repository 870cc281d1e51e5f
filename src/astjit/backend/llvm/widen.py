"""astjit's own vectorizer, for the innermost loops of the unit-stride nests of fused kernels
(elementwise, reductions: fused.py, reduction_nests.py) and row groups (rowwise.py).

LLVM's loop vectorizer runs inside its optimizer, and for the small loops modules of
array kernels that optimizer (a hundred-odd passes, most of which find nothing to do)
and the machine code of what it leaves cost several milliseconds of a kernel's first
call (docs/measurements.md). An elementwise nest's innermost loop is the simplest case a
vectorizer meets: one block, each access at the loop's counter (unit stride) or outside
its reach, no store read back at another point (each output has an alias scope of its
own: kernel.AliasScope). `widened_nest` widens such loops as they are emitted: each
step of the loop then takes `lanes` points at once (vector loads, the body's instructions
on vectors, vector stores) while that many are left, and one point (the scalar body) after
that. Where every innermost loop of the nest widens, all its loops are marked done
(`loop_metadata.mark_done`); a loops module of done loops alone is compiled to machine
code without LLVM's optimizer (jit/split.py: `marks_done`).

What widens is what computes the same per lane as the scalar instruction per point:
integer and float arithmetic, comparisons, selects, conversions, the lane-wise LLVM
intrinsics (`LANEWISE`) and the math calls libmvec has a variant of at the loop's lane
count (vecmath.py: the same variant LLVM's vectorizer would call); and a reduction's
accumulators (`_Accumulator`: a sum, product, max, min, any, all), each lane accumulating
its own points, as in LLVM's vectorized loops. A row's tail after a loop of vector math
(nests.count_up) runs as masked vector steps, as LLVM's predicated loop ran it. Anything
else (a call of another function, a branch, a read at another stride) leaves the loop to
LLVM, as before. The lanes per step: one vector register (`register_bits`) of the body's widest
element, as LLVM chose for these loops; the points the vector steps cover are those
LLVM's vector loop covered (the remainder runs scalar), so elementwise results are those
LLVM's vectorized loops gave (a float sum's may differ in the last bits: its order is
unspecified, reduction_nests.py).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir

from . import loop_metadata
from .jit.host import host_features

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

BINARY = {"add": "add", "sub": "sub", "mul": "mul", "sdiv": "sdiv", "udiv": "udiv",
          "srem": "srem", "urem": "urem", "shl": "shl", "lshr": "lshr", "ashr": "ashr",
          "and": "and_", "or": "or_", "xor": "xor", "fadd": "fadd", "fsub": "fsub",
          "fmul": "fmul", "fdiv": "fdiv", "frem": "frem"}
"""LLVM's binary instructions, by the IRBuilder method that makes each."""

CASTS = ("trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp")

LANEWISE = ("llvm.sqrt", "llvm.fabs", "llvm.floor", "llvm.ceil", "llvm.trunc", "llvm.rint",
            "llvm.nearbyint", "llvm.round", "llvm.roundeven", "llvm.copysign", "llvm.minnum",
            "llvm.maxnum", "llvm.minimum", "llvm.maximum", "llvm.fma", "llvm.fmuladd",
            "llvm.smin", "llvm.smax", "llvm.umin", "llvm.umax", "llvm.abs")
"""The overloaded intrinsics whose vector form is the scalar one lane by lane."""

INVARIANT, STEP, ADDRESS, VECTOR, ACCUMULATOR = (
    "invariant", "step", "address", "vector", "accumulator")
"""What a value of the loop's body is per point: the same at every point; the counter plus
an invariant (lane k: lane 0's + k); the address of an element at such an index; anything
else (one vector of the lanes' values); a reduction's accumulator read from its stack slot
(`_Accumulator`: one per lane in the vector loop)."""

STORE, ACCUMULATE = "store", "accumulate"
"""What a store of the body is: of a value at the counter's element; of an accumulator."""


class NotWidened(Exception):
    """The loop holds something `widened_nest` does not widen: LLVM's vectorizer keeps it."""


def register_bits() -> int:
    """The host's vector register width astjit's machines prefer (jit/host.py)."""
    features = host_features()
    return 512 if "avx512f" in features else 256 if "avx2" in features else 128


def widened_nest(em: FunctionEmitter, emit) -> None:
    """Run `emit()` (a fused kernel's unit-stride nest, at `em`'s builder) and widen each
    innermost loop it made; where all widen, mark every loop it made done."""
    function = em.builder.function
    known = {id(block) for block in function.blocks}
    emit()
    made = [block for block in function.blocks if id(block) not in known]
    loops = loop_metadata.loops_made(function, made)
    order = {id(block): k for k, block in enumerate(function.blocks)}
    heads = [order[id(head)] for head, _ in loops]
    try:
        plans = [_Plan(head, latch) for head, latch in loops
                 if not any(order[id(head)] < k <= order[id(latch)] for k in heads)]
    except NotWidened:
        return
    for plan in plans:
        plan.emit(em)
    loop_metadata.mark_done([latch for _, latch in loop_metadata.loops_made(
        function, [b for b in function.blocks if id(b) not in known])])


class _Plan:
    """One innermost loop (`head`: its counter's phi, test and branch; `latch`: its one body
    block) read for widening: each body instruction's kind, the lanes per step. Raises
    NotWidened where the loop does not fit."""

    def __init__(self, head: ir.Block, latch: ir.Block) -> None:
        phi, test, branch = (head.instructions + [None, None, None])[:3]
        if len(head.instructions) != 3 or not isinstance(test, ir.ICMPInstr) \
                or test.op != "slt" or test.operands[0] is not phi \
                or not isinstance(branch, ir.ConditionalBranch) or len(phi.incomings) != 2:
            raise NotWidened("not a counted loop")
        (start, before), (step, back) = phi.incomings
        if back is not latch or not isinstance(before.terminator, ir.Branch) \
                or branch.operands[1] is not latch:
            raise NotWidened("not a counted loop of one block")
        self.masked = loop_metadata.folds_tail(latch.terminator)
        """A row's last few points (nests.count_up's tail): masked vector steps alone."""
        self.head, self.latch, self.before = head, latch, before
        self.counter, self.start, self.stop = phi, start, test.operands[1]
        *self.body, self.step, self.back = latch.instructions
        if step is not self.step or self.step.opname != "add" \
                or self.step.operands[0] is not phi \
                or getattr(self.step.operands[1], "constant", None) != 1:
            raise NotWidened("not a counted loop")
        self.kinds: dict[int, str] = {id(phi): STEP}
        self.slots = {id(i.operands[1]) for i in self.body if isinstance(i, ir.StoreInstr)
                      and isinstance(i.operands[1], ir.AllocaInstr)}
        """The stack slots the body stores to: accumulators (reduction_nests.Register)."""
        widest = 0
        for instruction in self.body:
            kind = self._kind(instruction)
            self.kinds[id(instruction)] = kind
            if kind in (VECTOR, STORE, ACCUMULATOR):
                types = [op.type for op in instruction.operands] + [instruction.type]
                widest = max([widest, *(_bits(t) for t in types if _is_number(t))])
        if not widest:
            raise NotWidened("nothing varies")
        if any(self.kinds[id(i)] == STORE for i in self.body) and any(
                self.kinds[id(i)] == INVARIANT and isinstance(i, ir.LoadInstr)
                and not isinstance(i.operands[0], ir.AllocaInstr) and "noalias" not in i.metadata
                for i in self.body):
            # an element read at every point where the loop stores, not known to lie apart
            raise NotWidened("a read the stores may change")
        if self.masked and any(_bits(i.type if isinstance(i, ir.LoadInstr) else
                                     i.operands[0].type) < 32 for i in self.body
                               if self.kinds[id(i)] in (STORE, VECTOR)
                               and isinstance(i, (ir.LoadInstr, ir.StoreInstr))):
            raise NotWidened("masked steps on elements narrower than AVX2's masked moves")
        self.lanes = register_bits() // widest
        self.accumulators = [_Accumulator(self.body, i, self.lanes) for i in self.body
                             if self.kinds[id(i)] == ACCUMULATE]
        for instruction in self.body:
            if isinstance(instruction, ir.CallInstr) and self.kinds[id(instruction)] == VECTOR:
                vector_function(instruction, self.lanes, declare=False)  # raises where none

    def kind_of(self, value: ir.Value) -> str:
        return self.kinds.get(id(value), INVARIANT)

    def _kind(self, i: ir.Instruction) -> str:
        kinds = [self.kind_of(op) for op in i.operands]
        if any(isinstance(op.type, ir.VectorType) for op in i.operands) \
                or isinstance(i.type, ir.VectorType):
            raise NotWidened("a vector value (a complex number)")
        if isinstance(i, ir.GEPInstr):
            if all(k == INVARIANT for k in kinds):
                return INVARIANT
            if kinds[0] == INVARIANT and len(kinds) == 2 and kinds[1] == STEP:
                return ADDRESS
            raise NotWidened("an address at another stride")
        if isinstance(i, ir.LoadInstr):
            if kinds[0] == ADDRESS and _is_number(i.type):
                return VECTOR
            if id(i.operands[0]) in self.slots and _is_number(i.type):
                return ACCUMULATOR
            if kinds[0] == INVARIANT:
                return INVARIANT
            raise NotWidened("a load")
        if isinstance(i, ir.StoreInstr):
            if kinds[1] == ADDRESS and _is_number(i.operands[0].type):
                return STORE
            if id(i.operands[1]) in self.slots and kinds[0] != INVARIANT:
                return ACCUMULATE
            raise NotWidened("a store")
        if isinstance(i, ir.CallInstr):
            self._callee(i)
        elif isinstance(i, ir.CastInstr):
            if i.opname not in CASTS and any(k != INVARIANT for k in kinds):
                raise NotWidened(f"a {i.opname}")
        elif isinstance(i, ir.ExtractValue):
            pass
        elif not isinstance(i, (ir.CompareInstr, ir.SelectInstr)) \
                and not (type(i) is ir.Instruction and (i.opname in BINARY or i.opname == "fneg")):
            raise NotWidened(f"a {i.opname}")
        if ADDRESS in kinds:
            raise NotWidened("an address used as a value")
        if all(k == INVARIANT for k in kinds):
            return INVARIANT
        if i.opname in ("add", "sub") and kinds[0] == STEP and kinds[1] == INVARIANT \
                or i.opname == "add" and kinds == [INVARIANT, STEP]:
            return STEP
        if not _is_number(i.type):
            raise NotWidened("a value that is not a number")
        return VECTOR

    def _callee(self, call: ir.CallInstr) -> None:
        name = getattr(call.callee, "name", "")
        if _variants(call) or _lanewise(name):
            return
        raise NotWidened(f"a call of {name}")

    def emit(self, em: FunctionEmitter) -> None:
        if self.masked:
            self._emit_masked(em)
        else:
            self._emit_two_steps(em)

    def _emit_masked(self, em: FunctionEmitter) -> None:
        """The loop's points `lanes` at a time, those past the end masked off: loads and
        stores by LLVM's masked intrinsics, each accumulator's lanes past the end kept at
        the identity and folded into its slot at every step (a tail runs a step or two).
        The scalar body goes."""
        b = em.builder
        function = self.head.function
        step = function.insert_basic_block(function.blocks.index(self.latch),
                                           f"{self.head.name}.masked")
        identities = {id(acc.load): acc.identities() for acc in self.accumulators}
        with b.goto_block(step):
            emitted = _Body(self, b, self.counter, identities)
            emitted.mask = b.icmp_signed("<", emitted.wide(self.counter), emitted.wide(self.stop))
            emitted.emit()
            for acc in self.accumulators:
                kept = b.select(emitted.mask, emitted.vector[id(acc.value)],
                                identities[id(acc.load)])
                b.store(acc.combined(b, b.load(acc.slot), acc.fold(b, kept)), acc.slot)
            following = b.add(self.counter, ir.Constant(self.counter.type, self.lanes),
                              flags=["nsw"])
            closing = b.branch(self.head)
        closing.set_metadata("llvm.loop", self.back.metadata["llvm.loop"])
        self.head.terminator.replace_usage(self.latch, step)
        self.counter.incomings[1] = (following, step)
        function.blocks.remove(self.latch)
        self.latch.__dict__.clear()  # its instructions and it: a cycle (teardown.py)

    def _emit_two_steps(self, em: FunctionEmitter) -> None:
        """The loop made one of two steps: `lanes` points at once while that many are left,
        else one (the scalar body, as emitted). One loop, not a vector loop and a scalar one
        after it: LLVM's loop extractor makes a function of each loop, and the code
        generator's work per function was a good part of a small kernel's; and no vector
        crosses from the loop's function to the glue, which is compiled for another CPU
        (the generic one: jit/engine.py) that passes vectors otherwise.

        Each accumulator is a vector across the vector steps (`_Accumulator`), every lane
        from the reduction's identity; whenever the loop turns to the scalar step it is
        folded into the stack slot the scalar body accumulates in, and starts again from
        the identity (so a fold after a scalar step changes nothing)."""
        b = em.builder
        function = self.head.function
        with b.goto_block(self.before):
            span = b.sub(self.stop, self.start)
            zero = ir.Constant(span.type, 0)
            span = b.select(b.icmp_signed(">", span, zero), span, zero)
            end = b.add(self.start, b.and_(span, ir.Constant(span.type, -self.lanes)),
                        flags=["nsw"])
        name, head = self.head.name, self.head
        at = function.blocks.index(head) + 1
        parts = ("widened", "fold", "scalar") if self.accumulators else ("widened", "scalar")
        vector, *fold, scalar = (function.insert_basic_block(at + k, f"{name}.{part}")
                                 for k, part in enumerate(parts))
        latch = function.insert_basic_block(function.blocks.index(self.latch) + 1,
                                            f"{name}.latch")
        test, branch = head.instructions[1:]
        head.instructions, head.terminator = [self.counter], None
        multiple = loop_metadata.trip_multiple(self.back)
        whole = multiple is not None and multiple % self.lanes == 0
        """Whether the vector steps take every point (the loop before a row's tail)."""
        if whole:
            with b.goto_block(scalar):
                b.branch(branch.operands[2])
        else:
            for instruction in (test, branch):
                instruction.parent = scalar
            scalar.instructions, scalar.terminator = [test, branch], branch
        identities = [acc.identities() for acc in self.accumulators]
        with b.goto_block(head):
            lanes = [b.phi(start.type) for start in identities]
            for lane, start in zip(lanes, identities):
                lane.add_incoming(start, self.before)
            b.cbranch(b.icmp_signed("<", self.counter, end), vector, fold[0] if fold else scalar)
        with b.goto_block(vector):
            emitted = _Body(self, b, self.counter,
                            {id(acc.load): lane for acc, lane in zip(self.accumulators, lanes)})
            emitted.emit()
            wide_step = b.add(self.counter, ir.Constant(self.counter.type, self.lanes),
                              flags=["nsw"])
            b.branch(latch)
        for block in fold:
            with b.goto_block(block):
                for acc, lane in zip(self.accumulators, lanes):
                    b.store(acc.combined(b, b.load(acc.slot), acc.fold(b, lane)), acc.slot)
                b.branch(scalar)
        steps = [(wide_step, [emitted.vector[id(acc.value)] for acc in self.accumulators],
                  vector)]
        if whole:
            function.blocks.remove(self.latch)
            self.latch.__dict__.clear()  # its instructions and it: a cycle (teardown.py)
        else:
            steps.append((self.step, identities, self.latch))
            self.back.replace_usage(head, latch)
            self.back.metadata.pop("llvm.loop", None)
        with b.goto_block(latch):
            following = b.phi(self.counter.type)
            again = [b.phi(start.type) for start in identities]
            for counter, values, block in steps:
                following.add_incoming(counter, block)
                for phi, value in zip(again, values):
                    phi.add_incoming(value, block)
            for lane, value in zip(lanes, again):
                lane.add_incoming(value, latch)
            b.branch(head)
        self.counter.incomings[1] = (following, latch)


class _Body:
    """The vector loop's body: each instruction of the scalar body again, an invariant or
    stepping one as a scalar (at lane 0), the others on vectors."""

    def __init__(self, plan: _Plan, b: ir.IRBuilder, counter: ir.Value,
                 accumulators: dict[int, ir.Value] | None = None) -> None:
        self.plan, self.b = plan, b
        self.scalar: dict[int, ir.Value] = {id(plan.counter): counter}
        self.vector: dict[int, ir.Value] = dict(accumulators or {})
        """Each value's vector: the accumulators' (the vector loop's phis) to begin with."""
        self.mask: ir.Value | None = None
        """The lanes a masked step loads and stores (`_Plan._emit_masked`)."""

    def emit(self) -> None:
        for i in self.plan.body:
            kind = self.plan.kind_of(i)
            if kind in (ACCUMULATOR, ACCUMULATE):
                continue  # the vector loop's phis carry them
            if kind == STORE:
                value, address = i.operands
                if self.mask is None:
                    _memory(self.b.store(self.wide(value), self._pointer(address),
                                         align=i.align), i)
                else:
                    self._masked("store", i, [self.wide(value), self._pointer(address)])
            elif kind == VECTOR:
                self.vector[id(i)] = self._widened(i)
            else:
                self.scalar[id(i)] = _again(self.b, i, [self.lane0(op) for op in i.operands])

    def lane0(self, value: ir.Value) -> ir.Value:
        return self.scalar.get(id(value), value)

    def wide(self, value: ir.Value) -> ir.Value:
        found = self.vector.get(id(value))
        if found is not None:
            return found
        lanes = self.plan.lanes
        vector_type = ir.VectorType(value.type, lanes)
        if isinstance(value, ir.Constant):
            found = _splat(vector_type, value)
        else:
            b = self.b
            one = b.insert_element(ir.Constant(vector_type, ir.Undefined), self.lane0(value),
                                   ir.Constant(ir.IntType(32), 0))
            found = b.shuffle_vector(one, ir.Constant(vector_type, ir.Undefined),
                                     ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                 [0] * lanes))
            if self.plan.kind_of(value) == STEP:
                found = b.add(found, ir.Constant(vector_type, list(range(lanes))))
        self.vector[id(value)] = found
        return found

    def _masked(self, what: str, i: ir.Instruction, operands: list[ir.Value],
                passthru: ir.Value | None = None) -> ir.Value:
        """LLVM's `llvm.masked.load` / `llvm.masked.store` standing for `i`."""
        b = self.b
        vector = operands[0].type.pointee if what == "load" else operands[0].type
        name = f"llvm.masked.{what}.v{vector.count}{_mangled(vector.element)}.p0"
        module = b.module
        align = ir.Constant(ir.IntType(32), i.align or _bits(vector.element) // 8)
        args = [*operands, align, self.mask] + ([passthru] if what == "load" else [])
        function = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(vector if what == "load" else ir.VoidType(),
                                    [a.type for a in args]), name)
        return _memory(b.call(function, args), i)

    def _pointer(self, address: ir.Value) -> ir.Value:
        element = address.type.pointee
        return self.b.bitcast(self.lane0(address),
                              ir.VectorType(element, self.plan.lanes).as_pointer())

    def _widened(self, i: ir.Instruction) -> ir.Value:
        b, lanes = self.b, self.plan.lanes
        if isinstance(i, ir.LoadInstr):
            if self.mask is None:
                return _memory(b.load(self._pointer(i.operands[0]), align=i.align), i)
            zeros = _Splat(ir.VectorType(i.type, lanes), "zeroinitializer")
            return self._masked("load", i, [self._pointer(i.operands[0])], zeros)
        if isinstance(i, ir.CallInstr):
            function = vector_function(i, lanes)
            args = [self.wide(a) if isinstance(t, ir.VectorType) else a
                    for a, t in zip(i.args, function.function_type.args)]
            return b.call(function, args, fastmath=getattr(i, "fastmath", ()))
        if isinstance(i, ir.CastInstr):
            return getattr(b, i.opname)(self.wide(i.operands[0]), ir.VectorType(i.type, lanes))
        return _again(self.b, i, [self.wide(op) for op in i.operands])


class _Accumulator:
    """A reduction's accumulator in the body (reduction_nests.Register): its slot's load,
    the combine of that value with the point's (`value`: one instruction, or a compare
    and the select it chooses by: a max or min), and the store of the result back.

    Across the vector steps each lane accumulates its own points from the reduction's
    identity; the lanes are then combined by halves (0-3 with 4-7, 0-1 with 2-3, 0 with
    1), and the result into the slot (`_Plan.emit`). Float sums and products must carry
    `reassoc` (reduction_nests: their order is unspecified, NumPy's pairwise one differs
    from a sequential one too): an ordered one is not widened, nor a max or min whose
    result would depend on where a NaN comes (a float compare without `nnan`)."""

    def __init__(self, body: list[ir.Instruction], store: ir.StoreInstr, lanes: int) -> None:
        self.store, self.lanes = store, lanes
        self.slot = store.operands[1]
        self.value = store.operands[0]
        loads = [i for i in body if isinstance(i, ir.LoadInstr) and i.operands[0] is self.slot]
        if len(loads) != 1 or body.index(loads[0]) > body.index(store):
            raise NotWidened("an accumulator not read once before it is written")
        self.load = loads[0]
        self.chain, self.other, self.identity = self._combine()
        users = {id(i) for i in body if any(op is self.load for op in i.operands)}
        if users != {id(i) for i in self.chain if _holds(i.operands, self.load)} or any(
                _holds(i.operands, self.value) for i in body if i is not store):
            raise NotWidened("an accumulator used apart from its combine")

    def _combine(self) -> tuple[list[ir.Instruction], ir.Value, ir.Constant]:
        """(the combine's instructions, the point's operand, the identity)."""
        value, load, ty = self.value, self.load, self.load.type
        operands = list(value.operands)
        if isinstance(value, ir.SelectInstr):
            test, x, acc = operands
            if acc is not load or not isinstance(test, ir.CompareInstr) \
                    or list(test.operands) != [x, load] \
                    or isinstance(test, ir.FCMPInstr) and "nnan" not in test.flags:
                # (without `nnan`, a NaN's place in the order would decide the result)
                raise NotWidened("a select that is no max or min")
            largest = test.op.lstrip("osu")[:2] in ("gt", "ge")
            if test.op.lstrip("osu")[:2] not in ("gt", "ge", "lt", "le"):
                raise NotWidened("a select that is no max or min")
            return [test, value], x, _extreme(ty, lowest=largest, signed=test.op[0] == "s")
        if isinstance(value, ir.CallInstr):
            base = value.callee.name.rpartition(".")[0]
            if base not in _MINMAX or not _holds(operands[1:], load):
                raise NotWidened("a call that is no max or min")
            x = next(op for op in operands[1:] if op is not load)
            lowest, signed = _MINMAX[base]
            return [value], x, _extreme(ty, lowest, signed)
        start = _IDENTITIES.get(getattr(value, "opname", None))
        if type(value) is not ir.Instruction or start is None or not _holds(operands, load) \
                or value.opname in ("fadd", "fmul") and "reassoc" not in value.flags:
            raise NotWidened("an accumulator's combine that does not reassociate")
        x = operands[1] if operands[0] is load else operands[0]
        return [value], x, ir.Constant(ty, start if isinstance(ty, ir.IntType) or start != 0
                                       else -0.0)

    def identities(self) -> ir.Constant:
        """The vector accumulator before the first vector step, and after a fold."""
        return _splat(ir.VectorType(self.load.type, self.lanes), self.identity)

    def fold(self, b: ir.IRBuilder, vector: ir.Value) -> ir.Value:
        """The lanes of `vector` combined into one value."""
        width = self.lanes
        i32 = ir.IntType(32)
        while width > 2:
            half = width // 2
            lo, hi = (b.shuffle_vector(vector, ir.Constant(vector.type, ir.Undefined),
                                       ir.Constant(ir.VectorType(i32, half),
                                                   list(range(k, k + half))))
                      for k in (0, half))
            vector, width = self.combined(b, lo, hi, half), half
        lo, hi = (b.extract_element(vector, ir.Constant(i32, k)) for k in (0, 1))
        return self.combined(b, lo, hi, None)

    def combined(self, b: ir.IRBuilder, acc: ir.Value, x: ir.Value,
                 lanes: int | None = None) -> ir.Value:
        """The combine again on `acc` (for the slot's value) and `x` (for the point's), of
        `lanes` lanes (None: scalars)."""
        made: dict[int, ir.Value] = {id(self.load): acc, id(self.other): x}
        for i in self.chain:
            ops = [made.get(id(op), op) for op in i.operands]
            if isinstance(i, ir.CallInstr) and lanes is not None:
                ops[0] = vector_function(i, lanes)
            made[id(i)] = _again(b, i, ops)
        return made[id(self.chain[-1])]


_IDENTITIES = {"add": 0, "or": 0, "xor": 0, "mul": 1, "and": -1, "fadd": 0.0, "fmul": 1.0}
"""The associative combines a reduction's accumulator takes, by their identity (a float
sum's is -0.0: `_Accumulator._combine`)."""

_MINMAX = {"llvm.maximum": (True, True), "llvm.minimum": (False, True),
           "llvm.smax": (True, True), "llvm.smin": (False, True),
           "llvm.umax": (True, False), "llvm.umin": (False, False)}
"""The max and min intrinsics a combine may call: (whose identity is the lowest value,
signed). Not maxnum / minnum: a lane of NaNs alone would come out as the identity."""


def _extreme(ty: ir.Type, lowest: bool, signed: bool) -> ir.Constant:
    """The lowest (or highest) value of `ty`: the identity of a max (or min)."""
    if not isinstance(ty, ir.IntType):
        return ir.Constant(ty, -math.inf if lowest else math.inf)
    if signed:
        return ir.Constant(ty, -(1 << (ty.width - 1)) if lowest else (1 << (ty.width - 1)) - 1)
    return ir.Constant(ty, 0 if lowest else (1 << ty.width) - 1)


def vector_function(call: ir.CallInstr, lanes: int, declare: bool = True) -> ir.Function | None:
    """The vector version of `call`'s function at `lanes`: a lane-wise intrinsic's
    (declared here unless `declare` is false: then None), or libmvec's variant, which the
    module declares (vecmath.call_math)."""
    module, name = call.callee.module, call.callee.name
    if _lanewise(name):
        base, _, suffix = name.rpartition(".")
        vector_name = f"{base}.v{lanes}{suffix}"
        found = module.globals.get(vector_name)
        if found is None and declare:
            vector = ir.VectorType(call.type, lanes)
            params = [ir.VectorType(a.type, lanes) if a.type == call.type else a.type
                      for a in call.args]
            found = ir.Function(module, ir.FunctionType(vector, params), vector_name)
        return found
    for variant, count in _variants(call):
        if count == lanes and variant in module.globals:
            return module.globals[variant]
    raise NotWidened(f"no {lanes}-lane variant of {name}")


def _again(b: ir.IRBuilder, i: ir.Instruction, ops: list[ir.Value]) -> ir.Value:
    """`i` made again at `b`, on `ops` (scalars or vectors alike); a call of the same
    function (its vector version is the caller's to give as `ops[0]`)."""
    if isinstance(i, ir.GEPInstr):
        return b.gep(ops[0], ops[1:], inbounds=i.inbounds)
    if isinstance(i, ir.LoadInstr):
        return _memory(b.load(ops[0], align=i.align), i)
    if isinstance(i, ir.ExtractValue):
        return b.extract_value(ops[0], i.indices)
    if isinstance(i, ir.CallInstr):
        return b.call(ops[0], ops[1:], fastmath=getattr(i, "fastmath", ()))
    if isinstance(i, ir.CastInstr):
        return getattr(b, i.opname)(ops[0], i.type)
    if isinstance(i, ir.SelectInstr):
        return b.select(*ops, flags=i.flags)
    if isinstance(i, ir.CompareInstr):
        made = type(i)(b.block, i.op, *ops, flags=i.flags)
        b._insert(made)  # llvmlite's builder names its compares by Python's operators
        return made
    if i.opname == "fneg":
        return b.fneg(ops[0], flags=i.flags)
    return getattr(b, BINARY[i.opname])(*ops, flags=i.flags)


def _memory(made: ir.Instruction, like: ir.Instruction) -> ir.Instruction:
    """`made` with the alias metadata of the access it stands for."""
    for key in ("alias.scope", "noalias"):
        if key in like.metadata:
            made.set_metadata(key, like.metadata[key])
    return made


def _variants(call: ir.CallInstr) -> list[tuple[str, int]]:
    """(name, lanes) of the libmvec variants `call` lists (vecmath.call_math)."""
    found = []
    for attribute in call.attributes:
        text = str(attribute)
        if text.startswith('"vector-function-abi-variant"='):
            for entry in text.split("=", 1)[1].strip('"').split(","):
                name = entry.split("(", 1)[0]
                found.append((name, int(name[6:].split("v", 1)[0])))
    return found


def _splat(vector_type: ir.VectorType, value: ir.Constant) -> ir.Constant:
    """`value` in every lane, in LLVM's short form (`splat (double 2.0)`): llvmlite would
    print every lane, and printing is a part of each compile."""
    return _Splat(vector_type, f"splat ({value.type} {value.get_reference()})")


class _Splat(ir.Constant):
    """A vector constant printed as given, every lane the same (llvmlite's
    FormattedConstant takes a vector's text for each lane's)."""

    def __init__(self, vector_type: ir.VectorType, text: str) -> None:
        super().__init__(vector_type, None)
        self.constant = text

    def _get_reference(self) -> str:
        return self.constant


def _mangled(ty: ir.Type) -> str:
    """An element type as LLVM's intrinsic names spell it (`f64`, `i32`)."""
    return {ir.DoubleType: "f64", ir.FloatType: "f32"}.get(type(ty)) or f"i{ty.width}"


def _holds(values, value: ir.Value) -> bool:
    """Whether `value` itself is among `values` (llvmlite's constants compare by text)."""
    return any(v is value for v in values)


def _lanewise(name: str) -> bool:
    return name.rpartition(".")[0] in LANEWISE


def _is_number(ty: ir.Type) -> bool:
    return isinstance(ty, (ir.IntType, ir.FloatType, ir.DoubleType))


def _bits(ty: ir.Type) -> int:
    return {ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty)) or max(ty.width, 8)
