"""The table entries of Python's `complex()` and the `cmath` functions compiled code has.

A Python complex is a weak c128 (ir/types.py). `complex(a, b)` of real numbers is the
complex with exactly those parts (`complex_new`); `complex(x)` is a `cast`. The `cmath`
functions take any number, as CPython's do (an int or float, a NumPy scalar, converted
to a Python complex first: the frontend casts), and compute as Modules/cmathmodule.c
does, raising where it raises (backend/llvm/cmath_functions.py). Those compiled code
does not have are refused by the frontend, naming what to write instead (docs/guide.md).
Each evaluates with `cmath` itself, which is also what the GPU backend's host runs.
"""
from __future__ import annotations

import cmath
import math

from ..types import C128, F64, is_numeric
from . import complex_rules
from . import vjp as v
from .declare import _def
from .table import OpTypeError, Routine


def _complex_new_rule(types, attrs):
    """complex(a, b) of real numbers: two floats; a complex part is refused (its CPython
    meaning, complex(a.real - b.imag, a.imag + b.real), is rarely what was meant)."""
    if not all(map(is_numeric, types)) or any(t.is_complex for t in types):
        shown = ", ".join(map(str, types))
        raise OpTypeError(f"complex(a, b) takes two real numbers here, got ({shown}); for "
                          "complex parts write complex(a.real - b.imag, a.imag + b.real)")
    return [F64, F64], C128


def _complex_new_adjoint(e, g, ins, out, needs):
    """z = a + ib: JAX's transpose gives a the real part of g, b minus its imaginary part."""
    return [e.op("real", g) if needs[0] else None,
            e.op("neg", e.op("imag", g)) if needs[1] else None]


_def("complex_new", 2, _complex_new_rule, complex, {"*": Routine("complex_new")},
     ("pure", "complex_rule"),
     vjp=_complex_new_adjoint,
     jvp=lambda e, d, ins, out, attrs: e.op("complex_new", *d),
     doc="complex(a, b) of two floats: the complex with exactly those parts")


def _complex_rule(types, attrs):
    """A cmath function of one Python complex (the frontend casts its argument)."""
    if types != [C128] or types[0].strong:
        raise OpTypeError(f"cmath functions take a Python complex here, got {types}")
    return [C128], C128


def _to_real_rule(types, attrs):
    _complex_rule(types, attrs)
    return [C128], F64


def _rect_rule(types, attrs):
    if not all(map(is_numeric, types)) or any(t.is_complex for t in types):
        raise OpTypeError(f"cmath.rect(r, phi) takes two real numbers, got {types} "
                          "(CPython raises TypeError)")
    return [F64, F64], C128


def _phase_adjoint(e, g, z, out):
    """np.angle's rule (complex_rules.py): the same function."""
    return complex_rules.angle_adjoint(e, g, z, out)


def _phase(z, polar=False):
    return cmath.polar(z)[1] if polar else cmath.phase(z)


_def("cmath_phase", 1, _to_real_rule, _phase, {"*": Routine("cmath_phase")},
     ("pure", "raises", "complex_rule"),
     python=("cmath.phase",), vjp=v.unary(_phase_adjoint),
     jvp=lambda e, d, ins, out, attrs: complex_rules.angle_tangent(e, d[0], ins[0], out),
     doc="cmath.phase(z): atan2(z.imag, z.real) with CPython's special cases; OverflowError "
         "where atan2 underflows to 0, but not as cmath.polar's part (attr `polar`)")
_def("cmath_abs", 1, _to_real_rule, lambda z: cmath.polar(z)[0], {"*": Routine("cmath_abs")},
     ("pure", "raises"), no_vjp="cmath.polar's part; abs(z) is differentiated",
     doc="the magnitude cmath.polar(z) gives: abs(z), OverflowError('math range error')")
_def("cmath_rect", 2, _rect_rule, cmath.rect, {"*": Routine("cmath_rect")}, ("pure", "raises"),
     python=("cmath.rect",), no_vjp="not differentiated yet: write r * cmath.exp(1j * phi)",
     doc="cmath.rect(r, phi): r (cos phi + i sin phi) with CPython's special values")
_HOLOMORPHIC = ("pure", "raises", "holomorphic")
"""A cmath function whose real VJP rule holds on complex numbers (JAX's convention: g f'(z))."""

_def("cmath_sqrt", 1, _complex_rule, cmath.sqrt, {"*": Routine("cmath_sqrt")}, _HOLOMORPHIC,
     python=("cmath.sqrt",),
     vjp=v.unary(lambda e, g, z, out: e.op("truediv", g, e.op("mul", v.c(e, 2.0, out), out))),
     jvp=lambda e, d, ins, out, attrs: e.op("truediv", d[0], e.op("mul", v.c(e, 2.0, out), out)),
     doc="cmath.sqrt(z): CPython's algorithm (scaled; special values), bit for bit")
_def("cmath_exp", 1, _complex_rule, cmath.exp, {"*": Routine("cmath_exp")}, _HOLOMORPHIC,
     python=("cmath.exp",), vjp=v.unary(lambda e, g, z, out: e.op("mul", g, out)),
     jvp=lambda e, d, ins, out, attrs: e.op("mul", d[0], out),
     doc="cmath.exp(z): CPython's algorithm (special values, ValueError, OverflowError)")

_def("cmath_log", 1, _complex_rule, cmath.log, {"*": Routine("cmath_log")}, _HOLOMORPHIC,
     python=("cmath.log",), vjp=v.unary(lambda e, g, z, out: e.op("truediv", g, z)),
     jvp=lambda e, d, ins, out, attrs: e.op("truediv", d[0], ins[0]),
     doc="cmath.log(z): CPython's algorithm (scaled, log1p near |z| = 1; special values; "
         "ValueError at 0)")
_def("cmath_log_base", 2, lambda types, attrs: ([C128, C128], _complex_rule(types[:1], attrs)[1]),
     cmath.log, {"*": Routine("cmath_log_base")}, ("pure", "raises"),
     no_vjp="not differentiated yet: write cmath.log(z) / cmath.log(base)",
     doc="cmath.log(z, base): log z / log base by Python's division; ValueError for a base "
         "of 0 or 1")
_def("cmath_log10", 1, _complex_rule, cmath.log10, {"*": Routine("cmath_log10")},
     _HOLOMORPHIC, python=("cmath.log10",),
     vjp=v.unary(lambda e, g, z, out: e.op("truediv", g, e.op("mul", z, v.c(e, math.log(10), z)))),
     jvp=lambda e, d, ins, out, attrs: e.op(
         "truediv", d[0], e.op("mul", ins[0], v.c(e, math.log(10), ins[0]))),
     doc="cmath.log10(z): cmath.log(z)'s parts divided by ln 10")

PREDICATES = {"cmath.isnan": "isnan", "cmath.isinf": "isinf", "cmath.isfinite": "isfinite"}
"""The cmath predicates: the ops of NumPy's complex predicates on the Python complex (the
same test of the two parts), their result a Python bool."""
