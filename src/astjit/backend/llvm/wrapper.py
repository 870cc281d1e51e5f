"""The fast entry: a CPython METH_FASTCALL | METH_KEYWORDS function emitted in LLVM.

    PyObject *w(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)

It takes a call only when it matches the specialization exactly: no keywords,
the right number of arguments, each of exactly the right built-in type (a
float is `float` itself, an int `int` itself and within int64, a bool `True`
or `False`, a tuple `tuple` itself with the right length, elementwise; an f32
parameter takes a `float`, rounded, and an i32 one an `int` within int32).
Anything else goes, untouched, to `PyObject_Vectorcall(fallback, args, nargs,
kwnames)`. A taken call unboxes the arguments in place, calls the entry
graph's function, and boxes its result; a nonzero status calls
`error_handler(status)` and returns what it returns (NULL with its exception
when it raises, as it should). The fallback and the handler are embedded as
constant addresses: whoever builds the wrapper keeps them alive.
"""
from __future__ import annotations

from llvmlite import ir

from ...ir.core import Graph
from ...ir.types import BOOL, F32, F64, I32, I64, NoneType, TupleType, Type
from .codegen import LoweredModule
from .lltypes import DOUBLE, I32_T, I64_T, STATUS, lltype, zero
from .pyapi import (
    FLOAT_VALUE,
    LONG,
    PTR_BYTES,
    PYOBJ,
    SSIZE,
    TUPLE_ITEMS,
    TUPLE_SIZE,
    declare,
    load_field,
    object_constant,
    type_is,
)

WRAPPER_TYPE = ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ.as_pointer(), SSIZE, PYOBJ])
NULL = ir.Constant(PYOBJ, None)


def emit_wrapper(lowered: LoweredModule, fallback: object, error_handler: object) -> str:
    """Add the fast entry of `lowered`'s entry graph to its module; return its name."""
    core = lowered.entry_function
    function = ir.Function(lowered.module, WRAPPER_TYPE, core.name + ".fastcall")
    WrapperEmitter(function, fallback, error_handler).emit(core, lowered.source.entry_graph)
    return function.name


