"""The CPU backend on hand-built typed graphs: every Routine against Python, control flow,
calls and recursion, tuples, the fast entry's fallback, error reporting and refcounts."""
import gc
import math
import sys
import tracemalloc

import numpy as np
import pytest
from ir_builders import Handler, compile_module, const, graph_of, module_of, no_fallback, op

from astjit.backend.llvm import build_entry, emit_module, messages
from astjit.backend.llvm.codegen import CHECKS, ROUTINES
from astjit.errors import Loc
from astjit.ir.ops import OPS, Routine
from astjit.ir.types import BOOL, F32, F64, I64, NONE, TupleType

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
INF, NAN = math.inf, math.nan


# ---- building and compiling graphs --------------------------------------------------

def leaf_module(name, in_types, out_type, **attrs):
    g = graph_of(name, *in_types)
    g.outputs = [op(g, name, g.params, out_type, **attrs)]
    return module_of(g)


# ---- comparing outcomes exactly ------------------------------------------------------

def outcome(fn, *args):
    """('ok', value) or ('raise', exception type, message)."""
    try:
        return ("ok", fn(*args))
    except (ArithmeticError, ValueError) as exc:
        return ("raise", type(exc), str(exc))


def same_value(a, b):
    """Equal with the same type, floats bit for bit up to NaN payloads (signed zeros differ)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(same_value, a, b))
    return a == b


def same_outcome(got, want):
    if got[0] != want[0]:
        return False
    if got[0] == "ok":
        return same_value(got[1], want[1])
    return got[1] is want[1] and got[2] == want[2]


def wrap64(x):
    return ((x - INT64_MIN) % 2 ** 64) + INT64_MIN


def python_float_pow(a, b):
    """CPython's float `**`, a complex result being ValueError (as `ops.float_pow` intends).

    `ops.float_pow` itself differs from CPython at 0.0 ** -inf (inf) and at
    negative ** ±inf (math.floor(inf) raises there)."""
    if -INF < a < 0 and math.isfinite(b) and b != math.floor(b):
        raise ValueError("negative number cannot be raised to a fractional power")
    return a ** b


def reference(name, args, out_type, attrs):
    """The table's Python semantics, as int64 code computes it: ints wrap, and a float
    converted to an int outside int64 is an OverflowError."""
    if name == "pow" and out_type == F64:
        return python_float_pow(*args)
    value = OPS[name].evaluate(*args, **attrs)
    if out_type == I64:
        if isinstance(args[0], float) and not INT64_MIN <= value <= INT64_MAX:
            raise OverflowError(messages.INT_RANGE.format(bits=64))
        return wrap64(value)
    return {F64: float, BOOL: bool}[out_type](value)


def check_leaf(name, in_types, out_type, cases, **attrs):
    """Compile one leaf op, run it on every case, compare with `reference`."""
    call = compile_module(leaf_module(name, in_types, out_type, **attrs)).call
    bad = []
    for args in cases:
        got = outcome(call, *args)
        want = outcome(reference, name, args, out_type, attrs)
        if not same_outcome(got, want):
            bad.append((args, got, want))
    assert not bad, f"{name}: {len(bad)} mismatches, e.g. {bad[:4]}"


def pairs(values):
    return [(a, b) for a in values for b in values]


INTS = [0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, INT64_MIN, INT64_MAX, INT64_MIN + 1, 2 ** 32]
FLOATS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 7.5, -7.5, 0.1, 1e308, -1e308, 5e-324,
          1e-300, INF, -INF, NAN, 2.5, 1e16]


# ---- the table is covered ------------------------------------------------------------

def test_every_routine_and_check_of_the_table_is_implemented():
    for opdef in OPS.values():
        for lowering in opdef.llvm.values():
            if isinstance(lowering, Routine):
                assert lowering.name in ROUTINES, (opdef.name, lowering.name)
        assert opdef.check is None or opdef.check in CHECKS, opdef.name


# ---- arithmetic routines against Python -----------------------------------------------

@pytest.mark.parametrize("name", ["floordiv", "mod"])
def test_int_division_floors_and_wraps(name):
    check_leaf(name, [I64, I64], I64, pairs(INTS))


@pytest.mark.parametrize("name", ["floordiv", "mod"])
@pytest.mark.parametrize("divisor", [1, 2, 8, 2 ** 62, 3, -2, -1, INT64_MIN])
def test_int_division_by_constants(name, divisor):
    g = graph_of(name, I64)
    g.outputs = [op(g, name, [g.params[0], const(g, divisor, I64)], I64)]
    call = compile_module(module_of(g)).call
    for a in INTS + [5, -5, 9, -9, -(2 ** 62) - 1]:
        assert call(a) == wrap64(OPS[name].evaluate(a, divisor)), (a, divisor)


@pytest.mark.parametrize("name", ["floordiv", "mod", "truediv"])
def test_float_division_signed_zeros_and_infinities(name):
    check_leaf(name, [F64, F64], F64, pairs(FLOATS))


def test_int_pow_by_squaring_wraps_and_rejects_negative_exponents():
    cases = [(a, b) for a in [0, 1, -1, 2, -2, 3, -3, 10, 2 ** 31 + 1] for b in range(-2, 70)]
    cases += [(1, 2 ** 62), (-1, 2 ** 62 + 1), (0, INT64_MAX)]
    check_leaf("pow", [I64, I64], I64, cases)


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 5, 13, 64])
def test_int_pow_by_a_constant_exponent(exponent):
    g = graph_of("p", I64)
    g.outputs = [op(g, "pow", [g.params[0], const(g, exponent, I64)], I64)]
    call = compile_module(module_of(g)).call
    for base in [0, 1, -1, 2, -3, 12345, INT64_MIN]:
        assert call(base) == wrap64(base ** exponent)


def test_float_pow_special_values_and_errors():
    values = FLOATS + [2.0, -2.0, 10.0, 400.0, -400.0, 1 / 3, -8.0]
    check_leaf("pow", [F64, F64], F64, pairs(values))


def test_math_pow_errors():
    values = FLOATS + [2.0, -2.0, 10.0, 400.0, -400.0, 1 / 3, -8.0]
    check_leaf("fpow", [F64, F64], F64, pairs(values))


@pytest.mark.parametrize("name", ["lshift", "rshift"])
def test_shifts_reject_negative_counts_and_saturate(name):
    cases = [(a, b) for a in [0, 1, -1, 5, -5, INT64_MIN, INT64_MAX]
             for b in [0, 1, 2, 31, 62, 63, 64, 65, 100, 1000, -1, INT64_MIN]]
    check_leaf(name, [I64, I64], I64, cases)


@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_follow_python_with_nans(name):
    check_leaf(name, [F64, F64], F64, pairs([0.0, -0.0, 1.0, -1.0, NAN, INF, -INF]))
    check_leaf(name, [I64, I64], I64, pairs(INTS))


def test_abs_and_negation_of_int64_min_wrap():
    check_leaf("abs", [I64], I64, [(x,) for x in INTS])
    check_leaf("neg", [I64], I64, [(x,) for x in INTS])
    check_leaf("abs", [F64], F64, [(x,) for x in FLOATS])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "bitand", "bitor", "bitxor", "lt", "le",
                                  "gt", "ge", "eq", "ne"])
def test_builder_lowerings(name):
    out = BOOL if name in ("lt", "le", "gt", "ge", "eq", "ne") else I64
    check_leaf(name, [I64, I64], out, pairs(INTS))
    if name not in ("bitand", "bitor", "bitxor"):
        check_leaf(name, [F64, F64], BOOL if out == BOOL else F64, pairs(FLOATS))


def test_unary_builder_lowerings():
    check_leaf("neg", [F64], F64, [(x,) for x in FLOATS])
    check_leaf("pos", [F64], F64, [(x,) for x in FLOATS])
    check_leaf("invert", [I64], I64, [(x,) for x in INTS])


def test_bool_ops():
    for name in ["bitand", "bitor", "bitxor", "lt", "eq", "ne"]:
        check_leaf(name, [BOOL, BOOL], BOOL, pairs([True, False]))
    check_leaf("not", [BOOL], BOOL, [(True,), (False,)])


def test_select():
    check_leaf("select", [BOOL, F64, F64], F64, [(True, 1.0, 2.0), (False, 1.0, 2.0)])


# ---- conversions and rounding ----------------------------------------------------------

def test_truth_and_not():
    check_leaf("not", [F64], BOOL, [(x,) for x in FLOATS])
    check_leaf("not", [I64], BOOL, [(x,) for x in INTS])
    check_leaf("cast", [F64], BOOL, [(x,) for x in FLOATS], to=BOOL)
    check_leaf("cast", [I64], BOOL, [(x,) for x in INTS], to=BOOL)


def test_casts_between_numbers():
    check_leaf("cast", [I64], F64, [(x,) for x in INTS], to=F64)
    check_leaf("cast", [BOOL], F64, [(True,), (False,)], to=F64)
    check_leaf("cast", [BOOL], I64, [(True,), (False,)], to=I64)


FLOAT_TO_INT = [0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 2.675, -0.0, 0.49999999999999994,
                4503599627370497.0, 9.2e18, -9.2e18, 2.0 ** 63, -(2.0 ** 63), 1e300, -1e300,
                NAN, INF, -INF, 1e-300, 123456789.75]


def test_float_to_int_truncates_and_raises_like_python():
    check_leaf("cast", [F64], I64, [(x,) for x in FLOAT_TO_INT], to=I64)
    assert compile_module(leaf_module("cast", [F64], I64, to=I64)).call(-(2.0 ** 63)) == INT64_MIN


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "round"])
def test_rounding_to_int(name):
    check_leaf(name, [F64], I64, [(x,) for x in FLOAT_TO_INT])
    check_leaf(name, [I64], I64, [(x,) for x in INTS])


def test_round_is_half_to_even():
    call = compile_module(leaf_module("round", [F64], I64)).call
    assert [call(x) for x in [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5]] == [0, 2, 2, 0, -2, -2, 4]


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
def test_float_classification(name):
    check_leaf(name, [F64], BOOL, [(x,) for x in FLOATS])


def test_f32_values_round_trip_through_casts():
    g = graph_of("narrow", F64)
    x32 = op(g, "cast", [g.params[0]], F32, to=F32)
    doubled = op(g, "add", [x32, x32], F32)
    g.outputs = [op(g, "cast", [doubled], F64, to=F64)]
    call = compile_module(module_of(g)).call
    assert call(0.1) == float(np.float32(0.1) * 2)


# ---- math functions and their CPython error rule ---------------------------------------

MATH_ARGS = [-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 10.0, 710.0, 1000.0, 1e300, 5e-324,
             INF, -INF, NAN]
UNARY_MATH = [name for name, d in OPS.items() if d.check == "math1" and d.arity == 1]
BINARY_MATH = [name for name, d in OPS.items() if d.check == "math1" and d.arity == 2]


@pytest.mark.parametrize("name", UNARY_MATH + ["fabs"])
def test_unary_math_matches_cpython(name):
    check_leaf(name, [F64], F64, [(x,) for x in MATH_ARGS])


@pytest.mark.parametrize("name", BINARY_MATH + ["copysign"])
def test_binary_math_matches_cpython(name):
    cases = pairs([-1.0, -0.0, 0.0, 0.5, 2.0, 1e308, INF, -INF, NAN])
    if name == "hypot":
        # CPython's hypot returns inf without raising where the table says OverflowError.
        cases = [(a, b) for a, b in cases if not (abs(a) == 1e308 and abs(b) == 1e308)]
    check_leaf(name, [F64, F64], F64, cases)


def test_math_on_f32_widens_to_the_c_function():
    g = graph_of("tan32", F64)
    x32 = op(g, "cast", [g.params[0]], F32, to=F32)
    g.outputs = [op(g, "cast", [op(g, "tan", [x32], F32)], F64, to=F64)]
    assert compile_module(module_of(g)).call(0.5) == float(np.float32(math.tan(np.float32(0.5))))


# ---- tuples, constants, placeholders, raise --------------------------------------------

PAIR = TupleType((I64, F64))
NESTED = TupleType((BOOL, PAIR, NONE))


def test_tuples_in_and_out():
    g = graph_of("swap", NESTED)
    flag = op(g, "getitem", [g.params[0]], BOOL, index=0)
    pair = op(g, "getitem", [g.params[0]], PAIR, index=-2)
    i, f = op(g, "getitem", [pair], I64, index=0), op(g, "getitem", [pair], F64, index=1)
    size = op(g, "len", [g.params[0]], I64)
    out_type = TupleType((F64, I64, TupleType((BOOL, I64))))
    inner = op(g, "tuple", [flag, size], out_type.elements[2])
    g.outputs = [op(g, "tuple", [f, i, inner], out_type)]
    call = compile_module(module_of(g)).call
    assert call((True, (7, 2.5), None)) == (2.5, 7, (True, 3))
    assert call((False, (-1, -0.0), None))[0] == -0.0


def test_special_float_constants():
    g = graph_of("consts")
    t = TupleType((F64, F64, F64, F64, F32))
    g.outputs = [const(g, (NAN, -INF, -0.0, 5e-324, 0.1), t)]
    got = compile_module(module_of(g)).call()
    assert same_value(got[:4], (NAN, -INF, -0.0, 5e-324))
    assert got[4] == float(np.float32(0.1))


def test_if_and_while_carrying_none_and_tuples():
    t = TupleType((I64, NONE))
    g = graph_of("carry", BOOL, I64)
    flag, n = g.params
    then, other = graph_of("then", I64), graph_of("else", I64)
    then.outputs = [op(then, "tuple", [then.params[0], const(then, None, NONE)], t)]
    other.outputs = [const(other, (-1, None), t)]
    picked = g.add("if", [flag, n], regions=[then, other], types=[t]).outputs[0]
    cond = graph_of("cond", t)
    cond.outputs = [op(cond, "gt", [op(cond, "getitem", cond.params, I64, index=0),
                                    const(cond, 0, I64)], BOOL)]
    body = graph_of("body", t)
    count = op(body, "getitem", body.params, I64, index=0)
    left = op(body, "sub", [count, const(body, 1, I64)], I64)
    body.outputs = [op(body, "tuple", [left, op(body, "getitem", body.params, NONE, index=1)], t)]
    final = g.add("while", [picked], attrs={"n_invariants": 0}, regions=[cond, body],
                  types=[t]).outputs[0]
    g.outputs = [op(g, "tuple", [picked, final], TupleType((t, t)))]
    call = compile_module(module_of(g)).call
    assert call(True, 5) == ((5, None), (0, None))
    assert call(False, 5) == ((-1, None), (-1, None))


def test_constant_tuples_none_and_undef():
    g = graph_of("consts")
    t = TupleType((I64, F64, BOOL, NONE))
    made = const(g, (2 ** 64 + 5, 1.5, True, None), t)
    placeholder = op(g, "undef", [], F64, type=F64)
    g.outputs = [op(g, "tuple", [made, placeholder, const(g, None, NONE)],
                    TupleType((t, F64, NONE)))]
    assert compile_module(module_of(g)).call() == ((5, 1.5, True, None), 0.0, None)


def test_raise_if_reports_its_site_with_the_location():
    g = graph_of("check", I64)
    loc = Loc("user.py", 12, 4, "    assert x > 0")
    bad = op(g, "le", [g.params[0], const(g, 0, I64)], BOOL)
    g.add("raise_if", [bad], attrs={"exc": "AssertionError", "message": "x must be positive"},
          types=[NONE], loc=loc)
    g.outputs = [g.params[0]]
    entry = compile_module(module_of(g))
    assert entry.call(3) == 3
    with pytest.raises(AssertionError, match="x must be positive"):
        entry.call(-3)
    assert entry.errors == [("AssertionError", "x must be positive", loc)]
    assert entry.handler.calls == 1


# ---- control flow and calls ------------------------------------------------------------

def fib_module():
    g = graph_of("fib", I64)
    (n,) = g.params
    small = op(g, "lt", [n, const(g, 2, I64)], BOOL)
    then = graph_of("then", I64)
    then.outputs = [then.params[0]]
    other = graph_of("else", I64)
    m = other.params[0]
    f1 = op(other, "call", [op(other, "sub", [m, const(other, 1, I64)], I64)], I64, callee="fib")
    f2 = op(other, "call", [op(other, "sub", [m, const(other, 2, I64)], I64)], I64, callee="fib")
    other.outputs = [op(other, "add", [f1, f2], I64)]
    g.outputs = g.add("if", [small, n], regions=[then, other], types=[I64]).outputs
    return module_of(g)


def test_recursion():
    call = compile_module(fib_module()).call
    assert [call(i) for i in range(15)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377]
    assert call(25) == 75025


def collatz_module():
    """steps(n): Collatz steps to 1 — a while whose body holds an if, int // and %."""
    g = graph_of("steps", I64)
    cond = graph_of("cond", I64, I64)
    cond.outputs = [op(cond, "ne", [cond.params[0], const(cond, 1, I64)], BOOL)]
    body = graph_of("body", I64, I64)
    n, count = body.params
    even = op(body, "eq", [op(body, "mod", [n, const(body, 2, I64)], I64), const(body, 0, I64)],
              BOOL)
    half = graph_of("half", I64)
    half.outputs = [op(half, "floordiv", [half.params[0], const(half, 2, I64)], I64)]
    triple = graph_of("triple", I64)
    x = triple.params[0]
    triple.outputs = [op(triple, "add", [op(triple, "mul", [x, const(triple, 3, I64)], I64),
                                         const(triple, 1, I64)], I64)]
    nxt = body.add("if", [even, n], regions=[half, triple], types=[I64]).outputs[0]
    body.outputs = [nxt, op(body, "add", [count, const(body, 1, I64)], I64)]
    loop = g.add("while", [g.params[0], const(g, 0, I64)], 2, attrs={"n_invariants": 0},
                 regions=[cond, body], types=[I64, I64])
    g.outputs = [loop.outputs[1]]
    return module_of(g)


