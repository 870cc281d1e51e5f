"""The cache's key: what compiled code depends on, hashed without parsing or compiling;
and the files entries are kept in under it.

An entry is valid while the code it was compiled from, and everything that code was
compiled under, are as they were. Both are hashed here, in one module, beside the files
(each module imported costs a warm load about as much as computing a key).

**The code** (`digest(fn)`). astjit compiles a function's source and, transitively, the
functions it calls, and freezes the values of the globals and closure variables it reads
(source.py). `digest` hashes them from the live objects:

- each function reached: its module, qualified name, file, and the text of its source
  lines as the file holds them when the key is made (from the first line of its code to
  the last line any of its code, nested code included, comes from: an edit of the body
  changes them, whatever its length or the file's modification time), with the file's
  encoding declaration, its default values and `static_params`;
- each name its code objects mention (`co_names`: globals and attribute names) that its
  module binds, and each closure variable, by value: numbers, strings, tuples and NumPy
  scalars by their value, arrays by dtype and shape (compiled code refuses a global
  array: it takes arrays only as arguments), functions as above (so callees and helpers
  passed around), jitted and derived functions by what they wrap, modules by name (with
  the functions of theirs the code names), classes and builtins by qualified name;
- anything else (an instance of a user class, say) makes the function uncacheable
  (`Uncacheable`): its value could be read in ways the cache cannot key. It is then
  compiled in every process, as without `cache=True`.

The walk over-approximates (a name mentioned only as an attribute is hashed if the
module binds it too): an entry is at worst rebuilt needlessly, never loaded stale.
Functions of NumPy, astjit and the standard library are keyed by name: their code is in
the environment's versions.

**The environment** (`fingerprint()`). Machine code is tuned to the host CPU, calls
NumPy's C API by the table of the NumPy it was compiled against, and is made by one
astjit and one LLVM. An entry made under another of any of these is foreign: its key
differs, so it is never found. All of it is read without importing llvmlite or NumPy (a
warm cache's process needs neither for a scalar kernel):

- astjit: its version and the state of its files (`package_state`). Installed from a
  wheel (its `.dist-info` beside the package, whose RECORD lists the package's files
  with their SHA-256): RECORD's content, one small file, which every install, upgrade
  or reinstall of another build rewrites. Otherwise (an editable install, a
  development checkout, a folder on `sys.path`): the size and modification time of
  each of its source files, so that editing astjit never loads code an older one
  compiled; a stat per file (about 240), where no cheaper test is safe: an editor
  that rewrites a file in place changes neither its folder's modification time nor
  anything but that file's own stat (the runtime cache's key stats those its code can
  run alone: `NOT_RUNTIME` in backend/llvm/jit/runtime_cache.py);
- llvmlite: its version file (`_version.py`, with its commit) and the size and modification
  time of its shared library, into which LLVM is linked statically: another LLVM is
  another library file;
- NumPy: its version (the imported module's, else its `version.py`);
- the CPU (`cpu`): on Linux the first processor's vendor, family, model, stepping, name
  and feature flags from /proc/cpuinfo: LLVM derives the CPU it targets and its
  features from the same CPUID words (the kernel clears a flag the OS does not
  support, as LLVM's own check of XCR0 does); elsewhere LLVM's host CPU name and
  features (llvmlite imported).

**The files** (`directory`, `path_for`, `read_file`, `write_file`; the runtime cache's
files too: backend/llvm/jit/runtime_cache.py). Folder: `ASTJIT_CACHE_DIR` when set, else
`$XDG_CACHE_HOME/astjit`, else `~/.cache/astjit` (one per user, shared by all of their
projects: keys name the function's module and file, so entries of different programs
never meet). One file per entry, `<module>.<qualname>-<hash of the key>.astjit`:

    b"ASTJITC\\n"  format (4 bytes, little-endian)  length of the payload (8 bytes)
    length of its checked start (8 bytes)  CRC-32 and Adler-32 of that start (4 bytes each)
    payload

`read_file` returns the payload only when its length and its checked start check: a file
of another format, a truncated one, or one with a flipped bit in that start is ignored,
as if absent (and the entry is compiled and written again). The start is the whole
payload unless the writer says otherwise: a cache entry's is what every load reads (its
metadata and the image a load maps); the rest, object code only a link by LLVM or a
later compile reads, carries checksums of its own in that start, checked where it is
read (`intact`), so that a load does not checksum bytes it never uses. The checksums are
for damage, not tampering (the
folder holds machine code: it is trusted as the user's own files are): CRC-32 finds
every change within 32 consecutive bits (a flipped bit, a changed byte), the length a
truncation, and other damage passes CRC-32 and Adler-32 both only by a chance of the
order of 2^-64; in C, they cost a load a fraction of a SHA-512 of the payload.
`write_file` writes a temporary file in the same folder and renames it over the entry
(`os.replace`, atomic on POSIX and Windows): readers see the old file or the new one,
never a mix, however many processes write the same entry at once (the last rename wins;
all wrote equivalent code). A cache that cannot be written (a read-only folder) is
skipped silently: the code runs, it is just compiled again next time.
"""
from __future__ import annotations

