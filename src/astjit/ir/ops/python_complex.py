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

from ...errors import TypingError
from ..types import BOOL, C128, F64, NUMPY_NAMES, ScalarType, Type, is_numeric
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



def _times(derivative):
    """The VJP and JVP rules of a holomorphic f from f'(z) = `derivative(e, z, out)`: g f'(z)
    (JAX's convention) and dz f'(z)."""
    return dict(vjp=v.unary(lambda e, g, z, out: e.op("mul", g, derivative(e, z, out))),
                jvp=lambda e, d, ins, out, attrs: e.op("mul", d[0], derivative(e, ins[0], out)))


def _over(denominator):
    """The rules of a holomorphic f with f'(z) = 1 / `denominator(e, z, out)`."""
    return dict(vjp=v.unary(lambda e, g, z, out: e.op("truediv", g, denominator(e, z, out))),
                jvp=lambda e, d, ins, out, attrs: e.op("truediv", d[0],
                                                       denominator(e, ins[0], out)))


def _one_plus(e, sign, w, like):
    """1 + w, or 1 - w for `sign` -1 (a complex constant 1 like `like`)."""
    return e.op("add" if sign > 0 else "sub", v.c(e, 1.0, like), w)


def _square(e, z):
    return e.op("mul", z, z)


def _root_of(e, sign, z):
    """sqrt(1 +- z^2), by NumPy's sqrt: the AD builder computes with complexes as NumPy does
    (never raising), so 1 +- z^2 is a NumPy complex."""
    return e.op("sqrt", _one_plus(e, sign, _square(e, z), z))


_TRIGONOMETRIC = {  # cmath function: the rules of its derivative
    "sin": _times(lambda e, z, out: e.op("cmath_cos", z)),
    "cos": _times(lambda e, z, out: e.op("neg", e.op("cmath_sin", z))),
    "tan": _times(lambda e, z, out: _one_plus(e, 1, _square(e, out), out)),
    "sinh": _times(lambda e, z, out: e.op("cmath_cosh", z)),
    "cosh": _times(lambda e, z, out: e.op("cmath_sinh", z)),
    "tanh": _times(lambda e, z, out: _one_plus(e, -1, _square(e, out), out)),
    "asin": _over(lambda e, z, out: _root_of(e, -1, z)),
    "acos": _over(lambda e, z, out: e.op("neg", _root_of(e, -1, z))),
    "atan": _over(lambda e, z, out: _one_plus(e, 1, _square(e, z), z)),
    "asinh": _over(lambda e, z, out: _root_of(e, 1, z)),
    "acosh": _over(lambda e, z, out: e.op("mul", e.op("sqrt", e.op("sub", z, v.c(e, 1.0, z))),
                                          e.op("sqrt", e.op("add", z, v.c(e, 1.0, z))))),
    "atanh": _over(lambda e, z, out: _one_plus(e, -1, _square(e, z), z)),
}
for _name, _rules in _TRIGONOMETRIC.items():
    _def(f"cmath_{_name}", 1, _complex_rule, getattr(cmath, _name),
         {"*": Routine(f"cmath_{_name}")}, _HOLOMORPHIC, python=(f"cmath.{_name}",), **_rules,
         doc=f"cmath.{_name}(z): CPython's algorithm (special values, its ValueError and "
             "OverflowError), bit for bit (backend/llvm/cmath_trig.py)")


def _isclose_rule(types, attrs):
    """cmath.isclose(a, b, rel_tol, abs_tol): two Python complexes (the frontend casts) and
    two real tolerances."""
    _complex_rule(types[:1], attrs)
    _complex_rule(types[1:2], attrs)
    if not all(map(is_numeric, types[2:])) or any(t.is_complex for t in types[2:]):
        raise OpTypeError(f"cmath.isclose's tolerances must be real numbers, got "
                          f"{types[2]} and {types[3]} (CPython raises TypeError)")
    return [C128, C128, F64, F64], BOOL


def _isclose(a, b, rel_tol, abs_tol):
    return cmath.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)


_def("cmath_isclose", 4, _isclose_rule, _isclose, {"*": Routine("cmath_isclose")},
     ("pure", "raises"), python=("cmath.isclose",), zero_derivative="a bool",
     doc="cmath.isclose(a, b, *, rel_tol=1e-09, abs_tol=0.0): CPython's test (equal parts, "
         "no infinity, |a - b| within rel_tol |a| or |b| or abs_tol); ValueError for a "
         "negative tolerance")

def type_name(t: Type) -> str:
    """How Python's TypeError names a number of type `t`: 'complex', 'numpy.complex64'."""
    if t.strong:
        return f"numpy.{NUMPY_NAMES[t.name]}"
    return {"c128": "complex", "f64": "float", "bool": "bool"}.get(t.name, "int")


_NO_DIVISION = ("complex numbers have no floor division or remainder: compute with the parts, "
                "e.g. (z / w).real // 1 for the floor of the quotient's real part")
_REFUSALS = {
    "//": lambda a, b: f"unsupported operand type(s) for //: '{a}' and '{b}' ({_NO_DIVISION})",
    "%": lambda a, b: f"unsupported operand type(s) for %: '{a}' and '{b}' ({_NO_DIVISION})",
    "divmod": lambda a, b: f"unsupported operand type(s) for divmod(): '{a}' and '{b}' "
                           f"({_NO_DIVISION})",
    "round": lambda a: f"type {a} doesn't define __round__ method (round the parts: "
                       "complex(round(z.real), round(z.imag)))",
    "math.trunc": lambda a: f"type {a} doesn't define __trunc__ method (take a part: "
                            "math.trunc(z.real))",
    "math.floor": lambda a: f"must be real number, not {a} (math.floor of a complex; take a "
                            "part: math.floor(z.real))",
    "math.ceil": lambda a: f"must be real number, not {a} (math.ceil of a complex; take a "
                           "part: math.ceil(z.real))",
}


def refusing_complex(spelling: str):
    """The `decide` hook (ops/table.py) refusing a complex scalar operand (no array beside
    it) with Python's TypeError, a CompileError at the source line saying what to write
    instead; `spelling` is `//`, `%`, `round` or `math.floor`, `ceil`, `trunc`, and
    `divmod` for the quotient and remainder of divmod(a, b) (attr `divmod`). NumPy's
    functions and complex arrays keep NumPy's refusal (ops/elementwise.py)."""
    def decide(inference, node, inputs, out):
        types = [v.type for v in inputs]
        if node.attrs.get("numpy"):  # np.remainder(z, w): NumPy's refusal
            return None
        if all(isinstance(t, ScalarType) for t in types) and any(t.is_complex for t in types):
            refusal = _REFUSALS["divmod" if node.attrs.get("divmod") else spelling]
            raise TypingError(refusal(*map(type_name, types)), node.loc)
    return decide


PREDICATES = {"cmath.isnan": "isnan", "cmath.isinf": "isinf", "cmath.isfinite": "isfinite"}
"""The cmath predicates: the ops of NumPy's complex predicates on the Python complex (the
same test of the two parts), their result a Python bool."""
