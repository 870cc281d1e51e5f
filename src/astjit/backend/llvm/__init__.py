"""The CPU backend: typed graphs -> LLVM IR -> native code behind a CPython builtin.

- `build_entry(module, fallback, error_handler) -> CompiledEntry`: the whole path.
- `emit_module(module) -> LoweredModule`: typed graphs to llvmlite IR (codegen).
- `engine()`: the process-wide host TargetMachines, pipelines and MCJIT engines.

Modules: `codegen` (graphs and structural ops), `routines` / `arith` / `tapes`
/ `arrays` / `memory` (the table's Routine lowerings and error checks; tapes on
the C heap and who frees them; array elements and shapes, NumPy's array layout
and which ndarrays the entry takes; arrays compiled code makes and the
references each invocation owns), `numpy_api` (NumPy's C API table, verified),
`compare` and `lltypes` (IR helpers), `outline` (the setup code of array ops as
functions each module shares),
`messages` (CPython's error messages), `stack` (the recursion guard), `engine`, `pyapi` + `wrapper` (the
METH_FASTCALL entry in LLVM), `entry` (build_entry).
"""
from .codegen import ErrorSite, LoweredModule, emit_module
from .engine import CompiledModule, engine
from .entry import CompiledEntry, build_entry

__all__ = [
           "CompiledEntry",
           "CompiledModule",
           "ErrorSite",
           "LoweredModule",
           "build_entry",
           "emit_module",
           "engine",
]
