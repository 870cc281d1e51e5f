"""The exception messages compiled code reports, taken from the host Python and `ops`.

CPython's messages vary across versions ("float division by zero" became
"division by zero"), so each one is read off the host interpreter (or off the
reference evaluation in `ir.ops`) once, and compiled code reports exactly what
the interpreter and CPython would.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from ...ir import ops


def message_of(failing: Callable[[], object]) -> str:
    """The message of the exception `failing()` raises."""
    try:
        failing()
    except (ArithmeticError, ValueError) as exc:
        return str(exc)
    raise AssertionError("expected an exception")


_zero, _nan, _inf = 0.0, math.nan, math.inf

FLOAT_DIVISION = message_of(lambda: 1.0 / _zero)
FLOAT_FLOOR_DIVISION = message_of(lambda: 1.0 // _zero)
FLOAT_MODULO = message_of(lambda: 1.0 % _zero)
INT_DIVISION = message_of(lambda: 1 // int(_zero))
INT_MODULO = message_of(lambda: 1 % int(_zero))
DIVMOD = {True: message_of(lambda: divmod(1.0, _zero)), False: message_of(lambda: divmod(1, 0))}
"""divmod()'s ZeroDivisionError, of floats (True) and of ints (False)."""
INT_NEGATIVE_POWER = message_of(lambda: ops.int_pow(2, -1))
NUMPY_INT_NEGATIVE_POWER = "Integers to negative integer powers are not allowed."
"""NumPy's message for an integer array raised to a negative integer (a ValueError)."""
ZERO_NEGATIVE_POWER = message_of(lambda: ops.float_pow(0.0, -1.0))
NEGATIVE_FRACTIONAL_POWER = message_of(lambda: ops.float_pow(-8.0, 0.5))
POWER_OVERFLOW = message_of(lambda: ops.float_pow(10.0, 400.0))
NEGATIVE_SHIFT = message_of(lambda: ops.py_shift_left(1, -1))
NAN_TO_INT = message_of(lambda: int(_nan))
INF_TO_INT = message_of(lambda: int(_inf))
INT_RANGE = "float too large to convert to int{bits}"
MATH_DOMAIN = message_of(lambda: math.sqrt(-1.0))
MATH_RANGE = message_of(lambda: math.exp(1000.0))
INDEX_OUT_OF_BOUNDS = "index out of bounds for axis {axis}"
"""An array index outside its axis: the fixed message of the error site, and the detail
template, NumPy's own message, the reporter fills in with the index and the size."""
INDEX_OUT_OF_BOUNDS_DETAIL = "index {{0}} is out of bounds for axis {axis} with size {{1}}"
RECURSION = "maximum recursion depth exceeded"
"""CPython's RecursionError message, without its "while calling a Python object" suffixes."""
READ_ONLY = "assignment destination is read-only"
"""NumPy's message for a write into a read-only array."""
TAPE_MEMORY = "out of memory for a tape (what a differentiated loop records)"
OUT_OF_MEMORY = "MemoryError" if "MemoryError" in ops.EXCEPTIONS else "RuntimeError"
"""The exception of a failed allocation: MemoryError once `ops.EXCEPTIONS` knows it."""
