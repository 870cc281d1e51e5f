"""Reference semantics (Python) of primitives whose Python operator is not enough."""

from __future__ import annotations

import builtins
import functools
import math
import threading

from ..types import BOOL, TupleType, Type

# ---- reference semantics that Python's operators do not give directly ----------

def int_pow(a, b):
    """Python's `int ** int`, except that a negative exponent with a nonzero base, whose
    result CPython makes a float, is refused (one type per value; README)."""
    if isinstance(a, int) and isinstance(b, int) and not isinstance(b, bool) and b < 0:
        if a == 0:
            raise ZeroDivisionError("0.0 cannot be raised to a negative power")
        raise ValueError("integer ** negative integer has a float result; write float(a) ** b")
    return a ** b


def float_pow(a, b):
    """Python's `float ** float`, minus the complex results it would give."""
    if a == 0.0 and b < 0.0 and math.isfinite(b):
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    if a < 0.0 and math.isfinite(a) and math.isfinite(b) and b != math.floor(b):
        raise ValueError("negative number cannot be raised to a fractional power")
    return a ** b


def py_pow(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return float_pow(float(a), float(b))
    return int_pow(a, b)


def py_min(a, b):
    return b if b < a else a


def py_max(a, b):
    return b if b > a else a


def in_int64(n: int) -> int:
    """`n` if it fits astjit's int, else the OverflowError compiled code raises."""
    if not -(2 ** 63) <= n < 2 ** 63:
        raise OverflowError("float too large to convert to int64")
    return n


def int_result(fn):
    """A float -> int function (floor, round, ...) with int64's range check."""
    def checked(x):
        return in_int64(fn(x))
    checked.__name__ = fn.__name__
    return checked


def py_cast(x, to):
    """`x` as type `to`, as the CPU's `cast` computes it: a complex as a real keeps its real
    part (NumPy's astype), a real as a complex is x + 0i."""
    if to == BOOL:
        return bool(x)
    if to.is_complex:
        return complex(x)
    x = x.real
    if to.is_float:
        return float(x)
    return in_int64(int(x)) if isinstance(x, float) else int(x)


def py_shift_left(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    return a << b


def py_shift_right(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    return a >> b


def _getitem(t, index):
    return t[index]


def zero_of(t: Type | None):
    """The value an `undef` of type `t` evaluates to: a zero, so it is deterministic."""
    if isinstance(t, TupleType):
        return tuple(zero_of(e) for e in t.elements)
    if t == BOOL:
        return False
    if t is not None and getattr(t, "is_float", False):
        return 0.0
    if t is not None and getattr(t, "is_complex", False):
        return 0j
    if t is not None and getattr(t, "is_int", False):
        return 0
    return None


def _undef(type=None):
    return zero_of(type)


def py_raise_if(cond, exc, message):
    if cond:
        raise EXCEPTIONS[exc](message)
    return None


def numpy_casting_error(message: str) -> TypeError:
    """NumPy's exception for a ufunc result that does not cast to its output array
    (`int_array += 1.5`): an instance of NumPy's own class, carrying `message`."""
    return _casting_error_class()(message)


@functools.cache
def _casting_error_class() -> type:
    """A subclass of NumPy's class for that error, which NumPy does not export: found by
    having NumPy raise it once. Ours takes a plain message (NumPy's takes the ufunc
    and dtypes), so compiled code can add the source line to it."""
    import numpy

    try:
        numpy.add(numpy.zeros(1), 1.5, out=numpy.zeros(1, dtype=numpy.int64))
    except TypeError as error:
        numpy_class = type(error)

    class UFuncOutputCastingError(numpy_class):
        def __init__(self, message: str):
            TypeError.__init__(self, message)

        def __str__(self) -> str:
            return str(self.args[0])

    return UFuncOutputCastingError


# ---- exceptions compiled code raises -------------------------------------------------

def _numpy_linalg_error() -> type:
    """numpy.linalg.LinAlgError (NumPy imported when an error needs it)."""
    import numpy

    return numpy.linalg.LinAlgError


CALLBACK_ERROR = "CallbackError"
"""The exception name of an error site where a Python function called from compiled code
raised (ops/callbacks.py): the exception it raised, kept until the site reports it."""

_PENDING = threading.local()


def keep_pending(error: BaseException) -> None:
    """Keep the exception a callback raised, for the error site that reports it."""
    _PENDING.error = error


def pending_error(message: str) -> BaseException:
    """The exception a callback raised (taken: reported once), else a RuntimeError."""
    error = getattr(_PENDING, "error", None)
    _PENDING.error = None
    return error if error is not None else RuntimeError(f"{message}: the callback failed")


EXCEPTIONS = {name: cls for name, cls in vars(builtins).items()
              if isinstance(cls, type) and issubclass(cls, Exception)}
"""Exception name -> what makes the exception from a message: every builtin exception class
(a `raise` in compiled code names one), and the three below."""
EXCEPTIONS["UFuncOutputCastingError"] = numpy_casting_error
EXCEPTIONS[CALLBACK_ERROR] = pending_error
EXCEPTIONS["LinAlgError"] = lambda message: _numpy_linalg_error()(message)  # np.linalg's
