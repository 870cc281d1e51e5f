"""The table entries of the `math` functions and NumPy's elementwise functions on floats.

One block per op: Python's function (the interpreter's), the libm call or LLVM
intrinsic that computes it (`LibCall(name)` is also the C symbol the backend
links and may widen to libmvec), its VJP rule, its `math.` and `np.` spellings.
A `math` function stays Python's whatever its operands (trait 'math',
ops/strong.py); called as NumPy's (`np.tanh`) it computes as NumPy does.
"""
from __future__ import annotations

import math

from ...errors import TypingError
from ..core import Node, Value
from ..types import BOOL, ArrayType, NoneType, numpy_promote, weak
from . import vjp as v
from .complexes import complex_pred_rule, complex_sign_expand, float_or_complex_rule
from .declare import _def
from .elementwise import computation_type
from .table import (
    OPS,
    Builder,
    CExpr,
    Intrinsic,
    LibCall,
    OpTypeError,
    Refused,
    Routine,
    _numeric,
    arith_rule,
    float_rule,
    unary_arith_rule,
)

_MATH = ("pure", "raises", "elementwise", "math")


def _math1(name, fn, lowering, numpy=None, vjp=None, can_overflow=False, check="math1",
           complex_=None, ufunc=None):
    """A unary `math` function on floats, `math.<name>`, and NumPy's `np.<numpy>`; `vjp`
    gives x's adjoint from (e, g, x, out); `complex_`: the routine computing NumPy's function
    on a complex (backend/llvm/complexes.py), where NumPy has one (on the GPU the prelude's
    `astjit_c<name>`, backend/cuda/complexes.h); `ufunc`: its array form where NumPy has no
    function (`libm_ufunc`)."""
    rule = float_or_complex_rule if complex_ else float_rule
    llvm = {"f": lowering, "c": Routine(complex_)} if complex_ else {"f": lowering}
    # NumPy's own loop on a scalar, whose bits may differ from libm's (sqrt and fabs are exact)
    llvm_numpy = {"f": Routine("ufunc_loop")} if numpy and name not in ("sqrt", "fabs") else {}
    cuda = {"f": CExpr(f"{name}({{0}})")}
    if complex_:
        cuda["c"] = CExpr(f"astjit_c{name}({{0}})")
    traits = (*_MATH, "holomorphic") if complex_ else _MATH  # its rule: g * f'(z) on complexes
    _def(name, 1, rule, fn, llvm, traits, check=check, can_overflow=can_overflow, cuda=cuda,
         python=(f"math.{name}",), numpy=(numpy,) if numpy else (), vjp=v.unary(vjp), ufunc=ufunc,
         llvm_numpy=llvm_numpy)


def _math2(name, fn, lowering, vjp, numpy=None, python=None, check="math1", c_name=None, **kw):
    """A binary `math` function on floats (`c_name`: its C function, by default `name`)."""
    _def(name, 2, float_rule, fn, {"f": lowering}, _MATH, check=check, vjp=vjp,
         cuda={"f": CExpr(f"{c_name or name}({{0}}, {{1}})")},
         python=(f"math.{python or name}",), numpy=(numpy or name,) if numpy != "" else (), **kw)


def _one_minus_sq(e, x):
    return e.op("sub", v.c(e, 1.0, x), v.sq(e, x))


_math1("sqrt", math.sqrt, Intrinsic("llvm.sqrt"), "sqrt",
       lambda e, g, x, out: v.div(e, e.op("mul", g, v.c(e, 0.5, g)), out),
       complex_="csqrt")
_math1("exp", math.exp, Intrinsic("llvm.exp"), "exp",
       lambda e, g, x, out: e.op("mul", g, out), can_overflow=True,
       complex_="cexp")
_math1("exp2", math.exp2, Intrinsic("llvm.exp2"), "exp2",
       lambda e, g, x, out: e.op("mul", g, e.op("mul", out, v.c(e, math.log(2.0), out))),
       can_overflow=True,
       complex_="complex_exp2")
