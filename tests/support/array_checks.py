"""Checks shared by the array tests: every compilation stage verified, outcomes compared,
exceptions expected where pytest.raises would disturb tracemalloc, no leaks over many calls."""
import copy
import gc
import sys
import tracemalloc

import numpy as np

from astjit.frontend import lower_function
from astjit.ir.infer import infer_types
from astjit.ir.passes.ownership import check_array_ownership
from astjit.ir.passes.pipeline import optimize
from astjit.ir.passes.retain_release import insert_array_ownership
from astjit.ir.types import python_type_of
from astjit.ir.verify import verify_module


def check(module):
    verify_module(module, typed=True)


def stages(fn, args):
    """(typed, final) modules of `fn` for the types of `args`: final is optimized, then
    through the retain/release pass, verified after every pass and for ownership at the end."""
    typed = infer_types(lower_function(fn), [python_type_of(a) for a in args])
    check(typed)
    final = insert_array_ownership(optimize(copy.deepcopy(typed), verify=check))
    check(final)
    check_array_ownership(final)
    return typed, final


def outcome(run, args):
    try:
        return "ok", run(*args)
    except Exception as error:  # noqa: BLE001 - the exception is the outcome compared
        return "raised", type(error), str(error)


def expect(exc, f, *args):
    """f(*args) raises `exc` (without pytest.raises, whose bookkeeping tracemalloc sees)."""
    try:
        f(*args)
    except exc:
        return
    raise AssertionError(f"{exc.__name__} not raised")


def assert_no_leaks(run, held):
    """After a first call, 2000 more calls of `run()` grow traced memory by under 20 kB and
    leave the reference counts of `held` (the arguments) as they were."""
    run()
    counts = [sys.getrefcount(a) for a in held]
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(200):
            run()
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(2000):
            run()
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 20_000, second - first
    assert [sys.getrefcount(a) for a in held] == counts


def central_difference(fn, args, i, h=1e-6):
    """Central differences of scalar `fn` with respect to argument i (a float or an array),
    each call on fresh copies of the arrays (`fn` may write into them)."""
    import numpy as np

    def call(values):
        return fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in values])

    args = list(args)
    x = args[i]
    if not isinstance(x, np.ndarray):
        up, down = list(args), list(args)
        up[i], down[i] = x + h, x - h
        return (call(up) - call(down)) / (2 * h)
    x = args[i] = x.copy()
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        keep = x[idx]
        x[idx] = keep + h
        up = call(args)
        x[idx] = keep - h
        down = call(args)
        x[idx] = keep
        g[idx] = (up - down) / (2 * h)
    return g


def assert_fresh_gradients(grads, args):
    """No gradient array shares memory with another one or with an array argument."""
    import numpy as np

    arrays = [g for g in grads if isinstance(g, np.ndarray)]
    for k, g in enumerate(arrays):
        assert not any(np.shares_memory(g, h) for h in arrays[k + 1:])
        assert not any(np.shares_memory(g, a) for a in args if isinstance(a, np.ndarray))


def narrowed(args, dtype):
    """`args` with every array converted to `dtype` (scalars as they are)."""
    import numpy as np

    return tuple(a.astype(dtype) if isinstance(a, np.ndarray) else a for a in args)


def float_copies(args, dtype):
    """The float arrays of `args` as new arrays of `dtype`, other arrays copied."""
    import numpy as np

    return [a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else
            (a.copy() if isinstance(a, np.ndarray) else a) for a in args]


def assert_gradient_of_writes(grad, fn, args, argnums, dtype):
    """`grad(fn, argnums)` of `args` in `dtype` against central differences in float64, of
    each argument's dtype and shape, leaving the arrays passed in (which `fn` may write
    into) as they were; returns the gradients."""
    import numpy as np

    inputs = float_copies(args, dtype)
    kept = float_copies(inputs, dtype)
    got = grad(fn, argnums=argnums)(*inputs)
    for a, b in zip(inputs, kept):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
    tol = 1e-6 if dtype == np.float64 else 2e-3
    for k, i in enumerate(argnums):
        want = central_difference(fn, float_copies(args, np.float64), i)
        if isinstance(inputs[i], np.ndarray):
            assert got[k].dtype == dtype and got[k].shape == inputs[i].shape
        np.testing.assert_allclose(got[k], want, rtol=tol, atol=tol)
    return got


def assert_interpreter_agrees_on_gradient(grad, fn, args, argnums):
    """The compiled `grad(fn, argnums)` of float64 copies of `args` against the IR
    interpreter's run of the same gradient graph."""
    import numpy as np

    from astjit.api import interpret_call

    compiled = grad(fn, argnums=argnums)(*float_copies(args, np.float64))
    interpreted = interpret_call(grad(fn, argnums=argnums),
                                 tuple(float_copies(args, np.float64)), {})
    for c, i in zip(compiled, interpreted):
        np.testing.assert_allclose(c, i, rtol=1e-12, atol=1e-12)


def assert_same_array(want, got, where, tol_single, tol_double):
    """`got` is NumPy's `want`: the same type, dtype and shape; ints and bools equal, floats and
    complexes within `tol_single` (float32, complex64) or `tol_double`, NaN where NumPy's is."""
    assert type(got) is type(want), (where, type(got), type(want))
    want, got = np.asarray(want), np.asarray(got)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), \
        (where, got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=where)
    else:
        tol = tol_single if want.dtype in (np.float32, np.complex64) else tol_double
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=where)
