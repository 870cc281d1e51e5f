"""NumPy's shape, joining, copy and conversion functions (ir/ops/shape_functions.py) against
NumPy: results, dtypes, views (writes through them reach the base) and copies, errors;
hypothesis over shapes, axes and strided or transposed inputs; gradients against finite
differences; the GPU backend's host program on the simulator."""
import numpy as np
import pytest
from array_checks import central_difference, outcome, stages
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit
from astjit.errors import CompileError
from astjit.ir.interp import interpret


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def same(expected, got, where):
    if isinstance(expected, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(expected), (where, got)
        for k, (e, g) in enumerate(zip(expected, got)):
            same(e, g, f"{where}[{k}]")
        return
    assert isinstance(got, np.ndarray), (where, got)
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype), (where, got, expected)
    np.testing.assert_array_equal(got, expected, err_msg=where)


def shared(result, args):
    """Which array arguments each array of the result shares memory with."""
    results = result if isinstance(result, (tuple, list)) else (result,)
    results = [r for part in results for r in (part if isinstance(part, (tuple, list)) else [part])]
    return [[np.shares_memory(r, a) for a in args if isinstance(a, np.ndarray)] for r in results]


def check(fn, make, stages_too=True):
    """Same results, same effects on the arguments and the same sharing as NumPy's."""
    args = make()
    expected = fn(*args)
    runs = [("jit", jit(fn))]
    if stages_too:
        typed, final = stages(fn, make())
        runs += [("typed", lambda *a: interpret(typed, list(a))),
                 ("final", lambda *a: interpret(final, list(a)))]
    for stage, run in runs:
        mine = make()
        got = run(*mine)
        same(expected, got, f"{fn.__name__} ({stage})")
        for a, b in zip(args, mine):
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(b, a, err_msg=f"{fn.__name__} ({stage}) argument")
        assert shared(got, mine) == shared(expected, args), f"{fn.__name__} ({stage}): sharing"


# ---- the functions ----------------------------------------------------------------------------

def joins(a, b):
    return (np.concatenate((a, b)), np.concatenate([a, b], axis=-1), np.concatenate((a, b), axis=None),
            np.stack((a, b)), np.stack((a, b), axis=2), np.hstack((a, b)), np.vstack((a, b)))


def joins_1d(x, y):
    return np.hstack((x, y)), np.vstack((x, y)), np.stack((x, y), axis=1), np.hstack((x, 2.5))


def joins_mixed_dtypes(f, i, m):
    return np.concatenate((f, i)), np.concatenate((i, m)), np.stack((m, m)), np.concatenate((f, m))


def joins_a_tuple_value(a, b):
    t = (a, b)
    return np.concatenate(t, axis=1), np.stack(t, axis=-1)


def splits(a):
    p, q = np.split(a, 2)
    r, s, t = np.split(a, (1, 3), axis=1)
    return p, q, r, s, t, np.split(a, (-1, 10), axis=-1)


def rearranged(a):
    return (np.flip(a), np.flip(a, axis=1), np.flip(a, axis=(0, -1)), np.swapaxes(a, 0, -1),
            np.moveaxis(a, 0, -1), np.moveaxis(a, (0, 1), (-1, 0)), a.swapaxes(1, 2),
            np.expand_dims(a, 1), np.expand_dims(a, (0, -1)), np.squeeze(a[:1], axis=0),
            a[:, 1:2].squeeze(), np.squeeze(np.expand_dims(a, 0)))


def flattened(a):
    return (a.ravel(), np.ravel(a.T), a.flatten(), a.T.flatten(), np.ascontiguousarray(a),
            np.ascontiguousarray(a[:, ::2]))


def repeated(a, n):
    return (np.roll(a, n), np.roll(a, -n, axis=1), np.roll(a, (1, -2), axis=(0, 2)), np.tile(a, 2),
            np.tile(a, (2, 1, 1, 3)), np.tile(a[0], (n, 2)), np.repeat(a, n), np.repeat(a, 2, axis=-1),
            a.repeat(3, axis=0), np.broadcast_to(a[0], (n, 3, 4)), np.broadcast_to(2.5, (2, n)))


def of_scalars(x, n):
    return np.tile(x, 3), np.repeat(x, n), np.broadcast_to(x, (3, 4)), np.ravel(x), np.copy(x), \
        np.expand_dims(x, 0), np.flip(np.expand_dims(x, 0))


