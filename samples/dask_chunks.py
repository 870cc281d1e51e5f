"""A jitted function mapped over data chunks on a Dask cluster of worker processes.

Each worker process receives the jitted function pickled (its Python function, by value
here as it lives in `__main__`; by name from an importable module), compiles it on its
first call, and runs it on the chunks it holds; the client combines the partial results.
Needs the `dist` extra. Run from the repository root:

    pip install -e '.[dist]'
    python samples/dask_chunks.py
"""

import math
import time

import numpy as np

from astjit import jit

N_CHUNKS = 8
CHUNK = 250_000


def load_chunk(k):
    """Chunk `k` of the data: stands in for reading a file where it is processed."""
    return np.random.default_rng(k).normal(loc=1.0, scale=2.0, size=CHUNK)


@jit
def moments(x):
    """The count, sum, sum of squares and maximum of one chunk, in one compiled pass."""
    total = 0.0
    squares = 0.0
    largest = -math.inf
    for i in range(x.shape[0]):
        v = x[i]
        total += v
        squares += v * v
        largest = max(largest, v)
    return x.shape[0], total, squares, largest


def map_where_held(client, fn, futures):
    """`fn` of each future's value, run on the worker holding it. Arrays Dask sends from one
    process to another arrive unaligned, which compiled code refuses (README, 'Pickling and
    processes'); computed where it was made, a chunk is never sent."""
    held = client.who_has(futures)
    return [client.submit(fn, f, workers=list(held[f.key]), allow_other_workers=False)
            for f in futures]


def main(n_workers=2):
    from distributed import Client, LocalCluster, wait

    start = time.perf_counter()
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        chunks = client.map(load_chunk, range(N_CHUNKS))
        wait(chunks)
        parts = client.gather(map_where_held(client, moments, chunks))
    elapsed = time.perf_counter() - start
    count = sum(p[0] for p in parts)
    mean = sum(p[1] for p in parts) / count
    std = math.sqrt(sum(p[2] for p in parts) / count - mean * mean)
    largest = max(p[3] for p in parts)

    data = np.concatenate([load_chunk(k) for k in range(N_CHUNKS)])
    assert count == data.size and largest == data.max()
    assert math.isclose(mean, data.mean(), rel_tol=1e-9)
    assert math.isclose(std, data.std(), rel_tol=1e-9)
    print(f"{N_CHUNKS} chunks of {CHUNK} on {n_workers} worker processes ({elapsed:.1f} s "
          f"with the cluster's start): mean {mean:.6f}, std {std:.6f}, max {largest:.6f}")
    return mean, std


if __name__ == "__main__":
    main()
