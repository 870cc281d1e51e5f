"""The public surface: @jit forms, dispatch, dumps, the command line, errors at run time."""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import astjit
from astjit import CompileError, grad, jit


def poly(x, a=2.0, *, c=1.0):
    return a * x * x + c


def halve(a, b):
    return a // b


def swap_scale(pair, k):
    a, b = pair
    return b * k, a * k


def test_decorator_forms():
    @jit
    def f(x):
        return x + 1

    @jit()
    def g(x):
        return x * 2

    @jit(target="cpu")
    def h(x):
        return x - 1

    assert (f(1), g(2.5), h(3)) == (2, 5.0, 2)
    assert f.__name__ == "f" and f.py_func.__name__ == "f"


def test_unknown_target_is_rejected():
    with pytest.raises(ValueError, match="cpu"):
        jit(poly, target="tpu")


def test_keywords_defaults_and_numpy_scalars_bind_like_python():
    f = jit(poly)
    assert f(1.5) == poly(1.5)
    assert f(1.5, 3.0) == poly(1.5, 3.0)
    assert f(x=1.5, c=-2.0) == poly(1.5, c=-2.0)
    assert f(np.float64(0.5), np.int64(3)) == poly(0.5, 3)
    assert f(np.float32(0.5)) == poly(0.5)
    with pytest.raises(TypeError):
        f(1.5, 2.0, 3.0)


def test_signatures_are_cached_and_switch_back_and_forth():
    f = jit(poly)
    for _ in range(3):
        assert f(2.0) == 9.0
        assert f(2) == 9.0
        assert f(True) == 3.0
    assert len(f.signatures) == 3


def test_tuple_arguments_and_results():
    f = jit(swap_scale)
    assert f((1.0, 2.0), 3) == (6.0, 3.0)
    assert f((1, 2), 3) == (6, 3)


def test_int_argument_outside_int64_is_an_overflow_error():
    f = jit(halve)
    with pytest.raises(OverflowError, match="int64"):
        f(2 ** 70, 3)
    assert f(7, 2) == 3


def test_runtime_error_names_the_source_line():
    f = jit(halve)
    with pytest.raises(ZeroDivisionError) as info:
        f(1, 0)
    assert "test_api.py" in str(info.value) and "a // b" in str(info.value)


def test_math_domain_errors_match_python():
    @jit
    def root(x):
        return math.sqrt(x)

    @jit
    def grow(x):
        return math.exp(x)

    with pytest.raises(ValueError, match="math domain error"):
        root(-1.0)
    with pytest.raises(OverflowError):
        grow(1000.0)
    assert root(4.0) == 2.0


def test_float_to_int_conversion_errors_match_python():
    @jit
    def to_int(x):
        return int(x)

    with pytest.raises(ValueError):
        to_int(math.nan)
    with pytest.raises(OverflowError):
        to_int(math.inf)
    assert to_int(-2.7) == -2


def test_every_stage_is_available_as_text_and_ir_stages_as_dot():
    f = jit(poly)
    for stage in astjit.api.STAGES:
        assert f.ir(1.5, stage=stage).strip(), stage
    for stage in astjit.api.IR_STAGES:
        assert f.ir(1.5, stage=stage, format="dot").startswith("digraph"), stage
    with pytest.raises(ValueError, match="parsed"):
        f.ir(1.5, stage="bogus")
    with pytest.raises(ValueError):
        f.ir(1.5, stage="llvm", format="dot")


def test_dump_directory_gets_every_stage_in_order(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTJIT_DUMP", str(tmp_path))
    jit(poly)(2.0)
    names = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".dot"))
    stages = [n.split(".", 1)[1].split("-", 1)[1].rsplit(".", 1)[0] for n in names]
    assert stages == list(astjit.api.IR_STAGES + astjit.api.TEXT_STAGES)  # the CPU's code
    assert all(n.startswith("poly[f64,f64,f64]") for n in names)  # defaults included


def test_disable_jit_returns_the_function(monkeypatch):
    monkeypatch.setenv("ASTJIT_DISABLE_JIT", "1")
    assert jit(poly) is poly


