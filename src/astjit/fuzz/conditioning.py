"""How far the documented rounding differences can move a program's result.

A `TOLERANT` program's sums and vector math may differ from NumPy's in their last bits
(astjit sums in another order; libmvec's `np.tanh` is not NumPy's, docs/vecmath.md). The
judge allows a relative 1e-9 on the result, which a cancellation downstream undoes: the
median of `np.tanh` of 11.9 and -11.2 is about 1e-10, and one ulp of either tanh moves it by
4e-7 of itself (seed 41305, program 6406). So where a tolerant result differs by more, the
reference is run again with every such operation moved within its own rounding bound, and
the compiled result is accepted where it lies within the spread those references make.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import random
from collections.abc import Callable, Iterator

import numpy as np

NUDGED_UFUNCS = ("sin", "cos", "tanh", "exp", "arctan", "log1p", "expm1")
UFUNC_ULPS = 4        # libmvec's documented error, and NumPy's own SIMD loops'
RUNS = 8
MARGIN = 2.0          # a compiled result may lie twice the references' spread away


def float_leaves(value) -> Iterator[float]:
    """The floats of a result or of the arguments, in `judge.differ`'s order."""
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from float_leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from float_leaves(item)
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from float_leaves(getattr(value, f.name))
    elif isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            yield from map(float, value.ravel().tolist())
    elif isinstance(value, (float, np.floating)):
        yield float(value)


