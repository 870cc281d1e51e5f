"""Compiled calls release the GIL once they run long and touch no Python object
(backend/llvm/runtime/gil.py): other threads run Python meanwhile, threads calling kernels
get their own results and exceptions, and calls that touch Python keep the GIL.

What could hang runs in a child process with a timeout.
"""
import inspect
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from astjit import callback, jit

PROGRESS = textwrap.dedent("""
    import threading, time
    from astjit import jit

    LOGISTIC

    def flat(x, n):
        s = 0.0
        for i in range(n):
            s += x * i
        return s

    def stamps_during(f, x, n):
        '''Main-thread stamps taken while another thread runs f(x, n), well inside the call.'''
        span, stamps, done = [], [], threading.Event()

        def worker():
            span.append(time.perf_counter())
            f(x, n)
            span.append(time.perf_counter())
            done.set()

        t = threading.Thread(target=worker)
        t.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
        t.join()
        start, end = span
        return sum(start + 0.05 < s < end - 0.05 for s in stamps), end - start

    for fn in (logistic, flat):
        f = jit(fn)
        f(0.3, 10)
        start = time.perf_counter()
        f(0.3, 1_000_000)
        n = int(1_000_000 * 0.4 / max(time.perf_counter() - start, 1e-4))  # about 0.4 s
        print(fn.__name__, *stamps_during(f, 0.3, n), flush=True)
""")


def test_a_long_call_lets_other_threads_run_python(tmp_path):
    script = tmp_path / "progress.py"
    script.write_text(PROGRESS.replace("LOGISTIC", inspect.getsource(logistic)))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    for line in out.stdout.splitlines():
        name, stamps, took = line.split()
        if float(took) > 0.15:  # the main thread ran Python while the call was running
            assert int(stamps) > 0, line


def logistic(x, n):
    i = 0
    while i < n:
        x = 3.9 * x * (1.0 - x)
        i += 1
    return x


def ratio(a, b, n):
    i = 0
    s = 0.0
    while i < n:
        s += a / (b - i)
        i += 1
    return s


def scale_into(a, out, n):
    for k in range(n):
        for i in range(a.shape[0]):
            out[i] = a[i] * 2.0 + k
    return out


def growing(n):
    total = 0.0
    i = 0
    while i < n:
        total += np.sum(np.ones(3) * i)
        i += 1
    return total


def noted(x):
    print(x)
    return x


def with_callback(x, n):
    i = 0
    while i < n:
        x = callback(noted, x, result=float) * 0.5
        i += 1
    return x


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def add(x, y):
    return x * y + 1.0


def compiled_ir(f, *args):
    values = f.dispatcher.signature.bind(args, {})
    return f.dispatcher.specializations[f.dispatcher.signature.types_of(values)].compiled.llvm_ir


def releases(f, *args):
    f(*args)
    text = compiled_ir(f, *args)
    return "astjit.gil.release" in text or "astjit.signals.released" in text


def test_which_calls_may_release_the_gil():
    a = np.arange(6.0)
    assert releases(jit(logistic), 0.3, 5)
    assert releases(jit(scale_into), a, np.zeros(6), 2)
    assert not releases(jit(fib), 10)  # a recursion guard: one stack limit per module
    assert not releases(jit(add), 1.0, 2.0)  # no loop: no code to release or take back the GIL
    f = jit(add)
    f(1.0, 2.0)
    assert "pthread_getspecific" not in compiled_ir(f, 1.0, 2.0)


def test_calls_into_python_take_the_gil_back(capsys):
    f, g = jit(with_callback), jit(growing)
    assert releases(f, 1.0, 2) and releases(g, 3)
    for h, args in ((f, (1.0, 2)), (g, (3,))):
        text = compiled_ir(h, *args)
        assert text.count("call void @\"astjit.gil.acquire\"()") >= 1, text[:2000]
    assert f(1.0, 2) == with_callback(1.0, 2) == 0.25
    assert capsys.readouterr().out.split() == ["1.0", "0.5"] * 3


def test_threads_get_their_own_results_and_exceptions():
    f, g, h = jit(logistic), jit(ratio), jit(growing)
    f(0.3, 3), g(1.0, 2.0, 1), h(2)
    results, errors = {}, {}

    def run(k):
        try:
            results[k] = (f(0.1 + 0.01 * k, 300_000 + k), g(1.0, 1e9, 100_000 + k),
                          h(70_000 + k))
            g(1.0, float(50_000 + k), 100_000)  # divides by zero part-way
        except ZeroDivisionError as exc:
            errors[k] = exc

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for k in range(4):
        assert results[k] == (logistic(0.1 + 0.01 * k, 300_000 + k),
                              ratio(1.0, 1e9, 100_000 + k), 3.0 * (70_000 + k) * (69_999 + k) / 2)
        assert isinstance(errors[k], ZeroDivisionError)
    assert g(1.0, 1e9, 10) == ratio(1.0, 1e9, 10)  # the GIL is back: this thread goes on


@pytest.mark.parametrize("n", [10, 20_000, 2_000_000])
def test_released_calls_give_python_results(n):
    a = np.linspace(-1.0, 1.0, 7)
    assert jit(logistic)(0.25, n) == logistic(0.25, n)
    out = jit(scale_into)(a, np.zeros(7), 3)
    np.testing.assert_array_equal(out, scale_into(a, np.zeros(7), 3))
