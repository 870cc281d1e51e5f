"""The process-wide LLVM engine: host target machines, pipelines, MCJIT.

Created once, on first use (`engine()`), and kept: initializing the native
target, building the host TargetMachines and the MCJIT instances costs far
more than compiling a small function. `compile_ir` then parses one module's
IR, optimizes it for the host CPU, adds it to MCJIT and returns the addresses
of its external functions. Compiled code lives as long as the process.

Three ways to compile (`PIPELINES`), each with its own MCJIT engine:
- `scalar`: LLVM's default O3 pipeline (new pass manager, loop and SLP
  vectorization) and the full code generator, for code without arrays, whose
  straight-line arithmetic is as hot as its loops, and for the runtime's
  shared functions.
- `loops`: the loop nests of array code (split.py), at O1 with the loop
  vectorizer and an interleave count of 1.
- `glue`: the rest of array code, run once per call: no optimization, and the
  fast instruction selector and register allocator.

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
import itertools
import os
import threading
import time
from dataclasses import dataclass, field

import llvmlite.binding as llvm

from .. import shared, vecmath
from ..vecmath import libm_calls
from . import split

LLVM_LIBM = (
    "sin", "cos", "exp", "exp2", "log", "log2", "log10", "pow", "sqrt", "cbrt", "floor", "ceil",
    "trunc", "round", "roundeven", "rint", "nearbyint", "copysign", "fabs", "fmin", "fmax",
    "sincos", "ldexp", "frexp",
)
"""The C math functions LLVM itself may call: for its intrinsics and its own rewrites."""

LIBM_FUNCTIONS = tuple(dict.fromkeys([*LLVM_LIBM, *libm_calls()]))
"""The C math functions compiled code may call: LLVM's and those the op table's
lowerings name (`LibCall("erf")`)."""
LIBC_FUNCTIONS = ("malloc", "calloc", "realloc", "free")
"""The allocator: what tapes call, and calloc, which LLVM makes of malloc + zeroing."""

OPTIONS = (
    ("force-ordered-reductions", "true", "false"),
    ("enable-epilogue-vectorization", "false", "true"),
)
"""LLVM's global options astjit sets while it optimizes (name, astjit's value, LLVM's
default), put back after: see `Engine.optimize`."""

LOOP_OPTIONS = (*OPTIONS, ("force-vector-interleave", "1", "0"))
"""The `loops` pipeline's: one vector per step. Interleaving (4 vectors per step, LLVM's
choice for most of astjit's loops) made LLVM compile more for loops that ran no
faster in the array benchmarks; they are memory-bound or wait on vector math
(docs/measurements.md)."""


@dataclass(frozen=True)
class Pipeline:
    """One way to compile a module."""

    name: str
    level: int | None
    """LLVM's default pipeline of this speed level, or None: no optimization."""
    slp: bool
    options: tuple[tuple[str, str, str], ...]
    codegen: int
    """The code generator's optimization level (0: fast instruction selection and
    register allocation)."""


PIPELINES = {
    "scalar": Pipeline("scalar", 3, True, OPTIONS, 3),
    "loops": Pipeline("loops", 1, False, LOOP_OPTIONS, 3),
    "glue": Pipeline("glue", None, False, (), 0),
}
"""Measured on the array benchmarks (softmax, the MLP step), against O3 for the loops:
O1 with the loop vectorizer compiled in less time, and the loops ran as fast
(docs/measurements.md)."""


class Part:
    """One LLVM module a compile loaded, and its pipeline's name. Its optimized IR is
    printed on first request: printing costs milliseconds that most compiles never use."""

    def __init__(self, module: llvm.ModuleRef, pipeline: str) -> None:
        self.module = module
        self.pipeline = pipeline
        self._text: str | None = None

    @property
    def llvm_ir_optimized(self) -> str:
        if self._text is None:
            text = str(self.module)
            self._text = split.without_borrowed(text) if self.pipeline == "glue" else text
        return self._text


@dataclass
class CompiledModule:
    """One compiled module: its loaded parts (one, or an array module's loops and glue)."""

    addresses: dict[str, int]
    """Name -> address of each external function."""
    parts: tuple[Part, ...]
    compile_seconds: float
    """Parse + optimize + machine code, in seconds."""
    _asm: str | None = field(default=None, repr=False)

    @property
    def llvm_ir_optimized(self) -> str:
        """Each part's optimized IR, under a comment naming its pipeline."""
        return "\n".join(f"; ---- astjit: the {part.pipeline} module ----\n{part.llvm_ir_optimized}"
                         for part in self.parts)

    @property
    def pipelines(self) -> tuple[str, ...]:
        return tuple(part.pipeline for part in self.parts)

    @property
    def asm(self) -> str:
        """The host assembly, generated on first request from the optimized IR."""
        if self._asm is None:
            self._asm = "\n".join(
                f"# ---- astjit: the {part.pipeline} module ----\n"
                + engine().assembly(part.llvm_ir_optimized, part.pipeline) for part in self.parts)
        return self._asm


