"""The compile lock (api.COMPILING) turns the garbage collector off while a compile runs and
back on after: a compile sets off no collection of the objects it did not make, and no
object is lost or kept by it."""
import gc
import threading
import time
import weakref

import numpy as np
import pytest

from astjit import api, jit
from astjit.errors import CompileError


def _product(a, b):
    return a @ b


def _bad(x):
    return x.no_such_attribute


class _Node:
    def __init__(self) -> None:
        self.other = self


def test_a_compile_pauses_the_collector_and_resumes_it():
    a = np.arange(6.0).reshape(2, 3)
    f = jit(_product)
    assert gc.isenabled()
    with api.COMPILING:
        assert not gc.isenabled()
        np.testing.assert_array_equal(f(a, a.T), a @ a.T)
        assert not gc.isenabled()  # the inner compile left the outer pause alone
    assert gc.isenabled()
    assert api.COMPILING.depth == 0
    np.testing.assert_array_equal(jit(_product)(a.T, a), a.T @ a)
    assert gc.isenabled()


def test_a_failed_compile_resumes_the_collector_and_releases_the_lock():
    with pytest.raises(CompileError):
        jit(_bad)(np.ones(3))
    assert gc.isenabled()
    assert api.COMPILING.depth == 0
    acquired = []

    def take() -> None:
        acquired.append(api.COMPILING.lock.acquire(timeout=10))
        api.COMPILING.lock.release()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    assert acquired == [True]


def test_a_process_that_turned_the_collector_off_keeps_it_off():
    a = np.eye(3)
    gc.disable()
    try:
        np.testing.assert_array_equal(jit(_product)(a.T, a.T), a)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_garbage_made_before_a_compile_is_collected_after_it():
    node = _Node()
    gone = weakref.ref(node)
    with api.COMPILING:
        del node
        assert gone() is not None
    gc.collect()
    assert gone() is None


def test_a_compile_costs_nothing_more_in_a_process_that_froze_many_objects():
    """A freeze of the process's own (a server before it forks, this suite's conftest)
    stays, and the lock does not walk the frozen objects: entering it costs the same with
    a million more of them frozen."""
    def enter_cost() -> float:
        start = time.perf_counter()
        for _ in range(200):
            with api.COMPILING:
                pass
        return time.perf_counter() - start

    before = min(enter_cost() for _ in range(5))
    frozen = gc.get_freeze_count()
    ballast = [[i] for i in range(1_000_000)]
    gc.freeze()
    try:
        after = min(enter_cost() for _ in range(5))
        assert gc.get_freeze_count() >= frozen + len(ballast)
    finally:
        gc.unfreeze()
        del ballast
        gc.collect()
        gc.freeze()  # conftest's freeze, without the ballast
    assert after < before * 5 + 0.005
