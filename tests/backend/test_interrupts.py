"""Ctrl-C reaches compiled loops (backend/llvm/interrupts.py): SIGINT during a long loop
raises KeyboardInterrupt within a fraction of a second, and the loops' results are unchanged.

The loops run in a child process, which sends itself SIGINT from a `kill` process. Flat
counted loops too, an outer counted loop whose iterations grow ever longer, and a
loop running without the GIL (runtime/gil.py) while another thread runs Python: its check
takes the GIL back to run the handler.
"""
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from astjit import jit

CHILD = textwrap.dedent("""
    import faulthandler, os, signal, subprocess, sys, threading, time
    import numpy as np
    from astjit import jit

    # SIGPROF ends a child whose loops ignore SIGINT, its threads' tracebacks on stderr first
    # (faulthandler, then the signal's default action): after 120 s of its own CPU time, not
    # of the wall clock (a loaded CI host kept a compiling child waiting > 120 s)
    faulthandler.register(signal.SIGPROF, all_threads=True, chain=True)
    signal.setitimer(signal.ITIMER_PROF, 120)
    # Python installs its KeyboardInterrupt handler only where SIGINT was not ignored when
    # it started, and a command run with `&` by a shell without job control (a CI script's
    # background job) starts with SIGINT ignored: the loops would then run on
    signal.signal(signal.SIGINT, signal.default_int_handler)

    @jit
    def decay(x, rate):  # one loop, its trip count known to nobody
        n = 0
        while x > 1e-300:
            x = x * rate
            n += 1
        return n

    @jit
    def nested(n):
        s = 0
        for i in range(n):
            for j in range(1000):
                s += (i ^ j) & 7
        return s

    @jit
    def making_arrays(x, n):
        for i in range(n):
            x = x * 0.5 + 1.0
        return x

    @jit
    def logistic(x, n):  # a flat counted loop, as a while
        i = 0
        while i < n:
            x = 3.9 * x * (1.0 - x)
            i += 1
        return x

    @jit
    def flat(x, n):  # a flat counted loop LLVM vectorizes
        s = 0.0
        for i in range(n):
            s += x * i
        return s

    @jit
    def growing(n):  # an outer counted loop, its iterations ever longer
        total = 0
        for i in range(n):
            j = 0
            while j < i * i:
                j += 1 + (j & 1)
            total += j
        return total

    @jit
    def fib(n):  # recursion: each call of it in `calling` stays a call
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    @jit
    def calling(n):  # the loop's counter does not see the calls' work
        s = 0
        for i in range(n):
            s += fib(22)
        return s

    def busy(stop):  # Python holding the GIL whenever it can
        while not stop.is_set():
            pass

    def interrupted(call):  # timed from before the signal's sleep starts: at least 0.3 s
        start = time.perf_counter()
        subprocess.Popen(["sh", "-c", f"sleep 0.3; kill -INT {os.getpid()}"])
        try:
            call()
        except KeyboardInterrupt:
            return time.perf_counter() - start
        raise AssertionError("not interrupted")

    assert decay(2.0, 0.5) == 998 and nested(3) == 10500
    assert np.allclose(making_arrays(np.zeros(4), 60), 2.0)
    print(interrupted(lambda: decay(1e300, 0.9999999999)), flush=True)
    print(interrupted(lambda: making_arrays(np.zeros(4), 10**15)), flush=True)
    assert logistic(0.3, 100) == logistic.py_func(0.3, 100) and flat(0.5, 999) == flat.py_func(0.5, 999)
    print(interrupted(lambda: flat(0.5, 10**15)), flush=True)
    assert growing(50) == growing.py_func(50)
    print(interrupted(lambda: growing(10**9)), flush=True)
    assert calling(2) == 2 * fib.py_func(22)
    print(interrupted(lambda: calling(10**12)), flush=True)
    stop = threading.Event()
    threading.Thread(target=busy, args=(stop,)).start()
    print(interrupted(lambda: logistic(0.3, 10**13)), flush=True)
    stop.set()
    print("ready", flush=True)
    nested(10**12)
""")


def test_sigint_interrupts_compiled_loops(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        lines = [child.stdout.readline() for _ in range(7)]
        if lines[6] != "ready\n":  # the child ended early: wait for its exit status and stderr
            child.wait(timeout=30)
            raise AssertionError((lines, child.returncode, child.stderr.read()))
        for line in lines[:6]:
            assert 0.25 < float(line) < 30.0, lines  # uninterrupted, each loop runs for days
        time.sleep(0.3)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=10)
    finally:
        child.kill()
    assert child.returncode != 0
    assert stderr.rstrip().endswith("KeyboardInterrupt"), stderr
    assert "nested(10**12)" in stderr


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def calling(n):
    s = 0
    for i in range(n):
        s += fib(22)
    return s


