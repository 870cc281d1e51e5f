"""The array benchmark cases: NumPy functions, their JAX and Numba twins, and inputs.

`array_run.py` runs every case of `CASES` under NumPy, astjit, Numba, JAX and
the C builds of `c/array_kernels.c`. astjit compiles `ArrayCase.fn`, which is
also what NumPy runs and what Numba njit-s, unless the case gives NumPy or
Numba a version of its own (a hand-written backward pass; explicit loops
where Numba lacks a NumPy feature); the docstring of such a version says why,
and the report prints it under the case's table. JAX is imported only inside
the `*_jax` functions, so this module imports without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from astjit import nn, value_and_grad

# ---- fused expression ----------------------------------------------------------------------


def expression(x, y):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x)


def expression_jax(x, y):
    import jax.numpy as jnp

    return jnp.exp(-x * x) * jnp.sin(3.0 * x) + jnp.tanh(y) / (1.0 + x * x)


def two_ramps(n: int) -> tuple[np.ndarray, ...]:
    return np.linspace(-3.0, 3.0, n), np.linspace(-2.0, 2.0, n)[::-1].copy()


# ---- sum of squares (a reduction with a scalar result) -------------------------------------


def sum_squares(x):
    return np.sum(x * x)


def sum_squares_jax(x):
    import jax.numpy as jnp

    return jnp.sum(x * x)


def normal_vector(n: int) -> tuple[np.ndarray, ...]:
    return (np.random.default_rng(1).standard_normal(n),)


# ---- softmax over rows ---------------------------------------------------------------------

SOFTMAX_COLUMNS = 512


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def softmax_loops(x):
    """Explicit row loops: Numba's np.max and np.sum take no `keepdims`."""
    rows, cols = x.shape
    out = np.empty_like(x)
    for i in range(rows):
        m = x[i, 0]
        for j in range(1, cols):
            m = max(m, x[i, j])
        s = 0.0
        for j in range(cols):
            e = np.exp(x[i, j] - m)
            out[i, j] = e
            s += e
        for j in range(cols):
            out[i, j] = out[i, j] / s
    return out


def softmax_jax(x):
    import jax.numpy as jnp

    e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
    return e / jnp.sum(e, axis=1, keepdims=True)


def normal_rows(rows: int) -> tuple[np.ndarray, ...]:
    return (np.random.default_rng(2).standard_normal((rows, SOFTMAX_COLUMNS)) * 3.0,)


# ---- matrix product ------------------------------------------------------------------------


def matmul(a, b):
    return a @ b


def matmul_jax(a, b):
    return a @ b


def two_squares(n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(3)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))


# ---- one SGD step of a 784 -> 256 -> 10 MLP, float32 ----------------------------------------

MLP_LAYERS = (784, 256, 10)
MLP_LEARNING_RATE = 0.1


def mlp_loss(w1, b1, w2, b2, x, onehot):
    """Mean cross-entropy of the softmax of a ReLU MLP's logits (as samples/mlp_digits.py)."""
    h = nn.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    return -np.mean(np.sum(nn.log_softmax(logits, axis=1) * onehot, axis=1))


def mlp_step(w1, b1, w2, b2, x, onehot, lr):
    value, grads = value_and_grad(mlp_loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, onehot)
    g1, gb1, g2, gb2 = grads
    return w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2


def mlp_step_numpy(w1, b1, w2, b2, x, onehot, lr):
    """Forward and backward written by hand in NumPy (labels one-hot: d loss/d logits = (p - y)/B)."""
    pre = x @ w1 + b1
    h = np.maximum(pre, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    d_logits = (e / e.sum(axis=1, keepdims=True) - onehot) / x.shape[0]
    d_h = (d_logits @ w2.T) * (pre > 0)
    return (w1 - lr * (x.T @ d_h), b1 - lr * d_h.sum(axis=0),
            w2 - lr * (h.T @ d_logits), b2 - lr * d_logits.sum(axis=0))


def mlp_loss_jax(w1, b1, w2, b2, x, onehot):
    import jax
    import jax.numpy as jnp

    h = jax.nn.relu(x @ w1 + b1)
    logits = h @ w2 + b2
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits, axis=1) * onehot, axis=1))


