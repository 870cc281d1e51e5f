"""Linking a cached entry without LLVM: the warm cache's own loader.

`link(saved, pins)` links an entry's object code and the runtime batches it needs with
the ELF linker (elf.py), resolving what the code imports in this order:

- the entry's pins (`astjit.pin.<tag>.<k>`: its fallback, error handler, general entry);
- runtime functions: those this loader linked (`_runtime`), then, when llvmlite is
  loaded, LLVM's symbol table (functions this process compiled, and everything a
  compile registered);
- the process's own state (astjit/cabi.py: the main thread, the released-GIL key,
  the stack limit function);
- objects by portable name (`astjit.obj.<name>`, astjit/cabi.py `resolve`);
- NumPy's C API table and SciPy's BLAS capsules (runtime/capsules.py), libmvec's vector
  math;
- any other name by the dynamic linker (dlsym over the process: the C API, the C and
  math libraries, pthreads).

Names none of these knows (LAPACK, NumPy's sort kernels, a type's `tp_alloc`) are
registered by `symbols.provide`, which imports llvmlite (not LLVM's target, nor MCJIT)
and the registrars of the code generator's runtime, and then read from LLVM's table. A
refused link (elf.Unsupported, an unknown symbol, a host that is not x86-64 Linux)
returns None: the caller links through LLVM.

Runtime batches linked here are the process's runtime (kept for the process, like
compiled ones). The compile side learns of them through `adopt`, which registers their
functions with LLVM and in `shared.RUNTIME` (as if it had compiled them): when the
runtime module is first imported (shared.py calls it) and after each batch linked
here once it is.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import cabi
from ..errors import CompileError
from . import elf

if TYPE_CHECKING:
    from .entries import Batch

_lock = threading.RLock()
_runtime: dict[str, int] = {}
"""Name -> address of each runtime function linked here."""
_batches: list[LoadedBatch] = []
"""The runtime batches linked here, kept for the process."""
_objects: dict[str, object] = {}
"""Objects found by portable name, kept alive under their symbol."""
_libmvec = None
LIBMVEC = "libmvec.so.1"
"""glibc's vector math library (`vecmath.LIBRARY`, which imports llvmlite)."""


class LoadedPart:
    """A batch's object code, as `jit.engine.Part` shows a part loaded from object code."""

    pipeline = "loops"
    module = None
    has_ir = False

    def __init__(self, obj: bytes) -> None:
        self.object = obj


class LoadedBatch:
    """A runtime batch linked here, shaped as the runtime's modules (`jit.engine.
    CompiledModule`: `addresses`, `imports`, `parts`) for `shared.RUNTIME.modules`."""

    def __init__(self, addresses: dict[str, int], imports: tuple[str, ...],
                 parts: tuple[LoadedPart, ...], code: elf.Image) -> None:
        self.addresses = addresses
        self.imports = imports
        self.parts = parts
        self.code = code
        self.adopted = False


class NativeModule:
    """An entry's code linked here: what `entry.make_builtin` reads of a CompiledModule."""

    def __init__(self, addresses: dict[str, int], imports: tuple[str, ...],
                 code: elf.Image) -> None:
        self.addresses = addresses
        self.imports = imports
        self.code = code


def link(saved, pins: dict[str, object]) -> NativeModule | None:
    """The entry `saved` (entries.Saved) linked here, its pin symbols bound to `pins`; None
    where it cannot be (see the module's docstring)."""
    if not elf.supported_host():
        return None
    meta = saved.meta
    resolve = _resolver(pins)
    wanted = [*meta["imports"], *(name for batch in saved.runtime for name in batch.imports)]
    unknown = [name for name in dict.fromkeys(wanted) if resolve(name) is None and
               not any(name in batch.names for batch in saved.runtime)]
    if unknown:
        from .symbols import provide  # imports llvmlite: names only its registrars know

        if not provide(unknown):
            return None
    try:
        with _lock:
            for batch in saved.runtime:
                _link_batch(batch, resolve)
        image = elf.link([obj for _, obj in saved.objects], resolve)
    except (elf.Unsupported, elf.Unresolved, OSError):
        return None
    addresses = {name: image.symbols.get(name) for name in meta["names"]}
    if not all(addresses.values()):
        return None
    return NativeModule(addresses, tuple(meta["imports"]), image)


