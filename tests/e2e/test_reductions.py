"""Reductions (np.sum / mean / max / min, np.amax / amin and the methods), checked against NumPy
through the interpreter (typed and final IR) and compiled code: every kind x dtype x axis x
keepdims, strided and transposed inputs, empty arrays and NumPy's errors, NaN, reductions fused
with their elementwise producers (and the optimized dump showing it), compile-time errors."""
import sys
import types
import warnings

import numpy as np
import pytest
from array_checks import stages

from astjit import jit
from astjit.errors import CompileError, TypingError, UnsupportedCallError
from astjit.frontend import lower_function
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.passes.pipeline import optimize
from astjit.ir.passes.retain_release import insert_array_ownership
from astjit.ir.types import python_type_of

RNG = np.random.default_rng(11)
DTYPES = (np.float64, np.float32, np.int64, np.bool_)


def data(shape, dtype):
    x = RNG.standard_normal(shape) * 4
    if dtype == np.int64:
        return np.round(x).astype(np.int64)
    if dtype == np.bool_:
        return x > 0
    return x.astype(dtype)


# ---- functions parameterized by compile-time globals (R / REDUCE, AXIS, KEEP) -------------

R = REDUCE = AXIS = KEEP = None
"""Placeholders: `specialize` binds them per function object (read at compile time)."""

def np_function(x):
    return REDUCE(x, axis=AXIS, keepdims=KEEP)


def np_positional(x):
    return REDUCE(x, AXIS)


def every_axis(x):
    return (R(x), R(x, axis=0), R(x, axis=1), R(x, axis=-1), R(x, axis=-2), R(x, axis=(0, 1)),
            R(x, axis=(1, 0)), R(x, axis=(-1,)), R(x, axis=()),
            R(x, keepdims=True), R(x, axis=0, keepdims=True), R(x, axis=1, keepdims=True),
            R(x, axis=-1, keepdims=True), R(x, axis=(0, 1), keepdims=True),
            R(x, axis=(), keepdims=True), R(x, 1), R(x, -2))


EVERY_AXIS = [(None, False), (0, False), (1, False), (-1, False), (-2, False), ((0, 1), False),
              ((1, 0), False), ((-1,), False), ((), False), (None, True), (0, True), (1, True),
              (-1, True), ((0, 1), True), ((), True), (1, False), (-2, False)]


def method_sum(x):
    return x.sum(), x.sum(axis=0, keepdims=True), x.sum(-1), x.sum(axis=(0, 1), keepdims=True)


def method_mean(x):
    return x.mean(), x.mean(axis=0, keepdims=True), x.mean(-1), x.mean(axis=(0, 1), keepdims=True)


def method_max(x):
    return x.max(), x.max(axis=0, keepdims=True), x.max(-1), x.max(axis=(0, 1), keepdims=True)


def method_min(x):
    return x.min(), x.min(axis=0, keepdims=True), x.min(-1), x.min(axis=(0, 1), keepdims=True)


METHOD_AXES = [(None, False), (0, True), (-1, False), ((0, 1), True)]
METHODS = {"sum": method_sum, "mean": method_mean, "max": method_max, "min": method_min}
FUNCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


def specialize(template, **constants):
    """`template` with its globals extended by `constants` (read at compile time)."""
    scope = dict(template.__globals__)
    scope.update(constants)
    return types.FunctionType(template.__code__, scope, template.__name__)


def runners(fn, args):
    """The interpreter on the typed and on the final IR, and compiled code."""
    typed, final = stages(fn, args)
    return {"typed": lambda *a: interpret(typed, list(a)),
            "final": lambda *a: interpret(final, list(a)), "jit": jit(fn)}


