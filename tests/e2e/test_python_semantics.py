"""CPython's semantics where compiled code could silently differ, or a clear refusal.

Integer constants beyond int64, range() of floats, `0 ** -1`, min/max of bools: each
case compares the compiled function with the plain one (value, type, exception class),
or checks the compile-time refusal names the construct.
"""
import functools
import math

import numpy as np
import pytest

import astjit
from astjit import grad, jit
from astjit.api import interpret_call

BIG = 2 ** 70
NEGATIVE_BIG = -(2 ** 64)
SMALLEST = -2 ** 63


def outcome(fn, args):
    try:
        return "value", fn(*args)
    except Exception as error:  # noqa: BLE001 - the class is compared
        return "raises", type(error)


def same_as_python(fn, *args):
    expected, got = outcome(fn, args), outcome(jit(fn), args)
    assert got == expected and type(got[1]) is type(expected[1]), (got, expected)


# ---- integer constants ------------------------------------------------------------------

def int64_limits(n):
    return n > -2**63, 2**63 - 1, -2**63, SMALLEST, 2**64 // 4, ~-2**63


def big_times_float(x):
    return x * (2**200 * 0.5)


@pytest.mark.parametrize("fn,args", [(int64_limits, (5,)), (big_times_float, (1.5,))],
                         ids=["limits", "float-result"])
def test_literal_arithmetic_is_exact(fn, args):
    same_as_python(fn, *args)


def literal_beyond(x):
    return x + 100000000000000000000


def bound_beyond(n):
    return n < 2**63


def global_beyond(x):
    return x + BIG


def tuple_global_beyond(x):
    return x + (1, NEGATIVE_BIG)[0]


def huge_power(x):
    return x + 2 ** 100000


def callee(x, big=2 ** 64):
    return x


def default_beyond(x):
    return callee(x)


@pytest.mark.parametrize("fn,named", [
    (literal_beyond, "100000000000000000000"), (bound_beyond, "2 ** 63"),
    (global_beyond, "BIG"), (tuple_global_beyond, "NEGATIVE_BIG"), (huge_power, "2 ** 100000"),
    (default_beyond, "big"),
])
def test_integer_constants_beyond_int64_are_refused(fn, named):
    with pytest.raises(astjit.TypingError) as caught:
        jit(fn)(1)
    assert named in str(caught.value) and "int64" in str(caught.value)


def test_refusal_suggests_a_float():
    with pytest.raises(astjit.TypingError, match=r"1e\+20"):
        jit(literal_beyond)(1.0)


# ---- range() takes ints -------------------------------------------------------------------

def float_stop(n):
    t = 0
    for i in range(n / 2):
        t += i
    return t


def float_start(a, n):
    t = 0
    for i in range(a, n):
        t += i
    return t


def bool_bounds(a, n):
    t = 0
    for i in range(a, n, True):
        t += i
    return t


@pytest.mark.parametrize("fn,args", [(float_stop, (7,)), (float_start, (0.5, 4))])
def test_range_of_a_float_is_refused(fn, args):
    with pytest.raises(astjit.TypingError, match="'float' object cannot be interpreted as an integer"):
        jit(fn)(*args)


def test_range_takes_bools_as_python_does():
    same_as_python(bool_bounds, True, 4)


# ---- exceptions ---------------------------------------------------------------------------

def power(a, b):
    return a ** b


@pytest.mark.parametrize("args", [(0, -1), (0, -3), (2, 10), (-3, 3), (0, 0)])
def test_integer_power(args):
    same_as_python(power, *args)


def test_negative_integer_power_is_refused_with_a_hint():
    with pytest.raises(ValueError, match=r"float\(a\) \*\* b"):
        jit(power)(2, -1)


# ---- min / max of bools -------------------------------------------------------------------

def extremes(a, b):
    return max(a, b), min(a, b), max(a, b, a), min(b, a, b)


@pytest.mark.parametrize("a", [False, True])
@pytest.mark.parametrize("b", [False, True])
def test_min_max_of_bools_are_bools(a, b):
    same_as_python(extremes, a, b)


# ---- Python's functions take Python's types ----------------------------------------------

def math_sqrt(x):
    return math.sqrt(x)


def math_floor_plus(x):
    return math.floor(x) + 1


def math_atan2(y, x):
    return math.atan2(y, x)


@pytest.mark.parametrize("fn,args,instead", [
    (math_sqrt, (np.arange(3.0),), "np.sqrt"),
    (math_floor_plus, (np.ones(2),), "NumPy"),
    (math_atan2, (1.0, np.ones(2)), "np.arctan2"),
])
def test_math_functions_refuse_arrays(fn, args, instead):
    with pytest.raises(TypeError):
        fn(*args)
    with pytest.raises(astjit.TypingError, match=f"{fn.__code__.co_names[-1]}.*not arrays.*{instead}"):
        jit(fn)(*args)


def test_math_functions_of_numbers_still_compile():
    same_as_python(math_sqrt, 4.0)
    same_as_python(math_floor_plus, 2.5)
    same_as_python(math_atan2, 1.0, -1.0)


