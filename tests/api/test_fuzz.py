"""The differential fuzzer (`python -m astjit.fuzz`, docs/fuzzing.md): a short campaign of a
fixed seed runs clean; its parts catch what they are for (a wrong answer, a crashed worker)
and a failure shrinks."""
import math
import operator
import re
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from astjit.fuzz.generate import program
from astjit.fuzz.judge import judge, load
from astjit.fuzz.nan_signs import nan_sign_reaches
from astjit.fuzz.pool import Worker
from astjit.fuzz.shrink import shrink

WRONG = '''
import math

CALLS = []

def f(x):
    y = x * 2.0
    z = y + 1.0
    return z - 1.0

ENTRY = "f"
GRAD_ARGNUMS = ()
TOLERANT = False
ZERO_SIGN_FREE = False

def make_args():
    CALLS.append(None)
    return (float(len(CALLS)),)     # CPython's call gets 1.0, the compiled one 2.0
'''

WRONG_GRADIENT = '''
import math

from astjit import custom_vjp


@custom_vjp
def cube(x):
    return x * x * x


@cube.defvjp
def cube_rule(x, out, g):
    return (2.0 * x * x * g,)       # 3 x**2 is right


def f(x):
    return cube(x) + 1.0

ENTRY = "f"
GRAD_ARGNUMS = (0,)
TOLERANT = False
ZERO_SIGN_FREE = False

def make_args():
    return (1.2345,)
'''

CRASHING = WRONG.replace("    CALLS.append(None)", "    import ctypes; ctypes.string_at(0)")


def test_a_short_campaign_runs_clean(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "astjit.fuzz", "--budget", "6", "--seed", "1", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=240)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    programs, mismatches, crashes = map(int, re.search(r"(\d+) programs, (\d+) mismatches, (\d+) crashes",
                                                       output).groups())
    assert programs > 0 and mismatches == 0 and crashes == 0, output[-4000:]
    assert not list(tmp_path.iterdir())


def test_programs_are_reproducible_and_valid_python():
    texts = [program(3, i).source for i in range(40)]
    assert texts == [program(3, i).source for i in range(40)]
    assert len(set(texts)) == 40
    for text in texts:
        compile(text, "<program>", "exec")


def test_the_judge_reports_a_wrong_answer(tmp_path):
    (tmp_path / "fz_wrong.py").write_text(WRONG)
    result = judge(load(tmp_path / "fz_wrong.py"))
    assert result["verdict"] == "mismatch", result
    assert result["cpython"] == "returned 2.0" and result["compiled"] == "returned 4.0"


def test_the_judge_compares_gradients_with_finite_differences(tmp_path):
    (tmp_path / "fz_gradient.py").write_text(WRONG_GRADIENT)
    result = judge(load(tmp_path / "fz_gradient.py"))
    assert result["verdict"] == "mismatch", result
    assert result["grad"].startswith("mismatch: d/d(argument 0) is 3.04") and "4.57" in result["grad"], result
    (tmp_path / "fz_right.py").write_text(WRONG_GRADIENT.replace("2.0 * x * x * g", "3.0 * x * x * g"))
    assert judge(load(tmp_path / "fz_right.py"))["grad"] == "compared 1"


ABSORBED = WRONG_GRADIENT.replace("    return cube(x) + 1.0",
                                  "    return ((x + 1e299) % 2.0) * 3.0 + cube(1.5)")


def test_a_step_absorbed_in_floats_is_checked_against_forward_mode(tmp_path):
    # x + 1e299 is flat in floats: finite differences give 0, AD and jacfwd 3 (program 1711 of seed 20261202)
    (tmp_path / "fz_absorbed.py").write_text(ABSORBED)
    result = judge(load(tmp_path / "fz_absorbed.py"))
    assert result["verdict"] == "ok", result
    assert result["grad"] == "flat in floats: 1 derivatives agree with jacfwd", result


STEEP_FLOOR = WRONG_GRADIENT.replace("    return cube(x) + 1.0",
                                     "    return (x * 1e10 + cube(1.5)) // 1.0")
