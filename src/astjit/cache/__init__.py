"""`jit(fn, cache=True)`: compiled machine code kept on disk, loaded by later processes.

A specialization (a function and its argument types) is looked up when it is first
called; on a hit its object code is linked into the process and called, with no
parsing, type inference, optimization or LLVM compile; on a miss it is compiled as
usual and its entry written. See docs/caching.md for what is keyed and what is not.

- `key`: the digest of a function's source, callees, globals and closures, and of the
  environment (astjit, LLVM, NumPy, Python and the CPU); and the files entries are kept
  in: the folder, their layout (checksummed), atomic writes;
- here: what one entry holds and how it is linked back, the warm load's whole path but
  for `key` and `astjit.cabi` (one module: each module a warm load imports costs it about
  as much as reading and checking its entry);
- `writer`, `runtime`, `elf`, `symbols` (a writer's, or a load's that needs LLVM): an
  entry's encoding, the runtime batches an entry carries, the ELF linker's layout,
  registering symbols with LLVM.

`place` keys a specialization; `read` and `write` move its entry through `key`'s files.

**An entry**, as saved (`writer.encode`, from a compile made under `objects.pinning`):
- the engine's `ObjectImage` of the entry's module: the object code of each part
  (loops, glue or the whole), the functions it defines, the symbols it imports, and the
  LLVM IR of the runtime's shared functions it calls (compiled where the loading
  process lacks them: `Engine.load`);
- the wrapper's symbol, or the entry's table whose wrapper the runtime shares
  (runtime/shared_entry.py), and the entry graph's name (the builtin's name);
- the error sites (exception name, message, source location) and the detail templates
  of those that report numbers, which the error handler raises from;
- whether the code is the general tier (else a first tier, whose deoptimized calls go
  to the general one, compiled on demand);
- the role of each pinned object (`objects.Pins`): the fallback, the error handler (or
  its `ErrorReporter`), the general tier's entry. A compile that pinned anything else
  (a Python callback, a container's class ...) is not saved.

Loaded (`decode`, then `link`): the pins are bound to the loading dispatcher's own
fallback, handler and general entry, the code linked without LLVM where it can be
(`link_natively`, below) and by the engine otherwise (its imports registered by
symbols.py), and a builtin made around it, as `build_entry` makes one.

Payload: a 4-byte length, that much metadata, then the object code of each part and of
each runtime batch (their lengths and checksums are in the metadata). The file's header
checks the length and the metadata alone (`key.write_file`'s checked start): the image a
native link maps is laid out in the metadata (`plans`), and a load that links natively
never reads the object code after it, which is checked where it is read (`objects_intact`,
`batch_intact`: a link by LLVM, a runtime batch this process links and may adopt). The
metadata is plain values (dicts, lists, strings,
numbers) in `marshal`'s format, which Python reads without importing anything (json's
import and its regular expressions cost a cached load more than the rest of decoding;
the Python version is in the key). No pickle: loading a cache file runs no Python code
from it.

Linking without LLVM, the warm cache's own loader (here with the codec and the package's
entry points: each module a warm load imports costs it about as much as decoding):
`link_natively(saved, pins)` links an entry's object code and the runtime batches it
needs with the ELF linker (elf.py), resolving what the code imports in this order:

- the entry's pins (`astjit.pin.<tag>.<k>`: its fallback, error handler, general entry);
- runtime functions: those this loader linked (`_runtime`), then, when llvmlite is
  loaded, LLVM's symbol table (functions this process compiled, and everything a
  compile registered);
- the process's own state (astjit/cabi.py: the main thread, the released-GIL key,
  the stack limit function);
- objects by portable name (`astjit.obj.<name>`, astjit/cabi.py `resolve`);
- NumPy's C API table and SciPy's BLAS capsules (astjit/capsules.py), libmvec's vector
  math;
- any other name by the dynamic linker (dlsym over the process: the C API, the C and
  math libraries, pthreads).

Names none of these knows (LAPACK, NumPy's sort kernels, a type's `tp_alloc`) are
registered by `symbols.provide`, which imports llvmlite (not LLVM's target, nor MCJIT)
and the registrars of the code generator's runtime, and then read from LLVM's table. A
refused link (cabi.Unsupported, an unknown symbol, a host that is not x86-64 Linux)
returns None: the caller links through LLVM.

Runtime batches linked here are the process's runtime (kept for the process, like
compiled ones). The compile side learns of them through `adopt`, which registers their
functions with LLVM and in `shared.RUNTIME` (as if it had compiled them): when the
runtime module is first imported (shared.py calls it) and after each batch linked
here once it is.
"""
from __future__ import annotations

