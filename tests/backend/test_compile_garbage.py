"""A compile leaves none of its llvmlite objects to the garbage collector
(`codegen.LoweredModule.release`): an llvmlite module is built of reference cycles,
which the young collection after a compile (api._Compiling) traversed in full.

Only the runtime's shared functions (`shared.py`, emitted where the runtime cache has
not got them) may leave a module of their own behind: they are told apart by name.
"""
import gc

import numpy as np
from llvmlite import ir

from astjit import grad, jit


def horner(x, n):
    s = 0.0
    for k in range(n):
        s = s * x + 1.0 / (k + 1)
    return s


def scaled_sum(w, x):
    return np.sum(np.tanh(x * w) * w)


def _cyclic_llvmlite_garbage(compile_and_call) -> list:
    """The llvmlite blocks of the compile's own modules (not the runtime's) that only the
    collector frees, with what `compile_and_call()` returned."""
    gc.collect()
    debug = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = compile_and_call()
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, ir.Block)
                and not (o.__dict__ and o.parent.module.name.startswith("astjit.runtime."))]
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
