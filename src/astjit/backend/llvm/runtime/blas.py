"""BLAS as compiled code calls it: C function pointers, checked once per process.

The routines are NumPy's own OpenBLAS's where NumPy bundles one (its wheels do: 64-bit
ints, loaded with NumPy, the library NumPy's `a @ b` calls), else SciPy's
(astjit/capsules.py's `blas`). `scipy.linalg.cython_blas` exports every BLAS routine it wraps
as a capsule in `__pyx_capi__`: the capsule's pointer is the function, its name the C
signature (Cython spells `double` and `float` as the typedefs `__pyx_t_..._d` and
`__pyx_t_..._s`). Compiled code calls

    dgemm/sgemm  void (char *transa, char *transb, int *m, int *n, int *k, T *alpha,
                       T *a, int *lda, T *b, int *ldb, T *beta, T *c, int *ldc)
    dgemv/sgemv  void (char *trans, int *m, int *n, T *alpha, T *a, int *lda, T *x,
                       int *incx, T *beta, T *y, int *incy)
    ddot/sdot    T (int *n, T *x, int *incx, T *y, int *incy)

with Fortran's conventions: every argument by pointer, matrices column-major,
`int` the library's (`int_type`: 64 bits for NumPy's, 32 for SciPy's, which is LP64).
`api()` reads the pointers on first use (so `import astjit` never imports SciPy),
checks SciPy's capsules' signatures against the one above and calls ddot, sdot and
dgemm once through ctypes (the return convention of sdot is where BLAS builds differ:
astjit/capsules.py, which needs no LLVM), then registers the addresses with LLVM as
`astjit.blas.i<bits>.<name>` (`symbol`); `declare` gives a module their declarations, built from those
signatures. Which library is used shows in the IR (the ints' width) and in the symbols'
names, so a runtime cache entry or a cached function compiled against one is never
linked to the other (the cache's key names NumPy's version, not which BLAS a process
found).

Performance note: both are OpenBLAS, which picks its kernels for the
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

import functools
import re

import llvmlite.binding as llvm
from llvmlite import ir

from .... import capsules
from ..lltypes import DOUBLE, I8, I32_T
from .pyapi import VOID

FLOAT = ir.FloatType()
C_TYPES = {"void": VOID, "double": DOUBLE, "float": FLOAT, "char *": I8.as_pointer(),
           "int *": I32_T.as_pointer(), "double *": DOUBLE.as_pointer(),
           "float *": FLOAT.as_pointer(),
           "double complex *": ir.VectorType(DOUBLE, 2).as_pointer(),
           "float complex *": ir.VectorType(FLOAT, 2).as_pointer()}


def function_type(signature: str, index: ir.IntType = I32_T) -> ir.FunctionType:
    """The LLVM type of a C signature of `capsules.BLAS_SIGNATURES` (or LAPACK's):
    'double (int *, double *)', `int` being `index`."""
    result, params = re.fullmatch(r"(\w+) \((.*)\)", signature).groups()
    types = {**C_TYPES, "int *": index.as_pointer()}
    return ir.FunctionType(types[result], [types[p] for p in params.split(", ")])


@functools.cache
def api() -> dict[str, int]:
    """Routine name -> address, verified (capsules.blas) and registered with LLVM
    (once per process)."""
    addresses = capsules.blas().addresses
    for name, address in addresses.items():
        llvm.add_symbol(symbol(name), address)
    return addresses


def symbol(name: str) -> str:
    """The LLVM name compiled code calls BLAS routine `name` by, with the width of the
    library's ints (`astjit.blas.i64.dgemm`): a disk cache entry names the library it was
    compiled against, and so never links to one taking other ints (cache/__init__.py)."""
    return f"astjit.blas.i{capsules.blas().int_bits}.{name}"


def int_type() -> ir.IntType:
    """The integer type the BLAS routines take (by pointer), loading them first."""
    api()
    return ir.IntType(capsules.blas().int_bits)


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of BLAS routine `name` in `module` (loading the BLAS first)."""
    return declare_routine(module, symbol(name), capsules.BLAS_SIGNATURES[name], int_type())


def declare_routine(module: ir.Module, name: str, signature: str,
                    index: ir.IntType = I32_T) -> ir.Function:
    """The declaration of the Fortran routine (BLAS, LAPACK) called `name` in compiled code,
    of C signature `signature` with ints `index`, in `module` (once)."""
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, function_type(signature, index), name)
        function.attributes.add("nounwind")
    return function
