"""The table entries of Python's `complex()` and the `cmath` functions compiled code has.

A Python complex is a weak c128 (ir/types.py). `complex(a, b)` of real numbers is the
complex with exactly those parts (`complex_new`); `complex(x)` is a `cast`. The `cmath`
functions take any number, as CPython's do (an int or float, a NumPy scalar, converted
to a Python complex first: the frontend casts), and compute as Modules/cmathmodule.c
does, raising where it raises (backend/llvm/python_complex.py). Those compiled code
does not have are refused by the frontend, naming what to write instead (docs/guide.md).
Each evaluates with `cmath` itself, which is also what the GPU backend's host runs.
"""
from __future__ import annotations

import cmath

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
     doc="cmath.phase(z): atan2(z.imag, z.real) with CPython's special cases; OverflowError "
         "where atan2 underflows to 0, but not as cmath.polar's part (attr `polar`)")
_def("cmath_abs", 1, _to_real_rule, lambda z: cmath.polar(z)[0], {"*": Routine("cmath_abs")},
     ("pure", "raises"), no_vjp="cmath.polar's part; abs(z) is differentiated",
     doc="the magnitude cmath.polar(z) gives: abs(z), OverflowError('math range error')")
_def("cmath_rect", 2, _rect_rule, cmath.rect, {"*": Routine("cmath_rect")}, ("pure", "raises"),
     python=("cmath.rect",), no_vjp="not differentiated yet: write r * cmath.exp(1j * phi)",
     doc="cmath.rect(r, phi): r (cos phi + i sin phi) with CPython's special values")
PREDICATES = {"cmath.isnan": "isnan", "cmath.isinf": "isinf", "cmath.isfinite": "isfinite"}
"""The cmath predicates: the ops of NumPy's complex predicates on the Python complex (the
same test of the two parts), their result a Python bool."""