import builtins
import functools
import linecache
import marshal
import operator
import os
import struct
import sys
import types
import zlib
from pathlib import Path
from typing import Any

try:  # the C module alone: hashlib also loads OpenSSL, a noticeable part of a cached load.
    # SHA-512, not SHA-256: `import astjit` has imported its module already (`random`
    # does), and on a 64-bit machine it hashes a byte in fewer instructions
    from _sha512 import sha512
except ImportError:  # Python 3.12+ (_sha2), or a build without it
    try:
        from _sha2 import sha512
    except ImportError:
        from hashlib import sha512

LIBRARIES = frozenset({"numpy", "astjit", "math", "cmath", "builtins", "operator", "functools",
                       "scipy", "itertools"})
"""Top-level packages whose functions are keyed by name, not by source."""


class Uncacheable(Exception):
    """The function reads something the cache cannot key by value."""


def digest(fn: Any) -> str:
    """The hex digest of everything compiling `fn` depends on (see the module's docstring).

    The walk's state is a namespace, its steps functions (a class costs a warm load more
    than the walk of a scalar kernel): `hash`; `seen`, the id of each function hashed ->
    its number, for recursion (and keeping ids apart); `alive`, the functions hashed (their
    ids stay theirs while the walk runs); `files`, the bytes of each source file read (None:
    not a file), read once a walk."""
    walk = types.SimpleNamespace(hash=sha512(), seen={}, alive=[], files={})
    _value(walk, fn)
    return walk.hash.hexdigest()


def _add(walk: types.SimpleNamespace, *parts: object) -> None:
    for part in parts:
        walk.hash.update(str(part).encode("utf-8", "surrogatepass"))
        walk.hash.update(b"\0")


def _value(walk: types.SimpleNamespace, obj: Any) -> None:
    """Hash `obj` by value (see the module's docstring)."""
    kind = type(obj)
    if obj is None or kind in (bool, int, float, complex, str, bytes):
        _add(walk, kind.__name__, repr(obj))
    elif kind in (tuple, list, frozenset, set):
        items = sorted(obj, key=repr) if kind in (frozenset, set) else obj
        _add(walk, kind.__name__, len(items))
        for item in items:
            _value(walk, item)
    elif kind is dict:
        _add(walk, "dict", len(obj))
        for key, item in obj.items():
            _value(walk, key)
            _value(walk, item)
    elif isinstance(obj, types.ModuleType):
        _add(walk, "module", obj.__name__)
    elif isinstance(obj, types.FunctionType):
        _function(walk, obj)
    elif _numpy_value(walk, obj):
        pass
    elif hasattr(obj, "__astjit_derived__"):
        spec = obj.__astjit_derived__
        _add(walk, "derived", repr(spec.derive), spec.params)
        _value(walk, spec.base)
    elif callable(getattr(obj, "py_func", None)) and hasattr(obj, "dispatcher"):
        _add(walk, "jitted", repr(sorted(obj.dispatcher.options.items())))
        _value(walk, obj.py_func)
    elif type(obj) is types.MethodType:
        raise Uncacheable("a bound method: its object is read when the code runs")
    elif isinstance(obj, (type, types.BuiltinFunctionType)) and _named(obj):
        _add(walk, "named", obj.__module__, obj.__qualname__)
    else:
        raise Uncacheable(f"a value of type {kind.__qualname__} ({obj!r:.60})")


