"""The gradient benchmark cases: each function in plain Python, its derivative by
hand, and the same function written for JAX and for autograd.

`grad_run.py` measures `astjit.grad` of the plain Python functions against
`astjit.jit` of the same functions, against the hand-written derivatives (plain
Python, run by CPython), against `jax.jit(jax.grad(...))` and against
`autograd.grad`. `GRAD_CASES` lists the cases: three kinds of function
(straight-line, branchy, a while loop to tolerance), each once as a single call
with little work and once inside a loop that makes the compiled work large
enough that call overhead does not matter.

JAX and autograd are imported only inside `jax_version` and `autograd_version`,
so this module imports without them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

# ---------------------------------------------------------------------------
# The functions differentiated (plain Python; astjit compiles these).


def seed_graph(x1, x2):
    """The classic reverse-mode example: log x1 + x1*x2 - sin x2."""
    return math.log(x1) + x1 * x2 - math.sin(x2)


def branchy(x, y):
    """An if/elif chain on the inputs, then one more branch."""
    if x > 2.0:
        r = x * y + math.sin(x)
    elif x > 1.0:
        r = x * x - y
    elif y > 0.0:
        r = math.exp(x) * y
    else:
        r = -x * y * y
    if y < 3.0:
        r = r * y
    return r


def newton_sqrt(x):
    """Square root of x > 0 by Newton's method (as in kernels.py): a run-time trip count."""
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-12 * x:
        y = 0.5 * (y + x / y)
    return y


def horner(x, n):
    """sum_{k<n} x^(n-1-k) / (k+1), by Horner's rule: straight-line work in a loop."""
    s = 0.0
    for k in range(n):
        s = s * x + 1.0 / (k + 1)
    return s


def branchy_sum(x, y, n):
    """branchy(x + 2i/n, y) summed over i < n: x sweeps across every branch of the chain."""
    s = 0.0
    for i in range(n):
        s += branchy(x + 2.0 * i / n, y)
    return s


def newton_sum(x, n):
    """newton_sqrt(x + i) summed over i < n: a while to tolerance inside a for."""
    s = 0.0
    for i in range(n):
        s += newton_sqrt(x + i)
    return s


# ---------------------------------------------------------------------------
# The derivatives by hand, in plain Python: what one would write without AD.


def d_seed_graph(x1, x2):
    return (1.0 / x1 + x2, x1 - math.cos(x2))


def d_branchy(x, y):
    if x > 2.0:
        r, dx, dy = x * y + math.sin(x), y + math.cos(x), x
    elif x > 1.0:
        r, dx, dy = x * x - y, 2.0 * x, -1.0
    elif y > 0.0:
        e = math.exp(x)
        r, dx, dy = e * y, e * y, e
    else:
        r, dx, dy = -x * y * y, -y * y, -2.0 * x * y
    if y < 3.0:
        r, dx, dy = r * y, dx * y, dy * y + r
    return (dx, dy)


def d_newton_sqrt(x):
    """Forward mode by hand: the derivative dy/dx carried along the iteration."""
    if x > 1.0:
        y, dy = x, 1.0
    else:
        y, dy = 1.0, 0.0
    while abs(y * y - x) > 1e-12 * x:
        y, dy = 0.5 * (y + x / y), 0.5 * (dy + (y - x * dy) / (y * y))
    return dy


def d_horner(x, n):
    s = 0.0
    ds = 0.0
    for k in range(n):
        s, ds = s * x + 1.0 / (k + 1), ds * x + s
    return ds


def d_branchy_sum(x, y, n):
    dx = 0.0
    dy = 0.0
    for i in range(n):
        gx, gy = d_branchy(x + 2.0 * i / n, y)
        dx += gx
        dy += gy
    return (dx, dy)


def d_newton_sum(x, n):
    ds = 0.0
    for i in range(n):
        ds += d_newton_sqrt(x + i)
    return ds


# ---------------------------------------------------------------------------
# The cases.


