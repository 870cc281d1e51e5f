"""A lone float op of two operands (`a * b` and its kin) is a call of the runtime's
`astjit.binary.<op>.<dtype>` (backend/llvm/binary_calls.py): its results are NumPy's, bit for
bit, for every layout the function serves (contiguous, broadcast rows, columns and scalars,
transposed and strided views, reversed, empty), and the kernel's own module holds no loop
for it."""
from __future__ import annotations

import numpy as np
import pytest

from astjit import grad, jit, vmap
from astjit.backend.llvm.jit.engine import runtime_llvm_ir


def mul(a, b):
    return a * b


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def div(a, b):
    return a / b


def times_two(a):
    return 2.0 * a


def three_minus(a):
    return 3.0 - a


def scaled_by(a, s):
    return a / s


def column_times(g, x):
    return g[:, None] * x


OPS = [mul, add, sub, div]
RNG = np.random.default_rng(7)
MATRIX = RNG.standard_normal((5, 7))
LAYOUTS = {
    "contiguous": (MATRIX, RNG.standard_normal((5, 7))),
    "column": (RNG.standard_normal((5, 1)), MATRIX),
    "row": (MATRIX, RNG.standard_normal(7)),
    "column then row": (RNG.standard_normal((5, 1)), RNG.standard_normal((1, 7))),
    "transposed": (RNG.standard_normal((7, 5)).T, MATRIX),
    "strided": (RNG.standard_normal((10, 14))[::2, ::2], MATRIX),
    "reversed": (MATRIX[::-1, ::-1], RNG.standard_normal((5, 7))),
    "one axis": (RNG.standard_normal(9), RNG.standard_normal(9)),
    "one axis strided": (RNG.standard_normal(18)[::2], RNG.standard_normal(9)[::-1]),
    "empty": (np.ones((0, 7)), np.ones((0, 7))),
    "zeros and nan": (np.array([[0.0, -0.0, np.nan, np.inf]]), np.array([[0.0, 1.0, 2.0, -np.inf]])),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn", OPS)
def test_a_lone_op_is_numpy_bit_for_bit(fn, layout):
    a, b = LAYOUTS[layout]
    f = jit(fn)
    with np.errstate(all="ignore"):
        for x, y in ((a, b), (b, a)):
            want, got = fn(x, y), f(x, y)
            assert got.shape == want.shape and got.flags.c_contiguous
            np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("fn", [times_two, three_minus])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_scalar_operand(fn, dtype):
    x = RNG.standard_normal((4, 3)).astype(dtype)
    want, got = fn(x), jit(fn)(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jit(fn)(x.T[::-1]), fn(x.T[::-1]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_scalar_argument(dtype):
    x = RNG.standard_normal((3, 5)).astype(dtype)
    for s in (3.0, 0.0, -np.inf):
        with np.errstate(all="ignore"):
            want, got = scaled_by(x, s), jit(scaled_by)(x, s)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_the_kernel_compiles_no_loop_of_its_own():
    f = jit(column_times)
    g, x = RNG.standard_normal(6), RNG.standard_normal((6, 4))
    np.testing.assert_array_equal(f(g, x), column_times(g, x))
    text = f.ir(g, x, stage="llvm")
    assert '@"astjit.binary.mul.f64"(' in text and "fused.head" not in text
    assert "define void @astjit.binary.mul.f64(" in runtime_llvm_ir()


def loss(w, x, y):
    return (np.tanh(x @ w) - y) ** 2


def test_per_example_gradients_as_numpy():
    w, x, y = RNG.standard_normal(8), RNG.standard_normal((50, 8)), RNG.standard_normal(50)
    got = jit(vmap(grad(loss), in_axes=(None, 0, 0)))(w, x, y)
    t = np.tanh(x @ w)
    want = (((t - y) * 2.0) * (1.0 - t * t))[:, None] * x
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
