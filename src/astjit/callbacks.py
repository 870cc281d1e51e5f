"""`callback`: calling plain Python from compiled code, and `ArraySpec`, an array result's type.

    c = astjit.callback(robust_center, x, result=float)

In compiled code the call runs `robust_center(x)` in the interpreter (its
arguments boxed as Python and NumPy values: an array is passed as the ndarray
itself, not a copy) and converts the result to `result=`: `float`, `int`,
`bool`, `None` (the result is dropped), `ArraySpec(dtype, ndim)` or a tuple of
these; anything else is a TypeError naming the function. An exception the
function raises comes out of the compiled call as it was raised. `grad` goes
through a callback only with the function's `custom_vjp` rule. Called from
plain Python (or with ASTJIT_DISABLE_JIT=1), `callback` just calls `fn`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArraySpec:
    """The `result=` of a callback returning an array: its dtype and number of dimensions."""

    dtype: Any
    """np.float64, np.float32, np.int64 or np.bool_ (or float, int, bool)."""
    ndim: int


def callback(fn: Callable, *args: Any, result: Any = None) -> Any:
    """`fn(*args)`; in compiled code, run in the interpreter with its result checked
    against `result` (see the module docstring). None when `result` is None."""
    value = fn(*args)
    return None if result is None else value


callback.__astjit_callback__ = True
