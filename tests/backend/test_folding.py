"""The folding builder (backend/llvm/folding.py) against LLVM itself: each operation is
compiled unfolded and run on edge-case constants; wherever the builder folds, its value
must be the one the machine code computes. And the unused instructions it leaves behind
are taken out (unused.py), effects kept."""
import ctypes
import itertools

import llvmlite.binding as llvm
import pytest
from llvmlite import ir

from astjit.backend.llvm.folding import FoldingBuilder
from astjit.backend.llvm.unused import remove_unused

WIDTHS = (1, 8, 64)
BINARY = ("add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and_",
          "or_", "xor")
FLAGS = ((), ("nsw",), ("nuw",), ("nsw", "nuw"))
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
CASTS = (("trunc", 8, 1), ("zext", 1, 8), ("sext", 1, 8), ("trunc", 64, 8), ("zext", 8, 64),
         ("sext", 8, 64))


def _edge_values(width: int) -> list[int]:
    """Bit patterns around 0, 1, the width and the signed and unsigned limits."""
    if width == 1:
        return [0, 1]
    top = 1 << (width - 1)
    values = {0, 1, 2, 3, 7, width - 1, width, top - 1, top, top + 1}
    values |= {(1 << width) - v for v in (1, 2, 3)}
    return sorted(v & ((1 << width) - 1) for v in values)


def _ctype(width: int):
    return {1: ctypes.c_uint8, 8: ctypes.c_uint8, 64: ctypes.c_uint64}[width]


@pytest.fixture(scope="module")
def machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine()


def _compiled(machine, build):
    """Run `build(builder, args)` into functions of a fresh module; {name: callable}."""
    module = ir.Module()
    signatures = build(module)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), machine)
    engine.finalize_object()
    _compiled.engines.append(engine)  # kept alive with its code
    return {name: ctypes.CFUNCTYPE(*types)(engine.get_function_address(name))
            for name, types in signatures.items()}


_compiled.engines = []


def _unfolded(module, name, width, emit):
    """`name`: a function of two integers of `width` bits returning `emit(builder, a, b)`,
    built by the plain builder; its i1 results widened to i8 for ctypes."""
    ty = ir.IntType(width)
    returned = ir.IntType(8) if width == 1 else ty
    function = ir.Function(module, ir.FunctionType(returned, [ty, ty]), name)
    builder = ir.IRBuilder(function.append_basic_block())
    result = emit(builder, *function.args)
    if result.type != returned:
        result = builder.zext(result, returned)
    builder.ret(result)


def _folded(emit, a: int, b: int, width: int):
    """What the folding builder answers for `emit` on constants a and b: an int, or None
    where it emits an instruction."""
    function = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
    builder = FoldingBuilder(function.append_basic_block())
    ty = ir.IntType(width)
    result = emit(builder, ir.Constant(ty, a), ir.Constant(ty, b))
    if not isinstance(result, ir.Constant):
        return None
    return int(result.constant) & ((1 << result.type.width) - 1)


def _cases():
    for width in WIDTHS:
        for op in BINARY:
            for flags in FLAGS if op in ("add", "sub", "mul", "shl") else ((),):
                def emit(b, x, y, op=op, flags=flags):
                    return getattr(b, op)(x, y, flags=flags)
                yield f"{op}.{'.'.join(flags)}.{width}", width, emit
        for signed, cmpop in itertools.product((True, False), COMPARISONS):
            def emit(b, x, y, signed=signed, cmpop=cmpop):
                return (b.icmp_signed if signed else b.icmp_unsigned)(cmpop, x, y)
            yield f"icmp.{'s' if signed else 'u'}{COMPARISONS.index(cmpop)}.{width}", width, emit
        def select(b, x, y):
            return b.select(b.trunc(x, ir.IntType(1)) if x.type.width > 1 else x, x, y)
        yield f"select.{width}", width, select


CASES = list(_cases())