_math1("expm1", math.expm1, LibCall("expm1"), "expm1",
       lambda e, g, x, out: e.op("mul", g, e.op("add", out, v.c(e, 1.0, out))), can_overflow=True,
       complex_="complex_expm1")
_math1("log", math.log, Intrinsic("llvm.log"), "log", lambda e, g, x, out: v.div(e, g, x),
       complex_="clog")
_math1("log2", math.log2, Intrinsic("llvm.log2"), "log2",
       lambda e, g, x, out: v.div(e, g, e.op("mul", x, v.c(e, math.log(2.0), x))),
       complex_="complex_log2")
_math1("log10", math.log10, Intrinsic("llvm.log10"), "log10",
       lambda e, g, x, out: v.div(e, g, e.op("mul", x, v.c(e, math.log(10.0), x))),
       complex_="complex_log10")
_math1("log1p", math.log1p, LibCall("log1p"), "log1p",
       lambda e, g, x, out: v.div(e, g, e.op("add", x, v.c(e, 1.0, x))),
       complex_="complex_log1p")
_math1("sin", math.sin, Intrinsic("llvm.sin"), "sin",
       lambda e, g, x, out: e.op("mul", g, e.op("cos", x)),
       complex_="csin")
_math1("cos", math.cos, Intrinsic("llvm.cos"), "cos",
       lambda e, g, x, out: e.op("neg", e.op("mul", g, e.op("sin", x))),
       complex_="ccos")
_math1("tan", math.tan, LibCall("tan"), "tan",
       lambda e, g, x, out: e.op("mul", g, e.op("add", v.c(e, 1.0, out), v.sq(e, out))),
       complex_="ctan")
_math1("asin", math.asin, LibCall("asin"), "arcsin",
       lambda e, g, x, out: v.div(e, g, e.op("sqrt", _one_minus_sq(e, x))),
       complex_="casin")
_math1("acos", math.acos, LibCall("acos"), "arccos",
       lambda e, g, x, out: e.op("neg", v.div(e, g, e.op("sqrt", _one_minus_sq(e, x)))),
       complex_="cacos")
_math1("atan", math.atan, LibCall("atan"), "arctan",
       lambda e, g, x, out: v.div(e, g, e.op("add", v.c(e, 1.0, x), v.sq(e, x))),
       complex_="catan")
_math1("sinh", math.sinh, LibCall("sinh"), "sinh",
       lambda e, g, x, out: e.op("mul", g, e.op("cosh", x)), can_overflow=True,
       complex_="csinh")
_math1("cosh", math.cosh, LibCall("cosh"), "cosh",
       lambda e, g, x, out: e.op("mul", g, e.op("sinh", x)), can_overflow=True,
       complex_="ccosh")
_math1("tanh", math.tanh, LibCall("tanh"), "tanh",
       lambda e, g, x, out: e.op("mul", g, _one_minus_sq(e, out)),
       complex_="ctanh")
_math1("asinh", math.asinh, LibCall("asinh"), "arcsinh",
       lambda e, g, x, out: v.div(e, g, e.op("sqrt", e.op("add", v.sq(e, x), v.c(e, 1.0, x)))),
       complex_="casinh")
_math1("acosh", math.acosh, LibCall("acosh"), "arccosh",  # sqrt(z - 1) sqrt(z + 1): its branches
       lambda e, g, x, out: v.div(e, g, e.op("mul", e.op("sqrt", e.op("sub", x, v.c(e, 1.0, x))),
                                             e.op("sqrt", e.op("add", x, v.c(e, 1.0, x))))),
       complex_="cacosh")
_math1("atanh", math.atanh, LibCall("atanh"), "arctanh",
       lambda e, g, x, out: v.div(e, g, _one_minus_sq(e, x)),
       complex_="catanh")