import marshal
import struct
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from .. import cabi
from ..cabi import PIN_PREFIX, EntryPins, ErrorReporter, make_builtin
from ..errors import CompileError, Loc
from .key import (
    Uncacheable,
    digest,
    fingerprint,
    intact,
    path_for,
    read_file,
    sha512,
)


def place(fn: Any, options: dict, types: tuple) -> SimpleNamespace | None:
    """Where the entry of `fn` (a Python or derived function) compiled with `options` for
    argument `types` lives: `.key` (the key it must carry), `.path` (its file) and `.tag`
    (its name among the pins of the process: `objects.pinning`); None when `fn` depends on
    something the cache cannot key (dependencies.py)."""
    try:
        depends = digest(fn)
    except Uncacheable:
        return None
    label = f"{getattr(fn, '__module__', None) or ''}.{getattr(fn, '__qualname__', 'f')}"
    shown = sorted((k, v) for k, v in options.items() if k != "cache")
    key = "|".join([fingerprint(), label, repr(shown), repr(types), depends])
    return SimpleNamespace(key=key, path=path_for(label, key),
                           tag=sha512(key.encode()).hexdigest()[:20])


def read(where: SimpleNamespace) -> SimpleNamespace | None:
    """The entry at `where` (`place`), decoded, or None (absent, corrupt, another key's)."""
    payload = read_file(where.path)
    return None if payload is None else decode(payload, where.key)


def write(where: SimpleNamespace, compiled: Any, pinned: list) -> bool:
    """Save a compiled entry (`entry.CompiledEntry`, compiled under `objects.pinning(
    where.tag)`, which pinned `pinned`); whether it was written (writer.py: a writer's
    only, apart from the loader's code, which every warm load unmarshals)."""
    from .writer import write_entry

    return write_entry(where, compiled, pinned)


ROLES = ("fallback", "handler", "reporter", "general")


def batch_intact(batch: SimpleNamespace) -> bool:
    """Whether the object code of a runtime batch an entry carries (`decode`) has the
    checksums its entry says (then as bytes)."""
    if type(batch.object) is not bytes:
        if not intact(batch.object, batch.sums):
            return False
        batch.object = bytes(batch.object)
    return True


def objects_intact(saved: SimpleNamespace) -> bool:
    """Whether all of a decoded entry's object code has the checksums its metadata says
    (then as bytes): what a link by LLVM reads."""
    sums = saved.meta["sums"]
    if not all(type(obj) is bytes or intact(obj, sums[k])
               for k, (_, obj) in enumerate(saved.objects)):
        return False
    saved.objects = [(pipeline, bytes(obj)) for pipeline, obj in saved.objects]
    return all(batch_intact(batch) for batch in saved.runtime)


def decode(payload: bytes, key: str) -> SimpleNamespace | None:
    """The entry in `payload` when it is the one of `key` (else None: a hash collision of
    file names, or an entry that does not parse), decoded: `.meta`, `.objects` ((pipeline,
    object code) of each part of the entry's module: unchecked views of the entry until
    `objects_intact` makes them bytes), `.runtime` (the runtime batches it carries: `.names`
    they define, `.imports`, `.object` (unchecked until `batch_intact`), `.sums`, `.plan`,
    their object laid out by the ELF linker, or None: linked by LLVM), `.errors` (`_sites`)
    and `.details` (status -> template). Namespaces, not classes: making a class costs a
    load more than filling it."""
    try:
        (length,) = struct.unpack_from("<I", payload)
        view = memoryview(payload)  # slices of it copy nothing
        meta = marshal.loads(view[4:4 + length])
        if type(meta) is not dict or meta.get("key") != key:
            return None
        blobs, offset = [], 4 + length
        for size in meta["sizes"]:
            blobs.append(view[offset:offset + size])
            offset += size
        parts, sums = len(meta["parts"]), meta["sums"]
        if offset != len(payload) or not set(meta["roles"]) <= set(ROLES) \
                or len(blobs) != parts + len(meta["runtime"]) or len(sums) != len(blobs) \
                or len(meta["plans"]) != 1 + len(meta["runtime"]):
            return None
        batches = [SimpleNamespace(names=tuple(names), imports=tuple(imports), object=blob,
                                   sums=blob_sums, plan=plan)
                   for (names, imports), blob, blob_sums, plan
                   in zip(meta["runtime"], blobs[parts:], sums[parts:], meta["plans"][1:])]
        return SimpleNamespace(meta=meta, objects=list(zip(meta["parts"], blobs[:parts])),
                               runtime=batches, errors=_sites(meta["errors"]),
                               details={int(status): text
                                        for status, text in meta["details"].items()})
    except (ValueError, KeyError, TypeError, EOFError, struct.error):
        return None


