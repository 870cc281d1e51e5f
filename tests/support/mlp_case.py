"""The MLP training step several array tests compile: one definition of the model, its step,
the step written by hand in NumPy and its inputs (the benchmark and the sample keep their own:
each must stand alone)."""
import numpy as np

from astjit import nn, value_and_grad


def mlp_loss(w1, b1, w2, b2, x, onehot):
    """Mean cross-entropy of the softmax of a ReLU MLP's logits."""
    h = nn.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    return -np.mean(np.sum(nn.log_softmax(logits, axis=1) * onehot, axis=1))


def mlp_step(w1, b1, w2, b2, x, onehot, lr):
    """Forward, loss, gradient and SGD update: one compiled graph."""
    value, grads = value_and_grad(mlp_loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, onehot)
    g1, gb1, g2, gb2 = grads
    return w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2


def mlp_step_by_hand(w1, b1, w2, b2, x, onehot, lr):
    """The same step with the backward pass written out in NumPy (one-hot labels:
    d loss / d logits = (softmax - onehot) / batch)."""
    pre = x @ w1 + b1
    h = np.maximum(pre, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    d_logits = (e / e.sum(axis=1, keepdims=True) - onehot) / x.shape[0]
    d_h = (d_logits @ w2.T) * (pre > 0)
    return (w1 - lr * (x.T @ d_h), b1 - lr * d_h.sum(axis=0),
            w2 - lr * (h.T @ d_logits), b2 - lr * d_logits.sum(axis=0))


def mlp_arrays(dtype=np.float32, seed=0):
    """w1, b1, w2, b2, x, onehot of a 12 -> 8 -> 3 network on a batch of 5."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((12, 8)).astype(dtype), np.zeros(8, dtype),
            rng.standard_normal((8, 3)).astype(dtype), np.zeros(3, dtype),
            rng.random((5, 12)).astype(dtype), np.eye(3, dtype=dtype)[[0, 1, 2, 0, 1]])