def mlp_step_jax(w1, b1, w2, b2, x, onehot, lr):
    import jax

    value, grads = jax.value_and_grad(mlp_loss_jax, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, onehot)
    g1, gb1, g2, gb2 = grads
    return w1 - lr * g1, b1 - lr * gb1, w2 - lr * g2, b2 - lr * gb2


def mlp_batch(batch: int) -> tuple:
    """He-initialised float32 parameters, a batch of inputs in [0, 1), one-hot labels, lr."""
    rng = np.random.default_rng(4)
    n_in, n_hidden, n_out = MLP_LAYERS

    def weights(rows, cols):
        return (rng.standard_normal((rows, cols)) * np.sqrt(2.0 / rows)).astype(np.float32)

    x = rng.random((batch, n_in), dtype=np.float32)
    onehot = np.eye(n_out, dtype=np.float32)[rng.integers(0, n_out, batch)]
    return (weights(n_in, n_hidden), np.full(n_hidden, 0.01, np.float32),
            weights(n_hidden, n_out), np.zeros(n_out, np.float32), x, onehot, MLP_LEARNING_RATE)


# ---- the table -----------------------------------------------------------------------------


# ---- NumPy's other reductions (issue 14), alone and fused into an expression ----------------

def prod(x):
    return np.prod(1.0 + x * 1e-3)


def any_above(x):
    return np.any(x > 3.0)


def all_above(x):
    return np.all(x > -9.0)


def argmax(x):
    return np.argmax(x)


def argmin(x):
    return np.argmin(x)


def std(x):
    return np.std(x)


def var(x):
    return np.var(x)


def cumsum(x):
    return np.cumsum(x)


def cumprod(x):
    return np.cumprod(1.0 + x * 1e-6)


def nansum(x):
    return np.nansum(x)


def nanmean(x):
    return np.nanmean(x)


def nanmax(x):
    return np.nanmax(x)


def nanmin(x):
    return np.nanmin(x)


def nanprod(x):
    return np.nanprod(1.0 + x * 1e-3)


def nanstd(x):
    return np.nanstd(x)


def nanvar(x):
    return np.nanvar(x)


def ptp(x):
    return np.ptp(x)


def count_nonzero(x):
    return np.count_nonzero(x)