def test_a_loop_weighs_the_calls_it_makes():
    """A call's work is not counted by the loop's counter: each weighs `CALL_WORK` units, so
    the loop checks every thousand or so calls, not every 2^20 (the child above interrupts
    `calling` within a second; at one unit a call, after tens of seconds)."""
    from astjit.backend.llvm import interrupts

    f = jit(calling)
    assert f(2) == 2 * fib(22)
    (spec,) = f.dispatcher.specializations.values()
    (loop,) = [n for g in spec.optimized.graphs.values() for n in g.walk() if n.op == "while"]
    assert any(n.op == "call" for region in loop.regions for n in region.walk())
    assert interrupts.weight(loop) >= interrupts.CALL_WORK


@jit
def checked_loops(n):
    total = 0
    for i in range(n):
        k = i
        while k > 1:
            k = k // 2
            total += 1
    return total


def test_loops_that_check_give_their_results():
    assert checked_loops(100_000) == sum(max(i, 1).bit_length() - 1 for i in range(100_000))
    x = np.arange(5.0)
    assert checked_loops.py_func(1000) == checked_loops(1000)
    assert x.sum() == 10.0


def counted_up(n, step, stop_at):
    s = 0
    i = 3
    while i < n:
        if i == stop_at:
            break
        s += i * 3 ^ (i >> 2)
        i += step
    return s, i


def counted_down(n, step):
    s = 0
    for i in range(n, -5, -step):
        s += i & 1023
    return s


CHUNK = 1 << 20  # interrupts.LONG_TRIP: a counted loop longer than this runs in chunks


@pytest.mark.parametrize("n", [CHUNK - 1, CHUNK + 3, 2 * CHUNK + 4, 3 * CHUNK + 7])
@pytest.mark.parametrize("step", [1, 3])
def test_a_long_counted_loop_runs_in_chunks_to_its_result(n, step):
    """The long version of a flat counted loop: chunks of 2^20 iterations, ended by the
    counter reaching the loop's bound, a chunk's end or a break, give CPython's results."""
    up, down = jit(counted_up), jit(counted_down)
    for stop_at in (-1, CHUNK + 6, n - 1):
        assert up(n, step, stop_at) == counted_up(n, step, stop_at)
    assert down(n, step) == counted_down(n, step)



def inverse_squares(n):
    s = 0.0
    for k in range(1, n):
        s += 1.0 / (k * k)
    return s


def inverse_squares_until(n, stop_at):
    s = 0.0
    for k in range(1, n):
        if k == stop_at:
            break
        s += 1.0 / (k * k)
    return s


def test_a_chunked_loop_counting_from_one_vectorizes_to_its_result():
    """Counting up from 1 to under 2^31, the chunks' body is told its counter's range
    (interrupts.LongTrip.assume_small): LLVM drops `k * k`'s ZeroDivisionError check, which
    only 2^32 | k could fail, and vectorizes the chunks (which also run a short count, as
    one chunk). A chunk's loop runs to the nearer of the chunk's end and `n`: one compare
    (interrupts.LongTrip.limit)."""
    f, until = jit(inverse_squares), jit(inverse_squares_until)
    assert f(CHUNK + 5) == inverse_squares(CHUNK + 5) and f(3) == inverse_squares(3)
    assert "fdiv <" in f.ir(CHUNK + 5, stage="llvm-opt")  # vector divisions
    assert "llvm.smin.i64" in f.ir(CHUNK + 5, stage="llvm")  # a chunk stops at min(n, end)
    # the same sums, in the same order, with a break taken or not
    assert until(CHUNK + 5, -1) == f(CHUNK + 5) and until(CHUNK + 5, CHUNK + 2) == f(CHUNK + 2)
    assert until(9, 4) == inverse_squares_until(9, 4)


def steps_to_one(limit):  # collatz's shape: an outer counted loop, an inner while
    total = 0
    for start in range(1, limit):
        n = start
        while n != 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            total += 1
    return total


def down_with_break(n, stop_at):
    total = 0
    i = n
    for i in range(n, -7, -3):
        if i == stop_at:
            break
        k = i
        while k > 0:
            k = k // 3
            total += k + i
    return total, i


def up_to_and_over(n, step):
    total = 0
    i = 2
    while i <= n:
        j = 0
        while j < i % 17:
            j += 1
        total += j * n  # the bound in the body too
        i += step
    return total, i


def test_an_outer_counted_loop_with_loops_in_it_gives_its_result():
    """An outermost counted loop with loops in it, checked at its back-edge: every trip
    count, break, direction and `<=` bound gives CPython's results."""
    f = jit(steps_to_one)
    for limit in (-3, 0, 1, 2, 3, 17, 1000):
        assert f(limit) == steps_to_one(limit)
    down, up = jit(down_with_break), jit(up_to_and_over)
    for n in (-9, 0, 5, 100, 70_001):
        for stop_at in (-100, 4, 60_000):
            assert down(n, stop_at) == down_with_break(n, stop_at)
        for step in (1, 3, 7):
            assert up(n, step) == up_to_and_over(n, step)