def _numpy_value(walk: types.SimpleNamespace, obj: Any) -> bool:
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return False
    if isinstance(obj, numpy.ndarray):  # compiled code takes arrays only as arguments
        _add(walk, "ndarray", obj.dtype.str, obj.shape)
    elif isinstance(obj, numpy.generic):
        _add(walk, "numpy", obj.dtype.str, obj.tobytes().hex())
    elif isinstance(obj, numpy.ufunc):
        _add(walk, "ufunc", obj.__name__)
    elif isinstance(obj, numpy.dtype):
        _add(walk, "dtype", obj.str)
    else:
        return False
    return True


def _function(walk: types.SimpleNamespace, fn: types.FunctionType) -> None:
    number = walk.seen.get(id(fn))
    if number is not None:
        _add(walk, "again", number)
        return
    walk.seen[id(fn)] = len(walk.seen)
    walk.alive.append(fn)  # its id stays its own while the walk runs
    module = getattr(fn, "__module__", None) or ""
    _add(walk, "function", module, fn.__qualname__)
    if module.partition(".")[0] in LIBRARIES:
        return
    code = fn.__code__
    text = source_text(code, walk.files)
    _add(walk, code.co_filename, len(text))
    walk.hash.update(text)
    _value(walk, fn.__defaults__)
    _value(walk, fn.__kwdefaults__)
    _value(walk, getattr(fn, "__astjit_static__", None))
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            contents = cell.cell_contents
        except ValueError:
            _add(walk, "empty cell", name)
            continue
        _add(walk, "cell", name)
        _value(walk, contents)
    namespace = fn.__globals__
    for name in sorted(global_names(code)):
        if name in namespace:
            _add(walk, "global", name)
            _value(walk, namespace[name])
        elif hasattr(builtins, name):
            _add(walk, "builtin", name)
    modules = [v for v in namespace.values() if isinstance(v, types.ModuleType)
               and v.__name__.partition(".")[0] not in LIBRARIES]
    for name in sorted(global_names(code)):  # mylib.helper: the helper's code too
        for module in modules:
            member = getattr(module, name, None)
            if isinstance(member, types.FunctionType):
                _add(walk, "member", module.__name__, name)
                _value(walk, member)


def _named(obj: Any) -> bool:
    """Whether `obj` is found again by its module and qualified name."""
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    found = module
    for part in getattr(obj, "__qualname__", "<none>").split("."):
        found = getattr(found, part, None)
    return found is obj


def code_objects(code: types.CodeType) -> list[types.CodeType]:
    """`code` and the code objects nested in it (local functions, comprehensions)."""
    found, stack = [], [code]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return found


def global_names(code: types.CodeType) -> set[str]:
    """The names `code` (nested code included) looks up as globals or attributes."""
    return {name for c in code_objects(code) for name in c.co_names}


_LINE = operator.itemgetter(2)
"""The line of a `co_lines()` entry (None where an instruction has none)."""


def source_text(code: types.CodeType, files: dict[str, bytes | None]) -> bytes:
    """The text of `code`'s source lines, from its first line to the last line of its code,
    as the file on disk holds them (what astjit compiles: the frontend reads the file anew,
    `linecache.checkcache`), and the file's encoding declaration, if any; Uncacheable
    without source. `files` keeps each file's bytes for the walk.

    Read as bytes, not through linecache: its decoding (`tokenize.open`) and a string per
    line cost a warm load several times the read. A source that is not a file (a notebook's
    cell, which IPython puts in linecache) is taken from linecache."""
    filename = code.co_filename
    if filename not in files:
        files[filename] = _read_source(filename)
    data = files[filename]
    last = max(max(filter(None, map(_LINE, c.co_lines())), default=0)  # (in C: a Python
               for c in code_objects(code))  # loop over each instruction cost the read's twice)
    last = max(last, code.co_firstlineno)
    if data is None:
        lines = linecache.getlines(filename)
        if not lines or last > len(lines):
            raise Uncacheable(f"no source for {code.co_name} in {filename}")
        return "".join(lines[code.co_firstlineno - 1:last]).encode("utf-8", "surrogatepass")
    parts = data.split(b"\n", last)  # lines up to `last`, then the rest
    if len(parts) < last or (len(parts) == last and not parts[-1]):
        raise Uncacheable(f"no source for {code.co_name} in {filename}")
    second = data.find(b"\n", data.find(b"\n") + 1)  # the end of line 2 (-1: no line 3)
    head = data if second < 0 else data[:second]
    cookie = head if b"coding" in head else b""  # (PEP 263: where the encoding is declared)
    return b"\n".join([cookie, *parts[code.co_firstlineno - 1:last]])