def _sites(errors: list) -> list[tuple[str, str, Loc | None]]:
    """The error sites (exc, message, loc), as the handler reads `emitter.ErrorSite`s: made
    once (the dispatcher's handler and `link` share them), plain tuples (a class of their own
    cost each load its making, and each site a call), with one `Loc` per source line: a
    frozen dataclass, whose fields cost a load a set each, and several sites of a line (an
    array expression's checks) share it."""
    locs: dict[tuple, Loc] = {}
    sites = []
    for exc, message, loc in errors:
        if loc is not None:
            loc = tuple(loc)  # (marshal gives a list)
            loc = locs.get(loc) or locs.setdefault(loc, Loc(*loc))
        sites.append((exc, message, loc))
    return sites


def link(saved: SimpleNamespace, fallback: Any, handler: Any, general: Any) -> Any | None:
    """A compiled entry (duck-typed as `entry.CompiledEntry`) running the saved machine code,
    its pins bound to the loading dispatcher's `fallback`, error `handler` (wrapped in an
    `ErrorReporter` where the saved one was) and `general` entry; None when it cannot link
    in this process. Linked by the ELF linker (`link_natively`) where it can, else by LLVM."""
    meta = saved.meta
    errors = saved.errors
    handler.errors = errors
    if "reporter" in meta["roles"]:
        handler = ErrorReporter(handler, errors, saved.details)
    general = None if meta["general"] else general
    of_role = {"fallback": fallback, "handler": handler, "reporter": handler, "general": general}
    pins = {f"{PIN_PREFIX}{meta['tag']}.{k}": of_role[role] for k, role in enumerate(meta["roles"])}
    module = link_natively(saved, pins) or _link_by_llvm(saved, pins)
    if module is None:
        return None
    call = make_builtin(module, meta["wrapper"], meta["name"],
                        EntryPins(None, fallback, handler, general), meta["table"])
    return LoadedEntry(call, errors, module, saved.details, meta["general"])


def _link_by_llvm(saved: SimpleNamespace, pins: dict[str, Any]) -> Any | None:
    """The saved code linked by LLVM's MCJIT (`Engine.load`), or None."""
    from ..backend.llvm.jit.engine import ObjectImage, engine
    from ..backend.llvm.runtime import objects
    from . import runtime
    from .symbols import provide

    meta = saved.meta
    if not objects_intact(saved) or not runtime.link(saved.runtime, provide) \
            or not provide(meta["imports"]):
        return None
    objects.bind(pins)
    image = ObjectImage(tuple(saved.objects), tuple(meta["names"]), tuple(meta["imports"]))
    try:
        return engine().load(image)
    except LookupError:
        return None


class LoadedEntry:
    """A compiled entry loaded from the cache: what `entry.CompiledEntry` offers, but the
    LLVM IR, which is not kept (compile the function afresh to see it). (A plain class:
    making a dataclass costs a cached load a noticeable part of its time.)"""

    trees = None

    def __init__(self, call: Any, errors: list[tuple], compiled: Any,
                 error_details: dict[int, str], general: bool) -> None:
        self.call = call
        self.errors = errors
        self.compiled = compiled
        self.error_details = error_details
        self.general = general

    @property
    def llvm_ir(self) -> str:
        raise ValueError("this specialization was loaded from the disk cache (cache=True): "
                         "its LLVM IR is not kept; compile the function without cache=True "
                         "to see it")

    @property
    def llvm_ir_optimized(self) -> str:
        return self.llvm_ir

    @property
    def asm(self) -> str:
        return self.llvm_ir


