"""np.nanmax / np.nanmin as the vectorized reduction of max and min (reduction_nests.Register):
a NaN element becomes the start value (maxnum(x, -inf)), a flag records whether any element
was not NaN, and the result is NaN where none was. Checked against NumPy on NaN patterns
(none, some, all, beside infinities), both float types, whole arrays, axes and a fused
operand; and the loop is vectorized without an exit at the first NaN (a whole array's in
the runtime's function, whole_reductions.py)."""
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.backend.llvm.jit.engine import runtime_llvm_ir


def nanmax(x):
    return np.nanmax(x)


def nanmin(x):
    return np.nanmin(x)


def nanmax_fused(x):
    return np.nanmax(x * 2.0 - 1.0)


def nanmax_rows(x):
    return np.nanmax(x, axis=1)


def nanmin_columns(x):
    return np.nanmin(x, axis=0)


JITTED = {fn: jit(fn) for fn in (nanmax, nanmin, nanmax_fused, nanmax_rows, nanmin_columns)}
"""One compiled function each for all examples: each dtype compiles once."""
ELEMENTS = st.sampled_from([np.nan, np.nan, -np.inf, np.inf, 0.0, -0.0, 1.5, -2.5, 3.0, 1e30])


def same(expected, got):
    """Equal, NaN where NumPy's is; a zero's sign may differ (docs: semantics)."""
    return np.asarray(expected).dtype == np.asarray(got).dtype \
        and np.array_equal(expected, got, equal_nan=True)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.lists(ELEMENTS, min_size=1, max_size=40), st.sampled_from([np.float64, np.float32]))
def test_whole_array_reductions_skip_nan_as_numpy(values, dtype):
    x = np.array(values, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's All-NaN slice warning
        for fn in (nanmax, nanmin, nanmax_fused):
            assert same(fn(x), JITTED[fn](x)), (fn.__name__, x)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(st.integers(1, 6), st.integers(1, 20), st.data())
def test_axis_reductions_skip_nan_as_numpy(rows, columns, data):
    x = np.array(data.draw(st.lists(ELEMENTS, min_size=rows * columns,
                                    max_size=rows * columns))).reshape(rows, columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for fn in (nanmax_rows, nanmin_columns):
            assert same(fn(x), JITTED[fn](x)), (fn.__name__, x)


@pytest.mark.parametrize("fn", [nanmax, nanmin, nanmax_fused])
def test_the_loop_is_vectorized_without_a_nan_exit(fn):
    """maxnum as the combine vectorized to a loop that left for a scalar one at the first
    NaN (a `fcmp uno` of the loaded vector in the vector body). A whole array's reduction
    is the runtime's `astjit.reduce.<kind>.f64` (whole_reductions.py), vectorized by LLVM,
    a fused one the kernel's own loop, vectorized by astjit (widen.py)."""
    text = jit(fn).ir(np.ones(64), stage="llvm-opt")
    if fn is not nanmax_fused:
        runtime = runtime_llvm_ir()
        start = runtime.index(f"@astjit.reduce.{fn.__name__}.f64(")
        text = runtime[start:runtime.index("\n}\n", start)] + "\n\n"
    (body,) = re.findall(r"\n(?:vector\.body|[\w.]+\.widened):.*?\n\n", text, re.S)  # LLVM's, astjit's
    assert "x double>" in body and "fcmp uno" not in body
