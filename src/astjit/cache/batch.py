"""A runtime batch as a cache entry carries it: its own module, so that the entry codec
(entries.py) and the two linkers of batches (native.py, runtime.py) all import it without
importing one another."""
from __future__ import annotations


class Batch:
    """One runtime module's object code, the functions it defines and what it imports
    (runtime.py: the runtime's shared functions an entry calls, carried with it)."""

    __slots__ = ("imports", "names", "object")

    def __init__(self, names: tuple[str, ...], imports: tuple[str, ...], obj: bytes) -> None:
        self.names = names
        self.imports = imports
        self.object = obj