def _erf_adjoint(e, g, x, out):
    """d erf(x) = 2 / sqrt(pi) exp(-x^2) dx."""
    return e.op("mul", g, e.op("mul", v.c(e, 2.0 / math.sqrt(math.pi), x),
                               e.op("exp", e.op("neg", v.sq(e, x)))))


def libm_ufunc(fn):
    """`fn`, a `math` function NumPy lacks, computed as a ufunc would compute it on NumPy
    arrays and scalars: each element by `fn` (libm's on Linux, as compiled code calls it)
    in double precision, the result in the dtype np.sin gives (float32 stays float32). It
    is the array form the interpreter runs, so that vmap batches math.erf."""
    def function(x):
        import numpy as np

        x = np.asarray(x)
        dtype = np.sin(np.zeros((), x.dtype)).dtype
        flat = np.fromiter(map(fn, x.astype(np.float64).ravel().tolist()), np.float64, x.size)
        return flat.reshape(x.shape).astype(dtype)[()]
    function.__name__ = fn.__name__
    return function


_math1("erf", math.erf, LibCall("erf"), None, _erf_adjoint, ufunc=libm_ufunc(math.erf))
_math1("erfc", math.erfc, LibCall("erfc"), None,
       lambda e, g, x, out: e.op("neg", _erf_adjoint(e, g, x, out)), ufunc=libm_ufunc(math.erfc))
_math1("fabs", math.fabs, Intrinsic("llvm.fabs"), "fabs",
       lambda e, g, x, out: v.sign_times(e, g, x), check=None)


def _atan2_vjp(e, g, ins, out, needs):
    """atan2(y, x): dy = x / (x^2 + y^2), dx = -y / (x^2 + y^2), computed as g / h * x / h
    and its like with h = hypot(x, y): x^2 + y^2 overflows past 1e154 and underflows
    below 1e-162 (d/dy atan2(y, 1e300) is 1e-300, not 0: fuzz seed 41309, program 8479)."""
    y, x = ins
    h = e.op("hypot", x, y)
    scale = v.div(e, g, h)
    return [v.div(e, e.op("mul", scale, x), h), e.op("neg", v.div(e, e.op("mul", scale, y), h))]


def _hypot_vjp(e, g, ins, out, needs):
    """hypot(x, y): dx = x / out, dy = y / out."""
    scale = v.div(e, g, out)
    return [e.op("mul", scale, ins[0]), e.op("mul", scale, ins[1])]


def _copysign_vjp(e, g, ins, out, needs):
    """copysign(a, b) = |a| sign(b): da = sign(a) sign(b) g; b only chooses a sign."""
    one = v.c(e, 1.0, g)
    sign = e.op("mul", e.op("copysign", one, ins[0]), e.op("copysign", one, ins[1]))
    return [e.op("mul", g, sign), None]


def _fmod_vjp(e, g, ins, out, needs):
    """fmod(a, b) = a - b * trunc(a / b): da = g, db = -g trunc(a / b). The trunc is NumPy's,
    a float: Python's (an int) raises OverflowError past int64 (math.fmod(1e56, -0.1))."""
    quotient = e.op("numpy_trunc", v.div(e, ins[0], ins[1]))
    if not v.is_array(quotient) and quotient.type != g.type:
        quotient = e.op("cast", quotient, to=g.type)
    return [g, e.op("neg", e.op("mul", g, quotient)) if needs[1] else None]


_math2("atan2", math.atan2, LibCall("atan2", own_nan=True), _atan2_vjp, numpy="arctan2",
       llvm_numpy={"f": Routine("ufunc_loop")})
_math2("hypot", math.hypot, Routine("math_hypot"), _hypot_vjp, check=None,
       llvm_numpy={"f": LibCall("hypot")},
       doc="math.hypot(x, y): CPython's own algorithm, almost always correctly rounded "
           "(backend/llvm/hypot.py); np.hypot is C's hypot, as NumPy's is")
