"""The fast entry: a CPython METH_FASTCALL | METH_KEYWORDS function emitted in LLVM.

    PyObject *w(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)

It takes a call only when it matches the specialization exactly: no keywords,
the right number of arguments, each of exactly the right built-in type (a
float is `float` itself, an int `int` itself and within int64, a bool `True`
or `False`, a complex `complex` itself, a tuple `tuple` itself with the right length, elementwise; a NumPy
scalar parameter (ir/types.py: a strong scalar, f32 always) a NumPy scalar of exactly
its type (`numpy.float64` ..., `numpy.True_` or `numpy.False_`); an
array parameter an aligned `numpy.ndarray` itself of the right ndim and
native dtype, see `array_layout.accepts`).
Anything else goes, untouched, to `PyObject_Vectorcall(fallback, args, nargs,
kwnames)`. A taken call unboxes the arguments in place, calls the entry
graph's function, and boxes its result; a first tier's deoptimize status
(emitter.DEOPTIMIZE) sends the call, untouched, to `PyObject_Vectorcall(general,
args, nargs, kwnames)`; any other nonzero status calls
`error_handler(status)` and returns what it returns (NULL with its exception
when it raises, as it should), unless an exception is already set (a loop's
signal handler raised it: interrupts.py), when it returns NULL (all of it one
call of the runtime's `astjit.entry.failed`: failure.py). Where the
module's code may release the GIL (gil.py), the wrapper takes it back, if the call did
release it, as soon as the entry graph returns (`gil.take_back`), before any of this. When some
error site reports numbers (an array index out of bounds), the handler is
called as `error_handler(status, v0, ..., v3)` with the numbers the failing
site left (`emitter.error_values`);
`entry.ErrorReporter` adapts a plain handler to that. The fallback and the
handler are embedded as constant addresses: whoever builds the wrapper keeps
them alive. (The wrapper the runtime shares between the array kernels of one signature
reads them, and the rest that is a kernel's own, at each call: shared_entry.py.)

Array arguments are borrowed: the struct points at the caller's ndarray and
its data, so writes are the caller's to see, and no reference is taken or
dropped. An array that compiled code may write to
(`ir.analysis.written_parameters`) must be writeable: once every argument is known
to match, a read-only one raises NumPy's ValueError ("assignment destination
is read-only") at the call, located at a write that may reach it, before any
code runs.

A signature taking containers (`TreeBoundary.arguments`) has a second way in, chosen by
the builtin's `self`: the containers themselves, checked and read into their leaves
natively (trees.py), falling back to `TreeBoundary.fallback`; each way calls the graph's
function at its own call site. With a TreeBoundary, a result's containers are built
natively (trees.py); without (a callback's arguments), they are nested tuples.

A strong scalar result is boxed as the NumPy scalar it is (NumPy's bool objects, or
`numpy.float64(float)` ...), a weak one as a Python float, complex, int or bool.

A returned array (alone or in a tuple) is an owned reference to its owner,
which boxing consumes (`box_array`): the wrapper returns the owner itself when
the array value covers exactly the owner's data, shape and strides (same
data pointer, ndim, dtype and dimensions; the same byte stride on every axis
longer than 1, unless the array is empty), otherwise a new ndarray over the same memory
(`PyArray_NewFromDescr` with byte strides, writeable when the owner is) whose
base is the owner (`PyArray_SetBaseObject`, which takes the reference). Owners
are always ndarrays: an argument, an array compiled code made, or the base of
a view. Boxing an array is a function the module shares (`astjit.entry.box.*`,
shared.py), one call per returned array.
"""
from __future__ import annotations

import ctypes
import functools
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
from llvmlite import ir

