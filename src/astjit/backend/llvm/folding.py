"""A builder that folds what it can as it emits: `FoldingBuilder`.

The glue of an array function is compiled without optimization (jit/engine.py), so every
instruction emitted is printed, parsed, selected and run; a lowering written for any input
(an index counted from the end when negative, a slice's length for any step) would leave
its arithmetic on constants in place. Where the operands decide the result, the builder
answers with that value instead of an instruction:

- integer arithmetic, bitwise operations, shifts, comparisons and casts of constants, with
  LLVM's meaning: wrap-around at the type's width, i1 a one-bit integer, signed or unsigned
  as the operation says;
- identities whatever the other operand (x + 0, x * 1, x * 0, x & -1, x | 0, x >> 0 ...);
- an operation on one value twice (x - x, x ^ x, x & x, x | x; x == x, x < x ...): the
  shape checks of a broadcast between two arrays of one shape compare each length with
  itself;
- a select on a constant condition, or between one value twice, or `x == c ? c : x`
  (x whichever way: a broadcast's length where the operand's length is the result's);
- a value xor-ed twice with one constant (a negated condition negated again);
- a constant added to or subtracted from a sum or difference with a constant: one
  addition of the two constants' total;
- an address computed by a getelementptr of one index, 0: the pointer;
- a member extracted from an aggregate built by insertvalue: the value inserted there.

What LLVM leaves undefined or poison for the constants given (a division by 0 or of the
least value by -1, a shift by the width or more, an operation whose nsw/nuw/exact flag the
result breaks) is emitted as it is. Callers get an `ir.Value`, which is an instruction
only where one was needed: a caller that needs an instruction (to set metadata on it, or
to read its operands) must not assume one from these methods (phis, calls, loads and
stores are never folded).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from .aggregate_abi import AggregateCalls, leaves


def _bits(value: ir.Value) -> int | None:
    """The bits of `value` as an unsigned number, where it is an integer constant."""
    if type(value) is ir.Constant and isinstance(value.type, ir.IntType) \
            and isinstance(value.constant, int):
        return value.constant & ((1 << value.type.width) - 1)
    return None


def never(cond: ir.Value) -> bool:
    """Whether the condition `cond` is the constant false."""
    return _bits(cond) == 0


def _signed(bits: int, width: int) -> int:
    return bits - (1 << width) if bits >> (width - 1) else bits


def _constant(ty: ir.IntType, bits: int) -> ir.Constant:
    """The constant of `ty` holding the low bits of `bits`, written signed (i1: true/false)."""
    bits &= (1 << ty.width) - 1
    return ir.Constant(ty, bool(bits) if ty.width == 1 else _signed(bits, ty.width))


def _sdiv(x: int, y: int) -> int:
    quotient = abs(x) // abs(y)
    return quotient if (x < 0) == (y < 0) else -quotient


WRAPPING: dict[str, Callable[[int, int], int]] = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "shl": lambda x, y: x << y,
}
"""The operations whose result is the exact one's low bits; nsw/nuw say that it fits."""

PARTIAL: dict[str, Callable[[int, int, int], int | None]] = {
    "udiv": lambda a, b, w: a // b if b else None,
    "urem": lambda a, b, w: a % b if b else None,
    "sdiv": lambda a, b, w: _signed_division(a, b, w, _sdiv),
    "srem": lambda a, b, w: _signed_division(a, b, w, lambda x, y: x - y * _sdiv(x, y)),
    "lshr": lambda a, b, w: a >> b if b < w else None,
    "ashr": lambda a, b, w: _signed(a, w) >> b if b < w else None,
}
"""The operations LLVM leaves undefined for some operands: on unsigned bits (a, b) of width
w, None there."""

BITWISE: dict[str, Callable[[int, int], int]] = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}

COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}
"""llvmlite's comparison operators, on numbers read signed or unsigned as the icmp says."""


def _signed_division(a: int, b: int, width: int, op: Callable[[int, int], int]) -> int | None:
    x, y = _signed(a, width), _signed(b, width)
    if y == 0 or (y == -1 and x == -(1 << (width - 1))):
        return None
    return op(x, y)


def _wrapping(op: str, a: int, b: int, width: int, flags: Sequence[str]) -> int | None:
    """`op` on bits (a, b), or None where LLVM makes it poison (a flag broken, a shift of
    `width` or more)."""
    if op == "shl" and b >= width:
        return None
    exact = WRAPPING[op](a, b)
    if "nuw" in flags and not 0 <= exact < 1 << width:
        return None
    if "nsw" in flags:
        signed = WRAPPING[op](_signed(a, width), b if op == "shl" else _signed(b, width))
        if _signed(signed & ((1 << width) - 1), width) != signed:
            return None
    return exact


