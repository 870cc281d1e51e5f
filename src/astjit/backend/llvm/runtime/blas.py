"""SciPy's BLAS as compiled code calls it: C function pointers, checked once per process.

`scipy.linalg.cython_blas` exports every BLAS routine it wraps as a capsule in
`__pyx_capi__`: the capsule's pointer is the function, its name the C
signature (Cython spells `double` and `float` as the typedefs
`__pyx_t_..._d` and `__pyx_t_..._s`). Compiled code calls

    dgemm/sgemm  void (char *transa, char *transb, int *m, int *n, int *k, T *alpha,
                       T *a, int *lda, T *b, int *ldb, T *beta, T *c, int *ldc)
    dgemv/sgemv  void (char *trans, int *m, int *n, T *alpha, T *a, int *lda, T *x,
                       int *incx, T *beta, T *y, int *incy)
    ddot/sdot    T (int *n, T *x, int *incx, T *y, int *incy)

with Fortran's conventions: every argument by pointer, matrices column-major,
`int` 32 bits (SciPy's BLAS is LP64). `api()` reads the pointers on first use
(so `import astjit` never imports SciPy), checks each capsule's signature
against the one above and calls ddot, sdot and dgemm once through ctypes (the
return convention of sdot is where BLAS builds differ), then registers the
addresses with LLVM as `astjit.blas.<name>`; `declare` gives a module their
declarations, built from those signatures.

Performance note: SciPy's BLAS is OpenBLAS, which picks its kernels for the
CPU at load time. The environment variable `OPENBLAS_CORETYPE`, when set (some
machines set it globally), forces a core type for every OpenBLAS in the
process, NumPy's and SciPy's alike, and an older one than the host's (e.g.
`Haswell` on an AVX-512 machine) makes matrix products much slower. Unset it
(or set it to the host's core, e.g. `SkylakeX` or `SapphireRapids`) before
Python starts (measured here: `Nehalem` made a 1024x1024 product 4x slower, for
NumPy and compiled code alike). `OPENBLAS_NUM_THREADS` sets the number of threads
as for NumPy.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys

import llvmlite.binding as llvm
from llvmlite import ir

from ....errors import CompileError
from ..lltypes import DOUBLE, I8, I32_T
from .pyapi import VOID

FLOAT = ir.FloatType()
SIGNATURES: dict[str, str] = {
    "dgemm": "void (char *, char *, int *, int *, int *, double *, double *, int *, double *, "
             "int *, double *, double *, int *)",
    "dgemv": "void (char *, int *, int *, double *, double *, int *, double *, int *, double *, "
             "double *, int *)",
    "ddot": "double (int *, double *, int *, double *, int *)",
}
SIGNATURES.update({"s" + name[1:]: text.replace("double", "float")
                   for name, text in list(SIGNATURES.items())})
"""The C signature each routine compiled code calls must have (Cython's typedefs spelled out)."""

C_TYPES = {"void": VOID, "double": DOUBLE, "float": FLOAT, "char *": I8.as_pointer(),
           "int *": I32_T.as_pointer(), "double *": DOUBLE.as_pointer(),
           "float *": FLOAT.as_pointer()}


def function_type(signature: str) -> ir.FunctionType:
    """The LLVM type of a C signature of SIGNATURES: 'double (int *, double *)'."""
    result, params = re.fullmatch(r"(\w+) \((.*)\)", signature).groups()
    return ir.FunctionType(C_TYPES[result], [C_TYPES[p] for p in params.split(", ")])


def _spelled_out(name: str) -> str:
    """A capsule name with Cython's typedefs of double and float spelled out."""
    return re.sub(r"__pyx_t_\w*?cython_(?:blas|lapack)_([ds])\b",
                  lambda m: "double" if m.group(1) == "d" else "float", name)


def _capsule_pointer(capsule) -> tuple[int, str]:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.argtypes, get_name.restype = [ctypes.py_object], ctypes.c_char_p
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.argtypes, get_pointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    name = get_name(capsule)
    return get_pointer(capsule, name), name.decode()


def cython_module(name: str):
    """SciPy's extension module `scipy.linalg.<name>` (cython_blas, cython_lapack), loaded from
    its file without importing the `scipy.linalg` package, whose import takes longer than
    compiling a small function, or than loading one from the disk cache (astjit/cache);
    the package's own where it is imported already."""
    full = f"scipy.linalg.{name}"
    if full in sys.modules:
        return sys.modules[full]
    import scipy

    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(scipy.__path__[0], "linalg", name + suffix)
        if os.path.exists(path):
            spec = importlib.util.spec_from_file_location(full, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    return importlib.import_module(full)


@functools.cache
def api() -> dict[str, int]:
    """Routine name -> address, verified and registered with LLVM (once per process)."""
    try:
        cython_blas = cython_module("cython_blas")
    except ImportError as exc:
        raise CompileError("matrix products in compiled code call SciPy's BLAS: "
                           "install scipy (pip install scipy)") from exc
    addresses = {}
    for name, expected in SIGNATURES.items():
        capsule = cython_blas.__pyx_capi__.get(name)
        if capsule is None:
            raise CompileError(f"SciPy's cython_blas has no {name}; matrix products cannot "
                               "be compiled")
        address, signature = _capsule_pointer(capsule)
        if _spelled_out(signature) != expected or not address:
            raise CompileError(f"SciPy's {name} has the signature '{signature}', not "
                               f"'{expected}'; matrix products cannot be compiled")
        addresses[name] = address
    problem = _verify(addresses)
    if problem:
        raise CompileError(f"SciPy's BLAS does not compute as expected ({problem}); matrix "
                           "products cannot be compiled")
    for name, address in addresses.items():
        llvm.add_symbol(symbol(name), address)
    return addresses


def _verify(addresses: dict[str, int]) -> str | None:
    """Call ddot, sdot and dgemm once through ctypes on small inputs; what is wrong, or None."""
    c_int, p = ctypes.c_int, ctypes.POINTER
    for name, c_real in (("ddot", ctypes.c_double), ("sdot", ctypes.c_float)):
        dot = ctypes.CFUNCTYPE(c_real, p(c_int), p(c_real), p(c_int), p(c_real),
                               p(c_int))(addresses[name])
        x, y = (c_real * 3)(1.0, 2.0, 3.0), (c_real * 3)(4.0, 5.0, 6.0)
        got = dot(ctypes.byref(c_int(3)), x, ctypes.byref(c_int(1)), y, ctypes.byref(c_int(1)))
        if got != 32.0:
            return f"{name}([1, 2, 3], [4, 5, 6]) gave {got}, not 32"
    d = ctypes.c_double
    gemm = ctypes.CFUNCTYPE(None, p(ctypes.c_char), p(ctypes.c_char), *[p(c_int)] * 3, p(d), p(d),
                            p(c_int), p(d), p(c_int), p(d), p(d), p(c_int))(addresses["dgemm"])
    a, b, c = (d * 4)(1.0, 2.0, 3.0, 4.0), (d * 4)(5.0, 6.0, 7.0, 8.0), (d * 4)()
    two, char = ctypes.byref(c_int(2)), lambda letter: ctypes.byref(ctypes.c_char(letter))
    gemm(char(b"T"), char(b"N"), two, two, two, ctypes.byref(d(1.0)), a, two, b, two,
         ctypes.byref(d(0.0)), c, two)
    if list(c) != [17.0, 39.0, 23.0, 53.0]:  # column-major [[1, 2], [3, 4]] @ [[5, 7], [6, 8]]
        return f"dgemm gave {list(c)}"
    return None


def symbol(name: str) -> str:
    """The LLVM name compiled code calls BLAS routine `name` by."""
    return f"astjit.blas.{name}"


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of BLAS routine `name` in `module` (loading SciPy's BLAS first)."""
    api()
    return declare_routine(module, symbol(name), SIGNATURES[name])


def declare_routine(module: ir.Module, name: str, signature: str) -> ir.Function:
    """The declaration of the Fortran routine (BLAS, LAPACK) called `name` in compiled code,
    of C signature `signature`, in `module` (once)."""
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, function_type(signature), name)
        function.attributes.add("nounwind")
    return function
