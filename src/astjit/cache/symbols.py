"""Making the symbols loaded machine code imports resolvable in this process.

A compile registers the addresses of what its code calls as it emits the calls: the C
API's functions, NumPy's table, SciPy's BLAS and LAPACK, NumPy's sort kernels, a
type's `tp_alloc`, NumPy's ufunc loops, libmvec's vector math, the stack guard, the objects of
`runtime/objects.py`. A process that loads code instead of compiling it has emitted
nothing, so `provide` registers each import by its name, with the same functions the
code generator calls (imported only when a name needs them: loading stays cheap).
Names it does not know are left alone; the engine refuses to link code whose imports
do not all resolve (`Engine.load`), and the cache then compiles afresh.
"""
from __future__ import annotations

import builtins
import ctypes
import sys
from collections.abc import Callable, Iterable

import llvmlite.binding as llvm


def provide(imports: Iterable[str]) -> bool:
    """Register what `imports` name (see the module's docstring); False when an object
    symbol names no object here."""
    from ..backend.llvm.runtime import objects

    names = [name for name in sorted(set(imports)) if llvm.address_of_symbol(name) is None]
    if names:
        from ..backend.llvm.runtime import pyapi

        pyapi.register_functions()  # the C API's, and what the wrapper reads of the C library
        names = [name for name in names if llvm.address_of_symbol(name) is None]
    if not objects.register({n for n in names if n.startswith(objects.OBJECT_PREFIX)}):
        return False
    for name in names:
        for prefix, register in _REGISTRARS:
            if name.startswith(prefix) and llvm.address_of_symbol(name) is None:
                register(name)
    return True


def _numpy(name: str) -> None:
    from ..backend.llvm.runtime import numpy_api

    if name.removeprefix("astjit.") in numpy_api.FUNCTIONS:
        numpy_api.api()


def _blas(name: str) -> None:
    from ..backend.llvm.runtime import blas

    blas.api()


def _lapack(name: str) -> None:
    from ..backend.llvm.runtime import lapack

    lapack.api()


def _sort(name: str) -> None:
    from ..backend.llvm.runtime import npysort
    from ..ir.types import NUMPY_NAMES, ScalarType

    what, dtype, kind = name.removeprefix("astjit.npysort.").split(".")
    if dtype in NUMPY_NAMES:
        npysort.kernel(what, ScalarType(dtype), kind)


def _alloc(name: str) -> None:
    from ..backend.llvm.runtime import wrapper

    numpy = sys.modules.get("numpy")
    cls_name = name.removeprefix("astjit.tp_alloc.")
    cls = getattr(numpy, cls_name, None) if numpy is not None else None
    cls = cls if isinstance(cls, type) else getattr(builtins, cls_name, None)
    if isinstance(cls, type):
        wrapper.register_alloc(cls)


def _object_new(name: str) -> None:
    from ..backend.llvm.runtime import trees

    trees.register_object_new()


def _stack(name: str) -> None:
    from ..backend.llvm.runtime import stack

    stack.register_functions()


def _vector_math(name: str) -> None:
    """A libmvec variant (`_ZGVdN4v_` and a C function's name), by name: `vecmath`'s probe
    (`VectorLibrary.offers`) would read the op table."""
    from ..backend.llvm import vecmath

    try:
        function = getattr(ctypes.CDLL(vecmath.LIBRARY), name, None)
    except OSError:
        return
    if function is not None:
        llvm.add_symbol(name, ctypes.cast(function, ctypes.c_void_p).value)


def _ufunc_loop(name: str) -> None:
    from ..backend.llvm.runtime import ufunc_loops

    ufunc_loops.register(name)


def _libm(name: str) -> None:
    from ..backend.llvm.jit import engine

    engine.register_libm((name.removesuffix("f"),))


_REGISTRARS: tuple[tuple[str, Callable[[str], None]], ...] = (
    ("astjit.blas.", _blas),
    ("astjit.lapack.", _lapack),
    ("astjit.npysort.", _sort),
    ("astjit.ufunc_loop.", _ufunc_loop),
    ("astjit.tp_alloc.", _alloc),
    ("astjit.object_new", _object_new),
    ("astjit_thread_stack_limit", _stack),
    ("pthread_self", _stack),
    ("_ZGV", _vector_math),
    ("astjit.", _numpy),
    ("", _libm),
)
"""Name prefix -> what registers names of that kind (first match that is still missing)."""
