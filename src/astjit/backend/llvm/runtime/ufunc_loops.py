"""NumPy's own inner loops of its float ufuncs, as compiled scalar code calls them.

`np.sin(x)` of a scalar runs the ufunc's inner loop on one element, and on a CPU with
AVX-512 NumPy's loops for its transcendental functions are its own SIMD code, which
differs from libm's in the last bit for some operands. So compiled scalar calls of
these ufuncs call the very loop NumPy runs: the first entry of the ufunc's legacy loop
table (`PyUFuncObject.functions`, `.data`, `.types`; numpy/_core/include/numpy/ufuncobject.h)
whose types are all the operand's dtype. NumPy's type resolution picks that entry for
the dtype; a later entry of the same types is the generic libm loop.

A loop is `void (char **args, npy_intp const *n, npy_intp const *steps, void *data)`.
Only loops with a NULL `data` are taken (the compiled call passes NULL), and each is
checked by calling it through ctypes on operands with special values against the ufunc
on NumPy scalars, bit for bit; a loop that is missing or disagrees is not used (the
caller keeps its libm lowering). The address is registered with LLVM as
`astjit.ufunc_loop.<ufunc>.<dtype>`, by name, so cached code finds it in a new process
(cache/symbols.py).
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm

PREFIX = "astjit.ufunc_loop."
_SAMPLES = (0.0, -0.0, 0.5, -0.5, 0.7342440429753607, 1.0, -1.0, 2.5, -3.75, 1e-300, 1e-8,
            30.0, -30.0, 700.0, 1e300, float("inf"), float("-inf"), float("nan"))


class _UFunc(ctypes.Structure):
    """The head of `PyUFuncObject` up to `types`."""

    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p),
                ("nin", ctypes.c_int), ("nout", ctypes.c_int), ("nargs", ctypes.c_int),
                ("identity", ctypes.c_int), ("functions", ctypes.POINTER(ctypes.c_void_p)),
                ("data", ctypes.POINTER(ctypes.c_void_p)), ("ntypes", ctypes.c_int),
                ("reserved1", ctypes.c_int), ("name", ctypes.c_char_p),
                ("types", ctypes.POINTER(ctypes.c_char))]


_LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p)


def symbol(ufunc: str, dtype: str) -> str:
    return f"{PREFIX}{ufunc}.{dtype}"


@functools.cache
def loop(ufunc: str, dtype: str) -> str | None:
    """The LLVM symbol of NumPy's loop of `ufunc` (its name in `numpy`) on `dtype`
    ('float64', 'float32'), verified and registered; None where there is none to use."""
    import numpy

    function = getattr(numpy, ufunc, None)
    if not isinstance(function, numpy.ufunc) or function.nout != 1:
        return None
    table = _UFunc.from_address(id(function))
    if table.nargs != function.nargs or table.name != ufunc.encode():
        return None
    num = numpy.dtype(dtype).num
    for i in range(table.ntypes):
        if all(ord(table.types[i * table.nargs + k]) == num for k in range(table.nargs)):
            address, data = table.functions[i], table.data[i]
            if not address or data or not _agrees(function, address, numpy.dtype(dtype)):
                return None
            llvm.add_symbol(symbol(ufunc, dtype), address)
            return symbol(ufunc, dtype)
    return None


def _agrees(function, address: int, dtype) -> bool:
    """Whether the loop at `address` gives `function`'s bits on NumPy scalars of `dtype`."""
    import numpy

    with numpy.errstate(over="ignore"):  # 1e300 is inf in float32
        values = numpy.array(_SAMPLES, dtype)
    columns = [values] + [values[::-1].copy() for _ in range(function.nin - 1)]
    out = numpy.empty(1, dtype)
    one, steps = (ctypes.c_ssize_t * 1)(1), (ctypes.c_ssize_t * function.nargs)()
    run = _LOOP(address)
    for row in range(values.size):
        ins = [numpy.array([c[row]]) for c in columns]
        pointers = (ctypes.c_void_p * function.nargs)(*[a.ctypes.data for a in ins],
                                                       out.ctypes.data)
        run(pointers, one, steps, None)
        with numpy.errstate(all="ignore"):
            expected = numpy.asarray(function(*[c[row] for c in columns]), dtype)
        if out.tobytes() != expected.reshape(1).tobytes():
            return False
    return True


def register(name: str) -> None:
    """Register the loop a cached module imports by `name` (cache/symbols.py)."""
    ufunc, _, dtype = name.removeprefix(PREFIX).rpartition(".")
    if dtype in ("float64", "float32"):
        loop(ufunc, dtype)
