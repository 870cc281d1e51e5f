"""NumPy's transcendental ufuncs on scalars give NumPy's own bits (backend/llvm/ufunc_calls.py).

On a CPU where NumPy dispatches its own SIMD loops (AVX-512: np.tanh, np.sin, ...), those
differ from libm's in the last bit for some operands; compiled scalar calls run the very
loop NumPy runs. Every case compares bytes and dtype with the ufunc on the same scalar, on
any CPU. `math.*` stays libm's (CPython's).
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.ir.ops import OPS, Routine

UNARY = ("sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
         "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p")
SPECIAL = (0.0, -0.0, 0.5, -0.5, 0.7342440429753607, 1.0, -1.0, 1.5, 2.0, -2.5, 1e-8, 1e-300,
           5e-324, 20.0, -20.0, 88.5, 710.0, -745.5, 1e300, math.inf, -math.inf, math.nan)


@jit
def all_functions(x, y):
    return (np.sin(x), np.cos(x), np.tan(x), np.arcsin(x), np.arccos(x), np.arctan(x),
            np.sinh(x), np.cosh(x), np.tanh(x), np.arcsinh(x), np.arccosh(x), np.arctanh(x),
            np.exp(x), np.exp2(x), np.expm1(x), np.log(x), np.log2(x), np.log10(x),
            np.log1p(x), np.arctan2(x, y))


def numpy_functions(x, y):
    with np.errstate(all="ignore"):
        return (*(getattr(np, name)(x) for name in UNARY), np.arctan2(x, y))


def assert_numpy_bits(x, y):
    got, expected = all_functions(x, y), numpy_functions(x, y)
    for name, a, b in zip((*UNARY, "arctan2"), got, expected):
        assert type(a) is type(b), (name, x, y, a, b)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), (name, x, y, a, b)


def test_every_function_with_a_numpy_loop_is_tested():
    table = {op.ufunc for op in OPS.values() if op.llvm_numpy.get("f") == Routine("ufunc_loop")}
    assert table == {*UNARY, "arctan2"}


@pytest.mark.parametrize("kind", [float, np.float64, np.float32])
def test_special_values_give_numpy_bits(kind):
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        values = [kind(x) for x in SPECIAL]
    for x in values:
        for y in (kind(1.0), kind(-0.0), kind(math.inf), x):
            assert_numpy_bits(x, y)


@settings(max_examples=150, deadline=None)
@given(st.floats(), st.floats(-1e3, 1e3))
def test_float64_gives_numpy_bits(x, y):
    assert_numpy_bits(x, y)
    assert_numpy_bits(np.float64(x), np.float64(y))


@settings(max_examples=150, deadline=None)
@given(st.floats(width=32), st.floats(-1e3, 1e3, width=32))
def test_float32_gives_numpy_bits(x, y):
    assert_numpy_bits(np.float32(x), np.float32(y))


def fuzz_3884(p0):
    """Fuzz program 3884 of seed 20261206, shrunk: np.tanh's last bit, amplified by the loop."""
    p0 += math.log1p(2.5)
    v1 = p0
    v1 = p0 * v1 % (p0 + 1.0)
    v1 -= float(np.sin(0.1))
    p0 *= float(np.tanh(v1)) * math.atan2(p0, 1.0)
    for i7 in range(int(-1.0) % 10007 % 12):
        g8 = 0
        while g8 < 12:
            g8 += 1
            p0 -= math.exp(p0)
            p0 *= math.cos(v1 * g8)
            v1 *= math.exp(v1) % (abs(math.cos(p0)) + 1.0)
    return (1.0 - (v1 - p0)) * (-3.75 - p0)


def test_fuzz_3884_matches_cpython_exactly():
    assert jit(fuzz_3884)(4.723453) == fuzz_3884(4.723453)


MODULE = '''
import numpy as np
from astjit import jit

@jit(cache=True)
def curve(x, y, z):
    return float(np.tanh(x)) + float(np.arctan2(x, y)), np.sin(z)
'''

CHILD = '''
import json, sys
import numpy as np
sys.path.insert(0, ".")
import kernels
xs = np.linspace(-3.0, 3.0, 257).tolist()
got = [kernels.curve(x, 0.7, np.float32(x)) for x in xs]
loaded = all(s.optimized is None for s in kernels.curve.signatures.values())
print("RESULT " + json.dumps({"bits": [[a.hex(), float(b).hex()] for a, b in got],
                              "loaded": loaded}))
'''


def test_a_cached_entry_calls_numpys_loops_in_a_new_process(tmp_path):
    (tmp_path / "kernels.py").write_text(MODULE)
    environment = dict(os.environ, ASTJIT_CACHE_DIR=str(tmp_path / "cache"))
    environment.pop("ASTJIT_DISABLE_JIT", None)

    def child():
        proc = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.rpartition("RESULT ")[2])

    cold, warm = child(), child()
    assert not cold["loaded"] and warm["loaded"]
    expected = [[(float(np.tanh(x)) + float(np.arctan2(x, 0.7))).hex(),
                 float(np.sin(np.float32(x))).hex()] for x in np.linspace(-3.0, 3.0, 257).tolist()]
    assert cold["bits"] == expected and warm["bits"] == expected
