"""What test_semantics_table.py expects of a compiled call, and how it compares outcomes.

The reference is the uncompiled function itself, run by CPython and NumPy. An
outcome is a value, an exception raised (`Raised`), or a compile-time refusal
(`Refused`, an `astjit.CompileError`). `expected` turns the reference outcome
into astjit's documented behaviour where astjit differs on purpose: each such
difference is a named rule below, with its reason, applied by `expected` and
asserted like any other outcome (never skipped). README.md's section "Where
astjit differs from CPython" documents them.
"""
from __future__ import annotations

import operator
import warnings
from dataclasses import dataclass

import numpy as np
from semantics_cases import Spelling

from astjit import CompileError


@dataclass(frozen=True)
class Value:
    value: object


@dataclass(frozen=True)
class Raised:
    error: type
    message: str


@dataclass(frozen=True)
class Refused:
    message: str


def run(fn, args) -> Value | Raised | Refused:
    """Call `fn` (plain or compiled); warnings (NumPy's overflow, divide ...) are ignored."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return Value(fn(*args))
        except CompileError as error:
            return Refused(str(error).splitlines()[0])
        except Exception as error:  # noqa: BLE001 - the class is the outcome
            return Raised(type(error), str(error))


# ---- the differences astjit keeps (README.md, "Where astjit differs from CPython") ----------------

INT64 = (-2 ** 63, 2 ** 63)
PYTHON_FAMILIES = ("operator", "builtin", "math")

CONVERTS_ARRAYS = frozenset({"cast", "min", "max", "not"})
"""Ops whose Python spelling converts an array to a scalar (`float(x)`, `bool(x < y)`, `not x`),
which CPython does for 0-d and size-1 arrays only; with the `math` functions they are refused
for any array (rule `scalar_conversion_of_array`)."""

KNOWN_DTYPES = {"float64", "float32", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "complex64", "complex128", "bool"}
"""The dtypes compiled code computes in (ir/types.py NUMPY_DTYPES): not float16."""


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer, np.bool_))


def _python_scalars(args) -> bool:
    return all(type(x) in (int, float, bool) for x in args)


def shortcut(s: Spelling, args) -> Value | None:
    """int64 wrapping of `a ** b` and `a << b` whose exact result CPython would take
    too long to build (README: `int` is int64 and wraps): computed modulo 2**64 directly."""
    if s.family not in PYTHON_FAMILIES or s.ops - {"pow", "lshift"} or len(args) != 2 \
            or not all(type(x) in (int, bool) for x in args):
        return None
    a, b = args
    if s.ops == {"pow"} and b > 64 and abs(a) > 1:
        return Value(_wrap(pow(a, b, 2 ** 64)))
    if s.ops == {"lshift"} and b > 64:
        return Value(0)
    return None


def _wrap(n: int) -> int:
    return (n + 2 ** 63) % 2 ** 64 - 2 ** 63


def expected(s: Spelling, fn, args) -> tuple[Value | Raised | Refused, str]:
    """The outcome astjit must give for `fn(*args)`, and the kept difference that made it
    differ from CPython's ('' when it is CPython's own)."""
    quick = shortcut(s, args)
    if quick is not None:
        return quick, "int64_wraps"
    outcome = run(fn, args)
    for rule in KEPT:
        changed = rule(s, fn, args, outcome)
        if changed is not None:
            return changed, rule.__name__
    return outcome, ""


def int64_wraps(s, fn, args, outcome):
    """`int` is int64: an int result outside it wraps (from integers) or raises OverflowError
    (a float converted: int(1e19), math.floor, round). README: "int is a signed 64-bit".
    Each int of a tuple result (divmod's) alike."""
    if not isinstance(outcome, Value):
        return None
    values = outcome.value if type(outcome.value) is tuple else (outcome.value,)
    if any(type(v) is int and not INT64[0] <= v < INT64[1] for v in values):
        if all(_is_int(x) for x in args):
            wrapped = tuple(_wrap(v) if type(v) is int else v for v in values)
            return Value(wrapped if type(outcome.value) is tuple else wrapped[0])
        return Raised(OverflowError, "int too large for int64")
    return None


def int_negative_power(s, fn, args, outcome):
    """`int ** negative int` raises ValueError where CPython gives a float (CPython's
    ZeroDivisionError for 0 ** -1 stays). README: "int ** negative int"."""
    if s.ops == {"pow"} and s.family in PYTHON_FAMILIES and _python_scalars(args) \
            and all(type(x) in (int, bool) for x in args) and args[1] < 0 \
            and isinstance(outcome, Value):
        return Raised(ValueError, "integer ** negative integer")
    return None


MIXED_VIA_FLOAT64 = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "min", "max", "truediv"})


