"""Public API: `jit`, and the compile driver that runs the pipeline stage by stage.

parse (frontend) -> typed (ir.infer) -> optimized (ir.passes) -> llvm / llvm-opt
/ asm (backend.llvm). Every stage of every specialization is kept on its
`Specialization` so `f.ir(...)` and `ASTJIT_DUMP` can show it. The optimized
stage ends with the retain/release pass (`ir.passes.retain_release`), so it shows the
`array_retain` / `array_release` nodes the backend compiles.

The compiler (frontend, inference, passes, printers, backends) is imported on the
first compile, not with this module: `import astjit` stays cheap
(tests/api/test_import_cost.py).
"""
from __future__ import annotations

import builtins
import functools
import gc
import os
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import dispatch, pickling, tree, treeentry
from .errors import Loc
from .ir.core import Graph, Module, Value
from .ir.types import TupleType, Type, device_type_of, exact, python_type_of

IR_STAGES = ("parsed", "typed", "optimized")
TEXT_STAGES = ("llvm", "llvm-opt", "asm")
DEVICE_STAGES = ("cuda",)
"""The generated CUDA C: the GPU's code, shown for any target."""
STAGES = IR_STAGES + TEXT_STAGES + DEVICE_STAGES
TARGETS = ("cpu", "gpu", "cuda-sim")
"""cpu: LLVM; gpu: CUDA kernels launched through CuPy; cuda-sim: the same kernels run on the
host by a simulator (a test target, slow by design: backend/cuda/devices.py)."""
DERIVED_STAGES = ("grad",)
"""Stages only derived functions have: `grad` puts the optimized primal and gradient
graphs side by side, lined up by source line."""
DUMP_SUFFIX = {"parsed": "ir", "typed": "ir", "optimized": "ir", "llvm": "ll",
               "llvm-opt": "ll", "asm": "s", "cuda": "cu"}


def verifying() -> bool:
    """Verify the IR after every pass (the tests turn this on)."""
    return os.environ.get("ASTJIT_VERIFY", "") not in ("", "0")


def static_params(*names: str) -> Callable[[Callable], Callable]:
    """Mark parameters whose arguments compiled callers must give as compile-time constants.

        @static_params("axis")
        def normalize(x, axis=0):
            return x / np.sum(x, axis=axis, keepdims=True)

    A compiled call `normalize(x, axis=1)` gets a graph of its own with `axis`
    a constant (as NumPy's reductions need: the axis decides the result's
    shape); a non-constant argument there is a CompileError. Called from Python
    the function is unchanged. Static parameters must not be reassigned.
    """
    def mark(fn: Callable) -> Callable:
        fn.__astjit_static__ = tuple(names)
        return fn
    return mark


