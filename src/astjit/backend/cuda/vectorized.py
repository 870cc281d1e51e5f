"""`vectorize`'s GPU and simulator targets: one thread per element of the broadcast space.

The function is compiled for its element types (api.py's pipeline, then
scalar_functions.py), under one grid-stride kernel over the contiguous flattened
arguments. The arguments broadcast on the device (`xp.broadcast_arrays`, then a
contiguous copy), so both targets share everything but the device (devices.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .csource import Source, c_type
from .devices import DEVICES
from .prelude import prelude_for
from .scalar_functions import emit_functions

KERNEL = "astjit_vectorized"
THREADS = 256


@dataclass
class VectorizedProgram:
    """The CUDA source of a vectorized function (`.source`, `.kernels`: what devices.py's
    devices compile), and the NumPy dtype of its result."""

    source: str
    kernels: dict[str, list[str]]
    result_dtype: str
    device: Any = field(default=None, repr=False)


def build_program(vectorized, types: tuple) -> VectorizedProgram:
    """The kernel of `vectorized.fn` on elements of `types`."""
    from ...api import optimize_for_backend
    from ...ir.types import NUMPY_NAMES

    typed, result = vectorized.typed(types)
    module = optimize_for_backend(typed, None)
    src = Source()
    function = emit_functions(src, module)
    params = [f"const {c_type(t)}* __restrict__ a{i}" for i, t in enumerate(types)]
    params += [f"{c_type(result)}* __restrict__ out", "int* __restrict__ astjit_error",
               "long long total"]
    src.line()
    src.open(f'extern "C" __global__ void {KERNEL}({", ".join(params)})')
    src.open("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; "
             "i += (long long)gridDim.x * blockDim.x)")
    args = [f"a{i}[i]" for i in range(len(types))] + ["astjit_error"]
    src.line(f"out[i] = {function}({', '.join(args)});")
    src.line("if (astjit_error[0]) return;")
    src.close()
    src.close()
    kinds = [f"const {c_type(t)}*" for t in types] + [f"{c_type(result)}*", "int*", "long long"]
    code = src.text()
    return VectorizedProgram(prelude_for(code) + code, {KERNEL: kinds},
                             NUMPY_NAMES[result.name])


def program_for(vectorized, types: tuple) -> VectorizedProgram:
    """The cached program (and its device) of one signature."""
    with vectorized.lock:
        program = vectorized.kernels.get(types)
    if program is None:
        program = build_program(vectorized, types)
        program.device = DEVICES[vectorized.target](program)
        with vectorized.lock:
            program = vectorized.kernels.setdefault(types, program)
    return program


def run_on_device(vectorized, args: tuple) -> Any:
    """`vectorized` called on `args`: CuPy arrays for "gpu", NumPy's for "cuda-sim"."""
    xp = _array_module(vectorized.target, args)
    arrays = xp.broadcast_arrays(*(xp.asarray(a) for a in args))
    shape = arrays[0].shape if arrays else ()
    flat = [xp.ascontiguousarray(a).ravel() for a in arrays]
    types = vectorized.element_types(flat)
    program = program_for(vectorized, types)
    device = program.device
    total = 1
    for n in shape:
        total *= n
    out = xp.empty(total, dtype=program.result_dtype)
    if total:
        error = xp.zeros(1, dtype=xp.int32)
        grid = max(1, min(device.max_blocks, -(-total // THREADS)))
        on_device = [device.to_device(a) for a in [*flat, out, error]]
        device.launch(KERNEL, grid, THREADS, [*on_device, total])
        if int(error[0]):
            return _rerun_on_cpu(vectorized, xp, args)
    return out.reshape(shape)


def _rerun_on_cpu(vectorized, xp, args: tuple) -> Any:
    """A thread found an element where Python's semantics raise: the CPU target raises
    that exception (its first element in C order), or else computes the result."""
    import numpy

    host = [xp.asnumpy(a) if hasattr(xp, "asnumpy") else numpy.asarray(a) for a in args]
    return xp.asarray(vectorized.cpu_twin()(*host))


def _array_module(target: str, args: tuple):
    import numpy

    if target == "cuda-sim":
        return numpy
    import cupy

    for a in args:
        if isinstance(a, numpy.ndarray):
            raise TypeError("vectorize(target='gpu') takes CuPy arrays, got a NumPy array; pass "
                            "cupy.asarray(x) (results come back as CuPy arrays), or use "
                            "target='cpu'")
    return cupy
