"""The process's C side that compiled code and the disk cache's loader share, from `_ctypes`.

One module, importing nothing of astjit's: a process that only loads cached machine code
(astjit/cache) imports it and no code generator, no llvmlite and not the `ctypes` package
(whose import defines some forty types, libraries and prototypes the loader never uses).
It holds what both sides need once per process:

- C calls (`function`, `process_function`, `symbol`, `library`): no argument
  types are declared, so a C `int` passes as a Python int, a pointer or any 64-bit
  integer as `c_void_p(...)` (an object as its address, `c_void_p(id(obj))`), a `bytes` as
  its data; the result is a C `int` unless said otherwise. One ctypes type in all,
  `c_void_p` (ctypes' own where its package is imported): each type made costs a warm
  load more than most of its work, and the integer ones twice (a byte-swapped twin);
- the process state compiled code reads (`MAIN_THREAD`, `RELEASED_KEY`: runtime/gil.py,
  interrupts.py) and the C function it calls for the calling thread's stack limit
  (`THREAD_LIMIT`: runtime/stack.py);
- builtin function objects around machine code (`make_builtin`, `EntryPins`,
  `ErrorReporter`), for compiled entries (runtime/entry.py) and loaded ones alike;
- Python objects by portable name (`portable_name`, `resolve`): machine code refers to
  `float`, `None` or a dtype by a symbol another process finds again
  (runtime/objects.py registers them with LLVM; the loader resolves them itself);
- machine code in memory (`load_image`, `Image`): object code the ELF linker laid out
  where a cache entry was written (cache/elf.py), mapped and relocated here.
"""
from __future__ import annotations

import builtins
import functools
import importlib
import os
import struct
import sys
import threading
import weakref
from _ctypes import (
    FUNCFLAG_CDECL,
    FUNCFLAG_PYTHONAPI,
    FUNCFLAG_USE_ERRNO,
    RTLD_LOCAL,
    CFuncPtr,
    Py_DECREF,
    PyObj_FromPtr,
    _SimpleCData,
    addressof,
    dlopen,
    dlsym,
    get_errno,
)
from collections.abc import Callable
from typing import Any

_ctypes_package = sys.modules.get("ctypes")
if _ctypes_package is not None:  # the same kind either way; ctypes' is ready-made
    c_void_p = _ctypes_package.c_void_p
else:
    class c_void_p(_SimpleCData):
        _type_ = "P"

# ---- C calls ---------------------------------------------------------------------------------

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


_prototypes: dict[int, type] = {}


def function(target: object, restype: type | None = None,
             python_api: bool = False) -> CFuncPtr:
    """The C function at address `target` (an int), or calling the Python callable `target`
    (a callback C code may call, taking no arguments), returning `restype` (a C int where
    None). Every call saves errno for `get_errno`. `python_api`: the call keeps the GIL and
    raises the Python error the function set; the loader makes its own short calls so too
    (mapping memory, `thread_state`'s key, the stack's bounds, the BLAS check of
    capsules.py), beside `PyCFunction_NewEx`'s: one class of C functions for all of a warm
    load's calls (each class made costs a warm load more than the calls); others release
    the GIL."""
    flags = FUNCFLAG_CDECL | FUNCFLAG_USE_ERRNO | (FUNCFLAG_PYTHONAPI if python_api else 0)
    if callable(target):  # a callback's types are its class's
        return type("CFunction", (CFuncPtr,), {"_flags_": flags, "_restype_": restype,
                                               "_argtypes_": ()})(target)
    prototype = _prototypes.get(flags)
    if prototype is None:  # one class per flags, as ctypes' CDLL makes
        prototype = _prototypes[flags] = type("CFunction", (CFuncPtr,), {"_flags_": flags})
    made = prototype(target)
    if restype is not None:
        made.restype = restype
    return made


def process_function(name: str, restype: type | None = None,
                     python_api: bool = False) -> CFuncPtr:
    """The process's C function `name` (AttributeError where it has none)."""
    address = symbol(name)
    if address is None:
        raise AttributeError(f"this process has no C function {name!r}")
    return function(address, restype, python_api)


