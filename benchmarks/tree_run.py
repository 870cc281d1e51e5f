"""Trees as arguments: what a container costs a call, side by side with flat arguments.

Two measurements (issue 13's targets):
- calling a jitted function with a tree of 10 arrays (a dict, a dataclass, a tuple) against
  the same function taking the 10 arrays as separate arguments (target: <= 2x);
- a training step (the gradient of an MSE loss and an SGD update) over a dataclass model
  against the same step written with flat arguments (target: within 5%).

Interleaved rounds, medians, ratios; both versions compiled and checked equal first.

    python benchmarks/tree_run.py [--quick]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from astjit import grad, jit


@dataclass
class Ten:
    a0: np.ndarray
    a1: np.ndarray
    a2: np.ndarray
    a3: np.ndarray
    a4: np.ndarray
    a5: np.ndarray
    a6: np.ndarray
    a7: np.ndarray
    a8: np.ndarray
    a9: np.ndarray


def first_of_flat(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9):
    return a0[0] + a9[0]


def first_of_dict(t):
    return t["a0"][0] + t["a9"][0]


def first_of_dataclass(t):
    return t.a0[0] + t.a9[0]


def first_of_tuple(t):
    return t[0][0] + t[9][0]


@dataclass
class Linear:
    w: np.ndarray
    b: np.ndarray


def loss_tree(p, x, y):
    r = x @ p.w + p.b - y
    return np.mean(r * r)


def step_tree(p, x, y, lr):
    g = grad(loss_tree)(p, x, y)
    return Linear(p.w - lr * g.w, p.b - lr * g.b)


def loss_flat(w, b, x, y):
    r = x @ w + b - y
    return np.mean(r * r)


def step_flat(w, b, x, y, lr):
    gw, gb = grad(loss_flat, argnums=(0, 1))(w, b, x, y)
    return w - lr * gw, b - lr * gb


def per_call(call, seconds: float) -> float:
    """Seconds per call, over a batch lasting about `seconds`."""
    n, start = 1, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds or time.perf_counter() - start > 5 * seconds:
            return elapsed / n
        n *= 2


def side_by_side(calls: dict[str, object], rounds: int, seconds: float) -> dict[str, float]:
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(per_call(call, seconds))
    return {name: statistics.median(s) for name, s in samples.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    options = parser.parse_args()
    rounds, seconds = (5, 0.02) if options.quick else (11, 0.1)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(8) for _ in range(10)]
    names = [f"a{k}" for k in range(10)]
    flat, as_dict = jit(first_of_flat), jit(first_of_dict)
    as_dataclass, as_tuple = jit(first_of_dataclass), jit(first_of_tuple)
    tree_dict, tree_obj, tree_tuple = dict(zip(names, arrays)), Ten(*arrays), tuple(arrays)
    expected = first_of_flat(*arrays)
    for f, arg in ((as_dict, tree_dict), (as_dataclass, tree_obj), (as_tuple, tree_tuple)):
        assert np.isclose(f(arg), expected), f.__name__
    calls = {"10 flat arrays": lambda: flat(*arrays), "dict of 10": lambda: as_dict(tree_dict),
             "dataclass of 10": lambda: as_dataclass(tree_obj),
             "tuple of 10": lambda: as_tuple(tree_tuple)}
    times = side_by_side(calls, rounds, seconds)
    base = times["10 flat arrays"]
    print("Calling with a tree of 10 arrays (median per call; target: <= 2x flat)")
    for name, t in times.items():
        print(f"  {name:16s} {t * 1e9:8.0f} ns   {t / base:5.2f}x")

    x, y = rng.standard_normal((64, 8)), rng.standard_normal((64, 1))
    w, b = rng.standard_normal((8, 1)), np.zeros(1)
    tree_step, flat_step = jit(step_tree), jit(step_flat)
    got, want = tree_step(Linear(w, b), x, y, 0.1), flat_step(w, b, x, y, 0.1)
    assert np.allclose(got.w, want[0]) and np.allclose(got.b, want[1])
    model = Linear(w, b)
    times = side_by_side({"flat arguments": lambda: flat_step(w, b, x, y, 0.1),
                          "dataclass model": lambda: tree_step(model, x, y, 0.1)}, rounds, seconds)
    base = times["flat arguments"]
    print("A training step over a dataclass model (median per step; target: within 5% of flat)")
    for name, t in times.items():
        print(f"  {name:16s} {t * 1e6:8.1f} us   {t / base:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