def _link_batch(batch: Batch, resolve: Callable[[str], int | None]) -> None:
    if all(resolve(name) is not None for name in batch.names):
        return
    image = elf.link([batch.object], resolve)
    addresses = {name: image.symbols.get(name) for name in batch.names}
    if not all(addresses.values()):
        raise elf.Unsupported("a runtime batch without the functions its entry names")
    _batches.append(LoadedBatch(addresses, batch.imports, (LoadedPart(batch.object),), image))
    _runtime.update(addresses)
    shared = sys.modules.get("astjit.backend.llvm.shared")
    if shared is not None:
        adopt(shared.RUNTIME)


def adopt(runtime) -> None:
    """Make the batches linked here the compile side's runtime (`shared.RUNTIME`): their
    functions registered with LLVM (later modules link to them) and marked compiled."""
    with _lock:
        fresh = [batch for batch in _batches if not batch.adopted]
        if not fresh:
            return
        import llvmlite.binding as llvm

        with runtime.lock:
            for batch in fresh:
                for name, address in batch.addresses.items():
                    llvm.add_symbol(name, address)
                    runtime.compiled.add(name)
                runtime.modules.append(batch)
                batch.adopted = True


def _resolver(pins: dict[str, object]) -> Callable[[str], int | None]:
    found: dict[str, int] = {}  # one link asks for most names several times

    def resolve(name: str) -> int | None:
        if name in pins:
            return id(pins[name])
        address = _runtime.get(name)
        if address is not None:
            return address
        if name in found:
            return found[name]
        llvm = sys.modules.get("llvmlite.binding")
        if llvm is not None:
            address = llvm.address_of_symbol(name)
        address = address or _process_symbol(name)
        if address:  # not None: `link` may register it (symbols.provide) and ask again
            found[name] = address
        return address

    return resolve


def _process_symbol(name: str) -> int | None:
    """The address of `name` in this process by the process's state, an object's portable
    name or the dynamic linker; None where none knows it."""
    if name.startswith(cabi.OBJECT_PREFIX):
        return _object(name)
    if name == cabi.THREAD_LIMIT:
        return cabi.thread_stack_limit_address()
    if name in (cabi.MAIN_THREAD, cabi.RELEASED_KEY):
        return cabi.thread_state()[name]
    if name.startswith("astjit.PyArray_"):
        return _numpy(name.removeprefix("astjit."))
    for prefix in ("astjit.blas.", "astjit.lapack."):
        if name.startswith(prefix):
            from ..backend.llvm.runtime import capsules  # array code's only

            routines = capsules.blas if prefix == "astjit.blas." else capsules.lapack
            try:
                return routines().addresses.get(name.removeprefix(prefix))
            except CompileError:
                return None
    if name.startswith("astjit"):
        return None
    global _libmvec
    library = cabi.PROCESS
    if name.startswith("_ZGV"):  # libmvec's vector variants
        if _libmvec is None:
            try:
                _libmvec = cabi.library(LIBMVEC)
            except OSError:
                return None
        library = _libmvec
    return cabi.symbol(name, library)


def _numpy(name: str) -> int | None:
    """An entry of NumPy's C API table. The compile that wrote the entry checked the table of
    this NumPy version (numpy_api.api; the version is in the key), so it is read, not
    checked again."""
    if "numpy" not in sys.modules:  # code taking arrays: NumPy is imported
        return None
    from ..backend.llvm.runtime import capsules

    try:
        return capsules.numpy_addresses().get(name)
    except (ImportError, AttributeError):
        return None


def _object(name: str) -> int | None:
    obj = _objects.get(name)
    if obj is None:
        portable = name.removeprefix(cabi.OBJECT_PREFIX)
        try:
            obj = cabi.resolve(portable)
        except (ImportError, AttributeError, TypeError):
            return None
        if cabi.portable_name(obj) != portable:  # found, but under another name there
            return None
        _objects[name] = obj
    return id(obj)
