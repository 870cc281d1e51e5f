"""The gradient corpus: scalar functions with control flow, for derivative checks.

test_reverse_ad and test_forward_ad compare each gradient with central finite
differences. Each entry of CASES is (function, list of float argument tuples).
Every function is smooth near each listed point (no branch boundary within
1e-3), so a central finite difference is a trustworthy reference. The functions
match the issues' acceptance corpus; they live here so that the tests need
nothing outside the repository.
"""
import math


def seed_graph(x1, x2):
    return math.log(x1) + x1 * x2 - math.sin(x2)


def linear_square(x, w, b):
    z = w * x + b
    return z ** 2


def piecewise(x):
    if x < -1.0:
        return -x * x
    elif x < 1.0:
        return 3.0 * x - 1.0
    return math.sqrt(x) + math.exp(-x)


def branch_mixes_args(x, y):
    if x * y > 1.0:
        z = x * math.sin(y)
    else:
        z = y * math.cos(x) + x
    return z * z


def newton_sqrt(x):
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-13 * x:
        y = 0.5 * (y + x / y)
    return y


def horner(x, n):
    acc = 0.0
    for k in range(n):
        acc = acc * x + (k + 1.0)
    return acc


def halving_loop(x, y):
    k = 0
    while x > 1.0:
        x = x / 2.0 + 0.1 * math.sin(y)
        y = y * 0.9
        k += 1
    return x * y + k


def loop_with_break(x):
    s = 0.0
    for i in range(100):
        s = s + x * (1.0 + 0.5 * math.cos(s))
        if s > 5.0:
            break
    return s


def early_return(x, y):
    t = x
    for i in range(10):
        t = t * y
        if t > 50.0:
            return t + x
    return t - y


def _helper(u, v):
    return u * math.exp(v) - v


def calls(x, y):
    return _helper(x, y) * _helper(y, 0.5)


def power_rec(x, n):
    if n == 0:
        return 1.0
    return x * power_rec(x, n - 1)


def softplus_sum(x, y, z):
    total = 0.0
    for v in (x, y, z):
        total += math.log1p(math.exp(v))
    return total


CASES = [
    (seed_graph, [(2.0, 5.0), (0.5, -1.0)]),
    (linear_square, [(2.0, 3.0, 1.0), (-1.5, 0.5, 2.0)]),
    (piecewise, [(-2.0,), (0.3,), (4.0,)]),
    (branch_mixes_args, [(2.0, 3.0), (0.2, 0.4)]),
    (newton_sqrt, [(2.0,), (0.3,), (50.0,)]),
    (horner, [(0.7, 6), (1.3, 3)]),
    (halving_loop, [(37.0, 1.2), (3.3, -0.4)]),
    (loop_with_break, [(0.4,), (1.7,)]),
    (early_return, [(1.5, 2.0), (1.5, 1.01)]),
    (calls, [(0.7, 0.2), (-1.1, 1.3)]),
    (power_rec, [(1.3, 5), (0.8, 0)]),
    (softplus_sum, [(0.1, -2.0, 3.0)]),
]