def mixed_via_float64(s, fn, args, outcome):
    """Mixed int/float (and int / int) arithmetic goes through float64: comparisons, min,
    max of an int and a float, and `/` of two ints, are computed on float(a), float(b).
    README: "Mixed int/float arithmetic goes through float64"."""
    if s.family not in PYTHON_FAMILIES or not s.ops <= MIXED_VIA_FLOAT64 \
            or not _python_scalars(args) or len(args) != 2:
        return None
    kinds = {type(x) for x in args}
    if float in kinds and kinds != {float}:
        return run(fn, [float(x) for x in args])
    if s.ops == {"truediv"} and kinds <= {int, bool}:
        return run(fn, [float(x) for x in args])
    return None


def min_max_promoted(s, fn, args, outcome):
    """min() and max() of two types give the type `a + b` has (bool and float: float;
    np.float32 and float: np.float32), not whichever argument won; a bool and an int keep
    the winner's type, as CPython's (int|bool). README: "A bool and a float merged", "A
    variable that is a Python scalar on one path and a NumPy scalar on another"."""
    if s.family not in PYTHON_FAMILIES or not s.ops & {"min", "max"} \
            or type(args[0]) is type(args[1]) or not isinstance(outcome, Value) \
            or {type(a) for a in args} == {bool, int}:
        return None
    promoted = run(operator.add, args)
    with np.errstate(over="ignore"):  # a float beyond float32 becomes inf, as compiled code's
        return Value(type(promoted.value)(outcome.value))


def scalar_conversion_of_array(s, fn, args, outcome):
    """A `math` function, int(), float(), bool(), min(), max() or `not` given an array is
    refused at compile time, whatever its size: CPython converts a 0-d or size-1 array to a
    scalar; compiled code decides by the argument's type. README, "The supported subset":
    `math` functions take numbers only (an array is a TypingError)."""
    if any(isinstance(x, np.ndarray) for x in args) and s.family in PYTHON_FAMILIES \
            and (s.family == "math" or s.ops <= CONVERTS_ARRAYS):
        return Refused("a Python function of an array")
    return None


def no_complex(s, fn, args, outcome):
    """A negative float to a fractional power is a ValueError where CPython gives a complex
    number (or OverflowError computing it), a type known only at run time (ir/ops/semantics.py,
    `float_pow`, with Python 2's message; README: differences)."""
    if s.ops <= {"pow", "fpow"} and s.family in ("operator", "builtin") and _python_scalars(args) \
            and (isinstance(outcome, Value) and isinstance(outcome.value, complex)
                 or isinstance(outcome, Raised) and outcome.error is OverflowError
                 and args[0] < 0 and not float(args[1]).is_integer()):
        return Raised(ValueError, "negative number cannot be raised to a fractional power")
    return None


def numpy_dtype_astjit_lacks(s, fn, args, outcome):
    """NumPy's float16 and int8 results (np.sqrt(True), math of bool arrays,
    np.floor_divide of bools) are refused. README: "Combinations NumPy computes differently
    are refused"."""
    if isinstance(outcome, Value):
        dtype = getattr(outcome.value, "dtype", None)
        if dtype is not None and dtype.name not in KNOWN_DTYPES:
            return Refused(f"NumPy gives {dtype.name}")
    return None


NOT_ARITHMETIC = frozenset({"lt", "le", "gt", "ge", "eq", "ne", "isnan", "isinf", "isfinite",
                            "where", "not", "bitand", "bitor", "bitxor", "cast"})


BOOL_LOGIC = frozenset({"add", "mul", "invert", "real", "imag", "maximum", "minimum", "abs",
                        "numpy_floor", "numpy_ceil", "numpy_trunc"})
"""Bool ops compiled code computes as NumPy does: or, and, not, the parts (the bool itself,
False), np.maximum (or) and np.minimum (and), abs, np.floor, np.ceil, np.trunc (the bool)."""


def numpy_bool_arithmetic(s, fn, args, outcome):
    """NumPy's arithmetic of bools that stays bool, other than BOOL_LOGIC's, which compute
    as NumPy's, is refused. README: "Combinations NumPy computes differently are refused"."""
    if isinstance(outcome, Value) and s.family != "reduction" and not s.ops & NOT_ARITHMETIC \
            and not s.ops <= BOOL_LOGIC \
            and getattr(outcome.value, "dtype", None) == np.bool_ \
            and all(np.asarray(x).dtype == np.bool_ for x in args):
        return Refused("NumPy's bool arithmetic")
    return None


