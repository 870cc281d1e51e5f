"""A device target's jitted function dispatches every call by its arguments' types: a
second signature (another dtype, another number of axes) gets its own kernels, never the
first one's. The CPU's entry checks its arguments in machine code and falls back to the
dispatcher; a device entry does not check them, so its jitted function keeps calling the
dispatcher (an earlier version sent every call to the first signature's kernels: int64
data read as double on a GPU)."""
import numpy as np
import pytest
from cuda_checks import DEVICE_TARGETS, on_target, to_host

from astjit import jit


def dot_sum(x, y):
    return np.sum(x * y)


@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_each_signature_runs_its_own_kernels(target):
    f = jit(dot_sum, target=target)
    cases = [(np.ones(5), np.arange(5.0)), (np.arange(5), np.arange(5)),
             (np.ones((2, 3)), np.arange(3.0)), (np.ones(5, np.float32), np.ones(5, np.float32)),
             (np.ones(5), np.arange(5.0))]
    for x, y in cases:
        got, expected = to_host(f(*on_target((x, y), target))), dot_sum(x, y)
        assert got == expected and np.asarray(got).dtype == np.asarray(expected).dtype
    assert len(f.signatures) == 4


def test_a_gpu_function_keeps_dispatching_after_its_first_signature():
    """Compiling a signature for the GPU (its CUDA source, made on any machine) leaves the
    jitted function calling the dispatcher, which picks the signature's entry."""
    f = jit(dot_sum, target="gpu")
    before = f.func
    assert "__global__" in f.ir(np.ones(5), np.ones(5), stage="cuda")
    assert f.func is before
