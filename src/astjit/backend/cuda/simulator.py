"""Run generated CUDA C kernels on the host: the "cuda-sim" target.

Most machines running the tests, CI included, have no GPU, yet the arithmetic of every GPU kernel
must be checked. So the very source NVRTC would take is also compiled for the host: after
cuda_sim.h (CUDA's built-ins), followed by one launch trampoline per kernel, built by the host C++
compiler ($CXX, else g++) into a shared library loaded with ctypes, linked with the scheduler
(cuda_sim_runtime.cpp: each block's threads run as fibers, so that barriers and warp shuffles behave
as on a GPU). It is slow by design: it checks results, not speed. Each CUDA thread has a 64 KiB
stack (cuda_sim_runtime.cpp's kStackBytes); a kernel needing more, or indexing out of bounds,
crashes the process.

Modules are cached per process and on disk ($ASTJIT_SIM_CACHE, else ~/.cache/astjit/cuda-sim),
keyed by a hash of all that decides the library: source, kernel signatures, header, flags and
compiler version. A library is written under a temporary name and renamed into place, so
concurrent processes never load a partial one. What every module shares is built once per cache
folder: the scheduler as an object file that each module links (compiling it was half of a
module's build), and the header precompiled (a g++ .gch beside a copy of the header: reading it
was half of the rest).
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import operator
import os
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HEADER = Path(__file__).with_name("cuda_sim.h")
RUNTIME = Path(__file__).with_name("cuda_sim_runtime.cpp")

CXX_FLAGS = (
    "-std=c++17", "-O1", "-fPIC", "-shared",
    "-fwrapv",              # signed integer overflow wraps, as generated code assumes (and GPUs do)
    "-ffp-contract=off",    # no fused multiply-add: each operation rounds, as on the CPU backend and
                            # under NVRTC's --fmad=false
    "-fno-fast-math",
    "-fvisibility=hidden",  # each module keeps its own simulator state; only trampolines are exported
)


class _Complex64(ctypes.Structure):
    """complexes.h's astjit_c64 (passed by value): its parts."""
    _fields_ = [("re", ctypes.c_float), ("im", ctypes.c_float)]


class _Complex128(ctypes.Structure):
    """complexes.h's astjit_c128."""
    _fields_ = [("re", ctypes.c_double), ("im", ctypes.c_double)]


# C type -> (ctypes type, NumPy dtype) for kernel parameters (LP64: long is 64 bits).
_TYPES = {
    "bool": (ctypes.c_bool, np.bool_),
    "signed char": (ctypes.c_byte, np.int8),
    "unsigned char": (ctypes.c_ubyte, np.uint8),
    "short": (ctypes.c_short, np.int16),
    "unsigned short": (ctypes.c_ushort, np.uint16),
    "int": (ctypes.c_int, np.int32),
    "unsigned": (ctypes.c_uint, np.uint32),
    "long": (ctypes.c_long, np.int64),
    "unsigned long": (ctypes.c_ulong, np.uint64),
    "long long": (ctypes.c_longlong, np.int64),
    "unsigned long long": (ctypes.c_ulonglong, np.uint64),
    "float": (ctypes.c_float, np.float32),
    "double": (ctypes.c_double, np.float64),
    "astjit_c64": (_Complex64, np.complex64),
    "astjit_c128": (_Complex128, np.complex128),
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict"}
_MAX_BLOCK = (1024, 1024, 64)
_MAX_GRID = (2**31 - 1, 65535, 65535)

_modules: dict[str, SimModule] = {}
_modules_lock = threading.Lock()


class SimCompileError(RuntimeError):
    """The host compiler rejected a module: its message, then the numbered CUDA source."""


@dataclass(frozen=True)
class Param:
    declared: str  # as the kernel declares it, e.g. "const double* __restrict__"
    base: str      # the scalar or pointee type, e.g. "double"
    pointer: bool

    @property
    def c_type(self) -> str:
        """The type the trampoline unpacks (qualifiers dropped: they convert implicitly)."""
        return self.base + "*" * self.pointer

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_TYPES[self.base][1])


def parse_param(declared: str) -> Param:
    words = [w for w in declared.replace("*", " * ").split() if w not in _QUALIFIERS]
    base = " ".join(w for w in words if w != "*").replace("unsigned int", "unsigned")
    stars = words.count("*")
    if base not in _TYPES or stars > 1:
        raise ValueError(f"cuda-sim: unsupported kernel parameter type {declared!r}")
    return Param(declared, base, stars == 1)


def compile_source(source: str, kernels: dict[str, list[str]]) -> SimModule:
    """The module for `source`, whose kernels (name -> parameter C types) get launch trampolines."""
    params = {name: tuple(parse_param(t) for t in types) for name, types in kernels.items()}
    for name in params:
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f"cuda-sim: {name!r} is not a kernel name")
    unit = _translation_unit(source, params)
    compiler = _compiler()
    key = hashlib.sha256("\0".join((unit, _fixed_key(compiler))).encode()).hexdigest()
    with _modules_lock:
        if key not in _modules:
            _modules[key] = _load(_cache_dir() / f"{key}.so", unit, source, params)
        return _modules[key]


