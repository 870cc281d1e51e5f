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
import types
from typing import Any

import numpy

from .program import DeviceProgram

NVRTC_OPTIONS = ("-std=c++17", "--fmad=false")
"""No fused multiply-add: elementwise results then round as NumPy's and the CPU backend's."""


class SimArray(numpy.ndarray):
    """A NumPy array standing for device memory. The simulator's kernels take only these,
    so a host array reaching a kernel, which on a GPU would be an error, fails here too."""


class SimDevice:
    """The host simulator: slow by design, exact about what each thread computes."""

    max_blocks = 8
    """Few blocks, each run thread by thread; grid-stride loops cover the rest."""
    xp = types.SimpleNamespace(
        empty=lambda shape, dtype: numpy.empty(shape, dtype).view(SimArray),
        zeros=lambda shape, dtype: numpy.zeros(shape, dtype).view(SimArray))

    def __init__(self, program: DeviceProgram):
        from .simulator import compile_source

        self.module = compile_source(program.source, program.kernels)

    def launch(self, name: str, grid: int, block: int, args: list) -> None:
        for a in args:
            if isinstance(a, numpy.ndarray) and not isinstance(a, SimArray):
                raise AssertionError(f"a host array reached kernel {name}: the host program "
                                     "must move arrays to the device first")
        self.module.launch(name, grid, block, args)

    @staticmethod
    def to_device(value: Any) -> Any:
        return value.view(SimArray) if type(value) is numpy.ndarray else value

    @staticmethod
    def to_host(value: Any) -> Any:
        """A result as the caller gets it: a NumPy array (a view of the same memory)."""
        if isinstance(value, tuple):
            return tuple(SimDevice.to_host(v) for v in value)
        return value.view(numpy.ndarray) if isinstance(value, SimArray) else value


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
        function = self.functions.get(name)
        if function is None:
            with self.lock:
                function = self.functions[name] = self.module.get_function(name)
        converted = [numpy.int64(a) if type(a) is int else a for a in args]
        function((grid,), (block,), tuple(converted))

    def to_device(self, value: Any) -> Any:
        return self.xp.asarray(value) if isinstance(value, numpy.ndarray) else value

    @staticmethod
    def to_host(value: Any) -> Any:
        """Results stay on the device: CuPy arrays."""
        return value


@functools.cache
def _raw_module(source: str):
    import cupy

    return cupy.RawModule(code=source, options=NVRTC_OPTIONS)


DEVICES = {"gpu": CupyDevice, "cuda-sim": SimDevice}
"""The targets of `jit` this backend serves, and their devices."""
