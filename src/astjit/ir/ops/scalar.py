"""The table entries of the scalar primitives: arithmetic, comparisons, conversions,
stop_gradient.

Each block declares an op whole: type rule, evaluation, lowering, traits, its VJP
rule (ops/vjp.py) or why it has none, its NumPy spellings. The `math` functions
are in ops/mathfuncs.py."""

from __future__ import annotations

import builtins
import math
import operator

from ..core import Node
from ..shape_algebra import ONE, like
from ..types import (
    BOOL,
    BOTTOM,
    C128,
    F32,
    F64,
    I8,
    I64,
    INT_OR_BOOL,
    NONE,
    ArrayType,
    ScalarType,
    TupleType,
    exact,
    is_numeric,
    is_strong,
    python_type_of,
    strong,
    weak,
)
from . import complex_rules
from . import vjp as v
from .batching import each, elementwise, same_op
from .complexes import part_type
from .declare import _def
from .elementwise import computation_type, numpy_promote
from .python_complex import refusing_complex
from .python_scalars import to_int
from .semantics import (
    _getitem,
    _undef,
    int_result,
    py_cast,
    py_max,
    py_min,
    py_pow,
    py_raise_if,
    py_shift_left,
    py_shift_right,
)
from .strong import numpy_constant
from .table import (
    Builder,
    CExpr,
    Intrinsic,
    OnHost,
    OpTypeError,
    Refused,
    Routine,
    _numeric,
    arith_rule,
    bitwise_rule,
    cast_rule,
    compare_rule,
    const_rule,
    getitem_rule,
    int_only_rule,
    select_rule,
    to_int_rule,
    truediv_rule,
    truth_rule,
    tuple_rule,
    unary_arith_rule,
    undef_rule,
)

_ZERO_INT = "an int or bool result: a step function of its float inputs, if any"
_COMPARISON = "a comparison: a bool"
_OPERATOR = ("pure", "elementwise", "operator")
_ARITH_RAISES = ("pure", "raises", "elementwise", "operator")
_HOLOMORPHIC = (*_OPERATOR, "holomorphic")
"""An operator whose real VJP rule holds unchanged on complex numbers (JAX's convention,
docs/arrays.md: gradients): `g * f'(z)`, f holomorphic."""
_TO_INT = OnHost()  # Python's int of a float: never in a kernel (arrays have no math.floor)


def _infix(operator_: str) -> dict:
    """The CUDA lowering of a C infix operator, for every operand kind."""
    return {"*": CExpr(f"({{0}} {operator_} {{1}})")}


# ---- what type inference settles (OpDef.decide, expand, operands; ops/table.py) ---------

def _decided_bool(inference, node, value: bool, out):
    """A bool that types decide: a constant, which an `if` on it also knows (it types the
    branch taken only: the other may not type, `b.reshape` of a None)."""
    const = out.add("const", [], attrs={"value": value, "type": BOOL}, loc=node.loc,
                    names=[v.name for v in node.outputs], types=[BOOL])
    inference.static_truth[const.outputs[0]] = value
    return const.outputs


def _decide_is_none(inference, node, inputs, out):
    """`x is None`: whether x's type is None."""
    return _decided_bool(inference, node, inputs[0].type == NONE, out)


def _decide_not(inference, node, inputs, out):
    """`not b` of a bool that types decide: decided too."""
    truth = inference.static_truth.get(inputs[0])
    return None if truth is None else _decided_bool(inference, node, not truth, out)


def _decide_cast(inference, node, inputs, out):
    """bool(b) of a bool, float(x) of a float: nothing to do."""
    return inputs if exact(inputs[0].type) == exact(node.attrs["to"]) else None


def _tuple_constant(inference, node, inputs, out):
    """A tuple constant (a global `OFFSETS = (1, 2.5)`): a tuple of constants."""
    if not isinstance(node.attrs["value"], tuple):
        return None
    parts = [out.add("const", [], attrs=numpy_constant({"value": v}), loc=node.loc)
             for v in node.attrs["value"]]
    for p in parts:
        p.attrs["type"] = p.outputs[0].type = p.attrs.get("type") or \
            python_type_of(p.attrs["value"])
    return inference.infer_leaf(Node("tuple", [], node.outputs, loc=node.loc),
                                [p.outputs[0] for p in parts], out)


