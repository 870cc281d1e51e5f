"""NumPy's rounding (np.floor, np.ceil, np.trunc, np.round), np.exp2, and the functions
composed of ops (np.clip, np.sign, np.logical_*): compiled against NumPy on arrays and
NumPy scalars, edges included (NaN, +-inf, +-0.0, halves); their gradients."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from astjit import grad, jit

EDGES = np.array([-2.5, -1.5, -0.5, -0.3, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 3.7, -3.7,
                  np.nan, np.inf, -np.inf, 1e300, -1e-300])


def rounding(x):
    return np.floor(x), np.ceil(x), np.trunc(x), np.round(x), np.around(x), np.fix(x)


def clip_and_sign(x):
    return np.clip(x, -1.0, 1.0), np.sign(x), np.clip(x, 0.5, 0.25)


def powers_of_two(x):
    return np.exp2(x), np.exp2(x * 0.5)


def logic(a, x):
    return (np.logical_and(a, x > 0.0), np.logical_or(a, x), np.logical_not(x),
            np.logical_xor(a, x < 0.0), np.logical_not(a))


def same(got, want, ulps=False):
    """Equal, dtype and sign of zero included; `ulps`: to a few units in the last place
    (np.exp2: libm's and NumPy's round differently)."""
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype, (g, w)
        if ulps:
            np.testing.assert_allclose(g, w, rtol=4 * np.finfo(np.asarray(w).dtype).eps)
            continue
        np.testing.assert_array_equal(g, w)
        signs = np.signbit(np.asarray(w, dtype=np.float64)) if np.asarray(w).dtype.kind == "f" \
            else None
        if signs is not None:  # -0.0 stays -0.0, +0.0 stays +0.0
            np.testing.assert_array_equal(np.signbit(np.asarray(g, dtype=np.float64)), signs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", [rounding, clip_and_sign, powers_of_two], ids=lambda f: f.__name__)
def test_edges_like_numpy(fn, dtype):
    with np.errstate(all="ignore"):
        x = EDGES.astype(dtype)  # 1e300 is inf in float32
        same(jit(fn)(x), fn(x), ulps=fn is powers_of_two)
        same(jit(fn)(x[::-2]), fn(x[::-2]), ulps=fn is powers_of_two)


def test_int_arrays_and_numpy_scalars():
    k = np.array([-3, -1, 0, 1, 7])
    same(jit(rounding)(k)[:3], rounding(k)[:3])  # an int is its own floor, ceil, trunc
    same(jit(clip_and_sign)(k)[:2], clip_and_sign(k)[:2])
    for value in (np.float64(-0.5), np.float64(2.5), np.float32(-1.5)):
        same(jit(rounding)(value), rounding(value))


def test_logic_like_numpy():
    a = np.array([True, False, True, False, True])
    x = np.array([1.5, 0.0, -0.0, np.nan, -2.0])
    same(jit(logic)(a, x), logic(a, x))
    same(jit(logic)(True, 0.0), logic(True, 0.0))


JITTED = {fn: jit(fn) for fn in (rounding, clip_and_sign, powers_of_two)}
"""One compiled function each for all examples: each compiles once."""


@settings(max_examples=30, deadline=None, derandomize=True)
@given(hnp.arrays(np.float64, st.integers(0, 9),
                  elements=st.floats(allow_nan=True, allow_infinity=True, width=64)))
def test_random_values(x):
    with np.errstate(all="ignore"):
        for fn in (rounding, clip_and_sign, powers_of_two):
            same(JITTED[fn](x), fn(x), ulps=fn is powers_of_two)


def smooth(x):
    return np.sum(np.exp2(x) * np.clip(x, -0.5, 0.5) + np.sign(x) * x + np.floor(x) * 0.0)


def test_gradients():
    x = np.array([-0.9, -0.2, 0.3, 0.7, 1.4])
    h = 1e-6
    numeric = np.array([(smooth(x + h * e) - smooth(x - h * e)) / (2 * h) for e in np.eye(5)])
    np.testing.assert_allclose(grad(smooth)(x), numeric, rtol=1e-6, atol=1e-8)


def remainders(a, b):
    return np.fmod(a, b)


def python_fmod(a, b):
    return math.fmod(a, b)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_fmod_of_ints_like_numpy(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 7, -7, 0, 5, info.min, info.max, info.min, 3], dtype=dtype) \
        if info.min < 0 else np.array([7, 0, 5, info.max, 200, 3], dtype=dtype)
    b = np.array([3, 3, -3, -3, 4, 0, -1, 7, 1, 0], dtype=dtype) \
        if info.min < 0 else np.array([3, 4, 0, 7, 255, 0], dtype=dtype)
    with np.errstate(all="ignore"):
        same([jit(remainders)(a, b)], [remainders(a, b)])


def test_fmod_of_floats_and_math_fmod():
    a = np.array([5.5, -5.5, 1.0, np.inf, np.nan, -0.0, 3.0])
    b = np.array([2.0, 2.0, 0.0, 1.0, 1.0, 2.0, np.inf])
    with np.errstate(all="ignore"):
        same([jit(remainders)(a, b)], [remainders(a, b)])
    assert jit(python_fmod)(7, 2) == 1.0 and isinstance(jit(python_fmod)(7, 2), float)
    with pytest.raises(ValueError):
        jit(python_fmod)(1.0, 0.0)
