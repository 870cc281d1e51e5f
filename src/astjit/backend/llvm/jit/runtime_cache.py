"""The runtime's shared functions as object code on disk, for every later process.

A process compiles the runtime's shared functions its kernels call (unboxing, array
allocation, copies, BLAS calls, the GIL's and Ctrl-C's helpers: `shared.py`) once, in
batches (`engine.compile_runtime`), and that was the largest part of its first array
kernel's first call, and a third of a first scalar loop's (docs/measurements.md).
Numba ships its helpers precompiled and JAX its runtime; astjit generates its helpers
per dtype and rank, so it keeps each batch's object code once made, as `jit(f,
cache=True)` keeps a function's, and links it in later processes instead of
optimizing it and generating its machine code again.

Key: the SHA-256 of the batch's LLVM IR as the process printed it, the pipeline that
compiles it (its settings spelled out) and the environment: the disk cache's
fingerprint (astjit's version and sources, llvmlite, NumPy, Python, the CPU;
`cache/key.py`), but for the sources of the folders whose code the runtime never runs
(`NOT_RUNTIME`), and LLVM's own name for the host CPU and its features. The
object code is a function of these alone, so an entry is found only for the very
module it was made from: an edit of an emitter gives other IR, so another key. A
batch whose IR embeds something of this process alone (an object's address, a disk
cache entry's pinned object: `runtime/objects.py`) is never written; the disk
cache's entries (`cache/runtime.py`) count on a loaded batch embedding none.

Files: `<cache folder>/runtime/<hash>.astjit`, the folder of `jit(f, cache=True)`
(`cache/key.py`: `ASTJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/astjit`, else
`~/.cache/astjit`), in its format: checksummed (a damaged file is ignored and written
again) and written atomically (concurrent processes never see a mix). A folder that
cannot be written is skipped. Each entry holds the batch's object code, the functions
it defines, the symbols it imports, the object laid out by the disk cache's ELF linker
(`cache/elf.py`: the process links it without LLVM, as a cached entry's batches, in a
fraction of MCJIT's time) and its optimized IR (`runtime_llvm_ir` shows it as for a
batch compiled in the process): a marshalled header, the object, then the IR as text,
which the header leaves out (parsing it as a string took longer than the link) and the
checksums too (they guard the code; the IR is only shown).
`ASTJIT_RUNTIME_CACHE=0` turns it off: every process compiles its runtime
(docs/caching.md).
"""
from __future__ import annotations

import functools
import hashlib
import marshal
import os
import re
import struct
from dataclasses import dataclass

from ....cache.key import FORMAT, astjit_state, cache_folder, read_file, toolchain, write_file
from .host import host_cpu

SWITCH = "ASTJIT_RUNTIME_CACHE"
FOLDER = "runtime"
_LOCAL = re.compile(r"inttoptr \((?:i64|ptr) \d{6,}|astjit\.pin\.")
"""What makes a module's code this process's alone: an address, a pinned object's symbol."""
_LENGTHS = struct.Struct("<QQ")
"""An entry's header's and object's lengths."""
LAYOUT = 2
"""The version of an entry's layout (this module's), part of every key."""


NOT_RUNTIME = frozenset({"frontend", "ir/ad", "backend/cuda", "fuzz", "explore"})
"""astjit's folders whose code no runtime function's emitter can run: nothing the LLVM
backend imports, directly or not, is there (tests/ir/test_import_graph.py checks it), and
`shared_function`'s name stands for its body. A checkout's key stats the other files alone."""


@functools.cache
def _environment() -> str:
    cpu, features = host_cpu()
    return f"format={FORMAT}.{LAYOUT};{astjit_state(NOT_RUNTIME)};{toolchain()};llvm-cpu={cpu}:{features}"


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def key(text: str, pipeline: str, settings: str) -> str | None:
    """The key of the object code of `text` compiled by `pipeline` (`settings`: everything
    that pipeline sets), or None where it is not to be stored or read."""
    if not enabled() or _LOCAL.search(text):
        return None
    digest = hashlib.sha256()
    for part in (_environment(), pipeline, settings, text):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class Stored:
    """One stored batch."""

    key: str
    object: bytes
    names: tuple[str, ...]
    """The functions it defines."""
    imports: tuple[str, ...]
    optimized: str
    """Its optimized LLVM IR."""
    references: dict[str, tuple[str, ...]]
    """Name -> what its body refers to (`shared.RUNTIME.references`), for each function of
    a batch of functions emitted in the process that stored it; empty for one made of
    another's IR (`ObjectImage.runtime`)."""
    plan: tuple | None = None
    """The object laid out for `cabi.load_image` (`elf.laid_out`), or None: linked by LLVM."""


def _path(key: str) -> str:
    return os.path.join(cache_folder(), FOLDER, f"{key[:40]}.astjit")


def _name_path(name: str) -> str:
    digest = hashlib.sha256(f"{_environment()}\0{name}".encode()).hexdigest()
    return os.path.join(cache_folder(), FOLDER, "names", f"{digest[:40]}.astjit")


def read(key: str) -> Stored | None:
    """The batch stored under `key`, or None: absent, damaged, or another key's."""
    payload = read_file(_path(key))
    if payload is None or len(payload) < _LENGTHS.size:
        return None
    header, size = _LENGTHS.unpack_from(payload)
    start = _LENGTHS.size + header
    try:
        meta = marshal.loads(payload[_LENGTHS.size:start])
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(meta, dict) or meta.get("key") != key or len(payload) < start + size:
        return None
    return Stored(key, payload[start:start + size], meta["names"], meta["imports"],
                  payload[start + size:].decode(errors="replace"), meta["references"],
                  meta["plan"])


def write(stored: Stored) -> bool:
    """Store a batch under its key and, for each function whose references it has, the key
    under the function's name (`find`) unless a smaller batch has it: a process that asks
    for a function links its whole batch, and what the batch imports (SciPy's BLAS for a
    matrix product) is loaded with it; whether the batch was stored."""
    from ....cache import elf  # (the ELF parser: a writing process's alone)

    header = marshal.dumps({"key": stored.key, "names": tuple(stored.names),
                            "imports": tuple(stored.imports),
                            "references": {n: tuple(r) for n, r in stored.references.items()},
                            "plan": elf.laid_out([stored.object])})
    code = b"".join([_LENGTHS.pack(len(header), len(stored.object)), header, stored.object])
    if not write_file(_path(stored.key), code + stored.optimized.encode(), checked=len(code)):
        return False
    for name in stored.references:
        known = find(name)
        if known is None or len(known.names) > len(stored.names):
            write_file(_name_path(name), stored.key.encode())
    return True


def find(name: str) -> Stored | None:
    """The stored batch that defines the runtime's function `name` in this environment (the
    last one stored), or None. A name stands for one body (shared.py), so the batch is
    the one this process would compile; it spares the process even emitting the body."""
    if not enabled():
        return None
    payload = read_file(_name_path(name))
    stored = None if payload is None else read(payload.decode(errors="replace"))
    return stored if stored is not None and name in stored.references else None
