"""Matrix products (a @ b, np.dot, np.matmul), np.diag and np.eye: compiled code and the
interpreter (typed and final IR) against NumPy over every shape combination, dtype pair and
operand layout (C, transposed, strided, reversed, zero-size); NumPy's error messages with
the source line; compile-time errors; no leaked reference or memory; SciPy loaded lazily."""
import gc
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from array_checks import expect, outcome, stages

from astjit import jit
from astjit.errors import CompileError, TypingError
from astjit.frontend import lower_function
from astjit.ir.interp import interpret
from astjit.ir.types import python_type_of


def at(a, b):
    return a @ b


def dot(a, b):
    return np.dot(a, b)


def matmul(a, b):
    return np.matmul(a, b)


PRODUCTS = {"@": at, "dot": dot, "matmul": matmul}


# ---- running every stage ---------------------------------------------------------------------

_RUNNERS = {}


def runners(fn, args):
    """(stage, run) for the parsed, typed and final IR in the interpreter and compiled code."""
    key = (fn, tuple(python_type_of(a) for a in args))
    if key not in _RUNNERS:
        typed, final = stages(fn, args)
        parsed = lower_function(fn)
        _RUNNERS[key] = [("parsed", lambda *a: interpret(parsed, list(a))),
                         ("typed", lambda *a: interpret(typed, list(a))),
                         ("final", lambda *a: interpret(final, list(a))),
                         ("jit", _jitted(fn))]
    return _RUNNERS[key]


_JITTED = {}


def _jitted(fn):
    if fn not in _JITTED:
        _JITTED[fn] = jit(fn)
    return _JITTED[fn]


def assert_close(expected, got, where):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), where
        for e, g in zip(expected, got):
            assert_close(e, g, where)
        return
    dtype = np.asarray(expected).dtype
    if isinstance(expected, np.ndarray):
        assert type(got) is np.ndarray, f"{where}: {type(got)}"
        assert (got.shape, got.dtype) == (expected.shape, expected.dtype), \
            f"{where}: {got.shape} {got.dtype} vs {expected.shape} {expected.dtype}"
    else:
        if isinstance(got, np.generic):  # compiled code: NumPy's own scalar, as NumPy gives
            assert type(got) is type(expected), f"{where}: {type(got)} vs {type(expected)}"
            got = got.item()
        expected = np.asarray(expected).item()
        assert type(got) is type(expected), f"{where}: {type(got)} vs {type(expected)}"
    if dtype.kind in "iub":
        np.testing.assert_array_equal(got, expected, err_msg=where)
    else:
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=where)


def check_all(fn, *args, exact_error=True):
    """fn(*args) in every stage is NumPy's result (or raises NumPy's exception)."""
    expected = outcome(fn, args)
    for stage, run in runners(fn, args):
        got = outcome(run, args)
        where = f"{fn.__name__} ({stage}) on {[getattr(a, 'shape', a) for a in args]}"
        assert got[0] == expected[0], f"{where}: {got} vs {expected}"
        if expected[0] == "raised":
            assert got[1] is expected[1], f"{where}: {got} vs {expected}"
            assert got[2].startswith(expected[2]) or not exact_error, \
                f"{where}: {got[2]!r} vs {expected[2]!r}"
        else:
            assert_close(expected[1], got[1], where)


# ---- operands in every layout ----------------------------------------------------------------

RNG = np.random.default_rng(7)


