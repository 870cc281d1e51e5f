"""Vector math for NumPy-semantics kernels: glibc's libmvec behind the loop vectorizer.

LLVM's loop vectorizer widens the arithmetic of a fused kernel's loop, but a
math call (`llvm.sin.f64`, or a libm call such as `erf`) it can only widen
to an intrinsic that the backend splits back into one scalar libm call per
lane. glibc ships vector versions of most of libm in `libmvec.so.1`, named by
the x86 Vector Function ABI: `_ZGV<isa>N<lanes><v per argument>_<name>`, e.g.
`_ZGVdN4v_sin` (AVX2, 4 doubles), `_ZGVeN16v_expf` (AVX-512, 16 floats),
`_ZGVdN4vv_pow`.

How the vectorizer finds them: inside a `fused` kernel (and only there: the
emitter's `numpy_semantics`), a math function that libmvec has is emitted as a
call of the scalar C function (`sin`, `erff`: declared `readnone`, since
compiled code never reads errno) carrying the call-site attribute
`"vector-function-abi-variant"="_ZGVdN4v_sin(_ZGVdN4v_sin),_ZGVeN8v_sin(...)"`,
with the vector functions declared in the module. That attribute is LLVM's
standard mechanism (what `#pragma omp declare simd` and `-fveclib` produce):
LoopVectorize widens the call to the variant of the vectorization factor it
picks, and where the loop is not vectorized (a 0-d kernel) the scalar call
stays. A vectorized loop's last few elements run as masked vector steps, not as
scalar calls (`nests.count_up`). `Engine.compile_ir` keeps
the variant declarations alive through LLVM's pipeline (`keep_variants`:
`@llvm.compiler.used`, as clang does), since otherwise the early global
clean-up deletes them as unused before the vectorizer runs.

Choice of variants (`host_library`, once per process, on first use):
`d` (AVX2, 256-bit) when the host CPU has AVX2, and `e` (AVX-512, 512-bit)
too when it has AVX-512F; each function for f64 (`sin`) and f32 (`sinf`) is
mapped only if libmvec exports every variant of it (glibc 2.22 has sin, cos,
exp, log, pow; 2.35 added the rest), probed when a kernel first calls it.
LLVM keeps to 256-bit vectors on most AVX-512 CPUs (its prefer-256-bit tuning),
so on AVX-512 hosts the engine's machines prefer 512-bit ones (`jit.host.host_cpu`):
the 8-wide `e` variants ran faster than the 4-wide `d` ones (docs/measurements.md).

Scalar fallback: no libmvec, a CPU without AVX2, a function libmvec lacks
(fmod, sqrt, which is an instruction anyway), or `ASTJIT_VECMATH=0` in the
environment when the kernel is compiled: the call is emitted as before (the
intrinsic, or the libm call), one scalar call per element.

Accuracy: libmvec's functions are accurate to within 4 ulp (glibc's manual;
most are within 1-2), against libm's < 1 ulp, so a vectorized kernel's
results may differ from NumPy's in the last bits (where a loop is not
vectorized, its elements come from libm). Special values
follow C99 as libm does (NaN in, NaN out; log of a negative is NaN; sin of
inf is NaN; huge arguments of sin/cos are reduced exactly). Python-semantics
code (`math.sin` on a scalar, with its domain checks) never uses them.
"""
from __future__ import annotations

import _ctypes
import ctypes
import functools
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import llvmlite.binding as llvm
from llvmlite import ir
from llvmlite.ir.instructions import CallInstrAttributes

from .jit.host import host_features
from .lltypes import DOUBLE

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

LIBRARY = "libmvec.so.1"
ENV_SWITCH = "ASTJIT_VECMATH"
"""`ASTJIT_VECMATH=0` in the environment: kernels compiled from then on call scalar libm."""

@functools.cache
def libm_calls() -> dict[str, tuple[int, bool]]:
    """The C math functions the op table's lowerings call (`LibCall`): name -> (arity,
    whether libmvec may have it). Imports the op table: the engine asks on its first compile,
    `arities` on the first kernel calling math (one walk of the table for both)."""
    from ...ir.ops import OPS, LibCall

    return {low.name: (op.arity, low.vector) for op in OPS.values() for low in op.llvm.values()
            if isinstance(low, LibCall)}


@functools.cache
def arities() -> dict[str, int]:
    """The C math functions kernels may call that libmvec can have, by arity: those LLVM's
    intrinsics call, and the op table's libm calls (read on first use: see `libm_calls`)."""
    return {"sin": 1, "cos": 1, "exp": 1, "exp2": 1, "log": 1, "log2": 1, "log10": 1,
            "cbrt": 1, "pow": 2,
            **{name: arity for name, (arity, vector) in libm_calls().items() if vector}}

ISAS = (("d", 256, "avx2"), ("e", 512, "avx512f"))
"""Vector Function ABI ISA letter, register width and the host feature it needs."""

FLOAT = ir.FloatType()