# ---- linking without LLVM ------------------------------------------------------------------

_lock = threading.RLock()
_runtime: dict[str, int] = {}
"""Name -> address of each runtime function linked here."""
_batches: list[SimpleNamespace] = []
"""The runtime batches linked here, kept for the process."""
_objects: dict[str, object] = {}
"""Objects found by portable name, kept alive under their symbol."""
_libmvec = None
LIBMVEC = "libmvec.so.1"
"""glibc's vector math library (`vecmath.LIBRARY`, which imports llvmlite)."""


def linked_code(addresses: dict[str, int], imports: tuple[str, ...], code: cabi.Image,
                obj: bytes = b"") -> SimpleNamespace:
    """Code linked here, read as a `jit.engine.CompiledModule`: an entry's module (its
    `addresses`, for `cabi.make_builtin`), or a runtime batch, which `shared.RUNTIME.modules`
    lists once adopted (`parts`, made then: runtime.LoadedPart). `code` (the Image) keeps its
    memory mapped."""
    return SimpleNamespace(addresses=addresses, imports=imports, code=code, object=obj,
                           parts=(), adopted=False)


def link_natively(saved: SimpleNamespace, pins: dict[str, object]) -> SimpleNamespace | None:
    """The entry `saved` (`decode`) linked here, its pin symbols bound to `pins`; None
    where it cannot be (see the module's docstring)."""
    meta = saved.meta
    if meta["plans"][0] is None or not cabi.supported_host():
        return None
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
        image = cabi.load_image(meta["plans"][0], resolve)
    except (cabi.Unsupported, cabi.Unresolved, OSError, ValueError, TypeError, struct.error):
        return None  # (the last three: a layout that is not one `elf.plan` made)
    addresses = {name: image.symbols.get(name) for name in meta["names"]}
    if not all(addresses.values()):
        return None
    return linked_code(addresses, tuple(meta["imports"]), image)


def _link_batch(batch: SimpleNamespace, resolve: Callable[[str], int | None]) -> None:
    if all(resolve(name) is not None for name in batch.names):
        return
    if batch.plan is None:
        raise cabi.Unsupported("a runtime batch the ELF linker refused where it was written")
    if not batch_intact(batch):  # its object code becomes the runtime's (`adopt`)
        raise cabi.Unsupported("a runtime batch whose object code is damaged")
    image = cabi.load_image(batch.plan, resolve, permanent=True)
    addresses = {name: image.symbols.get(name) for name in batch.names}
    if not all(addresses.values()):
        raise cabi.Unsupported("a runtime batch without the functions its entry names")
    _batches.append(linked_code(addresses, batch.imports, image, batch.object))
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

        from .runtime import LoadedPart

        with runtime.lock:
            for batch in fresh:
                for name, address in batch.addresses.items():
                    llvm.add_symbol(name, address)
                    runtime.compiled.add(name)
                batch.parts = (LoadedPart(batch.object),)
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
            return _routine(prefix, name.removeprefix(prefix))
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


def _routine(prefix: str, name: str) -> int | None:
    """BLAS or LAPACK routine `name` (`i64.dgemm`: blas.symbol), where this process's
    library takes ints of the width the entry's code was compiled for (NumPy's OpenBLAS
    and SciPy's differ, and which one a process finds is not in the key)."""
    from .. import capsules  # array code's only

    width, _, routine = name.partition(".")
    try:
        found = capsules.blas() if prefix == "astjit.blas." else capsules.lapack()
    except CompileError:
        return None
    return found.addresses.get(routine) if width == f"i{found.int_bits}" else None


def _numpy(name: str) -> int | None:
    """An entry of NumPy's C API table. The compile that wrote the entry checked the table of
    this NumPy version (numpy_api.api; the version is in the key), so it is read, not
    checked again."""
    if "numpy" not in sys.modules:  # code taking arrays: NumPy is imported
        return None
    from .. import capsules

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