def copies(a):
    return np.copy(a), a.copy(), np.copy(a[::2]), a.T.copy(), np.array(a), np.ascontiguousarray(a.T)


def conversions(x, k, m):
    return (x.astype(np.float32), x.astype(np.int64), x.astype(bool), x.astype(float, copy=False),
            x.astype(np.float64), k.astype(np.float64), k.astype(np.bool_), k.astype(np.float32),
            m.astype(np.int64), m.astype(np.float64), x[::-2].astype(np.float32),
            x.reshape((2, 3)).T.astype(np.int64))


def packed(a, b, i):
    return (np.array((a, b, a * b)), np.array((i, i + 1, 3)), np.array((a, b), dtype=np.float32),
            np.array((True, a > b)), np.array((i, a)), np.array(((a, b), (i, 2.0))),
            np.array([a, b], dtype=np.int64), np.array((a > b, i)))


def packed_arrays(x, y):
    return np.array((x, y)), np.array((x, y), dtype=np.float32)


def spaced(n, a, b):
    return (np.linspace(a, b, n), np.linspace(0.0, 1.0), np.linspace(-1, 1, 5),
            np.linspace(2.0, 3.0, n, dtype=np.float32), np.linspace(0, 10, n, endpoint=False),
            np.linspace(-3.0, 7.5, n, dtype=np.int64), np.linspace(a, a, n), np.linspace(a, b, 1),
            np.linspace(a, b, 0))


def typed_creation(n):
    return (np.zeros(n, dtype=np.float32), np.ones((2, n), dtype=np.int64), np.full(n, 7, dtype=bool),
            np.empty((n, 0), dtype=np.float32), np.zeros((n,), dtype=np.bool_))


CASES = [
    (joins, lambda: (rand(2, 3), rand(2, 3, seed=1))),
    (joins, lambda: (rand(4, 6)[::2, 1::2], rand(3, 2, seed=1).T)),
    (joins_1d, lambda: (rand(3), rand(3, seed=1))),
    (joins_mixed_dtypes, lambda: (rand(3), np.arange(3), np.array([True, False, True]))),
    (joins_mixed_dtypes, lambda: (rand(3, dtype=np.float32), np.arange(3), np.ones(2, bool))),
    (joins_a_tuple_value, lambda: (rand(2, 3), rand(2, 3, seed=1))),
    (splits, lambda: (rand(4, 5),)),
    (splits, lambda: (rand(5, 8)[1:, ::2],)),
    (rearranged, lambda: (rand(2, 3, 4),)),
    (rearranged, lambda: (rand(4, 3, 2).T,)),
    (flattened, lambda: (rand(3, 4),)),
    (flattened, lambda: (rand(6, 4)[::2],)),
    (repeated, lambda: (rand(2, 3, 4), 2)),
    (repeated, lambda: (np.arange(24).reshape(2, 3, 4), 0)),
    (of_scalars, lambda: (1.5, 2)),
    (copies, lambda: (rand(4, 3),)),
    (conversions, lambda: (np.array([0.5, -2.7, 3.2, 255.0, -0.0, 1e10]), np.array([300, -1, 0, 7]),
                           np.array([True, False]))),
    (packed, lambda: (1.5, -2.0, 4)),
    (packed_arrays, lambda: (rand(3), rand(3, seed=1))),
    (spaced, lambda: (7, -1.5, 2.0)),
    (spaced, lambda: (2, 3.0, 3.0)),
    (typed_creation, lambda: (3,)),
]


@pytest.mark.parametrize("fn,make", CASES, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)])
def test_functions_match_numpy(fn, make):
    check(fn, make)


# ---- views written through, copies not ----------------------------------------------------------

def write_through(a):
    v = a.ravel()
    v[0] = 100.0
    f = a.flatten()
    f[1] = -100.0
    c = a.copy()
    c[0, 2] = -1.0
    s = np.swapaxes(a, 0, 1)
    s[1, 0] = 7.0
    e = np.expand_dims(a, 0)
    e[0, 2, 3] = 8.0
    q = np.squeeze(a[1:2])
    q[0] = 9.0
    r = np.flip(a, axis=1)
    r[2, 0] = 10.0
    m = np.moveaxis(a, 1, 0)
    m[2, 2] = 11.0
    h = np.split(a, 3)[1]
    h[0, 1] = 12.0
    k = np.ascontiguousarray(a)
    k[0, 1] = 13.0
    t = a.astype(np.float64)
    t[:, :] = 0.0
    return a


