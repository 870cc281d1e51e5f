"""What else compiled code depends on: astjit itself, LLVM, NumPy, Python and the CPU.

Machine code is tuned to the host CPU, calls NumPy's C API by the table of the NumPy it
was compiled against, and is made by one astjit and one LLVM. An entry made under
another of any of these is foreign: its key differs, so it is never found.

All of it is read without importing llvmlite or NumPy (a warm cache's process needs
neither for a scalar kernel, and importing them would cost it more than the load):
- astjit: its version and the state of its files (`package_state`). Installed from a
  wheel (its `.dist-info` beside the package, whose RECORD lists the package's files
  with their SHA-256): RECORD's content, one small file, which every install, upgrade
  or reinstall of another build rewrites. Otherwise (an editable install, a
  development checkout, a folder on `sys.path`): the size and modification time of
  each of its source files, so that editing astjit never loads code an older one
  compiled; a stat per file (about 240), where no cheaper test is safe: an editor
  that rewrites a file in place changes neither its folder's modification time nor
  anything but that file's own stat;
- llvmlite: its version (`_version.py`, with its commit) and the size and modification
  time of its shared library, into which LLVM is linked statically: another LLVM is
  another library file;
- NumPy: its version (the imported module's, else its `version.py`);
- the CPU (`cpu`): on Linux the first processor's vendor, family, model, stepping, name
  and feature flags from /proc/cpuinfo: LLVM derives the CPU it targets and its
  features from the same CPUID words (the kernel clears a flag the OS does not
  support, as LLVM's own check of XCR0 does); elsewhere LLVM's host CPU name and
  features (llvmlite imported).
"""
from __future__ import annotations

import functools
import marshal
import os
import sys
import zlib

from .dependencies import sha512

FORMAT = 4
"""The version of the entries' layout (store.py, entries.py): part of every key."""

CPU_FIELDS = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags")
"""The fields of /proc/cpuinfo that name a processor and its features."""


@functools.cache
def fingerprint() -> str:
    """One line naming everything above, for this process (computed once)."""
    version = sys.modules["astjit"].__version__  # imported by now (an import: a cycle)
    parts = [
        f"format={FORMAT}",
        f"astjit={version}:{package_state(os.path.dirname(os.path.dirname(__file__)))}",
        f"llvmlite={llvmlite_state()}",
        f"numpy={numpy_version()}",
        f"python={sys.version.split()[0]}:{sys.implementation.cache_tag}",
        f"machine={machine()}",
        f"cpu={cpu()}",
    ]
    return ";".join(parts)


def package_state(root: str) -> str:
    """A digest of astjit's files under `root`: its wheel's RECORD where it was installed
    from one, else each source file's path, size and modification time (see the module's
    docstring)."""
    record = installed_record(root)
    if record is not None:  # checksums, not SHA-512: a third of the instructions of a load
        return f"record:{len(record)}:{zlib.crc32(record):08x}{zlib.adler32(record):08x}"
    return "files:" + sha512(marshal.dumps(source_stats(root))).hexdigest()[:16]


def installed_record(root: str) -> bytes | None:
    """The RECORD of the wheel `root` (the package's folder) was installed from, or None: no
    `.dist-info` of this version beside it, or one whose RECORD does not list the package's
    own files (an editable install's lists a `.pth` file, or a finder, instead)."""
    folder, name = os.path.split(root)
    version = sys.modules["astjit"].__version__
    try:
        with open(os.path.join(folder, f"{name}-{version}.dist-info", "RECORD"), "rb") as file:
            record = file.read()
    except OSError:
        return None
    return record if f"\n{name}/__init__.py,".encode() in b"\n" + record else None


def source_stats(root: str) -> list[tuple[str, int, int]]:
    """(path, size, modification time in ns) of every `.py` file under `root`, sorted."""
    stats = []
    folders = [root]
    while folders:
        with os.scandir(folders.pop()) as found:
            for entry in found:
                name = entry.name
                if name.endswith(".py"):
                    stat = entry.stat()
                    stats.append((entry.path, stat.st_size, stat.st_mtime_ns))
                elif name != "__pycache__" and entry.is_dir():
                    folders.append(entry.path)
    stats.sort()
    return stats