def _identity(op: str, lhs: ir.Value, rhs: ir.Value, b: int) -> ir.Value | None:
    """What `lhs op rhs` is whatever `lhs` is, for a constant `rhs` of bits `b` (commuted
    by the caller for the commutative operations)."""
    ones = (1 << lhs.type.width) - 1
    if b == 0 and op in ("add", "sub", "or", "xor", "shl", "lshr", "ashr"):
        return lhs
    signed_one = b == 1 and lhs.type.width > 1  # an i1's bit 1 is -1 read signed
    if (b == 1 and op in ("mul", "udiv")) or (signed_one and op == "sdiv"):
        return lhs
    if (b == 0 and op in ("mul", "and")) or (b == 1 and op == "urem") \
            or (signed_one and op == "srem"):
        return _constant(lhs.type, 0)
    if b == ones and op == "and":
        return lhs
    if b == ones and op == "or":
        return rhs
    return None


COMMUTATIVE = frozenset({"add", "mul", "and", "or", "xor"})

SELF: dict[str, int | None] = {"sub": 0, "xor": 0, "and": None, "or": None}
"""`x op x`: a constant's bits, or None for x itself."""


def _fold(op: str, lhs: ir.Value, rhs: ir.Value, flags: Sequence[str]) -> ir.Value | None:
    """The value of the integer operation `lhs op rhs`, where its operands decide it."""
    if lhs is rhs and op in SELF:
        return lhs if SELF[op] is None else _constant(lhs.type, SELF[op])
    a, b = _bits(lhs), _bits(rhs)
    if (a is None and b is None) or lhs.type != rhs.type:
        return None
    if a is not None and b is not None:
        width = lhs.type.width
        if op in WRAPPING:
            result = _wrapping(op, a, b, width, flags)
        elif op in PARTIAL:
            result = None if flags else PARTIAL[op](a, b, width)
        else:
            result = BITWISE[op](a, b)
        return None if result is None else _constant(lhs.type, result)
    if a is not None and op in COMMUTATIVE:
        lhs, rhs, b = rhs, lhs, a
    return None if b is None else _identity(op, lhs, rhs, b)


