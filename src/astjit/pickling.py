"""Pickling astjit's function objects: jitted entries, derived functions, vectorized ones.

What travels is the Python function and the options it was compiled with, never
compiled code, IR or caches: the unpickled object is fresh and compiles on its first
call in the process that unpickled it, or loads it from the disk cache where the function
was jitted with `cache=True` (the options travel: `api.unpickle_jitted` is `jit(py_func,
**options)`; astjit/cache).

How the Python function travels (`portable`):
- by reference, through pickle's own function pickling, when its module and qualified
  name find it (a module-level function, `jit(f)` of one);
- when the name finds astjit's object wrapping it instead (`@jit def f` at module
  level: the module's `f` is the entry), by reference to that object's function;
- by value otherwise (closures, lambdas, functions of `__main__`), with cloudpickle,
  which also works under plain `pickle` (multiprocessing); without cloudpickle such a
  function pickles as pickle decides (a `__main__` one by name, a local one not at all).

An object found under its own name in an importable module (`@jit def f` in a module,
a method jitted in a class body) pickles by reference to that name, so unpickling it
where it was compiled gives back the same object and its compiled code.
"""
from __future__ import annotations

import collections
import functools
import importlib
import importlib.machinery
import io
import linecache
import pickle
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

_BY_VALUE = threading.local()
"""The functions this thread is pickling by value now: a recursive function's global
names its own jitted entry, whose reduction then hands it to the pickler at work."""


def found_at(module: str | None, qualname: str | None) -> Any:
    """The object `module.qualname` names, importing the module; None where nothing does
    (a local function's `<locals>`, a module that does not import)."""
    if not module or not qualname or "<locals>" in qualname or "<lambda>" in qualname:
        return None
    try:
        obj = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001 - any failure means: not found by name
        return None
    return obj


def by_reference(obj: Any) -> str | None:
    """`obj`'s qualified name where its module finds `obj` itself there (pickle then saves
    the name); `__main__` only without cloudpickle, which saves it by value instead."""
    module = getattr(obj, "__module__", None)
    if module == "__main__" and has_cloudpickle():
        return None
    qualname = getattr(obj, "__qualname__", None)
    return qualname if found_at(module, qualname) is obj else None


def wrapped_function(obj: Any) -> Any:
    """The Python function an astjit object wraps: a jitted entry's `py_func`, a vectorized
    function's `__wrapped__` (as `functools.wraps` names it)."""
    return getattr(obj, "py_func", None) or getattr(obj, "__wrapped__", None)


def portable(fn: Any) -> Any:
    """What to pickle in place of function `fn` so that it unpickles as `fn` (see the
    module's docstring); anything not a plain Python function is returned as it is."""
    if not isinstance(fn, types.FunctionType):
        return fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    found = found_at(module, qualname)
    main = module == "__main__"
    if found is fn and not (main and has_cloudpickle()):
        return fn
    if found is not None and wrapped_function(found) is fn and not (main and has_cloudpickle()):
        return FunctionOf(module, qualname)
    if has_cloudpickle() and id(fn) not in by_value_now():
        return ByValue(fn)
    return fn


@functools.cache
def has_cloudpickle() -> bool:
    try:
        import cloudpickle  # noqa: F401
    except ImportError:
        return False
    return True


def by_value_now() -> set[int]:
    if not hasattr(_BY_VALUE, "ids"):
        _BY_VALUE.ids = set()
    return _BY_VALUE.ids


def unportable(obj: Any) -> Any:
    """The function `portable` gave `obj` for: `copy.copy` hands a reduction's arguments to
    its function as they are, where pickle gives what they unpickle as."""
    if isinstance(obj, ByValue):
        return obj.fn
    if isinstance(obj, FunctionOf):
        return function_of(obj.module, obj.qualname)
    return obj


class FunctionOf:
    """Pickles as a reference to the function of the astjit object `module.qualname`."""

    def __init__(self, module: str, qualname: str):
        self.module, self.qualname = module, qualname

    def __reduce__(self) -> tuple:
        return function_of, (self.module, self.qualname)


def function_of(module: str, qualname: str) -> Callable:
    found = found_at(module, qualname)
    if found is None:
        raise pickle.UnpicklingError(f"astjit: {module}.{qualname} is not found where unpickled")
    return wrapped_function(found)