class SimModule:
    """A compiled module: launches its kernels on the host, one launch at a time."""

    def __init__(self, path: Path, params: dict[str, tuple[Param, ...]], compiled: bool,
                 compile_seconds: float):
        self.path = path
        self.compiled = compiled  # built by the compiler in this process (else read from the disk cache)
        self.compile_seconds = compile_seconds
        self.params = params
        lib = ctypes.CDLL(str(path))
        self._error = lib.astjit_sim_error
        self._error.restype = ctypes.c_char_p
        self._launchers = {name: getattr(lib, f"astjit_launch_{name}") for name in params}
        for launcher in self._launchers.values():
            launcher.argtypes = [ctypes.POINTER(ctypes.c_uint)] * 2 + [ctypes.POINTER(ctypes.c_void_p)]
            launcher.restype = ctypes.c_int
        self._lock = threading.Lock()

    def launch(self, name: str, grid, block, args: list) -> None:
        """Runs kernel `name` over the whole grid; RuntimeError if it deadlocks or misuses a barrier."""
        if name not in self.params:
            raise ValueError(f"cuda-sim: the module has no kernel {name!r}")
        params = self.params[name]
        if len(args) != len(params):
            raise TypeError(f"cuda-sim: kernel {name!r} takes {len(params)} arguments, got {len(args)}")
        values = [_argument(name, i, p, a) for i, (p, a) in enumerate(zip(params, args))]
        argv = (ctypes.c_void_p * len(values))(*(ctypes.addressof(v) for v in values))
        grid3, block3 = _dims(grid, "grid", _MAX_GRID), _dims(block, "block", _MAX_BLOCK)
        if block3[0] * block3[1] * block3[2] > 1024:
            raise ValueError(f"cuda-sim: a block has at most 1024 threads, not {block3}")
        with self._lock:
            if self._launchers[name]((ctypes.c_uint * 3)(*grid3), (ctypes.c_uint * 3)(*block3), argv):
                raise RuntimeError(f"cuda-sim: kernel {name!r}, {self._error().decode()}")


def _argument(kernel: str, index: int, param: Param, value):
    """`value` as a ctypes object of the parameter's type (an array as its data pointer)."""
    where = f"cuda-sim: kernel {kernel!r} argument {index} ({param.declared})"
    if param.pointer:
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{where} must be a NumPy array, not {type(value).__name__}")
        if value.dtype != param.dtype:
            raise TypeError(f"{where} must be an array of {param.dtype}, not {value.dtype}")
        return ctypes.c_void_p(value.ctypes.data)
    if isinstance(value, np.ndarray) and value.ndim:
        raise TypeError(f"{where} must be a scalar, not an array")
    c_type = _TYPES[param.base][0]
    if param.base == "bool":
        return c_type(bool(value))
    if param.dtype.kind == "f":
        return c_type(float(value))
    if param.dtype.kind == "c":
        z = complex(value)
        return c_type(z.real, z.imag)
    number = operator.index(value)
    info = np.iinfo(param.dtype)
    if not info.min <= number <= info.max:
        raise OverflowError(f"{where}: {number} is out of range")
    return c_type(number)


def _dims(value, what: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"cuda-sim: {what} has 1 to 3 dimensions, not {len(dims)}")
    dims = tuple(operator.index(d) for d in dims) + (1,) * (3 - len(dims))
    if not all(1 <= d <= limit for d, limit in zip(dims, limits)):
        raise ValueError(f"cuda-sim: {what} {dims} is outside 1..{limits}")
    return dims


def _translation_unit(source: str, params: dict[str, tuple[Param, ...]]) -> str:
    """The header, the source (numbered from line 1, as NVRTC would number it) and the trampolines."""
    return (f'#include "cuda_sim.h"\n#line 1 "kernel.cu"\n{source}\n#line 1 "astjit_launch.cpp"\n'
            + "".join(_trampoline(name, ps) for name, ps in params.items()))


def _trampoline(name: str, params: tuple[Param, ...]) -> str:
    """astjit_launch_<name>(grid, block, args): args[i] points at the i-th argument's value."""
    unpack = "".join(f"  {p.c_type} a{i} = *static_cast<{p.c_type}*>(args[{i}]);\n"
                     for i, p in enumerate(params))
    call = ", ".join(f"a{i}" for i in range(len(params)))
    return (f"CUDA_SIM_EXPORT int astjit_launch_{name}(const unsigned* grid, const unsigned* block,"
            f" void** args) {{\n{unpack}"
            f"  return cuda_sim::launch(grid, block, [&] {{ {name}({call}); }});\n}}\n")


