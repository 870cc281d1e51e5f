"""What the GPU backend's tests share: NVRTC's verdict on a generated source, a count
of the kernels the simulator launches, and the device targets to run on with their
arrays."""
import numpy as np
import pytest

NVRTC_OPTIONS = ["-arch=compute_80", "-std=c++17", "--fmad=false"]


def compile_to_ptx(source: str) -> bytes:
    """The PTX NVRTC makes of `source`; an AssertionError with NVRTC's log if it refuses."""
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    program = nvrtc.createProgram(source, "astjit.cu", [], [])
    try:
        nvrtc.compileProgram(program, NVRTC_OPTIONS)
        return nvrtc.getPTX(program)
    except Exception:
        raise AssertionError("NVRTC rejected:\n" + nvrtc.getProgramLog(program) + "\n" + source) \
            from None
    finally:
        nvrtc.destroyProgram(program)


def count_launches(monkeypatch) -> list[str]:
    """The names of the kernels the simulator launches from now on, in order."""
    from astjit.backend.cuda import devices

    names = []
    launch = devices.SimDevice.launch

    def counting(self, name, grid, block, args):
        names.append(name)
        return launch(self, name, grid, block, args)
    monkeypatch.setattr(devices.SimDevice, "launch", counting)
    return names


def _has_cuda_device() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, or no device: the simulator alone
        return False


DEVICE_TARGETS = ["cuda-sim"] + (["gpu"] if _has_cuda_device() else [])
"""The targets a GPU test runs on: the simulator everywhere, a real device where there
is one (so that a machine without one runs, and skips, nothing more)."""


def on_target(value, target: str):
    """An argument for `target`: NumPy arrays as CuPy arrays for "gpu" (in tuples too)."""
    if isinstance(value, tuple):
        return tuple(on_target(v, target) for v in value)
    if target == "gpu" and isinstance(value, np.ndarray):
        import cupy

        return cupy.asarray(value)
    return value


def to_host(value):
    """A result back as NumPy: CuPy arrays copied to the host (in tuples too)."""
    if isinstance(value, tuple):
        return tuple(to_host(v) for v in value)
    if type(value).__module__.startswith("cupy"):
        import cupy

        return cupy.asnumpy(value)
    return value