def sign_of_atan2(y, x):
    return math.copysign(1.0, math.atan2(y, x))


def sign_of_numpy_arctan2(y, x):
    return math.copysign(1.0, float(np.arctan2(y, x)))


NEGATIVE_NAN = -abs(math.nan)


@pytest.mark.parametrize("args", [(NEGATIVE_NAN, 2.0), (2.0, NEGATIVE_NAN), (math.nan, NEGATIVE_NAN),
                                  (-0.0, -1.0), (-1.0, math.inf)])
def test_math_atan2_of_a_nan_is_pythons_own_nan(args):
    """CPython's m_atan2 returns its own positive NaN where C's atan2 returns the operand's
    (fuzz seed 41308, program 165: np.sqrt of a negative is a negative NaN); np.arctan2 keeps
    C's."""
    same_as_python(sign_of_atan2, *args)
    same_as_python(sign_of_numpy_arctan2, *args)


def nine():
    return 9


def power_of_a_constant_two_power(t):
    return (-1.0 + nine()) ** t, math.pow(nine() - 1.0, t)


@pytest.mark.parametrize("t", [-2.7488254850378655, 0.1, 1 / 3, 7.25, -300.5])
def test_a_power_of_two_base_is_cs_pow_not_exp2(t):
    """LLVM rewrites pow(8.0, t) as exp2(3.0 * t), which rounds 3t first: an ulp off CPython's
    pow (fuzz seed 41312, program 1878, the base a callee's constant)."""
    same_as_python(power_of_a_constant_two_power, t)


def nan_magnitude():
    return abs(np.log(-3.75))


def signs_of_constant_nans(x):
    return (math.copysign(x, nan_magnitude()), math.copysign(x, np.log(-3.75)),
            math.copysign(x, -abs(np.sqrt(-1.0))), math.copysign(x, abs(np.sqrt(-1.0))))


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_constant_nans_of_either_sign_stay_apart():
    """abs(np.log(-3.75)) folds to a positive NaN and np.log(-3.75) to a negative one: the
    optimizer merged the two constants as equal, and copysign took the negative (fuzz seed
    41314, program 1568)."""
    same_as_python(signs_of_constant_nans, 2.5)


def min_of_min_by_a_constant(p):
    return min(-3.75, min(p, -3.75)), max(2.5, max(p, 2.5)), min(0.0, min(p, 0.0))


def min_by_a_constant_in_a_loop(p):
    s, t = min(p, -3.75), max(p, -0.0)
    for i in range(3):
        s = min(-3.75, s)
        t = max(-0.0, t)
    return s, t


@pytest.mark.parametrize("fn", [min_of_min_by_a_constant, min_by_a_constant_in_a_loop])
@pytest.mark.parametrize("p", [math.nan, -math.inf, -5.0, -3.75, -0.0, 0.0, 2.5, 7.0])
def test_min_and_max_by_a_constant_keep_pythons_nan_rule(fn, p):
    """min(c, min(p, c)) is c where p is NaN (the inner min gives p, which loses the outer
    comparison). LLVM folded it to min(p, c), a NaN (fuzz seed 41318, program 2652), and
    made that shape itself of a loop's min(c, s), unrolled."""
    same_as_python(fn, p)


def fmod_of_a_nan_by_either_constant(p3, big):
    nan = float(np.sqrt(-3.75))
    if p3 > 0.5:
        p3 += math.fmod(nan, 9.0 if big else 2.0)
    return math.isnan(p3), math.isnan(math.fmod(float(np.sin(p3 * math.inf)), 2.0))


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("p3", [1.0, 0.0])
@pytest.mark.parametrize("big", [True, False])
def test_fmod_of_a_nan_is_a_nan(p3, big):
    """LLVM rewrote fmod(x, y), x never infinite and y never zero, as a `frem nnan`: poison
    for a NaN x, so that `p3 + fmod(nan, y)` became `p3` and a NaN fmod of a sine was taken
    for a number (fuzz seed 41320, program 6580)."""
    same_as_python(fmod_of_a_nan_by_either_constant, p3, big)


# ---- globals are read once, when the function is first compiled ----------------------------

SCALE = 2.0


def scaled(x):
    return SCALE * x


def test_globals_are_read_when_first_compiled():
    global SCALE
    compiled = jit(scaled)
    assert compiled(1.0) == 2.0
    SCALE = 3.0
    try:
        assert compiled(1.0) == 2.0 and compiled(1) == 2.0  # the README's example
        assert jit(scaled)(1.0) == 3.0
    finally:
        SCALE = 2.0


# ---- a bool on one path and an int on another keeps its type (int|bool) ---------------------

def or_value(n, m):
    return n > 0 or m


def and_value(n):
    return n > 0 and n


def ternary(n):
    return True if n else 2


def found_index(n):
    found = False
    for i in range(n):
        if i == 3:
            found = i
    return found


def arithmetic_reads_the_int(n, m):
    r = n > 0 or m
    return r + 1, r, -r, ~r, r * 2.5, r / 2, (r, n), int(r), bool(r), r == 1


