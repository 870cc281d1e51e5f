"""What the explorer shows: every stage of one function's compilation for example arguments.

The IR stages (parsed, typed, optimized, and grad where the function is differentiable)
are kept as Modules, to be drawn; LLVM's stages and the CUDA C are text. A stage that
cannot be made (a function grad refuses, a function the GPU backend refuses) is kept with
the reason, which the page shows in its place: the explorer explains rather than fails.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CompileError
from ..ir.core import Module


@dataclass
class Stage:
    """One stage: a Module (an IR stage), a text (LLVM, CUDA C), or why there is none."""

    name: str
    description: str
    module: Module | None = None
    text: str = ""
    unavailable: str = ""


DESCRIPTIONS = {
    "parsed": "the function's source as SSA graph IR, untyped: if/while/for are regions",
    "typed": "types inferred for the example arguments",
    "optimized": "after inlining, folding, simplification, CSE, DCE, fusion and the "
                 "retain/release pass: what the backends compile",
    "grad": "the optimized gradient of the function with respect to its first argument "
            "(astjit.grad): a new graph built from the typed one",
    "llvm": "LLVM IR as emitted (LLVM IR carries no source locations)",
    "llvm-opt": "LLVM IR after LLVM's O3 pipeline",
    "cuda": "CUDA C for target='gpu': each kernel headed by the IR node it came from",
}


def collect_stages(function: Callable, args: tuple) -> list[Stage]:
    """Every stage of `function` compiled for `args`; a CompileError of the function itself
    (the parsed, typed or optimized stage) propagates."""
    from ..api import build_device, jit

    spec = _specialization(jit(function), args)
    stages = [Stage(name, DESCRIPTIONS[name], module=getattr(spec, name))
              for name in ("parsed", "typed", "optimized")]
    stages.append(_attempt("grad", lambda: Stage(
        "grad", DESCRIPTIONS["grad"], module=_gradient(function, args).optimized)))
    for name in ("llvm", "llvm-opt"):
        stages.append(Stage(name, DESCRIPTIONS[name], text=spec.stage_text(name, "text")))
    stages.append(_attempt("cuda", lambda: _cuda(build_device(spec.optimized, "gpu").cuda_source)))
    return stages


def _cuda(source: str) -> Stage:
    """The CUDA C stage; a function without kernels (scalar code) says so, since its source
    is then only the prelude of device helpers."""
    description = DESCRIPTIONS["cuda"]
    if "__global__" not in source:
        description += ("; this function has no kernels (on the GPU its scalar code runs in "
                        "the host program), so this is only the prelude of device helpers")
    return Stage("cuda", description, text=source)


def _specialization(entry: Any, args: tuple) -> Any:
    """The compiled Specialization of a jitted entry for these example arguments."""
    dispatcher = entry.dispatcher
    values = dispatcher.signature.bind(args, {})
    return dispatcher.specialize(dispatcher.signature.types_of(values))


def _gradient(function: Callable, args: tuple) -> Any:
    from ..autodiff import grad

    return _specialization(grad(function).entry, args)


def _attempt(name: str, make: Callable[[], Stage]) -> Stage:
    """The stage, or the reason it cannot be made: a CompileError's or TypeError's text."""
    try:
        return make()
    except (CompileError, TypeError, ValueError, NotImplementedError) as error:
        return Stage(name, DESCRIPTIONS[name], unavailable=f"{type(error).__name__}: {error}")


def source_span(function: Callable, stages: list[Stage]) -> tuple[str, int, list[str]]:
    """The explored file, and the lines of it to show (first line number, the lines): the
    function's own lines, widened to any line of the same file a stage's graphs or nodes
    come from (a callee defined in the file)."""
    filename = function.__code__.co_filename  # what the frontend's locations name
    lines, first = inspect.getsourcelines(function)
    start, stop = first, first + len(lines) - 1
    located = [loc for stage in stages if stage.module is not None
               for graph in stage.module.graphs.values()
               for loc in [graph.loc, *(node.loc for node in graph.walk())]]
    used = [loc.line for loc in located if loc is not None and loc.filename == filename]
    if used and (min(used) < start or max(used) > stop):
        import linecache

        start, stop = min(start, *used), max(stop, *used)
        lines = [linecache.getline(filename, n) for n in range(start, stop + 1)]
    return filename, start, [line.rstrip("\n") for line in lines]
