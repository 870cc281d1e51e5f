"""The cache's files: where they live, their layout, and writing them safely.

Folder: `ASTJIT_CACHE_DIR` when set, else `$XDG_CACHE_HOME/astjit`, else
`~/.cache/astjit` (one per user, shared by all of their projects: keys name the
function's module and file, so entries of different programs never meet).

One file per entry, `<module>.<qualname>-<hash of the key>.astjit`:

    b"ASTJITC\\n"  format (4 bytes, little-endian)  length of the payload (8 bytes)
    CRC-32 and Adler-32 of the payload (4 bytes each)  payload

`read` returns the payload only when every part checks: a file of another format, a
truncated one, or one with a flipped bit anywhere is ignored, as if absent (and the
entry is compiled and written again). The checksums are for damage, not tampering (the
folder holds machine code: it is trusted as the user's own files are): CRC-32 finds
every change within 32 consecutive bits (a flipped bit, a changed byte), the length a
truncation, and other damage passes CRC-32 and Adler-32 both only by a chance of the
order of 2^-64; in C, they cost a load a fraction of a SHA-512 of the payload.

`write` writes a temporary file in the same folder and renames it over the entry
(`os.replace`, atomic on POSIX and Windows): readers see the old file or the new one,
never a mix, however many processes write the same entry at once (the last rename wins;
all wrote equivalent code). A cache that cannot be written (a read-only folder) is
skipped silently: the code runs, it is just compiled again next time.
"""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

from .key import FORMAT, sha512

MAGIC = b"ASTJITC\n"
HEADER = struct.Struct("<8sIQII")


def directory() -> Path:
    """The cache folder (see the module's docstring); not created here."""
    chosen = os.environ.get("ASTJIT_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "astjit"


def path_for(label: str, key: str) -> Path:
    """The file of the entry with `key`, named for people by `label` (module.qualname)."""
    readable = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_"
                       for c in label)[:80]
    return directory() / f"{readable}-{sha512(key.encode()).hexdigest()[:32]}.astjit"


def read(path: Path) -> bytes | None:
    """The payload of the entry at `path`, or None: absent, unreadable, of another format,
    truncated or corrupt."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if len(data) < HEADER.size:
        return None
    magic, version, length, crc, adler = HEADER.unpack_from(data)
    payload = data[HEADER.size:]
    if magic != MAGIC or version != FORMAT or length != len(payload) \
            or zlib.crc32(payload) != crc or zlib.adler32(payload) != adler:
        return None
    return payload


def write(path: Path, payload: bytes) -> bool:
    """Write the entry atomically (see the module's docstring); whether it was written."""
    header = HEADER.pack(MAGIC, FORMAT, len(payload), zlib.crc32(payload), zlib.adler32(payload))
    import tempfile  # a writer's only (a loading process never imports it)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".astjit")
    except OSError:
        return False
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(header)
            file.write(payload)
        os.replace(temporary, path)
        return True
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
