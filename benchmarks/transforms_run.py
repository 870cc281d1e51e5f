"""Function transforms on arrays, side by side with JAX: vmap(grad), hessian, jacobians.

Issue 14's targets: `vmap(grad(f))` over a batch <= JAX's time for the same program;
`hessian` of a small MLP loss <= JAX's. Also the per-example gradients of a lookup
(gathers with a batch of index arrays) and the gradient through scatter writes. Both
libraries' functions are compiled first (`jit` of the transform) and checked equal; then
interleaved rounds, medians, ratios. JAX runs in float64 (`jax_enable_x64`) on the CPU, like astjit.

    python benchmarks/transforms_run.py [--quick]

Every median goes to benchmarks/_build/transforms_results.json (benchmarks/plots.py draws it).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tree_run import side_by_side

import astjit

RESULTS_JSON = Path(__file__).resolve().parent / "_build" / "transforms_results.json"


def example_loss(w, x, y):           # one example -> a number
    return (np.tanh(x @ w) - y) ** 2


def mlp_loss(w, x, y):               # a 3-4-1 tanh MLP whose 21 parameters are one flat vector
    W1 = w[:12].reshape((3, 4))
    h = np.tanh(x @ W1 + w[12:16])
    return np.mean((h @ w[16:20] + w[20] - y) ** 2)


def vector_field(x, W):              # R^n -> R^m
    return np.tanh(W @ x) * np.sum(x ** 2)


def lookup_loss(E, idx, y):          # rows of a table gathered by an example's indices
    return (np.sum(np.tanh(E[idx])) - y) ** 2


def scatter_loss(x, v, idx):         # a write by an index array, then np.add.at
    y = x * 1.0
    y[idx] = v
    np.add.at(y, idx, v * v)
    return np.sum(np.sin(y))


def jax_versions():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def example_loss_j(w, x, y):
        return (jnp.tanh(x @ w) - y) ** 2

    def mlp_loss_j(w, x, y):
        W1 = w[:12].reshape((3, 4))
        h = jnp.tanh(x @ W1 + w[12:16])
        return jnp.mean((h @ w[16:20] + w[20] - y) ** 2)

    def vector_field_j(x, W):
        return jnp.tanh(W @ x) * jnp.sum(x ** 2)

    def lookup_loss_j(E, idx, y):
        return (jnp.sum(jnp.tanh(E[idx])) - y) ** 2

    def scatter_loss_j(x, v, idx):  # unique indices: .at[].set is NumPy's assignment
        y = x.at[idx].set(v).at[idx].add(v * v)
        return jnp.sum(jnp.sin(y))

    per_example = jax.jit(jax.vmap(jax.grad(example_loss_j), in_axes=(None, 0, 0)))
    lookups = jax.jit(jax.vmap(jax.grad(lookup_loss_j), in_axes=(None, 0, 0)))
    scatters = jax.jit(jax.grad(scatter_loss_j, argnums=(0, 1)))
    per_example_scatters = jax.jit(jax.vmap(jax.grad(scatter_loss_j, argnums=(0, 1))))
    return {"vmap(grad)": lambda *a: np.asarray(per_example(*a)),
            "hessian": (lambda h: lambda *a: np.asarray(h(*a)))(jax.jit(jax.hessian(mlp_loss_j))),
            "jacfwd": (lambda j: lambda *a: np.asarray(j(*a)))(jax.jit(jax.jacfwd(vector_field_j))),
            "jacrev": (lambda j: lambda *a: np.asarray(j(*a)))(jax.jit(jax.jacrev(vector_field_j))),
            "vmap(grad) gather": lambda *a: np.asarray(lookups(*a)),
            "grad scatter": lambda *a: np.concatenate([np.asarray(g) for g in scatters(*a)]),
            "vmap(grad) scatter": lambda *a: np.concatenate(
                [np.asarray(g) for g in per_example_scatters(*a)], axis=1)}


def transform_cases() -> dict:
    """name -> (astjit's compiled transform, its arguments, what it is); compile_latency.py
    times their first calls too."""
    rng = np.random.default_rng(0)
    return {
        "vmap(grad)": (astjit.jit(astjit.vmap(astjit.grad(example_loss), in_axes=(None, 0, 0))),
                       (rng.standard_normal(8), rng.standard_normal((1000, 8)),
                        rng.standard_normal(1000)), "per-example gradients, 1000 x 8"),
        "hessian": (astjit.jit(astjit.hessian(mlp_loss)),
                    (rng.standard_normal(21) * 0.5, rng.standard_normal((8, 3)),
                     rng.standard_normal(8)), "of a 21-parameter MLP loss"),
        "jacfwd": (astjit.jit(astjit.jacfwd(vector_field)),
                   (rng.standard_normal(16), rng.standard_normal((8, 16))), "R^16 -> R^8"),
        "jacrev": (astjit.jit(astjit.jacrev(vector_field)),
                   (rng.standard_normal(16), rng.standard_normal((8, 16))), "R^16 -> R^8"),
        "vmap(grad) gather": (astjit.jit(astjit.vmap(astjit.grad(lookup_loss), in_axes=(None, 0, 0))),
                              (rng.standard_normal((10, 4)), rng.integers(-10, 10, (1000, 3)),
                               rng.standard_normal(1000)), "1000 examples of 3 rows of 10 x 4"),
        "grad scatter": ((lambda g: lambda *a: np.concatenate(g(*a)))(
                             astjit.jit(astjit.grad(scatter_loss, argnums=(0, 1)))),
                         (rng.standard_normal(10 ** 5), rng.standard_normal(10 ** 4),
                          rng.permutation(10 ** 5)[:10 ** 4]), "10^4 of 10^5, unique"),
        "vmap(grad) scatter": (
            (lambda g: lambda *a: np.concatenate(g(*a), axis=1))(
                astjit.jit(astjit.vmap(astjit.grad(scatter_loss, argnums=(0, 1))))),
            (rng.standard_normal((1000, 16)), rng.standard_normal((1000, 4)),
             np.argsort(rng.random((1000, 16)), axis=1)[:, :4]),
            "1000 examples, 4 of 16 each, unique"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    options = parser.parse_args()
    rounds, seconds = (5, 0.02) if options.quick else (11, 0.1)
    cases = transform_cases()
    try:
        jax_fns = jax_versions()
    except ImportError as error:
        print(f"JAX is not installed ({error}); astjit's times only")
        jax_fns = {}
    print(f"{'transform':12s} {'astjit':>10s} {'JAX':>10s} {'astjit/JAX':>11s}  first call (astjit, JAX)")
    results = {}
    for name, (fn, args, what) in cases.items():
        t0 = time.perf_counter()
        got = fn(*args)
        first = time.perf_counter() - t0
        calls = {"astjit": lambda fn=fn, args=args: fn(*args)}
        jax_first = None
        if name in jax_fns:
            t0 = time.perf_counter()
            want = jax_fns[name](*args)
            jax_first = time.perf_counter() - t0
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=name)
            calls["JAX"] = lambda name=name, args=args: jax_fns[name](*args)
        times = side_by_side(calls, rounds, seconds)
        jax_time = times.get("JAX")
        ratio = f"{times['astjit'] / jax_time:10.2f}x" if jax_time else "        n/a"
        jax_cell = f"{jax_time * 1e6:8.1f}us" if jax_time else "       n/a"
        jax_first_cell = f"{jax_first * 1e3:.0f} ms" if jax_first is not None else "n/a"
        print(f"{name:12s} {times['astjit'] * 1e6:8.1f}us {jax_cell} {ratio}  "
              f"{first * 1e3:.0f} ms, {jax_first_cell}   ({what})")
        results[name] = {"what": what, "median": times,
                         "first_call": {"astjit": first, "JAX": jax_first}}
    RESULTS_JSON.parent.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps({"settings": {"rounds": rounds, "min_sample_s": seconds},
                                        "cases": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