def _constant_operands(inference, node, attrs, inputs, out):
    """A NumPy scalar value as the Python scalar it equals, typed as the strong scalar it
    is (ops/strong.py); the type kept in attrs, as typed IR's constants have it."""
    attrs.update(numpy_constant(attrs))
    attrs["type"] = attrs.get("type") or python_type_of(attrs["value"])
    return inputs


def _placeholder_operands(inference, node, attrs, inputs, out):
    """The placeholder's type kept in attrs (BOTTOM when none is given)."""
    attrs["type"] = attrs.get("type") or BOTTOM
    return inputs


def _element_read(inference, node, inputs, out):
    """`x[0]` of an array (a getitem with a literal index): an `array_get` of that index."""
    if not isinstance(inputs[0].type, ArrayType):
        return None
    index = out.add("const", [], attrs={"value": node.attrs["index"], "type": I64},
                    loc=node.loc, types=[I64]).outputs[0]
    read = Node("array_get", [], node.outputs, loc=node.loc)
    return inference.infer_leaf(read, [inputs[0], index], out)


# ---- symbolic shapes (ir/shape_algebra.py) ------------------------------------------------

def _constant_length(node, table):
    """An int constant n >= 0 as a length: 1 is ONE, another n an atom of its own."""
    if node.attrs.get("type") == I64 and node.attrs["value"] >= 0:
        n = node.attrs["value"]
        return ONE if n == 1 else frozenset({("const", n)})
    return None


# ---- batching rules (ops/batching.py) ------------------------------------------

def _tuple_batch(b, node, ins, batched):
    """A tuple of batched and unbatched parts: each part as it is."""
    return [(b.op("tuple", *ins, **node.attrs), tuple(batched))]


def _getitem_batch(b, node, ins, batched):
    (flag,) = batched
    index = node.attrs["index"]
    return [(b.op("getitem", ins[0], index=index), flag[index] if isinstance(flag, tuple) else flag)]


def _cast_batch(b, node, ins, batched):
    """A conversion of a number per example: NumPy's, which is Python's but from a float
    to an int (Python's errors for NaN, infinities, out of range: checked)."""
    to, dtype = node.attrs["to"], ins[0].type.dtype
    if to.is_int and dtype.is_float:
        return each(to_int(b, ins[0], to))
    return each(ins[0] if weak(to) == dtype else b.op("array_astype", ins[0], dtype=weak(to)))


def _not_batch(b, node, ins, batched):
    """`not x` of a number per example: x == 0 (NaN is truthy)."""
    (x,) = ins
    if x.type.dtype == BOOL:
        return each(b.op("invert", x))
    return each(b.op("eq", x, b.const(0, x.type.dtype)))


def _add_sat_batch(b, node, ins, batched):
    """The int64 sum clamped to the int64 range: where the wrapped sum's sign differs from
    both operands', the bound of the operands' sign."""
    x, y = ins
    total = b.op("add", x, y)
    zero = b.const(0, I64)
    wrapped = b.op("bitand", b.op("ne", b.op("lt", total, zero), b.op("lt", x, zero)),
                   b.op("eq", b.op("lt", x, zero), b.op("lt", y, zero)))
    bound = b.op("where", b.op("lt", x, zero), b.const(-(2 ** 63), I64),
                 b.const(2 ** 63 - 1, I64))
    return each(b.op("where", wrapped, bound, total))


def _raise_if_batch(b, node, ins, batched):
    """Raised when the condition holds for some example."""
    some = b.op("ne", b.op("reduce", ins[0], kind="sum", axis=None, keepdims=False),
                b.const(0, I64))
    return [(b.op("raise_if", some, **node.attrs), False)]


def _choice_batch(compare: str):
    """min(a, b) / max(a, b) of a number per example: b where `b compare a`, else a."""
    def rule(b, node, ins, batched):
        x, y = ins
        return each(b.op("where", b.op(compare, y, x), y, x))
    return rule


