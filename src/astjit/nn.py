"""Neural-network operators on NumPy arrays: eager NumPy outside `@jit`, compiled inside it.

Each operator is a plain Python function over NumPy arrays, written in the
subset astjit compiles. Called normally it runs on NumPy; called from a
jitted function (or differentiated by `grad`) astjit parses it like any other
callee, so it is fused and optimized together with the caller's code. There is
one implementation, so the eager and compiled results agree by construction.

`axis` arguments are *static* (`astjit.static_params`): a compiled caller must
pass a compile-time constant (`nn.softmax(x, axis=1)`), and gets a graph
specialized to it, as NumPy's reductions need the axis to know the result's
shape.

`conv2d` carries its own reverse-mode rule (`custom_vjp`): its forward pass is
im2col + one BLAS matrix product per image, and so is its backward pass, where
differentiating the im2col loops element by element would record what the
rule recomputes for free.

Shapes follow PyTorch's conventions: `conv2d` takes NCHW inputs and OIHW
weights.
"""
from __future__ import annotations

import numpy as np

from .api import static_params
from .autodiff import custom_vjp, stop_gradient

__all__ = ["relu", "sigmoid", "softmax", "log_softmax", "logsumexp", "conv2d", "mse_loss"]


def relu(x):
    """max(x, 0) elementwise."""
    return np.maximum(x, 0.0)


def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise."""
    return 1.0 / (1.0 + np.exp(-x))


@static_params("axis")
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed from x - max(x) so exp cannot overflow."""
    e = np.exp(x - stop_gradient(np.max(x, axis=axis, keepdims=True)))
    return e / np.sum(e, axis=axis, keepdims=True)


@static_params("axis")
def log_softmax(x, axis=-1):
    """x - logsumexp(x) along `axis` (keeping the axis), stable for large x."""
    shifted = x - stop_gradient(np.max(x, axis=axis, keepdims=True))
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@static_params("axis")
def logsumexp(x, axis=-1):
    """log(sum(exp(x))) along `axis` (the axis removed), stable for large x."""
    m = stop_gradient(np.max(x, axis=axis, keepdims=True))
    return np.log(np.sum(np.exp(x - m), axis=axis)) + np.max(m, axis=axis)


def mse_loss(prediction, target):
    """The mean of the squared differences (PyTorch's MSELoss with reduction='mean')."""
    return np.mean((prediction - target) ** 2)


def conv2d(x, w, b=None, stride=1, padding=0):
    """2-d cross-correlation (PyTorch's conv2d): x is (N, C, H, W), w is (O, C, KH, KW),
    b is None or (O,); zero padding on both sides of H and W; the result is
    (N, O, (H + 2p - KH) // stride + 1, (W + 2p - KW) // stride + 1)."""
    out = _conv2d(x, w, stride, padding)
    if b is None:
        return out
    return out + b.reshape((1, b.shape[0], 1, 1))


def _output_size(size, kernel, stride, padding):
    return (size + 2 * padding - kernel) // stride + 1


def _padded(x, padding):
    """x with `padding` zeros around its last two axes (a new array)."""
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * padding, w + 2 * padding), dtype=x.dtype)
    xp[:, :, padding:padding + h, padding:padding + w] = x
    return xp


def _columns(xp, k, kh, kw, ho, wo, stride):
    """Image k of the padded input as im2col columns: (C*KH*KW, HO*WO), row (c, i, j)
    holding the input element each output position multiplies with w[:, c, i, j]."""
    c = xp.shape[1]
    cols = np.empty((c * kh * kw, ho * wo), dtype=xp.dtype)
    r = 0
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                patch = xp[k, ci, i:i + stride * (ho - 1) + 1:stride, j:j + stride * (wo - 1) + 1:stride]
                cols[r, :] = patch.reshape((ho * wo,))
                r += 1
    return cols


@custom_vjp
def _conv2d(x, w, stride, padding):
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    ho = _output_size(h, kh, stride, padding)
    wo = _output_size(width, kw, stride, padding)
    xp = _padded(x, padding)
    w2 = w.reshape((o, c * kh * kw))
    probe = w[:1, :1, :1, :1] * xp[:1, :1, :1, :1]  # an empty-safe product: its dtype is NumPy's
    out = np.empty((n, o, ho, wo), dtype=probe.dtype)
    for k in range(n):
        out[k, :, :, :] = (w2 @ _columns(xp, k, kh, kw, ho, wo, stride)).reshape((o, ho, wo))
    return out


@_conv2d.defvjp
def _conv2d_vjp(x, w, stride, padding, out, g):
    n, c, h, width = x.shape
    o, _, kh, kw = w.shape
    ho = out.shape[2]
    wo = out.shape[3]
    xp = _padded(x, padding)
    w2 = w.reshape((o, c * kh * kw))
    dxp = np.zeros(xp.shape, dtype=g.dtype)
    dw2 = np.zeros((o, c * kh * kw), dtype=g.dtype)
    for k in range(n):
        gk = g[k, :, :, :].reshape((o, ho * wo))
        dw2 = dw2 + gk @ _columns(xp, k, kh, kw, ho, wo, stride).T
        dcols = w2.T @ gk
        r = 0
        for ci in range(c):
            for i in range(kh):
                for j in range(kw):
                    window = dxp[k, ci, i:i + stride * (ho - 1) + 1:stride,
                                 j:j + stride * (wo - 1) + 1:stride]
                    window[:, :] = window + dcols[r, :].reshape((ho, wo))
                    r += 1
    dx = dxp[:, :, padding:padding + h, padding:padding + width]
    return dx, dw2.reshape(w.shape), 0, 0
