"""`x op= v`: NumPy's in-place update for arrays, Python's rebinding for everything else.

Each case runs the plain function and the compiled one on fresh copies of the same
inputs and compares the result, the arguments after the call, and the exception class
(NumPy's own casting error for `int_array += 1.5`). The reference interpreter runs the
same cases on the typed, optimized IR.
"""
import numpy as np
import pytest

from astjit import grad, jit
from astjit.api import interpret_call


def outcome(fn, args):
    try:
        return "value", fn(*args)
    except Exception as error:  # noqa: BLE001 - the class is compared
        return "raises", error


def check(fn, make, through=jit):
    expected_args, got_args = make(), make()
    expected = outcome(fn, expected_args)
    got = outcome(through(fn), got_args)
    assert got[0] == expected[0], f"{fn.__name__}: {got[1]!r}, Python: {expected[1]!r}"
    if expected[0] == "raises":
        assert isinstance(got[1], type(expected[1])), (got[1], expected[1])
        return
    np.testing.assert_array_equal(got[1], expected[1])
    if isinstance(expected[1], np.ndarray):  # scalar result types: tests/e2e/test_numpy_scalars.py
        assert type(got[1]) is np.ndarray and got[1].dtype == expected[1].dtype
    for a, b in zip(expected_args, got_args):
        np.testing.assert_array_equal(b, a)


def interpreted(fn):
    return lambda *args: interpret_call(fn, args, {})


def scale(x, s):
    x *= s
    return x.sum()


def every_operator(x, y):
    x += y
    x -= 0.5
    x *= y
    x /= 2.0
    x **= 2
    x %= 7.0
    x //= 1.5
    return x


def int_operators(x):
    x += 3
    x *= -5
    x -= 2
    x //= 4
    x %= 5
    return x


def alias(x):
    y = x
    y += 1.0
    return x


def row_views(m):
    for i in range(m.shape[0]):
        row = m[i]
        row += i
    return m


def row_element_target(m):
    m[1] += 2.0
    return m


def slice_target(x):
    x[1:3] *= 10.0
    return x


def reads_after_update(x):
    before = x[0]
    x += 1.0
    return before + x[0]


def overlapping(x):
    x[1:] += x[:-1]
    return x


def broadcast_into(m, v):
    m += v
    return m


def grows(x, m):
    x += m
    return x


def int_plus_float(x):
    x += 1.5
    return x


def int_slice_plus_float(x):
    x[0:2] += 1.5
    return x


def int_true_divide(x):
    x /= 2
    return x


def float_plus_int(x):
    x += 2
    return x


def in_loop(x, n):
    for _ in range(n):
        x *= 0.5
    return x


def in_branch(x, flag):
    if flag:
        x -= x.mean()
    return x


def scalar_rebinds(a, b):
    a += b
    a *= 2
    return a


def scalar_becomes_array(s, x):
    s += x
    return s


def matmul_update(a, b):
    a @= b
    return a


def matmul_vectors(a, b):
    a @= b
    return a


def f32(*shape):
    return np.arange(1.0, 1.0 + np.prod(shape), dtype=np.float32).reshape(shape)


CASES = [
    (scale, lambda: (np.arange(6.0), 3.0)),
    (every_operator, lambda: (np.arange(1.0, 7.0), np.full(6, 1.5))),
    (int_operators, lambda: (np.arange(-3, 9),)),
    (alias, lambda: (np.arange(4.0),)),
    (row_views, lambda: (np.zeros((3, 4)),)),
    (row_element_target, lambda: (np.ones((3, 2)),)),
    (slice_target, lambda: (np.arange(5.0),)),
    (reads_after_update, lambda: (np.arange(3.0),)),
    (overlapping, lambda: (np.arange(6.0),)),
    (broadcast_into, lambda: (np.ones((2, 3)), np.arange(3.0))),
    (broadcast_into, lambda: (f32(2, 3), np.float32(2.0).item())),
    (grows, lambda: (np.ones(3), np.ones((2, 3)))),
    (grows, lambda: (np.ones(3), np.ones(4))),
    (int_plus_float, lambda: (np.arange(3),)),
    (int_slice_plus_float, lambda: (np.arange(3),)),
    (int_true_divide, lambda: (np.arange(3),)),
    (float_plus_int, lambda: (f32(3),)),
    (in_loop, lambda: (np.arange(4.0), 3)),
    (in_branch, lambda: (np.arange(4.0), True)),
    (in_branch, lambda: (np.arange(4.0), False)),
    (scalar_rebinds, lambda: (2, 3)),
    (scalar_rebinds, lambda: (2.5, 3)),
    (scalar_becomes_array, lambda: (1.0, np.arange(3.0))),
    (matmul_update, lambda: (np.arange(4.0).reshape(2, 2), np.eye(2) * 3.0)),
    (matmul_update, lambda: (np.arange(3.0), np.ones((3, 3)))),
    (matmul_vectors, lambda: (np.arange(3.0), np.arange(3.0))),
]


@pytest.mark.parametrize("fn,make", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_compiled_matches_python(fn, make):
    check(fn, make)


@pytest.mark.parametrize("fn,make", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_interpreter_matches_python(fn, make):
    check(fn, make, through=interpreted)


def test_the_result_is_the_callers_array():
    x = np.arange(5.0)
    assert jit(in_loop)(x, 2) is x
    np.testing.assert_array_equal(x, np.arange(5.0) / 4)


def test_casting_error_is_numpys_class_with_the_source_line():
    with pytest.raises(TypeError) as caught:
        jit(int_plus_float)(np.arange(3))
    with pytest.raises(TypeError) as numpy_raised:
        int_plus_float(np.arange(3))
    assert isinstance(caught.value, type(numpy_raised.value))
    assert "same_kind" in str(caught.value) and "x += 1.5" in str(caught.value)


def loss_after_update(w, x):
    h = x * 1.0
    h *= w
    h += w
    return np.sum(h * h)


def test_gradient_through_an_update_of_a_local_array():
    w, x = 0.7, np.arange(4.0)
    g = grad(loss_after_update)(w, x)
    eps = 1e-6
    numeric = (loss_after_update(w + eps, x) - loss_after_update(w - eps, x)) / (2 * eps)
    assert abs(g - numeric) < 1e-5 * max(1.0, abs(numeric))
