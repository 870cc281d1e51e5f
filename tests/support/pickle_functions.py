"""Functions pickled by tests/api/test_pickling.py: importable by name, as the children of
`multiprocessing`'s spawn, a ProcessPoolExecutor and Dask's workers need."""
import math

import numpy as np

from astjit import jit, vectorize


@jit
def chunk_sum(chunk):
    """The sum of squares of one chunk of data: what a pool maps over chunks."""
    total = 0.0
    for i in range(chunk.shape[0]):
        total += chunk[i] * chunk[i]
    return total


@jit(boundscheck=False)
def unchecked_first(x):
    return x[0] + 1.0


def rosenbrock(x, y):
    return (1.0 - x) ** 2 + 100.0 * (y - x * x) ** 2


@jit
def jitted_loss(x):
    return math.sin(x) * x


def array_loss(w):
    return np.sum(np.tanh(w) ** 2)


def scaled(x, a):
    return a * x * x


class Model:
    def __init__(self, scale):
        self.scale = scale

    @jit
    def forward(self, x):
        return self.scale * x + 1.0


@vectorize
def smooth_step(x):
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x * x * (3.0 - 2.0 * x)


def make_chunk(k):
    """Chunk `k` of the data, made where it is processed (Dask's workers receive arrays sent
    to them unaligned, which compiled code refuses: README 'Pickling and processes')."""
    return np.linspace(0.0, 1.0, 50) + k
