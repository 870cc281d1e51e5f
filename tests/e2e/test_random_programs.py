"""Property: random programs compiled by astjit return exactly what CPython returns.

The number of examples is HYPOTHESIS_EXAMPLES (40 by default: each example compiles a new
program, and `python -m astjit.fuzz`, which CI also runs and tests/api/test_fuzz.py runs a
short campaign of, searches the same ground more widely: its programs have the same ints
and floats, operators, nested if/while/for with break, continue and early returns, and
more; raise it to search harder:
`HYPOTHESIS_EXAMPLES=5000 python -m pytest tests/e2e/test_random_programs.py`).
"""
import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from program_gen import load, programs

from astjit import jit

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "40"))


def outcome(fn, args):
    try:
        return "value", fn(*args)
    except (ArithmeticError, ValueError) as error:
        return "raises", type(error).__name__


def same(expected, got):
    if expected[0] != got[0]:
        return False
    if expected[0] == "raises":
        return expected[1] == got[1]
    e, g = expected[1], got[1]
    if isinstance(e, float) and math.isnan(e):
        return isinstance(g, float) and math.isnan(g)
    return type(e) is type(g) and e == g


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(source=programs(), a=st.integers(-50, 50), b=st.integers(-50, 50),
       x=st.floats(-20, 20), y=st.sampled_from([0.0, -0.0, 1.0, -3.5, 1e-3, 7.25]))
def test_random_program_matches_cpython(tmp_path_factory, source, a, b, x, y):
    fn = load(source, tmp_path_factory.mktemp("progs"))
    expected = outcome(fn, (a, b, x, y))
    got = outcome(jit(fn), (a, b, x, y))
    assert same(expected, got), f"\n{source}\nargs={(a, b, x, y)}: CPython {expected}, jit {got}"