HUGE_FLOOR = WRONG_GRADIENT.replace("    return cube(x) + 1.0",
                                    "    return (x * 1e20 + cube(1.5)) // 3.0")


STEEPER_FLOOR = WRONG_GRADIENT.replace("    return cube(x) + 1.0",
                                       "    return (x * 1e14 + cube(1.5)) // 1.0")


@pytest.mark.parametrize("program", [STEEP_FLOOR, STEEPER_FLOOR], ids=["1e10", "1e14"])
def test_a_floor_of_a_steep_function_is_checked_against_forward_mode(tmp_path, program):
    # (x * 1e10) // 1.0 is constant a few ulps of x either side: derivative 0 (AD, jacfwd),
    # where differences see a slope of 1e10 (program 162 of seed 2, shrunk); x * 1e14 moves
    # 0.02 per ulp of x: constant 4 ulps either side, a step within 64 (program 361 of seed
    # 41303, a floor of a loop's steep growth)
    (tmp_path / "fz_steep.py").write_text(program)
    result = judge(load(tmp_path / "fz_steep.py"))
    assert result["verdict"] == "ok", result
    assert result["grad"] == "flat in floats: 1 derivatives agree with jacfwd", result


def test_a_floor_past_two_to_the_52_is_not_compared(tmp_path):
    # every float there is an integer: a floor is its argument in floats (program 162 of seed 2)
    (tmp_path / "fz_huge.py").write_text(HUGE_FLOOR)
    result = judge(load(tmp_path / "fz_huge.py"))
    assert result["verdict"] == "ok", result
    assert result["grad"].startswith("skipped: not smooth here"), result


SAWTOOTH = '''
import math


def f(p1):
    x = abs(p1) ** p1                # about 5e5, its slope 1.4e6
    return (-(x % (abs(math.atan(x)) + 1.0))) + math.atan2(x, 2.0)

ENTRY = "f"
GRAD_ARGNUMS = (0,)
TOLERANT = False
ZERO_SIGN_FREE = False


def make_args():
    return (6.81724,)
'''


def test_a_sawtooth_of_a_steep_function_is_differenced_at_finer_steps(tmp_path):
    """Both default steps span many teeth of `x % m` and agree on their average slope (fuzz
    seed 20261205, program 3526: 1.0e5 against AD's right -1.4e6); finer steps see the tooth."""
    (tmp_path / "fz_saw.py").write_text(SAWTOOTH)
    result = judge(load(tmp_path / "fz_saw.py"))
    assert result["verdict"] == "ok" and result["grad"] == "compared 1", result


NEAR_AN_EDGE = WRONG_GRADIENT.replace("    return cube(x) + 1.0",
                                      "    return math.fmod(math.sin(1), -6 / (7.0868 ** x + 1.0))") \
                             .replace("(1.2345,)", "(9.29259,)")


def test_a_sawtooth_near_an_edge_is_differenced_finer_still(tmp_path):
    """Teeth 5e-8 wide in x, the point 8e-9 from an edge: a thousandth of the steps (9e-9)
    still crosses it; a ten-thousandth does not (fuzz seed 41311, program 1247)."""
    (tmp_path / "fz_edge.py").write_text(NEAR_AN_EDGE)
    result = judge(load(tmp_path / "fz_edge.py"))
    assert result["verdict"] == "ok" and result["grad"] == "compared 1", result


NOISE = '''
import numpy as np
import pytest


def f(p0, p1):
    v1 = float(p0[0] * (p1 * p1 / (p1 * p1)))   # 1.0; its derivative 0 in the reals
    return 1e300 % v1                           # -floor(1e300 / v1) times that derivative

ENTRY = "f"
GRAD_ARGNUMS = (1,)
TOLERANT = True
ZERO_SIGN_FREE = False


def make_args():
    return (np.array([1.0, 5.20625]), 6.99948)
'''