def _poison(name: str, a: int, b: int, width: int) -> bool:
    """Whether LLVM gives the operation on (a, b) no defined value (then it must not fold)."""
    op, *flags = name.split(".")[:-1]
    flags = [f for f in flags if f]
    signed = [v - (1 << width) if v >> (width - 1) else v for v in (a, b)]
    least = -(1 << (width - 1))
    if op in ("udiv", "urem", "sdiv", "srem") and b == 0:
        return True
    if op in ("sdiv", "srem") and signed == [least, -1]:
        return True
    if op in ("shl", "lshr", "ashr") and b >= width:
        return True
    exact = {"add": a + b, "sub": a - b, "mul": a * b, "shl": a << b if b < width else 0}
    exact_signed = {"add": signed[0] + signed[1], "sub": signed[0] - signed[1],
                    "mul": signed[0] * signed[1], "shl": signed[0] * 2 ** min(b, width)}
    if "nuw" in flags and not 0 <= exact[op] < 1 << width:
        return True
    return "nsw" in flags and not least <= exact_signed[op] < -least


def test_folds_agree_with_llvm(machine):
    def build(module):
        for name, width, emit in CASES:
            _unfolded(module, name, width, emit)
        return {name: (_ctype(width), _ctype(width), _ctype(width)) for name, width, _ in CASES}

    functions = _compiled(machine, build)
    checked = 0
    for name, width, emit in CASES:
        values = _edge_values(width)
        for a, b in itertools.product(values, values):
            folded = _folded(emit, a, b, width)
            if _poison(name, a, b, width):
                assert folded is None, (name, a, b)
                continue
            assert folded is not None, (name, a, b)
            mask = 1 if name.startswith("icmp") else (1 << width) - 1
            assert folded == functions[name](a, b) & mask, (name, a, b)
            checked += 1
    assert checked > 9000


@pytest.mark.parametrize("cast, source, target", CASTS)
def test_casts_of_constants(cast, source, target):
    for value in _edge_values(source):
        function = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
        folded = getattr(FoldingBuilder(function.append_basic_block()), cast)(
            ir.Constant(ir.IntType(source), value), ir.IntType(target))
        signed = value - (1 << source) if cast == "sext" and value >> (source - 1) else value
        assert folded.constant & ((1 << target) - 1) == signed & ((1 << target) - 1)


def _function_of(*types):
    module = ir.Module()
    function = ir.Function(module, ir.FunctionType(ir.IntType(64), list(types)), "f")
    return function, FoldingBuilder(function.append_basic_block())


def test_identities_return_the_operand():
    function, b = _function_of(ir.IntType(64))
    (x,) = function.args
    zero, one, ones = (ir.Constant(x.type, v) for v in (0, 1, -1))
    for folded in (b.add(x, zero), b.add(zero, x), b.sub(x, zero), b.mul(x, one),
                   b.mul(one, x, flags=["nsw"]), b.sdiv(x, one), b.udiv(x, one), b.or_(x, zero),
                   b.and_(x, ones), b.xor(zero, x), b.shl(x, zero), b.ashr(x, zero),
                   b.select(ir.Constant(ir.IntType(1), True), x, zero),
                   b.select(ir.Constant(ir.IntType(1), 0), zero, x), b.sub(b.add(x, one), one)):
        assert folded is x
    for folded in (b.mul(x, zero), b.and_(zero, x), b.srem(x, one), b.urem(x, one)):
        assert str(folded) == "i64 0"
    assert not function.entry_basic_block.instructions[1:]  # only the inner x + 1


def test_one_value_twice():
    """x - x, x ^ x, x & x, x | x and x compared with itself need no instruction (a
    broadcast between two arrays of one shape checks each length against itself)."""
    function, b = _function_of(ir.IntType(64), ir.IntType(1))
    x, flag = function.args
    assert str(b.sub(x, x, flags=["nsw"])) == "i64 0" and str(b.xor(x, x)) == "i64 0"
    assert b.and_(x, x) is x and b.or_(flag, flag) is flag
    truths = {"==": True, "!=": False, "<": False, "<=": True, ">": False, ">=": True}
    for op, truth in truths.items():
        for compare in (b.icmp_signed, b.icmp_unsigned):
            folded = compare(op, x, x)
            assert isinstance(folded, ir.Constant) and folded.constant is truth, (op, compare)
    assert not function.entry_basic_block.instructions
    y = b.add(x, ir.Constant(x.type, 1))
    assert isinstance(b.icmp_signed("<", x, y), ir.ICMPInstr)  # two values: emitted


