"""Lowering `callback`: compiled code calling a Python function (ir/ops/callbacks.py).

The node's `Callback` object is called through the C API, with the GIL the
compiled code's caller holds: its operands boxed as the fast entry boxes results
(an array passed is the ndarray that owns it, or a view based on it; a new
reference either way), its result unboxed as the entry unboxes arguments (the
`Callback` has already converted it to exactly the type compiled code takes).
That code is one function per signature, shared by the process
(`astjit.callback.<types>`, shared.py):

    i32 helper(PyObject *callback, <operands>..., <result> *out)

It returns 0 with the result at `out` (its arrays new references the caller
owns), 1 when the function raised (the `Callback` kept the exception, and
returned its `FAILED` marker), 2 when the call itself failed. The node's site
reports 1 and 2 as `CALLBACK_ERROR`, which re-raises the kept exception.

The machine code holds the `Callback`'s address: it is kept alive for the rest
of the process (`_PINNED`), as the function compiled code calls must be.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.core import Node
from ...ir.ops.callbacks import FAILED, Callback
from ...ir.ops.semantics import CALLBACK_ERROR
from ...ir.types import ArrayType, TupleType, Type
from .emitter import FunctionEmitter
from .lltypes import ARRAY_OWNER, I32_T, STATUS, contains_array, lltype
from .runtime.pyapi import PYOBJ, SSIZE, declare, object_constant
from .runtime.wrapper import NULL, WrapperEmitter
from .shared import shared_function

_PINNED: dict[int, Callback] = {}
"""Every Callback some machine code calls, by address."""


def callback(em: FunctionEmitter, node: Node, args: list[ir.Value]) -> ir.Value:
    target: Callback = node.attrs["fn"]
    _PINNED[id(target)] = target
    types = [v.type for v in node.inputs]
    result = node.outputs[0].type
    fnty = ir.FunctionType(STATUS, [PYOBJ, *(lltype(t) for t in types), lltype(result).as_pointer()])
    name = f"astjit.callback.({','.join(map(str, types))})->{result}"
    helper = shared_function(em.module, name, fnty,
                             lambda fn, b, *params: _emit_helper(fn, b, params, types, result))
    out = em.alloca(lltype(result))
    status = em.builder.call(helper, [object_constant(target), *args, out])
    em.fail_if(node, em.builder.icmp_signed("!=", status, ir.Constant(STATUS, 0)),
               CALLBACK_ERROR, f"the callback {target.name}() failed")
    value = em.builder.load(out)
    if contains_array(result):
        em.adopt(result, value)
    return value


def _emit_helper(function: ir.Function, entry: ir.IRBuilder, params: tuple, types: list[Type],
                 result: Type) -> None:
    """The helper's body (see the module docstring)."""
    target, *values, out = params
    boxing = WrapperEmitter(function, None, None)
    entry.branch(boxing.builder.block)
    b = boxing.builder
    items = b.alloca(ir.ArrayType(PYOBJ, max(len(types), 1)))
    failed = ir.Constant(ir.IntType(1), 0)
    pointers = []
    for i, (value, t) in enumerate(zip(values, types)):
        _retain_arrays(b, value, t)  # boxing consumes a reference; these are borrowed
        item = boxing.box(value, t)
        pointer = b.gep(items, [ir.Constant(I32_T, 0), ir.Constant(I32_T, i)], inbounds=True)
        b.store(item, pointer)
        pointers.append(pointer)
        failed = b.or_(failed, b.icmp_unsigned("==", item, NULL))
    with b.if_then(failed, likely=False):  # out of memory: no call
        _drop(boxing, pointers)
        boxing.api("PyErr_Clear")
        b.ret(ir.Constant(STATUS, 2))
    first = b.gep(items, [ir.Constant(I32_T, 0), ir.Constant(I32_T, 0)], inbounds=True)
    called = boxing.api("PyObject_Vectorcall", target, first, ir.Constant(SSIZE, len(types)), NULL)
    _drop(boxing, pointers)
    with b.if_then(b.icmp_unsigned("==", called, NULL), likely=False):
        boxing.api("PyErr_Clear")
        b.ret(ir.Constant(STATUS, 2))
    with b.if_then(b.icmp_unsigned("==", called, object_constant(FAILED)), likely=False):
        boxing.api("Py_DecRef", called)
        b.ret(ir.Constant(STATUS, 1))
    value = boxing.unbox(called, result)
    _retain_arrays(b, value, result)  # the result's arrays, owned by the caller from here
    b.store(value, out)
    boxing.api("Py_DecRef", called)
    b.ret(ir.Constant(STATUS, 0))
    b.position_at_end(boxing.fallback)  # unboxing refused the result: cannot happen
    boxing.api("Py_DecRef", called)
    b.ret(ir.Constant(STATUS, 2))


def _drop(boxing: WrapperEmitter, pointers: list[ir.Value]) -> None:
    """Py_DecRef the boxed operands (Py_DecRef ignores NULL)."""
    for pointer in pointers:
        boxing.api("Py_DecRef", boxing.builder.load(pointer))


def _retain_arrays(b: ir.IRBuilder, value: ir.Value, t: Type) -> None:
    """Py_IncRef the owner of every array in `value`."""
    if isinstance(t, ArrayType):
        b.call(declare(b.module, "Py_IncRef"), [b.extract_value(value, ARRAY_OWNER)])
    elif isinstance(t, TupleType):
        for i, element in enumerate(t.elements):
            if contains_array(element):
                _retain_arrays(b, b.extract_value(value, i), element)


ROUTINES = {"callback": callback}
