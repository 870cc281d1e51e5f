"""One cached specialization: its machine code and what the dispatcher needs around it.

Saved (`encode`, from a compile made under `objects.pinning`):
- the engine's `ObjectImage` of the entry's module: the object code of each part
  (loops, glue or the whole), the functions it defines, the symbols it imports, and the
  LLVM IR of the runtime's shared functions it calls (compiled where the loading
  process lacks them: `Engine.load`);
- the wrapper's symbol and the entry graph's name (the builtin's name);
- the error sites (exception name, message, source location) and the detail templates
  of those that report numbers, which the error handler raises from;
- whether the code is the general tier (else a first tier, whose deoptimized calls go
  to the general one, compiled on demand);
- the role of each pinned object (`objects.Pins`): the fallback, the error handler (or
  its `ErrorReporter`), the general tier's entry. A compile that pinned anything else
  (a Python callback, a container's class ...) is not saved.

Loaded (`decode`, then `link`): the pins are bound to the loading dispatcher's own
fallback, handler and general entry, the code linked without LLVM where it can be
(native.py, elf.py) and by the engine otherwise (its imports registered by symbols.py),
and a builtin made around it, as `build_entry` makes one.

Payload: a 4-byte length, that much metadata, then the object code of each part (their
lengths are in the metadata). The metadata is plain values (dicts, lists, strings,
numbers) in `marshal`'s format, which Python reads without importing anything (json's
import and its regular expressions cost a cached load more than the rest of decoding;
the Python version is in the key). No pickle: loading a cache file runs no Python code
from it.
"""
from __future__ import annotations

import marshal
import struct
from typing import Any

from ..errors import Loc

ROLES = ("fallback", "handler", "reporter", "general")


class Site(tuple):
    """An error site as the handler reads it (`emitter.ErrorSite`'s fields): (exc, message,
    loc). (Not a NamedTuple: making one costs a cached load a noticeable part of its time.)"""

    __slots__ = ()

    def __new__(cls, exc: str, message: str, loc: Loc | None) -> Site:
        return tuple.__new__(cls, (exc, message, loc))

    exc = property(lambda self: self[0])
    message = property(lambda self: self[1])
    loc = property(lambda self: self[2])


class Batch:
    """A runtime module's object code as an entry carries it, the functions it defines and
    what it imports (runtime.py: the runtime's shared functions an entry calls)."""

    __slots__ = ("imports", "names", "object")

    def __init__(self, names: tuple[str, ...], imports: tuple[str, ...], obj: bytes) -> None:
        self.names = names
        self.imports = imports
        self.object = obj


class Saved:
    """A decoded entry."""

    def __init__(self, meta: dict, objects: list[tuple[str, bytes]],
                 runtime: list[Batch]) -> None:
        self.meta = meta
        self.objects = objects
        """(pipeline, object code) of each part of the entry's module."""
        self.runtime = runtime

    @property
    def errors(self) -> list[Site]:
        return [Site(exc, message, None if loc is None else Loc(*loc))
                for exc, message, loc in self.meta["errors"]]

    @property
    def details(self) -> dict[int, str]:
        return {int(status): text for status, text in self.meta["details"].items()}


def roles_of(pinned: list, entry_pins: Any) -> list[str] | None:
    """The role of each pinned object, by the builtin's `EntryPins`; None when one has none."""
    roles = []
    for obj in pinned:
        handler = entry_pins.error_handler
        if obj is entry_pins.fallback:
            roles.append("fallback")
        elif obj is handler:
            roles.append("reporter" if type(handler).__name__ == "ErrorReporter" else "handler")
        elif obj is entry_pins.general and obj is not None:
            roles.append("general")
        else:
            return None
    return roles