from ....ir.analysis import calls_python, written_parameters
from ....ir.types import (
    BOOL,
    C128,
    F32,
    F64,
    I32,
    I64,
    INT_OR_BOOL,
    NUMPY_NAMES,
    ArrayType,
    NoneType,
    ScalarType,
    TupleType,
    Type,
)
from .. import array_layout, interrupts
from .. import messages as msg
from ..conversions import complex_parts
from ..emitter import ErrorTable, error_values
from ..folding import FoldingBuilder
from ..lltypes import (
    ARRAY_OWNER,
    DOUBLE,
    I1,
    I32_T,
    I64_T,
    STATUS,
    contains_array,
    lltype,
    zero,
)
from ..shared import shared_function
from ..unused import remove_unused
from . import failure, gil, stack, trees
from .ndarrays import NULL, box_array, join, unbox_array
from .pyapi import (
    COMPLEX_VALUE,
    FLOAT_VALUE,
    LONG,
    PTR_BYTES,
    PYOBJ,
    SSIZE,
    TUPLE_ITEMS,
    TUPLE_SIZE,
    declare,
    field_pointer,
    load_field,
    object_constant,
    type_is,
)
from .trees import TreeBoundary

if TYPE_CHECKING:  # codegen's lowerings box values with this module (backend/llvm/callbacks.py)
    from ..codegen import LoweredModule

WRAPPER_TYPE = ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ.as_pointer(), SSIZE, PYOBJ])


def emit_wrapper(lowered: LoweredModule, fallback: object, error_handler: object,
                 general: object = None, trees: TreeBoundary | None = None) -> str:
    """Add the fast entry of `lowered`'s entry graph to its module; return its name.
    `general`: where a first tier's call goes when it leaves with the deoptimize status;
    `trees`: how it builds container results and, for a signature taking containers, its
    second way in (trees.py)."""
    core = lowered.entry_function
    graph = lowered.source.entry_graph
    function = ir.Function(lowered.module, WRAPPER_TYPE, core.name + ".fastcall")
    emitter = WrapperEmitter(function, fallback, error_handler, lowered.error_table,
                             with_values=bool(lowered.error_details))
    emitter.written = written_parameters(lowered.source)
    emitter.calls_python = calls_python(lowered.source)
    emitter.general_object = general
    emitter.trees = trees
    emitter.release_gil = define_entry_helpers(lowered.module, function)
    emitter.emit(core, [p.type for p in graph.params], graph.outputs[0].type)
    remove_unused(function)
    return function.name


def define_entry_helpers(module: ir.Module, wrapper: ir.Function | None) -> bool:
    """Give `module` what its entry settles: the bodies of the GIL's release and of the
    loops' signal checks (gil.py, interrupts.py), the guards of its calls but `wrapper`'s
    (None: the module's wrapper is the runtime's, shared_entry.py); whether its calls
    may release the GIL."""
    releases = gil.releases(module)
    interrupts.define_signals(module, releases)
    gil.define(module, releases, wrapper)
    return releases


def read_only_status(errors: ErrorTable, loc: object) -> int:
    """The status of the error site a read-only array argument fails with where compiled
    code may write to it at `loc` (`written_parameters`)."""
    return errors.status("ValueError", msg.READ_ONLY, loc)


