"""print, assert, raise and astjit.callback in compiled code, against plain Python.

Each function runs three ways: as plain Python, compiled, and through the reference
interpreter (`interpret_call`, the ASTJIT_DISABLE_JIT=1 path of derived functions and the
GPU's host program); all three must print, return and raise the same.
PYTEST_DONT_REWRITE: the asserts compiled here must raise what plain Python's raise.
"""
import math
import statistics

import numpy as np
import pytest

import astjit
from astjit import grad, jit
from astjit.api import interpret_call


def run_three_ways(fn, args, capsys):
    """(result or exception, printed text) of plain Python, compiled code, the interpreter."""
    outcomes = []
    for run in (fn, jit(fn), lambda *a: interpret_call(fn, a, {})):
        try:
            result = run(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        except Exception as exc:  # noqa: BLE001
            result = exc
        outcomes.append((result, capsys.readouterr().out))
    return outcomes


def assert_like_python(fn, args, capsys):
    (expected, printed), *others = run_three_ways(fn, args, capsys)
    for how, (got, out) in zip(("compiled", "interpreted"), others):
        assert out == printed, f"{how} {fn.__name__} printed {out!r}, Python {printed!r}"
        if isinstance(expected, Exception):
            assert type(got) is type(expected), f"{how}: {got!r}, Python raised {expected!r}"
            assert str(expected) in str(got), f"{how}: {str(got)!r}"
        else:
            assert not isinstance(got, Exception), f"{how} raised {got!r}"
            np.testing.assert_allclose(got, expected, rtol=1e-12, err_msg=how)


# ---- print ------------------------------------------------------------------------------

def print_scalars(x, n):
    for i in range(n):
        x = x * 0.5 + 1
        print("i =", i, "x:", x, x > 1.5, None)
    print(x, n, sep=", ", end=";\n")
    print()
    return x


def print_arrays(a, b):
    print("a", a, "row", b[0], "sum", np.sum(a), flush=True)
    print(a * 2.0, b, sep="\n")
    return np.sum(b)


@pytest.mark.parametrize("fn,args", [
    (print_scalars, (3.0, 4)),
    (print_arrays, (np.array([1.5, -2.0, 0.25]), np.arange(6.0).reshape(2, 3))),
], ids=["scalars", "arrays"])
def test_print_writes_what_python_writes(fn, args, capsys):
    assert_like_python(fn, args, capsys)


def print_to_file(x):
    print(x, file=None)
    return x


def test_print_with_a_file_is_refused():
    with pytest.raises(astjit.UnsupportedCallError, match="file=None"):
        jit(print_to_file)(1.0)


# ---- assert and raise -------------------------------------------------------------------

def checked_sqrt(x):
    assert x >= 0.0, "x must not be negative"
    assert x < 1e300
    return math.sqrt(x)


def first_negative(x):
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            return i
    raise ValueError("no negative element")


def pick(k, a, b):
    if k == 0:
        return a
    elif k == 1:
        return b
    raise LookupError("k is neither 0 nor 1")


def classify(v):
    if v != v:
        raise ArithmeticError("nan", 1)
    while v > 10.0:
        v = v / 2
        if v == 16.0:
            raise ZeroDivisionError
    return v


RAISES = [
    (checked_sqrt, (4.0,)), (checked_sqrt, (-1.0,)), (checked_sqrt, (math.inf,)),
    (first_negative, (np.array([1.0, -2.0]),)), (first_negative, (np.array([1.0, 2.0]),)),
    (pick, (0, 1.0, 2.0)), (pick, (2, 1.0, 2.0)),
    (classify, (math.nan,)), (classify, (64.0,)), (classify, (80.0,)),
]


@pytest.mark.parametrize("fn,args", RAISES, ids=[f"{fn.__name__}-{k}" for k, (fn, _) in enumerate(RAISES)])
def test_assert_and_raise_like_python(fn, args, capsys):
    assert_like_python(fn, args, capsys)


def test_compiled_exceptions_name_the_source_line():
    with pytest.raises(ValueError, match=r"no negative element \(at .*test_python_calls.py:\d+: "
                                         r"raise ValueError"):
        jit(first_negative)(np.array([1.0]))


class CustomError(Exception):
    pass


def raise_custom(x):
    if x > 0.0:
        raise CustomError("positive")
    return x


def raise_computed(x):
    if x > 0.0:
        raise ValueError(x)
    return x


def reraise(x):
    raise


@pytest.mark.parametrize("fn,match", [
    (raise_custom, "raise CustomError"), (raise_computed, r"raise ValueError\(x\)"),
    (reraise, "bare raise"),
], ids=["not_builtin", "not_constant", "bare"])
def test_unsupported_raises_are_compile_errors(fn, match):
    with pytest.raises(astjit.UnsupportedSyntaxError, match=match):
        jit(fn)(1.0)


# ---- callback ---------------------------------------------------------------------------

def median_of(x):
    return statistics.median(x.tolist())


def spread(x):
    c = astjit.callback(median_of, x, result=float)
    return np.sum(np.abs(x - c))


def top_two(x, k):
    return np.sort(x)[-k:][::-1].copy(), len(x) > k


TOP = astjit.ArraySpec(np.float64, 1)


def top_sum(x):
    best, more = astjit.callback(top_two, x, 2, result=(TOP, bool))
    scaled = astjit.callback(np.multiply, best, 2.0, result=astjit.ArraySpec(float, 1))
    return np.sum(scaled) + (1.0 if more else 0.0)


def shout(x):
    return "loud"


def calls_shout(x):
    return astjit.callback(shout, x, result=float)


def fails(x):
    raise LookupError(f"nothing at {x}")


def calls_fails(x):
    return astjit.callback(fails, x, result=float) + 1.0


@pytest.mark.parametrize("fn,args", [
    (spread, (np.array([3.0, -1.0, 2.0, 8.0, 0.5]),)),
    (top_sum, (np.array([3.0, -1.0, 2.0, 8.0]),)),
    (calls_fails, (2.0,)),
], ids=["scalar_result", "array_results", "raises"])
def test_callback_like_python(fn, args, capsys):
    assert_like_python(fn, args, capsys)


def test_callback_result_is_checked_and_the_node_is_in_the_dump():
    with pytest.raises(TypeError, match=r"shout\(\) returned a str"):
        jit(calls_shout)(1.0)
    with pytest.raises(TypeError, match=r"shout\(\) returned a str"):
        interpret_call(calls_shout, (1.0,), {})
    dump = jit(spread).ir(np.ones(3), stage="optimized")
    assert "callback %x {fn=median_of} : f64" in dump, dump


SEEN = []


def record(v):
    SEEN.append(v)
    return v


def record_each(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += astjit.callback(record, x[i], result=float)
    return total


def test_a_compiled_call_runs_each_callback_once():
    """No first tier (which may leave part-way and run the call again) for such code."""
    SEEN.clear()
    assert jit(record_each)(np.arange(4.0)) == 6.0
    assert SEEN == [0.0, 1.0, 2.0, 3.0]


def noisy_log(v):
    return math.log(v)


@astjit.custom_vjp
def ruled_log(v):
    return math.log(v)


@ruled_log.defvjp
def ruled_log_rule(v, out, g):
    return (g / v,)


def loss_without_rule(v):
    return 2.0 * astjit.callback(noisy_log, v, result=float)


def loss_with_rule(v, w):
    return astjit.callback(ruled_log, v * w, result=float) * w


def test_grad_through_a_callback_uses_its_custom_vjp_rule():
    with pytest.raises(astjit.DifferentiationError, match="noisy_log"):
        grad(loss_without_rule)(3.0)
    v, w = 3.0, 2.0
    expected = (w / v, math.log(v * w) + 1.0)
    assert np.allclose(grad(loss_with_rule, argnums=(0, 1))(v, w), expected, rtol=1e-12)
    interpreted = interpret_call(grad(loss_with_rule, argnums=(0, 1)), (v, w), {})
    assert np.allclose(interpreted, expected, rtol=1e-12)


def test_print_and_callbacks_run_on_the_host_of_the_gpu_target(capsys):
    x = np.array([1.5, -2.0, 0.25, 4.0])
    expected = print_arrays(x, x.reshape(2, 2))
    printed = capsys.readouterr().out
    assert jit(print_arrays, target="cuda-sim")(x, x.reshape(2, 2)) == expected
    assert capsys.readouterr().out == printed
    assert jit(spread, target="cuda-sim")(x) == spread(x)


def calls_open(path):
    return open(path)


def test_an_unsupported_call_suggests_a_callback():
    with pytest.raises(astjit.UnsupportedCallError, match="astjit.callback"):
        jit(calls_open)(1.0)
