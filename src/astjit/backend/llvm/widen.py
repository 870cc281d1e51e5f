"""astjit's own vectorizer, for the innermost loops of a fused kernel's unit-stride nest.

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
code without LLVM's optimizer (jit/split.py: `all_done`).

What widens is what computes the same per lane as the scalar instruction per point:
integer and float arithmetic, comparisons, selects, conversions, the lane-wise LLVM
intrinsics (`LANEWISE`) and the math calls libmvec has a variant of at the loop's lane
count (vecmath.py: the same variant LLVM's vectorizer would call). Anything else (a call
of another function, a branch, a read at another stride) leaves the loop to LLVM, as
before. The lanes per step: one vector register (`register_bits`) of the body's widest
element, as LLVM chose for these loops; the points the vector loop covers are those
LLVM's vector loop covered (the remainder runs scalar), so results are those LLVM's
vectorized loops gave.
"""
from __future__ import annotations

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

INVARIANT, STEP, ADDRESS, VECTOR = "invariant", "step", "address", "vector"
"""What a value of the loop's body is per point: the same at every point; the counter plus
an invariant (lane k: lane 0's + k); the address of an element at such an index; anything
else (one vector of the lanes' values)."""


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
        if loop_metadata.folds_tail(latch.terminator):
            raise NotWidened("a tail of masked steps (nests.count_up)")
        self.head, self.latch, self.before = head, latch, before
        self.counter, self.start, self.stop = phi, start, test.operands[1]
        *self.body, self.step, self.back = latch.instructions
        if step is not self.step or self.step.opname != "add" \
                or self.step.operands[0] is not phi \
                or getattr(self.step.operands[1], "constant", None) != 1:
            raise NotWidened("not a counted loop")
        self.kinds: dict[int, str] = {id(phi): STEP}
        widest = 0
        for instruction in self.body:
            kind = self._kind(instruction)
            self.kinds[id(instruction)] = kind
            if kind in (VECTOR, "store"):
                types = [op.type for op in instruction.operands] + [instruction.type]
                widest = max([widest, *(_bits(t) for t in types if _is_number(t))])
        if not widest:
            raise NotWidened("nothing varies")
        self.lanes = register_bits() // widest
        for instruction in self.body:
            if isinstance(instruction, ir.CallInstr) and self.kinds[id(instruction)] == VECTOR:
                self.vector_function(instruction, declare=False)  # raises where none

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
            if kinds[0] == INVARIANT:
                return INVARIANT
            raise NotWidened("a load")
        if isinstance(i, ir.StoreInstr):
            if kinds[1] == ADDRESS and _is_number(i.operands[0].type):
                return "store"
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

    def vector_function(self, call: ir.CallInstr, declare: bool = True) -> ir.Function | None:
        """The vector version of `call`'s function at this loop's lane count: a lane-wise
        intrinsic's (declared here unless `declare` is false: then None), or libmvec's
        variant, which the module declares (vecmath.call_math)."""
        module, name = call.callee.module, call.callee.name
        if _lanewise(name):
            base, _, suffix = name.rpartition(".")
            vector_name = f"{base}.v{self.lanes}{suffix}"
            found = module.globals.get(vector_name)
            if found is None and declare:
                vector = ir.VectorType(call.type, self.lanes)
                params = [ir.VectorType(a.type, self.lanes) if a.type == call.type else a.type
                          for a in call.args]
                found = ir.Function(module, ir.FunctionType(vector, params), vector_name)
            return found
        for variant, lanes in _variants(call):
            if lanes == self.lanes and variant in module.globals:
                return module.globals[variant]
        raise NotWidened(f"no {self.lanes}-lane variant of {name}")

    def emit(self, em: FunctionEmitter) -> None:
        """The loop made one of two steps: `lanes` points at once while that many are left,
        else one (the scalar body, as emitted). One loop, not a vector loop and a scalar one
        after it: LLVM's loop extractor makes a function of each loop, and the code
        generator's work per function was a good part of a small kernel's."""
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
        vector, scalar = (function.insert_basic_block(at + k, f"{name}.{part}")
                          for k, part in enumerate(("widened", "scalar")))
        latch = function.insert_basic_block(function.blocks.index(self.latch) + 1,
                                            f"{name}.latch")
        test, branch = head.instructions[1:]
        head.instructions, head.terminator = [self.counter], None
        for instruction in (test, branch):
            instruction.parent = scalar
        scalar.instructions, scalar.terminator = [test, branch], branch
        with b.goto_block(head):
            b.cbranch(b.icmp_signed("<", self.counter, end), vector, scalar)
        with b.goto_block(vector):
            _Body(self, b, self.counter).emit()
            wide_step = b.add(self.counter, ir.Constant(self.counter.type, self.lanes),
                              flags=["nsw"])
            b.branch(latch)
        self.back.replace_usage(head, latch)
        self.back.metadata.pop("llvm.loop", None)
        with b.goto_block(latch):
            following = b.phi(self.counter.type)
            following.add_incoming(wide_step, vector)
            following.add_incoming(self.step, self.latch)
            b.branch(head)
        self.counter.incomings[1] = (following, latch)


