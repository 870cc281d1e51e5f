"""The sign of a NaN that arithmetic made is not CPython's to promise, nor astjit's.

IEEE 754 does not interpret the sign of a NaN an operation returns (section 6.3), and
LLVM keeps it only through copies (`fneg`, `fabs`, `copysign`): it computes `(-x) / 5`
as `x / -5`, whose NaN has the other sign on x86 (fuzz seed 41316, program 4680:
`math.copysign(1.0, -np.log(p) / 5)` of a negative p). A program sees the sign only
through `math.copysign`, `np.copysign` and `np.signbit`. So where the compiled outcome
differs, the reference is run again reading each NaN's sign another way (flipped, all
positive, all negative), and an outcome one of those runs reaches is a documented
difference (docs/guide.md, "Where astjit differs"), not a mismatch.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from astjit.fuzz.conditioning import any_ends_as

NAN_SIGN = "NaN sign"
"""How a verdict's detail starts where the outcomes differ by the sign of a NaN alone."""
READINGS: dict[str, Callable[[float], float]] = {
    "flipped": lambda y: -y,
    "positive": lambda y: abs(y),
    "negative": lambda y: -abs(y),
}
"""How a rerun reads the sign of a NaN y: as the other sign, always +, always -."""


class _Read:
    """`math` or `numpy` with copysign and signbit reading a NaN's sign by `read`."""

    def __init__(self, real, read: Callable[[float], float]):
        self._real, self._read = real, read

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def _sign_source(self, y):
        if isinstance(y, np.ndarray):
            return np.where(np.isnan(y), np.vectorize(self._read, otypes=[y.dtype])(y), y) \
                if y.size and y.dtype.kind == "f" else y
        return self._read(y) if isinstance(y, float) and math.isnan(y) else y

    def copysign(self, x, y, *args, **kwargs):
        return self._real.copysign(x, self._sign_source(y), *args, **kwargs)

    def signbit(self, x, *args, **kwargs):
        return self._real.signbit(self._sign_source(x), *args, **kwargs)


def read_otherwise(module, run: Callable[[], object]) -> Iterator[tuple[str, object]]:
    """("ok", result) or ("raise", exception) of `run()` once per way of reading a NaN's
    sign, with the program's `math` and `np` standing in (put back after)."""
    real_math, real_np = getattr(module, "math", None), getattr(module, "np", None)
    try:
        for read in READINGS.values():
            if real_math is math:
                module.math = _Read(math, read)
            if real_np is np:
                module.np = _Read(np, read)
            try:
                yield "ok", run()
            except Exception as exc:  # noqa: BLE001 - an outcome to compare
                yield "raise", exc
    finally:
        if real_math is math:
            module.math = math
        if real_np is np:
            module.np = np


def nan_sign_reaches(module, run: Callable[[], object], got: tuple,
                     same: Callable[[object, object], bool]) -> bool:
    """Whether a reference reading NaN signs otherwise ends as the compiled run did (`got`:
    ("ok", result) or ("raise", exception))."""
    return any_ends_as(read_otherwise(module, run), got, same)