def _read_source(filename: str) -> bytes | None:
    """The bytes of the source file `filename`, newlines as Python reads them (`\\n`); None
    where it cannot be read (not a file)."""
    try:
        with open(filename, "rb") as file:
            data = file.read()
    except (OSError, ValueError):
        return None
    if b"\r" in data:  # Windows' and old Macs' newlines: lines as Python numbers them
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


# ---- the environment ----------------------------------------------------------------------

FORMAT = 7
"""The version of the entries' layout (the files below, cache/__init__.py): part of every key."""

CPU_FIELDS = (b"vendor_id", b"cpu family", b"model", b"stepping", b"flags")
"""The fields of /proc/cpuinfo that name a processor and its features, by the start of their
lines (`model` also starts `model name`'s)."""


@functools.cache
def fingerprint() -> str:
    """One line naming everything above, for this process (computed once)."""
    return f"format={FORMAT};{astjit_state()};{toolchain()}"


def astjit_state(skip: frozenset[str] = frozenset()) -> str:
    """astjit's version and `package_state` of its files, those under `skip` left out."""
    version = sys.modules["astjit"].__version__  # imported by now (an import: a cycle)
    return f"astjit={version}:{package_state(os.path.dirname(os.path.dirname(__file__)), skip)}"


@functools.cache
def toolchain() -> str:
    """The part of the fingerprint that is not astjit: llvmlite, NumPy, Python, the CPU."""
    return (f"llvmlite={llvmlite_state()};numpy={numpy_version()};"
            f"python={sys.version.split()[0]}:{sys.implementation.cache_tag};"
            f"machine={machine()};cpu={cpu()}")


def package_state(root: str, skip: frozenset[str] = frozenset()) -> str:
    """A digest of astjit's files under `root`: its wheel's RECORD where it was installed
    from one, else each source file's path, size and modification time, but those under
    the folders `skip` names (relative to `root`, with "/") (see the module's docstring)."""
    record = installed_record(root)
    if record is not None:  # checksums, not SHA-512: a third of the instructions of a load
        return f"record:{len(record)}:{zlib.crc32(record):08x}{zlib.adler32(record):08x}"
    return "files:" + sha512(marshal.dumps(source_stats(root, skip))).hexdigest()[:16]


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


def source_stats(root: str, skip: frozenset[str] = frozenset()) -> list[tuple[str, int, int]]:
    """(path, size, modification time in ns) of every `.py` file under `root` but those
    under the folders `skip` names (relative to `root`), sorted."""
    stats = []
    folders = [root]
    skipped = {os.path.join(root, *folder.split("/")) for folder in skip}
    while folders:
        with os.scandir(folders.pop()) as found:
            for entry in found:
                name = entry.name
                if name.endswith(".py"):
                    stat = entry.stat()
                    stats.append((entry.path, stat.st_size, stat.st_mtime_ns))
                elif name != "__pycache__" and entry.path not in skipped and entry.is_dir():
                    folders.append(entry.path)
    stats.sort()
    return stats


