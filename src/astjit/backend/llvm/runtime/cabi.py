"""The few C types and C calls the runtime's process state and the disk cache's loader make,
from `_ctypes` (the C module under the `ctypes` package) directly.

A process that loads cached machine code calls a handful of C functions (`mmap`,
`mprotect`, `PyCFunction_NewEx`, `pthread_key_create` ...) and looks up symbols. Importing
the `ctypes` package for that defines some forty types, libraries and function prototypes
it never uses: most of the instructions of importing ctypes, and a quarter of a warm load
of a scalar kernel where nothing else imports ctypes (NumPy does: where it is imported,
ctypes' own types are used, and nothing is defined twice). The types here are ctypes'
own kinds (`_SimpleCData` with the same type codes), so they mix with ctypes' freely.
"""
from __future__ import annotations

import struct
import sys
from _ctypes import (
    FUNCFLAG_CDECL,
    FUNCFLAG_PYTHONAPI,
    FUNCFLAG_USE_ERRNO,
    RTLD_LOCAL,
    CFuncPtr,
    Structure,
    _memmove_addr,
    _SimpleCData,
    addressof,
    dlopen,
    dlsym,
    get_errno,
)

__all__ = ["PROCESS", "Structure", "address_of", "addressof", "c_char_p", "c_int", "c_long",
           "c_size_t", "c_uint", "c_uint64", "c_ulong", "c_void_p", "function", "get_errno",
           "library", "memmove", "process_function", "py_object", "symbol"]

_ctypes_package = sys.modules.get("ctypes")
if _ctypes_package is not None:
    c_void_p, c_char_p, c_int, c_uint, c_ulong, c_uint64, c_size_t, c_long, py_object = (
        _ctypes_package.c_void_p, _ctypes_package.c_char_p, _ctypes_package.c_int,
        _ctypes_package.c_uint, _ctypes_package.c_ulong, _ctypes_package.c_uint64,
        _ctypes_package.c_size_t, _ctypes_package.c_long, _ctypes_package.py_object)
else:
    class c_void_p(_SimpleCData):
        _type_ = "P"

    class c_char_p(_SimpleCData):
        _type_ = "z"

    class c_int(_SimpleCData):
        _type_ = "i"

    class c_uint(_SimpleCData):
        _type_ = "I"

    class c_ulong(_SimpleCData):
        _type_ = "L"

    class c_long(_SimpleCData):
        _type_ = "l"

    # Where an unsigned long has 64 bits (LP64: Linux, macOS) it is uint64_t and size_t, one
    # type, as ctypes makes them (each type made is a noticeable part of a warm load).
    if struct.calcsize("L") == 8:
        c_uint64 = c_size_t = c_ulong
    else:
        class c_uint64(_SimpleCData):
            _type_ = "Q"

        class c_size_t(_SimpleCData):
            _type_ = "Q" if sys.platform == "win32" else "L"  # LLP64 or ILP32

    class py_object(_SimpleCData):
        _type_ = "O"

RTLD_NOW = 2
PROCESS = dlopen(None, RTLD_LOCAL | RTLD_NOW)
"""The process's own symbols (`dlopen(NULL)`: the C library, pthreads, the C API)."""


def library(name: str) -> int:
    """A handle on the shared library `name` (OSError where it does not load)."""
    return dlopen(name, RTLD_LOCAL | RTLD_NOW)


def symbol(name: str, handle: int = PROCESS) -> int | None:
    """The address of `name` in the library `handle` (the process by default), or None."""
    try:
        return dlsym(handle, name)
    except OSError:
        return None


def function(target: object, restype: type | None, *argtypes: type, errno: bool = False,
             python_api: bool = False) -> CFuncPtr:
    """A C function of `restype` taking `argtypes`: at address `target` (an int), or calling
    the Python callable `target` (a callback C code may call). `errno`: the call saves
    errno for `get_errno`; `python_api`: the call keeps the GIL and raises the Python
    error the function set."""
    flags = FUNCFLAG_CDECL | (FUNCFLAG_USE_ERRNO if errno else 0) \
        | (FUNCFLAG_PYTHONAPI if python_api else 0)
    if callable(target):  # a callback's types are its class's
        return type("CFunction", (CFuncPtr,), {"_flags_": flags, "_restype_": restype,
                                               "_argtypes_": argtypes})(target)
    made = _prototype(flags)(target)
    made.restype, made.argtypes = restype, argtypes
    return made


_prototypes: dict[int, type] = {}


def _prototype(flags: int) -> type:
    """The class of C functions called with `flags` (one per flags, as ctypes' CDLL makes)."""
    found = _prototypes.get(flags)
    if found is None:
        found = _prototypes[flags] = type("CFunction", (CFuncPtr,), {"_flags_": flags})
    return found


def process_function(name: str, restype: type | None, *argtypes: type,
                     errno: bool = False, python_api: bool = False) -> CFuncPtr:
    """The process's C function `name` (AttributeError where it has none)."""
    address = symbol(name)
    if address is None:
        raise AttributeError(f"this process has no C function {name!r}")
    return function(address, restype, *argtypes, errno=errno, python_api=python_api)


def address_of(function_object: CFuncPtr) -> int:
    """The address a C function object calls (of a callback: the C entry point made)."""
    return c_void_p.from_buffer(function_object).value


memmove = function(_memmove_addr, c_void_p, c_void_p, c_void_p, c_size_t)
"""`memmove(destination, source, size)`; a `bytes` source passes its data."""