def python_collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_while_with_if_in_its_body():
    call = compile_module(collatz_module()).call
    assert [call(n) for n in range(1, 60)] == [python_collatz(n) for n in range(1, 60)]


def test_while_whose_cond_region_branches_and_uses_invariants():
    """count(limit, step): i += step while (i < limit if i is even else i < limit - 1)."""
    g = graph_of("count", I64, I64)
    cond = graph_of("cond", I64, I64, I64, I64)
    limit, _, i, _ = cond.params
    even = op(cond, "eq", [op(cond, "mod", [i, const(cond, 2, I64)], I64), const(cond, 0, I64)],
              BOOL)
    a, b = graph_of("a", I64, I64), graph_of("b", I64, I64)
    a.outputs = [op(a, "lt", a.params[::-1], BOOL)]
    b.outputs = [op(b, "lt", [b.params[1], op(b, "sub", [b.params[0], const(b, 1, I64)], I64)],
                    BOOL)]
    cond.outputs = cond.add("if", [even, limit, i], regions=[a, b], types=[BOOL]).outputs
    body = graph_of("body", I64, I64, I64, I64)
    _, step, i2, trips = body.params
    body.outputs = [op(body, "add", [i2, step], I64),
                    op(body, "add", [trips, const(body, 1, I64)], I64)]
    loop = g.add("while", [*g.params, const(g, 0, I64), const(g, 0, I64)], 2,
                 attrs={"n_invariants": 2}, regions=[cond, body], types=[I64, I64])
    g.outputs = [op(g, "tuple", loop.outputs, TupleType((I64, I64)))]

    def python(limit, step):
        i = trips = 0
        while (i < limit) if i % 2 == 0 else (i < limit - 1):
            i, trips = i + step, trips + 1
        return i, trips
    call = compile_module(module_of(g)).call
    for args in [(10, 1), (10, 3), (0, 1), (11, 2), (100, 7)]:
        assert call(*args) == python(*args)