def _cast_adjoint(e, g, x, out):
    """g cast back to x's type. Between a float and a complex that is JAX's transpose
    (docs/arrays.md: gradients): a complex adjoint's real part for a float x, and a float's
    is a complex with no imaginary part, which is what a cast gives. Forward mode takes
    this as the tangent cast to x's type, then to the result's: the same casts."""
    t = x.type
    return e.op("cast", g, to=t) if t.is_float or t.is_complex else None


# ---- the table ---------------------------------------------------------------

_def("const", 0, const_rule, lambda value, **_: value, {"*": Routine("const")},
     expand=_tuple_constant, operands=_constant_operands, shape=_constant_length,
     cuda={"*": CExpr("{value}")},
     zero_derivative="a constant")
_def("undef", 0, undef_rule, _undef, {"*": Routine("undef")}, zero_derivative="a placeholder",
     operands=_placeholder_operands,
     doc="a placeholder for a value not produced yet on this path (a return value before the return)")
_def("is_none", 1, lambda types, attrs: (list(types), BOOL), lambda x: x is None,
     {"*": Refused("`is None` is decided by type inference")},
     cuda=Refused("`is None` is decided by type inference"),
     no_vjp="type inference replaces it by a constant", decide=_decide_is_none,
     doc="`x is None`: decided by x's type; type inference replaces it by a constant")
_def("tuple", -1, tuple_rule, lambda *xs, node=None: tuple(xs), {"*": Routine("tuple")},
     batch=_tuple_batch, no_vjp="reverse mode handles tuples itself (ad/sweep.py: backward_tuple)")
_def("getitem", 1, getitem_rule, _getitem, {"*": Routine("getitem")}, expand=_element_read,
     batch=_getitem_batch, no_vjp="reverse mode handles tuples itself (ad/sweep.py: backward_getitem)")
def _python_cast_rule(types, attrs):
    """int(x), float(x) of a Python complex are Python's TypeError (`builtin`: the builtin's
    call; derivative code casts a complex adjoint to a float's, its real part)."""
    to = attrs["to"]
    if attrs.get("builtin") and types and types[0] == C128 and not types[0].strong and \
            not (to.is_complex or to == BOOL):
        name = "float" if to.is_float else "int"
        raise OpTypeError(f"{name}() argument must be a real number, not 'complex' (Python "
                          f"raises TypeError): take z.real or abs(z)")
    return cast_rule(types, attrs)


_def("cast", 1, _python_cast_rule, lambda x, to, builtin=False: py_cast(x, to),
     {"*": Routine("cast")},
     ("pure", "raises", "complex_rule"),
     decide=_decide_cast, batch=_cast_batch,
     llvm_numpy={"f": Routine("cast_numpy")},
     cuda={"*": CExpr("astjit_to<{T}>::from({0})"), "c": CExpr("astjit_complex_to<{T}>::from({0})")},
     vjp=v.unary(_cast_adjoint),
     doc="int(x), float(x), bool(x): float to int raises on NaN and infinity")
_def("select", 3, select_rule, lambda c, a, b: a if c else b, {"*": Builder("select")},
     ("pure", "holomorphic"), cuda={"*": CExpr("({0} ? {1} : {2})")}, batch=elementwise("where"),
     vjp=lambda e, g, ins, out, needs: [
         None, v.select(e, ins[0], g, v.c(e, 0.0, g)), v.select(e, ins[0], v.c(e, 0.0, g), g)])

_def("add", 2, arith_rule, operator.add, {"f": Builder("fadd"), "i": Builder("add"),
                                         "b": Builder("or_"), "c": Builder("fadd")},
     ("pure", "commutative", "elementwise", "operator", "holomorphic"), numpy=("add",), cuda=_infix("+"),
     vjp=lambda e, g, ins, out, needs: [g, g])
_def("sub", 2, arith_rule, operator.sub,
     {"f": Builder("fsub"), "i": Builder("sub"), "c": Builder("fsub")}, _HOLOMORPHIC,
     numpy=("subtract",), cuda=_infix("-"), vjp=lambda e, g, ins, out, needs: [g, e.op("neg", g)])
