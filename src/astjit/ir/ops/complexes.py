"""The table entries of NumPy's complex-number functions: np.real, np.imag, np.conj, np.angle,
and np.sign of a complex (`complex_sign`).

Each takes any number (NumPy's do): of a complex its part, conjugate or argument,
of a real number what NumPy gives (`np.real(x)` is x, `np.imag(x)` a zero of x's
type, `np.angle(x)` 0 or pi). Of a complex *array*, `np.real`/`np.imag` (and the
`.real`/`.imag` attributes) are NumPy's views, not copies: type inference replaces
them by `complex_part {part}`, a float array over the complex buffer (stride twice
the complex one, the imaginary part one float further), so a write through it
(`np.real(z)[:] = 0`) writes z, as in NumPy. Complex arithmetic itself (`+ - * /`, `abs`, `==`)
is the arithmetic ops' 'c' lowerings (ir/ops/scalar.py). Their derivatives are JAX's
(ops/complex_rules.py: not holomorphic, each has rules of its own).
"""
from __future__ import annotations

from ..core import Node
from ..types import BOOL, C64, F32, F64, I64, ArrayType, ScalarType, is_numeric, promote, strong
from . import complex_rules as rules
from . import vjp as v
from .batching import each
from .declare import _def
from .table import CExpr, OpTypeError, Routine, _numeric, float_rule

_ELEMENTWISE = ("pure", "elementwise")
_WITH_RULES = (*_ELEMENTWISE, "complex_rule")
"""np.real, np.imag, np.conj, np.angle: rules of their own for complex operands."""


def part_type(t: ScalarType) -> ScalarType:
    """The type of a number's real or imaginary part: a complex's float, else its own."""
    if t.is_complex:
        return F32 if t == C64 else F64
    return t


def _part_rule(types, attrs):
    """Of a complex its float (of a NumPy complex scalar a NumPy float: np.complex128's
    `.real` is an np.float64); of a Python scalar what its `.real`/`.imag` is, as np.real
    returns (a bool's are ints: `True.real` is 1); of any other number its own type."""
    _numeric(types, "np.real/np.imag")
    t = types[0]
    if t == BOOL and not t.strong and attrs.get("numpy"):
        return [I64], I64
    return [t], strong(part_type(t)) if t.strong else part_type(t)


def float_or_complex_rule(types, attrs):
    """A math function NumPy also computes on complex numbers (np.exp, np.power ...): of a
    complex a complex of its precision, else `float_rule`'s float. A `math` function
    (attr `scalar_function`) is Python's, which raises TypeError for a complex: refused,
    naming NumPy's function, which computes it."""
    if not any(is_numeric(t) and t.is_complex for t in types):
        return float_rule(types, attrs)
    _numeric(types, "this math function")
    if attrs.get("scalar_function"):
        raise OpTypeError(f"{attrs['scalar_function']}() takes real numbers (Python's raises "
                          "TypeError for a complex); use the NumPy function "
                          f"(np.{attrs['scalar_function'].removeprefix('math.')}"
                          " or its NumPy name), which computes it on complex numbers")
    t = promote(*types)
    return [t] * len(types), t


def complex_pred_rule(types, attrs):
    """np.isnan/isinf/isfinite: a bool, of a complex too (`float_or_complex_rule`'s operands)."""
    operands, _ = float_or_complex_rule(types, attrs)
    return operands, BOOL


def _conj_rule(types, attrs):
    _numeric(types, "np.conj")
    return [types[0]], types[0]


def _angle_rule(types, attrs):
    if types[0].is_complex:
        return [types[0]], part_type(types[0])
    return float_rule(types, attrs)


def _part_view(part: int):
    """The `expand` of np.real/np.imag: of a complex array the view `complex_part`; np.real
    of a real array is the array itself (NumPy's `x.real is x`)."""
    def expand(inference, node, inputs, out):
        t = inputs[0].type
        if isinstance(t, ArrayType) and not t.dtype.is_complex and part == 0:
            return [inputs[0]]
        if not (isinstance(t, ArrayType) and t.dtype.is_complex):
            return None
        return inference.infer_leaf(Node("complex_part", [], node.outputs, attrs={"part": part},
                                         loc=node.loc), inputs, out)
    return expand


def _part_view_rule(types, attrs):
    t = types[0]
    if not (isinstance(t, ArrayType) and t.dtype.is_complex):
        raise OpTypeError(f"complex_part needs a complex array, got {t}")
    return [t], ArrayType(part_type(t.dtype), t.ndim)