def assert_same(want, got, where, exact=False):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)}"
        assert got.dtype == want.dtype and got.shape == want.shape, \
            f"{where}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    else:
        assert not isinstance(got, np.ndarray), f"{where}: an array, NumPy gives a scalar"
        assert np.asarray(got).dtype.kind == np.asarray(want).dtype.kind, f"{where}: {got!r}"
        if isinstance(want, np.generic) and want.dtype == np.float32:
            got = np.float32(got)  # compiled f32 scalars come back as Python floats
    if exact or np.asarray(want).dtype.kind in "bi":
        assert np.array_equal(want, got, equal_nan=True), f"{where}: {got} vs {want}"
    else:
        tol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=where)


def check_against_numpy(fn, args, expected, where):
    for stage, run in runners(fn, args).items():
        assert_same(expected, run(*args), f"{where} ({stage})")


# ---- every kind x dtype x axis x keepdims -------------------------------------------------

AXES_2D = [None, 0, 1, -1, -2, (0, 1), (1, 0), (-1,), ()]


def check_tuple(fn, args, expected, where):
    for stage, run in runners(fn, args).items():
        got = run(*args)
        assert isinstance(got, tuple) and len(got) == len(expected), f"{where} ({stage})"
        for (axis, keep), e, g in zip(expected.keys(), expected.values(), got):
            assert_same(e, g, f"{where} axis={axis} keepdims={keep} ({stage})")


class Keyed(dict):
    """Expected results keyed by (axis, keepdims), in order (keys may repeat)."""

    def __init__(self, pairs):
        super().__init__()
        self.pairs = list(pairs)

    def keys(self):
        return [k for k, _ in self.pairs]

    def values(self):
        return [v for _, v in self.pairs]

    def __len__(self):
        return len(self.pairs)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_every_axis_and_keepdims_matches_numpy(kind, dtype):
    x = data((5, 7), dtype)
    reduce = FUNCTIONS[kind]
    fn = specialize(every_axis, R=reduce)
    expected = Keyed(((a, k), reduce(x, axis=a, keepdims=k)) for a, k in EVERY_AXIS)
    check_tuple(fn, (x,), expected, f"np.{kind} {x.dtype}")
    expected = Keyed(((a, k), reduce(x, axis=a, keepdims=k)) for a, k in METHOD_AXES)
    check_tuple(METHODS[kind], (x,), expected, f"x.{kind}() {x.dtype}")


def three_axes(x):
    return (R(x, axis=0), R(x, axis=2, keepdims=True), R(x, axis=(0, 2)), R(x, axis=(2, 0)),
            R(x, axis=(0, 1), keepdims=True), R(x, axis=(1, 2)), R(x, axis=(0, 1, 2)), R(x, 1))


THREE_AXES = [(0, False), (2, True), ((0, 2), False), ((2, 0), False), ((0, 1), True),
              ((1, 2), False), ((0, 1, 2), False), (1, False)]


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_three_dimensional_axes_and_positional_axis(kind):
    x = data((3, 4, 5), np.float64)
    reduce = FUNCTIONS[kind]
    expected = Keyed(((a, k), reduce(x, axis=a, keepdims=k)) for a, k in THREE_AXES)
    check_tuple(specialize(three_axes, R=reduce), (x,), expected, f"3-d {kind}")


def test_amax_amin_and_one_dimensional():
    x = data(40, np.float64)
    for reduce, axis in [(np.amax, None), (np.amin, 0), (np.amax, -1)]:
        fn = specialize(np_positional, REDUCE=reduce, AXIS=axis)
        check_against_numpy(fn, (x,), reduce(x, axis), f"{reduce.__name__} {axis}")


def test_zero_dimensional_array():
    x = np.array(2.5)
    for kind in FUNCTIONS:
        for keep in (False, True):
            fn = specialize(np_function, REDUCE=FUNCTIONS[kind], AXIS=None, KEEP=keep)
            check_against_numpy(fn, (x,), FUNCTIONS[kind](x, keepdims=keep), f"0-d {kind} {keep}")


# ---- strided, transposed, broadcast inputs ------------------------------------------------

