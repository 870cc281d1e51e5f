"""The GPU backend: optimized graphs -> CUDA C kernels, launched from a host program.

- `build_entry(module, target) -> DeviceEntry` (entry.py): the whole path, for target
  "gpu" (CuPy) or "cuda-sim" (the simulator).
- `lower_module(module) -> DeviceProgram` (program.py): the module as one CUDA source.

Layers, each importing only those below it:
- `csource` (the core: C types, literals, the source builder), `prelude` (NumPy's
  semantics as device functions), `scalars` (a kernel region's ops from their `CExpr`s);
- what kernels share: `space` (parameters, coordinates, strided loads);
- lowerings, none importing another's internals: `elementwise`, `reductions`, `rows`,
  `element_loops`, and `scalar_functions` (vectorize's);
- `program` (the module's source), `host` and `loop_launch` (the host program's launches),
  `devices` (CuPy, the simulator: `simulator` with `cuda_sim.h`), `entry`, `vectorized`.

docs/gpu.md has the design.
"""