def _package_folder(name: str) -> str | None:
    """The folder of the package `name` that importing it would load (imported: its own):
    the first entry of `sys.path` holding `name/__init__.py`. (A stat per entry: cheaper
    than `PathFinder.find_spec`, which a warm load paid for llvmlite and NumPy both.)"""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None):
        return os.path.dirname(module.__file__)
    for entry in sys.path:
        folder = os.path.join(entry or os.getcwd(), name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return folder
    return None


def _read(path: str) -> str:
    """The text of the file at `path` ("" where it cannot be read): as bytes, then decoded
    (a text-mode file asks the locale for its encoding, several times the read)."""
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""


def llvmlite_state() -> str:
    """llvmlite's version and commit, and its library's size and modification time."""
    folder = _package_folder("llvmlite")
    if folder is None:
        return "absent"
    text = _read(os.path.join(folder, "_version.py"))
    found = [_assigned(text, "version_version"), _assigned(text, "version_full")]
    version = ":".join(found) if all(found) else _imported_version("llvmlite")
    try:
        with os.scandir(os.path.join(folder, "binding")) as found:  # not glob: costs more
            libraries = sorted((entry.name, entry.stat()) for entry in found
                               if "llvmlite" in entry.name and not entry.name.endswith(".py"))
    except OSError:
        libraries = []
    stats = [f"{name}:{stat.st_size}:{stat.st_mtime_ns}" for name, stat in libraries]
    return ":".join([version, *stats])


def numpy_version() -> str:
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        return numpy.__version__
    folder = _package_folder("numpy")
    text = _read(os.path.join(folder, "version.py")) if folder is not None else ""
    return _assigned(text, "version") or _imported_version("numpy")


def _assigned(text: str, name: str) -> str | None:
    """The string literal assigned to `name` at the start of a line of `text`, or None. (Only
    the lines holding `name` are split: a loop over every line costs more than the read.)"""
    at = text.find(name)
    while at >= 0:
        start, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end < 0 else end
        left, equals, right = text[start:end].partition("=")
        value = right.strip()
        if equals and left.strip() == name and len(value) >= 2 and value[0] == value[-1] \
                and value[0] in "'\"":
            return value[1:-1]
        at = text.find(name, end)
    return None


def _imported_version(name: str) -> str:
    """`name.__version__`, importing it: where its version file reads otherwise than above."""
    return str(__import__(name).__version__)


def machine() -> str:
    return os.uname().machine if hasattr(os, "uname") else sys.platform


def cpu() -> str:
    """The host CPU (see the module's docstring)."""
    fields = {}
    for line in _first_processor().splitlines():
        if not line.strip():
            break
        name, _, value = line.partition(":")
        if name.strip() in CPU_FIELDS:
            fields[name.strip()] = " ".join(value.split())
    if "flags" in fields and "model name" in fields:
        text = ";".join(f"{name}={fields.get(name, '')}" for name in CPU_FIELDS)
        return "cpuinfo:" + sha512(text.encode()).hexdigest()[:32]
    import llvmlite.binding as llvm

    return f"llvm:{llvm.get_host_cpu_name()}:{llvm.get_host_cpu_features().flatten()}"


def _first_processor() -> str:
    """The start of /proc/cpuinfo, to the end of its first processor's block ("" where it
    cannot be read): read as bytes, a block at a time (as text, line by line, it cost more
    than the rest of the CPU's key)."""
    data = b""
    try:
        with open("/proc/cpuinfo", "rb") as file:
            while b"\n\n" not in data:
                block = file.read(4096)
                if not block:
                    break
                data += block
    except OSError:
        return ""
    return data.partition(b"\n\n")[0].decode("utf-8", "replace")