def encode(key: str, tag: str, compiled: Any, batches: list[tuple[tuple, tuple, bytes]],
           roles: list[str]) -> bytes:
    """The payload of a compiled entry (`entry.CompiledEntry`) whose pins had `roles`, with
    the runtime `batches` it calls ((names, imports, object code): runtime.needed)."""
    module = compiled.compiled
    address = compiled.call.__self__.method
    wrapper = next(name for name, found in module.addresses.items() if found == address)
    blobs = [obj for _, obj in module.objects] + [obj for _, _, obj in batches]
    meta = {
        "key": key,
        "tag": tag,
        "name": compiled.call.__name__,
        "wrapper": wrapper,
        "general": compiled.general,
        "roles": roles,
        "errors": [[site[0], site[1], None if site[2] is None else
                    [site[2].filename, site[2].line, site[2].col, site[2].text]]
                   for site in compiled.errors],
        "details": {str(status): text for status, text in compiled.error_details.items()},
        "parts": [pipeline for pipeline, _ in module.objects],
        "names": list(module.addresses),
        "imports": list(module.imports),
        "runtime": [[list(names), list(imports)] for names, imports, _ in batches],
        "sizes": [len(blob) for blob in blobs],
    }
    text = marshal.dumps(meta)
    return b"".join([struct.pack("<I", len(text)), text, *blobs])


def decode(payload: bytes, key: str) -> Saved | None:
    """The entry in `payload` when it is the one of `key` (else None: a hash collision of
    file names, or an entry that does not parse)."""
    try:
        (length,) = struct.unpack_from("<I", payload)
        meta = marshal.loads(payload[4:4 + length])
        if type(meta) is not dict or meta.get("key") != key:
            return None
        blobs, offset = [], 4 + length
        for size in meta["sizes"]:
            blobs.append(payload[offset:offset + size])
            offset += size
        parts = len(meta["parts"])
        if offset != len(payload) or not set(meta["roles"]) <= set(ROLES) \
                or len(blobs) != parts + len(meta["runtime"]):
            return None
        batches = [Batch(tuple(names), tuple(imports), blob)
                   for (names, imports), blob in zip(meta["runtime"], blobs[parts:])]
        return Saved(meta, list(zip(meta["parts"], blobs[:parts])), batches)
    except (ValueError, KeyError, TypeError, EOFError, struct.error):
        return None


def link(saved: Saved, fallback: Any, handler: Any, general: Any) -> Any | None:
    """A compiled entry (duck-typed as `entry.CompiledEntry`) running the saved machine code,
    its pins bound to the loading dispatcher's `fallback`, error `handler` (wrapped in an
    `ErrorReporter` where the saved one was) and `general` entry; None when it cannot link
    in this process. Linked by the ELF linker (native.py) where it can, else by LLVM."""
    from ..cabi import PIN_PREFIX, EntryPins, ErrorReporter, make_builtin
    from . import native

    meta = saved.meta
    errors = saved.errors
    handler.errors = errors
    if "reporter" in meta["roles"]:
        handler = ErrorReporter(handler, errors, saved.details)
    general = None if meta["general"] else general
    of_role = {"fallback": fallback, "handler": handler, "reporter": handler, "general": general}
    pins = {f"{PIN_PREFIX}{meta['tag']}.{k}": of_role[role] for k, role in enumerate(meta["roles"])}
    module = native.link(saved, pins) or _link_by_llvm(saved, pins)
    if module is None:
        return None
    call = make_builtin(module, meta["wrapper"], meta["name"],
                        EntryPins(None, fallback, handler, general))
    return LoadedEntry(call, errors, module, saved.details, meta["general"])


def _link_by_llvm(saved: Saved, pins: dict[str, Any]) -> Any | None:
    """The saved code linked by LLVM's MCJIT (`Engine.load`), or None."""
    from ..backend.llvm.jit.engine import ObjectImage, engine
    from ..backend.llvm.runtime import objects
    from . import runtime
    from .symbols import provide

    meta = saved.meta
    if not runtime.link(saved.runtime, provide) or not provide(meta["imports"]):
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

    def __init__(self, call: Any, errors: list[Site], compiled: Any,
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