_math2("copysign", math.copysign, Intrinsic("llvm.copysign"), _copysign_vjp, check=None)
_math2("fmod", math.fmod, LibCall("fmod", vector=False), _fmod_vjp, numpy="")


def _numpy_fmod(a, b):
    """NumPy's fmod of Python numbers: C's remainder, with the sign of `a`; of ints 0 by
    zero, of floats NaN where math.fmod raises."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return 0
        remainder = abs(a) % abs(b)
        return -remainder if a < 0 else remainder
    try:
        return math.fmod(a, b)
    except ValueError:
        return math.nan


_def("numpy_fmod", 2, arith_rule, _numpy_fmod,
     {"f": Routine("fmod_float_numpy"), "i": Routine("fmod_int_numpy"),
      "u": Routine("fmod_uint_numpy")}, ("pure", "elementwise"), numpy=("fmod",),
     vjp=_fmod_vjp, cuda={"f": CExpr("fmod({0}, {1})"), "i": CExpr("astjit_fmod_int({0}, {1})")},
     doc="np.fmod: C's remainder (the sign of a) in the operands' type; an int by zero is 0 "
         "(math.fmod is `fmod`: floats, Python's errors)")
_math2("fpow", math.pow, Routine("math_pow"), v.pow_vjp, numpy="", python="pow", ufunc="power", c_name="pow",
       llvm_numpy={"f": Intrinsic("llvm.pow")},
       can_overflow=True, doc="math.pow(a, b): floats, Python's errors (np.power is `pow`)")

for _name, _fn in [("isnan", math.isnan), ("isinf", math.isinf), ("isfinite", math.isfinite)]:
    _def(_name, 1, complex_pred_rule, _fn, {"f": Routine(_name), "c": Routine(f"complex_{_name}")},
         ("pure", "elementwise", "math"),
         cuda={"f": CExpr(f"{_name}({{0}})"), "c": CExpr(f"astjit_c{_name}({{0}})")},
         python=(f"math.{_name}",), numpy=(_name,), zero_derivative="a bool")


# ---- NumPy's rounding: np.floor, np.ceil, np.trunc, np.round -----------------------------------
# Python's math.floor and round give ints (ops/scalar.py); NumPy's give a float of the
# operand's type (an int operand is its own result), the sign of a zero kept.

def _rounding(fn):
    """NumPy's rounding `fn` on a Python number: an int as it is, a float rounded with
    the sign of a zero result kept (np.ceil(-0.5) is -0.0), inf and NaN as they are."""
    def rounded(x):
        if isinstance(x, int) or not math.isfinite(x):
            return x
        result = float(fn(x))
        return math.copysign(result, x) if result == 0.0 else result
    return rounded


_STEP = "a step function: flat wherever it is differentiable"
for _name, _fn, _spellings, _intrinsic, _c in [
        ("numpy_floor", math.floor, ("floor",), "llvm.floor", "floor"),
        ("numpy_ceil", math.ceil, ("ceil",), "llvm.ceil", "ceil"),
        ("numpy_trunc", math.trunc, ("trunc", "fix"), "llvm.trunc", "trunc"),
        ("numpy_round", round, ("round", "around"), "llvm.roundeven", "rint")]:
    _def(_name, 1, unary_arith_rule, _rounding(_fn),
         {"f": Intrinsic(_intrinsic), "i": Routine("identity"), "b": Routine("identity")},
         ("pure", "elementwise"),
         numpy=_spellings,
         cuda={"f": CExpr(f"{_c}({{0}})"), "i": CExpr("{0}"), "b": CExpr("{0}")},
         zero_derivative=_STEP,
         doc=f"np.{_spellings[0]}: a float of the operand's type, an int itself (round: "
             "half to even, decimals=0)")


# ---- NumPy's own: np.sign, np.minimum, np.maximum, np.where ------------------------------------

def _np_sign(x):
    """NumPy's sign: 1 or -1 of x's type, a zero +0 (np.sign(-0.0) is 0.0), a NaN itself."""
    if x > 0:
        return type(x)(1)
    if x < 0:
        return type(x)(-1)
    return type(x)(0) if x == 0 else x


def _sign_rule(types, attrs):
    """x's type; of a complex the op `complex_sign` (its `expand`), not this step."""
    operands, result = unary_arith_rule(types, attrs)
    if result.is_complex:
        raise OpTypeError("numpy_sign takes real numbers: complex_sign computes np.sign of "
                          "a complex")
    return operands, result