def _package_folder(name: str) -> str | None:
    """The folder of the package `name` that importing it would load (imported: its own):
    the first entry of `sys.path` holding `name/__init__.py`. (`os.access` on a joined
    string: `PathFinder.find_spec`, or `os.path.join` and `isfile` with the `stat_result`
    it makes, cost a warm load several times as much over the path's entries.)"""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None):
        return os.path.dirname(module.__file__)
    access = os.access
    for entry in sys.path:
        folder = f"{entry or os.curdir}{os.sep}{name}"
        if access(f"{folder}{os.sep}__init__.py", os.F_OK):
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
    """llvmlite's version file (its version and commit), by its length and checksums (no
    parsing), and its library's size and modification time."""
    folder = _package_folder("llvmlite")
    if folder is None:
        return "absent"
    try:
        with open(f"{folder}{os.sep}_version.py", "rb") as file:
            text = file.read()
        version = f"{len(text)}:{zlib.crc32(text):08x}{zlib.adler32(text):08x}"
    except OSError:
        version = _imported_version("llvmlite")
    try:
        with os.scandir(f"{folder}{os.sep}binding") as found:  # not glob: costs more
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
    """The host CPU (see the module's docstring): the lines of `CPU_FIELDS` of the first
    processor in /proc/cpuinfo, as it prints them, by their checksums (the lines picked out
    by their start, each in C: splitting and joining each line in Python cost a warm load
    more than reading the file)."""
    text = b"\n".join([line for line in _first_processor().split(b"\n")
                       if line.startswith(CPU_FIELDS)])
    if b"\nflags" in text and b"model name" in text:
        return f"cpuinfo:{len(text)}:{zlib.crc32(text):08x}{zlib.adler32(text):08x}"
    import llvmlite.binding as llvm

    return f"llvm:{llvm.get_host_cpu_name()}:{llvm.get_host_cpu_features().flatten()}"


def _first_processor() -> bytes:
    """The start of /proc/cpuinfo, to the end of its first processor's block (b"" where it
    cannot be read): read a block at a time (as text, line by line, it cost more than the
    rest of the CPU's key)."""
    data = b""
    try:
        with open("/proc/cpuinfo", "rb") as file:
            while b"\n\n" not in data:
                block = file.read(4096)
                if not block:
                    break
                data += block
    except OSError:
        return b""
    return data.partition(b"\n\n")[0]


# ---- the files ----------------------------------------------------------------------------
# Here beside the key they are named by, and not in a module of their own: the runtime
# cache (backend/llvm/jit/runtime_cache.py) keeps its files in them too, and each module a
# warm load imports costs it about as much as reading and checking its entry.

MAGIC = b"ASTJITC\n"
HEADER = struct.Struct("<8sIQQII")


def directory() -> Path:
    """The cache folder (see the module's docstring); not created here."""
    return Path(cache_folder())


def cache_folder() -> str:
    """`directory()` as a string, which the paths of a load are made of: making `Path`s
    cost a warm load more than hashing its key."""
    chosen = os.environ.get("ASTJIT_CACHE_DIR")
    if chosen:
        return chosen
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "astjit")


def path_for(label: str, key: str) -> str:
    """The file of the entry with `key`, named for people by `label` (module.qualname)."""
    readable = label[:80]
    if not (readable.isascii() and readable.replace("_", "a").replace(".", "a")
            .replace("-", "a").isalnum()):  # (a character at a time only where it differs)
        readable = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_"
                           for c in readable)
    return f"{cache_folder()}{os.sep}{readable}-{sha512(key.encode()).hexdigest()[:32]}.astjit"


def read_file(path: str | Path) -> bytes | None:
    """The payload of the entry at `path`, or None: absent, unreadable, of another format,
    truncated, or corrupt in its checked start."""
    try:
        with open(path, "rb", buffering=0) as file:  # the header apart: no copy of the rest
            header, payload = file.read(HEADER.size), file.readall()
    except OSError:
        return None
    if len(header) < HEADER.size:
        return None
    magic, version, length, checked, crc, adler = HEADER.unpack(header)
    if magic != MAGIC or version != FORMAT or length != len(payload) or checked > length:
        return None
    return payload if intact(memoryview(payload)[:checked], (crc, adler)) else None


def checksums(data: bytes | memoryview) -> tuple[int, int]:
    """CRC-32 and Adler-32 of `data` (see the module's docstring)."""
    return zlib.crc32(data), zlib.adler32(data)


def intact(data: bytes | memoryview, sums: tuple[int, int] | list[int]) -> bool:
    """Whether `data` has the `checksums` `sums`."""
    return zlib.crc32(data) == sums[0] and zlib.adler32(data) == sums[1]


def write_file(path: str | Path, payload: bytes, checked: int | None = None) -> bool:
    """Write the entry atomically, the header's checksums over its first `checked` bytes
    (all of it by default) (see the module's docstring); whether it was written."""
    checked = len(payload) if checked is None else checked
    header = HEADER.pack(MAGIC, FORMAT, len(payload), checked, *checksums(payload[:checked]))
    import tempfile  # a writer's only (a loading process never imports it)

    try:
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".astjit")
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
