"""LAPACK as compiled code calls it: C function pointers, checked once per process.

The routines are NumPy's own OpenBLAS's where NumPy bundles one (64-bit ints, loaded
with NumPy: no import of SciPy), else SciPy's `cython_lapack` (astjit/capsules.py's `lapack`:
as for BLAS, blas.py, each routine a capsule in `__pyx_capi__` whose name is its C
signature). Compiled code calls (Fortran conventions: every argument by pointer,
matrices column-major, `int` the library's: `int_type`)

    dgesv/sgesv    void (int *n, int *nrhs, T *a, int *lda, int *ipiv, T *b, int *ldb,
                         int *info)                 solve A X = B (LU with partial pivoting)
    dgetrf/sgetrf  void (int *m, int *n, T *a, int *lda, int *ipiv, int *info)   A = P L U
    dpotrf/spotrf  void (char *uplo, int *n, T *a, int *lda, int *info)          A = L L^T

`api()` reads and checks the pointers on first use (so `import astjit` never loads
LAPACK), solves a 2x2 system through ctypes once, and registers the addresses with LLVM
as `astjit.lapack.i<bits>.<name>`. The ints' width shows in the IR and in the names, so
code compiled against one library is never linked to the other.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm
from llvmlite import ir

from .... import capsules
from .blas import declare_routine


@functools.cache
def api() -> dict[str, int]:
    """Routine name -> address, verified (capsules.lapack) and registered with LLVM (once
    per process)."""
    addresses = capsules.lapack().addresses
    for name, address in addresses.items():
        llvm.add_symbol(symbol(name), address)
    return addresses


def symbol(name: str) -> str:
    """The LLVM name compiled code calls LAPACK routine `name` by, with the width of the
    library's ints, as blas.symbol."""
    return f"astjit.lapack.i{capsules.lapack().int_bits}.{name}"


def int_type() -> ir.IntType:
    """The integer type the LAPACK routines take (by pointer), loading them first."""
    api()
    return ir.IntType(capsules.lapack().int_bits)


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of LAPACK routine `name` in `module` (loading LAPACK first)."""
    return declare_routine(module, symbol(name), capsules.LAPACK_SIGNATURES[name], int_type())
