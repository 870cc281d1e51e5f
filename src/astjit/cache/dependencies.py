"""What compiled code depends on, hashed without parsing or compiling: the cache's key.

astjit compiles a function's source and, transitively, the functions it calls, and
freezes the values of the globals and closure variables it reads (source.py). A cache
entry is valid while all of those are as they were. `digest(fn)` hashes them from the
live objects, so a process that has just imported the module can tell, in well under a
millisecond for a small module, whether an entry on disk was compiled from what it sees:

- each function reached: its module, qualified name, file, and the text of its source
  lines (from the first line of its code to the last line any of its code, nested code
  included, comes from: an edit of the body changes them, whatever its length), its
  default values and `static_params`;
- each name its code objects mention (`co_names`: globals and attribute names) that its
  module binds, and each closure variable, by value (`value_digest`): numbers, strings,
  tuples and NumPy scalars by their value, arrays by dtype and shape (compiled code
  refuses a global array: it takes arrays only as arguments), functions
  as above (so callees and helpers passed around), jitted and derived functions by what
  they wrap, modules by name (with the functions of theirs the code names), classes and
  builtins by qualified name;
- anything else (an instance of a user class, say) makes the function uncacheable
  (`Uncacheable`): its value could be read in ways the cache cannot key. It is then
  compiled in every process, as without `cache=True`.

The walk over-approximates (a name mentioned only as an attribute is hashed if the
module binds it too): an entry is at worst rebuilt needlessly, never loaded stale.
Functions of NumPy, astjit and the standard library are keyed by name: their code is in
the environment's versions (environment.py).
"""
from __future__ import annotations

import builtins
import linecache
import sys
import types
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
    """The hex digest of everything compiling `fn` depends on (see the module's docstring)."""
    walk = _Walk()
    walk.value(fn)
    return walk.hash.hexdigest()


class _Walk:
    def __init__(self) -> None:
        self.hash = sha512()
        self.seen: dict[int, int] = {}
        """id of each function hashed -> its number, for recursion (and keeping ids apart)."""
        self.alive: list = []

    def add(self, *parts: object) -> None:
        for part in parts:
            self.hash.update(str(part).encode("utf-8", "surrogatepass"))
            self.hash.update(b"\0")

    def value(self, obj: Any) -> None:
        """Hash `obj` by value (see the module's docstring)."""
        kind = type(obj)
        if obj is None or kind in (bool, int, float, complex, str, bytes):
            self.add(kind.__name__, repr(obj))
        elif kind in (tuple, list, frozenset, set):
            items = sorted(obj, key=repr) if kind in (frozenset, set) else obj
            self.add(kind.__name__, len(items))
            for item in items:
                self.value(item)
        elif kind is dict:
            self.add("dict", len(obj))
            for key, item in obj.items():
                self.value(key)
                self.value(item)
        elif isinstance(obj, types.ModuleType):
            self.add("module", obj.__name__)
        elif isinstance(obj, types.FunctionType):
            self.function(obj)
        elif self.numpy_value(obj):
            pass
        elif hasattr(obj, "__astjit_derived__"):
            spec = obj.__astjit_derived__
            self.add("derived", repr(spec.derive), spec.params)
            self.value(spec.base)
        elif callable(getattr(obj, "py_func", None)) and hasattr(obj, "dispatcher"):
            self.add("jitted", repr(sorted(obj.dispatcher.options.items())))
            self.value(obj.py_func)
        elif type(obj) is types.MethodType:
            raise Uncacheable("a bound method: its object is read when the code runs")
        elif isinstance(obj, (type, types.BuiltinFunctionType)) and _named(obj):
            self.add("named", obj.__module__, obj.__qualname__)
        else:
            raise Uncacheable(f"a value of type {kind.__qualname__} ({obj!r:.60})")

    def numpy_value(self, obj: Any) -> bool:
        numpy = sys.modules.get("numpy")
        if numpy is None:
            return False
        if isinstance(obj, numpy.ndarray):  # compiled code takes arrays only as arguments
            self.add("ndarray", obj.dtype.str, obj.shape)
        elif isinstance(obj, numpy.generic):
            self.add("numpy", obj.dtype.str, obj.tobytes().hex())
        elif isinstance(obj, numpy.ufunc):
            self.add("ufunc", obj.__name__)
        elif isinstance(obj, numpy.dtype):
            self.add("dtype", obj.str)
        else:
            return False
        return True

    def function(self, fn: types.FunctionType) -> None:
        number = self.seen.get(id(fn))
        if number is not None:
            self.add("again", number)
            return
        self.seen[id(fn)] = len(self.seen)
        self.alive.append(fn)  # its id stays its own while the walk runs
        module = getattr(fn, "__module__", None) or ""
        self.add("function", module, fn.__qualname__)
        if module.partition(".")[0] in LIBRARIES:
            return
        code = fn.__code__
        self.add(code.co_filename, *source_lines(code))
        self.value(fn.__defaults__)
        self.value(fn.__kwdefaults__)
        self.value(getattr(fn, "__astjit_static__", None))
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:
                self.add("empty cell", name)
                continue
            self.add("cell", name)
            self.value(contents)
        namespace = fn.__globals__
        for name in sorted(global_names(code)):
            if name in namespace:
                self.add("global", name)
                self.value(namespace[name])
            elif hasattr(builtins, name):
                self.add("builtin", name)
        modules = [v for v in namespace.values() if isinstance(v, types.ModuleType)
                   and v.__name__.partition(".")[0] not in LIBRARIES]
        for name in sorted(global_names(code)):  # mylib.helper: the helper's code too
            for module in modules:
                member = getattr(module, name, None)
                if isinstance(member, types.FunctionType):
                    self.add("member", module.__name__, name)
                    self.value(member)


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


def source_lines(code: types.CodeType) -> list[str]:
    """The lines of `code`'s source, from its first line to the last line of its code (as
    linecache has them, and as astjit reads them); Uncacheable without source."""
    lines = linecache.getlines(code.co_filename)
    last = max((line for c in code_objects(code) for _, _, line in c.co_lines()
                if line is not None), default=code.co_firstlineno)
    if not lines or last > len(lines):
        raise Uncacheable(f"no source for {code.co_name} in {code.co_filename}")
    return lines[code.co_firstlineno - 1:last]