_def("add_sat", 2, int_only_rule, lambda a, b: max(-(2 ** 63), min(2 ** 63 - 1, a + b)),
     {"i": Intrinsic("llvm.sadd.sat")}, ("pure", "commutative"), zero_derivative="ints only",
     batch=_add_sat_batch,
     doc="int64 addition clamped to the int64 range: a range() counter's step, which must not wrap")
_def("mul", 2, arith_rule, operator.mul, {"f": Builder("fmul"), "i": Builder("mul"),
                                         "b": Builder("and_"), "c": Routine("complex_mul")},
     ("pure", "commutative", "elementwise", "operator", "holomorphic"), numpy=("multiply",), cuda=_infix("*"),
     vjp=lambda e, g, ins, out, needs: [e.op("mul", g, ins[1]) if needs[0] else None,
                                        e.op("mul", g, ins[0]) if needs[1] else None])
_def("truediv", 2, truediv_rule, operator.truediv,
     {"f": Routine("truediv"), "c": Routine("py_complex_div")},
     (*_ARITH_RAISES, "holomorphic"),
     llvm_numpy={"f": Builder("fdiv"), "c": Routine("complex_div")},
     numpy=("true_divide", "divide"), vjp=v.truediv_vjp,
     cuda={"f": CExpr("({0} / {1})"), "c": CExpr("({0} / {1})")},
     cuda_python={"c": CExpr("astjit_py_cdiv({0}, {1})")})
def _floordiv(a, b, divmod=False):
    """Python's a // b; `divmod`: the quotient of divmod(a, b) (frontend/builtins.py), the
    same number, whose ZeroDivisionError names divmod() ("float divmod()")."""
    return builtins.divmod(a, b)[0] if divmod else a // b


def _mod(a, b, divmod=False):
    """Python's a % b; `divmod`: the remainder of divmod(a, b), as `_floordiv`'s quotient."""
    return builtins.divmod(a, b)[1] if divmod else a % b


_def("floordiv", 2, arith_rule, _floordiv,
     {"f": Routine("floordiv_float"), "i": Routine("floordiv_int")}, _ARITH_RAISES,
     llvm_numpy={"f": Routine("floordiv_float_numpy"), "i": Routine("floordiv_int_numpy"),
                 "u": Routine("floordiv_uint_numpy")},
     numpy=("floor_divide",), zero_derivative=_ZERO_INT, decide=refusing_complex("//"),
     cuda={"f": CExpr("astjit_floordiv_float({0}, {1})"), "i": CExpr("astjit_floordiv_int({0}, {1})")})


def _mod_vjp(e, g, ins, out, needs):
    """a % b = a - b * floor(a / b) (floats): da = g, db = -g floor(a / b). The floor is
    NumPy's, a float: Python's (an int) raises OverflowError past int64 (1e300 % -1.0).
    `g` is an array's adjoint for np.remainder / `%` of arrays."""
    if not getattr(g.type, "dtype", g.type).is_float:
        return [None, None]
    quotient = e.op("numpy_floor", v.div(e, ins[0], ins[1]))
    if not v.is_array(quotient) and quotient.type != g.type:
        quotient = e.op("cast", quotient, to=g.type)
    return [g, e.op("neg", e.op("mul", g, quotient)) if needs[1] else None]


_def("mod", 2, arith_rule, _mod, {"f": Routine("mod_float"), "i": Routine("mod_int")},
     _ARITH_RAISES, llvm_numpy={"f": Routine("mod_float_numpy"), "i": Routine("mod_int_numpy"),
                                "u": Routine("mod_uint_numpy")},
     numpy=("remainder", "mod"), vjp=_mod_vjp, decide=refusing_complex("%"),
     cuda={"f": CExpr("astjit_mod_float({0}, {1})"), "i": CExpr("astjit_mod_int({0}, {1})")})


