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
caller keeps its libm lowering). Where NumPy's loop is libm's function of each element
(`computes_with_libm`), the caller keeps its libm lowering too: the same bits, without the
loop's call. The address is registered with LLVM as
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


LIBM = {"sin": "sin", "cos": "cos"}
"""NumPy's float64 loops that call libm for each element (numpy/_core/src/umath/
loops_trigonometric.dispatch: its SIMD version of them "disabled, revert to libm")."""
_SPREAD = 200
"""Operands spread over each of three ranges that `computes_with_libm` checks."""

_LOOP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p)


def symbol(ufunc: str, dtype: str) -> str:
    return f"{PREFIX}{ufunc}.{dtype}"


@functools.cache
def loop(ufunc: str, dtype: str) -> str | None:
    """The LLVM symbol of NumPy's loop of `ufunc` (its name in `numpy`) on `dtype`
    ('float64', 'float32'), verified and registered; None where there is none to use."""
    import numpy

    found = _find(ufunc, dtype)
    if found is None or not _agrees(getattr(numpy, ufunc), found, numpy.dtype(dtype)):
        return None
    llvm.add_symbol(symbol(ufunc, dtype), found)
    return symbol(ufunc, dtype)


@functools.cache
def computes_with_libm(ufunc: str, dtype: str) -> bool:
    """Whether NumPy's loop of `ufunc` on `dtype` is libm's function of each element, so
    that compiled code calls libm itself, without the cost of a loop's call (several times
    libm's own): NumPy's SIMD sine and cosine of doubles are disabled, its loops call libm
    (`LIBM`). Checked on the samples and `_SPREAD` operands of each of three ranges against libm, through
    the loop on all of them at once: a build whose loop is its own polynomial (3.5 ulp)
    differs on many of them, and keeps the loop."""
    import numpy

    if dtype != "float64" or ufunc not in LIBM or (found := _find(ufunc, dtype)) is None:
        return False
    spread = numpy.arange(1, _SPREAD + 1) * 0.6180339887498949 % 1.0 - 0.5  # in (-0.5, 0.5)
    values = numpy.concatenate([numpy.array(_SAMPLES), 8.0 * spread, 2e4 * spread,
                                numpy.exp(1400.0 * spread)])
    out = numpy.empty_like(values)
    count, steps = (ctypes.c_ssize_t * 1)(values.size), (ctypes.c_ssize_t * 2)(8, 8)
    _LOOP(found)((ctypes.c_void_p * 2)(values.ctypes.data, out.ctypes.data), count, steps, None)
    libm = getattr(ctypes.CDLL(None), LIBM[ufunc])  # the process's libm, as compiled code links it
    libm.restype, libm.argtypes = ctypes.c_double, [ctypes.c_double]
    expected = numpy.array([libm(v) for v in values.tolist()])
    return expected.tobytes() == out.tobytes()


def _find(ufunc: str, dtype: str) -> int | None:
    """The address of the first entry of `ufunc`'s loop table on `dtype` (NumPy's type
    resolution picks it), where its `data` is NULL; None where there is none."""
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
            return address if address and not data else None
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
