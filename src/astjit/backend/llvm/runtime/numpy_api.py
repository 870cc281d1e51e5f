"""NumPy's C API as compiled code calls it: the `_ARRAY_API` table, checked once per process.

NumPy publishes its C functions as a table of pointers behind the capsule
`numpy._core._multiarray_umath._ARRAY_API` (`numpy.core.multiarray._ARRAY_API`
before NumPy 2). Extension modules index it with the numbers in
`numpy/__multiarray_api.h` (`capsules.NUMPY_INDICES`, read without LLVM there); these
entries have had the same numbers since NumPy 1.7 and still do in NumPy 2.x:

    index  entry                               C signature
    0      PyArray_GetNDArrayCVersion          unsigned int (void): the ABI version
    2      PyArray_Type                        the `numpy.ndarray` type object itself
    45     PyArray_DescrFromType               PyArray_Descr *(int type_num)
    94     PyArray_NewFromDescr                PyObject *(PyTypeObject *, PyArray_Descr *,
                                                   int nd, npy_intp const *dims,
                                                   npy_intp const *strides, void *data,
                                                   int flags, PyObject *obj)
    183    PyArray_Zeros                       PyObject *(int nd, npy_intp const *dims,
                                                   PyArray_Descr *, int is_f_order)
    211    PyArray_GetNDArrayCFeatureVersion   unsigned int (void): the API version
    282    PyArray_SetBaseObject               int (PyArrayObject *, PyObject *), steals
                                                   the object (even when it fails)

`api()` reads them off the capsule with ctypes and verifies each one by calling
it once through ctypes on real arrays (the table entry for `PyArray_Type` is
`numpy.ndarray`, the ABI version is 1.x or 2.x, `PyArray_DescrFromType` of
each dtype compiled code makes returns that dtype's own builtin descriptor,
`NewFromDescr` and `Zeros` make the arrays they should, `SetBaseObject` makes
a view keep its base): a NumPy whose table differs gets a CompileError, never
a crash. The function addresses are then registered with LLVM under the names
`astjit.PyArray_*` (`declare` gives a module their declarations).

The builtin descriptors of the dtypes compiled code makes (float64, float32,
int64, bool) are static objects in NumPy, `numpy.dtype(name)` is the very same
object, so compiled code embeds their addresses (`descr_constant`). Both
`NewFromDescr` and `Zeros` steal a reference to the descriptor: compiled code
increfs it before each call.
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import llvmlite.binding as llvm
from llvmlite import ir

from .... import capsules
from ....errors import CompileError
from ....ir.types import F64, I64, NUMERIC_RANK, ScalarType
from ....ir.types import NUMPY_NAMES as DTYPE_NAMES
from ..lltypes import I32_T, I64_T
from .pyapi import PYOBJ, object_constant

DIMS = I64_T.as_pointer()
FUNCTIONS: dict[str, ir.FunctionType] = {
    "PyArray_NewFromDescr": ir.FunctionType(PYOBJ, [PYOBJ, PYOBJ, I32_T, DIMS, DIMS, PYOBJ,
                                                    I32_T, PYOBJ]),
    "PyArray_Zeros": ir.FunctionType(PYOBJ, [I32_T, DIMS, PYOBJ, I32_T]),
    "PyArray_SetBaseObject": ir.FunctionType(I32_T, [PYOBJ, PYOBJ]),
}
"""The entries compiled code calls, as LLVM declares them (`npy_intp` is i64 on 64-bit hosts)."""

NPY_ARRAY_C_CONTIGUOUS = 0x0001
NPY_ARRAY_OWNDATA = 0x0004
NPY_ARRAY_WRITEABLE = 0x0400
NPY_MAXDIMS = 64
"""The most dimensions a NumPy 2 array may have (32 before)."""
NUMPY_NAMES = {t: DTYPE_NAMES[t.name] for t in NUMERIC_RANK}
"""The dtypes arrays of compiled code have, by IR type (ir/types.py names them)."""


@dataclass(frozen=True)
class NumpyApi:
    """The verified table: entry addresses, and the descriptors compiled code embeds."""

    addresses: dict[str, int]
    ndarray: type
    descriptors: dict
    """IR dtype -> its builtin `numpy.dtype` (a static object: its address never changes)."""
    abi_version: int
    api_version: int


@functools.cache
def api() -> NumpyApi:
    """The table, verified by calling each entry once; its functions registered with LLVM."""
    try:
        import numpy
        addresses = capsules.numpy_addresses()
    except (ImportError, AttributeError) as exc:  # pragma: no cover - arrays imply numpy
        raise CompileError("making arrays in compiled code needs NumPy's C API") from exc
    if not addresses:  # pragma: no cover
        raise CompileError("NumPy's C API table (_ARRAY_API) is empty")
    descriptors = {t: numpy.dtype(name) for t, name in NUMPY_NAMES.items()}
    result = NumpyApi(addresses, numpy.ndarray, descriptors, *_versions(addresses))
    problem = _verify(result, numpy)
    if problem:
        raise CompileError(f"NumPy {numpy.__version__}'s C API is not the one compiled code "
                           f"calls ({problem}); arrays cannot be made in compiled code")
    for name in FUNCTIONS:
        llvm.add_symbol(symbol(name), addresses[name])
    return result


def _versions(addresses) -> tuple[int, int]:
    abi = ctypes.CFUNCTYPE(ctypes.c_uint)(addresses["PyArray_GetNDArrayCVersion"])()
    feature = ctypes.CFUNCTYPE(ctypes.c_uint)(addresses["PyArray_GetNDArrayCFeatureVersion"])()
    return abi, feature


def _verify(found: NumpyApi, numpy) -> str | None:
    """Call every entry once through ctypes; what is wrong, or None."""
    a = found.addresses
    if a["PyArray_Type"] != id(numpy.ndarray):
        return "PyArray_API[2] is not numpy.ndarray"
    if found.abi_version >> 24 not in (1, 2):
        return f"ABI version {found.abi_version:#x}"
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes, incref.restype = [ctypes.py_object], None
    decref = ctypes.pythonapi.Py_DecRef
    decref.argtypes, decref.restype = [ctypes.c_void_p], None
    descr_from_type = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_int)(a["PyArray_DescrFromType"])
    for descr in found.descriptors.values():
        got = descr_from_type(descr.num)
        decref(got)
        if got != id(descr):
            return f"PyArray_DescrFromType({descr.num}) is not numpy.dtype('{descr}')"
    dims_t = ctypes.c_ssize_t * 2
    new_from_descr = ctypes.PYFUNCTYPE(
        ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)(a["PyArray_NewFromDescr"])
    zeros = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_int)(a["PyArray_Zeros"])
    set_base = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
        a["PyArray_SetBaseObject"])
    f64, i64 = found.descriptors[F64], found.descriptors[I64]
    shape, five, three, step = dims_t(2, 3), dims_t(5, 0), dims_t(3, 0), dims_t(16, 0)
    incref(f64)
    empty = new_from_descr(id(numpy.ndarray), id(f64), 2, ctypes.addressof(shape),
                           None, None, 0, None)
    if not (type(empty) is numpy.ndarray and empty.shape == (2, 3) and empty.dtype is f64
            and empty.flags.c_contiguous and empty.flags.owndata and empty.flags.writeable
            and empty.base is None):
        return "PyArray_NewFromDescr does not make an empty array"
    incref(i64)
    zeroed = zeros(1, ctypes.addressof(five), id(i64), 0)
    if not (type(zeroed) is numpy.ndarray and zeroed.dtype is i64 and zeroed.tolist() == [0] * 5
            and zeroed.flags.owndata):
        return "PyArray_Zeros does not make a zeroed array"
    base = numpy.arange(6.0)
    incref(f64)
    view = new_from_descr(id(numpy.ndarray), id(f64), 1, ctypes.addressof(three),
                          ctypes.addressof(step), base.ctypes.data,
                          NPY_ARRAY_WRITEABLE, None)
    incref(base)  # stolen by SetBaseObject
    if set_base(view, id(base)) != 0 or view.base is not base or view.tolist() != [0.0, 2.0, 4.0] \
            or view.flags.owndata or not view.flags.writeable:
        return "PyArray_SetBaseObject does not make a view keep its base"
    return None


def symbol(name: str) -> str:
    """The LLVM name compiled code calls entry `name` by."""
    return f"astjit.{name}"


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of NumPy C API entry `name` in `module` (verifying the table first)."""
    api()
    function = module.globals.get(symbol(name))
    if function is None:
        function = ir.Function(module, FUNCTIONS[name], symbol(name))
        function.attributes.add("nounwind")
    return function


def ndarray_type() -> ir.Constant:
    """`&PyArray_Type`, the `numpy.ndarray` type object, as a `PyObject *` constant."""
    return object_constant(api().ndarray)


def descr_constant(dtype: ScalarType) -> ir.Constant:
    """The builtin descriptor of `dtype` as a `PyObject *` constant (a static object)."""
    return object_constant(api().descriptors[dtype])
