"""Compiled recursion too deep for the stack raises RecursionError, as CPython does,
located at the (first) recursive call; the process stays usable; recursion that fits still
runs far deeper than CPython's frame limit (backend/llvm/runtime/stack.py)."""
import threading

import numpy as np
import pytest

from astjit import grad, jit, prange

DEEP = 10**7


def count(n):
    if n == 0:
        return 0
    return count(n - 1) + 1


def halve(n, x):
    """Not a tail call: the result is worked on after the call returns."""
    if n <= 0:
        return x
    return 0.5 * halve(n - 1, x) + 1.0


def climb(n):
    """Its base case is never reached from n >= 0."""
    if n < 0:
        return 0
    return climb(n + 1) + 1


def forever(n):
    """No base case at all: it never returns (typed as if it did, an int)."""
    return forever(n + 1) + 1


def halving(x):
    return halving(x * 0.5) + 0.25


def ping(n):
    return pong(n) + 1


def pong(n):
    return ping(n) * 2


def even(n):
    if n == 0:
        return True
    return odd(n - 1)


def odd(n):
    if n == 0:
        return False
    return even(n - 1)


def scaled(n, x):
    if n == 0:
        return x
    return scaled(n - 1, x) + 2.0 * x


def grows(n, x):
    """Makes an array at every level: the unwinding releases them."""
    if n == 0:
        return x
    return grows(n - 1, x + 1.0) * 2.0


def tree_sum(n):
    """Two recursive calls on two lines: the error is located at the first."""
    if n <= 0:
        return 1
    left = tree_sum(n - 1)
    right = tree_sum(n - 2)
    return left + right


def counts_in_parallel(a):
    """Recursion inside a parallel loop's chunks: each thread's frames, checked there."""
    out = np.zeros(a.size)
    for i in prange(a.size):
        out[i] = count(a[i])
    return out


def test_deep_recursion_raises_at_the_recursive_call():
    with pytest.raises(RecursionError, match=r"maximum recursion depth exceeded .*count\(n - 1\)"):
        jit(count)(DEEP)


def test_a_function_with_several_recursive_calls_raises_at_its_first():
    assert jit(tree_sum)(10) == tree_sum(10)
    with pytest.raises(RecursionError, match=r"left = tree_sum\(n - 1\)"):
        jit(tree_sum)(DEEP)


def test_recursion_in_parallel_chunks_raises_and_runs():
    compiled = jit(counts_in_parallel, parallel=True)
    np.testing.assert_array_equal(compiled(np.arange(8)), np.arange(8.0))
    with pytest.raises(RecursionError, match=r"count\(n - 1\)"):
        compiled(np.array([3, DEEP]))
    np.testing.assert_array_equal(compiled(np.arange(4)), np.arange(4.0))


def test_unreachable_base_case_raises():
    with pytest.raises(RecursionError, match="climb"):
        jit(climb)(0)


@pytest.mark.parametrize("fn, arg", [(forever, 0), (halving, 1.0), (ping, 1)])
def test_recursion_without_a_base_case_raises(fn, arg):
    """LLVM would make such a recursion an endless loop; the guarded call stays a call."""
    with pytest.raises(RecursionError, match=r"\(at .*test_recursion_limit.py:\d+: return"):
        jit(fn)(arg)


def test_mutual_recursion_raises():
    with pytest.raises(RecursionError, match="odd"):
        jit(even)(DEEP)


def test_the_process_stays_usable():
    compiled, other = jit(count), jit(even)
    for _ in range(3):
        with pytest.raises(RecursionError):
            compiled(DEEP)
    assert compiled(10) == 10
    assert other(10) is True
    assert jit(scaled)(3, 1.0) == 7.0


def test_recursion_that_fits_runs_deeper_than_cpython():
    assert jit(count)(10**4) == 10**4
    assert jit(count)(10**5) == 10**5
    for depth in (10**4, 10**5):
        expected = 1.0
        for _ in range(depth):
            expected = 0.5 * expected + 1.0
        assert jit(halve)(depth, 1.0) == expected


def test_array_recursion_raises_and_releases():
    x = np.zeros(50)
    for _ in range(3):
        with pytest.raises(RecursionError, match="grows"):
            jit(grows)(DEEP, x)
    np.testing.assert_array_equal(jit(grows)(3, x), np.full(50, 24.0))


def test_grad_through_deep_recursion_raises():
    derivative = jit(grad(scaled, argnums=1))
    assert derivative(10**4, 1.0) == pytest.approx(1.0 + 2.0 * 10**4)
    with pytest.raises(RecursionError, match="scaled"):
        derivative(DEEP, 1.0)
    assert derivative(3, 1.0) == 7.0


def test_a_thread_with_a_small_stack_raises():
    results = []
    compiled = jit(count)

    def run():
        try:
            results.append(compiled(DEEP))
        except RecursionError as error:
            results.append(error)
        results.append(compiled(1000))

    previous = threading.stack_size(1 << 20)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(previous)
    assert isinstance(results[0], RecursionError) and results[1] == 1000
    assert compiled(DEEP // 100) == DEEP // 100  # the main thread's own limit again


def test_only_calls_on_a_cycle_check_the_stack():
    def add(x):
        return x + 1.0

    def twice(x):
        return add(add(x))

    assert "astjit.stack.limit" not in jit(twice).ir(1.0, stage="llvm")
    assert "astjit.stack.limit" in jit(count).ir(1, stage="llvm")
