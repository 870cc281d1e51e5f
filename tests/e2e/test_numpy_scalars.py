"""NumPy scalars are strong, Python scalars weak (NEP 50), with NumPy's semantics on NumPy scalars.

Every case runs the plain function and the compiled one on the same arguments and
compares value AND type (`same`): np.float64 where NumPy gives one, a Python float
where Python does. The rules are in src/astjit/ir/ops/strong.py.
"""
import functools
import math
import warnings

import numpy as np
import pytest

from astjit import grad, jit, value_and_grad
from astjit.api import interpret_call
from astjit.ir.types import F32, F64, I64, TypeKey, exact, join, python_type_of, strong

WEAK = {"bool": True, "int": 3, "float": 2.5}
STRONG = {"np.bool_": np.bool_(True), "np.int64": np.int64(3), "np.float64": np.float64(2.5),
          "np.float32": np.float32(1.5)}
ARRAYS = {"f64[]": lambda: np.array([1.5, -2.0]), "f32[]": lambda: np.array([1.5, -2.0], np.float32),
          "i64[]": lambda: np.array([3, -4])}


def value_of(name):
    return ARRAYS[name]() if name in ARRAYS else {**WEAK, **STRONG}[name]


def run(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", fn(*args)
        except Exception as exc:  # noqa: BLE001
            return "raise", exc


def same(a, b, ulps: int = 0) -> bool:
    """Equal values of exactly the same type (arrays: dtype and elements; NaN equals NaN);
    floats within `ulps` units in the last place."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and \
            all(same(x, y, ulps) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (float, np.floating)) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (float, np.floating)) and ulps and math.isfinite(a):
        return abs(a - b) <= ulps * np.spacing(np.abs(a))
    return a == b


compiled = functools.cache(jit)
"""One compiled function per function and target for all of the file's checks: each signature
compiles once."""


def check(fn, *args, ulps: int = 0):
    ref, got = run(fn, *args), run(compiled(fn), *args)
    if ref[0] == "raise":
        assert got[0] == "raise" and isinstance(got[1], type(ref[1])), \
            f"{fn.__name__}{args}: Python raised {ref[1]!r}, compiled gave {got[1]!r}"
        return
    assert got[0] == "ok", f"{fn.__name__}{args}: compiled raised {got[1]!r}, Python gave {ref[1]!r}"
    assert same(ref[1], got[1], ulps), f"{fn.__name__}{args}: {got[1]!r} != {ref[1]!r}"


# ---- promotion: every pair of kinds, each op -----------------------------------------------

def arith(a, b):
    return a + b, a - b, a * b, a / b


def compare(a, b):
    return a < b, a == b


def power(a, b):
    return a ** b


PAIRS = [(x, y) for x in [*WEAK, *STRONG] for y in [*WEAK, *STRONG]
         if "bool" not in x or "bool" not in y] + \
        [(x, y) for x in ARRAYS for y in [*STRONG, "float", "int"]]


@pytest.mark.parametrize("x,y", PAIRS)
def test_promotion_table(x, y):
    """NEP 50: a NumPy scalar promotes as an array does, a Python scalar is weak."""
    check(arith, value_of(x), value_of(y))
    check(compare, value_of(x), value_of(y))


@pytest.mark.parametrize("x,y", [("np.float64", "float"), ("float", "np.float64"), ("np.int64", "int"),
                                 ("np.float32", "float"), ("np.int64", "float"), ("int", "np.float32")])
def test_power_promotes_like_numpy(x, y):
    check(power, value_of(x), value_of(y))


def both_bools(a, b):
    return a & b, a | b, a ^ b, a == b, a + 1, a * 2.5


@pytest.mark.parametrize("a,b", [(np.bool_(True), np.bool_(False)), (np.bool_(True), False),
                                 (True, np.bool_(True))])
def test_bool_scalars(a, b):
    check(both_bools, a, b)


def bool_sum(a, b):
    return a + b


def test_bool_plus_bool_is_numpys_logical_or():
    """NumPy's np.bool_ + np.bool_ is a bool (logical or), as compiled code's."""
    for a, b in [(True, True), (True, False), (False, False)]:
        check(bool_sum, np.bool_(a), np.bool_(b))


# ---- NumPy's semantics on NumPy scalars; Python's on Python scalars ---------------------------

def divide(a, b):
    return a / b


def floor_divide(a, b):
    return a // b


def modulo(a, b):
    return a % b


def negate_bits(v):
    return ~v


@pytest.mark.parametrize("fn", [divide, floor_divide, modulo, power])
@pytest.mark.parametrize("a,b", [(np.float64(1.0), 0.0), (1.0, np.float64(0.0)), (np.int64(7), 0),
                                 (7, np.int64(0)), (np.int64(-7), 2), (np.float32(-7.5), 2.0),
                                 (np.float64(0.0), -1.0), (np.int64(2), -1), (np.int64(0), -2),
                                 (np.float64(-8.0), 0.5), (1.0, 0.0), (7, 0)])
def test_division_and_power(fn, a, b):
    check(fn, a, b)


@pytest.mark.parametrize("v", [np.bool_(True), np.bool_(False), np.int64(5), True, 5])
def test_invert(v):
    check(negate_bits, v)


def np_functions(a):
    return np.sqrt(a), np.log(a), np.arccos(a), np.log10(a), np.exp(a), np.arcsin(a)


def math_functions(a):
    return math.sqrt(a), math.log(a)


@pytest.mark.parametrize("a", [-1.0, 0.0, 2.0, 1000.0, np.float64(-1.0), np.float32(-1.0),
                               np.float32(2.0), 3, np.int64(-2)])
def test_numpy_functions_give_nan_and_inf(a):
    check(np_functions, a, ulps=1)  # float32 math is the C library's, NumPy has its own


@pytest.mark.parametrize("a", [-1.0, 2.0, np.float64(-1.0), np.float64(4.0), np.float32(4.0)])
def test_math_functions_stay_python(a):
    """math.sqrt of a NumPy scalar raises and returns a Python float, as in Python."""
    check(math_functions, a)


def loop_sum(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s, s / 0.0


def element(x, i):
    return x[i], x[i] > 0, float(x[i]), int(x[i])


def reductions(x):
    return x.sum(), np.mean(x * 2), x.max(), np.sum(x) + 1.0


@pytest.mark.parametrize("make", list(ARRAYS.values()), ids=list(ARRAYS))
def test_array_scalars_are_numpy_scalars(make):
    check(loop_sum, make())
    check(element, make(), 1)
    check(reductions, make())


def choose(c, a, x):
    y = a
    if c:
        y = x[0]
    return y * 2.0


def test_merge_of_python_and_numpy_scalars_is_numpy_scalar():
    """A variable that is a Python float on one path and an np.float64 on another is an
    np.float64 (README); on the path that keeps the Python float the type differs."""
    check(choose, True, 1.0, np.array([3.0]))
    got = jit(choose)(False, 1.0, np.array([3.0]))
    assert got == 2.0 and type(got) is np.float64
    assert exact(join(F64, strong(F64))) == exact(strong(F64))
    assert exact(join(F64, F32)) == exact(F32) and exact(join(I64, strong(F64))) == exact(strong(F64))


def min_max(a, b):
    return min(a, b), max(a, b)


def test_min_max_of_numpy_scalars():
    check(min_max, np.float64(1.0), np.float64(2.0))
    check(min_max, np.int64(3), np.int64(-3))


# ---- arguments and results -------------------------------------------------------------------

def add_one(v):
    return v + 1


@pytest.mark.parametrize("v", [np.float64(1.5), np.float32(1.5), np.int64(2 ** 62), np.bool_(True),
                               1.5, 3, True])
def test_numpy_scalar_arguments_keep_their_type(v):
    check(add_one, v)


@pytest.mark.parametrize("v", [np.float16(1), np.longdouble(1), np.datetime64(1, "s")])
def test_other_numpy_scalars_are_refused_naming_the_argument(v):
    with pytest.raises(TypeError, match=r"argument 'v' of add_one\(\) is a numpy\.") as info:
        jit(add_one)(v)
    assert "which compiled code does not take" in str(info.value)


def identity(v):
    return v


def test_signatures_tell_numpy_scalars_from_python_scalars():
    f = jit(identity)
    for v in [1.0, np.float64(1.0), 1.0, np.float32(1.0), 2, np.int64(2), True, np.bool_(True)] * 2:
        assert same(v, f(v))
    assert len(f.signatures) == 7  # 1.0 and np.float64(1.0) ... each their own
    assert TypeKey([F64]) != TypeKey([strong(F64)]) and F64 == strong(F64)


def tuple_result(x, v):
    return (x[0], v, v * 2), v


def test_tuple_results_are_boxed_elementwise():
    check(tuple_result, np.array([1.0]), np.float32(2.0))
    check(tuple_result, np.array([1.0]), 2.0)


def test_python_type_of_numpy_scalars():
    assert str(python_type_of(np.float64(1))) == "np.f64" and str(python_type_of(1.0)) == "f64"
    assert python_type_of(np.float32(1)) == F32 and str(python_type_of(np.uint8(1))) == "u8"
    assert python_type_of(np.float16(1)) is None


EPS = np.float32(0.5)
ONE = np.float64(1.0)


def with_globals(a):
    return a * EPS, ONE / a


def test_numpy_scalar_globals_are_numpy_scalars():
    """Constant folding and the interpreter use NumPy's semantics as compiled code does."""
    check(with_globals, 0.0)
    check(with_globals, 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert interpret_call(with_globals, (0.0,), {}) == (0.0, math.inf)


def test_interpreter_agrees_on_numpy_semantics():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert interpret_call(floor_divide, (np.int64(7), 0), {}) == 0
        assert math.isnan(interpret_call(np_functions, (-1.0,), {})[0])
        assert interpret_call(negate_bits, (np.bool_(True),), {}) == False  # noqa: E712
        with pytest.raises(ValueError):
            interpret_call(power, (np.int64(2), -1), {})


def test_printer_shows_strength():
    text = jit(add_one).ir(np.float64(1.0), stage="typed")
    assert "np.f64" in text and "numpy=True" in text
    assert "np.f64" not in jit(add_one).ir(1.0, stage="typed")


# ---- gradients -------------------------------------------------------------------------------

def smooth(a, b):
    return np.sin(a) * b + a ** 2


def test_gradients_of_numpy_scalar_arguments():
    """The gradient with respect to an argument has the argument's type."""
    g = grad(smooth, argnums=(0, 1))
    want = (math.cos(1.0) * 2.0 + 2.0, math.sin(1.0))
    got = g(np.float64(1.0), np.float64(2.0))
    assert all(type(v) is np.float64 for v in got) and np.allclose(got, want)
    got = g(1.0, 2.0)
    assert all(type(v) is float for v in got) and np.allclose(got, want)
    value, da = value_and_grad(smooth)(np.float64(1.0), 2.0)
    assert type(value) is np.float64 and type(da) is np.float64 and np.isclose(da, want[0])
    assert type(grad(smooth)(np.float32(1.0), np.float32(2.0))) is np.float32
