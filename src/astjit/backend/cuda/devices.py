"""The devices a `DeviceProgram` runs on: a CUDA GPU through CuPy, or the host simulator.

Both compile the same source. `CupyDevice` hands it to NVRTC through
`cupy.RawModule` (compiled once per source per process, and cached on disk by CuPy)
and launches its kernels with CuPy arrays; `SimDevice` compiles it for the host with
the system C++ compiler under `cuda_sim.h` (simulator.py) and launches its kernels
on NumPy arrays, every block and thread of the grid, barriers included.
"""
from __future__ import annotations

import functools
import threading
from typing import Any

from .program import DeviceProgram

NVRTC_OPTIONS = ("-std=c++17", "--fmad=false")
"""No fused multiply-add: elementwise results then round as NumPy's and the CPU backend's."""


class SimDevice:
    """The host simulator: slow by design, exact about what each thread computes."""

    max_blocks = 8
    """Few blocks, each run thread by thread; grid-stride loops cover the rest."""

    def __init__(self, program: DeviceProgram):
        import numpy

        from .simulator import compile_source

        self.xp = numpy
        self.module = compile_source(program.source, program.kernels)

    def launch(self, name: str, grid: int, block: int, args: list) -> None:
        self.module.launch(name, grid, block, args)


class CupyDevice:
    """The current CUDA device, through CuPy."""

    def __init__(self, program: DeviceProgram):
        import cupy

        self.xp = cupy
        self.module = _raw_module(program.source)
        properties = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        self.max_blocks = 32 * properties["multiProcessorCount"]
        self.functions: dict[str, Any] = {}
        self.lock = threading.Lock()

    def launch(self, name: str, grid: int, block: int, args: list) -> None:
        import numpy

        function = self.functions.get(name)
        if function is None:
            with self.lock:
                function = self.functions[name] = self.module.get_function(name)
        converted = [numpy.int64(a) if type(a) is int else a for a in args]
        function((grid,), (block,), tuple(converted))


@functools.cache
def _raw_module(source: str):
    import cupy

    return cupy.RawModule(code=source, options=NVRTC_OPTIONS)


DEVICES = {"gpu": CupyDevice, "cuda-sim": SimDevice}
"""The targets of `jit` this backend serves, and their devices."""