def test_writes_through_views_reach_the_base():
    check(write_through, lambda: (rand(3, 4),))


# ---- hypothesis: shapes, axes, strided and transposed inputs -----------------------------------

@st.composite
def arrays(draw, min_ndim=1, max_ndim=3):
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    layout = draw(st.sampled_from(["c", "transposed", "strided", "reversed"]))
    if layout == "transposed":
        return rand(*shape[::-1]).T
    if layout == "strided":
        return rand(*(2 * n for n in shape))[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "reversed":
        return rand(*shape)[::-1]
    return rand(*shape)


def _load_functions(texts):
    """One function per text, from a module written to a file (astjit reads their source)."""
    import importlib.util
    import pathlib
    import tempfile

    path = pathlib.Path(tempfile.mkdtemp()) / "shape_function_cases.py"
    path.write_text("import numpy as np\n\n" + "".join(
        f"def f{k}(a):\n    return {text}\n\n" for k, text in enumerate(texts)))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {text: getattr(module, f"f{k}") for k, text in enumerate(texts)}


def compare(fn, args):
    """NumPy's result (or exception class and message) and the compiled one agree."""
    expected = outcome(fn, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = outcome(jit(fn), args)
    if got[0] == "raised" and issubclass(got[1], CompileError):  # an axis NumPy refuses
        assert expected[0] == "raised" and expected[2] in got[2], (got, expected)
        return
    if expected[0] == "raised":
        assert got[:2] == expected[:2] and expected[2] in got[2], (got, expected)
        return
    assert got[0] == "ok", got
    same(expected[1], got[1], "result")


AXIS_FUNCTIONS = ["np.flip(a, axis={axis})", "np.squeeze(np.expand_dims(a, {axis}), {axis})",
                  "np.roll(a, 3, axis={axis})", "np.repeat(a, 2, axis={axis})",
                  "np.concatenate((a, a[::-1]), axis={axis})", "np.stack((a, a), axis={axis})",
                  "np.swapaxes(a, 0, {axis})", "np.moveaxis(a, {axis}, 0)",
                  "np.split(a, 1, axis={axis})", "np.squeeze(a, axis={axis})"]


WHOLE_FUNCTIONS = ["np.flip(a)", "np.ravel(a)", "a.flatten()", "np.roll(a, -5)", "np.tile(a, (2, 1))",
                   "np.repeat(a, 3)", "np.ascontiguousarray(a)", "a.astype(np.float32)",
                   "a.astype(np.int64)", "np.copy(a)", "np.hstack((a, a))", "np.vstack((a, a))",
                   "np.broadcast_to(a[:1], a.shape)", "np.squeeze(a)"]
FUNCTIONS = _load_functions([f.format(axis=k) for f in AXIS_FUNCTIONS for k in range(-3, 3)]
                            + WHOLE_FUNCTIONS)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(a=arrays(), axis=st.integers(-3, 2), which=st.sampled_from(AXIS_FUNCTIONS))
def test_axes_shapes_and_strides(a, axis, which):
    compare(FUNCTIONS[which.format(axis=axis)], [a])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(a=arrays(max_ndim=3), which=st.sampled_from(WHOLE_FUNCTIONS))
def test_whole_array_functions(a, which):
    compare(FUNCTIONS[which], [a])


# ---- errors: NumPy's class and message ----------------------------------------------------------

def concatenate_two(a, b):
    return np.concatenate((a, b))


def stack_two(a, b):
    return np.stack((a, b))


def split_three(a):
    return np.split(a, 3)


def squeeze_first(a):
    return np.squeeze(a, axis=0)


def broadcast_to_n(a, n):
    return np.broadcast_to(a, (n, 3))


def repeat_n(a, n):
    return np.repeat(a, n), np.tile(a, n)


def linspace_n(n):
    return np.linspace(0.0, 1.0, n)


ERRORS = [
    (concatenate_two, lambda: (np.ones((2, 3)), np.ones((2, 4)))),
    (stack_two, lambda: (np.ones((2, 3)), np.ones((3, 2)))),
    (split_three, lambda: (np.ones(4),)),
    (squeeze_first, lambda: (np.ones((2, 3)),)),
    (broadcast_to_n, lambda: (np.ones(4), 2)),
    (broadcast_to_n, lambda: (np.ones(3), -1)),
    (repeat_n, lambda: (np.ones(3), -1)),
    (linspace_n, lambda: (-2,)),
]


@pytest.mark.parametrize("fn,make", ERRORS, ids=[f"{c[0].__name__}-{k}" for k, c in enumerate(ERRORS)])
def test_errors_are_numpys(fn, make):
    expected = outcome(fn, make())
    assert expected[0] == "raised"
    got = outcome(jit(fn), make())
    assert got[:2] == expected[:2] and expected[2] in got[2], (got, expected)


def axis_out_of_range(a):
    return np.flip(a, axis=2)


def unsupported_dtype(a):
    return a.astype(np.float16)


@pytest.mark.parametrize("fn,words", [(axis_out_of_range, "axis 2 is out of bounds for array of dimension 2"),
                                      (unsupported_dtype, "float32, float64, complex64 and complex128")])
def test_compile_time_refusals_say_why(fn, words):
    with pytest.raises(CompileError, match=words):
        jit(fn)(np.ones((2, 3)))


# ---- gradients ---------------------------------------------------------------------------------

def g_joins(a, b):
    c = np.concatenate((a, b), axis=1)
    s = np.stack((a, b[:, :3]), axis=-1)
    return (np.sum(np.sin(c) * np.arange(14.0).reshape((2, 7))) + np.sum(s ** 3)
            + np.sum(np.hstack((a, b)) ** 2))


def g_rearranged(a):
    w = np.arange(24.0).reshape((2, 3, 4))
    return (np.sum(np.flip(a, axis=1) * w) + np.sum(np.swapaxes(a, 0, 2) ** 3)
            + np.sum(np.moveaxis(a, 0, -1) * np.moveaxis(w, 0, -1) ** 2)
            + np.sum(np.squeeze(np.expand_dims(a, 0), 0) * w * w))


def g_repeated(a, w):
    return (np.sum(np.roll(a, 2, axis=1) * w[:2]) + np.sum(np.tile(a, (2, 1, 1)) * w)
            + np.sum(np.repeat(a, 2, axis=0) * w) + np.sum(np.broadcast_to(a[0], (4, 3, 4)) * w)
            + np.sum(np.roll(a, -1, axis=2) ** 2 * w[1:3]))


def g_copies(a):
    p, q = np.split(a, 2, axis=1)
    return (np.sum(a.ravel() ** 2 * np.arange(12.0)) + np.sum(a.flatten() * 3.0) + np.sum(np.copy(a) ** 3)
            + np.sum(a.astype(np.float64) * 2.0) + np.sum(p * q)
            + np.sum(np.ascontiguousarray(a.T) ** 2))


def g_pack(x, y):
    v = np.array((x, y, x * y))
    m = np.array(((x, 1.0), (y, x)))
    return np.sum(v ** 2) + np.sum(m * np.arange(4.0).reshape((2, 2))) + np.sum(np.linspace(x, y, 5) ** 2)


GRADS = [
    (g_joins, lambda: (rand(2, 3), rand(2, 4, seed=1)), (0, 1)),
    (g_rearranged, lambda: (rand(2, 3, 4),), (0,)),
    (g_repeated, lambda: (rand(2, 3, 4), rand(4, 3, 4, seed=1)), (0, 1)),
    (g_copies, lambda: (rand(3, 4)[:, ::-1],), (0,)),
    (g_pack, lambda: (0.7, -1.3), (0, 1)),
]


@pytest.mark.parametrize("fn,make,argnums", GRADS, ids=[c[0].__name__ for c in GRADS])
def test_gradients_match_finite_differences(fn, make, argnums):
    args = make()
    got = grad(fn, argnums=argnums)(*args)
    for i, g in zip(argnums, got):
        np.testing.assert_allclose(g, central_difference(fn, args, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"d{fn.__name__}/d{i}")


def g_astype(x):
    return np.sum(x.astype(np.float64) ** 2) + np.sum(x.astype(np.int64) * 1.0)


def test_gradient_of_a_conversion_keeps_the_dtype():
    x = rand(5, dtype=np.float32)
    got = grad(g_astype)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, 2.0 * x, rtol=1e-6)


# ---- the GPU backend (its host program runs these ops) -------------------------------------------

@pytest.mark.parametrize("fn,make", CASES[::3], ids=[c[0].__name__ for c in CASES[::3]])
def test_gpu_simulator_agrees(fn, make):
    same(jit(fn)(*make()), jit(fn, target="cuda-sim")(*make()), fn.__name__)