def numpy_not_compiled_yet(s, fn, args, outcome):
    """np.fmod of integers is refused. README: "NumPy functions not compiled yet are
    refused"."""
    ints = all(_is_int(x) or (isinstance(x, np.ndarray) and x.dtype.kind in "iu") for x in args)
    if isinstance(outcome, Value) and "fmod" in s.ops and s.family == "numpy" and ints:
        return Refused("not supported yet")
    return None


@dataclass(frozen=True)
class AnyZeroSign(Value):
    """A float value whose zeros may come with either sign."""


def zero_sign_of_min_max_reduction(s, fn, args, outcome):
    """Which of equal zeros of both signs np.min/np.max (nanmin, nanmax, the methods; ptp
    subtracts them) return depends on
    the loop order, NumPy's and astjit's alike: a zero result may have either sign. README:
    "The sign of a zero that np.min/np.max ... return"."""
    reduces = any(f"{name}(" in s.text for name in ("np.min", "np.max", "np.amin", "np.amax",
                                                     ".min", ".max", "np.nanmin", "np.nanmax",
                                                     "np.ptp"))
    if s.family == "reduction" and reduces and isinstance(outcome, Value) \
            and np.asarray(outcome.value).dtype.kind == "f":
        return AnyZeroSign(outcome.value)
    return None


KEPT = (numpy_not_compiled_yet, zero_sign_of_min_max_reduction, scalar_conversion_of_array,
        int64_wraps, int_negative_power, no_complex, mixed_via_float64, min_max_promoted,
        numpy_dtype_astjit_lacks, numpy_bool_arithmetic)
"""The kept differences, in the order they are tried; the first that applies decides."""

REFUSAL_IS_FINE = (TypeError, np.exceptions.AxisError)
"""Where CPython/NumPy raise these, a compile-time refusal is the same answer earlier: both
are decided by the arguments' types (and a constant axis)."""


# ---- comparing ---------------------------------------------------------------------------------

INEXACT_OPS = frozenset({"exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
                         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
                         "atanh", "erf", "erfc", "atan2", "hypot", "pow", "fpow", "exp2", "reduce",
                         "statistic"})
"""Ops whose float results may differ from CPython's/NumPy's in the last bits: libm against
libmvec (docs/vecmath.md; NumPy's own exp2 rounds by the CPU's SIMD path), and sums in another
order (README: "Sums may round differently")."""
ULPS = 16


def tolerance(s: Spelling, dtype) -> float:
    """The relative tolerance of float results of dtype `dtype`."""
    if not s.ops & INEXACT_OPS or np.dtype(dtype).kind != "f":
        return 0.0
    eps = np.finfo(dtype).eps
    summed = s.ops <= {"reduce", "statistic"}  # np.var ... sum too
    return eps * (ULPS if not summed else 2 ** 20 if dtype == np.float64 else 2 ** 8)


def differs(s: Spelling, want, got, args=()) -> str | None:
    """Why outcome `got` is not outcome `want`, or None when they agree. A sum's rounding
    depends on its order, so a summed result is within its tolerance of the sum of its terms'
    magnitudes (`args`), not of the result: [2**63 - 1, 1, -2**63, -1] has mean 0 or -0.25
    in float64 by the order NumPy's pairwise sum takes on the machine's SIMD width."""
    if isinstance(want, AnyZeroSign) and isinstance(got, Value):  # x + 0.0 makes -0.0 0.0
        want, got = Value(want.value + 0.0), Value(got.value + 0.0)
    if isinstance(want, Raised):
        if isinstance(got, Raised) and issubclass(got.error, want.error):
            return None
        if isinstance(got, Refused) and issubclass(want.error, REFUSAL_IS_FINE):
            return None
        return f"expected {want.error.__name__} ({want.message[:80]}), got {_show(got)}"
    if isinstance(want, Refused):
        return None if isinstance(got, Refused) else f"expected a refusal ({want.message}), " \
                                                     f"got {_show(got)}"
    if not isinstance(got, Value):
        return f"expected {_show(want)}, got {_show(got)}"
    e, g = want.value, got.value
    if type(e) is not type(g):
        return f"expected {_show(want)} of type {type(e).__name__}, got {_show(got)} " \
               f"of type {type(g).__name__}"
    if isinstance(e, np.ndarray):
        if e.dtype != g.dtype or e.shape != g.shape:
            return f"expected {e.dtype}{list(e.shape)}, got {g.dtype}{list(g.shape)}"
        bad = np.flatnonzero(~_agree(e, g, tolerance(s, e.dtype), _magnitude(s, args)))
        if bad.size:
            i = np.unravel_index(bad[0], e.shape)
            return f"{bad.size} of {e.size} elements differ; at {list(i)}: expected " \
                   f"{e[i]!r}, got {g[i]!r}"
        return None
    rtol = tolerance(s, np.float32 if isinstance(e, np.float32) else np.float64)
    return None if _agree(np.asarray(e), np.asarray(g), rtol, _magnitude(s, args)).all() else \
        f"expected {e!r}, got {g!r}"