def bitwise(n, m, c):
    a = n > 0 or n
    b = m > 0 or m
    return a & b, a | b, a ^ b, a & c, c | a, a & 3, a ^ a


def extremes_mixed(a, b):
    return max(a, b), min(a, b), max(a, b, 0), min(b, 2, a)


def callee_returns(x):
    return x


def through_a_call(n, m):
    return callee_returns(n > 0 or m)


MIXED = [(or_value, (1, 5)), (or_value, (-1, 5)), (and_value, (0,)), (and_value, (4,)),
         (ternary, (0,)), (ternary, (1,)), (found_index, (2,)), (found_index, (5,)),
         (arithmetic_reads_the_int, (1, 2)), (arithmetic_reads_the_int, (-1, 7)),
         (through_a_call, (1, 0)), (through_a_call, (0, 9))]
MIXED += [(bitwise, (n, m, c)) for n in (1, 0, -2) for m in (1, 5) for c in (True, False)]
MIXED += [(extremes_mixed, (a, b)) for a in (True, False, 0, 2) for b in (True, False, 1, -1)]


compiled = functools.cache(jit)
"""One compiled function per function: the cases below that run the same function on
arguments of the same types share its compilation."""


@pytest.mark.parametrize("fn,args", MIXED, ids=[f"{fn.__name__}{args}" for fn, args in MIXED])
def test_bool_or_int_keeps_cpythons_type(fn, args):
    expected, got = fn(*args), compiled(fn)(*args)
    assert repr(got) == repr(expected)


@pytest.mark.parametrize("fn,args", MIXED[:12], ids=[f"{fn.__name__}{args}" for fn, args in MIXED[:12]])
def test_interpreter_keeps_it_too(fn, args):
    assert repr(interpret_call(fn, args, {})) == repr(fn(*args))


def scaled_by_flag(x, n):
    k = n > 0 or n
    return x * x * k


def test_gradient_through_a_bool_or_int():
    for n in (-2, 0, 3):
        assert grad(scaled_by_flag)(1.5, n) == 2 * 1.5 * (True if n > 0 else n)


def zero_mod(y):
    return 0.0 % y


def zero_floordiv(y):
    return 0.0 // y


def zero_fmod(y):
    return math.fmod(0.0, y)


def negative_zero_mod(y):
    return -0.0 % y, -0.0 // y


def zero_fmod_of_array(y):
    return np.fmod(np.zeros(3), y), np.remainder(np.zeros(3), y)


# A constant zero dividend: LLVM folds libm's fmod(0.0, y) to 0.0 once it knows y != 0, a NaN y
# included (fuzz seed 20261205, program 747: a Pair's field 0.0 where CPython's was nan)
@pytest.mark.parametrize("y", [float("nan"), float("inf"), -float("inf"), 2.5, -2.5])
def test_a_zero_dividend_keeps_nan_and_signs(y):
    for fn in (zero_mod, zero_floordiv, zero_fmod, negative_zero_mod):
        want, got = fn(y), astjit.jit(fn)(y)
        assert repr(got) == repr(want), (fn.__name__, y)
    for want, got in zip(zero_fmod_of_array(y), astjit.jit(zero_fmod_of_array)(y)):
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def hypots(xs, ys):
    out = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        out[i] = math.hypot(xs[i], ys[i])
    return out, np.hypot(xs, ys), math.hypot(xs[0], ys[0])


def _hypot_operands():
    """Special values, subnormals, operands far apart and close in magnitude."""
    rng = np.random.default_rng(7555)
    special = np.array([4.2, 0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 2.2250738585072014e-308,
                        1e-310, 5.5e-309, 1.7976931348623157e308, 1e308, 3.0, 4.0])
    xs, ys = (a.ravel() for a in np.meshgrid(special, special))
    exponents = rng.integers(-1074, 1024, size=(2, 20000))
    exponents[1, ::2] = np.clip(exponents[0, ::2] + rng.integers(-60, 60, 10000), -1074, 1023)
    random = rng.uniform(-2, 2, size=(2, 20000)) * np.exp2(exponents.astype(float))
    return np.concatenate([xs, random[0]]), np.concatenate([ys, random[1]])


# math.hypot is CPython's own algorithm, not C's hypot: math.hypot(4.2, 4.2) is
# 5.939696961966999 where C's is 5.939696961967 (fuzz seed 20261205, program 7555)
def test_math_hypot_is_cpythons_and_np_hypot_numpys():
    xs, ys = _hypot_operands()
    loop, vector, first = jit(hypots)(xs, ys)
    want = np.array([math.hypot(x, y) for x, y in zip(xs.tolist(), ys.tolist())])
    np.testing.assert_array_equal(loop.view(np.int64)[~np.isnan(want)],
                                  want.view(np.int64)[~np.isnan(want)])
    np.testing.assert_array_equal(np.isnan(loop), np.isnan(want))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(vector, np.hypot(xs, ys))
    assert repr(first) == repr(5.939696961966999)  # of 4.2, 4.2
