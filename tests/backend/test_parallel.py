"""`jit(parallel=True)` and `astjit.prange` (ir/passes/parallel.py, backend/llvm/parallel.py):
results equal NumPy's, CPython's and serial jit's; errors inside parallel loops raised as a
serial loop raises them; the work runs on other threads; loops that cannot run in parallel
run serially; the options are checked.

Compiled parallel code runs in a child process (tests/support/parallel_cases.py) with a
timeout: a crash or a hang there fails a test instead of the run. The child splits loops
of a few elements into up to 4 chunks (ASTJIT_MIN_CHUNK_WORK=1, ASTJIT_NUM_THREADS=4).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from parallel_cases import prange_fill, prange_serial_recurrence

import astjit
from astjit import jit, prange

SUPPORT = Path(__file__).resolve().parents[1] / "support"


def in_child(call: str, timeout: float = 300, **env: str):
    """`parallel_cases.<call>` run in a fresh interpreter; its JSON result."""
    code = (f"import json, sys; sys.path.insert(0, {str(SUPPORT)!r}); import parallel_cases as c; "
            f"print('RESULT ' + json.dumps(c.{call}))")
    environment = {**os.environ, "ASTJIT_NUM_THREADS": "4", "ASTJIT_MIN_CHUNK_WORK": "1", **env}
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, env=environment)
    except subprocess.TimeoutExpired:
        pytest.fail(f"parallel_cases.{call} still running after {timeout} s")
    assert proc.returncode == 0, f"child exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    line = next(ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_kernels_match_numpy_python_and_serial_jit():
    assert in_child("differential(25)") == []


def test_vectorize_parallel_matches_serial_and_numpy():
    assert in_child("vectorized()") == []


def test_errors_in_parallel_loops_are_the_serial_loops_first():
    for python, parallel in in_child("errors()"):
        assert python != "no error" and parallel == python


@pytest.mark.parametrize("threads", ["1", "3"])
def test_float_reductions_are_deterministic(threads):
    repeated, repeated_prange, *serial = in_child("determinism()", ASTJIT_NUM_THREADS=threads)
    assert repeated and repeated_prange
    if threads == "1":
        assert serial == [True, True]


def test_elementwise_results_are_serial_jits_bit_for_bit():
    assert in_child("elementwise_exact()") == []


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_parallel_calls_work_on_other_threads():
    share = in_child("off_thread_cpu()", ASTJIT_NUM_THREADS="2",
                     ASTJIT_MIN_CHUNK_WORK=str(1 << 15))
    assert share >= 0.25


def test_calls_from_several_threads_at_once():
    assert in_child("concurrent_calls()", ASTJIT_NUM_THREADS="2") == [True] * 16


def test_the_pool_survives_fork():
    assert in_child("after_fork()", timeout=120) == [True] * 4


def test_a_bad_thread_count_is_refused_when_compiling():
    message = in_child("refusal()", ASTJIT_NUM_THREADS="many")
    assert "ASTJIT_NUM_THREADS must be a positive integer" in message


# ---- in this process: no parallel code runs ----------------------------------------------------

def total(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i]
    return s


def calls_python(a):
    for i in prange(a.shape[0]):
        print(a[i])
    return a


def kernel(x, y):
    return np.sum(x * y + 1.0)


def test_prange_is_range_in_python_and_under_serial_jit():
    assert isinstance(prange(3), range) and list(prange(1, 7, 2)) == [1, 3, 5]
    assert "prange" in astjit.__all__
    a = np.arange(5.0)
    assert np.array_equal(jit(prange_fill)(a, np.zeros(5)), a * 3 + np.arange(5))
    assert "ParallelLoop" not in jit(total).ir(a)


def test_what_runs_in_parallel_is_marked_in_the_ir():
    a = np.arange(5.0)
    assert "parallel=True" in jit(kernel, parallel=True).ir(a, a)
    assert "roles=('counter', 'reduce')" in jit(total, parallel=True).ir(a)
    assert "roles=('counter',)" in jit(prange_fill, parallel=True).ir(a, a)
    for serial in (prange_serial_recurrence, calls_python):  # a carried value, a call of Python
        text = jit(serial, parallel=True).ir(a)
        assert "prange=True" in text and "ParallelLoop" not in text


def test_the_parallel_option_is_checked():
    with pytest.raises(TypeError, match="parallel"):
        jit(kernel, parallel="yes")
    with pytest.raises(TypeError, match="parallel"):
        astjit.vectorize(abs, parallel=1)


def test_grad_of_a_function_with_prange_runs_it_as_range():
    x = np.linspace(0.0, 1.0, 7)
    np.testing.assert_allclose(astjit.grad(total)(x), np.ones(7))