class WrapperEmitter:
    """Emits the wrapper's blocks: argument checks, unboxing, the call, boxing, errors."""

    def __init__(self, function: ir.Function, fallback: object, error_handler: object,
                 errors: ErrorTable | None = None, with_values: bool = False):
        self.function = function
        self.fallback_object = fallback
        self.handler_object = error_handler
        self.errors = errors if errors is not None else ErrorTable()
        self.with_values = with_values
        """Whether the handler takes the error values after the status."""
        self.general_object: object = None
        """A first tier's general tier (`entry.build_entry`), else None."""
        self.written: dict = {}
        """Parameter index -> location of a write into its arrays (`written_parameters`)."""
        self.arrays: list[tuple[int, ir.Value]] = []
        """(parameter index, ndarray object) of every array argument unboxed."""
        self.param_index = 0
        self.builder = FoldingBuilder(function.append_basic_block("entry"))
        self.fallback = function.append_basic_block("fallback")
        self.trees: TreeBoundary | None = None
        """How container results are built and containers taken (trees.py); None: results
        are nested tuples (a callback's arguments)."""
        self.calls_python = False
        """Whether compiled code may call Python: leaves read from containers are held."""
        self.held: list[ir.Value] = []
        """Slots of the references a call of containers holds until it returns (NULL: none)."""
        self.read_failed: ir.Block | None = None
        """Where reading a container that raised goes (`read`)."""
        self.release_gil = False
        """Whether the call of the entry graph may release the GIL (gil.py)."""

    def api(self, name: str, *args: ir.Value) -> ir.Value:
        return self.builder.call(declare(self.function.module, name), list(args))

    def emit(self, core: ir.Value, params: list[Type], result: Type) -> None:
        """Check and unbox the arguments (of types `params`), call `core`, box its result (of
        type `result`) or report; else fall back. A signature taking containers has two ways
        in, each calling `core`: the call of the builtin whose `self` is `trees.pins` passes
        the containers, the other their leaves."""
        builder = self.builder
        pins, args, nargs, kwnames = self.function.args
        fallback = self.fallback
        takes_trees = self.trees is not None and self.trees.arguments is not None
        if takes_trees:
            trees_in, leaves_in = self.blocks("trees", "leaves")
            builder.cbranch(builder.icmp_unsigned("==", pins, self.pin(self.trees.pins)),
                            trees_in, leaves_in)
            builder.position_at_end(leaves_in)
        self.call(core, result, self.take_leaves(params, args, nargs, kwnames),
                  self.general_object)
        builder.position_at_end(fallback)
        builder.ret(self.api("PyObject_Vectorcall", self.fallback_callable(), args, nargs,
                             kwnames))
        if takes_trees:
            builder.position_at_end(trees_in)
            self.fallback = self.function.append_basic_block("fallback.trees")
            leaves = self.take_trees(args, nargs, kwnames)
            self.call(core, result, leaves, self.general_object and self.trees.general)
            builder.position_at_end(self.fallback)
            self.release_held()
            builder.ret(self.api("PyObject_Vectorcall", self.pin(self.trees.fallback),
                                 args, nargs, kwnames))
            if self.read_failed is not None:
                self.end_reads()

    def call(self, core: ir.Value, result_type: Type, leaves: list[ir.Value],
             general: object) -> None:
        """Call `core` with the native values of the arguments; return the result boxed, or
        what the error handler returns, or, leaving a first tier, what `general` does."""
        builder = self.builder
        with builder.goto_entry_block():
            out = builder.alloca(lltype(result_type))
        guarded = stack.is_guarded(self.function.module)
        previous_limit = stack.enter(builder) if guarded else None
        status = builder.call(core, leaves + [out])
        self.take_back_gil()
        if guarded:
            stack.leave(builder, previous_limit)
        self.release_held()
        failed = builder.icmp_signed("!=", status, ir.Constant(STATUS, 0))
        with builder.if_then(failed, likely=False):
            builder.ret(self.report(status, general))
        result = builder.load(out)
        builder.homes[id(result)] = out  # written by the kernel alone: boxing reads it
        builder.ret(self.box(result, result_type))

    def take_leaves(self, params: list[Type], args: ir.Value, nargs: ir.Value,
                    kwnames: ir.Value) -> list[ir.Value]:
        """The native values of a call passing the entry graph's parameters (a container
        argument's leaves)."""
        builder = self.builder
        self.require(builder.and_(
            builder.icmp_signed("==", nargs, ir.Constant(SSIZE, len(params))),
            builder.icmp_unsigned("==", kwnames, NULL)))
        values = []
        for i, t in enumerate(params):
            self.param_index = i
            values.append(self.unbox(builder.load(builder.gep(args, [ir.Constant(I64_T, i)])),
                                     t))
        self.check_writeable()
        return values

    def take_trees(self, args: ir.Value, nargs: ir.Value, kwnames: ir.Value) -> list[ir.Value]:
        """The native values of the leaves of a call passing the signature's arguments,
        containers checked and read natively (trees.unpack)."""
        builder, types = self.builder, self.trees.arguments
        self.require(builder.and_(
            builder.icmp_signed("==", nargs, ir.Constant(SSIZE, len(types))),
            builder.icmp_unsigned("==", kwnames, NULL)))
        values: list[ir.Value] = []
        self.arrays, self.param_index = [], 0
        for i, t in enumerate(types):
            obj = builder.load(builder.gep(args, [ir.Constant(I64_T, i)]))
            if isinstance(t, TupleType):
                trees.unpack(self, obj, t, values)
            else:
                values.append(self.unbox(obj, t))
                self.param_index += 1
        self.check_writeable()
        return values

    # ---- references a call of containers holds ------------------------------------------

    def pin(self, obj: object) -> ir.Constant:
        """`object_constant(obj)`, `obj` kept alive as long as the entry (the TreeBoundary's)."""
        self.trees.constants.append(obj)
        return object_constant(obj)

    def hold(self, obj: ir.Value) -> ir.Value:
        """`obj`, a new reference, released when the call returns or falls back."""
        builder = self.builder
        with builder.goto_entry_block():
            slot = builder.alloca(PYOBJ)
            builder.store(NULL, slot)
        builder.store(obj, slot)
        self.held.append(slot)
        return obj

    def release_held(self) -> None:
        for slot in self.held:
            self.api("Py_DecRef", self.builder.load(slot))

    def read(self, obj: ir.Value) -> ir.Value:
        """`obj`, what a read of a container gave: where it is NULL, the call goes to the
        fallback (the error cleared, if it is an Exception) or, for another error (a
        KeyboardInterrupt), returns NULL with it, as `except Exception` would let it pass."""
        builder = self.builder
        if self.read_failed is None:
            self.read_failed = self.function.append_basic_block("read.failed")  # end_reads
        taken = self.function.append_basic_block("read")
        builder.cbranch(builder.icmp_unsigned("==", obj, NULL), self.read_failed, taken)
        builder.position_at_end(taken)
        return obj

    def end_reads(self) -> None:
        """The block where failed reads go (`read`), once every held reference is known."""
        builder = self.builder
        builder.position_at_end(self.read_failed)
        error = self.api("PyErr_Occurred")
        raised = self.function.append_basic_block("read.raised")
        builder.cbranch(builder.icmp_unsigned("==", error, NULL), self.fallback, raised)
        builder.position_at_end(raised)
        caught = self.api("PyErr_GivenExceptionMatches", error, object_constant(Exception))
        with builder.if_then(builder.icmp_signed("==", caught, ir.Constant(I32_T, 0))):
            self.release_held()
            builder.ret(NULL)
        self.api("PyErr_Clear")
        builder.branch(self.fallback)

    def blocks(self, *names: str) -> list[ir.Block]:
        return [self.function.append_basic_block(name) for name in names]

    def require(self, cond: ir.Value) -> None:
        """Continue when `cond` holds; otherwise the call goes to the fallback."""
        taken = self.function.append_basic_block("taken")
        self.builder.cbranch(cond, taken, self.fallback)
        self.builder.position_at_end(taken)

    # ---- Python objects -> native values ------------------------------------------------

    def unbox(self, obj: ir.Value, t: Type) -> ir.Value:
        """The native value of `obj` if it is exactly of type `t`, else to the fallback."""
        builder = self.builder
        if isinstance(t, ScalarType) and t.strong:
            return self.unbox_numpy_scalar(obj, t)
        if t in (F64, F32):
            self.require(type_is(builder, obj, float))
            value = load_field(builder, obj, FLOAT_VALUE, DOUBLE)
            return value if t == F64 else builder.fptrunc(value, lltype(F32))
        if t == C128:
            self.require(type_is(builder, obj, complex))
            return builder.load(field_pointer(builder, obj, COMPLEX_VALUE, lltype(C128)), align=8)
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
        if isinstance(t, ArrayType):
            return self.unbox_array(obj, t)
        raise TypeError(f"the fast entry cannot take arguments of type {t}")

    def unbox_numpy_scalar(self, obj: ir.Value, t: ScalarType) -> ir.Value:
        """A NumPy scalar exactly of `t`'s type (`numpy.float64` ...): the value that
        follows its object header; a bool is one of NumPy's two bool objects."""
        builder = self.builder
        if t == BOOL:
            numpy = numpy_module()
            is_true = builder.icmp_unsigned("==", obj, object_constant(numpy.True_))
            self.require(builder.or_(is_true, builder.icmp_unsigned(
                "==", obj, object_constant(numpy.False_))))
            return is_true
        self.require(type_is(builder, obj, numpy_scalar_type(t)))
        return load_field(builder, obj, NUMPY_SCALAR_VALUE, lltype(t))

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

    def unbox_array(self, obj: ir.Value, t: ArrayType) -> ir.Value:
        """An aligned, exact `numpy.ndarray` of `t.ndim` dimensions and `t.dtype` in native
        byte order (`array_layout.accepts`), borrowed: its data, shape and element strides. The
        checks and loads are the shared `astjit.entry.unbox.<dtype>.<ndim>` (`unbox_array`)."""
        builder = self.builder
        fnty = ir.FunctionType(I1, [PYOBJ, lltype(t).as_pointer()])
        unbox = shared_function(self.function.module, f"astjit.entry.unbox.{t.dtype}.{t.ndim}",
                                fnty, lambda fn, b, o, out: unbox_array(fn, b, o, out, t))
        with builder.goto_entry_block():
            slot = builder.alloca(lltype(t))
        self.require(builder.call(unbox, [obj, slot]))
        self.arrays.append((self.param_index, obj))
        value = builder.load(slot)
        builder.homes[id(value)] = slot  # written here alone: the call of the kernel reads it
        return value

    def check_writeable(self) -> None:
        """A read-only array where compiled code may write raises NumPy's ValueError."""
        builder, layout = self.builder, None
        for index, obj in self.arrays:
            if index not in self.written:
                continue
            layout = layout or array_layout.numpy_layout()
            flags = load_field(builder, obj, layout.flags, I32_T)
            read_only = builder.icmp_unsigned(
                "==", builder.and_(flags, ir.Constant(I32_T, array_layout.NPY_ARRAY_WRITEABLE)),
                ir.Constant(I32_T, 0))
            status = self.read_only_status(index)
            if not isinstance(status, ir.Constant):  # (a shared wrapper's: 0 where never written)
                read_only = builder.and_(read_only, builder.icmp_signed(
                    "!=", status, ir.Constant(STATUS, 0)))
            with builder.if_then(read_only, likely=False):
                self.release_held()
                builder.ret(self.report(status))

    # ---- native values -> Python objects ----------------------------------------------

    def box(self, value: ir.Value, t: Type) -> ir.Value:
        """A new reference to the Python object for `value`, or NULL (exception set)."""
        builder = self.builder
        if isinstance(t, ScalarType) and t.strong:
            return self.box_numpy_scalar(value, t)
        if t in (F64, F32):
            return self.api("PyFloat_FromDouble",
                            value if t == F64 else builder.fpext(value, DOUBLE))
        if t == C128:
            return self.api("PyComplex_FromDoubles", *complex_parts(builder, value))
        if t in (I64, I32):
            return self.api("PyLong_FromLongLong",
                            value if t == I64 else builder.sext(value, I64_T))
        if t == BOOL:
            return self.api("PyBool_FromLong", builder.zext(value, LONG))
        if t == INT_OR_BOOL:  # True/False where it is a bool, else the int
            is_bool, whole = builder.extract_value(value, 0), builder.extract_value(value, 1)
            with builder.if_else(is_bool) as (as_bool, as_int):
                with as_bool:
                    boxed_bool = self.box(builder.trunc(whole, I1), BOOL)
                    bool_block = builder.block
                with as_int:
                    boxed_int = self.box(whole, I64)
                    int_block = builder.block
            boxed = builder.phi(boxed_bool.type)
            boxed.add_incoming(boxed_bool, bool_block)
            boxed.add_incoming(boxed_int, int_block)
            return boxed
        if isinstance(t, NoneType):
            none = object_constant(None)
            self.api("Py_IncRef", none)
            return none
        if isinstance(t, TupleType) and t.node is not None and self.trees is not None:
            return trees.box_container(self, value, t)
        if isinstance(t, TupleType):
            return self.box_tuple(value, t)
        if isinstance(t, ArrayType):
            return self.box_array(value, t)
        raise TypeError(f"the fast entry cannot return values of type {t}")

    def box_numpy_scalar(self, value: ir.Value, t: ScalarType) -> ir.Value:
        """The NumPy scalar of `value` (ir/types.py: a strong scalar): NumPy's bool object,
        or a new scalar object as NumPy's `PyArrayScalar_New` makes one (its type's
        `tp_alloc`), its value stored after the header; NULL if the allocation fails."""
        builder = self.builder
        if t == BOOL:
            numpy = numpy_module()
            result = builder.select(value, object_constant(numpy.True_),
                                    object_constant(numpy.False_))
            self.api("Py_IncRef", result)
            return result
        cls = numpy_scalar_type(t)
        name = register_alloc(cls)
        alloc = self.function.module.globals.get(name) or ir.Function(
            self.function.module, ir.FunctionType(PYOBJ, [PYOBJ, SSIZE]), name)
        result = builder.call(alloc, [object_constant(cls), ir.Constant(SSIZE, 0)])
        with builder.if_then(builder.icmp_unsigned("!=", result, NULL), likely=True):
            builder.store(value, field_pointer(builder, result, NUMPY_SCALAR_VALUE, value.type))
        return result

    def box_array(self, value: ir.Value, t: ArrayType) -> ir.Value:
        """The ndarray for an owned array value (`box_array`), made by the module's shared
        `astjit.entry.box.<dtype>.<ndim>`: each returned array is one call."""
        module = self.function.module
        fnty = ir.FunctionType(PYOBJ, [lltype(t)])
        box = shared_function(module, f"astjit.entry.box.{t.dtype}.{t.ndim}", fnty,
                              lambda fn, b, array: b.ret(box_array(fn, b, array, t)))
        return self.builder.call(box, [value])

    def box_nested_tuples(self, value: ir.Value, t: TupleType) -> ir.Value:
        """`value` boxed as nested tuples, whatever containers `t` describes."""
        boundary, self.trees = self.trees, None
        try:
            return self.box_tuple(value, t)
        finally:
            self.trees = boundary

    def release_arrays(self, value: ir.Value, t: Type) -> None:
        """Drop the references of the arrays `value` holds (it will not be boxed)."""
        builder = self.builder
        if isinstance(t, ArrayType):
            self.api("Py_DecRef", builder.extract_value(value, ARRAY_OWNER))
        elif isinstance(t, TupleType):
            for i, element in enumerate(t.elements):
                if contains_array(element):
                    self.release_arrays(builder.extract_value(value, i), element)

    def box_tuple(self, value: ir.Value, t: TupleType) -> ir.Value:
        """PyTuple_New, then each element boxed and set; NULL if any step fails. The
        element arrays' references are consumed either way (released if there is no tuple)."""
        builder = self.builder
        tuple_obj = self.api("PyTuple_New", ir.Constant(SSIZE, len(t.elements)))
        fill = self.function.append_basic_block("tuple.fill")
        done = self.function.append_basic_block("tuple.done")
        no_tuple = self.function.append_basic_block("tuple.failed")
        builder.cbranch(builder.icmp_unsigned("==", tuple_obj, NULL), no_tuple, fill)
        builder.position_at_end(no_tuple)
        self.release_arrays(value, t)  # owned references nothing will hold
        start = builder.block
        builder.branch(done)
        builder.position_at_end(fill)
        failed = ir.Constant(ir.IntType(1), 0)
        for i, element in enumerate(t.elements):
            item = self.box(builder.extract_value(value, i), element)
            self.api("PyTuple_SetItem", tuple_obj, ir.Constant(SSIZE, i), item)
            failed = builder.or_(failed, builder.icmp_unsigned("==", item, NULL))
        with builder.if_then(failed, likely=False):
            self.api("Py_DecRef", tuple_obj)
        return join(builder, done, NULL, start, builder.select(failed, NULL, tuple_obj))

    def report(self, status: ir.Value, general: object = None) -> ir.Value:
        """What a call returns whose entry graph failed with `status`: what `general` returns
        where it is a first tier's deoptimize status, else `error_handler(status)` (its
        result, or NULL with the exception it raised), or NULL where the exception is
        already set (a loop's signal check: interrupts.py); one call (failure.py)."""
        leave = None if general is None else self.errors.deoptimize
        target = NULL if leave is None else object_constant(general)
        numbers = ir.Constant(failure.NUMBERS, None)
        if self.with_values:
            numbers = error_values(self.function.module).gep([ir.Constant(I32_T, 0)] * 2)
        return self.failed(status, ir.Constant(STATUS, leave or 0), target,
                           object_constant(self.handler_object), numbers)

    def failed(self, status: ir.Value, deoptimize: ir.Value, general: ir.Value,
               handler: ir.Value, numbers: ir.Value) -> ir.Value:
        """`report`'s call of the runtime (failure.py), with the call's own arguments."""
        _, args, nargs, kwnames = self.function.args
        return failure.failed(self.builder, status, deoptimize, general, handler, numbers,
                              [args, nargs, kwnames])

    # ---- what a shared wrapper reads at run time (shared_entry.py) -------------------------

    def fallback_callable(self) -> ir.Value:
        """Where a call the entry does not take goes."""
        return object_constant(self.fallback_object)

    def take_back_gil(self) -> None:
        """Take the GIL back after the entry graph returned, if the call may have released it."""
        if self.release_gil:
            gil.take_back(self.builder)

    def read_only_status(self, index: int) -> ir.Value:
        """The status a read-only array argument `index`, which compiled code may write to,
        fails with."""
        return ir.Constant(STATUS, read_only_status(self.errors, self.written[index]))


# ---- NumPy scalars ------------------------------------------------------------------------

NUMPY_SCALAR_VALUE = object.__basicsize__
"""Offset of the value in a NumPy scalar object (`obval`, right after the object header; for
`numpy.float64`, a subclass of float, that is where float keeps its own)."""


TP_ALLOC = 47
"""`Py_tp_alloc`, the number of the `tp_alloc` slot for `PyType_GetSlot` (typeslots.h)."""


@functools.cache
def register_alloc(cls: type) -> str:
    """The LLVM name of `cls`'s `tp_alloc` (`PyType_GetSlot`), registered once per process."""
    get = ctypes.pythonapi.PyType_GetSlot
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_int]
    name = f"astjit.tp_alloc.{cls.__name__}"
    llvm.add_symbol(name, get(cls, TP_ALLOC))
    return name


def numpy_module():
    import numpy  # a strong scalar type implies the program uses NumPy

    return numpy


def numpy_scalar_type(t: ScalarType) -> type:
    """The NumPy scalar type of strong scalars of type `t`."""
    return numpy_module().dtype(NUMPY_NAMES[t.name]).type
