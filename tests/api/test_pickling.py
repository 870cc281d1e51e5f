"""Pickling jitted, derived and vectorized functions, and using them in other processes.

The functions live in support/pickle_functions.py, importable by name as spawn's
children and Dask's workers need; local ones (closures, `__main__`'s) go by value.
"""
import concurrent.futures
import copy
import linecache
import math
import multiprocessing
import os
import pickle
import subprocess
import sys

import numpy as np
import pickle_functions as pf
import pytest

from astjit import grad, hessian, jacfwd, jit, jvp, value_and_grad, vectorize, vjp, vmap

CHUNKS = [np.linspace(0.0, 1.0, 50) + k for k in range(4)]
EXPECTED = [float(np.sum(c * c)) for c in CHUNKS]


def round_trip(obj):
    return pickle.loads(pickle.dumps(obj))


def test_a_module_level_jitted_function_pickles_by_reference():
    assert pf.chunk_sum.__module__.encode() in pickle.dumps(pf.chunk_sum)
    assert round_trip(pf.chunk_sum) is pf.chunk_sum
    assert round_trip(pf.unchecked_first) is pf.unchecked_first


def test_jit_of_a_module_level_function_pickles_as_the_function_and_options():
    for options in ({}, {"boundscheck": False}):
        f = jit(pf.scaled, **options)
        f(2.0, 3.0)  # compiled code is never pickled
        g = round_trip(f)
        assert g is not f and g.py_func is pf.scaled and g.dispatcher.options == options
        assert g(2.0, 3.0) == 12.0 and g.signatures is not f.signatures


def test_derived_functions_pickle_and_recompile():
    x = np.array([0.5, -1.0, 2.0])
    cases = [(grad(pf.rosenbrock, (0, 1)), (1.5, 2.0)),
             (value_and_grad(pf.rosenbrock), (1.5, 2.0)),
             (grad(pf.jitted_loss), (0.3,)),  # the base is a module's @jit function
             (grad(jit(pf.scaled), 1), (2.0, 3.0)),
             (jvp.__astjit_jvp__(pf.rosenbrock), (1.5, 2.0, 1.0, 0.5)),
             (vmap(pf.array_loss), (np.ones((2, 3)),)),
             (jacfwd(pf.scaled), (x, 2.0)),
             (hessian(pf.array_loss), (x,)),
             (jit(grad(pf.rosenbrock)), (1.5, 2.0))]
    for derived, args in cases:
        expected = derived(*args)
        again = round_trip(derived)
        assert again.__name__ == derived.__name__
        np.testing.assert_allclose(again(*args), expected, rtol=1e-12)


def test_deep_copies_of_astjit_functions_are_themselves_as_a_functions_are():
    k = 2.0

    def local(x):
        return k * x

    for obj in (jit(pf.scaled), pf.chunk_sum, pf.Model.forward, grad(pf.rosenbrock),
                grad(local), pf.smooth_step, vectorize(local)):
        assert copy.deepcopy([obj])[0] is obj
    # copy.copy looks for __copy__ on the type: a plain partial's (a jitted entry's) is its
    # reduction's, a fresh jitted function of the same Python function
    for f in (pf.chunk_sum, jit(pf.scaled), jit(local), jit(pf.jitted_loss.py_func)):
        assert copy.copy(f).py_func is f.py_func


def test_a_pullback_pickles():
    out, pullback = vjp(pf.array_loss, np.array([0.5, -1.0]))
    np.testing.assert_allclose(round_trip(pullback)(1.0), pullback(1.0))


def test_a_method_jitted_in_its_class_pickles_with_its_object():
    assert round_trip(pf.Model.forward) is pf.Model.forward
    model = round_trip(pf.Model(2.0))
    assert model.forward(3.0) == 7.0
    assert round_trip(model.forward)(1.0) == 3.0


def test_vectorized_functions_pickle():
    x = np.linspace(-0.5, 1.5, 7)
    assert round_trip(pf.smooth_step) is pf.smooth_step
    v = vectorize(pf.scaled)
    again = round_trip(v)
    assert again is not v
    np.testing.assert_allclose(again(x, 2.0), 2.0 * x * x)