class _Body:
    """The vector loop's body: each instruction of the scalar body again, an invariant or
    stepping one as a scalar (at lane 0), the others on vectors."""

    def __init__(self, plan: _Plan, b: ir.IRBuilder, counter: ir.Value) -> None:
        self.plan, self.b = plan, b
        self.scalar: dict[int, ir.Value] = {id(plan.counter): counter}
        self.vector: dict[int, ir.Value] = {}

    def emit(self) -> None:
        for i in self.plan.body:
            kind = self.plan.kind_of(i)
            if kind == "store":
                value, address = i.operands
                self._memory(self.b.store(self.wide(value), self._pointer(address), align=i.align),
                             i)
            elif kind == VECTOR:
                self.vector[id(i)] = self._widened(i)
            else:
                self.scalar[id(i)] = self._again(i, [self.lane0(op) for op in i.operands])

    def lane0(self, value: ir.Value) -> ir.Value:
        return self.scalar.get(id(value), value)

    def wide(self, value: ir.Value) -> ir.Value:
        found = self.vector.get(id(value))
        if found is not None:
            return found
        lanes = self.plan.lanes
        vector_type = ir.VectorType(value.type, lanes)
        if isinstance(value, ir.Constant):
            found = ir.Constant(vector_type, [value.constant] * lanes)
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

    def _pointer(self, address: ir.Value) -> ir.Value:
        element = address.type.pointee
        return self.b.bitcast(self.lane0(address),
                              ir.VectorType(element, self.plan.lanes).as_pointer())

    def _widened(self, i: ir.Instruction) -> ir.Value:
        b, lanes = self.b, self.plan.lanes
        if isinstance(i, ir.LoadInstr):
            return self._memory(b.load(self._pointer(i.operands[0]), align=i.align), i)
        if isinstance(i, ir.CallInstr):
            function = self.plan.vector_function(i)
            args = [self.wide(a) if isinstance(t, ir.VectorType) else a
                    for a, t in zip(i.args, function.function_type.args)]
            return b.call(function, args, fastmath=getattr(i, "fastmath", ()))
        if isinstance(i, ir.CastInstr):
            return getattr(b, i.opname)(self.wide(i.operands[0]), ir.VectorType(i.type, lanes))
        return self._again(i, [self.wide(op) for op in i.operands])

    def _again(self, i: ir.Instruction, ops: list[ir.Value]) -> ir.Value:
        """`i` made again at the builder, on `ops` (scalars or vectors alike)."""
        b = self.b
        if isinstance(i, ir.GEPInstr):
            return b.gep(ops[0], ops[1:], inbounds=i.inbounds)
        if isinstance(i, ir.LoadInstr):
            return self._memory(b.load(ops[0], align=i.align), i)
        if isinstance(i, ir.ExtractValue):
            return b.extract_value(ops[0], i.indices)
        if isinstance(i, ir.CallInstr):
            return b.call(i.callee, ops[1:], fastmath=getattr(i, "fastmath", ()))
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

    @staticmethod
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


def _lanewise(name: str) -> bool:
    return name.rpartition(".")[0] in LANEWISE


def _is_number(ty: ir.Type) -> bool:
    return isinstance(ty, (ir.IntType, ir.FloatType, ir.DoubleType))


def _bits(ty: ir.Type) -> int:
    return {ir.FloatType: 32, ir.DoubleType: 64}.get(type(ty)) or max(ty.width, 8)
