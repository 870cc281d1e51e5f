"""`build_entry`: a typed Module to a CPython builtin function running native code.

The pipeline: `codegen.emit_module` (graphs -> LLVM IR: the first tier, or
the general one), `wrapper.emit_wrapper` (the METH_FASTCALL entry, in the same
LLVM module, so that LLVM inlines the graph into it where it optimizes the
module whole), `engine().compile_ir` (LLVM's pipelines and machine code; array
code in two parts: `is_array_module`), then
`PyCFunction_NewEx` on a PyMethodDef pointing at the wrapper. The builtin's
`__self__` is an `EntryPins` that owns the PyMethodDef, the fallback, the
error handler and the general-tier callable (whose addresses the machine code
embeds), and the compiled code itself (`CompiledModule`, whose machine code is
unmapped when it is collected), so they live exactly as long as the builtin does. When some error
site reports numbers (an array index out of bounds), the wrapper calls an
`ErrorReporter` around the handler, which puts the numbers into the message
of the exception the handler raises.

A returned array (or a tuple holding some) is an owned reference the wrapper
hands to the caller: the ndarray compiled code made or retained, or a new
view of it (see `wrapper`).
"""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the code generator and LLVM are imported by `build_entry`: a process
    # loading cached code (astjit/cache) makes builtins with `make_builtin` and needs neither
    from ....ir.core import Module
    from ..codegen import ErrorSite, LoweredModule
    from ..jit.engine import CompiledModule
    from .trees import TreeBoundary

METH_FASTCALL = 0x0080
METH_KEYWORDS = 0x0002


class PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.argtypes = [ctypes.POINTER(PyMethodDef), ctypes.py_object, ctypes.c_void_p]
_new_builtin.restype = ctypes.py_object


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


@dataclass
class CompiledEntry:
    """A compiled specialization: the builtin to call and every text stage behind it."""

    call: Callable
    """The builtin function: call it like the Python function, positionally."""
    llvm_ir: str
    """LLVM IR as emitted (graphs and wrapper), before optimization."""
    errors: list[ErrorSite]
    """The error sites: status k reports `errors[k - 1]` = (exc, message, loc)."""
    compiled: CompiledModule
    error_details: dict[int, str] = field(default_factory=dict)
    """Status -> `str.format` template of the fuller message of the sites that report
    numbers (`ErrorReporter` fills it in); most sites have none."""
    general: bool = True
    """Whether this is the general tier (every version of every nest), not the first."""
    trees: Callable | None = None
    """For a signature taking containers (`TreeBoundary.arguments`): the builtin taking the
    containers themselves (`call` takes their leaves)."""

    @property
    def llvm_ir_optimized(self) -> str:
        return self.compiled.llvm_ir_optimized

    @property
    def asm(self) -> str:
        return self.compiled.asm


def build_entry(module: Module, fallback: Callable, error_handler: Callable,
                general: Callable | None = None,
                trees: TreeBoundary | None = None) -> CompiledEntry:
    """Compile a typed Module's entry graph into a builtin with CPython's fast calling convention.

    Calls the builtin does not take exactly (other types, keywords, ...) go to
    `fallback(*args, **kwargs)`; a compiled error calls `error_handler(status)`,
    which should raise the exception of `errors[status - 1]`.

    With `general`, the first tier when the function writes into none of its
    arguments and calls no Python: array nests in their fast versions only, and a call one does not
    fit goes, untouched, to `general(*args)`, which should run it on the general
    tier (`emitter.FunctionEmitter.fast_only`). Without, the general tier.
    """
    from ....cache import symbols
    from ....ir.analysis import calls_python, written_parameters
    from ..codegen import emit_module
    from ..jit.engine import engine
    from ..shared import found_imports
    from . import pyapi
    from .wrapper import emit_wrapper

    first_tier = general is not None and not written_parameters(module) \
        and not calls_python(module)  # a call that left part-way would run its callbacks twice
    lowered = emit_module(module, general=not first_tier)
    if lowered.error_table.deoptimize is None:
        first_tier, general = False, None  # nothing to leave out: this is the general tier
    if lowered.error_details:
        error_handler = ErrorReporter(error_handler, lowered.errors, lowered.error_details)
    if trees is not None and trees.arguments is not None:
        trees.pins = EntryPins(None, trees.fallback, error_handler, trees.general, trees)
    wrapper_name = emit_wrapper(lowered, fallback, error_handler, general if first_tier else None,
                                trees)
    # The wrapper is the only way in: O3 inlines the graph into it and drops the copy.
    lowered.entry_function.linkage = "internal"
    llvm_ir = lowered.text
    pyapi.register_functions()
    symbols.provide(found_imports())  # the runtime cache's batches, linked by compile_ir
    compiled = engine().compile_ir(llvm_ir, arrays=is_array_module(lowered))
    call = make_builtin(compiled, wrapper_name, module.entry,
                        EntryPins(None, fallback, error_handler, general, trees))
    taking = None
    if trees is not None and trees.pins is not None:
        taking = make_builtin(compiled, wrapper_name, module.entry, trees.pins)
    return CompiledEntry(call, llvm_ir, lowered.errors, compiled, lowered.error_details,
                         not first_tier, taking)


def is_array_module(lowered: LoweredModule) -> bool:
    """Whether a module takes or returns arrays, which `Engine.compile_ir` compiles in two
    parts: loops vectorized, glue lightly (split.py). Scalar code keeps O3 throughout:
    its straight-line arithmetic is a hot path."""
    from ..lltypes import contains_array

    graph = lowered.source.entry_graph
    return any(contains_array(v.type) for v in [*graph.params, *graph.outputs])


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
    return _new_builtin(ctypes.byref(pins.method_def), pins, None)