def _pow_operands(inference, node, attrs, inputs, out):
    """Marks the NumPy powers computed as sqrt where the exponent is 0.5 (`sqrt_at_half`).
    Of floats, those whose exponent is one number for every element: an array to a scalar
    or 0-d exponent, np.power of scalars (NumPy's loop's fast path for an exponent of
    stride 0); sqrt differs from pow at -0.0 (-0.0) and -inf (NaN). `**` of NumPy scalars
    is their scalar math, pow. Of complexes, `**` of an array to a Python float (NumPy's
    `fast_scalar_power`), csqrt where npy_cpow differs (-4 ** 0.5 is 2j, not 1.2e-16+2j).
    Decided once where `numpy` is set: a graph typed again has it on every NumPy-scalar
    power (the attr is left out where false and `numpy` unset, as on Python's powers)."""
    if "sqrt_at_half" not in attrs:
        base, exponent = (v.type for v in inputs)
        if any(getattr(t, "dtype", t).is_complex for t in (base, exponent)):
            half = (isinstance(base, ArrayType) and exponent == F64 and not exponent.strong
                    and not attrs.get("numpy"))
        else:
            half = getattr(exponent, "ndim", 0) == 0 and (
                isinstance(base, ArrayType) or bool(attrs.get("numpy")))
        if half or attrs.get("numpy"):
            attrs["sqrt_at_half"] = half
    return inputs


def _pow(a, b, sqrt_at_half=False):
    """Python's `**`. `sqrt_at_half` changes nothing here: it marks NumPy's powers, which the
    interpreter and the folder compute with NumPy itself (arrays, NumPy scalars)."""
    return py_pow(a, b)


_def("pow", 2, arith_rule, _pow, {"f": Routine("pow_float"), "i": Routine("pow_int"),
                                   "c": Routine("py_complex_pow")},
     (*_ARITH_RAISES, "holomorphic"), llvm_numpy={"f": Routine("pow_float_numpy"),
                                "i": Routine("pow_int_numpy"), "c": Routine("complex_pow")},
     numpy=("power",), vjp=v.pow_vjp, operands=_pow_operands,
     cuda={"f": CExpr("astjit_pow_float({0}, {1}, {attrs[sqrt_at_half]})"),
           "i": CExpr("astjit_pow_int({0}, {1}, astjit_error)"),
           "c": CExpr("astjit_cpow({0}, {1}, {attrs[sqrt_at_half]})")},
     cuda_python={"c": CExpr("astjit_py_cpow({0}, {1}, astjit_error)")})


def _shift_on_arrays(types):
    """`<<`, `>>` of arrays: NumPy's loop for NEP 50's promotion of the operands, bools as
    int8 (np.left_shift of bools is int8); of floats NumPy's TypeError."""
    c = computation_type(types)
    if not c.is_int and c != BOOL:
        shown = ", ".join(map(str, types))
        raise OpTypeError(f"shifts need integer or bool arrays, got ({shown}) (NumPy raises "
                          f"TypeError: ufunc not supported for the input types, which "
                          f"promote to {c}); convert with .astype(np.int64) first")
    t = I8 if c == BOOL else c
    return [t] * len(types), t


_SHIFT = ("pure", "raises", "elementwise", "operator")
_def("lshift", 2, int_only_rule, py_shift_left, {"i": Routine("lshift")}, _SHIFT,
     llvm_numpy={"i": Routine("lshift_numpy")}, numpy=("left_shift",),
     array_rule=_shift_on_arrays, zero_derivative="ints only",
     cuda={"i": CExpr("astjit_lshift({0}, {1})")},
     doc="a << b: Python's (ValueError for a negative count) on Python ints; NumPy's "
         "npy_lshift on arrays and NumPy scalars (0 for a count at or past the width)")
_def("rshift", 2, int_only_rule, py_shift_right, {"i": Routine("rshift")}, _SHIFT,
     llvm_numpy={"i": Routine("rshift_numpy"), "u": Routine("rshift_numpy")},
     numpy=("right_shift",), array_rule=_shift_on_arrays, zero_derivative="ints only",
     cuda={"i": CExpr("astjit_rshift({0}, {1})")},
     doc="a >> b: Python's on Python ints; NumPy's npy_rshift on arrays and NumPy scalars "
         "(the sign, 0 or -1, for a count at or past the width; unsigned logical)")