def address_of(function_object: CFuncPtr) -> int:
    """The address a C function object calls (of a callback: the C entry point made)."""
    return c_void_p.from_buffer(function_object).value


def buffer_address(data: bytearray) -> int:
    """The address of `data`'s bytes (stable while it is not resized)."""
    return addressof(c_void_p.from_buffer(data))


# ---- the process state compiled code reads ---------------------------------------------------

MAIN_THREAD = "astjit.main_thread"
"""An i64 holding the main thread's `pthread_self()`, the one thread that runs handlers."""
RELEASED_KEY = "astjit.released_key"
"""The `pthread_key_t` of the thread state a compiled call saved when it released the GIL
(runtime/gil.py): NULL while the call holds it."""
KEY_BYTES = 4 if sys.platform.startswith("linux") else 8
"""The size of `pthread_key_t` (an unsigned int on Linux, an unsigned long elsewhere), in
the 8-byte cell `RELEASED_KEY` names."""
THREAD_LIMIT = "astjit_thread_stack_limit"
"""The C-callable `thread_stack_limit`, as compiled code calls it."""

_main_thread = c_void_p()
_released_key = c_void_p()

HEADROOM = (128 << 10, 1 << 20)
"""The stack bytes kept free above the thread's lowest address: a quarter of the stack,
within these bounds. The guard fails that far before the stack would overflow; below
the last check, NumPy's allocations and BLAS calls need tens of KiB. A thread with
less stack than the lower bound raises on its first guarded invocation."""
MAX_STACK = 1 << 30
"""The most stack one thread is assumed to have (an unlimited RLIMIT_STACK reports the
whole gap below the stack, which later mappings may take)."""


def _note_main_thread() -> None:
    _main_thread.value = threading.main_thread().ident or 0


@functools.cache
def thread_state() -> dict[str, int]:
    """The addresses of `MAIN_THREAD` and `RELEASED_KEY`, the key made on first request (once
    per process; a forked child notes its own main thread)."""
    create = process_function("pthread_key_create", python_api=True)
    if create(c_void_p(addressof(_released_key)), None) != 0:
        raise OSError("pthread_key_create failed: no thread-local key for compiled code")
    _note_main_thread()
    os.register_at_fork(after_in_child=_note_main_thread)
    return {MAIN_THREAD: addressof(_main_thread), RELEASED_KEY: addressof(_released_key)}


_thread = threading.local()


