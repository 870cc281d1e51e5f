"""The CPU backend: typed graphs -> LLVM IR -> native code behind a CPython builtin.

- `build_entry(module, fallback, error_handler) -> CompiledEntry`: the whole path.
- `emit_module(module) -> LoweredModule`: typed graphs to llvmlite IR (codegen).
- `engine()`: the process-wide host TargetMachines, pipelines and MCJIT engines.

Layers, each importing only those below it:
- `emitter` (the core: builder, values, error table and sites, failure exit,
  resources, tiering), with `lltypes`, `compare` and `messages` (IR helpers,
  CPython's messages), `vecmath` (libmvec's vector math, which the emitter's math
  calls use), `shared` (functions every module shares) and `loop_metadata`;
- what lowerings share: `array_layout` (the array struct: `dim`, `element_pointer`,
  item sizes; NumPy's object layout: `numpy_layout`, `accepts`), `nests` (counted loops,
  loop nests), `owned` (the owned list: the array references an invocation
  holds, a resource; new references and immediate releases), `new_arrays` (new arrays
  with NumPy's checks, fills), `copies` (array structs,
  strided copies), `conversions` (casts), `divmod_power` (floor division, modulo, integer
  powers), `kernel` (loop nests over a broadcast space), `reduction_nests` (the reduction
  nests fused and rowwise build on), `blas_calls` (BLAS operands and calls for linalg);
- lowerings, none importing another's internals: `arith`, `scalars`, `arrays`, `allocation`,
  `views`, `tapes`, `rowwise`, `fused`, `linalg`, `adjoints`;
- `codegen`: structural ops, leaf dispatch, the routine table;
- `runtime/`: the CPython/NumPy ABI (`pyapi`, `numpy_api`, `blas`, `stack`,
  `ndarrays` (arrays at the boundary), `trees` (containers at the boundary), `wrapper`) and
  `entry` (build_entry);
- `jit/`: `engine` (MCJIT, the shared runtime module) and `split`.
"""
import importlib

_EXPORTS = {
    "CompiledEntry": "runtime.entry",
    "CompiledModule": "jit.engine",
    "ErrorSite": "codegen",
    "LoweredModule": "codegen",
    "TreeBoundary": "runtime.trees",
    "build_entry": "runtime.entry",
    "emit_module": "codegen",
    "engine": "jit.engine",
    "takes_natively": "runtime.trees",
}
"""Name -> the module defining it, imported on first use: loading cached machine code
(astjit/cache) needs the engine and the runtime's C APIs, not the code generator, whose
import costs more than the load."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
