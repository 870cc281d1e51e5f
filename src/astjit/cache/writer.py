"""Writing a cache entry: the payload of a compiled entry, the half of the entry's codec
(astjit/cache: `decode`) a loading process never runs, apart from the loader's code (each
line of code a warm load imports costs it its unmarshalling)."""
from __future__ import annotations

import marshal
import struct
from types import SimpleNamespace
from typing import Any

from . import elf, runtime
from .key import checksums, write_file


def write_entry(where: SimpleNamespace, compiled: Any, pinned: list) -> bool:
    """Save a compiled entry (`entry.CompiledEntry`, compiled under `objects.pinning(
    where.tag)`, which pinned `pinned`) where `cache.place` says; whether it was written.
    Not written: code that pinned objects other than its fallback, handler and general
    entry, or that calls runtime functions not found as object code of this process's
    runtime."""
    roles = roles_of(pinned, compiled.call.__self__)
    batches = runtime.needed(compiled.compiled.imports)
    if roles is None or batches is None:
        return False
    payload, checked = encode(where.key, where.tag, compiled, batches, roles)
    return write_file(where.path, payload, checked)


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
           roles: list[str]) -> tuple[bytes, int]:
    """The payload of a compiled entry (`entry.CompiledEntry`) whose pins had `roles`, with
    the runtime `batches` it calls ((names, imports, object code): runtime.needed), and the
    length of its start the file's header checks (the metadata)."""
    module = compiled.compiled
    blobs = [obj for _, obj in module.objects] + [obj for _, _, obj in batches]
    meta = {
        "key": key,
        "tag": tag,
        "name": compiled.call.__name__,
        "wrapper": compiled.entry_symbol,
        "table": compiled.table,
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
        "sums": [list(checksums(blob)) for blob in blobs],
        "plans": [elf.laid_out([obj for _, obj in module.objects]),
                  *(elf.laid_out([obj]) for _, _, obj in batches)],
    }
    text = marshal.dumps(meta)
    return b"".join([struct.pack("<I", len(text)), text, *blobs]), 4 + len(text)