def _undone(op: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value | None:
    """x, where `lhs op rhs` is `(x ^ c) ^ c` for a constant c (a negated condition
    negated again), else None."""
    c = _bits(rhs)
    if op != "xor" or c is None or type(lhs) is not ir.Instruction or lhs.opname != "xor":
        return None
    x, inner = lhs.operands
    return x if _bits(inner) == c else None


def _offset(op: str, lhs: ir.Value, rhs: ir.Value) -> tuple[ir.Value, int] | None:
    """`(x ± c) ± d` as (x, the bits of ±c ± d), where c and d are constants: modulo 2**width
    the same value, and without the inner or outer flags no more often poison."""
    d = _bits(rhs)
    if d is None or op not in ("add", "sub") or type(lhs) is not ir.Instruction \
            or lhs.opname not in ("add", "sub"):
        return None
    x, inner = lhs.operands
    c = _bits(inner)
    if c is None:
        return None
    return x, (c if lhs.opname == "add" else -c) + (d if op == "add" else -d)


def _folding(op: str, emit: Callable) -> Callable:
    """The builder method of the binary operation `op`: its value where the operands decide
    it, else the instruction `emit` (an `ir.IRBuilder` method) makes."""
    def fold_or_emit(self, lhs, rhs, name="", flags=()):
        folded = _fold(op, lhs, rhs, flags)
        if folded is None:
            folded = _undone(op, lhs, rhs)
        if folded is not None:
            return folded
        offset = _offset(op, lhs, rhs)
        if offset is not None:
            x, c = offset
            total = _constant(x.type, c)
            return x if _bits(total) == 0 else ir.IRBuilder.add(self, x, total, name)
        return emit(self, lhs, rhs, name, flags)
    fold_or_emit.__name__ = emit.__name__
    return fold_or_emit


def _either_way(cond: ir.Value, lhs: ir.Value, rhs: ir.Value) -> ir.Value | None:
    """x, where `select cond, lhs, rhs` is `x == c ? c : x` or `x != c ? x : c` for a
    constant c (a broadcast's length: 1 where the length is 1, else the length), else None."""
    if type(cond) is not ir.ICMPInstr or cond.op not in ("eq", "ne"):
        return None
    chosen, other = (lhs, rhs) if cond.op == "eq" else (rhs, lhs)
    x, c = cond.operands
    if _bits(x) is not None:
        x, c = c, x
    constant = _bits(c)
    if constant is None or other is not x or _bits(chosen) != constant:
        return None
    return x


def _member_type(ty: ir.Type, path: Sequence[int]) -> ir.Type:
    for index in path:
        ty = ty.elements[index]
    return ty


def _eight_bytes(ty: ir.Type) -> bool:
    return isinstance(ty, (ir.PointerType, ir.DoubleType)) or ty == ir.IntType(64)


class FoldingBuilder(AggregateCalls):
    """`ir.IRBuilder` answering with a value, not an instruction, where the operands decide
    it (see the module docstring). Its calls follow aggregate_abi.py, and it loads and stores
    an aggregate member by member where it can (the fast instruction selector takes neither
    whole): a load's members are loaded alone, each where first read, right after the load
    (`_member_read`; the whole load goes where nothing else reads it: unused.py); a store
    writes the members of an insertvalue chain, a constant or such a load. An aggregate
    stored right after it was loaded, nothing written in between, is copied (`memcpy`).

    `writes`: how many calls and stores it has emitted; `loaded`: id of an aggregate it
    loaded -> (the pointer, the block, `writes` then); `members`: the same id -> the loads
    of its members made so far, by path."""

    def __init__(self, block: ir.Block | None = None) -> None:
        super().__init__(block)
        self.writes = 0
        self.loaded: dict[int, tuple[ir.Value, ir.Block, int]] = {}
        self.members: dict[int, dict[tuple[int, ...], ir.Value]] = {}

    add = _folding("add", ir.IRBuilder.add)
    sub = _folding("sub", ir.IRBuilder.sub)
    mul = _folding("mul", ir.IRBuilder.mul)
    udiv = _folding("udiv", ir.IRBuilder.udiv)
    sdiv = _folding("sdiv", ir.IRBuilder.sdiv)
    urem = _folding("urem", ir.IRBuilder.urem)
    srem = _folding("srem", ir.IRBuilder.srem)
    shl = _folding("shl", ir.IRBuilder.shl)
    lshr = _folding("lshr", ir.IRBuilder.lshr)
    ashr = _folding("ashr", ir.IRBuilder.ashr)
    and_ = _folding("and", ir.IRBuilder.and_)
    or_ = _folding("or", ir.IRBuilder.or_)
    xor = _folding("xor", ir.IRBuilder.xor)

    def _icmp(self, prefix, cmpop, lhs, rhs, name):
        if lhs is rhs and cmpop in COMPARISONS:
            return ir.Constant(ir.IntType(1), COMPARISONS[cmpop](0, 0))
        a, b = _bits(lhs), _bits(rhs)
        if a is not None and b is not None and cmpop in COMPARISONS:
            if prefix == "s":
                a, b = _signed(a, lhs.type.width), _signed(b, lhs.type.width)
            return ir.Constant(ir.IntType(1), COMPARISONS[cmpop](a, b))
        return super()._icmp(prefix, cmpop, lhs, rhs, name)

    def select(self, cond, lhs, rhs, name="", flags=()):
        known = _bits(cond)
        if known is not None:
            return lhs if known else rhs
        if lhs is rhs:
            return lhs
        same = _either_way(cond, lhs, rhs)
        if same is not None:
            return same
        return super().select(cond, lhs, rhs, name, flags)

    def trunc(self, value, typ, name=""):
        folded = _cast(value, typ, signed=False)
        return super().trunc(value, typ, name) if folded is None else folded

    def zext(self, value, typ, name=""):
        folded = _cast(value, typ, signed=False)
        return super().zext(value, typ, name) if folded is None else folded

    def sext(self, value, typ, name=""):
        folded = _cast(value, typ, signed=True)
        return super().sext(value, typ, name) if folded is None else folded

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if len(indices) == 1 and _bits(indices[0]) == 0 and source_etype is None:
            return ptr  # the address itself
        return super().gep(ptr, indices, inbounds, name, source_etype)

    def extract_value(self, agg, idx, name=""):
        path = list(idx) if isinstance(idx, (tuple, list)) else [idx]
        while isinstance(agg, ir.InsertValue):
            inserted = list(agg.indices)
            if inserted == path:
                return agg.value
            common = min(len(inserted), len(path))
            if inserted[:common] != path[:common]:
                agg = agg.aggregate  # another member: the insert left this one as it was
            elif len(inserted) < len(path):
                agg, path = agg.value, path[common:]  # within the member inserted
            else:
                break  # a member that holds the one inserted
        if type(agg) is ir.Constant and agg.constant is None:  # zeroinitializer
            return _zero_member(agg.type, path)
        read = self.members.get(id(agg))
        if read is not None and any(leaf[:len(path)] == tuple(path) for leaf, _ in leaves(agg.type)):
            return self._member_read(agg, tuple(path), read)
        return super().extract_value(agg, path, name)

    def call(self, fn, args, name="", cconv=None, tail=False, fastmath=(), attrs=(),
             arg_attrs=None):
        self.writes += 1
        return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)

    def store(self, value, ptr, align=None):
        self.writes += 1
        members = leaves(value.type)
        if members is None:
            return super().store(value, ptr, align)
        source = self.loaded.get(id(value))
        if source is not None and source[1:] == (self.block, self.writes - 1) \
                and all(_eight_bytes(leaf) for _, leaf in members):
            return self._copy(ptr, source[0], 8 * len(members))
        if not isinstance(value, (ir.InsertValue, ir.Constant)) and id(value) not in self.members:
            return super().store(value, ptr, align)
        for path, _ in members:
            super().store(self.extract_value(value, list(path)), self._member(ptr, value.type, path))
        return None

    def load(self, ptr, name="", align=None, typ=None):
        value = super().load(ptr, name, align, typ)
        members = leaves(value.type)
        if members is not None:
            value.unread_goes = True  # read member by member, or not at all: unused.py
            self.loaded[id(value)] = (ptr, self.block, self.writes)
            self.members[id(value)] = {}
        return value

    def _member_read(self, load: ir.LoadInstr, path: tuple[int, ...],
                     done: dict[tuple[int, ...], ir.Value]) -> ir.Value:
        """The member at `path` of the aggregate `load` loaded, loaded alone right after it
        (where the memory holds what `load` read), once; an aggregate member is such a load
        itself."""
        if path not in done:
            block, anchor, where = self.block, self._anchor, load.parent
            before = len(where.instructions)
            self.position_after(load)
            ty = _member_type(load.type, path)
            member = ir.IRBuilder.load(self, self._member(load.operands[0], load.type, path),
                                       typ=ty)
            member.unread_goes = True
            if leaves(ty) is not None:  # an aggregate member: itself read member by member
                self.loaded[id(member)] = (member.operands[0], *self.loaded[id(load)][1:])
                self.members[id(member)] = {}
            done[path] = member
            self.position_at_end(block)
            at_or_after = where.instructions.index(load) < anchor
            self._anchor = anchor + (len(where.instructions) - before
                                     if block is where and at_or_after else 0)
        return done[path]

    def _copy(self, target: ir.Value, source: ir.Value, size: int) -> ir.Instruction:
        """`size` bytes at `source` copied to `target`: an aggregate stored where it was
        just loaded from other memory, whose members the copy need not hold in registers."""
        byte_pointer = ir.IntType(8).as_pointer()
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [byte_pointer, byte_pointer,
                                                               ir.IntType(64)])
        return super().call(memcpy, [self.bitcast(target, byte_pointer),
                                     self.bitcast(source, byte_pointer),
                                     ir.Constant(ir.IntType(64), size),
                                     ir.Constant(ir.IntType(1), 0)])

    def _member(self, ptr: ir.Value, ty: ir.Type, path: tuple[int, ...]) -> ir.Value:
        """The address of the member at `path` of the aggregate of type `ty` at `ptr`."""
        if ptr.type.is_opaque or ptr.type.pointee != ty:
            ptr = self.bitcast(ptr, ty.as_pointer())
        return self.gep(ptr, [ir.Constant(ir.IntType(32), k) for k in (0, *path)], inbounds=True)

    def copy(self, value: ir.Value) -> ir.Value:
        """`value + 0` emitted as an instruction: a copy of `value` made here (see
        `FunctionEmitter.fail_with_values`); a constant needs none."""
        if isinstance(value, ir.Constant):
            return value
        return ir.IRBuilder.add(self, value, ir.Constant(value.type, 0))


def _cast(value: ir.Value, typ: ir.Type, signed: bool) -> ir.Constant | None:
    """A constant integer `value` as the integer type `typ` (its bits cut to the width, or
    extended with zeros, or with its sign where `signed`); None where `value` is not one."""
    bits = _bits(value)
    if bits is None or not isinstance(typ, ir.IntType):
        return None
    return _constant(typ, _signed(bits, value.type.width) if signed else bits)


def _zero_member(ty: ir.Type, path: list[int]) -> ir.Constant:
    return ir.Constant(_member_type(ty, path), None)
