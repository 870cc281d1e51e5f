"""The emitter core of the CUDA backend: C types and literals of IR values, and the text
builder every kernel lowering writes into.

Every lowering (elementwise, reductions, row groups) imports this module and nothing of
another lowering's; this module imports no lowering.
"""
from __future__ import annotations

import math
import struct

from ...ir.types import BOOL, C64, C128, F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, ScalarType

C_TYPES: dict[ScalarType, str] = {F64: "double", F32: "float", I64: "long long", I32: "int",
                                  I16: "short", I8: "signed char", U64: "unsigned long long",
                                  U32: "unsigned int", U16: "unsigned short",
                                  U8: "unsigned char", BOOL: "bool"}
"""The C type of each IR scalar type a kernel computes with (C's integer arithmetic wraps
unsigned types; a kernel's result is stored narrowed, so signed ones wrap as NumPy's do
on every target NVRTC compiles for)."""

COMPLEX_C_TYPES: dict[ScalarType, str] = {C64: "astjit_c64", C128: "astjit_c128"}
"""The complex types, the prelude's structs of two parts (complexes.h)."""

KERNEL_TYPES: dict[ScalarType, str] = {**C_TYPES, **COMPLEX_C_TYPES}
"""Every scalar type a kernel computes with: element loops' and `vectorize`'s values."""


def c_type(t: ScalarType) -> str:
    """The C spelling of scalar type `t` (strength does not matter to C)."""
    for ir_type, name in (*C_TYPES.items(), *COMPLEX_C_TYPES.items()):
        if ir_type == t:
            return name
    raise KeyError(f"no C type for {t}")


def c_literal(value: object, t: ScalarType) -> str:
    """`value` as a C constant of type `t`: exact, NaN and infinities by their bits (a
    kernel source includes no header, so there is no INFINITY)."""
    if t == BOOL:
        return "true" if value else "false"
    if t.is_complex:
        z, part = complex(value), F32 if t == C64 else F64
        return f"{c_type(t)}{{{c_literal(z.real, part)}, {c_literal(z.imag, part)}}}"
    if t.is_float:
        x = float(value)
        if t == F32:
            bits = struct.unpack("<I", struct.pack("<f", x))[0]
            return f"__int_as_float({bits:#x})" if not math.isfinite(x) else f"{x!r}f"
        bits = struct.unpack("<q", struct.pack("<d", x))[0]
        return f"__longlong_as_double({bits}LL)" if not math.isfinite(x) else repr(x)
    n = int(value)
    if n == -(2 ** 63):
        return "(-9223372036854775807LL - 1)"
    if t.is_unsigned:
        return f"{n}ULL" if t == U64 else f"{n}U"
    return f"{n}LL" if t == I64 else f"(({c_type(t)}){n})" if t.bits < 32 else str(n)


class Source:
    """Lines of C with indentation, and fresh local names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0

    def line(self, text: str = "") -> None:
        self.lines.append("    " * self.depth + text if text else "")

    def open(self, text: str) -> None:
        """`text {` and one level deeper."""
        self.line(text + " {")
        self.depth += 1

    def close(self, after: str = "") -> None:
        self.depth -= 1
        self.line("}" + after)

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
