"""`build_entry`: an optimized module as a callable running on a CUDA device or the simulator.

The CUDA source is generated at once (so `f.ir(stage="cuda")` works on any
machine); the device compiles it on the first call.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy

from ...ir.core import Module
from ...ir.interp import interpreter
from ...ir.passes.dce import eliminate_dead_code
from ...ir.passes.versioning import without_versions
from .devices import DEVICES
from .host import device_steps
from .program import DeviceProgram, lower_module


class DeviceEntry:
    """The compiled form of one specialization for target "gpu" or "cuda-sim"."""

    general = True
    """No tiers: the host program takes every call (api.py's tiering is the CPU's)."""
    errors: list = []

    def __init__(self, module: Module, target: str):
        # A kernel per loop checks its indices on the device; a second version would be
        # a second kernel to compile, for no gain (ir/passes/versioning.py).
        module = eliminate_dead_code(without_versions(module))
        self.module, self.target = module, target
        self.program: DeviceProgram = lower_module(module)
        self.cuda_source = self.program.source
        self.device = None
        self.run = None
        self.lock = threading.Lock()

    def call(self, *args: Any) -> Any:
        _check_arrays(self.target, args)
        if self.run is None:
            with self.lock:
                if self.run is None:
                    self.device = DEVICES[self.target](self.program)
                    steps = device_steps(self.device, self.program.launches)
                    self.run = interpreter(self.module, steps=steps)
        on_device = [self.device.to_device(a) for a in args]
        result = self.device.to_host(self.run(on_device))
        return _callers_own(result, args, on_device)


def _callers_own(result: Any, args: tuple, on_device: list) -> Any:
    """The caller's own array where a result is an argument itself (`return x`): the
    simulator's device arrays are views of the caller's, so a view came back."""
    if isinstance(result, tuple):
        return tuple(_callers_own(r, args, on_device) for r in result)
    for a, d in zip(args, on_device):
        if a is not d and getattr(result, "base", None) is d and result.shape == a.shape \
                and result.strides == a.strides:
            return a
    return result


def build_entry(module: Module, target: str) -> DeviceEntry:
    return DeviceEntry(module, target)


def _check_arrays(target: str, args: tuple) -> None:
    """A GPU function takes CuPy arrays: a NumPy one is a TypeError saying what to do."""
    if target != "gpu":
        return
    for a in args:
        if isinstance(a, numpy.ndarray):
            raise TypeError("target='gpu' takes CuPy arrays, got a NumPy array; pass "
                            "cupy.asarray(x) (results come back as CuPy arrays), or use "
                            "target='cpu'")
