"""Python objects in compiled code as named symbols, so machine code runs in another process.

Compiled code compares and passes Python objects it knows at compile time: `float`,
`None`, `numpy.True_`, a dtype's descriptor, the entry's fallback and error handler.
Their addresses differ from one process to the next, so machine code that embeds
them as numbers can only run where it was compiled. `pyapi.object_constant` refers
to each by a symbol instead, which LLVM resolves when it links the code:

- `astjit.obj.<name>`: an object another process finds by `<name>` (`portable_name`:
  the builtin singletons, NumPy's bool scalars, builtin dtype descriptors, classes
  found by `module:qualname`). Registered with LLVM on first use (`symbol`) and
  found again in a loading process by `resolve`. One name per object, and one
  object per name, so LLVM may fold comparisons between them.
- `astjit.pin.<tag>.<k>`: the k-th other object of one compile made under
  `pinning(tag)` (the disk cache's: tag names the cache entry), registered when
  first used; whoever loads the code binds each name to its own object. Outside
  `pinning`, such an object stays an address: that code is never saved.

The names themselves (`portable_name`, `resolve`) are astjit/cabi.py's, which needs no
LLVM: the disk cache's loader finds objects by name without it (astjit/cache/__init__.py).

`declared(text)` adds the declarations of the symbols a printed module uses
(`external global i8`: only their addresses are used), which the engine parses.
"""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager

from ....cabi import OBJECT_PREFIX, PIN_PREFIX, portable_name, resolve

_named: dict[int, tuple[str, object]] = {}
"""id -> (symbol, the object, kept alive so that its id is never another's)."""
_lock = threading.Lock()
_local = threading.local()
_REFERENCE = r'@"(astjit\.(?:obj|pin)\.[^"]*)"'
"""A symbol's reference in printed IR."""


def symbol(obj: object) -> str | None:
    """The symbol compiled code refers to `obj` by (registered with LLVM), or None: an
    object without a portable name, outside `pinning`."""
    found = _named.get(id(obj))
    if found is not None:
        return found[0]
    name = portable_name(obj)
    if name is not None:
        import llvmlite.binding as llvm

        with _lock:
            if id(obj) not in _named:
                llvm.add_symbol(OBJECT_PREFIX + name, id(obj))
                _named[id(obj)] = (OBJECT_PREFIX + name, obj)
        return OBJECT_PREFIX + name
    pins = getattr(_local, "pins", None)
    return None if pins is None else pins.symbol(obj)


class Pins:
    """The objects without portable names one compile used, in order of first use. (A plain
    class: this module is on the disk cache's load path, where making a dataclass costs.)"""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.objects: list = []

    def symbol(self, obj: object) -> str:
        for k, known in enumerate(self.objects):
            if known is obj:
                return f"{PIN_PREFIX}{self.tag}.{k}"
        self.objects.append(obj)
        name = f"{PIN_PREFIX}{self.tag}.{len(self.objects) - 1}"
        import llvmlite.binding as llvm

        llvm.add_symbol(name, id(obj))
        return name


@contextmanager
def pinning(tag: str):
    """Within: objects without portable names become `astjit.pin.<tag>.<k>` symbols, bound
    to them now (the Pins, yielded, lists them); on this thread only."""
    outer = getattr(_local, "pins", None)
    _local.pins = pins = Pins(tag)
    try:
        yield pins
    finally:
        _local.pins = outer


def register(names: set[str]) -> bool:
    """Register the object symbols `names` in this process (a loading one); False when one
    names no object here, or another than the one it named where it was compiled."""
    for name in names:
        try:
            obj = resolve(name.removeprefix(OBJECT_PREFIX))
        except (ImportError, AttributeError, TypeError):
            return False
        if symbol(obj) != name:
            return False
    return True


def bind(names: dict[str, object]) -> None:
    """Make each symbol of `names` resolve to its object (the caller keeps them alive)."""
    import llvmlite.binding as llvm

    for name, obj in names.items():
        llvm.add_symbol(name, id(obj))


def referenced(text: str) -> set[str]:
    """The object and pin symbols a printed module refers to."""
    return set(re.findall(_REFERENCE, text))


def declared(text: str) -> str:
    """A printed module with a declaration of each object and pin symbol it uses but does
    not declare."""
    if "@\"astjit.obj." not in text and "@\"astjit.pin." not in text:
        return text
    missing = sorted(name for name in referenced(text) if f'@"{name}" = ' not in text)
    return text + "".join(f'@"{name}" = external global i8\n' for name in missing)
