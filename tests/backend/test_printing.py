"""The emitted module's text (backend/llvm/printing.py) is llvmlite's own, character for
character: on a module using every instruction class it formats, in each variant (flags,
alignment, attributes, quoted names, no result, inline assembly called; with metadata and
without), and on the modules of compiled kernels (scalar loops, arrays, a gradient)."""
import numpy as np
import pytest
from llvmlite import ir

import astjit
from astjit.backend.llvm import codegen, printing

pytestmark = pytest.mark.skipif(not printing._formats_apply(),
                                reason="another llvmlite: printed by llvmlite itself")

I64, F64, I1 = ir.IntType(64), ir.DoubleType(), ir.IntType(1)
PAIR = ir.LiteralStructType([I64, F64])


def _every_variant(tagged: bool = False) -> ir.Module:
    """Each class FORMATS lists, in its variants; `tagged`: each instruction with metadata."""
    module = ir.Module(name="variants")
    callee = ir.Function(module, ir.FunctionType(F64, [F64, I64.as_pointer()]), "callee")
    varargs = ir.Function(module, ir.FunctionType(I64, [I64], var_arg=True), "printf")
    sink = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64]), "sink")
    f = ir.Function(module, ir.FunctionType(F64, [I64, F64, I64.as_pointer(), PAIR]), "f")
    n, x, p, pair = f.args
    entry, loop, done = (f.append_basic_block(name) for name in ("entry", "loop.head", "a\"b"))
    b = ir.IRBuilder(entry)
    s = b.add(n, ir.Constant(I64, 1), name="s")
    b.add(s, n, flags=["nsw", "nuw"])
    b.sub(s, n, name="")
    b.fmul(x, x, flags=["fast"])
    b.fneg(x)
    b.icmp_signed("<", s, n)
    b.fcmp_ordered("==", x, x, flags=["nnan"])
    b.fcmp_unordered("!=", x, x)
    b.select(b.icmp_unsigned("==", n, n), x, ir.Constant(F64, 2.5))
    b.select(b.icmp_unsigned("==", n, n), x, x, flags=["fast"])
    b.load(p)
    b.load(p, align=8)
    b.store(s, p)
    b.store(s, p, align=8)
    b.gep(p, [n], inbounds=True)
    b.gep(p, [n, ir.Constant(I64, 0)][:1])
    b.extract_value(pair, 1)
    b.insert_value(pair, n, 0)
    b.zext(b.trunc(n, ir.IntType(8)), I64)
    b.sitofp(n, F64)
    b.bitcast(p, ir.IntType(8).as_pointer())
    b.call(callee, [x, p])
    b.call(callee, [x, p], tail=True, fastmath=("fast",), cconv="fastcc")
    b.call(callee, [x, p], attrs=("nounwind", "readonly"), arg_attrs={1: ("noalias", "nonnull")})
    b.call(varargs, [n, n, x])
    b.call(sink, [n])
    b.call(ir.InlineAsm(ir.FunctionType(ir.VoidType(), [I64]), "nop", "r", side_effect=True), [n])
    b.alloca(I64, name="slot")
    marked = b.add(n, n, name="marked")
    marked.set_metadata("tag", module.add_metadata([ir.MetaDataString(module, "x")]))
    b.cbranch(b.icmp_signed(">", n, s), loop, done)
    b.position_at_end(loop)
    i = b.phi(I64, name="i")
    i.add_incoming(ir.Constant(I64, 0), entry)
    j = b.phi(I64, flags=["fast"])
    j.add_incoming(n, entry)
    nxt = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(nxt, loop)
    j.add_incoming(nxt, loop)
    jump = b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    jump.set_weights([7, 1])
    b.position_at_end(done)
    exit_ = f.append_basic_block("exit")
    b.branch(exit_)
    b.position_at_end(exit_)
    b.ret(x)
    g = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "g")
    ir.IRBuilder(g.append_basic_block()).ret_void()
    if tagged:
        tag = module.add_metadata([ir.MetaDataString(module, "tag")])
        for block in f.blocks:
            for instruction in block.instructions:
                instruction.set_metadata("tag", tag)
    return module


@pytest.mark.parametrize("tagged", [False, True], ids=["plain", "with metadata"])
def test_every_variant_as_llvmlite_prints_it(tagged):
    module = _every_variant(tagged)
    assert printing.module_text(module) == str(module)


def test_instructions_printed_here_and_by_llvmlite():
    """The classes FORMATS lists go the short way, the others llvmlite's."""
    module = _every_variant()
    kinds = {type(i) for f in module.functions for block in f.blocks for i in block.instructions}
    assert set(printing.FORMATS) <= kinds
    assert ir.AllocaInstr in kinds - set(printing.FORMATS)


def _loop_sum(n):
    total = 0.0
    for k in range(n):
        total += k * 0.5
    return total


def _array_kernel(a, b):
    return np.sum(np.tanh(a) * b[::-1], axis=0) + a.T @ b


def _loss(w, x):
    return np.mean((np.tanh(x @ w) - 1.0) ** 2)


@pytest.mark.parametrize("compile_and_call", [
    lambda: astjit.jit(_loop_sum)(10),
    lambda: astjit.jit(_array_kernel)(np.ones((3, 3)), np.arange(9.0).reshape(3, 3)),
    lambda: astjit.jit(astjit.grad(_loss))(np.ones(4), np.ones((5, 4))),
], ids=["scalar loop", "arrays", "gradient"])
def test_kernels_texts_as_llvmlite_prints_them(monkeypatch, compile_and_call):
    printed = []

    def both(module):
        printed.append((printing.module_text(module), str(module)))
        return printed[-1][0]

    monkeypatch.setattr(codegen, "module_text", both)
    compile_and_call()
    assert printed and all(ours == llvmlite_s for ours, llvmlite_s in printed)