def _load(path: Path, unit: str, source: str, params) -> SimModule:
    if path.exists():
        return SimModule(path, params, compiled=False, compile_seconds=0.0)
    start = time.perf_counter()
    _build(path, unit, source)
    return SimModule(path, params, compiled=True, compile_seconds=time.perf_counter() - start)


def _build(path: Path, unit: str, source: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(suffix=".so.part", dir=path.parent)
    os.close(fd)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cpp = Path(tmp, "module.cpp")
            cpp.write_text(unit)
            result = subprocess.run([_compiler(), *CXX_FLAGS, *_include_flags(), str(cpp),
                                     str(_runtime_object(_cache_dir(), _compiler())), "-o", partial],
                                    capture_output=True, text=True)
        if result.returncode:
            numbered = "\n".join(f"{n:4} | {line}" for n, line in enumerate(source.splitlines(), 1))
            raise SimCompileError(f"cuda-sim: {_compiler()} rejected the CUDA source:\n"
                                  f"{result.stderr.strip()}\n\nkernel.cu:\n{numbered}")
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _include_flags() -> list[str]:
    """Where the compiler finds cuda_sim.h: first the folder of its precompiled form, where there is
    one. Parsing the header is half of a module's build, and tests build hundreds of modules."""
    pch = _precompiled_header(_cache_dir(), _compiler())
    return ["-I", str(pch.parent)] * (pch is not None) + ["-I", str(HEADER.parent)]


@functools.cache
def _precompiled_header(cache: Path, compiler: str) -> Path | None:
    """cuda_sim.h.gch, built once per cache folder, header, flags and compiler, beside a copy of the
    header it was made from; None if the compiler cannot build one. g++ looks for `cuda_sim.h.gch`
    in each include folder before `cuda_sim.h`, and takes it only where it was built with the
    compile's flags, otherwise reading the copy: so a compiler without precompiled headers (clang
    reads none on #include) builds the same library. The folder is named by a hash of what the .gch
    depends on, since g++ does not check that the header is unchanged."""
    folder = _fixed_folder(cache, compiler)
    path = folder / f"{HEADER.name}.gch"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    mine = f"{os.getpid()}-{threading.get_ident()}.part"  # other processes may build it meanwhile
    header, gch = folder / f"{HEADER.name}.{mine}", folder / f"{path.name}.{mine}"
    try:
        header.write_text(_header())
        os.replace(header, folder / HEADER.name)
        flags = [f for f in CXX_FLAGS if f != "-shared"]
        built = subprocess.run([compiler, *flags, "-x", "c++-header", str(folder / HEADER.name),
                                "-o", str(gch)], capture_output=True).returncode == 0
        if built:
            os.replace(gch, path)
    except OSError:
        built = False
    finally:
        header.unlink(missing_ok=True)
        gch.unlink(missing_ok=True)
    return path if built else None


def _runtime_object(cache: Path, compiler: str) -> Path:
    """cuda_sim_runtime.o, compiled once per cache folder, header, runtime source, flags and
    compiler, with the modules' flags; each module's build links it. Looked for at each build,
    so that one deleted meanwhile (a cleared cache) is built again."""
    path = _fixed_folder(cache, compiler) / "cuda_sim_runtime.o"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        flags = [f for f in CXX_FLAGS if f != "-shared"]
        result = subprocess.run([compiler, *flags, "-c", "-I", str(HEADER.parent), str(RUNTIME),
                                 "-o", str(partial)], capture_output=True, text=True)
        if result.returncode:
            raise SimCompileError(f"cuda-sim: {compiler} rejected {RUNTIME.name}:\n{result.stderr.strip()}")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def _fixed_folder(cache: Path, compiler: str) -> Path:
    """Where the parts every module shares are built: named by a hash of what they depend on."""
    return cache / f"shared-{hashlib.sha256(_fixed_key(compiler).encode()).hexdigest()[:32]}"


def _fixed_key(compiler: str) -> str:
    """All that decides a module's library besides its own source: header, runtime, flags, compiler."""
    return "\0".join((_header(), _runtime_source(), compiler, *CXX_FLAGS, _compiler_version(compiler)))


def _cache_dir() -> Path:
    return Path(os.environ.get("ASTJIT_SIM_CACHE") or Path.home() / ".cache" / "astjit" / "cuda-sim")


def _compiler() -> str:
    return os.environ.get("CXX", "g++")


@functools.cache
def _header() -> str:
    return HEADER.read_text()


@functools.cache
def _runtime_source() -> str:
    return RUNTIME.read_text()


@functools.cache
def _compiler_version(compiler: str) -> str:
    try:
        return subprocess.run([compiler, "--version"], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"cuda-sim needs a C++ compiler ({compiler}, set by $CXX): {e}") from e