def test_errors_propagate_through_calls():
    callee = graph_of("inv", F64)
    callee.outputs = [op(callee, "truediv", [const(callee, 1.0, F64), callee.params[0]], F64)]
    g = graph_of("outer", F64)
    inverse = op(g, "call", g.params, F64, callee="inv")
    g.outputs = [op(g, "add", [inverse, const(g, 1.0, F64)], F64)]
    module = module_of(g, callee)
    call = compile_module(module).call
    assert call(4.0) == 1.25
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        call(0.0)


def test_against_the_interpreter():
    interp = pytest.importorskip("astjit.ir.interp")
    for module, args in [(fib_module(), [(i,) for i in range(12)]),
                         (collatz_module(), [(n,) for n in range(1, 30)])]:
        call = compile_module(module).call
        for a in args:
            assert call(*a) == interp.interpret(module, list(a))


# ---- the fast entry: fallback, errors, references ---------------------------------------

class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "fallback"


def test_fallback_takes_every_call_the_entry_does_not_match_exactly():
    recorder = Recorder()
    g = graph_of("f", F64, I64, BOOL)
    g.outputs = [g.params[0]]
    call = compile_module(module_of(g), recorder).call

    class MyFloat(float):
        pass
    assert call(1.5, 2, True) == 1.5
    odd = [(1, 2, True), (1.5, 2.0, True), (1.5, True, True), (1.5, 2, 1),
           (np.float64(1.5), 2, True), (MyFloat(1.5), 2, True), (1.5, 2 ** 63, True),
           (1.5, -2 ** 70, True), (1.5, 2), ()]
    for args in odd:
        assert call(*args) == "fallback"
    assert call(1.5, 2, flag=True) == "fallback"
    assert call(x=1.5) == "fallback"
    expected = [(args, {}) for args in odd] + [((1.5, 2), {"flag": True}), ((), {"x": 1.5})]
    assert [(tuple(a), k) for a, k in recorder.calls] == expected