def strided_views():
    base = data((9, 12), np.float64)
    return [base[::2, 1::3], base[::-1], base.T, base[:, ::-2].T, base[1:4, 5]]


def few_axes(x):
    return (R(x), R(x, axis=0), R(x, axis=-1), R(x, keepdims=True), R(x, axis=0, keepdims=True),
            R(x, axis=-1, keepdims=True))


FEW_AXES = [(None, False), (0, False), (-1, False), (None, True), (0, True), (-1, True)]


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_strided_and_transposed_inputs(kind):
    reduce = FUNCTIONS[kind]
    fn = specialize(few_axes, R=reduce)
    for x in strided_views():
        expected = Keyed(((a, k), reduce(x, axis=a, keepdims=k)) for a, k in FEW_AXES)
        check_tuple(fn, (x,), expected, f"{kind} {x.shape} {x.strides}")


# ---- empty arrays, NaN, integers --------------------------------------------------------

EMPTY_MESSAGE = "zero-size array to reduction operation {} which has no identity"


@pytest.mark.parametrize("shape,axis", [((0,), None), ((0, 3), 0), ((3, 0), 1), ((0, 0), 1),
                                        ((2, 0), None), ((0, 3), (0, 1))])
def test_max_min_of_empty_reductions_raise_numpys_value_error(shape, axis):
    x = np.zeros(shape)
    for kind, name in (("max", "maximum"), ("min", "minimum")):
        fn = specialize(np_function, REDUCE=FUNCTIONS[kind], AXIS=axis, KEEP=False)
        for stage, run in runners(fn, (x,)).items():
            with pytest.raises(ValueError, match=EMPTY_MESSAGE.format(name)):
                run(x)


def test_empty_sums_are_zero_and_empty_means_nan():
    for shape, axis in [((0,), None), ((0, 3), 0), ((3, 0), 1), ((0, 3), 1), ((2, 0), None)]:
        x = np.zeros(shape)
        for kind in ("sum", "mean"):
            fn = specialize(np_function, REDUCE=FUNCTIONS[kind], AXIS=axis, KEEP=False)
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice"
                expected = FUNCTIONS[kind](x, axis=axis)
            check_against_numpy(fn, (x,), expected, f"{kind} {shape} {axis}")
    x = np.zeros((0, 3))  # a non-empty reduced axis of an empty array: no error
    fn = specialize(np_function, REDUCE=np.max, AXIS=1, KEEP=True)
    check_against_numpy(fn, (x,), np.max(x, axis=1, keepdims=True), "max of (0, 3) axis 1")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_propagates_through_max_and_min(dtype):
    x = data((6, 37), dtype)
    x[2, 30] = np.nan
    x[4, 0] = np.nan
    for kind in ("max", "min", "sum", "mean"):
        for axis in (None, 0, 1):
            fn = jit(specialize(np_function, REDUCE=FUNCTIONS[kind], AXIS=axis, KEEP=False))
            for view in (x, x.T, x[::-1, ::2]):  # unit-stride and strided loops
                expected = FUNCTIONS[kind](view, axis=axis)
                got = fn(view)
                assert np.array_equal(np.isnan(got), np.isnan(expected)), (kind, axis)
                assert_same(expected, got, f"{kind} axis={axis} {view.strides}")


def test_int_sums_wrap_and_extremes():
    big = np.array([2 ** 62, 2 ** 62, 2 ** 62], dtype=np.int64)
    fn = specialize(np_function, REDUCE=np.sum, AXIS=None, KEEP=False)
    assert jit(fn)(big) == np.sum(big)  # wraps as NumPy's does
    ext = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max])
    for kind in ("max", "min"):
        fn = specialize(np_function, REDUCE=FUNCTIONS[kind], AXIS=None, KEEP=False)
        assert jit(fn)(ext) == FUNCTIONS[kind](ext)