def _numpy(name: str):
    def evaluate(x):
        import numpy

        return numpy.asarray(getattr(numpy, name)(x)).item()  # np.real(1j) is a float
    return evaluate


_def("real", 1, _part_rule, _numpy("real"),
     {"c": Routine("complex_real"), "*": Routine("identity")}, _WITH_RULES, numpy=("real",),
     expand=_part_view(0),
     cuda={"c": CExpr("astjit_real({0})"), "*": CExpr("{0}")},
     vjp=v.unary(rules.real_adjoint), jvp=lambda e, d, ins, out, attrs: e.op("real", d[0]),
     doc="np.real(z): the real part (x itself if real)")
_def("imag", 1, _part_rule, _numpy("imag"),
     {"c": Routine("complex_imag"), "*": Routine("real_imag")}, _WITH_RULES, numpy=("imag",),
     expand=_part_view(1),
     cuda={"c": CExpr("astjit_imag({0})"), "*": CExpr("(({T})0)")},
     vjp=v.unary(rules.imag_adjoint), jvp=lambda e, d, ins, out, attrs: e.op("imag", d[0]),
     doc="np.imag(z): the imaginary part (0 if real)")
_def("conj", 1, _conj_rule, _numpy("conj"),
     {"c": Routine("complex_conj"), "*": Routine("identity")}, _WITH_RULES,
     numpy=("conj", "conjugate"), cuda={"c": CExpr("astjit_conj({0})"), "*": CExpr("{0}")},
     vjp=v.unary(rules.conj_adjoint), jvp=lambda e, d, ins, out, attrs: e.op("conj", d[0]),
     doc="np.conj(z): the complex conjugate (x if real)")
_def("angle", 1, _angle_rule, _numpy("angle"),
     {"c": Routine("complex_angle"), "f": Routine("real_angle")}, _WITH_RULES, numpy=("angle",),
     cuda={"c": CExpr("astjit_angle({0})"), "f": CExpr("atan2(({T})0, {0})")},
     vjp=v.unary(rules.angle_adjoint),
     jvp=lambda e, d, ins, out, attrs: rules.angle_tangent(e, d[0], ins[0], out),
     doc="np.angle(z): atan2(imag, real)")
_def("complex_part", 1, _part_view_rule, lambda z, part: z.imag if part else z.real,
     {"*": Routine("complex_part_view")}, ("pure", "view", "complex_rule"),
     vjp=v.with_attrs(lambda e, g, ins, out, needs, attrs: [
         (rules.imag_adjoint if attrs["part"] else rules.real_adjoint)(e, g, ins[0], out)]),
     jvp=lambda e, d, ins, out, attrs: e.op("complex_part", d[0], part=attrs["part"]),
     write_adjoint=lambda e, read, attrs: rules.part_write_adjoint(e, read, attrs["part"]),
     shape=lambda node, table: table.shape(node.inputs[0]),
     batch=lambda b, node, ins, batched: each(b.op("complex_part", ins[0], **node.attrs)),
     doc="np.real(z)/np.imag(z) of a complex array: a float view of the part attrs['part'] "
         "(0 real, 1 imaginary) over z's memory")


def numpy_sign(z):
    """NumPy's np.sign of a complex (the interpreter's; of a Python complex a NumPy one)."""
    import numpy

    return numpy.sign(z)


def complex_sign_expand(inference, node, inputs, out):
    """The `expand` of np.sign: of a complex (array) the op `complex_sign`, whose result
    changes with z (np.sign of a real number is a step: zero derivative)."""
    t = inputs[0].type
    dtype = t.dtype if isinstance(t, ArrayType) else t
    if not (is_numeric(dtype) and dtype.is_complex):
        return None
    return inference.infer_leaf(Node("complex_sign", [], node.outputs, loc=node.loc), inputs,
                                out)


_def("complex_sign", 1, _conj_rule, numpy_sign, {"c": Routine("complex_sign")},
     _WITH_RULES, ufunc="sign",
     cuda={"c": CExpr("astjit_csign({0})")},
     vjp=v.unary(rules.sign_adjoint),
     jvp=lambda e, d, ins, out, attrs: rules.sign_tangent(e, d[0], ins[0], out),
     doc="np.sign(z) of a complex, NumPy 2's: z / hypot(re, im), 0 for 0; NaN for a NaN "
         "magnitude; of an infinite one (an infinite part, or hypot overflowing) +-1 along "
         "the infinite part, 0 +- 1i where neither is, NaN where both are")