def test_length_or_one_and_double_negation_fold_to_the_value(machine):
    """`x == c ? c : x` (either spelling) and `(x ^ c) ^ c` are x for every x: the folded
    function returns its argument, and the plain builder's, compiled by LLVM, agrees on
    every edge value; the same shapes with another constant are emitted."""
    ty = ir.IntType(64)

    def forms(b, x, c, d):
        return {"eq": b.select(b.icmp_unsigned("==", x, c), c, x),
                "ne": b.select(b.icmp_signed("!=", c, x), x, c),
                "xor": b.xor(b.xor(x, c), c),
                "eq.other": b.select(b.icmp_unsigned("==", x, c), d, x),
                "xor.other": b.xor(b.xor(x, c), d)}

    names = ("eq", "ne", "xor", "eq.other", "xor.other")

    def build(module):
        for name in names:
            function = ir.Function(module, ir.FunctionType(ty, [ty]), name.replace(".", "_"))
            b = ir.IRBuilder(function.append_basic_block())
            b.ret(forms(b, function.args[0], ir.Constant(ty, 1), ir.Constant(ty, 2))[name])
        return {name.replace(".", "_"): (ctypes.c_uint64, ctypes.c_uint64) for name in names}

    functions = _compiled(machine, build)
    for x in _edge_values(64):
        for name in ("eq", "ne", "xor"):
            assert functions[name](x) == x, (name, x)
    function, b = _function_of(ty)
    (x,) = function.args
    folded = forms(b, x, ir.Constant(ty, 1), ir.Constant(ty, 2))
    assert folded["eq"] is x and folded["ne"] is x and folded["xor"] is x
    assert isinstance(folded["eq.other"], ir.SelectInstr)
    assert isinstance(folded["xor.other"], ir.Instruction) and folded["xor.other"] is not x


def test_what_is_not_folded_is_emitted():
    function, b = _function_of(ir.IntType(64), ir.IntType(64))
    x, y = function.args
    assert isinstance(b.add(x, y), ir.Instruction)
    assert isinstance(b.sdiv(x, ir.Constant(x.type, 0)), ir.Instruction)
    assert isinstance(b.sub(ir.Constant(x.type, 0), x), ir.Instruction)  # -x, not x
    copy = b.copy(x)
    assert isinstance(copy, ir.Instruction) and copy.operands[0] is x


def test_members_of_built_aggregates():
    struct = ir.LiteralStructType([ir.IntType(8).as_pointer(), ir.ArrayType(ir.IntType(64), 2)])
    function, b = _function_of(ir.IntType(64), struct)
    n, argument = function.args
    built = b.insert_value(b.insert_value(ir.Constant(struct, None), n, [1, 0]),
                           ir.Constant(ir.IntType(64), 7), [1, 1])
    assert b.extract_value(built, [1, 0]) is n
    assert str(b.extract_value(built, [1, 1])) == "i64 7"
    assert str(b.extract_value(built, 0)) == "i8* null"  # never inserted: zeroinitializer
    assert isinstance(b.extract_value(built, 1), ir.ExtractValue)  # holds both inserts
    over = b.insert_value(argument, n, [1, 1])
    member = b.extract_value(over, [1, 0])
    assert isinstance(member, ir.ExtractValue) and member.aggregate is argument


def test_unused_instructions_are_taken_out_effects_kept():
    function, b = _function_of(ir.IntType(64), ir.IntType(64).as_pointer())
    x, pointer = function.args
    dead = b.mul(b.add(x, x), x)
    b.icmp_signed("<", dead, x)
    b.store(b.sub(x, ir.Constant(x.type, 3)), pointer)
    b.load(pointer)
    phi_block = b.append_basic_block()
    b.branch(phi_block)
    b.position_at_end(phi_block)
    phi = b.phi(x.type)
    kept = b.add(x, ir.Constant(x.type, 5))
    phi.add_incoming(kept, function.entry_basic_block)
    b.ret(x)
    remove_unused(function)
    ops = [i.opname for block in function.blocks for i in block.instructions]
    assert ops == ["sub", "store", "load", "br", "phi", "add", "ret"]