@dataclass(frozen=True)
class GradCase:
    """One gradient benchmark: `grad(fn, argnums)(*args)`."""

    name: str
    fn: Callable
    args: tuple
    argnums: int | tuple[int, ...]
    hand: Callable
    """The hand-written derivative, same arguments, same result shape."""
    kind: str
    """'straight', 'branchy' or 'loop': what kind of control flow is differentiated."""
    heavy: bool
    """True for the loop-heavy variants, whose compiled work dwarfs the call overhead."""

    @property
    def static_argnums(self) -> tuple[int, ...]:
        """The int arguments (loop counts), which JAX must treat as static."""
        return tuple(i for i, a in enumerate(self.args) if isinstance(a, int))


N = 1000
"""Loop length of the loop-heavy variants."""

GRAD_CASES = [
    GradCase("seed_graph", seed_graph, (2.0, 5.0), (0, 1), d_seed_graph, "straight", False),
    GradCase("branchy", branchy, (1.5, 2.0), (0, 1), d_branchy, "branchy", False),
    GradCase("newton_sqrt", newton_sqrt, (2.0,), 0, d_newton_sqrt, "loop", False),
    GradCase("horner", horner, (0.5, N), 0, d_horner, "straight", True),
    GradCase("branchy_sum", branchy_sum, (0.5, 2.0, N), (0, 1), d_branchy_sum, "branchy", True),
    GradCase("newton_sum", newton_sum, (2.0, N), 0, d_newton_sum, "loop", True),
]


# ---------------------------------------------------------------------------
# The same functions for JAX (jnp, lax control flow) and autograd (autograd.numpy,
# Python control flow, traced on every call).


def jax_version(name: str) -> Callable:
    """The case's function written for JAX: lax.cond for branches, lax loops for loops.

    newton_sqrt uses lax.while_loop (the trip count is only known at run time),
    through which JAX cannot differentiate in reverse mode.
    """
    import jax.numpy as jnp
    from jax import lax

    def seed_graph_jax(x1, x2):
        return jnp.log(x1) + x1 * x2 - jnp.sin(x2)

    def branchy_jax(x, y):
        r = lax.cond(
            x > 2.0,
            lambda: x * y + jnp.sin(x),
            lambda: lax.cond(
                x > 1.0,
                lambda: x * x - y,
                lambda: lax.cond(y > 0.0, lambda: jnp.exp(x) * y, lambda: -x * y * y),
            ),
        )
        return lax.cond(y < 3.0, lambda: r * y, lambda: r)

    def newton_sqrt_jax(x):
        y = jnp.where(x > 1.0, x, 1.0)
        return lax.while_loop(lambda y: jnp.abs(y * y - x) > 1e-12 * x, lambda y: 0.5 * (y + x / y), y)

    def horner_jax(x, n):
        return lax.fori_loop(0, n, lambda k, s: s * x + 1.0 / (k + 1), 0.0 * x)

    def branchy_sum_jax(x, y, n):
        return lax.fori_loop(0, n, lambda i, s: s + branchy_jax(x + 2.0 * i / n, y), 0.0 * x)

    def newton_sum_jax(x, n):
        return lax.fori_loop(0, n, lambda i, s: s + newton_sqrt_jax(x + i), 0.0 * x)

    return locals()[name + "_jax"]


def autograd_version(name: str) -> Callable:
    """The case's function written for autograd: the plain Python one with autograd.numpy."""
    import autograd.numpy as anp

    def seed_graph_ag(x1, x2):
        return anp.log(x1) + x1 * x2 - anp.sin(x2)

    def branchy_ag(x, y):
        if x > 2.0:
            r = x * y + anp.sin(x)
        elif x > 1.0:
            r = x * x - y
        elif y > 0.0:
            r = anp.exp(x) * y
        else:
            r = -x * y * y
        if y < 3.0:
            r = r * y
        return r

    def branchy_sum_ag(x, y, n):
        s = 0.0
        for i in range(n):
            s += branchy_ag(x + 2.0 * i / n, y)
        return s

    versions = {
        "seed_graph": seed_graph_ag,
        "branchy": branchy_ag,
        "branchy_sum": branchy_sum_ag,
        # Only arithmetic, abs and comparisons: autograd traces the plain functions.
        "newton_sqrt": newton_sqrt,
        "horner": horner,
        "newton_sum": newton_sum,
    }
    return versions[name]