def test_command_line_prints_a_stage(tmp_path):
    source = tmp_path / "kernel.py"
    source.write_text(textwrap.dedent("""
        def scale(x, n):
            return x * n
    """))
    out = subprocess.run([sys.executable, "-m", "astjit", "ir", f"{source}:scale",
                          "--args", "2.0, 3", "--stage", "typed"],
                         capture_output=True, text=True, check=True).stdout
    assert "scale" in out and "f64" in out and "i64" in out


def test_command_line_reports_compile_errors(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text("def f(x):\n    open(x)\n    return x\n")
    run = subprocess.run([sys.executable, "-m", "astjit", "ir", f"{source}:f", "--args", "1.0"],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "open" in run.stderr


def test_compile_errors_are_raised_at_the_first_call_not_later():
    def bad(x):
        return "text"

    f = jit(bad)
    with pytest.raises(CompileError):
        f(1.0)


def test_fast_path_survives_many_calls_without_leaking():
    import tracemalloc

    f = jit(swap_scale)
    for _ in range(1000):
        f((1.0, 2.0), 3.0)
    tracemalloc.start()
    held = []
    for _ in range(2):  # a leak grows with every window; one-off allocations do not
        for _ in range(20000):
            f((1.0, 2.0), 3.0)
        held.append(tracemalloc.get_traced_memory()[0])
    tracemalloc.stop()
    assert held[1] - held[0] < 16 * 1024, f"{held[1] - held[0]} more bytes held after 20000 calls"


def _exp_plus(x):
    return np.exp(x) + 1.0


def _gram(x):
    return x @ x.T


def _row_softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def _squares(x):
    return np.sum(x * x)


def test_threads_may_compile_at_once():
    """LLVM's one global context takes one compile at a time (api.COMPILING): four threads
    compiling four functions, plain and derived, at once crashed the process before."""
    import threading

    x = np.random.default_rng(0).random((5, 4))
    for _ in range(3):
        functions = [jit(_exp_plus), jit(_gram), jit(_row_softmax), grad(_squares)]
        results = {}
        threads = [threading.Thread(target=lambda k=k, f=f: results.__setitem__(k, f(x)))
                   for k, f in enumerate(functions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_allclose(results[0], _exp_plus(x), rtol=1e-14)
        np.testing.assert_allclose(results[1], _gram(x), rtol=1e-14)
        np.testing.assert_allclose(results[2], _row_softmax(x), rtol=1e-14)
        np.testing.assert_allclose(results[3], 2 * x, rtol=1e-14)


def _typed_twice(x, n):
    s = 0.0
    for i in range(n):
        s += np.sum(x * i)
    return s, np.exp(x) + s


def test_stages_do_not_change_when_other_signatures_compile():
    """The optimizer consumes the typed module it is given (no copy is kept), so the
    parsed module every signature is typed from must come out of each compile as it
    went in: later signatures, and the `typed` stage typed again on request, match a
    fresh function's."""
    used = jit(_typed_twice)
    used(np.ones(3), 4)
    used(np.ones((2, 2), np.float32), 2)
    used(np.ones(3), 4)
    for args in [(np.ones(3), 4), (np.ones((2, 2), np.float32), 2)]:
        for stage in ("typed", "optimized"):
            assert used.ir(*args, stage=stage) == jit(_typed_twice).ir(*args, stage=stage)


def größe(x, faktor):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * faktor
    return s, np.exp(x) * s


def skalar_größe(ä):
    t = 0.0
    for i in range(3):
        t += ä * i
    return t


def test_functions_with_non_ascii_names_compile():
    """Machine code's symbols are ASCII: the LLVM names spell other characters out."""
    x = np.arange(4.0)
    s, scaled = jit(größe)(x, 2.0)
    assert s == 12.0
    np.testing.assert_allclose(scaled, np.exp(x) * 12.0)
    assert jit(skalar_größe)(1.5) == 4.5
    assert grad(skalar_größe)(1.5) == 3.0