def test_long_float_sums_agree_to_rounding():
    x = RNG.standard_normal(100_003)
    fn = specialize(np_function, REDUCE=np.sum, AXIS=None, KEEP=False)
    assert jit(fn)(x) == pytest.approx(np.sum(x), rel=1e-12, abs=1e-9)
    x32 = x.astype(np.float32)
    assert jit(fn)(x32) == pytest.approx(float(np.sum(x32)), rel=1e-4, abs=1e-2)


# ---- fused with producers ----------------------------------------------------------------

def sum_of_squares(x):
    return np.sum(x * x)


def count_positive(x):
    return np.sum(x > 0.0)


def broadcast_mean(x, y):
    return np.mean(x * 2.0 + y, axis=0)


def rows_of_products(a):
    return np.sum(a * a, axis=1)


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def shared_producer(x):
    e = x * 3.0
    return np.sum(e), np.max(e, axis=0), e


def in_a_loop(x, n):
    total = 0.0
    for i in range(n):
        total += np.sum(x * i)
    return total


def int_mean(k):
    return np.mean(k * 3 + 1, axis=1), np.max(k > 0), np.min(k, axis=0, keepdims=True)


def reuse_keeps_views_intact(x):
    e = x * 2.0
    v = e[1:]
    out = e + 1.0  # e's last use, but the view v still reads its memory: a new array
    return out, v


def reuse_needs_the_full_shape(x, y):
    s = np.sum(x, axis=1, keepdims=True)
    return s + y  # s, (n, 1), cannot hold the (n, m) result


def reuse_in_a_chain(x):
    a = np.exp(x - np.max(x))
    b = a / np.sum(a)
    return b * 2.0 - np.mean(b, axis=0)


FUSED_CASES = [
    (reuse_keeps_views_intact, lambda: (RNG.standard_normal((5, 4)),)),
    (reuse_needs_the_full_shape, lambda: (RNG.standard_normal((5, 4)), RNG.standard_normal((5, 3)))),
    (reuse_in_a_chain, lambda: (RNG.standard_normal((6, 5)),)),
    (sum_of_squares, lambda: (RNG.standard_normal(1001),)),
    (sum_of_squares, lambda: (RNG.standard_normal((30, 17))[::2, ::-3],)),
    (count_positive, lambda: (RNG.standard_normal((20, 3)),)),
    (broadcast_mean, lambda: (RNG.standard_normal((6, 5)), RNG.standard_normal(5))),
    (rows_of_products, lambda: (RNG.standard_normal((6, 8))[:, ::2],)),
    (softmax, lambda: (RNG.standard_normal((7, 33)),)),
    (softmax, lambda: (RNG.standard_normal((33, 7)).T,)),
    (shared_producer, lambda: (RNG.standard_normal((4, 9)),)),
    (in_a_loop, lambda: (RNG.standard_normal(50), 4)),
    (int_mean, lambda: (np.arange(-6, 18, dtype=np.int64).reshape(4, 6),)),
]


@pytest.mark.parametrize("fn,make", FUSED_CASES, ids=[f.__name__ for f, _ in FUSED_CASES])
def test_fused_reductions_match_numpy(fn, make):
    args = make()
    expected = fn(*args)
    for stage, run in runners(fn, args).items():
        got = run(*args)
        if isinstance(expected, tuple):
            for i, (e, g) in enumerate(zip(expected, got)):
                assert_same(e, g, f"{fn.__name__}[{i}] ({stage})")
        else:
            assert_same(expected, got, f"{fn.__name__} ({stage})")