def test_tuple_arguments_must_match_shape_exactly():
    recorder = Recorder()
    g = graph_of("first", PAIR)
    g.outputs = [op(g, "getitem", g.params, I64, index=0)]
    call = compile_module(module_of(g), recorder).call
    assert call((3, 1.0)) == 3
    for bad in [(3, 1.0, 2), (3,), [3, 1.0], (3.0, 1.0), (3, 1)]:
        assert call(bad) == "fallback"
    assert len(recorder.calls) == 5


def test_fallback_exceptions_propagate():
    def failing(*args):
        raise KeyError("from fallback")
    g = graph_of("f", F64)
    g.outputs = [g.params[0]]
    with pytest.raises(KeyError):
        compile_module(module_of(g), failing).call("not a float")


def test_error_handler_gets_the_status_and_its_return_value_is_returned():
    g = graph_of("div", F64, F64)
    g.outputs = [op(g, "truediv", g.params, F64)]
    statuses = []
    entry = build_entry(module_of(g), no_fallback, lambda s: statuses.append(s) or "handled")
    assert entry.call(1.0, 0.0) == "handled"
    assert statuses == [1]
    assert entry.errors[0][:2] == ("ZeroDivisionError", messages.FLOAT_DIVISION)


def test_results_have_one_reference_and_nothing_leaks():
    t = TupleType((F64, TupleType((I64, BOOL)), NONE))
    g = graph_of("make", F64, I64)
    x, n = g.params
    inner = op(g, "tuple", [n, op(g, "gt", [n, const(g, 0, I64)], BOOL)], t.elements[1])
    g.outputs = [op(g, "tuple", [op(g, "add", [x, const(g, 1.0, F64)], F64), inner,
                                 const(g, None, NONE)], t)]
    call = compile_module(module_of(g)).call
    result = call(1.5, 10 ** 12)
    assert sys.getrefcount(result) == 2
    # An item: the tuple's reference, the subscript's temporary, getrefcount's argument.
    assert sys.getrefcount(result[1]) == 3
    assert sys.getrefcount(result[0]) == 3
    arg = 10 ** 15 + 1
    before = sys.getrefcount(arg), sys.getrefcount(None)
    for _ in range(1000):
        call(1.5, arg)
    assert (sys.getrefcount(arg), sys.getrefcount(None)) == before
    assert_no_growth(lambda: call(1.5, 10 ** 12))


