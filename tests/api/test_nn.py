"""astjit.nn: each operator eager (NumPy) and compiled, against direct NumPy references;
static parameters; `dtype=x.dtype` in creation functions."""
import numpy as np
import pytest

import astjit
from astjit import CompileError, jit, nn, static_params


def _conv_reference(x, w, b, stride, padding):
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (width + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for k in range(n):
        for p in range(o):
            for i in range(ho):
                for j in range(wo):
                    window = xp[k, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
                    out[k, p, i, j] = np.sum(window * w[p]) + (0.0 if b is None else b[p])
    return out


@pytest.mark.parametrize("stride,padding", [(1, 0), (1, 1), (2, 0), (2, 1), (3, 2)])
def test_conv2d_eager_matches_the_direct_loops(stride, padding):
    rng = np.random.default_rng(stride * 10 + padding)
    x = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((4, 3, 3, 2))
    b = rng.standard_normal(4)
    ref = _conv_reference(x, w, b, stride, padding)
    np.testing.assert_allclose(nn.conv2d(x, w, b, stride=stride, padding=padding), ref, atol=1e-12)
    np.testing.assert_allclose(nn.conv2d(x, w, None, stride, padding),
                               _conv_reference(x, w, None, stride, padding), atol=1e-12)


def test_conv2d_rule_matches_finite_differences():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 5, 4))
    w = rng.standard_normal((3, 2, 3, 3))
    for stride, padding in [(1, 1), (2, 0), (2, 1)]:
        out = nn._conv2d(x, w, stride, padding)
        g = rng.standard_normal(out.shape)
        dx, dw, _, _ = nn._conv2d_vjp(x, w, stride, padding, out, g)
        for arg, got in ((0, dx), (1, dw)):
            args = [x.copy(), w.copy()]
            numeric = np.zeros_like(args[arg])
            for idx in np.ndindex(numeric.shape):
                keep = args[arg][idx]
                args[arg][idx] = keep + 1e-6
                up = np.sum(nn._conv2d(*args, stride, padding) * g)
                args[arg][idx] = keep - 1e-6
                down = np.sum(nn._conv2d(*args, stride, padding) * g)
                args[arg][idx] = keep
                numeric[idx] = (up - down) / 2e-6
            np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-7)


def test_elementwise_helpers_compile_and_keep_float32():
    x = np.linspace(-3, 3, 13).astype(np.float32)
    for fn in (nn.relu, nn.sigmoid):
        got = jit(fn)(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, fn(x), rtol=1e-6)


def test_im2col_pieces_compile():
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 5))
    xp = nn._padded(x, 1)
    np.testing.assert_array_equal(jit(nn._padded)(x, 1), xp)
    np.testing.assert_array_equal(jit(nn._columns)(xp, 1, 3, 3, 3, 2, 2),
                                  nn._columns(xp, 1, 3, 3, 3, 2, 2))


@static_params("k")
def _add_k(x, k=2):
    return x + k


def _calls_add_k(x):
    return _add_k(x), _add_k(x, 5), _add_k(x, k=-1)


def _add_k_of_a_variable(x, k):
    return _add_k(x, k)


def test_static_params_specialize_the_callee():
    assert jit(_calls_add_k)(1.0) == (3.0, 6.0, 0.0)
    text = jit(_calls_add_k).ir(1.0, stage="parsed")
    assert "@_add_k[k=5]" in text and "@_add_k[k=-1]" in text and "@_add_k[k=2]" in text
    assert astjit.static_params is static_params


def test_a_static_param_needs_a_constant():
    with pytest.raises(CompileError, match="argument 'k' of '_add_k' must be a compile-time constant"):
        jit(_add_k_of_a_variable)(1.0, 2)


def _zeros_like_dtype(x):
    y = np.zeros((2, x.shape[0]), dtype=x.dtype)
    y[1, :] = x
    return y


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_creation_takes_the_dtype_of_an_array(dtype):
    x = np.arange(3).astype(dtype)
    got = jit(_zeros_like_dtype)(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _zeros_like_dtype(x))


def _bias(x, b=None):
    if b is None:
        return x
    return x + b.reshape((1, b.shape[0]))


def _with_and_without_bias(x, b):
    return _bias(x), _bias(x, b), _bias(x, None)


def _not_none(x, b):
    y = x
    if b is not None:
        y = x + b
    return y


def test_is_none_is_decided_by_the_type():
    x, b = np.ones((2, 3)), np.arange(3.0)
    got = jit(_with_and_without_bias)(x, b)
    for g, e in zip(got, _with_and_without_bias(x, b)):
        np.testing.assert_array_equal(g, e)
    assert jit(_not_none)(1.0, None) == 1.0
    assert jit(_not_none)(1.0, 2.0) == 3.0


def test_conv2d_without_bias_compiles():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))

    np.testing.assert_allclose(jit(nn.conv2d)(x, w, None, 2, 1), nn.conv2d(x, w, None, 2, 1), atol=1e-12)