def test_local_functions_pickle_by_value_with_cloudpickle():
    pytest.importorskip("cloudpickle")
    k = 3.0

    @jit
    def times_k(x):
        return x * k + helper(x)

    def helper(x):
        return math.cos(x)

    blobs = pickle.dumps([times_k, grad(times_k), vectorize(times_k.py_func)])
    f, g, v = pickle.loads(blobs)
    assert f(2.0) == times_k(2.0) and g(2.0) == grad(times_k)(2.0)
    np.testing.assert_allclose(v(np.ones(2)), [times_k(1.0)] * 2)
    # in a fresh interpreter, where none of these names exist
    code = ("import pickle, sys; f, g, v = pickle.load(sys.stdin.buffer); "
            "print(f(2.0), g(2.0), float(v(1.0)))")
    ran = subprocess.run([sys.executable, "-c", code], input=blobs, capture_output=True,
                         timeout=60, cwd="/")
    assert ran.returncode == 0, ran.stderr.decode()[-2000:]
    assert ran.stdout.split() == [repr(times_k(2.0)).encode(), repr(grad(times_k)(2.0)).encode(),
                                  repr(times_k(1.0)).encode()]


def test_recursive_local_function_pickles_by_value():
    pytest.importorskip("cloudpickle")

    @jit
    def fib(n):
        if n < 2:
            return n
        return fib(n - 1) + fib(n - 2)

    assert round_trip(fib)(15) == 610


def test_multiprocessing_imported_after_jit_pickles_entries_as_pickle_does():
    """multiprocessing reduces every functools.partial its own way; astjit registers its
    entries' reduction when multiprocessing is imported, even after the first `jit`."""
    code = ("import sys, pickle; import astjit, pickle_functions as pf; "
            "assert 'multiprocessing' not in sys.modules; "
            "from multiprocessing.reduction import ForkingPickler as P; "
            "f = astjit.jit(pf.scaled); "
            "assert pickle.loads(P.dumps(pf.chunk_sum)) is pf.chunk_sum; "
            "assert pickle.loads(P.dumps(f)).py_func is pf.scaled; print('ok')")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert ran.stdout == b"ok\n", ran.stderr.decode()[-2000:]


def test_a_function_by_value_brings_its_source_where_its_file_is_missing(tmp_path):
    pytest.importorskip("cloudpickle")
    from astjit import pickling

    path = tmp_path / "gone.py"
    path.write_text("def halve(x):\n    return x / 2.0\n")
    scope = {}
    exec(compile(path.read_text(), str(path), "exec"), scope)
    blob = pickle.dumps(jit(scope["halve"]))
    path.unlink()
    linecache.clearcache()
    assert pickle.loads(blob)(3.0) == 1.5
    assert pickling.found_at("pickle_functions", "chunk_sum") is pf.chunk_sum


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_pool_maps_a_jitted_function_over_chunks(method):
    pf.chunk_sum(CHUNKS[0])  # compiled here: a forked child inherits it, a spawned one compiles
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map(pf.chunk_sum, CHUNKS)
        gradients = pool.starmap(grad(pf.rosenbrock, (0, 1)), [(1.5, 2.0), (0.0, 1.0)])
    np.testing.assert_allclose(results, EXPECTED, rtol=1e-12)
    assert gradients == [grad(pf.rosenbrock, (0, 1))(1.5, 2.0), grad(pf.rosenbrock, (0, 1))(0.0, 1.0)]


def test_a_process_pool_executor_maps_jitted_and_vectorized_functions():
    x = np.linspace(-0.5, 1.5, 9)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) \
            as pool:
        results = list(pool.map(pf.chunk_sum, CHUNKS))
        steps = pool.submit(pf.smooth_step, x).result()
        scaled = pool.submit(jit(pf.scaled, boundscheck=False), 2.0, 3.0).result()
    np.testing.assert_allclose(results, EXPECTED, rtol=1e-12)
    np.testing.assert_allclose(steps, pf.smooth_step(x))
    assert scaled == 12.0


def test_dask_maps_a_jitted_function_over_chunks_on_a_local_cluster():
    distributed = pytest.importorskip("distributed", reason="the 'dist' extra is not installed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        chunks = client.map(pf.make_chunk, range(len(CHUNKS)))
        distributed.wait(chunks)
        where = client.who_has(chunks)  # each chunk summed where it was made: never sent
        sums = [client.submit(pf.chunk_sum, c, workers=list(where[c.key]),
                              allow_other_workers=False) for c in chunks]
        gradient = client.submit(grad(pf.rosenbrock, (0, 1)), 1.5, 2.0)
        steps = client.submit(pf.smooth_step, 0.5)
        results = client.gather(sums)
        assert gradient.result() == grad(pf.rosenbrock, (0, 1))(1.5, 2.0)
        assert steps.result() == pf.smooth_step(0.5)
    np.testing.assert_allclose(results, EXPECTED, rtol=1e-12)