_def("numpy_sign", 1, _sign_rule, _np_sign,
     {"f": Routine("sign_float"), "i": Routine("sign_int"), "u": Routine("sign_uint")},
     ("pure", "elementwise"), numpy=("sign",), zero_derivative=_STEP,
     expand=complex_sign_expand,
     cuda={"f": CExpr("({0} > 0 ? ({T})1 : {0} < 0 ? ({T})-1 : {0} == 0 ? ({T})0 : {0})"),
           "i": CExpr("(({T})({0} > 0) - ({T})({0} < 0))"), "u": CExpr("(({T})({0} != 0))")},
     doc="np.sign: 1 or -1 in the operand's type, 0 for a zero (+0.0 for -0.0), NaN for NaN "
         "(of bools NumPy's TypeError)")



def _np_minimum(a, b):
    """NumPy's `minimum` (x86): `a` if it is smaller or NaN, else `b`; so a NaN wins and a
    tie (0.0 and -0.0) gives `b`."""
    return a if a < b or a != a else b


def _np_maximum(a, b):
    """NumPy's `maximum`: `a` if it is larger or NaN, else `b`."""
    return a if a > b or a != a else b


def where_rule(types, attrs):
    """np.where of scalars (which ir/infer.py makes a 0-d array): NEP 50's promotion of a
    and b, NumPy scalars strong, Python ones weak; a bool condition keeps its strength."""
    _numeric(types, "np.where()")
    t = numpy_promote([weak(x) for x in types[1:] if x.strong],
                      [x for x in types[1:] if not x.strong])
    return [types[0] if types[0] == BOOL else BOOL, t, t], t


def _where_on_arrays(types):
    """np.where(c, a, b) with an array among them: a and b promote (NEP 50); the
    condition must be a bool."""
    t = computation_type(types[1:])
    condition = types[0].dtype if isinstance(types[0], ArrayType) else types[0]
    if condition != BOOL:
        raise OpTypeError(f"np.where() needs a bool condition here, got {types[0]}")
    return [BOOL, t, t], t


def _scalar_where(inference, node, inputs, out):
    """np.where(c, a, b) of scalars (OpDef.expand): NumPy's is a 0-d array (np.where is
    not a ufunc), of a and b's NEP 50 promotion (NumPy scalars strong, Python ones weak)."""
    if any(isinstance(v.type, ArrayType) for v in inputs):
        return None
    try:
        operand_types, c = OPS["where"].rule([v.type for v in inputs], {})
    except OpTypeError as error:
        raise TypingError(str(error), node.loc) from None
    operands = [inference.coerce(out, v, t, node.loc) for v, t in zip(inputs, operand_types)]
    chosen = out.add("where", operands, attrs={}, loc=node.loc, types=[c]).outputs[0]
    make = Node("array_new", [], node.outputs, attrs={"fill": "value", "dtype": weak(c)},
                loc=node.loc)
    return inference.infer_leaf(make, [chosen], out)


_def("minimum", 2, arith_rule, _np_minimum,
     {"f": Routine("np_minimum"), "i": Routine("min"), "u": Intrinsic("llvm.umin"),
      "b": Routine("min")},
     ("pure", "elementwise"), numpy=("minimum",), vjp=v.min_max_vjp("lt"),
     cuda={"*": CExpr("astjit_minimum({0}, {1})")},
     doc="np.minimum: the smaller, NaN if either is NaN, b on a tie (not commutative: -0.0 and 0.0)")
