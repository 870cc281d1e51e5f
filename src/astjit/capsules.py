"""C functions other extensions publish, found with ctypes alone.

NumPy publishes its C API as a table of pointers behind the capsule `_ARRAY_API`
(backend/llvm/runtime/numpy_api.py says which entries compiled code calls and how they
are checked); SciPy's `cython_blas` and `cython_lapack` publish each routine as a capsule
in `__pyx_capi__`, named by its C signature (runtime/blas.py, runtime/lapack.py). NumPy's
wheels bundle an OpenBLAS with 64-bit ints, which `numpy.linalg` has loaded with NumPy:
its BLAS and LAPACK routines are exported symbols, found through that module's library
(`numpy_routines`). The addresses are read here, without LLVM: the modules that declare
these functions to LLVM register them, and the disk cache's loader links cached code to
them without importing llvmlite (astjit/cache/__init__.py). A top-level module, as `cabi`
is: loading cached array code imports it, and the backend's packages above it would cost
that load more than its own code.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import importlib.machinery
import importlib.util
import os
import re
import struct
import sys
from collections.abc import Iterable
from types import SimpleNamespace

from . import cabi
from .errors import CompileError

NUMPY_INDICES = {"PyArray_GetNDArrayCVersion": 0, "PyArray_Type": 2, "PyArray_DescrFromType": 45,
                 "PyArray_NewFromDescr": 94, "PyArray_Zeros": 183,
                 "PyArray_GetNDArrayCFeatureVersion": 211, "PyArray_SetBaseObject": 282}
"""Entry name -> its index in `PyArray_API` (numpy/__multiarray_api.h, NumPy 1.7 to 2.x)."""


def numpy_capsule():
    try:
        from numpy._core import _multiarray_umath as module
    except ImportError:  # NumPy 1.x
        from numpy.core import multiarray as module
    return module._ARRAY_API


def table_address(capsule) -> int:
    """The pointer a capsule holds."""
    return capsule_pointer(capsule)[0]


@functools.cache
def numpy_addresses() -> dict[str, int]:
    """The `NUMPY_INDICES` entries of NumPy's table, unchecked (numpy_api.api checks them):
    read once per process (the table is NumPy's for the process's life), where a load asks
    for each entry its code imports."""
    table = table_address(numpy_capsule())
    size = ctypes.sizeof(ctypes.c_void_p)
    return {name: ctypes.c_void_p.from_address(table + size * index).value
            for name, index in NUMPY_INDICES.items()} if table else {}


BLAS_SIGNATURES: dict[str, str] = {
    "dgemm": "void (char *, char *, int *, int *, int *, double *, double *, int *, double *, "
             "int *, double *, double *, int *)",
    "dgemv": "void (char *, int *, int *, double *, double *, int *, double *, int *, double *, "
             "double *, int *)",
    "ddot": "double (int *, double *, int *, double *, int *)",
}
BLAS_SIGNATURES.update({"s" + name[1:]: text.replace("double", "float")
                        for name, text in list(BLAS_SIGNATURES.items())})
BLAS_SIGNATURES.update({prefix + name: BLAS_SIGNATURES["d" + name].replace("double", part)
                        for prefix, part in (("z", "double complex"), ("c", "float complex"))
                        for name in ("gemm", "gemv")})
"""The C signature each routine compiled code calls must have (Cython's typedefs spelled out);
`int` is the library's (`Blas.int_bits`): SciPy's capsules say `int`, 32 bits."""

LAPACK_SIGNATURES: dict[str, str] = {
    "dgesv": "void (int *, int *, double *, int *, int *, double *, int *, int *)",
    "dgetrf": "void (int *, int *, double *, int *, int *, int *)",
    "dpotrf": "void (char *, int *, double *, int *, int *)",
}
LAPACK_SIGNATURES.update({"s" + name[1:]: text.replace("double", "float")
                          for name, text in list(LAPACK_SIGNATURES.items())})
"""As `BLAS_SIGNATURES`, for the LAPACK routines compiled code calls (lapack.py)."""


def spelled_out(name: str) -> str:
    """A capsule name with Cython's typedefs of double and float (and their complexes:
    `__pyx_t_double_complex`) spelled out."""
    name = re.sub(r"__pyx_t_(double|float)_complex\b", r"\1 complex", name)
    return re.sub(r"__pyx_t_\w*?cython_(?:blas|lapack)_([ds])\b",
                  lambda m: "double" if m.group(1) == "d" else "float", name)


def capsule_pointer(capsule) -> tuple[int, str]:
    """The pointer a capsule holds and its name ("" for a capsule without: NumPy's table)."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.argtypes, get_name.restype = [ctypes.py_object], ctypes.c_char_p
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.argtypes, get_pointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    name = get_name(capsule)
    return get_pointer(capsule, name), (name or b"").decode()


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


NUMPY_BLAS_NAMES = ("scipy_{}_64_", "{}_64_")
"""How the OpenBLAS of NumPy's wheels names a routine (64-bit ints, suffix `64_`): NumPy 2's
scipy-openblas64, then NumPy 1's openblas64_."""


def routines(addresses: dict[str, int], int_bits: int, origin: str) -> SimpleNamespace:
    """The BLAS or LAPACK compiled code calls: `.addresses` (each routine's), `.int_bits`
    (the width of its ints: 64 for NumPy's OpenBLAS (ILP64), 32 for SciPy's (LP64)) and
    `.origin` (which library). A namespace, not a class: a class made costs a warm cache
    load of array code more than the rest of its link's work on it (docs/caching.md)."""
    return SimpleNamespace(addresses=addresses, int_bits=int_bits, origin=origin)


@functools.cache
def blas() -> SimpleNamespace:
    """NumPy's own OpenBLAS where it has one (`numpy_blas`), else SciPy's (`scipy_blas`):
    ddot, sdot and dgemm called once (`verify_blas`); CompileError where neither is usable
    (once per process). NumPy's is loaded already, where SciPy's costs the import of
    `scipy` and the loading of its OpenBLAS, longer than compiling a small function; and
    it is the library NumPy's own `a @ b` calls."""
    return _numpy_else_scipy(BLAS_SIGNATURES, verify_blas, scipy_blas, "cython_blas",
                             "SciPy's BLAS", "matrix products")


def _numpy_else_scipy(signatures: dict[str, str], verify, scipy, module: str, library: str,
                      users: str) -> SimpleNamespace:
    """NumPy's own OpenBLAS's routines (64-bit ints) where `verify` passes them, else
    SciPy's (`scipy()`, 32-bit ints from its `module`), which must pass it."""
    found = numpy_routines(signatures)
    if found is not None and verify(found, "q") is None:
        return routines(found, 64, "NumPy's OpenBLAS")
    addresses = scipy()
    problem = verify(addresses, "i")
    if problem:
        raise CompileError(f"{library} does not compute as expected ({problem}); {users} "
                           "cannot be compiled")
    return routines(addresses, 32, f"SciPy's {module}")


def numpy_routines(names: Iterable[str]) -> dict[str, int] | None:
    """The routines `names` (BLAS or LAPACK) of the 64-bit-int OpenBLAS NumPy's linear
    algebra links (`NUMPY_BLAS_NAMES`), looked up through `numpy.linalg._umath_linalg`'s
    library (whose dependencies dlsym searches too), or None: NumPy built with another
    BLAS. By `dlopen` and `dlsym` (`cabi`): a ctypes `CDLL` makes a class of functions."""
    try:
        from numpy.linalg import _umath_linalg
        library = cabi.library(_umath_linalg.__file__)
    except (ImportError, OSError, AttributeError):
        return None
    for pattern in NUMPY_BLAS_NAMES:
        addresses = {name: cabi.symbol(pattern.format(name), library) for name in names}
        if all(addresses.values()):
            return addresses
    return None


def scipy_blas() -> dict[str, int]:
    """BLAS routine name -> address of SciPy's (`scipy_routines`)."""
    return scipy_routines("cython_blas", BLAS_SIGNATURES, "SciPy's BLAS", "matrix products")


def scipy_routines(module: str, signatures: dict[str, str], library: str,
                   users: str) -> dict[str, int]:
    """Routine name -> address from SciPy's `module` (cython_blas, cython_lapack), each
    capsule's signature checked against `signatures`; CompileError where SciPy is missing
    or differs, naming the `library` and what cannot be compiled (`users`)."""
    try:
        capsules = cython_module(module).__pyx_capi__
    except ImportError as exc:
        raise CompileError(f"{users} in compiled code call NumPy's OpenBLAS or {library}: "
                           "install scipy (pip install scipy)") from exc
    addresses = {}
    for name, expected in signatures.items():
        capsule = capsules.get(name)
        address, signature = capsule_pointer(capsule) if capsule is not None else (0, "")
        if spelled_out(signature) != expected or not address:
            raise CompileError(f"{library}'s {name} has the signature '{signature}', not "
                               f"'{expected}'; {users} cannot be compiled")
        addresses[name] = address
    return addresses


def fortran_call(address: int, restype: type | None, *arguments: tuple[str, tuple]):
    """Call the C function at `address` as Fortran calls: each argument a pointer to its
    values, given as a `struct` code and the values (`("q", (3,))`: an int64 3). Its result
    (`restype`, e.g. `ctypes.c_double`; a C int where None) and each argument's values after
    the call. Through `cabi` with one buffer of bytes holding every argument's values, each
    8-byte aligned: ctypes' prototypes, pointer and array types are classes, each made once
    per process, which cost a warm cache load more than the calls (docs/caching.md); one
    buffer, not one per argument, makes one ctypes object to find its address. The GIL kept
    during the call, as for the loader's other calls (`cabi.function`: one class of them)."""
    formats = [f"={len(values)}{code}" for code, values in arguments]
    offsets, end = [], 0
    for text in formats:
        offsets.append(end)
        end += -(-struct.calcsize(text) // 8) * 8
    block = bytearray(max(end, 8))  # 8 bytes at least: `buffer_address`'s own
    for text, (_, values), at in zip(formats, arguments, offsets):
        struct.pack_into(text, block, at, *values)
    base = cabi.buffer_address(block)
    result = cabi.function(address, restype, python_api=True)(
        *[cabi.c_void_p(base + at) for at in offsets])
    return result, [struct.unpack_from(text, block, at) for text, at in zip(formats, offsets)]


def verify_blas(addresses: dict[str, int], int_code: str = "i") -> str | None:
    """Call ddot, sdot and dgemm once on small inputs, with ints of `struct` code `int_code`
    ("i" or "q"); what is wrong, or None."""
    one, three = (int_code, (1,)), (int_code, (3,))
    for name, real, restype in (("ddot", "d", ctypes.c_double), ("sdot", "f", ctypes.c_float)):
        got, _ = fortran_call(addresses[name], restype, three, (real, (1.0, 2.0, 3.0)), one,
                              (real, (4.0, 5.0, 6.0)), one)
        if got != 32.0:
            return f"{name}([1, 2, 3], [4, 5, 6]) gave {got}, not 32"
    two = (int_code, (2,))
    _, values = fortran_call(addresses["dgemm"], None, ("c", (b"T",)), ("c", (b"N",)), two, two,
                             two, ("d", (1.0,)), ("d", (1.0, 2.0, 3.0, 4.0)), two,
                             ("d", (5.0, 6.0, 7.0, 8.0)), two, ("d", (0.0,)), ("d", (0.0,) * 4),
                             two)
    if list(values[11]) != [17.0, 39.0, 23.0, 53.0]:  # column-major [[1, 2], [3, 4]] @ [[5, 7], [6, 8]]
        return f"dgemm gave {list(values[11])}"
    return None


@functools.cache
def lapack() -> SimpleNamespace:
    """NumPy's own OpenBLAS's LAPACK where it has one (`numpy_routines`), else SciPy's
    `cython_lapack`: dgesv called once on a 2x2 system (`verify_lapack`); CompileError where
    neither is usable (once per process). SciPy's costs the import of `scipy` and the
    loading of its OpenBLAS; NumPy's is loaded, and is the library `np.linalg` calls."""
    return _numpy_else_scipy(LAPACK_SIGNATURES, verify_lapack, scipy_lapack, "cython_lapack",
                             "SciPy's LAPACK", "np.linalg functions")


def scipy_lapack() -> dict[str, int]:
    """LAPACK routine name -> address of SciPy's (`scipy_routines`)."""
    return scipy_routines("cython_lapack", LAPACK_SIGNATURES, "SciPy's LAPACK",
                          "np.linalg functions")


def verify_lapack(addresses: dict[str, int], int_code: str = "i") -> str | None:
    """Solve [[2, 1], [1, 3]] x = [3, 5] with dgesv, ints of `struct` code `int_code`; what
    is wrong, or None."""
    two = (int_code, (2,))
    _, values = fortran_call(addresses["dgesv"], None, two, (int_code, (1,)),
                             ("d", (2.0, 1.0, 1.0, 3.0)), two, (int_code, (0, 0)),
                             ("d", (3.0, 5.0)), two, (int_code, (-1,)))
    (info,), b = values[7], values[5]
    if info != 0 or abs(b[0] - 0.8) > 1e-12 or abs(b[1] - 1.4) > 1e-12:
        return f"dgesv gave {list(b)} (info {info}), not [0.8, 1.4]"
    return None
