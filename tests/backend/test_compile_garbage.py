"""A compile leaves none of its llvmlite objects to the garbage collector
(`teardown.take_apart`): an llvmlite module is built of reference cycles, which the young
collection after a compile (api._Compiling) traversed in full. Neither a kernel's module
(`codegen.LoweredModule.release`) nor the runtime's, where the runtime cache has not got
its functions (`jit.engine.compile_runtime`).
"""
import ctypes
import gc
import itertools

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from astjit import grad, jit
from astjit.backend.llvm import shared
from astjit.backend.llvm.jit import engine


def horner(x, n):
    s = 0.0
    for k in range(n):
        s = s * x + 1.0 / (k + 1)
    return s


def scaled_sum(w, x):
    return np.sum(np.tanh(x * w) * w)


def _cyclic_llvmlite_garbage(compile_and_call) -> list:
    """The llvmlite blocks that only the collector frees, with what `compile_and_call()`
    returned."""
    gc.collect()
    debug = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = compile_and_call()
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, ir.Block)]
    finally:
        gc.set_debug(debug)
        gc.garbage.clear()
    return left, result


def test_a_loop_and_its_gradient_leave_no_cyclic_garbage():
    left, result = _cyclic_llvmlite_garbage(lambda: (jit(horner)(0.5, 10),
                                                     grad(horner)(0.5, 10)))
    assert left == []
    assert result[0] == horner(0.5, 10)
    h = 1e-6
    assert abs(result[1] - (horner(0.5 + h, 10) - horner(0.5 - h, 10)) / (2 * h)) < 1e-6


def test_an_array_kernel_leaves_no_cyclic_garbage():
    w, x = np.linspace(-1.0, 1.0, 7), np.linspace(0.5, 2.0, 7)
    left, result = _cyclic_llvmlite_garbage(lambda: jit(scaled_sum)(w, x))
    assert left == []
    assert np.isclose(result, scaled_sum(w, x), rtol=1e-12)


_serials = itertools.count()


def _emit_count_to(function: ir.Function, b: ir.IRBuilder, n: ir.Value) -> None:
    """A loop counting from 0 to n (at least once): a phi and a back edge, both cycles."""
    entry, loop, done = b.block, function.append_basic_block("loop"), function.append_basic_block()
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(n.type)
    i.add_incoming(ir.Constant(n.type, 0), entry)
    following = b.add(i, ir.Constant(n.type, 1))
    i.add_incoming(following, loop)
    b.cbranch(b.icmp_signed("<", following, n), loop, done)
    b.position_at_end(done)
    b.ret(following)


def test_a_cold_runtime_module_leaves_no_cyclic_garbage(monkeypatch):
    monkeypatch.setenv("ASTJIT_RUNTIME_CACHE", "0")  # compiled here, not read from the cache
    name = f"astjit.test.count_to.{next(_serials)}"  # new to the process: emitted, pending
    i64 = ir.IntType(64)
    shared.shared_function(ir.Module("astjit.test"), name, ir.FunctionType(i64, [i64]),
                           _emit_count_to)

    def compile_and_call():
        engine.compile_runtime()
        return ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(llvm.address_of_symbol(name))(7)

    left, result = _cyclic_llvmlite_garbage(compile_and_call)
    assert left == []
    assert result == 7