class Nudged:
    """`numpy` for a reference run, with each reassociating or vector-math result moved at
    random within its rounding bound: a ufunc's few ulps; a sum's n eps sum(|terms|); a
    product's, of its factors multiplied in one order or another."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def __getattr__(self, name: str):
        real = getattr(np, name)
        if name in NUDGED_UFUNCS:
            return lambda x, *a, **k: self.relative(real(x, *a, **k), UFUNC_ULPS)
        if name in ("sum", "mean"):
            return lambda x, *a, **k: self.absolute(real(x, *a, **k), x, lambda t: real(np.abs(t), *a, **k))
        if name == "dot":
            return lambda x, y, *a: self.absolute(real(x, y, *a), x, lambda t: real(np.abs(t), np.abs(y), *a))
        if name == "prod":
            return lambda x, *a, **k: self.relative(self.product(x) if not (a or k) else real(x, *a, **k),
                                                    max(1, np.size(x)))
        if name == "std":
            return lambda x, *a, **k: self.relative(real(x, *a, **k), max(1, np.size(x)))
        return real

    def product(self, x):
        """np.prod(x) of a float array in one of three orders: left to right (NumPy's), or
        folded by halves (x[i] * x[i + n/2], astjit's vector accumulators), or in adjacent
        pairs. A product that overflows on the way in one order may not in another (seed
        41311, program 2698: `np.prod` of 4.6e154, 7.5e154, 1.7e77, 1.7e77 and four
        2.2e-78 is inf left to right, about 0.9 by halves)."""
        flat, order = np.asarray(x), self.rng.randrange(3)
        if flat.dtype.kind != "f" or flat.size < 2 or order == 0:
            return np.prod(x)
        flat = flat.ravel()
        with np.errstate(over="ignore", invalid="ignore"):
            while flat.size > 1:
                if flat.size % 2:
                    flat = np.append(flat, flat.dtype.type(1))
                half = flat.size // 2
                flat = flat[:half] * flat[half:] if order == 1 else flat[0::2] * flat[1::2]
        return flat.dtype.type(flat[0])

    def noise(self, like) -> np.ndarray:
        return np.asarray([self.rng.uniform(-1.0, 1.0) for _ in range(np.size(like))]).reshape(np.shape(like))

    def relative(self, result, ulps: float):
        if np.asarray(result).dtype.kind != "f":
            return result
        eps = np.finfo(np.asarray(result).dtype).eps
        return self.retyped(result, result * (1.0 + ulps * eps * self.noise(result)))

    def absolute(self, result, terms, magnitude: Callable):
        if np.asarray(result).dtype.kind != "f":
            return result
        count = max(1, np.size(terms) // max(1, np.size(result)))
        bound = count * np.finfo(np.asarray(result).dtype).eps * magnitude(np.asarray(terms))
        return self.retyped(result, result + bound * self.noise(result))

    @staticmethod
    def retyped(result, moved):
        """`moved` as the type NumPy gave `result`: a float64 scalar stays one."""
        if isinstance(result, np.ndarray):
            return np.asarray(moved, dtype=result.dtype).reshape(result.shape)
        return type(result)(np.asarray(moved).item())


def nudged_runs(module, run: Callable[[], object]) -> Iterator[tuple[str, object]]:
    """("ok", result) or ("raise", exception) of `run()` with the program's `np` nudged, one
    per seed (the program's own `np` is put back after); nothing where the program does not
    call numpy as `np`."""
    if getattr(module, "np", None) is not np:
        return
    try:
        for seed in range(RUNS):
            module.np = Nudged(random.Random(seed))
            try:
                outcome = "ok", run()
            except Exception as exc:  # noqa: BLE001 - an outcome to compare
                outcome = "raise", exc
            yield outcome
    finally:
        module.np = np


def spreads(module, run: Callable[[], tuple]) -> tuple[list[float], list[float]] | None:
    """The floats of `run()`'s outcome (result and arguments), and per float the farthest
    that a nudged reference lies from it; None where a nudged run raised, took another
    shape of result, or made a NaN the plain run has not (the outcome itself moves)."""
    if getattr(module, "np", None) is not np:
        return None
    plain = list(float_leaves(run()))
    widest = [0.0] * len(plain)
    with contextlib.closing(nudged_runs(module, run)) as runs:  # np put back on leaving early
        for kind, result in runs:
            nudged = list(float_leaves(result)) if kind == "ok" else None
            if nudged is None or len(nudged) != len(plain):
                return None
            for k, (p, n) in enumerate(zip(plain, nudged)):
                if math.isnan(p) != math.isnan(n):
                    return None
                if n != p and not math.isnan(p):  # an infinity made or lost: an infinite spread
                    widest[k] = max(widest[k], abs(n - p))
    return plain, widest


def within_spread(module, run: Callable[[], tuple], got) -> bool:
    """Whether each float of the compiled outcome `got` lies within MARGIN times the nudged
    references' spread of the reference's (equal lengths: `judge.differ` found no other
    difference)."""
    found = spreads(module, run)
    if found is None:
        return False
    reference, widest = found
    compiled = list(float_leaves(got))
    if len(compiled) != len(reference):
        return False
    return all(r == c or (math.isnan(r) and math.isnan(c)) or abs(c - r) <= MARGIN * w
               for r, c, w in zip(reference, compiled, widest))


def reachable(module, run: Callable[[], object], got: tuple, same: Callable[[object, object], bool]) -> bool:
    """Whether a nudged reference ends as the compiled run did (`got`: ("ok", result) or
    ("raise", exception)): raises an instance of the same class, or returns what `same`
    calls equal. Where CPython raised and the compiled code returned, or the other way
    round, a branch the rounding decides may be why (an overflow in one order of a
    product, not in another)."""
    return any_ends_as(nudged_runs(module, run), got, same)


def any_ends_as(runs: Iterator[tuple[str, object]], got: tuple,
                same: Callable[[object, object], bool]) -> bool:
    """Whether one of the reference `runs` (("ok", result) or ("raise", exception) each)
    ends as the compiled run did: raises an instance of the same class, or returns what
    `same` calls equal. The runs stop at the first that does (their stand-ins put back)."""
    with contextlib.closing(runs):
        return any(kind == got[0] and (isinstance(got[1], type(result)) if kind == "raise"
                                       else same(result, got[1])) for kind, result in runs)