def test_a_derivative_of_rounding_noise_is_not_a_mismatch(tmp_path):
    """Flat in floats, reverse and forward mode each give a rounding error times 1e300 (fuzz
    seed 41205, program 6826, shrunk: 3.3e283 against jacfwd's 5.6e283); reverse mode's jumps
    between adjacent floats of p1, so neither is a derivative to compare."""
    (tmp_path / "fz_noise.py").write_text(NOISE)
    result = judge(load(tmp_path / "fz_noise.py"))
    assert result["verdict"] == "ok", result
    assert result["grad"].startswith("skipped: the derivative is rounding noise"), result


CANCELLING = WRONG.replace("import math", "import numpy as np").replace(
    """def f(x):
    y = x * 2.0
    z = y + 1.0
    return z - 1.0""",
    """def f(p1):
    v3 = np.tanh(np.sum(p1[:, None] - p1, axis=0))  # tanh of -11.2 and 11.9 (among others)
    return float(np.median(v3))                     # their mean: about 1e-10""").replace(
    "TOLERANT = False\nZERO_SIGN_FREE = False", "TOLERANT = True\nZERO_SIGN_FREE = True").replace(
    "(float(len(CALLS)),)     # CPython's call gets 1.0, the compiled one 2.0",
    "(np.array([1.0, -4.785, -6.69703, 3.281 + SHIFT * (len(CALLS) == 2)]),)  # the compiled: + SHIFT")


def test_a_tolerant_result_may_differ_by_what_its_rounding_can_make_of_it(tmp_path):
    """NumPy's tanh(11.93897) is an ulp below the rounded value, astjit's (libmvec's) is not,
    and the median's cancellation makes that ulp 4e-7 of the result (fuzz seed 41305,
    program 6406): within the spread of references whose tanh and sums move within their
    rounding bounds. A compiled result moved by 1e-9 of an argument is beyond it."""
    (tmp_path / "fz_cancel.py").write_text(CANCELLING.replace("SHIFT", "0.0"))
    result = judge(load(tmp_path / "fz_cancel.py"))
    assert result["verdict"] == "ok" and result["detail"].startswith("ill-conditioned"), result
    (tmp_path / "fz_cancel_wrong.py").write_text(CANCELLING.replace("SHIFT", "1e-9"))
    assert judge(load(tmp_path / "fz_cancel_wrong.py"))["verdict"] == "mismatch"


OVERFLOW_ON_THE_WAY = CANCELLING.replace(
    """def f(p1):
    v3 = np.tanh(np.sum(p1[:, None] - p1, axis=0))  # tanh of -11.2 and 11.9 (among others)
    return float(np.median(v3))                     # their mean: about 1e-10""",
    """def f(p1):
    if np.prod(p1) < 1e300:   # inf left to right (NumPy's), about 0.9 in pairs
        return 1.0
    return 1e300 ** 3         # OverflowError""").replace(
    "[1.0, -4.785, -6.69703, 3.281 + SHIFT * (len(CALLS) == 2)]",
    "[4.58e154, 7.46e154, 1.68e77, 1.68e77, *[SMALL] * 4]")


def test_an_outcome_a_products_order_decides_is_ill_conditioned(tmp_path):
    """NumPy multiplies left to right and overflows; astjit's vector accumulators multiply in
    another order and do not (fuzz seed 41311, program 2698): a reference whose products
    are multiplied in pairs ends as the compiled run does. Where none does, it is a mismatch."""
    (tmp_path / "fz_order.py").write_text(OVERFLOW_ON_THE_WAY.replace("SMALL", "2.25e-78"))
    result = judge(load(tmp_path / "fz_order.py"))
    assert result["verdict"] == "ok" and result["detail"].startswith("ill-conditioned"), result
    # the compiled run's factors as above, CPython's and the references' 1.0: inf in any order
    small = "(2.25e-78 if len(CALLS) == 2 else 1.0)"
    (tmp_path / "fz_order_far.py").write_text(OVERFLOW_ON_THE_WAY.replace("SMALL", small))
    result = judge(load(tmp_path / "fz_order_far.py"))
    assert result["verdict"] == "mismatch" and result["detail"] == "exceptions differ", result


