"""The seed example: nn.Linear(3, 1) followed by MSELoss, and its gradients with astjit.

y = x @ w + b, loss = mean((y - t)^2); `value_and_grad` differentiates the
compiled graph with respect to w and b, and the result is checked against the
closed form dL/dw = 2 (y - t) x^T, dL/db = 2 (y - t).

Run from the repository root:

    python samples/linear_mse.py
"""

import numpy as np

from astjit import nn, value_and_grad


def linear_mse(x, w, b, t):
    return nn.mse_loss(x @ w + b, t)


def main():
    x = np.array([[1.0, 2.0, 3.0]])
    w = np.array([[0.1], [0.2], [0.3]])
    b = np.array([0.5])
    t = np.array([[10.0]])
    loss, (gw, gb) = value_and_grad(linear_mse, argnums=(1, 2))(x, w, b, t)
    y = x @ w + b
    print(f"prediction {y[0, 0]:.4f}, target {t[0, 0]}, loss {loss:.4f}")
    print("dL/dw =", gw.ravel(), " (closed form:", (2 * (y - t) * x.T).ravel(), ")")
    print("dL/db =", gb, " (closed form:", (2 * (y - t)).ravel(), ")")
    assert np.allclose(gw, 2 * (y - t) * x.T) and np.allclose(gb, 2 * (y - t).ravel())


if __name__ == "__main__":
    main()