def jit(fn: Callable | None = None, *, target: str = "cpu", boundscheck: bool = True,
        parallel: bool = False, cache: bool = False):
    """Compile `fn` on its first call for each signature of argument types.

    Usable as `@jit` or `@jit(target="cpu")`. With ASTJIT_DISABLE_JIT=1 the
    function is returned unchanged (handy under a debugger).

    Options (any other keyword is a TypeError): `target`: "cpu" (LLVM), "gpu" (CUDA
    kernels through CuPy: array arguments and results are CuPy arrays) or "cuda-sim"
    (the GPU's kernels run on the host on NumPy arrays: a test target, slow by design);
    `boundscheck=False` trusts every array index to be within its axis and
    emits no check for it (a negative index still counts from the end; one
    out of range is undefined behaviour, as in C);
    `parallel=True` runs fused array kernels, reductions over them and `astjit.prange`
    loops on a thread per core (ir/passes/parallel.py, docs/parallel.md; the GPU targets
    ignore it: their kernels are parallel anyway);
    `cache=True` keeps each specialization's machine code on disk (ASTJIT_CACHE_DIR, else
    ~/.cache/astjit) and loads it in later processes instead of compiling, while the
    function's source, its callees' and the globals and closure values they read are
    unchanged (astjit/cache, docs/caching.md; the CPU target only).
    """
    for name, value in (("boundscheck", boundscheck), ("parallel", parallel), ("cache", cache)):
        if not isinstance(value, bool):
            raise TypeError(f"jit() option {name!r} must be True or False, got {value!r}")
    if fn is None:
        return functools.partial(jit, target=target, boundscheck=boundscheck, parallel=parallel,
                                 cache=cache)
    if os.environ.get("ASTJIT_DISABLE_JIT", "") not in ("", "0"):
        return fn
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; available: "
                         + ", ".join(repr(t) for t in TARGETS))
    if cache and target != "cpu":
        raise ValueError(f"jit(cache=True) keeps the CPU's machine code; target={target!r} "
                         "compiles in every process: drop cache=True")
    if isinstance(fn, types.MethodType):  # jit(model.forward): the object read at every call
        return types.MethodType(jit(fn.__func__, target=target, boundscheck=boundscheck,
                                    parallel=parallel, cache=cache), fn.__self__)
    if getattr(fn, "py_func", None) is not None:
        fn = fn.py_func
    options = {} if boundscheck else {"boundscheck": False}
    if parallel:
        options["parallel"] = True
    if cache:
        options["cache"] = True
    if target != "cpu":
        options["target"] = target
    if hasattr(fn, "__astjit_derived__") and not options:
        return fn.entry  # jit(grad(f)) is grad(f)'s own compiled entry
    return Dispatcher(fn, options).entry


