"""np.argmax / np.argmin of unit-stride rows, which backend/llvm/scans.py searches in blocks
of BLOCK elements, against NumPy: rows shorter and longer than a block and of several
blocks, the extremum (ties, NaNs, infinities) planted at and around the blocks' ends, for
axis=None and along the last axis, floats and ints."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.backend.llvm.scans import BLOCK


def flat(x):
    return np.argmax(x), np.argmin(x)


def rows(a):
    return np.argmax(a, axis=1), np.argmin(a, axis=-1)


JITTED = {fn: jit(fn) for fn in (flat, rows)}
"""One compiled function each for all examples: each dtype and layout compiles once."""
EDGES = [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK - 1, 2 * BLOCK, 3 * BLOCK + 5]
PLANTED = st.sampled_from([np.nan, np.inf, -np.inf, 9.0, -9.0])


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.sampled_from([1, 2, 7, *[e for e in EDGES if e > 0], 4 * BLOCK + 3]),
       spots=st.lists(st.tuples(st.sampled_from(EDGES), PLANTED), max_size=4),
       dtype=st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.int8]),
       count=st.integers(1, 3))
def test_first_extremum_like_numpy(n, spots, dtype, count):
    x = np.random.default_rng(n).standard_normal(count * n) * 4
    for at, value in spots:
        # the same value in every row at `at` and in the row's last block: ties and NaNs
        # in more than one block
        for row in range(count):
            for k in (at, n - 1 - at):
                if 0 <= k < n:
                    x[row * n + k] = value
    if np.issubdtype(dtype, np.integer):
        x = np.nan_to_num(x, posinf=100, neginf=-100)
    x = x.astype(dtype)
    a = x.reshape(count, n)
    for fn, arg in ((flat, x), (rows, a), (rows, a[::-1])):
        expected, got = fn(arg), JITTED[fn](arg)
        for e, g in zip(expected, got):
            np.testing.assert_array_equal(g, e)
            assert np.asarray(g).dtype == np.asarray(e).dtype