for _name, _fn, _instruction, _c in [("bitand", operator.and_, "and_", "&"),
                                     ("bitor", operator.or_, "or_", "|"),
                                     ("bitxor", operator.xor, "xor", "^")]:
    _def(_name, 2, bitwise_rule, _fn, {"i": Builder(_instruction), "b": Builder(_instruction),
                                       "*": Routine("bitwise_int_or_bool")},
         ("pure", "commutative", "elementwise", "operator"), numpy=("bitwise_" + _name[3:],),
         zero_derivative="ints and bools only", cuda=_infix(_c))
_def("neg", 1, unary_arith_rule, operator.neg,
     {"f": Builder("fneg"), "i": Builder("neg"), "c": Builder("fneg")},
     _HOLOMORPHIC, numpy=("negative",), cuda={"*": CExpr("(-{0})")},
     vjp=v.unary(lambda e, g, x, out: e.op("neg", g)))
_def("pos", 1, unary_arith_rule, operator.pos, {"*": Routine("identity")}, _HOLOMORPHIC,
     numpy=("positive",), cuda={"*": CExpr("{0}")}, vjp=v.unary(lambda e, g, x, out: g))
_def("invert", 1, int_only_rule, operator.invert, {"i": Builder("not_"), "b": Builder("not_")},
     _OPERATOR, numpy=("invert", "bitwise_not"), zero_derivative="ints and bools only",
     cuda={"i": CExpr("(~{0})"), "b": CExpr("(!{0})")},
     doc="~x of an int; of a bool only as NumPy's (~np.True_ is np.False_), ops/strong.py")
_def("not", 1, truth_rule, operator.not_, {"*": Routine("not")}, ("pure", "elementwise"),
     decide=_decide_not, batch=_not_batch,
     zero_derivative="a bool", cuda={"*": CExpr("(!{0})")})

def _order_rule(symbol: str):
    """The type rule of `<`, `<=`, `>`, `>=` (`symbol`): a Python complex with Python numbers
    is Python's TypeError (complex numbers have no order); with a NumPy scalar NumPy's
    comparison (ops/strong.py)."""
    def rule(types, attrs):
        if all(map(is_numeric, types)) and not any(map(is_strong, types)) and \
                any(t.is_complex for t in types):
            names = [{"c128": "complex", "f64": "float", "bool": "bool"}.get(t.name, "int")
                     for t in types]
            raise OpTypeError(f"'{symbol}' not supported between instances of '{names[0]}' "
                              f"and '{names[1]}' (complex numbers have no order): compare "
                              f"abs(z) or the parts z.real and z.imag")
        return compare_rule(types, attrs)
    return rule


for _name, _pred, _ufunc in [("lt", "<", "less"), ("le", "<=", "less_equal"),
                             ("gt", ">", "greater"), ("ge", ">=", "greater_equal"),
                             ("eq", "==", "equal"), ("ne", "!=", "not_equal")]:
    _fcmp = "fcmp_unordered" if _name == "ne" else "fcmp_ordered"
    _complex = {"c": Routine(f"complex_{_name}")} if _name in ("eq", "ne") else {}
    _rule = compare_rule if _name in ("eq", "ne") else _order_rule(_pred)
    _def(_name, 2, _rule, getattr(operator, _name),
         {"f": Builder(_fcmp, (_pred,)), "i": Builder("icmp_signed", (_pred,)),
          "u": Builder("icmp_unsigned", (_pred,)), "b": Builder("icmp_unsigned", (_pred,)),
          **_complex},
         ("pure", "commutative", "elementwise", "operator") if _name in ("eq", "ne") else _OPERATOR,
         numpy=(_ufunc,), zero_derivative=_COMPARISON, cuda=_infix(_pred))

def abs_rule(types, attrs):
    """abs(x): of x's type, but a complex's magnitude is a float (np.abs of complex64 is
    float32)."""
    operands, result = unary_arith_rule(types, attrs)
    return operands, part_type(result) if result.is_complex else result