def _magnitude(s: Spelling, args) -> float:
    """The sum of the magnitudes of a summed result's terms (0.0 for other ops)."""
    if not s.ops <= {"reduce", "statistic"}:
        return 0.0
    with np.errstate(all="ignore"):
        terms = [np.abs(np.asarray(a, dtype=np.float64)) for a in args
                 if np.asarray(a).dtype.kind in "iuf"]
        total = sum(float(t[np.isfinite(t)].sum()) for t in terms)
    return total if np.isfinite(total) else 0.0


def _agree(e: np.ndarray, g: np.ndarray, rtol: float, magnitude: float = 0.0) -> np.ndarray:
    """Elementwise: equal (NaN equal to NaN, -0.0 distinct from 0.0), or within `rtol` of
    the larger of the expected value and `magnitude`; a complex part by part."""
    if e.dtype.kind == "c":
        return _agree(e.real, g.real, rtol, magnitude) & _agree(e.imag, g.imag, rtol, magnitude)
    if e.dtype.kind != "f":
        return e == g
    e_nan, g_nan = np.isnan(e), np.isnan(g)
    with np.errstate(all="ignore"):
        exact = (e == g) & (np.signbit(e) == np.signbit(g))
        scale = np.maximum(np.abs(e), magnitude)
        close = np.isfinite(e) & ((e != 0) | (magnitude > 0)) & (np.abs(e - g) <= rtol * scale)
    return (e_nan & g_nan) | (~e_nan & ~g_nan & (exact | close))


def _show(outcome) -> str:
    if isinstance(outcome, Raised):
        return f"{outcome.error.__name__} ({outcome.message[:80]})"
    if isinstance(outcome, Refused):
        return f"a CompileError ({outcome.message[:100]})"
    return _brief(outcome.value)


def _brief(x) -> str:
    if isinstance(x, np.ndarray) and x.size > 4:
        return f"array {x.dtype}{list(x.shape)}"
    return " ".join(repr(x).split())


def describe_args(args) -> str:
    """The arguments as a failure shows them: values, arrays as dtype, shape, strides."""
    return "(" + ", ".join(
        f"array {x.dtype}{list(x.shape)} strides {list(x.strides)}" if isinstance(x, np.ndarray)
        and x.size > 4 else " ".join(repr(x).split()) for x in args) + ")"


def first_bad_element(s: Spelling, args, want, got) -> str:
    """For elementwise results: the argument elements at the first differing position."""
    if not (s.family != "reduction" and isinstance(want, Value) and isinstance(got, Value)
            and isinstance(want.value, np.ndarray) and isinstance(got.value, np.ndarray)
            and want.value.shape == got.value.shape):
        return ""
    try:
        parts = np.broadcast_arrays(*[np.asarray(a) for a in args], want.value)[:-1]
    except ValueError:
        return ""
    bad = np.flatnonzero(~_agree(want.value, got.value, 0.0))
    if not bad.size:
        return ""
    i = np.unravel_index(bad[0], want.value.shape)
    return " at elements " + repr(tuple(p[i].item() for p in parts))


def mutated(before, after) -> bool:
    """Whether any array argument changed (bytes, dtype or shape)."""
    return any(isinstance(b, np.ndarray) and (b.dtype != a.dtype or b.shape != a.shape
                                              or b.tobytes() != a.tobytes())
               for b, a in zip(before, after))


def size_of(outcome) -> int:
    """How many values an outcome checks: an array's elements (at least one), else one."""
    if isinstance(outcome, Value) and isinstance(outcome.value, np.ndarray):
        return max(1, outcome.value.size)
    return 1

