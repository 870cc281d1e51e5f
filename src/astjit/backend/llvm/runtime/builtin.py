"""A CPython builtin function object around compiled machine code, made with `_ctypes` alone.

`make_builtin` calls `PyCFunction_NewEx` on a PyMethodDef pointing at the wrapper (the
METH_FASTCALL | METH_KEYWORDS function `wrapper.emit_wrapper` emits). The builtin's
`__self__` is an `EntryPins` that owns the PyMethodDef, the fallback, the error handler
and the general-tier callable (whose addresses the machine code embeds, or whose pin
symbols it was linked to), and the compiled code itself (whose machine code is unmapped
when it is collected), so they live exactly as long as the builtin does. When some error
site reports numbers (an array index out of bounds), the wrapper calls an
`ErrorReporter` around the handler, which puts the numbers into the message of the
exception the handler raises.

Apart from entry.py (the compile path) because the disk cache's loader makes builtins
around code it linked itself (astjit/cache/entries.py), in processes that import neither
the code generator nor LLVM: this module imports nothing of astjit's but cabi.py (no
ctypes).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import cabi

if TYPE_CHECKING:
    from ..codegen import ErrorSite
    from ..jit.engine import CompiledModule
    from .trees import TreeBoundary

METH_FASTCALL = 0x0080
METH_KEYWORDS = 0x0002


class PyMethodDef(cabi.Structure):
    _fields_ = [("ml_name", cabi.c_char_p), ("ml_meth", cabi.c_void_p),
                ("ml_flags", cabi.c_int), ("ml_doc", cabi.c_char_p)]


_new_builtin = cabi.process_function("PyCFunction_NewEx", cabi.py_object, cabi.c_void_p,
                                     cabi.py_object, cabi.c_void_p, python_api=True)


class EntryPins:
    """What a compiled entry's machine code points at, kept alive by the builtin."""

    __slots__ = ("code", "error_handler", "fallback", "general", "method_def", "trees")

    def __init__(self, method_def: PyMethodDef | None, fallback: Any, error_handler: Any,
                 general: Any = None, trees: TreeBoundary | None = None):
        self.method_def = method_def
        self.fallback = fallback
        self.error_handler = error_handler
        self.general = general
        self.trees = trees
        self.code: CompiledModule | None = None
        """The machine code the builtin runs (set by `make_builtin`)."""

    def __repr__(self) -> str:
        return f"<astjit entry {self.method_def.ml_name.decode()}>"



class ErrorReporter:
    """The handler the wrapper calls when some sites report numbers: `(status, *values)`.

    It calls `error_handler(status)`. For a site with a detail template, the
    exception that raises has the site's fixed message (wherever the handler put
    it in its text) replaced by the template filled with the numbers:
    "index out of bounds for axis 0" becomes NumPy's "index 7 is out of bounds
    for axis 0 with size 5". What the handler returns is returned.
    """

    __slots__ = ("details", "errors", "handler")

    def __init__(self, handler: Callable, errors: list[ErrorSite], details: dict[int, str]):
        self.handler = handler
        self.errors = errors
        self.details = details

    def __call__(self, status: int, *values: int) -> Any:
        detail = self.details.get(status)
        if detail is None:
            return self.handler(status)
        try:
            return self.handler(status)
        except Exception as exc:
            text = exc.args[0] if len(exc.args) == 1 else None
            message = self.errors[status - 1].message
            if isinstance(text, str) and message in text:
                exc.args = (text.replace(message, detail.format(*values), 1),)
            raise

    def __repr__(self) -> str:
        return f"ErrorReporter({self.handler!r})"


def make_builtin(compiled: CompiledModule, wrapper: str, name: str, pins: EntryPins) -> Callable:
    """A builtin function object calling `compiled`'s METH_FASTCALL | METH_KEYWORDS function
    `wrapper`, its `self` `pins` (which gets the PyMethodDef, and keeps `compiled`)."""
    doc = f"astjit-compiled {name}".encode()
    pins.code = compiled
    pins.method_def = PyMethodDef(name.encode(), compiled.addresses[wrapper],
                                  METH_FASTCALL | METH_KEYWORDS, doc)
    return _new_builtin(cabi.addressof(pins.method_def), pins, None)
