"""A NumPy float ufunc on a scalar (`np.sin(x)`), computed by NumPy's own inner loop.

The op's `llvm_numpy` lowering `Routine("ufunc_loop")`. On a scalar it calls a small
internal stub per ufunc and dtype, `double stub(double[, double])`, which stores its
operands in stack slots and runs the loop (runtime/ufunc_loops.py) on one element, so
the result has NumPy's bits on the running machine. Where that loop is libm's function
(`ufunc_loops.computes_with_libm`: the sine and cosine of doubles), in an array kernel,
or where NumPy has no loop to use, it is the op's `llvm` lowering (libm, libmvec in
kernels: docs/vecmath.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.ops import OPS, Intrinsic, LibCall
from ...ir.types import NUMPY_NAMES
from .lltypes import I64_T
from .runtime import ufunc_loops

if TYPE_CHECKING:
    from ...ir.core import Node
    from ...ir.types import Type
    from .emitter import FunctionEmitter

VOID_P = ir.IntType(8).as_pointer()
LOOP_TYPE = ir.FunctionType(ir.VoidType(), [VOID_P.as_pointer(), I64_T.as_pointer(),
                                            I64_T.as_pointer(), VOID_P])


def ufunc_loop(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    opdef = OPS[node.op]
    result = numpy_loop_call(em, opdef.ufunc, node.inputs[0].type, args)
    if result is not None:
        return result
    match opdef.llvm["f"]:
        case Intrinsic(intrinsic):
            return em.call_intrinsic(intrinsic, args)
        case LibCall(function):
            return em.call_libm(function, args)
    raise AssertionError(f"{node.op}: ufunc_loop falls back on an Intrinsic or a LibCall")


def numpy_loop_call(em: FunctionEmitter, ufunc: str, operand: Type,
                    args: list[ir.Value]) -> ir.Value | None:
    """NumPy's loop of `ufunc` run on the scalar operands `args` (of type `operand`), or None
    where compiled code computes it otherwise: in an array kernel, on other dtypes, where
    NumPy's loop is libm's function or where NumPy has no loop to use."""
    dtype = NUMPY_NAMES.get(operand.name)
    if not em.numpy_semantics and dtype in ("float64", "float32") and \
            not ufunc_loops.computes_with_libm(ufunc, dtype) and \
            (name := ufunc_loops.loop(ufunc, dtype)) is not None:
        return em.builder.call(_stub(em.module, name, args[0].type, len(args)), args)
    return None


def _stub(module: ir.Module, loop_name: str, ty: ir.Type, arity: int) -> ir.Function:
    """`ty stub(ty, ...)` calling the loop `loop_name` on one element (defined once a module)."""
    name = f"{loop_name}.call"
    stub = module.globals.get(name)
    if stub is not None:
        return stub
    loop = module.globals.get(loop_name) or ir.Function(module, LOOP_TYPE, loop_name)
    stub = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)
    stub.linkage = "internal"
    stub.attributes.add("nounwind")
    b = ir.IRBuilder(stub.append_basic_block("entry"))
    slots = [b.alloca(ty) for _ in range(arity + 1)]
    for slot, value in zip(slots, stub.args):
        b.store(value, slot)
    pointers = b.alloca(VOID_P, arity + 1)
    for i, slot in enumerate(slots):
        b.store(b.bitcast(slot, VOID_P), b.gep(pointers, [ir.Constant(I64_T, i)]))
    count = b.alloca(I64_T)
    b.store(ir.Constant(I64_T, 1), count)
    steps = b.alloca(I64_T, arity + 1)
    for i in range(arity + 1):
        b.store(ir.Constant(I64_T, 0), b.gep(steps, [ir.Constant(I64_T, i)]))
    b.call(loop, [pointers, count, steps, ir.Constant(VOID_P, None)])
    b.ret(b.load(slots[-1]))
    return stub


ROUTINES = {"ufunc_loop": ufunc_loop}