class WrapperEmitter:
    """Emits the wrapper's blocks: argument checks, unboxing, the call, boxing, errors."""

    def __init__(self, function: ir.Function, fallback: object, error_handler: object):
        self.function = function
        self.fallback_object = fallback
        self.handler_object = error_handler
        self.builder = ir.IRBuilder(function.append_basic_block("entry"))
        self.fallback = function.append_basic_block("fallback")

    def api(self, name: str, *args: ir.Value) -> ir.Value:
        return self.builder.call(declare(self.function.module, name), list(args))

    def emit(self, core: ir.Function, graph: Graph) -> None:
        """Check and unbox the arguments, call `core`, box or report; else fall back."""
        builder = self.builder
        _, args, nargs, kwnames = self.function.args
        self.require(builder.and_(
            builder.icmp_signed("==", nargs, ir.Constant(SSIZE, len(graph.params))),
            builder.icmp_unsigned("==", kwnames, NULL)))
        values = [self.unbox(builder.load(builder.gep(args, [ir.Constant(I64_T, i)])), p.type)
                  for i, p in enumerate(graph.params)]
        result_type = graph.outputs[0].type
        with builder.goto_entry_block():
            out = builder.alloca(lltype(result_type))
        status = builder.call(core, values + [out])
        failed = builder.icmp_signed("!=", status, ir.Constant(STATUS, 0))
        with builder.if_then(failed, likely=False):
            builder.ret(self.report(status))
        builder.ret(self.box(builder.load(out), result_type))
        builder.position_at_end(self.fallback)
        builder.ret(self.api("PyObject_Vectorcall", object_constant(self.fallback_object),
                             args, nargs, kwnames))

    def require(self, cond: ir.Value) -> None:
        """Continue when `cond` holds; otherwise the call goes to the fallback."""
        taken = self.function.append_basic_block("taken")
        self.builder.cbranch(cond, taken, self.fallback)
        self.builder.position_at_end(taken)

    # ---- Python objects -> native values ------------------------------------------------

    def unbox(self, obj: ir.Value, t: Type) -> ir.Value:
        """The native value of `obj` if it is exactly of type `t`, else to the fallback."""
        builder = self.builder
        if t in (F64, F32):
            self.require(type_is(builder, obj, float))
            value = load_field(builder, obj, FLOAT_VALUE, DOUBLE)
            return value if t == F64 else builder.fptrunc(value, lltype(F32))
        if t in (I64, I32):
            return self.unbox_int(obj, lltype(t))
        if t == BOOL:
            is_true = builder.icmp_unsigned("==", obj, object_constant(True))
            self.require(builder.or_(is_true, builder.icmp_unsigned(
                "==", obj, object_constant(False))))
            return is_true
        if isinstance(t, NoneType):
            self.require(builder.icmp_unsigned("==", obj, object_constant(None)))
            return zero(t)
        if isinstance(t, TupleType):
            return self.unbox_tuple(obj, t)
        raise TypeError(f"the fast entry cannot take arguments of type {t}")

    def unbox_int(self, obj: ir.Value, ty: ir.IntType) -> ir.Value:
        """An exact `int` that fits in `ty`."""
        builder = self.builder
        self.require(type_is(builder, obj, int))
        with builder.goto_entry_block():
            overflow = builder.alloca(I32_T)
        value = self.api("PyLong_AsLongLongAndOverflow", obj, overflow)
        self.require(builder.icmp_signed("==", builder.load(overflow), ir.Constant(I32_T, 0)))
        if ty.width == 64:
            return value
        narrow = builder.trunc(value, ty)
        self.require(builder.icmp_signed("==", builder.sext(narrow, I64_T), value))
        return narrow

    def unbox_tuple(self, obj: ir.Value, t: TupleType) -> ir.Value:
        """An exact `tuple` of the right length whose items unbox to `t`'s elements."""
        builder = self.builder
        self.require(type_is(builder, obj, tuple))
        size = load_field(builder, obj, TUPLE_SIZE, SSIZE)
        self.require(builder.icmp_signed("==", size, ir.Constant(SSIZE, len(t.elements))))
        value = zero(t)
        for i, element in enumerate(t.elements):
            item = load_field(builder, obj, TUPLE_ITEMS + i * PTR_BYTES, PYOBJ)
            value = builder.insert_value(value, self.unbox(item, element), i)
        return value

    # ---- native values -> Python objects ----------------------------------------------

    def box(self, value: ir.Value, t: Type) -> ir.Value:
        """A new reference to the Python object for `value`, or NULL (exception set)."""
        builder = self.builder
        if t in (F64, F32):
            return self.api("PyFloat_FromDouble",
                            value if t == F64 else builder.fpext(value, DOUBLE))
        if t in (I64, I32):
            return self.api("PyLong_FromLongLong",
                            value if t == I64 else builder.sext(value, I64_T))
        if t == BOOL:
            return self.api("PyBool_FromLong", builder.zext(value, LONG))
        if isinstance(t, NoneType):
            none = object_constant(None)
            self.api("Py_IncRef", none)
            return none
        if isinstance(t, TupleType):
            return self.box_tuple(value, t)
        raise TypeError(f"the fast entry cannot return values of type {t}")

    def box_tuple(self, value: ir.Value, t: TupleType) -> ir.Value:
        """PyTuple_New, then each element boxed and set; NULL if any step fails."""
        builder = self.builder
        tuple_obj = self.api("PyTuple_New", ir.Constant(SSIZE, len(t.elements)))
        start = builder.block
        fill = self.function.append_basic_block("tuple.fill")
        done = self.function.append_basic_block("tuple.done")
        builder.cbranch(builder.icmp_unsigned("==", tuple_obj, NULL), done, fill)
        builder.position_at_end(fill)
        failed = ir.Constant(ir.IntType(1), 0)
        for i, element in enumerate(t.elements):
            item = self.box(builder.extract_value(value, i), element)
            self.api("PyTuple_SetItem", tuple_obj, ir.Constant(SSIZE, i), item)
            failed = builder.or_(failed, builder.icmp_unsigned("==", item, NULL))
        with builder.if_then(failed, likely=False):
            self.api("Py_DecRef", tuple_obj)
        filled = builder.select(failed, NULL, tuple_obj)
        filled_block = builder.block
        builder.branch(done)
        builder.position_at_end(done)
        result = builder.phi(PYOBJ)
        result.add_incoming(NULL, start)
        result.add_incoming(filled, filled_block)
        return result

    def report(self, status: ir.Value) -> ir.Value:
        """`error_handler(status)`: its result, or NULL with the exception it raised."""
        builder = self.builder
        code = self.api("PyLong_FromLong", builder.sext(status, LONG))
        with builder.if_then(builder.icmp_unsigned("==", code, NULL), likely=False):
            builder.ret(NULL)
        result = self.api("PyObject_CallOneArg", object_constant(self.handler_object), code)
        self.api("Py_DecRef", code)
        return result