def test_the_optimized_dump_shows_the_reduction_fused_with_its_producer():
    x = RNG.standard_normal(10)
    text = jit(sum_of_squares).ir(x, stage="optimized")
    assert text.count("fused") == 1, text
    assert "reduce='sum', axes=(0,)" in text and "mul" in text, text
    text = jit(rows_of_products).ir(RNG.standard_normal((3, 4)), stage="optimized")
    assert text.count("fused") == 1 and "reduce='sum', axes=(1,)" in text, text
    text = jit(count_positive).ir(x, stage="optimized")
    assert text.count("fused") == 1 and "cast" in text and ": i64" in text, text
    # a producer used elsewhere too is stored by the loop of the first reduction joining it;
    # the next reduction reads it
    text = jit(shared_producer).ir(RNG.standard_normal((2, 3)), stage="optimized")
    assert text.count("fused (") == 2 and "reduce='max', axes=(0,)" in text, text
    assert "%e.1, %1 = fused (%x) {ndim=2, reduce='sum', axes=(0, 1), keepdims=False} {" in text, text
    text = jit(softmax).ir(RNG.standard_normal((2, 3)), stage="optimized")
    assert text.count("fused (") == 3, text  # in a row group (test_row_fusion.py)
    assert "reduce='max', axes=(1,), keepdims=True" in text, text
    assert "rowwise (%x) {ndim=2, rows=1, " in text, text
    assert ("%e.1, %3 = fused (%x.1, %0) {ndim=2, reduce='sum', axes=(1,), keepdims=True, "
            "ones={%0: (1,)}} {") in text, text
    assert "%7 = fused (%e.1, %3) {ndim=2, ones={%3: (1,)}, reuse=%e.1} {" in text, text  # e / s


def test_no_reference_leaks():
    x = RNG.standard_normal((5, 6))
    f = jit(shared_producer)
    f(x)
    before = sys.getrefcount(x)
    for _ in range(20):
        total, rows, e = f(x)
    assert sys.getrefcount(x) == before
    assert sys.getrefcount(rows) == 2 and sys.getrefcount(e) == 2


def test_no_memory_leaks_with_reused_buffers_and_errors():
    import gc
    import tracemalloc

    x = RNG.standard_normal((64, 32))
    empty = np.zeros((0, 3))
    fns = [jit(softmax), jit(reuse_in_a_chain), jit(reuse_keeps_views_intact)]
    fail = jit(specialize(np_function, REDUCE=np.max, AXIS=0, KEEP=False))
    for f in fns:
        f(x)

    def run():
        for f in fns:
            f(x)
        with pytest.raises(ValueError):
            fail(empty)
    run()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(50):
            run()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 64 * 32 * 8, grown  # less than one array: nothing per call


def test_unfused_reduce_nodes_compile_through_their_routine():
    from ir_builders import compile_module

    def reduce_module(kind, axis, keepdims):
        fn = specialize(np_function, REDUCE=FUNCTIONS[kind], AXIS=axis, KEEP=keepdims)
        x = data((4, 5), np.float64)
        module = optimize(infer_types(lower_function(fn), [python_type_of(x)]), fuse=False)
        assert any(n.op == "reduce" for n in module.entry_graph.nodes)
        return insert_array_ownership(module), x, fn
    for kind, axis, keep in [("sum", None, False), ("max", 0, True), ("mean", (1,), False)]:
        module, x, fn = reduce_module(kind, axis, keep)
        assert_same(fn(x), compile_module(module).call(x), f"unfused {kind}")


# ---- compile-time errors -------------------------------------------------------------------

def axis_variable(x, k):
    return np.sum(x, axis=k)


def keepdims_variable(x, flag):
    return np.max(x, axis=0, keepdims=flag)


def initial_keyword(x):
    return np.sum(x, initial=1.0)


def out_positional(x):
    return x.sum(0, None, x)


def too_many_positional(x):
    return x.sum(0, None, None, False, 1.0, True, 5)


def bool_dtype(x):
    return np.sum(x, dtype=bool)


def int_mean(x):
    return np.mean(x, dtype=np.int64)


def tuple_axis_of_argmax(x):
    return np.argmax(x, axis=(0,))


def scalar_sum(s):
    return np.sum(s)


