"""NumPy's own sort kernels as compiled code calls them: function pointers, checked once.

Every builtin dtype's `PyArray_ArrFuncs` (reached by `_PyDataType_GetArrFuncs`, entry 365
of NumPy 2's `_ARRAY_API`, numpy/__multiarray_api.h) holds its kernels:

    sort[kind]     int (void *start, npy_intp n, void *arr)
    argsort[kind]  int (void *values, npy_intp *indices, npy_intp n, void *arr)

`kind` 0 quicksort (NumPy's introsort, with its SIMD sorts where the CPU has them), 1
heapsort (NumPy 2.4's np.sort runs kernel 0 for it: compiled code takes the kernel
whose results are NumPy's), 2 stable (timsort, radix sort for small ints); `arr` may be NULL for the
numeric dtypes; they return -1 where they cannot allocate their work memory. argsort
permutes `indices`, which the caller fills with 0 .. n-1. These are the very functions
`np.sort` and `np.argsort` run, so compiled code's results are NumPy's bit for bit
(NaNs last, the order of ties).

The table is located with `PyArray_ArrFuncs`'s layout (21 casts, 4 item functions,
compare, argmax, dotfunc, scanfunc, fromstr, nonzero, fill, fillwithscalar: `sort` is
pointer 33, `argsort` 36), and every pointer compiled code uses is verified by calling
it through ctypes on a small array with ties and NaNs against `np.sort` / `np.argsort`
(the same bytes);
a NumPy where that fails (or NumPy 1.x) gets a CompileError, never a crash. The
addresses are registered with LLVM as `astjit.npysort.<sort|argsort>.<dtype>.<kind>`.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
from llvmlite import ir

from ....capsules import numpy_capsule, table_address
from ....errors import CompileError
from ....ir.types import NUMPY_NAMES, ScalarType
from ..lltypes import I32_T, I64_T

GET_ARRFUNCS = 365
"""`_PyDataType_GetArrFuncs` in `PyArray_API` (NumPy 2.x)."""
SORT_SLOT, ARGSORT_SLOT = 33, 36
"""The first `sort` and `argsort` pointers in `PyArray_ArrFuncs`."""
KINDS = ("quicksort", "heapsort", "stable")
VOID_P = ir.IntType(8).as_pointer()
SORT_TYPE = ir.FunctionType(I32_T, [VOID_P, I64_T, VOID_P])
ARGSORT_TYPE = ir.FunctionType(I32_T, [VOID_P, I64_T.as_pointer(), I64_T, VOID_P])


def symbol(what: str, dtype: ScalarType, kind: str) -> str:
    return f"astjit.npysort.{what}.{dtype.name}.{kind}"


@functools.cache
def _arrfuncs(name: str) -> int:
    import numpy

    if int(numpy.__version__.split(".")[0]) < 2:
        raise CompileError(f"sorting in compiled code calls NumPy 2's sort kernels; this is "
                           f"NumPy {numpy.__version__}")
    table = table_address(numpy_capsule())
    get = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(
        ctypes.c_void_p.from_address(table + 8 * GET_ARRFUNCS).value)
    return get(id(numpy.dtype(name)))


@functools.cache
def kernel(what: str, dtype: ScalarType, kind: str) -> str:
    """The LLVM symbol of NumPy's `what` ('sort' or 'argsort') kernel of `kind` for `dtype`,
    verified and registered."""
    import numpy

    name = NUMPY_NAMES[dtype.name]
    sample = numpy.array([3, 1, 2, 1, 0, 5, 4, 2, 9, 7, 1, 3, 8, 6, 2, 0] * 3, dtype=name)
    if sample.dtype.kind == "f":
        sample[[2, 17, 30]] = numpy.nan
    first = SORT_SLOT if what == "sort" else ARGSORT_SLOT
    # NumPy 2.4 runs its default kernel for kind='heapsort': the kind's own, else that
    candidates = [ctypes.c_void_p.from_address(_arrfuncs(name) + 8 * (first + k)).value
                  for k in dict.fromkeys((KINDS.index(kind), 0))]
    address = next((a for a in candidates if a and _agrees(what, a, sample, kind)), None)
    if address is None:
        raise CompileError(f"NumPy {numpy.__version__}'s {kind} {what} kernel for {name} is not "
                           "where compiled code looks for it; sorting cannot be compiled")
    llvm.add_symbol(symbol(what, dtype, kind), address)
    return symbol(what, dtype, kind)


def _agrees(what: str, address: int, sample, kind: str) -> bool:
    import numpy

    c_int, c_void, c_size = ctypes.c_int, ctypes.c_void_p, ctypes.c_ssize_t
    if what == "sort":
        got = sample.copy()
        status = ctypes.CFUNCTYPE(c_int, c_void, c_size, c_void)(address)(
            got.ctypes.data, got.size, None)
        return status == 0 and got.tobytes() == numpy.sort(sample, kind=kind).tobytes()
    order = numpy.arange(sample.size, dtype=numpy.int64)
    status = ctypes.CFUNCTYPE(c_int, c_void, c_void, c_size, c_void)(address)(
        sample.ctypes.data, order.ctypes.data, sample.size, None)
    return status == 0 and order.tobytes() == numpy.argsort(sample, kind=kind).tobytes()


def declare(module: ir.Module, what: str, dtype: ScalarType, kind: str) -> ir.Function:
    """The declaration of a kernel in `module`."""
    name = kernel(what, dtype, kind)
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, SORT_TYPE if what == "sort" else ARGSORT_TYPE, name)
    return function