def test_error_path_does_not_leak():
    g = graph_of("div", F64, F64)
    g.outputs = [op(g, "truediv", g.params, F64)]
    call = compile_module(module_of(g)).call

    def fail():
        try:
            call(1.0, 0.0)
        except ZeroDivisionError:
            pass
    assert_no_growth(fail, rounds=20_000)


def assert_no_growth(step, rounds=100_000):
    """Traced memory after `rounds` calls stays within a few kB of what it was after 1000."""
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(1000):
            step()
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(rounds):
            step()
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert growth < 16_000, f"{growth} bytes more after {rounds} calls"


def test_builtin_keeps_its_fallback_and_handler_alive():
    g = graph_of("f", F64)
    g.outputs = [op(g, "truediv", [const(g, 1.0, F64), g.params[0]], F64)]
    call = build_entry(module_of(g), lambda *a: "fallback", Handler()).call
    gc.collect()
    assert call("x") == "fallback"
    assert call(2.0) == 0.5


# ---- texts and timing -------------------------------------------------------------------

def pi_sum_module():
    g = graph_of("pi_sum", I64)
    (n,) = g.params
    cond = graph_of("cond", I64, F64, I64)
    cond.outputs = [op(cond, "le", [cond.params[2], cond.params[0]], BOOL)]
    body = graph_of("body", I64, F64, I64)
    _, s, k = body.params
    kk = op(body, "cast", [op(body, "mul", [k, k], I64)], F64, to=F64)
    term = op(body, "truediv", [const(body, 1.0, F64), kk], F64)
    body.outputs = [op(body, "add", [s, term], F64), op(body, "add", [k, const(body, 1, I64)], I64)]
    loop = g.add("while", [n, const(g, 0.0, F64), const(g, 1, I64)], 2, attrs={"n_invariants": 1},
                 regions=[cond, body], types=[F64, I64])
    g.outputs = [loop.outputs[0]]
    return module_of(g)


def test_pi_sum_compiles_fast_and_dumps_every_stage():
    entry = compile_module(pi_sum_module())  # its latency is measured in benchmarks/
    assert abs(entry.call(10 ** 6) - math.pi ** 2 / 6) < 1e-5
    assert "while.cond" in entry.llvm_ir and ".fastcall" in entry.llvm_ir
    assert "define" in entry.llvm_ir_optimized
    assert ".fastcall" in entry.asm


def test_emit_module_gives_status_returning_functions():
    lowered = emit_module(fib_module())
    fn = lowered.entry_function
    assert str(fn.function_type.return_type) == "i32"
    assert str(fn.args[-1].type) == "i64*"
    assert "call" in lowered.text
    assert [site.exc for site in lowered.errors] == ["RecursionError"]  # the stack check