def interpret_call(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run `fn` through the reference interpreter instead of compiled code (for debugging)."""
    from .frontend import lower_function
    from .ir.interp import interpret
    from .ir.passes.pipeline import optimize
    from .ir.passes.retain_release import insert_array_ownership

    signature = dispatch.Signature(fn)
    values = signature.bind(args, kwargs)
    typed = typed_module(lower_function(fn), signature.types_of(values))
    rebuild = tree.rebuilder(typed.entry_graph.outputs[0].type)
    result = interpret(insert_array_ownership(optimize(typed)), dispatch.flatten_values(values))
    return result if rebuild is None else rebuild(result)


class _Compiling:
    """A reentrant lock held while anything compiles: llvmlite parses every module in
    LLVM's one global context, which is not thread-safe (two threads compiling at once
    crashed the process), and the runtime's shared functions must load before their
    callers. Calls of compiled code never take it.

    The outermost holder also turns the garbage collector off (`gc.disable`) until it lets
    go: a compile allocates many short-lived objects, and a full collection it set off
    traversed every object of the process (the compiler's modules, NumPy's, llvmlite's),
    about 30 ms of an MLP step's first call (docs/measurements.md). Nothing is lost or kept
    by it: the collections after the compile find what it left, and since a pause sets off
    one young collection where the compile's allocations would have set off many, a
    compile no longer brings the next full collection nearer. (`gc.freeze()` did the same
    job, but leaving a process's own freeze alone needed `gc.get_freeze_count()`, which
    walks every frozen object: 6 ms a compile where a test suite froze its imports.) A
    process that turned the collector off keeps it off."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.depth = 0
        self.paused_gc = False

    def __enter__(self) -> None:
        self.lock.acquire()
        self.depth += 1
        if self.depth == 1 and gc.isenabled():
            gc.disable()
            self.paused_gc = True

    def __exit__(self, *exc: object) -> None:
        self.depth -= 1
        if self.depth == 0 and self.paused_gc:
            self.paused_gc = False
            gc.enable()
        self.lock.release()


COMPILING = _Compiling()


@dataclass
class Specialization:
    """One compiled signature and every stage of its compilation."""

    types: tuple[Type, ...]
    parsed: Module
    optimized: Module
    compiled: Any
    """The backend's CompiledEntry: `.call`, `.llvm_ir`, `.llvm_ir_optimized`, `.asm`, `.errors`.
    The first tier until a call needs the general one (`Dispatcher.call_general`)."""
    fallback: Callable | None = None
    """Where calls the entry does not take go."""
    trees: Any = None
    """The CPU entry's TreeBoundary (backend/llvm/runtime/trees.py): how it builds container
    results and, for a signature taking containers, takes them."""
    tree_entry: Callable | None = None
    """A signature taking containers the compiled entry cannot take natively (a registered
    class's): its generated fast path (treeentry.py)."""
    _typed: Module | None = field(default=None, repr=False)

    @property
    def typed(self) -> Module:
        """The typed stage, typed again on request: the optimizer consumed the compile's
        own (a copy kept for dumps cost a deep copy per compile, docs/measurements.md)."""
        if self._typed is None:
            self._typed = typed_module(self.parsed, self.types)
        return self._typed

    def stage_text(self, stage: str, fmt: str) -> str:
        if stage == "grad":
            return self.side_by_side()
        if stage in IR_STAGES:
            from .ir.dot import format_dot
            from .ir.printer import format_module

            module = getattr(self, stage)
            return format_dot(module) if fmt == "dot" else format_module(module)
        if fmt == "dot":
            raise ValueError(f"stage {stage!r} has no DOT form; use format='text'")
        if stage == "cuda":
            source = getattr(self.compiled, "cuda_source", None)
            return source if source is not None else build_device(self.optimized, "gpu").cuda_source
        if not hasattr(self.compiled, "llvm_ir"):
            raise ValueError(f"stage {stage!r} is the CPU's; this function's target has 'cuda'")
        attribute = {"llvm": "llvm_ir", "llvm-opt": "llvm_ir_optimized", "asm": "asm"}[stage]
        return getattr(self.compiled, attribute)


    def side_by_side(self) -> str:
        from .ir.passes.pipeline import optimize
        from .ir.sidebyside import format_side_by_side

        calls = [n for n in self.typed.entry_graph.walk() if "primal" in n.attrs]
        if not calls:
            raise ValueError("stage 'grad' is only for derived functions (grad, value_and_grad, jvp)")
        primal = clone_module(self.typed)
        primal.entry = calls[0].attrs["primal"]
        primal.graphs = {n: g for n, g in primal.graphs.items() if "/" not in n}
        return format_side_by_side(optimize(primal), self.optimized)


@dataclass
class Dispatcher:
    """The compiled specializations of one Python function, and its entry object."""

    py_func: Callable
    options: dict
    """The `jit` options that differ from their defaults (`boundscheck`, `parallel`, `target`)."""
    signature: dispatch.Signature = field(init=False)
    specializations: dict = field(default_factory=dict)
    with_functions: dict = field(default_factory=dict)
    """The specializations of calls passing functions (`call_with_functions`)."""
    fallbacks: dict = field(default_factory=dict)
    """Each fast path of containers the entry has targeted -> where it falls back."""
    parsed: Module | None = None

    def __post_init__(self):
        leaf_type = device_type_of if self.options.get("target") == "gpu" else python_type_of
        self.signature = dispatch.Signature(self.py_func, leaf_type)
        self.entry = dispatch.make_entry(self.call_slow, dispatch.defined_in_a_class(self.py_func))
        functools.update_wrapper(self.entry, self.py_func)
        self.entry.py_func = self.py_func
        self.entry.ir = self.ir
        self.entry.dispatcher = self
        self.entry.signatures = self.specializations
        # pickle finds this in the instance's dict before object's (functools.partial's
        # own reduction would pickle the dispatcher and its compiled code)
        self.entry.__reduce_ex__ = self.reduce_entry
        self.entry.__copy__ = self.entry.__deepcopy__ = self.same_entry  # as a function's copy
        pickling.watch_engines()  # multiprocessing and Dask have rules of their own for partials

    def same_entry(self, memo: dict | None = None) -> functools.partial:
        return self.entry

    def reduce_entry(self, protocol: int) -> str | tuple:
        """The entry pickled: by reference to its name where its module holds it, else
        as `jit(py_func, **options)` (pickling.py); compiled code never travels."""
        name = pickling.by_reference(self.entry)
        if name is not None:
            return name
        return unpickle_jitted, (pickling.portable(self.py_func), self.options)

    def call_slow(self, *args: Any, **kwargs: Any) -> Any:
        """Bind the call as Python does, compile the signature if new, run it."""
        values = self.signature.bind(args, kwargs)
        if any(map(dispatch.is_function_argument, values)):
            return self.call_with_functions(values)
        spec = self.specialize(self.signature.types_of(values))
        return dispatch.call_aligned(spec.compiled.call, dispatch.flatten_values(values),
                                     spec.optimized)

    def call_with_functions(self, values: list[Any]) -> Any:
        """A call passing functions: a specialization per function (and types of the other
        arguments), whose graph calls them directly; the other arguments passed."""
        static = {n: v for n, v in zip(self.signature.names, values)
                  if dispatch.is_function_argument(v)}
        names = [n for n in self.signature.names if n not in static]
        rest = [v for n, v in zip(self.signature.names, values) if n not in static]
        types = self.signature.types_of(rest, names)
        key = (tuple((n, dispatch.function_key(v)) for n, v in static.items()), types)
        spec = self.with_functions.get(key)
        if spec is None:
            with COMPILING:
                spec = self.with_functions.get(key) or self.compile(types, static)
                self.with_functions[key] = spec
        return dispatch.call_aligned(spec.compiled.call, dispatch.flatten_values(rest),
                                     spec.optimized)

    def specialize(self, types: tuple[Type, ...]) -> Specialization:
        spec = self.specializations.get(types)
        if spec is None:
            with COMPILING:
                spec = self.specializations.get(types)  # another thread's, compiled meanwhile
                if spec is None:
                    spec = self.compile_or_load(types)
                    self.specializations[types] = spec
                    # the CPU's builtin checks its arguments and falls back here; a device
                    # entry does not check them, so its calls keep coming here
                    if self.signature.all_positional and self.options.get("target", "cpu") == "cpu":
                        dispatch.retarget(self.entry, self.fast_target(spec))
        return spec

    def fast_target(self, spec: Specialization) -> Callable:
        """What the jitted entry calls once `spec` is compiled: its compiled entry; for a
        signature taking containers the builtin taking them (`compiled.trees`), else a
        generated fast path (treeentry.py) to the entry taking their leaves. Either falls
        back to the entry's target until now (`tree_fallback`)."""
        if not takes_leaves(spec.types, self.options):
            return spec.compiled.call
        if spec.compiled.trees is not None:
            self.fallbacks[spec.compiled.trees] = spec.trees.fallback
            return spec.compiled.trees
        fallback = self.tree_fallback()
        entry = treeentry.make_tree_entry(spec.types, spec.compiled.call, fallback,
                                          f"{self.py_func.__name__}_tree_entry")
        if entry is None:
            return self.entry.func
        self.fallbacks[entry] = fallback
        spec.tree_entry = entry
        return entry

    def tree_fallback(self) -> Callable:
        """Where a new fast path of containers sends the calls it does not take: the entry's
        target until now (ending in `call_slow`), or where a chain of TREE_ENTRY_CHAIN fast
        paths falling back one to another ends."""
        fallback = self.entry.func
        while self.chain_length(fallback) >= TREE_ENTRY_CHAIN:
            fallback = self.fallbacks[fallback]
        return fallback

    def chain_length(self, target: Callable) -> int:
        length = 0
        while target in self.fallbacks:
            target, length = self.fallbacks[target], length + 1
        return length

    def compile_or_load(self, types: tuple[Type, ...]) -> Specialization:
        """The specialization of `types`: compiled or, with `cache=True`, loaded from the disk
        cache where it holds a valid entry (astjit/cache), and written there after a
        compile. A signature taking containers is not cached."""
        where = None
        if self.options.get("cache") and not takes_leaves(types, self.options):
            from . import cache

            where = cache.place(self.py_func, self.options, types)
        if where is None:
            return self.compile(types)
        spec = self.load_cached(types, where)
        if spec is None:
            from .backend.llvm.runtime.objects import pinning

            with pinning(where.tag) as pinned:
                spec = self.compile(types)
            cache.write(where, spec.compiled, pinned.objects)
        return spec

    def load_cached(self, types: tuple[Type, ...], where: Any) -> Specialization | None:
        """The specialization of `types` linked from the cache entry at `where`, or None. It
        has no IR stages (`parsed`, `optimized`: None): made on demand (`call_general`, `ir`)."""
        from . import cache

        saved = cache.read(where)
        if saved is None:
            return None
        fallback = self.fallback_for(types)
        handler = ErrorHandler(saved.errors)
        general = functools.partial(self.call_general, types, False)
        compiled = cache.link(saved, fallback, handler, general)
        return None if compiled is None else Specialization(types, None, None, compiled, fallback)

    def fallback_for(self, types: tuple[Type, ...], static: dict | None = None) -> Callable:
        """Where calls a new entry of `types` does not take go: the previous entry, then
        `call_slow`; an entry taking containers' leaves is only called by call_slow and a
        generated fast path, to which it reports leaves it does not take (treeentry.reject)."""
        previous = [s.compiled.call for s in self.specializations.values()
                    if not takes_leaves(s.types, self.options)]
        fallback = previous[-1] if previous and not static else self.call_slow
        if not static and takes_leaves(types, self.options):
            fallback = treeentry.reject
        return fallback

    def compile(self, types: tuple[Type, ...], static: dict | None = None) -> Specialization:
        from .frontend import lower_function
        from .ir.passes.boundscheck import drop_bounds_checks
        from .ir.verify import verify_module

        if static:
            parsed = lower_function(self.py_func, static)
        else:
            self.parsed = self.parsed or lower_function(self.py_func)
            parsed = self.parsed
        typed = typed_module(parsed, types)
        if not self.options.get("boundscheck", True):
            typed = drop_bounds_checks(typed)
        check = verify_module if verifying() else None
        if check:
            check(typed)
        optimized = optimize_for_backend(typed, check)
        if self.options.get("parallel") and self.options.get("target", "cpu") == "cpu":
            from .ir.passes.parallel import mark_parallel

            optimized = mark_parallel(optimized)
        fallback = self.fallback_for(types, static)
        compiled, boundary = self.compile_entry(optimized, types, fallback, static)
        spec = Specialization(types, parsed, optimized, compiled, fallback, boundary)
        dump_dir = os.environ.get("ASTJIT_DUMP")
        if dump_dir:
            dump_stages(spec, dump_dir, self.py_func.__qualname__)
        return spec

    def compile_entry(self, optimized: Module, types: tuple[Type, ...], fallback: Callable,
                      static: dict | None) -> tuple[Any, Any]:
        """The compiled entry of `optimized` and, on the CPU, its TreeBoundary: container
        results built natively, and a signature taking containers the backend can check
        natively taking them (a second builtin, falling back to `tree_fallback()`)."""
        target = self.options.get("target", "cpu")
        if target != "cpu":
            compiled = build_device(optimized, target)
            compiled.call = _rebuilding(compiled.call,
                                        tree.rebuilder(optimized.entry_graph.outputs[0].type))
            return compiled, None
        from .backend.llvm import TreeBoundary, takes_natively

        boundary = TreeBoundary(tree.rebuilder)
        if not static and takes_leaves(types, self.options) and self.signature.all_positional \
                and all(map(takes_natively, types)):
            boundary.arguments, boundary.fallback = types, self.tree_fallback()
            boundary.general = functools.partial(self.call_general, types, True)
        general = None if static else functools.partial(self.call_general, types, False)
        return build(optimized, fallback, general, boundary), boundary

    def call_general(self, types: tuple[Type, ...], trees: bool, *args: Any) -> Any:
        """Run a call the first tier of `types` left (codegen.FunctionEmitter.fast_only)
        on the general tier, compiled on the first such call and used from then on; `trees`:
        a call passing containers (`compiled.trees`), else leaves."""
        spec = self.specializations[types]
        with COMPILING:
            if not spec.compiled.general:
                if spec.optimized is None:  # loaded from the disk cache: its stages made now
                    fresh = self.compile(types)
                    spec.parsed, spec.optimized, spec.trees = fresh.parsed, fresh.optimized, \
                        fresh.trees
                first = spec.compiled
                spec.trees = spec.trees.for_general_tier()
                spec.compiled = build(spec.optimized, spec.fallback, None, spec.trees)
                for before, after in ((first.call, spec.compiled.call),
                                      (first.trees, spec.compiled.trees)):
                    if before is not None and self.entry.func is before:
                        dispatch.retarget(self.entry, after)
                    if before is not None and before in self.fallbacks:
                        self.fallbacks[after] = self.fallbacks[before]
                if spec.tree_entry is not None:
                    spec.tree_entry.namespace["call"] = spec.compiled.call
        return (spec.compiled.trees if trees else spec.compiled.call)(*args)

    def ir(self, *example_args: Any, stage: str = "optimized", format: str = "text") -> str:
        """The IR of the specialization for these example arguments, at `stage`.

        Stages: parsed, typed, optimized (IR as text or DOT), llvm (as emitted),
        llvm-opt (after LLVM's O3) and asm (the CPU's), cuda (the GPU's kernels, for any
        target).
        """
        if stage not in STAGES + DERIVED_STAGES:
            raise ValueError(f"unknown stage {stage!r}; valid stages: {', '.join(STAGES)} "
                             f"(and {', '.join(DERIVED_STAGES)} for derived functions)")
        if format not in ("text", "dot"):
            raise ValueError(f"unknown format {format!r}; use 'text' or 'dot'")
        values = self.signature.bind(example_args, {})
        spec = self.specialize(self.signature.types_of(values))
        if spec.optimized is None:  # loaded from the disk cache: compiled again to show
            with COMPILING:
                spec = self.compile(spec.types)
        return spec.stage_text(stage, format)


def unpickle_jitted(py_func: Callable, options: dict) -> Callable:
    """A jitted function unpickled: `jit(py_func, **options)`, compiled on its first call
    (a `cache` option, when there is one, travels with the others)."""
    return jit(pickling.unportable(py_func), **options)


TREE_ENTRY_CHAIN = 4
"""How many generated tree fast paths may fall back one to another (newest first)."""


def takes_leaves(types: tuple[Type, ...], options: dict) -> bool:
    """Whether a (CPU) specialization takes container arguments: its entry takes their
    leaves (`compiled.call`), and the containers themselves (`compiled.trees`) or through
    a generated fast path (treeentry.py)."""
    return dispatch.has_tuples(types) and options.get("target", "cpu") == "cpu"


def _rebuilding(call: Callable, rebuild: Callable | None) -> Callable:
    """`call` (a device entry) whose nested-tuple result becomes the containers of the
    result's type (tree.rebuilder, computed once per specialization)."""
    if rebuild is None:
        return call
    return lambda *args: rebuild(call(*args))


def build(optimized: Module, fallback: Callable, general: Callable | None, trees: Any) -> Any:
    """The backend's CompiledEntry of `optimized`: its first tier when `general` is given
    (where the first tier's leftover calls go), else its general tier; `trees` its
    TreeBoundary."""
    from .backend.llvm import build_entry

    handler = ErrorHandler()
    compiled = build_entry(optimized, fallback, handler, general, trees)
    handler.errors = compiled.errors
    return compiled


def build_device(optimized: Module, target: str) -> Any:
    """The CUDA backend's entry of `optimized` for `target` ("gpu" or "cuda-sim")."""
    from .backend.cuda.entry import build_entry as build_cuda_entry

    return build_cuda_entry(optimized, target)


@dataclass
class ErrorHandler:
    """Called by compiled code with a nonzero status: raises that error site's exception."""

    errors: list = field(default_factory=list)

    def __call__(self, status: int) -> None:
        name, message, loc = self.errors[status - 1]
        raise error_from_site(name, message, loc)


def error_from_site(name: str, message: str, loc: Loc | None) -> Exception:
    """The Python exception compiled code reported, located at its source line. A builtin
    exception (ZeroDivisionError, IndexError: `ops.EXCEPTIONS`'s builtin entries) is taken
    from `builtins`; the table is imported only for its own entries (NumPy's errors, a
    callback's), as importing the op table's forty modules cost the first error of a
    function loaded from the disk cache more than loading it."""
    make = getattr(builtins, name, None)
    if not (isinstance(make, type) and issubclass(make, Exception)):
        from .ir.ops import EXCEPTIONS

        make = EXCEPTIONS.get(name, RuntimeError)
    where = ""
    if loc is not None:
        where = f" (at {loc.filename}:{loc.line}: {loc.text.strip()})"
    return make((message + where).lstrip())  # `assert x`: no message


def dump_stages(spec: Specialization, directory: str, name: str) -> None:
    """Write every stage to `directory`, one file per stage, numbered in pipeline order."""
    os.makedirs(directory, exist_ok=True)
    signature = ",".join(map(str, spec.types))
    for i, stage in enumerate(STAGES, 1):
        device = hasattr(spec.compiled, "cuda_source")
        if stage in TEXT_STAGES and device or stage in DEVICE_STAGES and not device:
            continue  # each target's own code: LLVM's for the CPU, CUDA C for the others
        path = os.path.join(directory, f"{name}[{signature}].{i:02d}-{stage}.{DUMP_SUFFIX[stage]}")
        with open(path, "w") as fh:
            fh.write(spec.stage_text(stage, "text"))
        if stage in IR_STAGES:
            with open(path[: -len(".ir")] + ".dot", "w") as fh:
                fh.write(spec.stage_text(stage, "dot"))


def optimize_for_backend(module: Module, check: Callable[[Module], None] | None) -> Module:
    """The optimization pipeline, then the retain/release pass, which must come after every other
    pass; `check` (the verifier) runs after each, and the ownership checker at the end."""
    from .ir.passes.pipeline import optimize
    from .ir.passes.retain_release import check_array_ownership, insert_array_ownership

    result = module.entry_graph.outputs[0].type
    module = insert_array_ownership(optimize(module, verify=check))
    keep_result_type(module, result)
    if check is not None:
        check(module)
        check_array_ownership(module)
    return module


def keep_result_type(module: Module, result: Type) -> None:
    """Give the entry's result the strength type inference gave it (ir/types.py), which
    decides how it is boxed: a pass may have put an equal value of the other strength in
    its place (a cast that changes only strength, `float(x[i])`, folds away)."""
    out = module.entry_graph.outputs[0]
    if exact(out.type) != exact(result):
        out.type = result


def typed_module(parsed: Module, types: tuple[Type, ...]) -> Module:
    """`parsed` typed for argument `types` (a new Module: `parsed` is left as it is)."""
    from .ir.infer import infer_types

    typed = infer_types(parsed, list(types))
    return with_flat_entry(typed) if dispatch.has_tuples(types) else typed


def clone_module(module: Module) -> Module:
    """A deep copy with fresh Values, so passes never change an earlier stage's dump."""
    import copy

    return copy.deepcopy(module)


def with_flat_entry(module: Module) -> Module:
    """Add an entry graph taking tuple arguments as their scalars, which rebuilds the tuples.

    Compiled entries take only scalars; the inliner folds this graph away.
    """
    inner = module.entry_graph
    outer = Graph(inner.name + ".flat", loc=inner.loc)
    args = [_rebuild(outer, p.type, p.name) for p in inner.params]
    call = outer.add("call", args, attrs={"callee": inner.name}, loc=inner.loc,
                     types=[inner.outputs[0].type])
    outer.outputs = call.outputs
    module.graphs[outer.name] = outer
    module.entry = outer.name
    return module


def _rebuild(graph: Graph, t: Type, name: str) -> Value:
    if not isinstance(t, TupleType):
        param = Value(name, t)
        graph.params.append(param)
        return param
    parts = [_rebuild(graph, e, f"{name}.{i}") for i, e in enumerate(t.elements)]
    return graph.add("tuple", parts, loc=graph.loc, names=[name], types=[t]).outputs[0]
