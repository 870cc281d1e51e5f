"""The CPython C API as LLVM sees it: object layout, C functions, object addresses.

`PyObject *` is `i8*`. Field offsets are read off the running interpreter
(`__basicsize__`), so they hold for every CPython build: `ob_type` is the last
field of the object header, `ob_fval` the last of a float, a tuple's `ob_size`
follows the header and its items start at the tuple's basic size. The C
functions the wrapper calls are declared by name and their addresses (from
`ctypes.pythonapi`) registered with LLVM once per process. Objects such as
`float` or `None` are embedded as constant addresses: `id()` is the address
of an object in CPython, and these objects are immortal for the process.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
from llvmlite import ir

from .... import cabi
from ..lltypes import DOUBLE, I8, I32_T, I64_T
from . import objects

PTR_BYTES = ctypes.sizeof(ctypes.c_void_p)
PYOBJ = I8.as_pointer()
SSIZE = ir.IntType(8 * ctypes.sizeof(ctypes.c_ssize_t))
LONG = ir.IntType(8 * ctypes.sizeof(ctypes.c_long))
VOID = ir.VoidType()

OB_TYPE = object.__basicsize__ - PTR_BYTES
"""Offset of `ob_type` in every object."""
FLOAT_VALUE = float.__basicsize__ - ctypes.sizeof(ctypes.c_double)
"""Offset of `ob_fval` in a float."""
COMPLEX_VALUE = complex.__basicsize__ - 2 * ctypes.sizeof(ctypes.c_double)
"""Offset of `cval` (its two doubles) in a complex."""
TUPLE_SIZE = object.__basicsize__
"""Offset of `ob_size` in a tuple."""
TUPLE_ITEMS = tuple.__basicsize__
"""Offset of `ob_item[0]` in a tuple."""
LIST_ITEMS = object.__basicsize__ + ctypes.sizeof(ctypes.c_ssize_t)
"""Offset of `ob_item` (the items' array) in a list, after its `ob_size` (TUPLE_SIZE's offset)."""

FUNCTIONS: dict[str, ir.FunctionType] = {
    "PyFloat_FromDouble": ir.FunctionType(PYOBJ, [DOUBLE]),
    "PyComplex_FromDoubles": ir.FunctionType(PYOBJ, [DOUBLE, DOUBLE]),
    "PyLong_FromLongLong": ir.FunctionType(PYOBJ, [I64_T]),
    "PyLong_FromLong": ir.FunctionType(PYOBJ, [LONG]),
    "PyLong_AsLongLongAndOverflow": ir.FunctionType(I64_T, [PYOBJ, I32_T.as_pointer()]),
    "PyBool_FromLong": ir.FunctionType(PYOBJ, [LONG]),
    "PyTuple_New": ir.FunctionType(PYOBJ, [SSIZE]),
    "PyTuple_SetItem": ir.FunctionType(I32_T, [PYOBJ, SSIZE, PYOBJ]),
    "PyObject_Vectorcall": ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ.as_pointer(), SSIZE, PYOBJ]),
    "PyObject_CallOneArg": ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ]),
    "PyObject_CallFunction": ir.FunctionType(PYOBJ, [PYOBJ, I8.as_pointer()], var_arg=True),
    "Py_IncRef": ir.FunctionType(VOID, [PYOBJ]),
    "Py_DecRef": ir.FunctionType(VOID, [PYOBJ]),
    "PyErr_Clear": ir.FunctionType(VOID, []),
    "PyErr_Occurred": ir.FunctionType(PYOBJ, []),
    "PyErr_GivenExceptionMatches": ir.FunctionType(I32_T, [PYOBJ, PYOBJ]),
    "PyErr_CheckSignals": ir.FunctionType(I32_T, []),
    "PyEval_SaveThread": ir.FunctionType(PYOBJ, []),
    "PyEval_RestoreThread": ir.FunctionType(VOID, [PYOBJ]),
    "PyList_New": ir.FunctionType(PYOBJ, [SSIZE]),
    "PyList_SetItem": ir.FunctionType(I32_T, [PYOBJ, SSIZE, PYOBJ]),
    "PyDict_New": ir.FunctionType(PYOBJ, []),
    "PyDict_Size": ir.FunctionType(SSIZE, [PYOBJ]),
    "PyDict_GetItemWithError": ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ]),
    "PyDict_SetItem": ir.FunctionType(I32_T, [PYOBJ, PYOBJ, PYOBJ]),
    "PyObject_GetAttr": ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ]),
    "PyObject_GenericGetDict": ir.FunctionType(PYOBJ, [PYOBJ, I8.as_pointer()]),
    "PyObject_GenericSetAttr": ir.FunctionType(I32_T, [PYOBJ, PYOBJ, PYOBJ]),
    "PyType_GenericAlloc": ir.FunctionType(PYOBJ, [PYOBJ, SSIZE]),
}


THREAD_FUNCTIONS = ("pthread_self", "pthread_getspecific", "pthread_setspecific",
                    "clock_gettime")
"""What a call running without the GIL asks the C library (runtime/gil.py, interrupts.py)."""
KEY = ir.IntType(8 * cabi.KEY_BYTES)
"""`pthread_key_t`, the type of `RELEASED_KEY` (astjit/cabi.py)."""


@functools.cache
def register_functions() -> None:
    """Give LLVM the address of every C API function in `FUNCTIONS`, of `THREAD_FUNCTIONS`,
    `MAIN_THREAD` and `RELEASED_KEY` (once per process: astjit/cabi.py)."""
    for name in FUNCTIONS:
        address = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
        llvm.add_symbol(name, address)
    libc = ctypes.CDLL(None)
    for name in THREAD_FUNCTIONS:
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    for name, address in cabi.thread_state().items():
        llvm.add_symbol(name, address)


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of C API function `name` in `module`."""
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, FUNCTIONS[name], name)
        function.attributes.add("nounwind")
    return function


def c_string(module: ir.Module, text: str) -> ir.Value:
    """A `char *` to a NUL-terminated constant copy of `text` in `module`."""
    data = bytearray(text.encode() + b"\0")
    name = f"astjit.str.{text}"
    variable = module.globals.get(name)
    if variable is None:
        variable = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), name)
        variable.linkage = "private"
        variable.global_constant = True
        variable.initializer = ir.Constant(variable.value_type, data)
    return variable.bitcast(I8.as_pointer())


def object_constant(obj: object) -> ir.Constant:
    """A `PyObject *` constant pointing at `obj`; the caller keeps `obj` alive. By symbol where
    the object has one (objects.py: so that the machine code can run in another process),
    else its address."""
    name = objects.symbol(obj)
    if name is not None:
        return ir.FormattedConstant(PYOBJ, f'@"{name}"')
    return ir.Constant(I64_T, id(obj)).inttoptr(PYOBJ)


def field_pointer(builder: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    """A `ty *` to the field at byte `offset` of the object `obj`."""
    address = builder.gep(obj, [ir.Constant(I64_T, offset)], inbounds=True)
    return builder.bitcast(address, ty.as_pointer())


def load_field(builder: ir.IRBuilder, obj: ir.Value, offset: int, ty: ir.Type) -> ir.Value:
    return builder.load(field_pointer(builder, obj, offset, ty))


def type_is(builder: ir.IRBuilder, obj: ir.Value, cls: type) -> ir.Value:
    """`Py_TYPE(obj) == cls`, exactly (no subclasses)."""
    return builder.icmp_unsigned("==", load_field(builder, obj, OB_TYPE, PYOBJ),
                                 object_constant(cls))
