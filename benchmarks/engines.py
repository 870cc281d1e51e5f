"""The engines compared: CPython, astjit, Numba and C, behind one small interface.

An `Engine` turns a `Kernel` into a `Runner`: `call()` runs the kernel once
and returns its result; `time(number)` runs it `number` times and returns the
seconds per call. Making a runner is cheap and lazy; the JIT engines compile
on the first `call()`, so a fresh runner is also how compile time is measured.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import timeit
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import kernels
from kernels import Kernel

HERE = Path(__file__).resolve().parent
BUILD_DIR = HERE / "_build"
C_SOURCE = HERE / "c" / "kernels.c"
C_FLAGS = ["-O3", "-march=native", "-shared", "-fPIC", "-ffp-contract=off"]
"""-ffp-contract=off: no fused multiply-add, so C rounds exactly as Python does."""


class Runner(Protocol):
    def call(self) -> object: ...

    def time(self, number: int) -> float: ...


@dataclass(frozen=True)
class Engine:
    """A named way of running kernels; `make` may raise if the engine cannot."""

    name: str
    make: Callable[[Kernel], Runner]
    compiles: bool = False
    """True for the JIT engines, whose first call includes compilation."""


class PythonRunner:
    """A Python callable, timed with `timeit` on a literal call such as `f(1.0)`."""

    def __init__(self, fn: Callable, args: tuple):
        self.fn = fn
        self.args = args
        stmt = f"f({', '.join(repr(a) for a in args)})"
        self.timer = timeit.Timer(stmt, globals={"f": fn})

    def call(self) -> object:
        return self.fn(*self.args)

    def time(self, number: int) -> float:
        return self.timer.timeit(number) / number


class CRunner:
    """A `time_<name>` entry of the C library: the loop and the clock are inside C."""

    def __init__(self, lib: ctypes.CDLL, kernel: Kernel):
        self.entry = getattr(lib, f"time_{kernel.name}")
        self.result_ctype = ctypes.c_double if kernel.returns is float else ctypes.c_int64
        arg_ctypes = [
            ctypes.c_double if isinstance(a, float) else ctypes.c_int64 for a in kernel.args
        ]
        self.entry.argtypes = [*arg_ctypes, ctypes.c_int64, ctypes.POINTER(self.result_ctype)]
        self.entry.restype = ctypes.c_double
        self.args = kernel.args

    def call(self) -> object:
        out = self.result_ctype()
        self.entry(*self.args, 1, ctypes.byref(out))
        return out.value

    def time(self, number: int) -> float:
        out = self.result_ctype()
        return self.entry(*self.args, number, ctypes.byref(out)) / number


def make_astjit(kernel: Kernel) -> Runner:
    """`astjit.jit(fn)`: astjit compiles the plain Python callees itself."""
    import astjit

    return PythonRunner(astjit.jit(kernel.fn), kernel.args)


def make_numba(kernel: Kernel) -> Runner:
    """`numba.njit(fn)`, with the helpers it calls (and itself, for recursion) njit-ed too.

    Numba cannot call plain Python functions, so the kernel and every helper are
    re-created over a private copy of the module globals in which their names
    are bound to fresh dispatchers: the same as decorating them with @njit.
    """
    import numba

    namespace = dict(vars(kernels))
    for fn in (kernel.fn, *kernels.HELPERS):
        copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__)
        namespace[fn.__name__] = numba.njit(copy)
    return PythonRunner(namespace[kernel.fn.__name__], kernel.args)


def build_c_library() -> ctypes.CDLL:
    """Compile c/kernels.c with gcc into _build/ and load it."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise RuntimeError("gcc not found")
    BUILD_DIR.mkdir(exist_ok=True)
    library = BUILD_DIR / "kernels.so"
    command = [gcc, *C_FLAGS, str(C_SOURCE), "-o", str(library)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"gcc failed: {done.stderr.strip()[:200]}")
    return ctypes.CDLL(str(library))


def c_engine() -> Engine:
    """The C engine; the library is built on first use, and a failed build is remembered."""
    state: dict = {}

    def make(kernel: Kernel) -> Runner:
        if "lib" not in state:
            try:
                state["lib"] = build_c_library()
            except (OSError, RuntimeError) as error:
                state["lib"] = error
        if isinstance(state["lib"], Exception):
            raise state["lib"]
        return CRunner(state["lib"], kernel)

    return Engine("C", make)


def all_engines() -> list[Engine]:
    """CPython first: its results are the reference the others are checked against."""
    return [
        Engine("CPython", lambda kernel: PythonRunner(kernel.fn, kernel.args)),
        Engine("astjit", make_astjit, compiles=True),
        Engine("Numba", make_numba, compiles=True),
        c_engine(),
    ]
