"""The runtime's shared functions a cached entry calls, as object code too.

Compiled code calls the runtime's shared functions (`shared.RUNTIME`: unboxing, array
allocation, the owned list ...), which each process compiles once, in batches
(`jit.engine.compile_runtime`), and which loaded code must find. An entry keeps the
object code of the runtime batches defining the functions it calls (and those they
call: `needed`); a loading process links the batches it lacks (`link`) and registers
their functions as the process's runtime, as if it had compiled them, so that code it
compiles later calls them too. Linking object code costs a small fraction of
compiling the batch's LLVM IR again, which would be most of a load.
"""
from __future__ import annotations

import re
from types import SimpleNamespace

_ADDRESS = r"inttoptr \((?:i64|ptr) \d{6,}"
"""An address embedded in LLVM IR."""


class LoadedPart:
    """A runtime batch's object code linked by the cache's loader (`cache.linked_code`), as
    `jit.engine.Part` shows a part loaded from object code (made when the batch is adopted:
    a process that only loads never needs it)."""

    pipeline = "loops"
    module = None
    has_ir = False

    def __init__(self, obj: bytes) -> None:
        self.object = obj


def needed(imports: tuple[str, ...]) -> list[tuple[tuple, tuple, bytes]] | None:
    """The runtime batches defining the runtime functions among `imports` and those they
    call, earliest first, as (names, imports, object code); None when one is not found (not
    a batch of this process)."""
    from ..backend.llvm import shared

    runtime = shared.RUNTIME
    with runtime.lock:
        modules, compiled = list(runtime.modules), set(runtime.compiled)
    wanted = set(imports) & compiled
    chosen = []
    for module in reversed(modules):  # the latest batch defining a function: its newest copy
        defined = wanted & set(module.addresses)
        if defined:
            chosen.append(module)
            wanted = (wanted - set(module.addresses)) | (set(module.imports) & compiled)
    if wanted or any(len(module.parts) != 1 or _embeds_addresses(module) for module in chosen):
        return None
    return [(tuple(m.addresses), tuple(m.imports), m.parts[0].object)
            for m in reversed(chosen)]


def _embeds_addresses(module) -> bool:
    """Whether a batch compiled here embeds an object's address (an object without a symbol,
    runtime/objects.py), so that it would run only in this process. A batch loaded from
    the cache (no IR) was checked where it was compiled."""
    part = module.parts[0]
    return part.module is not None and re.search(_ADDRESS, part.llvm_ir_optimized) is not None


def link(batches: list[SimpleNamespace], provide) -> bool:
    """Link the `batches` this process lacks as its runtime (their imports registered by
    `provide`, symbols.py); False when one cannot link here."""
    import llvmlite.binding as llvm

    from ..backend.llvm import shared
    from ..backend.llvm.jit.engine import ObjectImage, engine

    runtime = shared.RUNTIME
    with runtime.lock:
        for batch in batches:
            if set(batch.names) <= runtime.compiled:
                continue
            if not provide(batch.imports):
                return False
            try:
                module = engine().load(ObjectImage((("scalar", batch.object),), batch.names,
                                                   batch.imports))
            except LookupError:
                return False
            for name, address in module.addresses.items():
                llvm.add_symbol(name, address)
                runtime.compiled.add(name)
            runtime.modules.append(module)
    return True