TOOTH_EDGE = WRONG_GRADIENT.replace("    return cube(x) + 1.0", "    return math.fmod(x, x ** 2)") \
                           .replace("(1.2345,)", "(1e-08,)")


def test_a_jump_within_a_few_ulps_is_not_smooth(tmp_path):
    """fmod(x, x**2) at 1e-8: slope -1 on teeth 1e-16 wide, the point half an ulp from an
    edge (fuzz seed 41305, program 8005): differences of any step span jumps."""
    (tmp_path / "fz_tooth.py").write_text(TOOTH_EDGE)
    result = judge(load(tmp_path / "fz_tooth.py"))
    assert result["verdict"] == "ok", result
    assert result["grad"] == "skipped: not smooth here (a jump within a few ulps)", result


TEETH = WRONG_GRADIENT.replace("    return cube(x) + 1.0",
                               "    return x % math.atan2(x, 1e300 / (abs(x) + 1.0))") \
                      .replace("(1.2345,)", "(2.595989,)")
STEEPLY_WRONG = WRONG_GRADIENT.replace("2.0 * x * x * g", "3e4 * x * x * g")  # 1e4 x 3 x**2


def test_a_sawtooth_with_teeth_below_an_ulp_is_not_smooth_and_a_steep_wrong_slope_is_caught(tmp_path):
    """x % atan2(x, 1e300 / (x + 1)) has slope -0.72 on teeth 1e-299 wide, its values below
    1e-299 (fuzz seed 41309, program 8479): no difference of floats sees a tooth. A smooth
    function given a slope ten thousand times its own also moves less than that slope says,
    but as a slope does: still a mismatch."""
    (tmp_path / "fz_teeth.py").write_text(TEETH)
    result = judge(load(tmp_path / "fz_teeth.py"))
    assert result["verdict"] == "ok", result
    assert result["grad"] == "skipped: not smooth here (teeth narrower than an ulp)", result
    (tmp_path / "fz_steeply_wrong.py").write_text(STEEPLY_WRONG)
    result = judge(load(tmp_path / "fz_steeply_wrong.py"))
    assert result["grad"].startswith("mismatch"), result


SUBTOOTH = '''
from astjit import custom_vjp


@custom_vjp
def scaled(x):
    return 2.5 * x


@scaled.defvjp
def scaled_rule(x, out, g):
    return (SLOPE * g,)


def f(x):
    q = scaled(x)
    return q % (q * q) - 8.0

ENTRY = "f"
GRAD_ARGNUMS = (0,)
TOLERANT = False
ZERO_SIGN_FREE = False

def make_args():
    return (1e-08,)
'''


@pytest.mark.parametrize(("slope", "verdict"), [
    (2.5, "flat in floats: 1 derivatives agree with jacfwd"),
    (2.0, "mismatch: d/d(argument 0) is -2.0, jacfwd (flat in floats at the finest steps) -2.5"),
])
def test_teeth_below_the_values_rounding_are_compared_with_forward_mode(tmp_path, slope, verdict):
    """(2.5 x) % (2.5 x) ** 2 - 8 at 1e-8 has slope -2.5 on teeth 2.5e-16 wide and 6e-16 high,
    below an ulp of 8 (fuzz seed 41332, program 4304): every step the differences take spans
    thousands of teeth, and at the finest the function moves by its rounding alone, where
    the slope would move it thousands of ulps. Forward mode is the reference there (the
    custom rule's slope is reverse mode's alone): a wrong one is still a mismatch."""
    (tmp_path / "fz_subtooth.py").write_text(SUBTOOTH.replace("SLOPE", repr(slope)))
    result = judge(load(tmp_path / "fz_subtooth.py"))
    assert result["grad"] == verdict, result


def test_a_crashed_worker_is_a_crash_and_the_next_program_gets_a_fresh_one(tmp_path):
    (tmp_path / "fz_crash.py").write_text(CRASHING)
    (tmp_path / "fz_fine.py").write_text(WRONG.replace("len(CALLS)", "1"))
    worker = Worker()
    try:
        crashed = worker.judge(tmp_path / "fz_crash.py", "fz_crash", timeout=120)
        fine = worker.judge(tmp_path / "fz_fine.py", "fz_fine", timeout=120)
    finally:
        worker.close()
    assert crashed["verdict"] == "crash" and "exit status -11" in crashed["detail"], crashed
    assert fine["verdict"] == "ok", fine


