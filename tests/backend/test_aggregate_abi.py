"""Aggregates across calls (backend/llvm/aggregate_abi.py) and the folding builder's loads and
stores of them (folding.py), compiled and run: a callee reads what the caller passed, however
the caller holds it; a member read after its memory changed is the one loaded; and the glue
of array kernels is selected without SelectionDAG, which is what the convention is for."""
import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

import astjit
from astjit.backend.llvm import aggregate_abi
from astjit.backend.llvm.folding import FoldingBuilder
from astjit.backend.llvm.unused import remove_unused

I64 = ir.IntType(64)
PAIR = ir.LiteralStructType([I64, ir.ArrayType(I64, 2)])
"""An aggregate of three members: (a, [b, c])."""


@pytest.fixture(scope="module")
def machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.Target.from_default_triple().create_target_machine()


_ENGINES = []


def _run(machine, module: ir.Module, name: str, *args: int) -> int:
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), machine)
    engine.finalize_object()
    _ENGINES.append(engine)  # kept alive with its code
    function = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_int64] * len(args))(
        engine.get_function_address(name))
    return function(*args)


def _weighted(module: ir.Module) -> ir.Function:
    """`weighted(p: PAIR) -> a + 10 b + 100 c`, in the convention."""
    function = aggregate_abi.declare(module, ir.FunctionType(I64, [PAIR]), "weighted")
    b = aggregate_abi.AggregateCalls(function.append_basic_block("entry"))
    (pair,) = aggregate_abi.arguments(b, function)
    a, x, y = (b.extract_value(pair, path) for path in ([0], [1, 0], [1, 1]))
    b.ret(b.add(a, b.add(b.mul(x, I64(10)), b.mul(y, I64(100)))))
    return function


def test_an_aggregate_parameter_is_a_pointer():
    module = ir.Module()
    function = _weighted(module)
    assert [str(t) for t in function.function_type.args] == [str(PAIR.as_pointer())]
    assert aggregate_abi.logical_type(function).args[0] == PAIR
    scalar = aggregate_abi.declare(module, ir.FunctionType(I64, [I64]), "scalar")
    assert scalar.function_type.args[0] == I64
    assert aggregate_abi.leaves(ir.ArrayType(I64, 40)) is None  # too many: passed whole
    assert [path for path, _ in aggregate_abi.leaves(PAIR)] == [(0,), (1, 0), (1, 1)]


def test_callees_read_what_callers_pass(machine):
    """Built by insertvalue (a slot, stored member by member), passed on from the caller's
    own parameter (its home: no copy), merged by a phi (a slot, stored whole)."""
    module = ir.Module()
    weighted = _weighted(module)
    forward = aggregate_abi.declare(module, ir.FunctionType(I64, [PAIR]), "forward")
    b = FoldingBuilder(forward.append_basic_block("entry"))
    (pair,) = aggregate_abi.arguments(b, forward)
    b.ret(b.call(weighted, [pair]))
    remove_unused(forward)
    assert [i.opname for i in forward.blocks[0].instructions] == ["call", "ret"]

    caller = ir.Function(module, ir.FunctionType(I64, [I64, I64, I64, I64]), "caller")
    a, x, y, flag = caller.args
    b = FoldingBuilder(caller.append_basic_block("entry"))
    built = b.insert_value(b.insert_value(b.insert_value(ir.Constant(PAIR, None), a, [0]),
                                          x, [1, 0]), y, [1, 1])
    direct = b.call(forward, [built])
    other = b.insert_value(built, b.add(a, I64(5)), [0])
    yes, no, join = (caller.append_basic_block(n) for n in ("yes", "no", "join"))
    b.cbranch(b.trunc(flag, ir.IntType(1)), yes, no)
    for block in (yes, no):
        b.position_at_end(block)
        b.branch(join)
    b.position_at_end(join)
    merged = b.phi(PAIR)
    merged.add_incoming(built, yes)
    merged.add_incoming(other, no)
    b.ret(b.add(b.mul(direct, I64(1000)), b.call(weighted, [merged])))
    assert _run(machine, module, "caller", 1, 2, 3, 1) == 321 * 1000 + 321
    assert _run(machine, module, "caller", 1, 2, 3, 0) == 321 * 1000 + 326


def _slot_function(module: ir.Module, name: str):
    """`name(a, x, y) -> i64` with a stack slot holding (a, [x, y]) and its builder."""
    function = ir.Function(module, ir.FunctionType(I64, [I64, I64, I64]), name)
    b = FoldingBuilder(function.append_basic_block("entry"))
    slot = b.alloca(PAIR)
    for k, (value, path) in enumerate(zip(function.args, ([0], [1, 0], [1, 1]))):
        b.store(value, b.gep(slot, [I64(0)] + [ir.Constant(ir.IntType(32), i) for i in path]))
    return function, b, slot


def test_members_read_after_their_memory_changed_are_those_loaded(machine):
    module = ir.Module()
    function, b, slot = _slot_function(module, "reread")
    pair = b.load(slot)
    b.store(ir.Constant(PAIR, None), slot)  # overwritten: members stored one by one
    x = b.extract_value(pair, [1, 0])  # read now: loaded where `pair` was
    copy = b.alloca(PAIR)
    b.store(pair, copy)  # stored member by member, as loaded (not copied from `slot`)
    y = b.extract_value(b.load(copy), [1, 1])
    b.ret(b.add(b.mul(x, I64(10)), y))
    remove_unused(function)
    assert "memcpy" not in str(module)
    assert _run(machine, module, "reread", 1, 2, 3) == 23


def test_an_aggregate_stored_right_after_its_load_is_copied(machine):
    module = ir.Module()
    function, b, slot = _slot_function(module, "copied")
    copy = b.alloca(PAIR)
    b.store(b.load(slot), copy)
    b.ret(b.extract_value(b.load(copy), [1, 1]))
    remove_unused(function)
    assert "llvm.memcpy" in str(module)
    assert _run(machine, module, "copied", 1, 2, 3) == 3


def test_unread_members_are_not_loaded():
    module = ir.Module()
    function, b, slot = _slot_function(module, "unread")
    pair = b.load(slot)
    b.ret(b.extract_value(pair, [1, 1]))
    remove_unused(function)
    loads = [i for i in function.blocks[0].instructions if isinstance(i, ir.LoadInstr)]
    assert [str(i.type) for i in loads] == ["i64"]  # the one member read, not the whole


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def matmul(a, b):
    return a @ b


def affine(x, w, b):
    return np.tanh(x @ w + b)


def sorted_rows(x):
    return np.sort(x.reshape(-1, 4), axis=1)


@pytest.mark.parametrize("kernel, args", [
    (softmax, (np.ones((3, 5)),)),
    (matmul, (np.ones((3, 4)), np.ones((4, 2)))),
    (affine, (np.ones((3, 4)), np.ones((4, 2)), np.ones(2))),
    (sorted_rows, (np.arange(8.0),)),
])
def test_the_glue_needs_no_selection_dag(capfd, kernel, args):
    """LLVM reports each function whose fast instruction selection fell back to SelectionDAG;
    the glue of these kernels (their wrapper, the function calling their loops and helpers)
    has no such function."""
    compiled = astjit.jit(kernel)
    llvm.set_option("", "-fast-isel-report-on-fallback=true")
    try:
        capfd.readouterr()
        result = compiled(*args)
        reported = capfd.readouterr().err
    finally:
        llvm.set_option("", "-fast-isel-report-on-fallback=false")
    np.testing.assert_allclose(result, kernel(*args))
    assert "fallback" not in reported, reported