def thread_stack_limit() -> int:
    """The lowest stack address compiled code may use in the calling thread (0: unknown)."""
    limit = getattr(_thread, "limit", None)
    if limit is None:
        try:
            bounds = thread_stack_bounds()
        except (OSError, AttributeError, TypeError):
            bounds = None
        limit = 0
        if bounds is not None:
            low, high = bounds
            low = max(low, high - MAX_STACK)
            limit = low + min(max(HEADROOM[0], (high - low) // 4), HEADROOM[1])
        _thread.limit = limit
    return limit


def thread_stack_bounds() -> tuple[int, int] | None:
    """The calling thread's stack as (lowest address, highest address), from the thread
    library: glibc's and musl's `pthread_getattr_np`, macOS's `pthread_get_stack*_np`."""
    thread = c_void_p(process_function("pthread_self", c_void_p, True)())
    if sys.platform == "darwin":
        high = process_function("pthread_get_stackaddr_np", c_void_p, True)(thread) or 0
        size = process_function("pthread_get_stacksize_np", c_void_p, True)(thread) or 0
        return high - size, high
    attr = bytearray(256)  # a pthread_attr_t (56 or 64 bytes)
    at = c_void_p(buffer_address(attr))
    if process_function("pthread_getattr_np", None, True)(thread, at) != 0:
        return None
    try:
        address, size = c_void_p(), c_void_p()
        if process_function("pthread_attr_getstack", None, True)(
                at, c_void_p(addressof(address)), c_void_p(addressof(size))) != 0:
            return None
        low = address.value or 0
        return low, low + (size.value or 0)
    finally:
        process_function("pthread_attr_destroy", None, True)(at)


_thread_limit: list = []
_thread_limit_lock = threading.Lock()


def thread_stack_limit_address() -> int:
    """The address of `THREAD_LIMIT`, the C function compiled code calls: `thread_stack_limit`
    as a C function, made on first request (once: code linked to it calls it for the
    process's life)."""
    with _thread_limit_lock:
        if not _thread_limit:
            _thread_limit.append(function(thread_stack_limit, c_void_p))
    return address_of(_thread_limit[0])

# ---- builtins around machine code ------------------------------------------------------------

METH_FASTCALL = 0x0080
METH_KEYWORDS = 0x0002
METHOD_DEF = struct.Struct("PPiP")
"""PyMethodDef: ml_name, ml_meth, ml_flags, ml_doc (laid out in a bytearray, followed by the
two strings: no ctypes Structure class to make)."""

_new_builtin = process_function("PyCFunction_NewEx", c_void_p, python_api=True)
"""`PyCFunction_NewEx(method_def, self, module)`: a new reference, by its address (no
`py_object` type to make: `make_builtin` takes the object from it)."""


class EntryPins:
    """What a compiled entry's machine code points at, kept alive by the builtin (its
    `__self__`): the PyMethodDef, the fallback, the error handler, the general-tier
    callable and the container boundary (whose addresses the machine code embeds, or whose
    pin symbols it was linked to), and the compiled code itself (unmapped when collected).

    An entry whose wrapper is the runtime's, shared by every kernel of its signature
    (runtime/shared_entry.py), reads the fallback, the handler and the general tier from
    these slots (`slot_offsets`), and its kernel from the table `table` points at."""

    __slots__ = ("code", "error_handler", "fallback", "general", "method_def", "table", "trees")

    def __init__(self, method_def: bytearray | None, fallback: Any, error_handler: Any,
                 general: Any = None, trees: Any = None):
        self.method_def = method_def
        self.fallback = fallback
        self.error_handler = error_handler
        self.general = general
        self.trees = trees
        self.code: Any = None
        """The machine code the builtin runs (set by `make_builtin`)."""
        self.table: bytes | None = None
        """The address of the entry's table (`TABLE_ADDRESS`), for a shared wrapper; else None."""

    @property
    def method(self) -> int:
        """The address of the function the builtin calls (PyMethodDef's ml_meth)."""
        return METHOD_DEF.unpack_from(self.method_def)[1]

    def __repr__(self) -> str:
        name = self.method_def[METHOD_DEF.size:].partition(b"\0")[0].decode()
        return f"<astjit entry {name}>"


TABLE_ADDRESS = struct.Struct("<Q")
"""`EntryPins.table`: a `bytes` of the table's address, which a shared wrapper reads at
`BYTES_DATA` (a slot holds objects only: the collector visits each)."""
BYTES_DATA = bytes.__basicsize__ - 1
"""The offset of a `bytes` object's data (`ob_sval`, its last field)."""


@functools.cache
def slot_offsets() -> dict[str, int]:
    """The offset of each of `EntryPins`' slots in its objects, found in a probe: each slot
    set to an object of its own, whose address is then read back at each word (CPython lays
    slots out in an order of its own choosing)."""
    probe = EntryPins(None, None, None)
    marks = {name: object() for name in EntryPins.__slots__}
    for name, mark in marks.items():
        object.__setattr__(probe, name, mark)
    words = {c_void_p.from_address(id(probe) + offset).value: offset
             for offset in range(0, EntryPins.__basicsize__, 8)}
    return {name: words[id(mark)] for name, mark in marks.items()}


class ErrorReporter:
    """The handler the wrapper calls when some sites report numbers: `(status, *values)`.

    It calls `error_handler(status)`. For a site with a detail template, the
    exception that raises has the site's fixed message (wherever the handler put
    it in its text) replaced by the template filled with the numbers:
    "index out of bounds for axis 0" becomes NumPy's "index 7 is out of bounds
    for axis 0 with size 5". What the handler returns is returned.
    """

    __slots__ = ("details", "errors", "handler")

    def __init__(self, handler: Callable, errors: list, details: dict[int, str]):
        self.handler = handler
        self.errors = errors
        """The error sites (`emitter.ErrorSite`, or the cache's plain (exc, message, loc))."""
        self.details = details

    def __call__(self, status: int, *values: int) -> Any:
        detail = self.details.get(status)
        if detail is None:
            return self.handler(status)
        try:
            return self.handler(status)
        except Exception as exc:
            text = exc.args[0] if len(exc.args) == 1 else None
            message = self.errors[status - 1][1]  # (exc, message, loc)
            if isinstance(text, str) and message in text:
                exc.args = (text.replace(message, detail.format(*values), 1),)
            raise

    def __repr__(self) -> str:
        return f"ErrorReporter({self.handler!r})"


def make_builtin(compiled: Any, symbol: str, name: str, pins: EntryPins,
                 table: bool = False) -> Callable:
    """A builtin function object calling `compiled`'s (a `CompiledModule`, or the loader's)
    METH_FASTCALL | METH_KEYWORDS function `symbol`, its `self` `pins` (which gets the
    PyMethodDef, and keeps `compiled`). With `table`, `symbol` is the entry's table instead
    (runtime/shared_entry.py): the builtin calls the wrapper the table names, which reads
    the table from `pins`."""
    address = compiled.addresses[symbol]
    if table:
        pins.table = TABLE_ADDRESS.pack(address)
        address = c_void_p.from_address(address).value
    text = name.encode() + b"\0"
    doc = f"astjit-compiled {name}".encode() + b"\0"
    memory = bytearray(METHOD_DEF.size + len(text) + len(doc))
    base = buffer_address(memory)
    METHOD_DEF.pack_into(memory, 0, base + METHOD_DEF.size, address,
                         METH_FASTCALL | METH_KEYWORDS, base + METHOD_DEF.size + len(text))
    memory[METHOD_DEF.size:] = text + doc
    pins.code = compiled
    pins.method_def = memory
    made = PyObj_FromPtr(_new_builtin(c_void_p(base), c_void_p(id(pins)), None))
    Py_DECREF(made)  # the reference PyCFunction_NewEx returned: `made` holds its own
    return made

# ---- Python objects by portable name ---------------------------------------------------------

OBJECT_PREFIX = "astjit.obj."
PIN_PREFIX = "astjit.pin."
SINGLETONS = {"None": None, "True": True, "False": False, "Ellipsis": Ellipsis,
              "NotImplemented": NotImplemented}


def portable_name(obj: object) -> str | None:
    """A name another process finds `obj` by (`resolve`), or None: the builtin singletons,
    NumPy's bool scalars, builtin dtype descriptors, classes by `module:qualname`."""
    for name, value in SINGLETONS.items():
        if obj is value:
            return f"builtins:{name}"
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if obj is numpy.True_ or obj is numpy.False_:
            return f"numpy:{'True_' if obj else 'False_'}"
        if isinstance(obj, numpy.dtype):
            return f"dtype:{obj.str}" if _dtype(obj.str) is obj else None
    if isinstance(obj, type):
        name = f"{obj.__module__}:{obj.__qualname__}"
        try:
            return name if _attribute(name) is obj else None
        except (ImportError, AttributeError):
            return None
    return None


def resolve(name: str) -> object:
    """The object of a `portable_name` in this process (ImportError, AttributeError,
    TypeError where it has none)."""
    if name.startswith("builtins:") and name[9:] in SINGLETONS:
        return SINGLETONS[name[9:]]
    if name.startswith("dtype:"):
        return _dtype(name[6:])
    return _attribute(name)


def _dtype(text: str) -> object:
    import numpy

    return numpy.dtype(text)


def _attribute(name: str) -> object:
    module, _, qualname = name.partition(":")
    obj = importlib.import_module(module) if module != "builtins" else builtins
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


# ---- machine code in memory ------------------------------------------------------------------
# An image cache/elf.py laid out (`elf.plan`) mapped into fresh memory and relocated: the
# half of the ELF linker a warm load runs (the objects were parsed where the entry was
# written), here so that loading imports no module of its own for it.

R_64, R_PC32, R_PLT32, R_32, R_32S, R_PC64 = 1, 2, 4, 10, 11, 24
R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX = 9, 41, 42
R_GOTOFF64, R_GOTPC32, R_GOT64, R_GOTPC64 = 25, 26, 27, 29
"""x86-64's relocation types (the ELF psABI), those `load_image` applies."""
GOT_RELOCATIONS = frozenset({R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX, R_GOT64})
QWORD = struct.Struct("<Q")
MASK64 = 2**64 - 1
STUB = 16
"""Bytes of a branch stub: `jmp *0(%rip)` then the target's 8-byte address (a PLT32 call
whose target lies beyond 2 GiB goes through one)."""

PAGE = 4096
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20


Unsupported = NotImplementedError
"""Raised for object code the ELF linker (cache/elf.py) does not handle exactly. This and
`Unresolved` are builtin exceptions, not classes of their own: making a class costs every
warm load about as much as relocating a kernel's image, for errors raised only where a link
is refused."""
Unresolved = LookupError
"""Raised for an undefined symbol that resolves nowhere (its name the message). A link
refused by either, or by a `KeyError` of a layout that is not one `elf.plan` made, falls
back to LLVM (cache.link_natively)."""


class Image:
    """Linked code in memory of its own: the addresses of its global symbols. The memory is
    unmapped when the Image is collected, unless `permanent` (the runtime's shared
    functions, which the parallel loops' worker threads run until the process ends), but
    not at the interpreter's exit: the process's end frees it, and a thread may still be
    running it then."""

    def __init__(self, base: int, size: int, symbols: dict[str, int],
                 permanent: bool = False) -> None:
        self.base = base
        self.size = size
        self.symbols = symbols
        if not permanent:
            weakref.finalize(self, _unmap, base, size).atexit = False

    def __repr__(self) -> str:
        return f"<astjit.cabi.Image {self.size} bytes at {self.base:#x}>"


def supported_host() -> bool:
    """Whether this process runs x86-64 Linux code (the objects' machine and ABI)."""
    return sys.platform.startswith("linux") and os.uname().machine == "x86_64"


def load_image(laid_out: tuple, resolve: Callable[[str], int | None],
               permanent: bool = False) -> Image:
    """The objects `elf.plan` laid out, mapped into this process and relocated, their external
    symbols found by `resolve` (Unresolved where it knows one not); `permanent`: never
    unmapped (`Image`)."""
    total, data_start, stub_start, got_start, code, data, symbols, relocations = laid_out
    base = _map(total)
    try:
        with _writable(base, total) as image:  # the mapping itself: no copy to fault in
            image[:len(code)] = code
            image[data_start:data_start + len(data)] = data
            try:
                _relocate(image, base, stub_start, got_start, relocations, resolve)
            except struct.error as exc:  # a 64-bit field's value out of range (no sane object's)
                raise Unsupported(f"a relocated value out of range: {exc}") from exc
        if data_start and _libc()["mprotect"](c_void_p(base), c_void_p(data_start),
                                               PROT_READ | PROT_EXEC) != 0:
            raise OSError(get_errno(), "mprotect failed")
    except BaseException:
        _unmap(base, total)
        raise
    return Image(base, total, {name: base + offset for name, offset in symbols.items()},
                 permanent)


def _relocate(image: memoryview, base: int, stub_start: int, got_start: int,
              relocations: tuple, resolve: Callable[[str], int | None]) -> None:
    """Apply `relocations` (`elf.plan`'s, as `elf.grouped` sorts them) to `image`, to be
    mapped at `base`: the branch stubs from `stub_start`, the GOT from `got_start`, one slot
    per target. (Functions, not a class: each class made costs a warm load more than this
    loop.)"""
    inside, outside, others = relocations
    put = QWORD.pack_into  # (a value out of range raises struct.error: refused, `load_image`)
    pairs = iter(inside)
    for at, offset in zip(pairs, pairs):  # R_X86_64_64 within the image
        put(image, at, base + offset)
    externals: dict[str, int] = {}
    quadruples = iter(outside)
    for name, weak, at, addend in zip(quadruples, quadruples, quadruples, quadruples):
        value = externals.get(name)  # R_X86_64_64 of external symbols
        if value is None:
            value = externals[name] = _external(name, weak, resolve)
        put(image, at, value + addend)
    got_slots: dict[int, int] = {}
    got = base + got_start
    pack = struct.pack_into

    def slot(target: int) -> int:
        at = got_slots.get(target)
        if at is None:
            at = got_slots[target] = got_start + 8 * len(got_slots)
            pack("<Q", image, at, target)
        return base + at

    def signed32(at: int, number: int) -> None:
        if not -2**31 <= number < 2**31:
            raise Unsupported("a 32-bit relocation out of range")
        pack("<i", image, at, number)

    for kind, at, target, addend, weak in others:
        if type(target) is int:
            value = base + target
        else:
            value = externals.get(target)
            if value is None:
                value = externals[target] = _external(target, weak, resolve)
        place = base + at
        if kind == R_PC64:
            pack("<Q", image, at, (value + addend - place) & MASK64)
        elif kind == R_GOTOFF64:
            pack("<Q", image, at, (value + addend - got) & MASK64)
        elif kind == R_GOTPC64:
            pack("<Q", image, at, (got + addend - place) & MASK64)
        elif kind == R_GOTPC32:
            signed32(at, got + addend - place)
        elif kind in (R_PC32, R_PLT32):
            if kind == R_PLT32 and not -2**31 <= value + addend - place < 2**31:
                image[stub_start:stub_start + 6] = b"\xff\x25\x00\x00\x00\x00"  # jmp *0(%rip)
                pack("<Q", image, stub_start + 6, value)
                value, stub_start = base + stub_start, stub_start + STUB
            signed32(at, value + addend - place)
        elif kind == R_GOT64:
            pack("<Q", image, at, (slot(value) - got + addend) & MASK64)
        elif kind in GOT_RELOCATIONS:
            signed32(at, slot(value) + addend - place)
        elif kind == R_32:
            if not 0 <= value + addend < 2**32:
                raise Unsupported("an R_X86_64_32 value past 4 GiB")
            pack("<I", image, at, value + addend)
        else:  # R_32S
            signed32(at, value + addend)


def _external(name: str, weak: bool, resolve: Callable[[str], int | None]) -> int:
    """The address of the external symbol `name` (0 for an unresolved weak one)."""
    value = resolve(name)
    if value is None:
        if not weak:
            raise Unresolved(name)
        return 0
    return value


_LIBC: dict = {}
"""The C library's `mmap`, `munmap` and `mprotect` (errno kept; the GIL too: `function`),
and the C API's `PyMemoryView_FromMemory`, made on first use."""


def _libc() -> dict:
    if not _LIBC:
        _LIBC.update((name, process_function(name, c_void_p if name == "mmap" else None, True))
                     for name in ("mmap", "munmap", "mprotect"))
        _LIBC["memoryview"] = process_function("PyMemoryView_FromMemory", c_void_p, True)
    return _LIBC


PyBUF_WRITE = 0x200
"""`PyMemoryView_FromMemory`'s flag for a writable view."""


def _writable(base: int, size: int) -> memoryview:
    """A writable memoryview of the `size` bytes mapped at `base` (released by its `with`
    before the memory is unmapped or made read-only): the image is written where it runs,
    not laid out in a zeroed bytearray first and copied over."""
    made = PyObj_FromPtr(_libc()["memoryview"](c_void_p(base), c_void_p(size), PyBUF_WRITE))
    Py_DECREF(made)  # the reference PyMemoryView_FromMemory returned: `made` holds its own
    return made


MAP_FAILED = (1 << 64) - 1
"""`mmap`'s `(void *) -1`, as an unsigned address."""


def _map(size: int) -> int:
    address = _libc()["mmap"](None, c_void_p(size), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, c_void_p(0))
    if address is None or address == MAP_FAILED:
        raise OSError(get_errno(), "mmap failed")
    return address


def _unmap(base: int, size: int) -> None:
    _libc()["munmap"](c_void_p(base), c_void_p(size))
