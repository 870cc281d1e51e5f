"""SciPy's LAPACK as compiled code calls it: C function pointers, checked once per process.

As for BLAS (blas.py): `scipy.linalg.cython_lapack.__pyx_capi__` holds each routine as a
capsule whose name is its C signature. Compiled code calls (Fortran conventions: every
argument by pointer, matrices column-major, 32-bit ints)

    dgesv/sgesv    void (int *n, int *nrhs, T *a, int *lda, int *ipiv, T *b, int *ldb,
                         int *info)                 solve A X = B (LU with partial pivoting)
    dgetrf/sgetrf  void (int *m, int *n, T *a, int *lda, int *ipiv, int *info)   A = P L U
    dpotrf/spotrf  void (char *uplo, int *n, T *a, int *lda, int *info)          A = L L^T

`api()` reads and checks the pointers on first use (so `import astjit` never imports
SciPy), solves a 2x2 system through ctypes once, and registers the addresses with LLVM
as `astjit.lapack.<name>`.
"""
from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm
from llvmlite import ir

from ....errors import CompileError
from .blas import declare_routine
from .capsules import capsule_pointer, cython_module, spelled_out

SIGNATURES: dict[str, str] = {
    "dgesv": "void (int *, int *, double *, int *, int *, double *, int *, int *)",
    "dgetrf": "void (int *, int *, double *, int *, int *, int *)",
    "dpotrf": "void (char *, int *, double *, int *, int *)",
}
SIGNATURES.update({"s" + name[1:]: text.replace("double", "float")
                   for name, text in list(SIGNATURES.items())})
"""The C signature each routine compiled code calls must have (Cython's typedefs spelled out)."""


@functools.cache
def api() -> dict[str, int]:
    """Routine name -> address, verified and registered with LLVM (once per process)."""
    try:
        cython_lapack = cython_module("cython_lapack")
    except ImportError as exc:
        raise CompileError("np.linalg functions in compiled code call SciPy's LAPACK: "
                           "install scipy (pip install scipy)") from exc
    addresses = {}
    for name, expected in SIGNATURES.items():
        capsule = cython_lapack.__pyx_capi__.get(name)
        address, signature = capsule_pointer(capsule) if capsule is not None else (0, "")
        if spelled_out(signature) != expected or not address:
            raise CompileError(f"SciPy's LAPACK {name} has the signature '{signature}', not "
                               f"'{expected}'; np.linalg functions cannot be compiled")
        addresses[name] = address
    if not _solves(addresses["dgesv"]):
        raise CompileError("SciPy's dgesv does not solve [[2, 1], [1, 3]] x = [3, 5]; "
                           "np.linalg functions cannot be compiled")
    for name, address in addresses.items():
        llvm.add_symbol(symbol(name), address)
    return addresses


def _solves(address: int) -> bool:
    c_int, d, p = ctypes.c_int, ctypes.c_double, ctypes.POINTER
    gesv = ctypes.CFUNCTYPE(None, p(c_int), p(c_int), p(d), p(c_int), p(c_int), p(d), p(c_int),
                            p(c_int))(address)
    a, b, pivots, info = (d * 4)(2.0, 1.0, 1.0, 3.0), (d * 2)(3.0, 5.0), (c_int * 2)(), c_int(-1)
    two, one = ctypes.byref(c_int(2)), ctypes.byref(c_int(1))
    gesv(two, one, a, two, pivots, b, two, ctypes.byref(info))
    return info.value == 0 and abs(b[0] - 0.8) < 1e-12 and abs(b[1] - 1.4) < 1e-12


def symbol(name: str) -> str:
    """The LLVM name compiled code calls LAPACK routine `name` by."""
    return f"astjit.lapack.{name}"


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of LAPACK routine `name` in `module` (loading SciPy's LAPACK first)."""
    api()
    return declare_routine(module, symbol(name), SIGNATURES[name])