def argmax_rows(x):
    return np.argmax(x[:x.size // 1000 * 1000].reshape((1000, -1)), axis=1)


def var_rows(x):
    return np.var(x[:x.size // 1000 * 1000].reshape((1000, -1)), axis=1, ddof=1)


def standardized(x):
    """Fused: (x - mean) / std, both reductions of one expression."""
    return (x - np.mean(x)) / np.std(x)


def argmax_distance(x):
    """Fused: the index of the element farthest from 0.5."""
    return np.argmax(np.abs(x - 0.5))


def nanmean_sqrt(x):
    """Fused: the mean of the square roots of the non-negative elements (NaN elsewhere)."""
    return np.nanmean(np.sqrt(x))


REDUCTIONS_ALONE = (prod, any_above, all_above, argmax, argmin, std, var, cumsum, cumprod,
                    nansum, nanmean, nanmax, nanmin, nanprod, nanstd, nanvar, ptp,
                    count_nonzero, argmax_rows, var_rows)
REDUCTIONS_FUSED = (standardized, argmax_distance, nanmean_sqrt)


# ---- sorting and searching (issue 14), each alone -------------------------------------------

def sort(x):
    return np.sort(x)


def argsort(x):
    return np.argsort(x)


def sort_rows(x):
    return np.sort(x[:x.size // 1000 * 1000].reshape((1000, -1)), axis=0)


def searchsorted(x):
    return np.searchsorted(np.linspace(-3.0, 3.0, 1000), x)


def unique(x):
    return np.unique((x * 1000.0).astype(np.int64))


def nonzero(x):
    return np.nonzero(x > 0.5)


def median(x):
    return np.median(x)


def percentile(x):
    return np.percentile(x, 90.0)


SORTING_ALONE = (sort, argsort, sort_rows, searchsorted, unique, nonzero, median, percentile)


# ---- linear algebra (issue 14), each alone, at matrix sides 4 .. 256 -----------------------

def linalg_inv(a):
    return np.linalg.inv(a)


def linalg_det(a):
    return np.linalg.det(a)


def linalg_solve(a):
    return np.linalg.solve(a, a[:, 0])


def linalg_cholesky(a):
    return np.linalg.cholesky(a)


def linalg_norm(a):
    return np.linalg.norm(a)


def trace(a):
    return np.trace(a)


def outer(a):
    return np.outer(a[0], a[1])


def einsum_product(a):
    return np.einsum("ij,jk->ik", a, a)


def batched_matmul(a, b):
    return a @ b


def spd_matrix(n: int) -> tuple[np.ndarray, ...]:
    """A well-conditioned symmetric positive definite n x n matrix."""
    a = np.random.default_rng(4).standard_normal((n, n))
    return (a @ a.T + n * np.eye(n),)


def matrix_stacks(n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(5)
    return rng.standard_normal((n, 32, 32)), rng.standard_normal((n, 32, 32))


LINALG_ALONE = (linalg_inv, linalg_det, linalg_solve, linalg_cholesky, linalg_norm, trace, outer,
                einsum_product)


# ---- narrow integer dtypes (issue 14): computed at their own width ---------------------------

def int8_affine(k):
    return k * 3 + 1


def int32_affine(k):
    return k * 3 + 1


def int8_max(k):
    return np.max(k)


def int32_sum(k):
    return np.sum(k)


def int_vector(dtype):
    def inputs(n: int) -> tuple[np.ndarray, ...]:
        info = np.iinfo(dtype)
        return (np.random.default_rng(1).integers(info.min, info.max, n, dtype=dtype),)
    return inputs


NARROW_INTS = ((int8_affine, np.int8), (int32_affine, np.int32), (int8_max, np.int8),
               (int32_sum, np.int32))
NUMPY_ONLY = {engine: "compared with NumPy's own function only"
              for engine in ("Numba", "JAX", "C strict", "C fast-math")}


def power_of_ten(n: int) -> str:
    return f"n = 10^{round(math.log10(n))}"


@dataclass(frozen=True)
class ArrayCase:
    """One row group of the tables: a function, its twins, its inputs and astjit's targets."""

    name: str
    fn: Callable
    """What astjit compiles; NumPy runs it and Numba njit-s it unless given their own."""
    jax_fn: Callable | None
    """The same with jax.numpy, run by `jax.jit`."""
    inputs: Callable[[int], tuple]
    sizes: tuple[int, ...]
    label: Callable[[int], str] = power_of_ten
    """How a size is named in the tables."""
    c_name: str | None = None
    """`<name>` / `time_<name>` in c/array_kernels.c, or None (then NumPy is the unit)."""
    numpy_fn: Callable | None = None
    numba_fn: Callable | None = None
    """Own versions for NumPy / Numba, where they cannot run `fn`; their docstring says why."""
    missing: dict[str, str] = field(default_factory=dict)
    """Engines with no version, and why (printed under the table)."""
    targets: tuple[tuple[str, float], ...] = ()
    """(reference engine, limit): astjit's median time over the reference's at most `limit`."""
    rtol: float = 1e-12
    atol: float = 1e-13
    """How close every engine's result must be to NumPy's (fast-math C included)."""
    compile_sizes: tuple[int, ...] | None = None
    """The sizes whose first-call compile is measured (None: the first size only)."""

    @property
    def unit(self) -> str:
        """The engine every time is divided by in the tables."""
        return "C strict" if self.c_name else "NumPy"

    def version(self, engine: str) -> Callable:
        """The Python function `engine` runs; NotImplementedError with the reason if none."""
        own = {"NumPy": self.numpy_fn, "Numba": self.numba_fn, "JAX": self.jax_fn}
        chosen = own.get(engine) or (self.fn if engine in ("NumPy", "Numba", "astjit") else None)
        if engine in self.missing or chosen is None:
            raise NotImplementedError(self.missing.get(engine, f"no {engine} version"))
        return chosen

    def notes(self) -> list[str]:
        """What is not the plain comparison: own versions and missing engines."""
        lines = [f"{engine}: runs {fn.__name__}: {fn.__doc__.strip().splitlines()[0]}"
                 for engine, fn in (("NumPy", self.numpy_fn), ("Numba", self.numba_fn)) if fn]
        by_reason: dict[str, list[str]] = {}
        for engine, why in self.missing.items():
            by_reason.setdefault(why, []).append(engine)
        return lines + [f"{', '.join(engines)}: n/a: {why}" for why, engines in by_reason.items()]


NO_C = "no C version: the work is BLAS's, and NumPy's call of it is the reference"

CASES = [
    ArrayCase("expression", expression, expression_jax, two_ramps, (10 ** 6, 10 ** 7),
              c_name="expression", targets=(("JAX", 0.5), ("C fast-math", 1.5))),
    ArrayCase("sum_squares", sum_squares, sum_squares_jax, normal_vector, (10 ** 7,),
              c_name="sum_squares", targets=(("JAX", 1.0),), rtol=1e-10),
    # Two sizes: at 4096 rows XLA hands the whole softmax to a library (YNNPACK: a
    # `__ynn_fusion` in its optimized HLO) and generates no code, at 2048 it generates
    # two of its four kernels with LLVM (`--xla_dump_to`). JAX's first-call compile is
    # that of a library call at the one and a compiler's at the other.
    ArrayCase("softmax", softmax, softmax_jax, normal_rows, (4096, 2048),
              label=lambda rows: f"{rows}×{SOFTMAX_COLUMNS}", c_name="softmax",
              numba_fn=softmax_loops, targets=(("JAX", 1.0),), compile_sizes=(4096, 2048)),
    ArrayCase("matmul", matmul, matmul_jax, two_squares, (256, 1024),
              label=lambda n: f"{n}×{n} @ {n}×{n}",
              missing={"C strict": NO_C, "C fast-math": NO_C},
              targets=(("NumPy", 1.1),), rtol=1e-10, atol=1e-10),
    ArrayCase("mlp_step", mlp_step, mlp_step_jax, mlp_batch, (256,),
              label=lambda batch: "→".join(map(str, MLP_LAYERS)) + f", batch {batch}",
              numpy_fn=mlp_step_numpy,
              missing={"Numba": "no automatic differentiation", "C strict": NO_C,
                       "C fast-math": NO_C},
              targets=(("JAX", 1.0),), rtol=1e-4, atol=1e-6),
    *(ArrayCase(fn.__name__, fn, None, normal_vector, (10 ** 6,), missing=NUMPY_ONLY,
                targets=(("NumPy", 1.2),), rtol=1e-9, atol=1e-9) for fn in REDUCTIONS_ALONE),
    *(ArrayCase(fn.__name__, fn, None, normal_vector, (10 ** 6,), missing=NUMPY_ONLY,
                targets=(("NumPy", 1.0),), rtol=1e-9, atol=1e-9) for fn in REDUCTIONS_FUSED),
    *(ArrayCase(fn.__name__, fn, None, normal_vector, (10 ** 6,), missing=NUMPY_ONLY,
                targets=(("NumPy", 1.2),), rtol=1e-12, atol=0.0) for fn in SORTING_ALONE),
    *(ArrayCase(fn.__name__, fn, None, spd_matrix, (4, 16, 64, 256), label=lambda n: f"{n}×{n}",
                missing=NUMPY_ONLY, targets=(("NumPy", 1.2),), rtol=1e-8, atol=1e-8)
      for fn in LINALG_ALONE),
    ArrayCase("batched_matmul", batched_matmul, None, matrix_stacks, (64,),
              label=lambda n: f"({n}, 32, 32) @ ({n}, 32, 32)", missing=NUMPY_ONLY,
              targets=(("NumPy", 1.2),), rtol=1e-10, atol=1e-10),
    *(ArrayCase(fn.__name__, fn, None, int_vector(dtype), (10 ** 6,), missing=NUMPY_ONLY,
                targets=(("NumPy", 1.2),), rtol=0.0, atol=0.0) for fn, dtype in NARROW_INTS),
]
"""What array_run.py measures, in this order."""
