"""What the tests of Python's complex in compiled code share: hypothesis' complexes with
infinities, NaNs, signed zeros, huge, tiny and subnormal parts, and the comparison of a
compiled function's outcome (its value, or its exception's type and message) with
CPython's, bit for bit (a NaN part only as a NaN)."""
import math

from hypothesis import strategies as st

PARTS = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-320, 5e-324, 1e308, -1e308,
                     1.5e154, 1e-160, math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True))
COMPLEXES = st.builds(complex, PARTS, PARTS)


def same(got, expected) -> bool:
    """Equal bit for bit, a NaN part only as a NaN; of tuples elementwise."""
    if isinstance(expected, tuple):
        return len(got) == len(expected) and all(map(same, got, expected))
    if type(got) is not type(expected):
        return False
    if isinstance(expected, complex):
        return same(got.real, expected.real) and same(got.imag, expected.imag)
    if isinstance(expected, float) and math.isnan(expected):
        return math.isnan(got)
    if isinstance(expected, float):
        return got == expected and math.copysign(1, got) == math.copysign(1, expected)
    return got == expected


def outcome(fn, *args):
    try:
        return fn(*args)
    except (ArithmeticError, ValueError) as error:
        return type(error), str(error).split(" (at ")[0]


def check(compiled, fn, *args):
    got, expected = outcome(compiled, *args), outcome(fn, *args)
    assert same(got, expected), (args, got, expected)