def values(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-9, 10, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def matrix(rows, cols, dtype, layout):
    """A rows x cols array of `dtype` laid out as `layout` says."""
    if layout == "C":
        return values((rows, cols), dtype)
    if layout == "F":  # the transpose of a C array
        return values((cols, rows), dtype).T
    if layout == "strided":  # every other column
        return values((rows, 2 * cols), dtype)[:, ::2]
    if layout == "reversed":  # negative row stride
        return values((rows, cols), dtype)[::-1]
    raise AssertionError(layout)


def vector(n, dtype, layout):
    if layout == "C":
        return values(n, dtype)
    if layout == "strided":
        return values(2 * n, dtype)[::2]
    if layout == "reversed":
        return values(n, dtype)[::-1]
    if layout == "F":  # a column of a C matrix: stride > 1
        return values((n, 3), dtype)[:, 1]
    raise AssertionError(layout)


def operand(shape, dtype, layout):
    return matrix(*shape, dtype, layout) if len(shape) == 2 else vector(*shape, dtype, layout)


SIZES = [(3, 4, 5), (1, 1, 1), (4, 1, 3), (1, 5, 1), (0, 3, 2), (3, 0, 2), (3, 2, 0), (0, 0, 0),
         (7, 6, 8)]
"""(m, k, n): rows of a, the inner size, columns of b; zeros included."""
NDIMS = [(2, 2), (2, 1), (1, 2), (1, 1)]
LAYOUTS = ["C", "F", "strided", "reversed"]
DTYPES = [(np.float64, np.float64), (np.float32, np.float32), (np.float32, np.float64),
          (np.int64, np.int64), (np.int64, np.float64), (np.float64, np.float32),
          (np.int64, np.float32)]


def shapes(ndims, m, k, n):
    a_shape = (m, k) if ndims[0] == 2 else (k,)
    b_shape = (k, n) if ndims[1] == 2 else (k,)
    return a_shape, b_shape


@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda d: f"{np.dtype(d[0])}-{np.dtype(d[1])}")
@pytest.mark.parametrize("ndims", NDIMS, ids=lambda n: f"{n[0]}d@{n[1]}d")
def test_products_match_numpy(ndims, dtypes):
    for m, k, n in SIZES:
        a_shape, b_shape = shapes(ndims, m, k, n)
        for la in LAYOUTS:
            for lb in LAYOUTS:
                a, b = operand(a_shape, dtypes[0], la), operand(b_shape, dtypes[1], lb)
                check_all(at, a, b)


@pytest.mark.parametrize("kind", ["dot", "matmul"])
@pytest.mark.parametrize("ndims", NDIMS, ids=lambda n: f"{n[0]}d@{n[1]}d")
def test_np_dot_and_np_matmul_match_numpy(kind, ndims):
    for dtype in (np.float64, np.float32, np.int64):
        for m, k, n in [(3, 4, 5), (2, 0, 3), (1, 1, 1)]:
            a_shape, b_shape = shapes(ndims, m, k, n)
            check_all(PRODUCTS[kind], values(a_shape, dtype), values(b_shape, dtype))


def test_a_large_product_uses_blas_and_matches_numpy():
    for dtype in (np.float64, np.float32):
        a, b = values((130, 70), dtype), values((70, 90), dtype)
        check_all(at, a, b)
        check_all(at, a.T.copy().T, b[:, ::-1])  # F layout, negative column stride (a copy)
        check_all(at, a, b[:, 0])
        check_all(at, b[:, 0], b.T)