def _abs_adjoint(e, g, x, out):
    """g sign(x); of a complex z, JAX's g conj(z) / |z| (0 at 0, complex_rules.py)."""
    if v.is_complex(x):
        return complex_rules.abs_adjoint(e, g, x, out)
    return v.sign_times(e, g, x)


def _abs_tangent(e, tangents, ins, out, attrs):
    """dx sign(x); of a complex z, Re(conj(z) dz) / |z| (complex_rules.py)."""
    if v.is_complex(ins[0]):
        return complex_rules.abs_tangent(e, tangents[0], ins[0], out)
    return v.sign_times(e, tangents[0], ins[0])


_def("abs", 1, abs_rule, abs, {"f": Intrinsic("llvm.fabs"), "i": Routine("abs_int"),
                                      "u": Routine("identity"), "b": Routine("identity"),
                                      "c": Routine("py_complex_abs")},
     (*_OPERATOR, "complex_rule"), python=("abs",), numpy=("absolute", "abs"),
     llvm_numpy={"c": Routine("complex_abs")},
     cuda={"f": CExpr("fabs({0})"), "i": CExpr("astjit_abs_int({0})"), "b": CExpr("{0}"),
           "c": CExpr("astjit_cabs({0})")},
     cuda_python={"c": CExpr("astjit_py_cabs({0})")},
     vjp=v.unary(_abs_adjoint), jvp=_abs_tangent)


def min_max_rule(types, attrs):
    """min/max return one of their operands, of its own type: two bools give a bool
    (`max(a > 0, b > 0)`), a bool and an int an int|bool (`max(b, n)` is True or n); with a
    NumPy scalar (ops/strong.py) a NumPy scalar of NumPy's promotion of the operands; other
    numbers promote as arithmetic does."""
    kinds = set(types)
    if kinds == {BOOL}:
        return [BOOL, BOOL], BOOL
    if kinds <= {BOOL, I64, INT_OR_BOOL} and kinds != {I64} and not any(map(is_strong, types)):
        return [INT_OR_BOOL, INT_OR_BOOL], INT_OR_BOOL
    if all(map(is_numeric, types)) and any(map(is_strong, types)):
        c = numpy_promote([weak(t) for t in types if t.strong], [t for t in types if not t.strong])
        return [strong(c)] * len(types), strong(c)
    return arith_rule([I64 if t == INT_OR_BOOL else t for t in types], attrs)


def _no_complex(name: str):
    """min_max_rule refusing complex operands: of a Python complex Python's TypeError (its
    `<`), of a NumPy complex scalar not supported yet (NumPy orders complexes
    lexicographically; compiled code does not)."""
    def rule(types, attrs):
        complexes = [t for t in types if isinstance(t, ScalarType) and t.is_complex]
        if complexes and not any(t.strong for t in complexes):
            raise OpTypeError(f"{name}() of a Python complex is Python's TypeError (complex "
                              "numbers have no order): compare abs(z) or the parts")
        if complexes:
            raise OpTypeError(f"{name}() of a NumPy complex scalar is not supported yet: "
                              "compare abs(z) or the parts")
        return min_max_rule(types, attrs)
    return rule


_def("min", 2, _no_complex("min"), py_min, {"*": Routine("min")}, ("pure", "elementwise"),
     array_refusal="min() of arrays is ambiguous: use np.minimum(a, b)",
     python=("min",), vjp=v.min_max_vjp("lt"),
     batch=_choice_batch("lt"), cuda={"*": CExpr("({1} < {0} ? {1} : {0})")})
_def("max", 2, _no_complex("max"), py_max, {"*": Routine("max")}, ("pure", "elementwise"),
     array_refusal="max() of arrays is ambiguous: use np.maximum(a, b)",
     python=("max",), vjp=v.min_max_vjp("gt"),
     batch=_choice_batch("gt"), cuda={"*": CExpr("({1} > {0} ? {1} : {0})")})