class ByValue:
    """Pickles function `fn` by value, with cloudpickle (loaded by plain `pickle.loads`),
    and the lines of the source files of its code and its callees': astjit reads the
    source of what it compiles, where the files may not be (another machine, a notebook)."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __reduce__(self) -> tuple:
        ids = by_value_now()
        ids.add(id(self.fn))
        try:
            data, filenames = dumps_keeping_filenames(self.fn)
        finally:
            ids.discard(id(self.fn))
        sources = {name: lines for name in filenames if (lines := linecache.getlines(name))}
        return load_by_value, (data, sources)


def dumps_keeping_filenames(fn: Callable) -> tuple[bytes, set[str]]:
    """`fn` pickled by cloudpickle, whose code objects keep their file names (cloudpickle
    writes `<dynamic-code>` in their place), and the names of those files."""
    import cloudpickle

    filenames: set[str] = set()
    reduce_code = cloudpickle.Pickler.dispatch_table[types.CodeType]

    def reduce_keeping_filename(code: types.CodeType) -> tuple:
        filenames.add(code.co_filename)
        make, args = reduce_code(code)
        return make, tuple(code.co_filename if a == "<dynamic-code>" else a for a in args)

    class Pickler(cloudpickle.Pickler):
        dispatch_table = collections.ChainMap({types.CodeType: reduce_keeping_filename},
                                              cloudpickle.Pickler.dispatch_table)

    buffer = io.BytesIO()
    Pickler(buffer, protocol=pickle.DEFAULT_PROTOCOL).dump(fn)
    return buffer.getvalue(), filenames


def load_by_value(data: bytes, sources: dict[str, list[str]]) -> Callable:
    """A function pickled by value; its source files' lines given to `linecache` where
    those files cannot be read here."""
    for filename, lines in sources.items():
        if not linecache.getlines(filename):
            linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return pickle.loads(data)


def own_reduction(partial: functools.partial) -> str | tuple | None:
    """What pickle saves of a partial that is astjit's (a jitted entry, whose reduction is
    in its instance dict, or a derived function, a subclass with its own `__reduce__`), or
    None for any other partial."""
    own = getattr(partial, "__dict__", {}).get("__reduce_ex__")
    if own is not None:
        return own(pickle.DEFAULT_PROTOCOL)
    if type(partial).__reduce__ is not functools.partial.__reduce__:
        return partial.__reduce__()
    return None


def reduce_partial_for_multiprocessing(partial: functools.partial) -> str | tuple:
    """multiprocessing's reduction of a `functools.partial` (its ForkingPickler's table,
    which pickle consults before the object): astjit's own, else multiprocessing's."""
    reduced = own_reduction(partial)
    return reduced if reduced is not None else _MULTIPROCESSING_PARTIAL[0](partial)


_MULTIPROCESSING_PARTIAL: list[Callable] = []
"""multiprocessing's own reduction of partials, once ours stands in its place."""


def register_with_multiprocessing(reduction: types.ModuleType) -> None:
    """Make multiprocessing (Pool, ProcessPoolExecutor) pickle jitted entries as plain
    `pickle` does: its ForkingPickler reduces every `functools.partial` as a partial."""
    table = reduction.ForkingPickler._extra_reducers
    if table.get(functools.partial) is not reduce_partial_for_multiprocessing:
        _MULTIPROCESSING_PARTIAL[:] = [table.get(functools.partial, functools.partial.__reduce__)]
        reduction.register(functools.partial, reduce_partial_for_multiprocessing)


def register_with_dask(tokenize: types.ModuleType) -> None:
    """Dask's `tokenize` (its task keys) of jitted entries and derived functions: of what
    they pickle as. Its own rule for partials follows `.func` into the dispatcher and
    compiled code, which refer back to the entry (RecursionError)."""
    normalize = tokenize.normalize_token
    partial_rule = normalize.dispatch(functools.partial)

    def normalize_partial(partial: functools.partial) -> Any:
        reduced = own_reduction(partial)
        return partial_rule(partial) if reduced is None else normalize(("astjit", reduced))

    normalize.register(functools.partial, normalize_partial)


ENGINES = {"multiprocessing.reduction": register_with_multiprocessing,
           "dask.tokenize": register_with_dask}
"""Modules whose own handling of `functools.partial` astjit's objects need replaced, and
what registers with each; done when the module is imported, never by importing it."""


class _RegisterOnImport:
    """A `sys.meta_path` finder: when a module of ENGINES is imported, registers with it."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        register = _WAITING.pop(name, None)
        if register is None:
            return None
        if not _WAITING:
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module: types.ModuleType) -> None:
            exec_module(module)
            register(module)

        spec.loader.exec_module = exec_and_register
        return spec


_WATCHING = threading.Lock()
_WAITING: dict[str, Callable] = {}
_WATCHED: list[bool] = []


def watch_engines() -> None:
    """Called by each new jitted entry or derived function: register with each module of
    ENGINES now where it is imported, else when it is."""
    if _WATCHED:
        return
    with _WATCHING:
        if _WATCHED:
            return
        for name, register in ENGINES.items():
            module = sys.modules.get(name)
            if module is not None:
                register(module)
            else:
                _WAITING[name] = register
        if _WAITING:
            sys.meta_path.insert(0, _RegisterOnImport())
        _WATCHED.append(True)
