"""The process-wide LLVM engine: host target machines and pipelines; each compile's
machine code linked on its own, and freed with the last reference to it.

Created once, on first use (`engine()`), and kept: initializing the native
target and building the host TargetMachines costs far more than compiling a
small function. `compile_ir` then parses one
module's IR into an LLVM context of its own, optimizes it for the host CPU,
generates its object code with the shared TargetMachine of its pipeline and
links that into memory of its own (the disk cache's ELF linker's image, else a new
MCJIT engine), this compile's alone, and returns the addresses of its external
functions (a `CompiledModule`).

Five ways to compile (`PIPELINES`):
- `scalar`: LLVM's default O3 pipeline (new pass manager, loop and SLP
  vectorization) and the full code generator, for code without arrays, whose
  straight-line arithmetic is as hot as its loops.
- `recursive`: scalar code that calls itself and has no loop (fib): the short list of
  function passes `RECURSIVE_PASSES` instead of O3's pipeline, whose inliner, loop and
  vectorizer passes find nothing to do there but cost most of its time; the same code
  generator as `scalar`.
- `loops`: the loop nests of array code (split.py), at O1 with the loop
  vectorizer and an interleave count of 1; also the runtime's shared functions
  (`compile_runtime`): run once per array, or loops of their own (fills,
  copies), they ran as fast and the first array kernel of a process compiles
  in less time (docs/measurements.md).
- `glue`: the rest of array code, and the wrapper of scalar code that loops
  (`split.wrapper_apart`), run once per call: no optimization, and the fast
  instruction selector and register allocator.

Lifetime: a CompiledModule owns its linked code (`code`: the image, or the MCJIT engine
whose memory manager owns the machine code's pages), and its LLVM modules and context; when it is
collected they are freed and the pages unmapped. Whatever runs the code must
keep it: a compiled entry's builtin holds it in its `self` (runtime/entry.py
`EntryPins.code`), so a jitted function, its specializations, derived
functions and caches free their code when the last of them goes. A module
calls no other compiled module's code (callees are compiled into their
callers' modules) except the runtime's shared functions (`compile_runtime`),
which are compiled once and kept for the process, their names registered
with `llvm.add_symbol`. An array module's loops and glue link into the same
code, where the glue's calls of the loops resolve: nothing of a compile is
registered process-wide, so no stale symbol outlives it. (An MCJIT engine per
compile cost one plain TargetMachine and about twice the ELF linker's time:
docs/measurements.md); the code generator runs on the shared machines
(`Engine.emit`).

Object code, for the disk cache (astjit/cache): `CompiledModule.objects` is each
part's object code as it was linked, exactly the machine code that runs, and
`CompiledModule.image()` an `ObjectImage` of it: the objects, the functions to
look up, the symbols they import, and the LLVM IR of the runtime's shared
functions they call. `Engine.load(image)` compiles those shared functions that
this process lacks, links the objects as `compile_ir` does (same lifetime) and
returns a `CompiledModule` with their addresses (its `llvm_ir_optimized` and
`asm` are not available); an import that resolves nowhere in the process is a
LookupError: registering the symbols of what the code calls (the C API's are
found in the process, libm's and libc's at `engine()`) is the loader's job.

Symbols: the C math functions that lowered code calls (directly or through
intrinsics such as `llvm.sin`) are registered with `add_symbol` from the C
library's own addresses, so resolution never depends on how Python was linked;
so are malloc, realloc and free (tapes), as the process itself resolves them.
Kernels' vector math (`vecmath`) calls glibc's libmvec, whose symbols
`vecmath.call_math` registers the same way, each when a kernel first calls it;
`compile_ir` keeps those declarations alive until the loop vectorizer has run
(`vecmath.keep_variants`).

Memory: llvmlite 0.50 never frees a ModulePassManager (`run_passes` does) and
keeps part of every PassBuilder made; without the first, most of what a compile
kept stayed after its code was freed (docs/measurements.md). A PassBuilder is made
for each run all the same: one used again runs slower with every run (each run adds
to what it keeps).
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import itertools
import os
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from .... import cabi
from .. import shared, vecmath
from ..runtime import objects
from ..teardown import take_apart
from . import runtime_cache, split
from .host import host_cpu

LLVM_LIBM = (
    "sin", "cos", "exp", "exp2", "log", "log2", "log10", "pow", "sqrt", "cbrt", "floor", "ceil",
    "trunc", "round", "roundeven", "rint", "nearbyint", "copysign", "fabs", "fmin", "fmax",
    "sincos", "ldexp", "frexp",
)
"""The C math functions LLVM itself may call: for its intrinsics and its own rewrites."""



@functools.cache
def libm_functions() -> tuple[str, ...]:
    """The C math functions compiled code may call: LLVM's and those the op table's
    lowerings name (`LibCall("erf")`). Registered on the first compile: a process that
    only loads cached code (astjit/cache) registers those it calls, and never imports
    the op table."""
    return tuple(dict.fromkeys([*LLVM_LIBM, *vecmath.libm_calls()]))


def __getattr__(name: str):
    if name == "LIBM_FUNCTIONS":  # `libm_functions()`, under the name it had as a constant
        return libm_functions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


LIBC_FUNCTIONS = ("malloc", "calloc", "realloc", "free")
"""The allocator: what tapes call, and calloc, which LLVM makes of malloc + zeroing."""

OPTIONS = (
    ("force-ordered-reductions", "true", "false"),
    ("enable-epilogue-vectorization", "false", "true"),
)
"""LLVM's global options astjit sets while it optimizes (name, astjit's value, LLVM's
default), put back after: see `Engine.optimize`."""

LOOP_OPTIONS = OPTIONS
"""The `loops` pipeline's. The loops of array kernels run one vector per step, by their
own metadata (`loop_metadata.no_runtime_unroll`): interleaving (4 vectors per step, LLVM's
choice for most of them) made LLVM compile more for loops that ran no faster in the
array benchmarks; they are memory-bound or wait on vector math (docs/measurements.md).
A loop the user wrote keeps LLVM's choice, as in the `scalar` pipeline: a stencil
(`y[i] = x[i-1] - 2*x[i] + x[i+1]`) ran 1.03-1.12x Numba at one vector per step. (Not
the global `force-vector-interleave`, which would override every loop's metadata.)"""


ARRAY_LOOPS_CODEGEN = (
    ("disable-lsr", "true", "false"),
    ("enable-misched", "false", "true"),
    ("disable-copyprop", "true", "false"),
)
"""The code generator's options (as `OPTIONS`) for a loops module whose loops are all
those of astjit's array lowerings (`split.marked_loops_only`).

No loop strength reduction: a large part of the machine code's compile time of the
array benchmarks' loop modules, which ran as fast without it; loops the user wrote (a
prefix sum, a histogram) ran slower without it, so a module holding one keeps it.

No machine scheduler and no machine copy propagation: they find little in a loop astjit
widened itself (one block per step, its values in registers) but run over every machine
function, 0.2-0.35 and 0.02-0.14 ms of a loops module's 2.5-7 (docs/measurements.md);
the loops ran as fast without them. Other passes of the kind (if-conversion, tail
duplication, branch folding, stack slot colouring, post-RA LICM and sinking) saved less
than setting and restoring their option costs: each LLVM option set parses LLVM's command
line, about 20 us. Register allocation stays as it is: LLVM's fast allocator in place of
the greedy one made the loops up to 1.5x slower."""


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
    passes: tuple[str, ...] = ()
    """When given, these passes (llvmlite's `add_<name>_pass`), in order, instead of the
    default pipeline of `level`."""


RECURSIVE_PASSES = ("global_opt", "sroa", "instruction_combine", "simplify_cfg",
                    "jump_threading", "new_gvn", "instruction_combine", "simplify_cfg")
"""The `recursive` pipeline. `global_opt` gives the internal functions LLVM's fast calling
convention (as O3 does); the others are the function simplifications O3 repeats. On fib
(its body unrolled three levels: 16 calls) LLVM optimized in well under half O3's time
and fib(25) ran as fast or faster; without `new_gvn` a little slower, with `new_gvn`
before `jump_threading` slower (docs/measurements.md)."""

PIPELINES = {
    "scalar": Pipeline("scalar", 3, True, OPTIONS, 3),
    "recursive": Pipeline("recursive", 3, False, (), 3, RECURSIVE_PASSES),
    "loops": Pipeline("loops", 1, False, LOOP_OPTIONS, 3),
    "direct": Pipeline("direct", None, False, (), 3),
    "glue": Pipeline("glue", None, False, (), 0),
}
"""Measured on the array benchmarks (softmax, the MLP step), against O3 for the loops:
O1 with the loop vectorizer compiled in less time, and the loops ran as fast
(docs/measurements.md). `direct`: a loops module whose loops astjit vectorized itself or
left scalar on purpose (widen.py, `split.marks_done`), straight to machine code."""


class Part:
    """One LLVM module a compile made: its pipeline's name, its object code (exactly the
    machine code that runs) and, when compiled in this process, the optimized module,
    printed on first request: printing costs milliseconds that most compiles never use."""

    def __init__(self, pipeline: str, obj: bytes, module: llvm.ModuleRef | None = None,
                 text: str | None = None,
                 codegen: tuple[tuple[str, str, str], ...] = ()) -> None:
        self.pipeline = pipeline
        self.object = obj
        self.module = module
        self.codegen = codegen
        """The code generator's options it was compiled with (`ARRAY_LOOPS_CODEGEN`)."""
        self._text = text
        """The optimized module's text: printed from `module` on first request, or given
        (a runtime batch from runtime_cache.py)."""

    @property
    def has_ir(self) -> bool:
        return self.module is not None or self._text is not None

    @property
    def llvm_ir_optimized(self) -> str:
        if self._text is None and self.module is None:
            raise ValueError("this code was loaded from object code (Engine.load): its LLVM IR "
                             "is not kept; compile the function afresh to see it")
        if self._text is None:
            text = str(self.module)
            self._text = split.without_borrowed(text) if self.pipeline == "glue" else text
        return self._text


@dataclass(frozen=True)
class ObjectImage:
    """What `Engine.load` needs to put a compiled module's machine code back in a process
    (another one, or this one later): plain values, to store as the caller likes.

    `CompiledModule.image()` makes it from a compile."""

    objects: tuple[tuple[str, bytes], ...]
    """(pipeline, object code) of each part, in link order."""
    names: tuple[str, ...]
    """The external functions whose addresses `load` returns."""
    imports: tuple[str, ...]
    """The symbols the code takes from outside: the runtime's shared functions, the C
    libraries', the C API's; `load` refuses an image one of which does not resolve."""
    runtime: tuple[str, ...] = ()
    """LLVM IR of modules defining the runtime's shared functions the code calls (and what
    they call), in the order they must compile; `load` compiles those this process lacks."""


@dataclass(eq=False)
class CompiledModule:
    """One compiled module: its parts (one, or an array module's loops and glue), linked
    into `code`, which owns their machine code: it is unmapped when the last reference
    to this object (or to `code`) goes."""

    addresses: dict[str, int]
    """Name -> address of each external function and constant (an entry's table: shared_entry.py)."""
    parts: tuple[Part, ...]
    compile_seconds: float
    """Parse + optimize + machine code + link, in seconds."""
    code: llvm.ExecutionEngine | cabi.Image = field(repr=False)
    """The linked parts, this module's alone: the image the disk cache's linker mapped
    (`Engine.link`, `Engine.load_stored`), or the MCJIT engine that linked them."""
    _imports: tuple[str, ...] | None = field(default=None, repr=False)
    _asm: str | None = field(default=None, repr=False)

    @property
    def imports(self) -> tuple[str, ...]:
        """The symbols the parts declare and none defines (see `ObjectImage.imports`), read
        from the modules on first request."""
        if self._imports is None:
            self._imports = imports(part.module for part in self.parts)
        return self._imports

    @property
    def llvm_ir_optimized(self) -> str:
        """Each part's optimized IR, under a comment naming its pipeline."""
        return "\n".join(f"; ---- astjit: the {part.pipeline} module ----\n{part.llvm_ir_optimized}"
                         for part in self.parts)

    @property
    def pipelines(self) -> tuple[str, ...]:
        return tuple(part.pipeline for part in self.parts)

    @property
    def objects(self) -> tuple[tuple[str, bytes], ...]:
        """(pipeline, object code) of each part: the machine code that runs, before linking."""
        return tuple((part.pipeline, part.object) for part in self.parts)

    @property
    def asm(self) -> str:
        """The host assembly, generated on first request from the optimized IR."""
        if self._asm is None:
            self._asm = "\n".join(
                f"# ---- astjit: the {part.pipeline} module ----\n"
                + engine().assembly(part.llvm_ir_optimized, part.pipeline, part.codegen)
                for part in self.parts)
        return self._asm

    def image(self) -> ObjectImage:
        """This module's machine code as `Engine.load` takes it back, with the IR of the
        runtime's shared functions it calls."""
        return ObjectImage(self.objects, tuple(self.addresses), self.imports,
                           runtime_sources(self.imports))


class Engine:
    """The host TargetMachines (shared by every compile: they optimize and emit object
    code) and the linking of object code into code objects of its own."""

    def __init__(self) -> None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.target = llvm.Target.from_triple(llvm.get_process_triple())
        cpu, features = host_cpu()
        by_level = {level: self.target.create_target_machine(
            cpu=cpu if level else "", features=features if level else "", opt=level,
            codemodel="jitdefault" if level else "small", reloc="default" if level else "pic",
            jit=True)
            for level in {p.codegen for p in PIPELINES.values()}}
        self.machines = {name: by_level[p.codegen] for name, p in PIPELINES.items()}
        """One machine per code generator level, shared by the pipelines of that level: a
        machine builds a subtarget (the code generator's tables for the host CPU) the first
        time it meets a function's CPU, features and vector width, and each machine would
        build its own (docs/measurements.md). The fast code generator's (level 0: the
        `glue`, run once per call, no loop of the user's) is the target's generic CPU's:
        its first subtarget, which each process's first array kernel builds, parsed the
        host's every feature flag and took about twice as long.

        The fast code generator's machine uses the small code model, position-independent:
        under the JIT's default (the large model on x86-64) its fast instruction selector
        selects no call (each falls back to SelectionDAG, and the glue is mostly calls of
        the runtime). Its calls of functions outside its object go through stubs, and its
        reads of external data through a GOT, which the linker (RuntimeDyld) makes within
        the object's memory: llvmlite's memory manager allocates an object's sections in
        one block (docs/measurements.md)."""
        self.tunings = {}
        for name, p in PIPELINES.items():
            if p.level is not None:
                tuning = llvm.create_pipeline_tuning_options(speed_level=p.level)
                tuning.loop_vectorization = True
                tuning.slp_vectorization = p.slp
                self.tunings[name] = tuning
        self.triple = self.machines["scalar"].triple
        self.data_layout = str(self.machines["scalar"].target_data)
        register_libc()
        search_the_process()
        self.lock = threading.Lock()
        self.serials = itertools.count()

    def compile_ir(self, text: str, arrays: bool = False, whole: str = "scalar",
                   wrapper: str | None = None) -> CompiledModule:
        """Parse, verify, optimize, compile and link LLVM IR; return its entry points. The
        shared functions it may call are compiled first (`compile_runtime`).

        Without `arrays`, the module is compiled whole by the pipeline `whole`.
        An `arrays` module is compiled in two parts (split.py): its loop nests by
        the `loops` pipeline, the rest by the `glue` one, which takes LLVM about
        half the time of compiling them together at O3 (docs/measurements.md).
        Both parts link into one code object: the glue's calls of the loops resolve
        to the loops part's functions there, never through a process-wide symbol.
        A module without arrays whose function `wrapper` is its entry from Python (run
        once per call: argument checks, boxing) compiles that function by the `glue`
        pipeline apart from the rest (`split.wrapper_apart`), linked the same way:
        O3 spent much of a looping scalar kernel's compile on the wrapper inlined into
        it (`runtime.entry.loops_without_calls` says which modules).
        """
        register_libm()
        compile_runtime()
        start = time.perf_counter()
        context, modules = llvm.create_context(), []
        try:
            parts, names = self.emit_parts(text, arrays, context, modules, whole, wrapper)
            code, addresses = self.link([part.object for part in parts], names)
        except BaseException:
            close(modules, context)
            raise
        compiled = CompiledModule(addresses, parts, time.perf_counter() - start, code)
        weakref.finalize(compiled, close, [part.module for part in parts], context)
        return compiled

    def compile_shared(self, text: str,
                       references: dict[str, frozenset[str]] | None = None) -> CompiledModule:
        """A module of the runtime's shared functions (`compile_runtime`), by the `loops`
        pipeline: its object code from the runtime cache where it holds this very module
        (runtime_cache.py), else compiled and stored there, with the `references` of its
        functions emitted here (`shared.RUNTIME.references`: `runtime_cache.find`)."""
        pipeline = PIPELINES["loops"]
        key = runtime_cache.key(text, pipeline.name, repr(pipeline))
        stored = None if key is None else runtime_cache.read(key)
        if stored is not None:
            try:
                return self.load_stored(stored)
            except LookupError:  # an import this process has not registered: compiled here
                pass
        compiled = self.compile_ir(text, whole=pipeline.name)
        if key is not None:
            part, names = compiled.parts[0], tuple(compiled.addresses)
            known = {n: tuple(sorted(references[n])) for n in names if n in (references or {})}
            runtime_cache.write(runtime_cache.Stored(key, part.object, names, compiled.imports,
                                                     part.llvm_ir_optimized, known))
        return compiled

    def load_stored(self, stored: runtime_cache.Stored) -> CompiledModule:
        """A runtime batch of the runtime cache linked, keeping its optimized IR (LookupError
        where it cannot link here): by the disk cache's linker where it laid the object out
        (`cabi.load_image`: a fraction of MCJIT's time, docs/measurements.md), its imports
        resolved as MCJIT resolves them; else by `load`."""
        pipeline, start, image = PIPELINES["loops"].name, time.perf_counter(), None
        if stored.plan is not None:
            try:  # (cabi.Unresolved, a LookupError, goes to the caller)
                image = cabi.load_image(stored.plan, llvm.address_of_symbol, permanent=True)
            except cabi.Unsupported:
                pass
        if image is None:
            compiled = self.load(ObjectImage(((pipeline, stored.object),), stored.names,
                                             stored.imports))
            compiled.parts[0]._text = stored.optimized
            return compiled
        addresses = {name: image.symbols.get(name) for name in stored.names}
        if not all(addresses.values()):
            raise LookupError(f"object code does not define {', '.join(stored.names)}")
        return CompiledModule(addresses, (Part(pipeline, stored.object, text=stored.optimized),),
                              time.perf_counter() - start, image, _imports=stored.imports)

    def emit_parts(self, text: str, arrays: bool, context: llvm.ContextRef,
                   modules: list[llvm.ModuleRef], whole: str = "scalar",
                   wrapper: str | None = None) -> tuple[tuple[Part, ...], list[str]]:
        """`compile_ir`'s parts of `text`, parsed into `context` (each module parsed also
        appended to `modules`), and the names they define externally (`split.external_names`)."""
        def parse(text: str) -> llvm.ModuleRef:
            modules.append(self.parse(text, context))
            return modules[-1]

        if wrapper is not None and not arrays:
            kernel, glue = split.wrapper_apart(text, wrapper)
            return ((self.emit(parse(kernel), whole, context), self.emit(parse(glue), "glue", context)),
                    split.external_names(kernel) + split.external_names(glue))
        module = parse(text)
        parts, external = [], split.external_names(text)
        if arrays and not split.has_loop(text):
            whole = "glue"  # nothing to extract (a product, the runtime's calls): all glue
        elif arrays:
            whole = "glue"
            names = self.extract_loops(module)
            extracted = str(module)
            loops = split.loops_module(extracted, names)
            if loops is None:  # a loop the extractor left where it was: compile it whole
                module, whole = parse(text), "scalar"
            elif names:
                marked = split.marked_loops_only(loops)
                codegen = ARRAY_LOOPS_CODEGEN if marked else ()
                pipeline = "direct" if marked and split.marks_done(loops) else "loops"
                parts.append(self.emit(parse(loops), pipeline, context, codegen))
                for name in names:
                    module.get_function(name).linkage = llvm.Linkage.available_externally
                external += names  # (the loops module's: the glue's are borrowed)
        parts.append(self.emit(module, whole, context))
        return tuple(parts), external

    def extract_loops(self, module: llvm.ModuleRef) -> list[str]:
        """Move `module`'s loop nests into functions of their own (identical ones merged),
        named uniquely in the process; their names (split.py). The glue keeps them
        as `available_externally` definitions, which the code generator skips: its
        calls resolve to the loops part's functions when the two link."""
        before = {f.name for f in module.functions}
        passes = llvm.create_new_module_pass_manager()
        passes.add_sroa_pass()  # accumulators in registers, not memory the loops are passed
        passes.add_loop_extract_pass()
        passes.add_merge_functions_pass()
        with self.lock:
            run_passes(passes, module, llvm.create_pass_builder(self.machines["glue"],
                                                                self.tunings["scalar"]))
        serial = next(self.serials)
        names = []
        for function in module.functions:
            if function.name not in before and not function.is_declaration:
                function.name = f"{function.name}.{serial}"
                names.append(function.name)
        return names

    def emit(self, module: llvm.ModuleRef, pipeline: str, context: llvm.ContextRef,
             codegen: tuple[tuple[str, str, str], ...] = ()) -> Part:
        """Optimize `module` (of LLVM context `context`) by `pipeline` and generate its
        object code with the pipeline's TargetMachine, LLVM's options `codegen` set
        meanwhile (as `optimize` sets a pipeline's)."""
        if pipeline in self.tunings:
            vecmath.keep_variants(module, context)
            self.optimize(module, pipeline)
        with self.lock:  # a TargetMachine's subtargets and LLVM's context are not thread-safe
            with _options(codegen):
                obj = self.machines[pipeline].emit_object(module)
        return Part(pipeline, obj, module, codegen=codegen)

    def link(self, binaries: list[bytes], names: list[str]) -> tuple[llvm.ExecutionEngine | cabi.Image,
                                                                     dict[str, int]]:
        """Link object code into code of its own and return it with the addresses of the
        functions (and constants) `names`. The code owns its memory: collecting it unmaps
        the machine code. Its symbols resolve first among its objects, then in the
        process (`llvm.add_symbol`, the C libraries).

        By the disk cache's ELF linker where it takes the objects (`elf.laid_out`,
        `cabi.load_image`: about half MCJIT's time for a small kernel, docs/measurements.md),
        else by a new MCJIT engine. The engine compiles nothing (its module, of LLVM's
        global context, which is not thread-safe: under the lock, is taken out again), so
        its TargetMachine (which it owns and frees) is a plain one for the host. An object
        file reads the bytes it is made of, which `binaries` keeps (a Part, an ObjectImage)."""
        from ....cache import elf

        plan = elf.laid_out(binaries)
        if plan is not None:
            try:
                image = cabi.load_image(plan, llvm.address_of_symbol)
            except (cabi.Unsupported, cabi.Unresolved):
                image = None  # linked by LLVM, as before the ELF linker took any
            if image is not None:
                return image, {name: image.symbols.get(name) or 0 for name in names}
        with self.lock:
            empty = llvm.parse_assembly("")
            code = llvm.create_mcjit_compiler(empty, self.target.create_target_machine(
                codemodel="jitdefault", jit=True))
            code.remove_module(empty)
            del empty
            for obj in binaries:
                code.add_object_file(llvm.ObjectFileRef.from_data(obj))
            code.finalize_object()
            return code, {name: code.get_function_address(name) for name in names}

    def load(self, image: ObjectImage) -> CompiledModule:
        """A CompiledModule of object code `CompiledModule.image()` gave (in this process or
        another on the same host): the runtime's shared functions it calls compiled where
        missing, its objects linked as `compile_ir` links them, with the same lifetime.
        A LookupError names the imports that resolve nowhere in this process (nothing is
        linked then: LLVM would abort the process)."""
        start = time.perf_counter()
        compile_runtime(image.runtime)
        missing = [name for name in image.imports if llvm.address_of_symbol(name) is None]
        if missing:
            raise LookupError(f"object code needs symbols this process does not define: "
                              f"{', '.join(missing)}")
        code, addresses = self.link([obj for _, obj in image.objects], list(image.names))
        absent = [name for name, address in addresses.items() if not address]
        if absent:
            raise LookupError(f"object code does not define {', '.join(absent)}")
        parts = tuple(Part(pipeline, obj) for pipeline, obj in image.objects)
        return CompiledModule(addresses, parts, time.perf_counter() - start, code,
                              _imports=image.imports)

    def parse(self, text: str, context: llvm.ContextRef | None = None) -> llvm.ModuleRef:
        """`text` parsed and verified, for the host, in `context` (default: a new one). Each
        compile parses into an LLVM context of its own: a context keeps every type and
        constant made in it until it is freed (with the compile's modules), which the
        process-wide one never is."""
        module = llvm.parse_assembly(objects.declared(text), context or llvm.create_context())
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
        builder = llvm.create_pass_builder(self.machines[pipeline], self.tunings[pipeline])
        listed = PIPELINES[pipeline].passes
        if listed:
            passes = llvm.create_new_module_pass_manager()
            for name in listed:
                getattr(passes, f"add_{name}_pass")()
        else:
            passes = builder.getModulePassManager()
        with self.lock, _options(PIPELINES[pipeline].options):
            run_passes(passes, module, builder)

    def assembly(self, text: str, pipeline: str = "scalar",
                 codegen: tuple[tuple[str, str, str], ...] = ()) -> str:
        """Host assembly for (already optimized) LLVM IR, as `compile_ir` made it."""
        module = self.parse(text)
        with self.lock, _options(codegen):
            return self.machines[pipeline].emit_assembly(module)


@contextlib.contextmanager
def _options(options: tuple[tuple[str, str, str], ...]) -> Iterator[None]:
    """LLVM's global `options` (name, astjit's value, LLVM's default) set meanwhile."""
    for option, ours, _ in options:
        llvm.set_option("", f"-{option}={ours}")
    try:
        yield
    finally:
        for option, _, default in options:
            llvm.set_option("", f"-{option}={default}")


@functools.cache
def engine() -> Engine:
    """The process-wide engine, created on first use."""
    return Engine()


@functools.cache
def search_the_process() -> None:
    """Make symbol lookups (`llvm.address_of_symbol`, MCJIT's resolver) search the process
    and its libraries too, as creating the first MCJIT engine would: `Engine.load`
    checks an image's imports before anything is linked."""
    with ffi.OutputString() as error:
        if ffi.lib.LLVMPY_LoadLibraryPermanently(None, error):
            raise RuntimeError(str(error))


@functools.cache
def register_libm(names: tuple[str, ...] | None = None) -> None:
    """Make the C math library's functions `names` (default: `libm_functions()`) and their
    float variants resolvable by name in JIT-compiled code (once per process)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name in libm_functions() if names is None else names:
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


def run_passes(passes: llvm.ModulePassManager, module: llvm.ModuleRef,
               builder: llvm.PassBuilder) -> None:
    """Run `passes` on `module` once and free them. llvmlite 0.50 never frees a
    ModulePassManager itself (ObjectRef's `_dispose`, which does nothing, comes first in
    its class's MRO): a pipeline's passes kept per compile otherwise. A manager runs
    once: running moves its passes out."""
    try:
        passes.run(module, builder)
    finally:
        ffi.lib.LLVMPY_DisposeNewModulePassManger(passes)
        passes.detach()


def close(modules: list[llvm.ModuleRef], context: llvm.ContextRef) -> None:
    """Free `modules` and then the LLVM context they belong to. Python's collector runs the
    finalizers of objects in a reference cycle (a compiled entry and its dispatcher) in
    any order, where a context freed before its modules crashes: so a compile's modules
    and context are freed here, by a finalizer of their CompiledModule, which holds
    them until it runs."""
    for module in modules:
        module.close()
    context.close()


def compile_runtime(sources: tuple[str, ...] = ()) -> None:
    """Compile the shared functions asked for since the last compile, and those `sources`
    (`ObjectImage.runtime`) define that this process has not compiled, and make their
    names resolve to them in every module compiled or loaded after. A batch another
    process compiled is linked from the runtime cache (`Engine.compile_shared`)."""
    runtime = shared.RUNTIME
    with runtime.lock:  # held throughout: no thread compiles a caller before its callees load
        _link_found(runtime)
        pending, runtime.pending = runtime.pending, None
        texts = [] if pending is None else [(str(pending), runtime.references)]
        if pending is not None:
            take_apart(pending)  # its cycles otherwise left to the collector, as a kernel's
        for text in sources:
            missing = set(split.definitions(text)) - runtime.compiled
            if missing:
                texts.append((split.restricted(text, missing), None))
        for text, references in texts:
            _adopt(runtime, engine().compile_shared(text, references))


def _link_found(runtime: shared._Runtime) -> None:
    """Link the runtime cache's batches that `shared.shared_function` found for functions
    it then did not emit (`RUNTIME.found`; what they import registered by the caller:
    `shared.found_imports`); where one does not link here, emit those functions after
    all, into the pending module."""
    found, runtime.found = runtime.found, {}
    batches = {request.stored.key: request.stored for request in found.values()}
    for key, stored in batches.items():
        if set(stored.names) <= runtime.compiled:
            continue
        try:
            compiled = engine().load_stored(stored)
        except LookupError:
            for name, request in found.items():
                if request.stored.key == key:
                    shared.define_pending(name, request)
            continue
        _adopt(runtime, compiled)


def _adopt(runtime: shared._Runtime, compiled: CompiledModule) -> None:
    """Make `compiled`'s functions the runtime's: every module compiled after calls them."""
    for name, address in compiled.addresses.items():
        llvm.add_symbol(name, address)
        runtime.compiled.add(name)
    runtime.modules.append(compiled)


def imports(modules: Iterable[llvm.ModuleRef]) -> tuple[str, ...]:
    """The symbols `modules` declare and none of them defines (LLVM's intrinsics aside)."""
    declared, defined = set(), set()
    for module in modules:
        for value in (*module.functions, *module.global_variables):
            (declared if value.is_declaration else defined).add(value.name)
    return tuple(sorted(name for name in declared - defined if not name.startswith("llvm.")))


def runtime_sources(names: Iterable[str]) -> tuple[str, ...]:
    """LLVM IR defining the runtime's shared functions among `names` and those they call,
    one module per runtime module they come from, in the order those compiled. Those of
    runtime modules loaded from object code without their IR (`Engine.load`) are left
    out: an image needing them loads where they resolve."""
    with shared.RUNTIME.lock:
        modules = [m for m in shared.RUNTIME.modules if m.parts[0].has_ir]
    wanted = set(names)
    sources = []
    for compiled in reversed(modules):  # a later module calls the earlier ones' functions
        text = compiled.parts[0].llvm_ir_optimized
        bodies = split.definitions(text)
        roots = wanted & set(bodies)
        if roots:
            needed, outside = split.reachable(bodies, roots)
            sources.append(split.restricted(text, needed))
            wanted = (wanted - needed) | outside
    return tuple(reversed(sources))


def runtime_llvm_ir() -> str:
    """The optimized LLVM IR of every shared function compiled so far (for debugging: a
    kernel's own module only declares them); of those loaded from object code, the names."""
    with shared.RUNTIME.lock:
        return "\n".join(m.llvm_ir_optimized if m.parts[0].has_ir else
                         f"; ---- astjit: loaded from object code: {', '.join(m.addresses)}"
                         for m in shared.RUNTIME.modules)