_def("maximum", 2, arith_rule, _np_maximum,
     {"f": Routine("np_maximum"), "i": Routine("max"), "u": Intrinsic("llvm.umax"),
      "b": Routine("max")},
     ("pure", "elementwise"), numpy=("maximum",), vjp=v.min_max_vjp("gt"),
     cuda={"*": CExpr("astjit_maximum({0}, {1})")},
     doc="np.maximum: the larger, NaN if either is NaN, b on a tie")
_CLIP_RESOLVED = "np.clip() is replaced by np.maximum and np.minimum in type inference"


def _clip_expand(inference, node, inputs, out):
    """np.clip(x, lo, hi) as NumPy's loop computes it: np.minimum(np.maximum(x, lo), hi)
    (NaN wins; on a tie the bound), but with both bounds scalars (or 0-d), where NumPy's
    loop for bounds constant across it keeps the clipped value on a tie instead (its
    compiled form): np.minimum(hi, np.maximum(lo, x)). The two differ only in the sign of
    a zero: np.clip(-1.0, 0.0, -0.0) is 0.0, np.clip([-1.0], [0.0], [-0.0]) is [-0.0]. A
    bound None is absent: np.maximum(x, lo) or np.minimum(x, hi), as NumPy computes it."""
    x, lo, hi = inputs
    if node.attrs.get("method") and not isinstance(x.type, ArrayType) and not x.type.strong:
        raise TypingError("a Python number has no attribute 'clip' (Python's AttributeError):"
                          " np.clip(x, lo, hi) takes one", node.loc)
    given = [not isinstance(b.type, NoneType) for b in (lo, hi)]
    if not any(given):
        raise TypingError("np.clip() with neither bound is a copy of its array: write "
                          "np.copy(x)", node.loc)
    if not all(given):  # as NumPy's: np.maximum(x, lo) or np.minimum(x, hi) alone
        alone = Node("maximum" if given[0] else "minimum", [], node.outputs,
                     attrs={"numpy": True}, loc=node.loc)
        return inference.infer_leaf(alone, [x, lo if given[0] else hi], out)
    constant = all(not isinstance(b.type, ArrayType) or b.type.ndim == 0 for b in (lo, hi))
    larger = Node("maximum", [], [Value("clipped_below")], attrs={"numpy": True}, loc=node.loc)
    (below,) = inference.infer_leaf(larger, [lo, x] if constant else [x, lo], out)
    smaller = Node("minimum", [], node.outputs, attrs={"numpy": True}, loc=node.loc)
    return inference.infer_leaf(smaller, [hi, below] if constant else [below, hi], out)


def _clip_rule(types, attrs):
    raise OpTypeError(_CLIP_RESOLVED)


def _np_clip(x, lo, hi):
    """NumPy's (the interpreter's, on untyped IR)."""
    import numpy

    return numpy.clip(x, lo, hi)


_def("numpy_clip", 3, _clip_rule, _np_clip, {"*": Refused(_CLIP_RESOLVED)},
     ("pure", "elementwise"), numpy=("clip",), expand=_clip_expand, no_vjp=_CLIP_RESOLVED,
     cuda=Refused(_CLIP_RESOLVED),
     doc="np.clip(x, lo, hi): np.minimum and np.maximum in NumPy's order, which depends on "
         "whether the bounds are scalars (replaced in type inference)")
_def("where", 3, where_rule, lambda c, a, b: a if c else b, {"*": Builder("select")},
     ("pure", "elementwise", "holomorphic"), numpy=("where",), cuda={"*": CExpr("({0} ? {1} : {2})")},
     array_rule=_where_on_arrays, expand=_scalar_where,
     vjp=lambda e, g, ins, out, needs: [
         None, v.select(e, ins[0], g, v.c(e, 0.0, g)) if needs[1] else None,
         v.select(e, ins[0], v.c(e, 0.0, g), g) if needs[2] else None],
     doc="np.where(c, a, b): a select with NumPy's promotion of a and b")
