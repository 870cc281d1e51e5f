"""The wrapper's way out of a call whose entry graph failed: one function the runtime shares.

A nonzero status is a first tier's deoptimize status (the call goes, untouched, to its
general tier: `PyObject_Vectorcall(general, args, nargs, kwnames)`) or the number of an
error site: `error_handler(status)`, or `error_handler(status, v0, ..., v3)` with the
numbers the site left where the module has sites that report some
(`emitter.error_values`), raises it, unless an exception is already set (a loop's signal
check: interrupts.py), when the call returns NULL. That is `astjit.entry.failed`
(shared.py), one cold call in every wrapper: spelled out there it was a dozen blocks and
five calls of the C API in each, which the glue's fast instruction selector hands to
SelectionDAG one by one.
"""
from __future__ import annotations

from llvmlite import ir

from ..emitter import MAX_ERROR_VALUES
from ..lltypes import I64_T, STATUS
from ..shared import shared_function
from .ndarrays import NULL
from .pyapi import LONG, PYOBJ, SSIZE, c_string, declare

NUMBERS = I64_T.as_pointer()
FAILED = ir.FunctionType(PYOBJ, [STATUS, STATUS, PYOBJ, PYOBJ, NUMBERS,
                                 PYOBJ.as_pointer(), SSIZE, PYOBJ])
"""(status, deoptimize status, general, error handler, the site's numbers or NULL, and the
call's args, nargs, kwnames) -> what the wrapper returns."""


def failed(builder: ir.IRBuilder, status: ir.Value, deoptimize: ir.Value, general: ir.Value,
           handler: ir.Value, numbers: ir.Value, call: list[ir.Value]) -> ir.Value:
    """The wrapper's result for a call whose entry graph returned `status` (nonzero);
    `deoptimize` 0 and `general` NULL in a wrapper without a general tier; `call` the
    wrapper's args, nargs and kwnames."""
    function = shared_function(builder.module, "astjit.entry.failed", FAILED, _emit, cold=True)
    return builder.call(function, [status, deoptimize, general, handler, numbers, *call])


def _emit(fn: ir.Function, b: ir.IRBuilder, status: ir.Value, deoptimize: ir.Value,
          general: ir.Value, handler: ir.Value, numbers: ir.Value, args: ir.Value,
          nargs: ir.Value, kwnames: ir.Value) -> None:
    module = fn.module
    with b.if_then(b.icmp_signed("==", status, deoptimize)):
        b.ret(b.call(declare(module, "PyObject_Vectorcall"), [general, args, nargs, kwnames]))
    pending = b.call(declare(module, "PyErr_Occurred"), [])
    with b.if_then(b.icmp_unsigned("!=", pending, NULL), likely=False):
        b.ret(NULL)
    with b.if_then(b.icmp_unsigned("!=", numbers, ir.Constant(NUMBERS, None))):
        values = [b.load(b.gep(numbers, [ir.Constant(I64_T, i)], inbounds=True))
                  for i in range(MAX_ERROR_VALUES)]
        b.ret(b.call(declare(module, "PyObject_CallFunction"),
                     [handler, c_string(module, "i" + "L" * MAX_ERROR_VALUES), status, *values]))
    code = b.call(declare(module, "PyLong_FromLong"), [b.sext(status, LONG)])
    with b.if_then(b.icmp_unsigned("==", code, NULL), likely=False):
        b.ret(NULL)
    result = b.call(declare(module, "PyObject_CallOneArg"), [handler, code])
    b.call(declare(module, "Py_DecRef"), [code])
    b.ret(result)