def peak_bytes(run):
    """The most memory traced while `run()` runs, above what was traced before."""
    run()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        run()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def assert_product_within_rounding(got, x, y):
    """`got` is x @ y up to the rounding error a float product of inner size k may make.

    Summed in any order (BLAS blocks and uses FMA), each element of a product in a dtype
    with machine epsilon eps is within k * eps/2 * (|x| @ |y|) of the exact product, to
    first order (Higham, Accuracy and Stability of Numerical Algorithms, 3.1); its final
    rounding adds eps/2 of at most the same. The float64 reference obeys the same bound,
    so the two differ by at most 2 * k * eps * (|x| @ |y|). A relative tolerance on each
    element is wrong where terms cancel: such an element is far smaller than its terms,
    and its error scales with |x| @ |y|, not with itself.
    """
    assert got.dtype == np.result_type(x, y)
    wide_x, wide_y = x.astype(np.float64), y.astype(np.float64)
    bound = 2 * x.shape[-1] * np.finfo(got.dtype).eps * (abs(wide_x) @ abs(wide_y))
    error = abs(got - wide_x @ wide_y)
    assert np.all(error <= bound), f"error {error.max():.3g}, {np.max(error / bound):.3g} x the bound"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blas_reads_c_and_f_layouts_in_place_and_copies_the_rest(dtype):
    n = 300
    a, b, v = values((n, n), dtype), values((n, n), dtype), values(n, dtype)
    f = jit(at)
    matrix_bytes = n * n * np.dtype(dtype).itemsize
    for x, y in [(a, b), (a.T, b), (a, b.T), (a.T, b.T), (a[:, 1:], b[:, 1:].T)]:
        assert peak_bytes(lambda: f(x, y)) < 1.2 * matrix_bytes  # the result only
        assert_product_within_rounding(f(x, y), x, y)
    assert peak_bytes(lambda: f(a[:, ::-1], b)) > 1.9 * matrix_bytes  # a copy of a too
    for x, y in [(a, v), (a.T, v), (v, a), (v, a.T), (a, v[::-1]), (v[::3], a[::3, :]), (v, a[:, 1:])]:
        assert peak_bytes(lambda: f(x, y)) < 0.2 * matrix_bytes
        assert_product_within_rounding(f(x, y), x, y)
    assert peak_bytes(lambda: f(a[::2, ::2], v[::2])) > 0.2 * matrix_bytes  # a copy


def test_zero_strides_and_single_rows_or_columns():
    v = np.broadcast_to(np.arange(1.0, 5.0), (3, 4))  # row stride 0: copied for BLAS
    check_all(at, v, values((4, 2), np.float64))
    check_all(at, values((2, 3), np.float64), np.broadcast_to(np.float64(2.0), (3,)))
    big = values((6, 6), np.float64)
    check_all(at, big[:, 2:3], big[1:2, :])  # a column times a row: the outer product
    check_all(at, big[1:2, :], big[:, 2:3])
    check_all(at, big[2:3, :].T, big[:1, :])


def test_empty_results_of_dimensions_past_32_bits_need_no_blas():
    big = 2 ** 31
    check_all(at, np.ones((0, big)), np.ones((big, 0)))
    check_all(at, np.ones((big, 0)), np.ones((0, 0)))


def test_integer_products_wrap_like_numpy():
    a = np.array([[2 ** 62, 3], [5, -7]], dtype=np.int64)
    b = np.array([[4, 1], [1, 2 ** 62]], dtype=np.int64)
    check_all(at, a, b)
    check_all(at, a[0], b[:, 1])


def products_in_a_loop(A, b, steps):
    x = np.zeros_like(b)
    d = np.diag(A)
    for k in range(steps):
        x = x + (b - A @ x) / d
    return x


def mlp_forward(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0.0)
    return h @ w2 + b2


def matmuls(a, b, v):
    return a @ b, np.dot(a, v), a.T @ a, np.dot(v, v)


def chained(a, b, c):
    return a @ b @ c, (a @ b) @ c - a @ (b @ c)


def diag_of_product(a, b):
    return np.diag(a @ b, -1), np.diag(np.diag(b[0]) @ a.T)


def test_programs_with_products():
    a, b, v = values((6, 6), np.float64), values((6, 3), np.float64), values(6, np.float64)
    check_all(matmuls, a, b, v)
    check_all(matmuls, a.astype(np.float32), b.astype(np.float32), v.astype(np.float32))
    check_all(mlp_forward, values((8, 5), np.float64), values((5, 16), np.float64),
              values(16, np.float64), values((16, 3), np.float64), values(3, np.float64))
    A = values((5, 5), np.float64) + 10.0 * np.eye(5)
    check_all(products_in_a_loop, A, values(5, np.float64), 25)
    check_all(chained, a, b, values((3, 4), np.float64))
    check_all(diag_of_product, a, a[:, ::-1])


def augmented(a, b):
    c = a
    c @= b
    return c


