"""`jit(fn, cache=True)`: compiled machine code kept on disk, loaded by later processes.

A specialization (a function and its argument types) is looked up when it is first
called; on a hit its object code is linked into the process and called, with no
parsing, type inference, optimization or LLVM compile; on a miss it is compiled as
usual and its entry written. See docs/caching.md for what is keyed and what is not.

- `key`: the digest of a function's source, callees, globals and closures, and of the
  environment (astjit, LLVM, NumPy, Python and the CPU); and the files entries are kept
  in: the folder, their layout (checksummed), atomic writes;
- `entries`: what one entry holds and how it is linked back;
- `symbols`: registering the symbols loaded code imports.

`place` keys a specialization; `read` and `write` move its entry through `key`'s files.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import entries
from .key import Uncacheable, digest, fingerprint, path_for, read_file, sha512, write_file


class Place:
    """Where the entry of one specialization lives and the key it must carry."""

    __slots__ = ("key", "path")

    def __init__(self, key: str, path: Path) -> None:
        self.key = key
        self.path = path

    @property
    def tag(self) -> str:
        """The entry's name among the pins of the process (`objects.pinning`)."""
        return sha512(self.key.encode()).hexdigest()[:20]


def place(fn: Any, options: dict, types: tuple) -> Place | None:
    """The entry of `fn` (a Python or derived function) compiled with `options` for argument
    `types`; None when `fn` depends on something the cache cannot key (dependencies.py)."""
    try:
        depends = digest(fn)
    except Uncacheable:
        return None
    label = f"{getattr(fn, '__module__', None) or ''}.{getattr(fn, '__qualname__', 'f')}"
    shown = sorted((k, v) for k, v in options.items() if k != "cache")
    key = "|".join([fingerprint(), label, repr(shown), repr(types), depends])
    return Place(key, path_for(label, key))


def read(where: Place) -> entries.Saved | None:
    """The entry at `where`, decoded, or None (absent, corrupt, another key's)."""
    payload = read_file(where.path)
    return None if payload is None else entries.decode(payload, where.key)


def write(where: Place, compiled: Any, pinned: list) -> bool:
    """Save a compiled entry (`entry.CompiledEntry`, compiled under `objects.pinning(
    where.tag)`, which pinned `pinned`); whether it was written. Not written: code that
    pinned objects other than its fallback, handler and general entry, or that calls
    runtime functions not found as object code of this process's runtime."""
    from . import runtime  # a writer's only

    roles = entries.roles_of(pinned, compiled.call.__self__)
    batches = runtime.needed(compiled.compiled.imports)
    if roles is None or batches is None:
        return False
    return write_file(where.path, entries.encode(where.key, where.tag, compiled, batches, roles))
