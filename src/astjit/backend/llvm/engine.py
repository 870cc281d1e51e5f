"""The process-wide LLVM engine: host target machine, O3 pipeline, MCJIT.

Created once, on first use (`engine()`), and kept: initializing the native
target, building the host TargetMachine and the MCJIT instance costs far more
than compiling a small function. `compile_ir` then parses one module's IR,
runs LLVM's default O3 pipeline (new pass manager, loop and SLP vectorization
on) for the host CPU, adds the module to MCJIT and returns the addresses of
its external functions. Compiled code lives as long as the process.

Symbols: the C math functions that lowered code calls (directly or through
intrinsics such as `llvm.sin`) are registered with `add_symbol` from the C
library's own addresses, so resolution never depends on how Python was linked;
so are malloc, realloc and free (tapes), as the process itself resolves them.
Kernels' vector math (`vecmath`) calls glibc's libmvec, whose symbols
`vecmath.host_library` registers the same way when the first kernel needs
them; `compile_ir` keeps those declarations alive until the loop vectorizer
has run (`vecmath.keep_variants`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
import time
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from . import outline, vecmath

LIBM_FUNCTIONS = (
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "fmod",
    "hypot", "erf", "erfc", "sqrt", "cbrt", "floor", "ceil", "trunc", "round", "roundeven",
    "rint", "nearbyint", "copysign", "fabs", "fmin", "fmax", "sincos", "ldexp", "frexp",
)
LIBC_FUNCTIONS = ("malloc", "calloc", "realloc", "free")
"""The allocator: what tapes call, and calloc, which LLVM makes of malloc + zeroing."""

OPTIONS = (
    ("force-ordered-reductions", "true", "false"),
    ("enable-epilogue-vectorization", "false", "true"),
)
"""LLVM's global options astjit sets while it optimizes (name, astjit's value, LLVM's
default), put back after: see `Engine.optimize`."""


@dataclass
class CompiledModule:
    """One optimized, loaded LLVM module."""

    addresses: dict[str, int]
    """Name -> address of each external function."""
    llvm_ir_optimized: str
    compile_seconds: float
    """Parse + optimize + machine code, in seconds."""
    glue: bool = False
    """Compiled as glue (`Engine.compile_ir`)."""
    _asm: str | None = field(default=None, repr=False)

    @property
    def asm(self) -> str:
        """The host assembly, generated on first request from the optimized IR."""
        if self._asm is None:
            self._asm = engine().assembly(self.llvm_ir_optimized, self.glue)
        return self._asm


class Engine:
    """The host TargetMachines, the pipeline options and the MCJIT execution engines: O3 for
    code with loops, and a light pair for glue (`compile_ir`)."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())

        def machine(opt: int) -> llvm.TargetMachine:
            return target.create_target_machine(
                cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                opt=opt, codemodel="jitdefault", jit=True)
        self.target_machine = machine(3)
        self.tuning = llvm.create_pipeline_tuning_options(speed_level=3)
        self.tuning.loop_vectorization = True
        self.tuning.slp_vectorization = True
        self.triple = self.target_machine.triple
        self.data_layout = str(self.target_machine.target_data)
        self.jit = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.target_machine)
        self.glue_machine = machine(0)
        self.glue_tuning = llvm.create_pipeline_tuning_options(speed_level=1)
        self.glue_jit = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.glue_machine)
        register_libm()
        register_libc()
        self.lock = threading.Lock()

    def compile_ir(self, text: str, glue: bool = False) -> CompiledModule:
        """Parse, verify, optimize and load LLVM IR; return its entry points. The shared
        functions it may call are compiled first (`outline.compile_runtime`).

        Code with loops gets O3 and the host's full code generator. `glue` (a module
        without loops: argument checks, calls of the runtime and of BLAS, boxing)
        gets LLVM's O1 pipeline and its fast instruction selector and register
        allocator: about half the time (a @ b's module: 9.6 -> 5.4 ms), for code
        that runs once per call, not once per element.
        """
        outline.compile_runtime()
        start = time.perf_counter()
        module = self.parse(text)
        vecmath.keep_variants(module)
        self.optimize(module, self.glue_tuning if glue else self.tuning)
        jit = self.glue_jit if glue else self.jit
        with self.lock:
            jit.add_module(module)
            jit.finalize_object()
            addresses = {f.name: jit.get_function_address(f.name)
                         for f in module.functions
                         if not f.is_declaration and f.linkage == llvm.Linkage.external}
        return CompiledModule(addresses, str(module), time.perf_counter() - start, glue)

    def parse(self, text: str) -> llvm.ModuleRef:
        module = llvm.parse_assembly(text)
        module.triple = self.triple
        module.data_layout = self.data_layout
        module.verify()
        return module

    def optimize(self, module: llvm.ModuleRef, tuning: llvm.PipelineTuningOptions) -> None:
        """LLVM's default per-module pipeline of `tuning`'s level (O3, or O1 for glue) for
        the host CPU.

        Float reductions (`s += 1.0 / (k * k)`) are vectorized in order: the
        divisions run 4 or 8 wide while the sum stays bit-identical to CPython's
        left to right one (without this LLVM vectorizes no float reduction
        unless allowed to reassociate). The option is global to LLVM, so it is
        on only while astjit optimizes, leaving other llvmlite users (Numba) as
        they were (so are all of `OPTIONS`).

        No epilogue vectorization: a vectorized loop's remainder runs scalar, not
        through a second, narrower vector loop, which cost 10-15% of the O3 and
        machine-code time of array programs for a few leftover elements per row.
        """
        builder = llvm.create_pass_builder(self.target_machine, tuning)
        with self.lock:
            for option, ours, _ in OPTIONS:
                llvm.set_option("", f"-{option}={ours}")
            try:
                builder.getModulePassManager().run(module, builder)
            finally:
                for option, _, default in OPTIONS:
                    llvm.set_option("", f"-{option}={default}")

    def assembly(self, text: str, glue: bool = False) -> str:
        """Host assembly for (already optimized) LLVM IR, as `compile_ir` made it."""
        machine = self.glue_machine if glue else self.target_machine
        return machine.emit_assembly(self.parse(text))


@functools.cache
def engine() -> Engine:
    """The process-wide engine, created on first use."""
    return Engine()


def register_libm() -> None:
    """Make the C math library's functions resolvable by name in JIT-compiled code."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name in LIBM_FUNCTIONS:
        for variant in (name, name + "f"):
            function = getattr(libm, variant, None)
            if function is not None:
                llvm.add_symbol(variant, ctypes.cast(function, ctypes.c_void_p).value)


def register_libc() -> None:
    """Make the C allocator resolvable in JIT-compiled code: the one the process uses
    (dlopen(NULL) sees an interposed malloc too), so frees always match allocations."""
    libc = ctypes.CDLL(None) if os.name == "posix" else ctypes.CDLL(ctypes.util.find_library("c"))
    for name in LIBC_FUNCTIONS:
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