def test_augmented_matmul_updates_in_place():
    """`c @= b` writes into the array c names (a, the caller's), as NumPy's does."""
    a, b = values((3, 3), np.float64), values((3, 3), np.float64)
    expected = a @ b
    result = jit(augmented)(a, b)
    assert result is a
    np.testing.assert_allclose(a, expected, rtol=1e-12)


# ---- errors -----------------------------------------------------------------------------------

MISMATCHED = [((3, 4), (5, 6)), ((3, 4), (5,)), ((4,), (5, 6)), ((4,), (5,)), ((2, 0), (3, 1))]


@pytest.mark.parametrize("kind", ["@", "dot", "matmul"])
@pytest.mark.parametrize("a_shape,b_shape", MISMATCHED)
def test_mismatched_shapes_raise_numpys_value_error(kind, a_shape, b_shape):
    fn = PRODUCTS[kind]
    for dtype in (np.float64, np.int64):
        a, b = np.ones(a_shape, dtype), np.ones(b_shape, dtype)
        check_all(fn, a, b)
        with pytest.raises(ValueError) as info:
            _jitted(fn)(a, b)
        try:
            fn(a, b)
        except ValueError as error:
            expected = str(error)
        text = str(info.value)
        assert text.startswith(expected), (text, expected)
        assert f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno + 1}" in text, text


def error_after_allocating(a, b, c):
    t = a @ b
    return t @ c


def test_errors_after_allocating_release_everything():
    a, b, c = np.ones((30, 40)), np.ones((40, 50)), np.ones((7, 2))
    f = jit(error_after_allocating)
    before = [sys.getrefcount(x) for x in (a, b, c)]
    grown = traced_growth(lambda: expect(ValueError, f, a, b, c))
    assert grown < 16 * 1024, grown
    assert [sys.getrefcount(x) for x in (a, b, c)] == before


def scalars(x, y):
    return x @ y


def scalar_and_array(x, a):
    return x @ a


def dot_of_scalar(x, a):
    return np.dot(x, a)


def test_products_of_numbers_are_type_errors_at_compile_time():
    with pytest.raises(TypingError, match="unsupported operand type.*for @: 'float' and 'int'"):
        jit(scalars)(1.5, 2)
    with pytest.raises(TypingError, match="a \\* b"):
        jit(scalar_and_array)(2.0, np.ones(3))
    np.testing.assert_array_equal(jit(dot_of_scalar)(2.0, np.ones(3)), np.full(3, 2.0))  # a * b


def test_unsupported_operands_are_clear_compile_errors():
    with pytest.raises(TypingError, match="0-d arrays.*not supported yet"):
        jit(at)(np.ones(()), np.ones(3))
    with pytest.raises(TypingError, match="bool arrays is not supported yet"):
        jit(at)(np.ones((2, 2), bool), np.ones((2, 2), bool))


def dot_with_out(a, b, c):
    return np.dot(a, b, out=c)


def test_unsupported_keywords_are_reported():
    with pytest.raises(CompileError, match="out="):
        jit(dot_with_out)(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)))


# ---- np.diag, np.eye ---------------------------------------------------------------------------

def diag(x):
    return np.diag(x)


def diag_k(x, k):
    return np.diag(x, k=k)


def diag_written(x):
    d = np.diag(x, 1)
    return d, d[0] if d.shape[0] > 0 else 0.0


def test_diag_of_a_vector_and_of_a_matrix():
    for dtype in (np.float64, np.float32, np.int64, np.bool_):
        v = values(4, np.float64).astype(dtype)
        A = values((4, 6), np.float64).astype(dtype)
        check_all(diag, v)
        check_all(diag, A)
        check_all(diag, A[::-1, ::2])
        check_all(diag, v[::-2])
        for k in (-5, -4, -2, -1, 0, 1, 3, 6, 7):
            check_all(diag_k, v, k)
            check_all(diag_k, A, k)
            check_all(diag_k, A.T, k)
    check_all(diag, np.zeros(0))
    check_all(diag, np.zeros((0, 3)))