def test_a_hang_is_cpu_time_not_waiting(tmp_path):
    """A worker spinning past the timeout's CPU seconds is a hang; one that only waits
    (as on a loaded machine) for longer than the timeout is not."""
    fine = WRONG.replace("len(CALLS)", "1")
    (tmp_path / "fz_start.py").write_text(fine)
    (tmp_path / "fz_wait.py").write_text("import time\ntime.sleep(4.0)\n" + fine)
    (tmp_path / "fz_spin.py").write_text("while True:\n    pass\n" + fine)
    worker = Worker()
    try:  # the first program pays for the worker's start-up (importing astjit, compiling)
        assert worker.judge(tmp_path / "fz_start.py", "fz_start", timeout=120)["verdict"] == "ok"
        waited = worker.judge(tmp_path / "fz_wait.py", "fz_wait", timeout=2.0)
        spun = worker.judge(tmp_path / "fz_spin.py", "fz_spin", timeout=2.0)
    finally:
        worker.close()
    assert waited["verdict"] == "ok", waited
    assert spun["verdict"] == "crash" and "no verdict within the timeout" in spun["detail"], spun


def test_shrinking_keeps_what_still_fails():
    source = textwrap.dedent('''
        def h0(p0):
            return p0 + 1.0

        def f(p0, p1):
            v1 = h0(p0) * 3.0
            if p1 > 2:
                v2 = v1 - p0
                v1 = math.sqrt(v2 + 7.0)
            for i3 in range(p1):
                v1 += 1.0
            return (v1 * 2.0 + p0) * p0

        def make_args():
            return (1.0, 3)
        ''')
    smallest = shrink(source, lambda text: "math.sqrt" in text, seconds=20)
    assert "math.sqrt" in smallest and "h0" not in smallest and "for " not in smallest
    assert "def make_args():\n    return (1.0, 3)" in smallest



NAN_FOLDED = WRONG.replace("import math", "import math\nimport numpy as np").replace(
    """def f(x):
    y = x * 2.0
    z = y + 1.0
    return z - 1.0""", """def f(x):
    return math.copysign(1.0, -np.log(x) / 5)   # a NaN; LLVM computes x / -5""").replace(
    "return (float(len(CALLS)),)     # CPython's call gets 1.0, the compiled one 2.0",
    "return (-1.2097,)")


def test_the_sign_of_a_nan_is_read_either_way(tmp_path):
    """IEEE 754 leaves the sign of a NaN an operation makes to the implementation, and LLVM
    computes (-x) / 5 as x / -5, which keeps the other sign (fuzz seed 41316, program 4680):
    an outcome that a reference reading NaN signs otherwise reaches is not a mismatch."""
    (tmp_path / "fz_nan.py").write_text(NAN_FOLDED)
    result = judge(load(tmp_path / "fz_nan.py"))
    assert result["verdict"] == "ok" and result["detail"] in ("", "NaN sign; result: -1.0 vs 1.0, "
                                                              "as for a reference reading NaN signs "
                                                              "otherwise"), result


def test_only_an_outcome_a_nans_sign_decides_is_allowed():
    program = types.SimpleNamespace(math=math, np=np)
    signs = lambda: (program.math.copysign(2.0, math.nan), program.np.signbit(-math.nan))  # noqa: E731
    same = operator.eq
    assert nan_sign_reaches(program, signs, ("ok", (-2.0, False)), same)   # both read flipped
    assert nan_sign_reaches(program, signs, ("ok", (-2.0, True)), same)    # both negative
    assert not nan_sign_reaches(program, signs, ("ok", (2.5, False)), same)
    assert not nan_sign_reaches(program, signs, ("raise", ValueError()), same)
    assert program.math is math and program.np is np