def test_axis_out_of_range_is_a_typing_error_like_numpys():
    x = np.ones((2, 3))
    for axis, text in [(2, "axis 2 is out of bounds for array of dimension 2"),
                       (-3, "axis -3 is out of bounds for array of dimension 2"),
                       ((0, 0), "duplicate value in 'axis'")]:
        fn = specialize(np_function, REDUCE=np.sum, AXIS=axis, KEEP=False)
        with pytest.raises(TypingError, match=text.replace("(", r"\(").replace(")", r"\)")):
            jit(fn)(x)


@pytest.mark.parametrize("fn,text", [
    (axis_variable, "axis of np.sum() (k) is not a compile-time constant"),
    (keepdims_variable, "keepdims= of np.max() must be True or False at compile time"),
    (initial_keyword, "the argument initial= of np.sum() is not supported yet"),
    (out_positional, "the argument out= of sum() is not supported yet"),
    (too_many_positional, "sum() takes at most 7 positional arguments (8 given)"),
    (bool_dtype, "dtype=bool of np.sum() is not supported: it takes a float type or int64"),
    (int_mean, "dtype=np.int64 of np.mean() is not supported: it takes a float type"),
    (tuple_axis_of_argmax, "the axis of np.argmax() ((0,)) is not an int"),
])
def test_unsupported_arguments_are_clear_compile_errors(fn, text):
    args = {axis_variable: (np.ones(3), 0), keepdims_variable: (np.ones(3), True)}.get(
        fn, (np.ones(3),))
    with pytest.raises(UnsupportedCallError) as info:
        jit(fn)(*args)
    assert text in str(info.value)


def test_a_scalar_is_not_reduced():
    with pytest.raises(CompileError, match="needs an array"):
        jit(scalar_sum)(2.0)


# ---- random shapes, strides, dtypes, axes ------------------------------------------------

def of_square_plus_one(x):
    return REDUCE(x * x + 1, axis=AXIS, keepdims=KEEP)


def of_positive(x):
    return REDUCE(x > 0, axis=AXIS, keepdims=KEEP)


def test_random_reductions_match_numpy():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @st.composite
    def cases(draw):
        ndim = draw(st.integers(1, 3))
        shape = tuple(draw(st.integers(0 if draw(st.booleans()) else 1, 5)) for _ in range(ndim))
        dtype = draw(st.sampled_from(DTYPES))
        steps = [draw(st.sampled_from((1, 2, -1))) for _ in shape]
        base = data(tuple(n * abs(k) for n, k in zip(shape, steps)), dtype)
        x = base[tuple(slice(None, None, k) for k in steps)]
        if ndim > 1 and draw(st.booleans()):
            x = x.T
        axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1),
                              st.sets(st.integers(0, ndim - 1)).map(tuple)))
        kind = draw(st.sampled_from(sorted(FUNCTIONS)))
        producer = draw(st.sampled_from((np_function, of_square_plus_one, of_positive)))
        if producer is of_square_plus_one and dtype == np.bool_:
            producer = np_function  # NumPy's bool * bool + 1 is int64: fine, but keep it simple
        return x, kind, axis, draw(st.booleans()), producer

    @hypothesis.settings(max_examples=40, deadline=None, database=None)
    @hypothesis.given(cases())
    def check_case(case):
        x, kind, axis, keep, producer = case
        fn = specialize(producer, REDUCE=FUNCTIONS[kind], AXIS=axis, KEEP=keep)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                expected = fn(x)
        except ValueError as error:
            with pytest.raises(ValueError, match=str(error)):
                jit(fn)(x)
            return
        got = jit(fn)(x)
        if isinstance(expected, np.ndarray) or np.asarray(expected).dtype.kind in "bi":
            assert_same(expected, got, f"{producer.__name__} {kind} {x.shape} {axis} {keep}")
        else:
            tol = 1e-4 if np.asarray(expected).dtype == np.float32 else 1e-10
            assert np.isclose(got, expected, rtol=tol, atol=tol, equal_nan=True), (got, expected)

    check_case()
