"""What the GPU backend's tests share: NVRTC's verdict on a generated source, and a count
of the kernels the simulator launches."""
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
