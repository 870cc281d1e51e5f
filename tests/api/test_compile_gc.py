"""The compile lock (api.COMPILING) freezes the garbage collector's generations while a
compile runs and puts them back after: collections during a compile look only at the
objects it made, and no object is lost or kept by it."""
import gc
import threading
import weakref

import numpy as np
import pytest

from astjit import api, jit
from astjit.errors import CompileError


def _product(a, b):
    return a @ b


def _bad(x):
    return x.no_such_attribute


@pytest.fixture(autouse=True)
def _unfrozen():
    """conftest.py freezes what collection made; these tests start from a process that
    froze nothing (and freeze it again after)."""
    gc.unfreeze()
    yield
    gc.freeze()


class _Node:
    def __init__(self) -> None:
        self.other = self


def test_a_compile_freezes_and_unfreezes():
    a = np.arange(6.0).reshape(2, 3)
    f = jit(_product)
    with api.COMPILING:
        assert gc.get_freeze_count() > 0
        np.testing.assert_array_equal(f(a, a.T), a @ a.T)
        assert gc.get_freeze_count() > 0  # the inner compile left the outer freeze alone
    assert gc.get_freeze_count() == 0
    assert api.COMPILING.depth == 0
    np.testing.assert_array_equal(jit(_product)(a.T, a), a.T @ a)
    assert gc.get_freeze_count() == 0


def test_a_failed_compile_unfreezes_and_releases_the_lock():
    with pytest.raises(CompileError):
        jit(_bad)(np.ones(3))
    assert gc.get_freeze_count() == 0
    assert api.COMPILING.depth == 0
    acquired = []

    def take() -> None:
        acquired.append(api.COMPILING.lock.acquire(timeout=10))
        api.COMPILING.lock.release()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    assert acquired == [True]


def test_a_process_frozen_stays_frozen():
    """A freeze of the process's own (a server before it forks) is not undone."""
    a = np.eye(3)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        np.testing.assert_array_equal(jit(_product)(a, a), a)
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_garbage_made_before_a_compile_is_collected_after_it():
    node = _Node()
    gone = weakref.ref(node)
    with api.COMPILING:
        del node
        gc.collect()
        assert gone() is not None  # frozen: left for the collections after the compile
    gc.collect()
    assert gone() is None