class Engine:
    """The host TargetMachines and an MCJIT execution engine for each of `PIPELINES`."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        # One machine per engine: an MCJIT engine owns its TargetMachine (and frees it).
        self.machines = {name: target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
            opt=p.codegen, codemodel="jitdefault", jit=True) for name, p in PIPELINES.items()}
        self.tunings = {}
        for name, p in PIPELINES.items():
            if p.level is not None:
                tuning = llvm.create_pipeline_tuning_options(speed_level=p.level)
                tuning.loop_vectorization = True
                tuning.slp_vectorization = p.slp
                self.tunings[name] = tuning
        self.triple = self.machines["scalar"].triple
        self.data_layout = str(self.machines["scalar"].target_data)
        self.jits = {name: llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
                     for name, machine in self.machines.items()}
        register_libm()
        register_libc()
        self.lock = threading.Lock()
        self.serials = itertools.count()

    def compile_ir(self, text: str, arrays: bool = False) -> CompiledModule:
        """Parse, verify, optimize and load LLVM IR; return its entry points. The shared
        functions it may call are compiled first (`compile_runtime`).

        Without `arrays`, the module is compiled whole by the `scalar` pipeline.
        An `arrays` module is compiled in two parts (split.py): its loop nests by
        the `loops` pipeline, the rest by the `glue` one, which takes LLVM about
        half the time of compiling them together at O3 (docs/measurements.md).
        """
        compile_runtime()
        start = time.perf_counter()
        module = self.parse(text)
        parts = []
        whole = "scalar"
        if arrays:
            whole = "glue"
            names = self.extract_loops(module)
            loops = split.loops_module(str(module), names)
            if loops is None:  # a loop the extractor left where it was: compile it whole
                module, whole = self.parse(text), "scalar"
            elif names:
                parts.append(self.load(self.parse(loops), "loops"))
                for name in names:
                    llvm.add_symbol(name, parts[0][1][name])
                    module.get_function(name).linkage = llvm.Linkage.available_externally
        parts.append(self.load(module, whole))
        addresses = {name: address for _, found in parts for name, address in found.items()}
        return CompiledModule(addresses, tuple(part for part, _ in parts),
                              time.perf_counter() - start)

    def extract_loops(self, module: llvm.ModuleRef) -> list[str]:
        """Move `module`'s loop nests into functions of their own (identical ones merged),
        named uniquely in the process; their names (split.py). The glue keeps them
        as `available_externally` definitions, which the code generator skips: its
        calls resolve to the loops module's functions by name, as registered."""
        before = {f.name for f in module.functions}
        passes = llvm.create_new_module_pass_manager()
        passes.add_sroa_pass()  # accumulators in registers, not memory the loops are passed
        passes.add_loop_extract_pass()
        passes.add_merge_functions_pass()
        passes.run(module, llvm.create_pass_builder(self.machines["glue"],
                                                    self.tunings["scalar"]))
        serial = next(self.serials)
        names = []
        for function in module.functions:
            if function.name not in before and not function.is_declaration:
                function.name = f"{function.name}.{serial}"
                names.append(function.name)
        return names

    def load(self, module: llvm.ModuleRef, pipeline: str) -> tuple[Part, dict[str, int]]:
        """Optimize `module` by `pipeline`, add it to that pipeline's MCJIT engine and
        return it with the addresses of its external functions."""
        if pipeline in self.tunings:
            vecmath.keep_variants(module)
            self.optimize(module, pipeline)
        jit = self.jits[pipeline]
        with self.lock:
            jit.add_module(module)
            jit.finalize_object()
            addresses = {f.name: jit.get_function_address(f.name)
                         for f in module.functions
                         if not f.is_declaration and f.linkage == llvm.Linkage.external}
        return Part(module, pipeline), addresses

    def parse(self, text: str) -> llvm.ModuleRef:
        module = llvm.parse_assembly(text)
        module.triple = self.triple
        module.data_layout = self.data_layout
        module.verify()
        return module

    def optimize(self, module: llvm.ModuleRef, pipeline: str) -> None:
        """`pipeline`'s LLVM pipeline for the host CPU, with its options.

        Float reductions (`s += 1.0 / (k * k)`) are vectorized in order: the
        divisions run 4 or 8 wide while the sum stays bit-identical to CPython's
        left to right one (without this LLVM vectorizes no float reduction
        unless allowed to reassociate). The option is global to LLVM, so it is
        on only while astjit optimizes, leaving other llvmlite users (Numba) as
        they were (so are all of `OPTIONS`).

        No epilogue vectorization: a vectorized loop's remainder runs scalar, not
        through a second, narrower vector loop, which cost a noticeable part of the
        O3 and machine-code time of array programs for a few leftover elements per row
        (docs/measurements.md).
        """
        options = PIPELINES[pipeline].options
        builder = llvm.create_pass_builder(self.machines[pipeline], self.tunings[pipeline])
        with self.lock:
            for option, ours, _ in options:
                llvm.set_option("", f"-{option}={ours}")
            try:
                builder.getModulePassManager().run(module, builder)
            finally:
                for option, _, default in options:
                    llvm.set_option("", f"-{option}={default}")

    def assembly(self, text: str, pipeline: str = "scalar") -> str:
        """Host assembly for (already optimized) LLVM IR, as `compile_ir` made it."""
        return self.machines[pipeline].emit_assembly(self.parse(text))


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


def compile_runtime() -> None:
    """Compile the shared functions asked for since the last compile, and make their names
    resolve to them in every module compiled after."""
    runtime = shared.RUNTIME
    with runtime.lock:  # held throughout: no thread compiles a caller before its callees load
        pending, runtime.pending = runtime.pending, None
        if pending is None:
            return
        compiled = engine().compile_ir(str(pending))
        for name, address in compiled.addresses.items():
            llvm.add_symbol(name, address)
            runtime.compiled.add(name)
        runtime.modules.append(compiled)


def runtime_llvm_ir() -> str:
    """The optimized LLVM IR of every shared function compiled so far (for debugging: a
    kernel's own module only declares them)."""
    with shared.RUNTIME.lock:
        return "\n".join(m.llvm_ir_optimized for m in shared.RUNTIME.modules)