def test_diag_of_a_matrix_is_a_view():
    A = values((5, 5), np.float64)
    f = jit(diag)
    d = f(A)
    assert np.shares_memory(d, A)
    np.testing.assert_array_equal(d, np.diag(A))
    del d
    before = sys.getrefcount(A)
    for _ in range(100):
        f(A)
    assert sys.getrefcount(A) == before


def eye(n):
    return np.eye(n)


def eye_all(n, m, k):
    return (np.eye(n, m, k), np.eye(n, m, k=k, dtype=np.int64), np.eye(n, M=m, dtype=bool),
            np.eye(n, None, k, np.float32))


def test_eye_matches_numpy():
    for n in (0, 1, 4):
        check_all(eye, n)
        for m in (0, 2, 5):
            for k in (-6, -1, 0, 2, 5):
                check_all(eye_all, n, m, k)
    check_all(eye, -1)  # NumPy's "negative dimensions are not allowed"


def eye_of(dtype):
    def eye_typed(n, m, k):
        return np.eye(n, m, k, dtype), np.eye(n, M=m, k=k, dtype=dtype).T, np.eye(n, dtype=dtype)
    return eye_typed


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32, np.int64, np.uint64, np.float32, np.float64,
                                   np.complex64, np.complex128])
def test_eye_of_every_dtype_is_numpys_bit_for_bit(dtype):
    """The runtime's astjit.eye.<dtype> (one per dtype, shape and k its arguments) stores
    NumPy's ones on every diagonal of every shape, past the edges too."""
    expected, compiled = eye_of(dtype), jit(eye_of(dtype))
    for n in (0, 1, 3, 5):
        for m in (0, 1, 4, 7):
            for k in range(-8, 9):
                for want, got in zip(expected(n, m, k), compiled(n, m, k)):
                    assert (got.dtype, got.shape) == (want.dtype, want.shape), (n, m, k)
                    assert got.tobytes() == want.tobytes(), (n, m, k)


# ---- ownership and memory ------------------------------------------------------------------------

def traced_growth(run, repeat=200):
    run()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(repeat):
            run()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


def temporaries(a, b, v):
    return a[:, ::2] @ b[::2], a.T @ v[::2]


@pytest.mark.parametrize("fn,make", [
    (matmuls, lambda: (values((6, 6), np.float64), values((6, 3), np.float64),
                       values(6, np.float64))),
    (temporaries, lambda: (values((6, 8), np.float64), values((8, 3), np.float64),
                           values(12, np.float64))),
    (temporaries, lambda: (values((6, 8), np.int64), values((8, 3), np.float32),
                           values(12, np.float32))),
    (products_in_a_loop, lambda: (values((5, 5), np.float64) + 10 * np.eye(5),
                                  values(5, np.float64), 20)),
    (eye_all, lambda: (4, 5, 1)),
    (diag_of_product, lambda: (values((6, 6), np.float64), values((6, 6), np.float64))),
    (diag_written, lambda: (values((4, 4), np.float64),)),
])
def test_no_leaks(fn, make):
    args = make()
    f = jit(fn)
    arrays_ = [a for a in args if isinstance(a, np.ndarray)]
    result = f(*args)
    expected = fn(*args)
    assert_close(expected, result, fn.__name__)
    del result
    before = [sys.getrefcount(a) for a in arrays_]
    assert traced_growth(lambda: f(*args)) < 16 * 1024
    gc.collect()
    assert [sys.getrefcount(a) for a in arrays_] == before
    results = f(*args)
    results = results if isinstance(results, tuple) else (results,)
    for r in results:
        if isinstance(r, np.ndarray) and not any(np.shares_memory(r, a) for a in arrays_):
            assert sys.getrefcount(r) == 3  # the results tuple, r, getrefcount's argument


def test_importing_astjit_does_not_import_scipy():
    code = "import sys, astjit, numpy\nassert 'scipy' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)
