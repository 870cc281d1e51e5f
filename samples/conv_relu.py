"""ReLU(Conv(w, x, b)): a convolution layer compiled, checked against NumPy, and differentiated.

`nn.conv2d` takes NCHW inputs and OIHW weights (PyTorch's layout). The same
function runs eagerly on NumPy and compiled under `@jit`; `grad` gives the
gradients of a loss with respect to the weights and bias through the
convolution's own rule.

Run from the repository root:

    python samples/conv_relu.py
"""

import numpy as np

from astjit import grad, jit, nn


def conv_relu(x, w, b):
    return nn.relu(nn.conv2d(x, w, b, stride=1, padding=1))


def loss(x, w, b):
    y = conv_relu(x, w, b)
    return np.sum(y * y)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 8))
    w = rng.standard_normal((4, 3, 3, 3)) * 0.3
    b = rng.standard_normal(4) * 0.1
    compiled = jit(conv_relu)(x, w, b)
    eager = conv_relu(x, w, b)
    print(f"output {compiled.shape}, max |compiled - NumPy| = {np.max(np.abs(compiled - eager)):.2e}")
    gw, gb = grad(loss, argnums=(1, 2))(x, w, b)
    h = 1e-6
    probe = np.zeros_like(w)
    probe[1, 2, 0, 1] = h
    numeric = (loss(x, w + probe, b) - loss(x, w - probe, b)) / (2 * h)
    print(f"dL/dw[1,2,0,1]: astjit {gw[1, 2, 0, 1]:.6f}, finite difference {numeric:.6f}")
    print("dL/db:", np.round(gb, 4))
    return np.max(np.abs(compiled - eager)), gw[1, 2, 0, 1], numeric


if __name__ == "__main__":
    main()