# float -> int (identity on ints); raise ValueError on NaN, OverflowError out of int64 range
_def("floor", 1, to_int_rule, int_result(math.floor), {"f": Routine("floor"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"), python=("math.floor",), zero_derivative=_ZERO_INT, cuda=_TO_INT,
     decide=refusing_complex("math.floor"))
_def("ceil", 1, to_int_rule, int_result(math.ceil), {"f": Routine("ceil"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"), python=("math.ceil",), zero_derivative=_ZERO_INT, cuda=_TO_INT,
     decide=refusing_complex("math.ceil"))


def trunc_rule(types, attrs):
    """math.trunc calls __trunc__, which of the NumPy scalars only np.float64 (a float)
    has: math.trunc(np.float32(x)) is a TypeError in Python, refused here."""
    t = types[0] if types else None
    if attrs.get("scalar_function") and getattr(t, "strong", False) and t != F64:
        raise OpTypeError(f"type {t} doesn't define __trunc__ method (math.trunc of a NumPy "
                          f"scalar other than np.float64 is a TypeError in Python); "
                          f"use int(x) or float(x) first")
    return to_int_rule(types, attrs)


_def("trunc", 1, trunc_rule, int_result(math.trunc), {"f": Routine("trunc"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"), python=("math.trunc",), zero_derivative=_ZERO_INT, cuda=_TO_INT,
     decide=refusing_complex("math.trunc"))
_def("round", 1, to_int_rule, int_result(round), {"f": Routine("round"), "i": Routine("identity")},
     ("pure", "raises", "elementwise"), python=("round",), zero_derivative=_ZERO_INT, cuda=_TO_INT,
     decide=refusing_complex("round"), doc="round(x): half to even, an int")


def len_rule(types, attrs):
    (t,) = types
    if isinstance(t, ArrayType) and t.ndim > 0:
        return [t], I64
    if not isinstance(t, TupleType):
        raise OpTypeError(f"len() needs a tuple or an array here, got {t}")
    return [t], I64


def raise_if_rule(types, attrs):
    return [BOOL], NONE


def index_rule(types, attrs):
    (t,) = types
    if t not in (BOOL, I64):
        raise OpTypeError(f"'{_PYTHON_NAMES.get(t, t)}' object cannot be interpreted as an integer")
    return [I64], I64


_PYTHON_NAMES = {F64: "float", F32: "numpy.float32", NONE: "NoneType"}


def tag_rule(types, attrs):
    (t,) = types
    if t not in (BOOL, I64) or is_strong(t):
        raise OpTypeError(f"only a bool or an int becomes an int|bool, got {t}")
    return [t], INT_OR_BOOL


def untag_rule(types, attrs):
    if types[0] != INT_OR_BOOL:
        raise OpTypeError(f"untag reads an int|bool, got {types[0]}")
    return [INT_OR_BOOL], I64


_def("tag", 1, tag_rule, lambda x: x, {"*": Routine("tag")}, zero_derivative="ints and bools only",
     doc="a bool or an int as an int|bool that remembers which it is (types.IntOrBoolType)")
_def("untag", 1, untag_rule, int, {"*": Routine("untag")}, zero_derivative="an int",
     doc="an int|bool's value as an int (True is 1)")

_def("len", 1, len_rule, len, {"*": Routine("len")}, python=("len",), zero_derivative="an int")
_def("index", 1, index_rule, lambda x: int(operator.index(x)), {"*": Routine("identity")},
     zero_derivative="an int",
     doc="operator.index(x): an int where Python takes only ints (range's bounds); a float "
         "is the TypeError Python's is")
_def("raise_if", 1, raise_if_rule, py_raise_if, {"b": Routine("raise_if")}, ("raises",),
     batch=_raise_if_batch,
     zero_derivative="no result (none)",
     doc="raise attrs['exc'](attrs['message']) when the operand is true; output is none")


# the identity, whose derivative is zero (autodiff.stop_gradient)

def stop_gradient_rule(types, attrs):
    if not isinstance(types[0], ArrayType):
        _numeric(types, "stop_gradient")
    return [types[0]], types[0]


_def("stop_gradient", 1, stop_gradient_rule, lambda x: x, {"*": Routine("identity")}, ("pure",),
     shape=like(0), batch=same_op,
     vjp=lambda e, g, ins, out, needs: [None], doc="the identity, whose derivative is zero")