@dataclass(frozen=True)
class VectorLibrary:
    """What libmvec offers on this host."""

    isas: tuple[tuple[str, int], ...]
    """(ISA letter, vector bits) of the variants to offer, narrowest first."""

    def variants(self, name: str) -> list[tuple[str, int]]:
        """(vector function name, lanes) of `name`'s variants, narrowest first."""
        base, bits = (name[:-1], 32) if name not in arities() else (name, 64)
        return [(f"_ZGV{isa}N{width // bits}{'v' * arities()[base]}_{name}", width // bits)
                for isa, width in self.isas]

    def offers(self, name: str) -> bool:
        """Whether libmvec exports every variant of the C function `name` (`sin`, `sinf`):
        one of `arities`, or its float version."""
        known = name in arities() or (name.endswith("f") and name[:-1] in arities())
        return known and _exports_all(self, name)


@functools.cache
def _exports_all(library: VectorLibrary, name: str) -> bool:
    """`VectorLibrary.offers`, probed once per function, when a kernel first calls it: a
    process's kernels call a few of the hundred or so variants, and probing them all was a
    part of the first array kernel's compile (docs/measurements.md)."""
    return all(_address(_handle(), variant) for variant, _ in library.variants(name))


@functools.cache
def host_library() -> VectorLibrary | None:
    """libmvec's variants usable on this CPU; None without libmvec or AVX2. Loaded on first
    use, never at import. Only the variants a kernel calls are registered with LLVM
    (`_register`, by `call_math`): registering all of them (about a hundred) cost a
    millisecond or two of the first kernel's compile (docs/measurements.md)."""
    features = host_features()
    isas = tuple((isa, width) for isa, width, feature in ISAS if feature in features)
    if not isas or _handle() is None:
        return None
    return VectorLibrary(isas)


@functools.cache
def _handle() -> int | None:
    """libmvec's dlopen handle (the library stays loaded: ctypes never closes it), or None
    without it."""
    try:
        return ctypes.CDLL(LIBRARY)._handle
    except OSError:
        return None


def _address(handle: int, name: str) -> int | None:
    """The address of libmvec's symbol `name`, or None (`dlsym`, without the function object
    `getattr` of a CDLL makes)."""
    try:
        return _ctypes.dlsym(handle, name)
    except OSError:
        return None


@functools.cache
def _register(variant: str) -> None:
    """Make libmvec's function `variant` resolvable by name in JIT-compiled code."""
    llvm.add_symbol(variant, _address(_handle(), variant))


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0"


def call_math(em: FunctionEmitter, name: str, args: list[ir.Value]) -> ir.Value | None:
    """The math function `name` (`sin`, or the intrinsic `llvm.sin`) on `args`, as a
    scalar libm call the vectorizer may widen to libmvec; None where libmvec has no
    variant of it (the caller then emits its usual lowering)."""
    name = name.removeprefix("llvm.")
    ty = args[0].type
    if name not in arities() or ty not in (DOUBLE, FLOAT) or not enabled():
        return None
    library = host_library()
    c_name = name if ty == DOUBLE else name + "f"
    if library is None or not library.offers(c_name):
        return None
    module = em.module
    mappings = []
    for variant, lanes in library.variants(c_name):
        _register(variant)
        if variant not in module.globals:
            vector = ir.VectorType(ty, lanes)
            ir.Function(module, ir.FunctionType(vector, [vector] * len(args)), variant)
        mappings.append(f"{variant}({variant})")
    call = em.builder.call(_scalar_function(module, c_name, ty, len(args)), args)
    call.attributes = _VariantAttribute(call.attributes)
    call.attributes.add(f'"vector-function-abi-variant"="{",".join(mappings)}"')
    return call


def _scalar_function(module: ir.Module, name: str, ty: ir.Type, arity: int) -> ir.Function:
    """The libm function, declared readnone (compiled code never reads errno), which is
    what lets the vectorizer widen its calls."""
    function = module.globals.get(name)
    if function is None:
        function = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)
        function.attributes.add("nounwind")
    function.attributes.add("readnone")
    return function


class _VariantAttribute(CallInstrAttributes):
    """A call's attributes, also accepting the string attribute that lists its vector
    variants (llvmlite knows only enum attributes)."""

    def add(self, name: str) -> None:
        if name.startswith('"vector-function-abi-variant"='):
            set.add(self, name)
        else:
            super().add(name)


_VARIANT_NAME = re.compile(r"_ZGV[a-z]N(\d+)(v+)_(\w+)")


def keep_variants(module: llvm.ModuleRef, context: llvm.ContextRef) -> None:
    """Keep the vector variants `module` (of LLVM context `context`) declares alive until
    the vectorizer has run: list them in `@llvm.compiler.used` (linked in from a module
    of their declarations)."""
    names = [f.name for f in module.functions
             if f.is_declaration and _VARIANT_NAME.fullmatch(f.name)]
    if not names:
        return
    used = ", ".join(f"ptr @{n}" for n in names)
    text = "\n".join(map(_declaration, names)) + (
        f'\n@llvm.compiler.used = appending global [{len(names)} x ptr] [{used}], '
        'section "llvm.metadata"\n')
    module.link_in(llvm.parse_assembly(text, context))


def _declaration(variant: str) -> str:
    """`declare <4 x double> @_ZGVdN4v_sin(<4 x double>)`, from the name alone."""
    lanes, params, c_name = _VARIANT_NAME.fullmatch(variant).groups()
    vector = f"<{lanes} x {'double' if c_name in arities() else 'float'}>"
    return f"declare {vector} @{variant}({', '.join([vector] * len(params))})"
