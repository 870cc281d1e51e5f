"""np.matmul of stacks, np.dot, np.outer, np.trace, np.einsum, np.linalg.norm/solve/inv/det/
cholesky against NumPy: random shapes (batch axes that broadcast, 1-d operands, empty
axes), strided and transposed inputs, dtypes, NumPy's errors (LinAlgError class and
message), and gradients and tangents against central differences."""
import numpy as np
import pytest

import astjit
from astjit import jit
from astjit.errors import CompileError

RNG = np.random.default_rng(0)


def same(got, expected, rtol=1e-10):
    assert np.shape(got) == np.shape(expected), (np.shape(got), np.shape(expected))
    assert isinstance(got, np.generic) == isinstance(expected, np.generic), (got, expected)
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (type(got), type(expected))
    assert isinstance(got, np.ndarray) == isinstance(expected, np.ndarray)
    tol = 1e-4 if np.asarray(expected).dtype == np.float32 else rtol
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def laid_out(x, how):
    """x itself, a transposed copy's transpose, or a strided view holding x's values."""
    if how == "transposed" and x.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    if how == "strided":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    return x


# ---- batched matmul ----------------------------------------------------------------------

def product(a, b):
    return a @ b


def test_stacked_products_match_numpy():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @st.composite
    def cases(draw):
        m, k, n = (draw(st.integers(0 if draw(st.booleans()) else 1, 4)) for _ in range(3))
        batch = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
        a_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
        b_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
        a_shape = (k,) if draw(st.booleans()) and not a_batch else (*a_batch, m, k)
        b_shape = (k,) if draw(st.booleans()) and not b_batch else (*b_batch, k, n)
        if len(a_shape) <= 2 and len(b_shape) <= 2:
            a_shape = (2, *a_shape) if len(a_shape) == 2 else (2, m, k)
        dtype = draw(st.sampled_from((np.float64, np.float32, np.int64)))
        how = draw(st.sampled_from(("plain", "transposed", "strided")))
        seed = draw(st.integers(0, 2 ** 16))
        return a_shape, b_shape, dtype, how, seed

    @hypothesis.settings(max_examples=30, deadline=None, database=None, derandomize=True)
    @hypothesis.given(cases())
    def check(case):
        a_shape, b_shape, dtype, how, seed = case
        rng = np.random.default_rng(seed)
        a, b = ((rng.standard_normal(s) * 3).astype(dtype) for s in (a_shape, b_shape))
        a = laid_out(a, how)
        same(jit(product)(a, b), a @ b)

    check()


def test_mixed_dtypes_and_broadcast_batches():
    a = RNG.standard_normal((2, 1, 3, 5)).astype(np.float32)
    b = RNG.standard_normal((4, 5, 2))
    same(jit(product)(a, b), a @ b)
    same(jit(product)(np.arange(30).reshape((2, 3, 5)), b[0]), np.arange(30).reshape((2, 3, 5)) @ b[0])


def test_stacked_product_errors_are_numpys():
    with pytest.raises(ValueError, match="could not be broadcast"):
        jit(product)(np.ones((2, 3, 5)), np.ones((3, 5, 2)))
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        jit(product)(np.ones((2, 3, 5)), np.ones((2, 4, 2)))


# ---- dot, outer, trace, einsum --------------------------------------------------------------

def dot(a, b):
    return np.dot(a, b)


def outer(a, b):
    return np.outer(a, b)


@pytest.mark.parametrize("a_shape,b_shape", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                             ((2, 3), (3, 4)), ((2, 4, 3), (3,)),
                                             ((2, 3), (5, 3, 4)), ((2, 4, 3), (5, 3, 2)),
                                             ((0, 3), (2, 3, 4))])
def test_dot_matches_numpy(a_shape, b_shape):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    same(jit(dot)(a, b), np.dot(a, b))
    same(jit(dot)(2.5, b), np.dot(2.5, b))


def dot_of_ravel(v, w):
    return np.dot(np.ravel(v), w), np.ravel(v) @ np.ravel(w)


def test_dot_of_a_raveled_strided_vector_is_numpys():
    """np.ravel of a strided vector is a contiguous copy, and BLAS sums a contiguous
    vector in another order than a strided one: the compiled dot reads the copy, as
    NumPy's does (the shapes pass keeps the ravel a matmul reads), for the same bits."""
    rng = np.random.default_rng(5)
    compiled = jit(dot_of_ravel)
    for n in (1, 7, 33, 130, 1001):
        x, w = rng.standard_normal(3 * n), rng.standard_normal(n)
        for v in (x[::3], x[::-3], x[:n]):
            for got, expected in zip(compiled(v, w), dot_of_ravel(v, w)):
                assert got == expected, (n, v.strides)


def test_outer_flattens_and_promotes():
    a, b = RNG.standard_normal((2, 3)), np.arange(4)
    same(jit(outer)(a, b), np.outer(a, b))
    same(jit(outer)(b, b), np.outer(b, b))


def traces(a):
    return np.trace(a), np.trace(a, 1), np.trace(a, -1), np.trace(a, 0, 1, 0)


def traces_3d(a):
    return np.trace(a), np.trace(a, 1, 1, 2), np.trace(a, -1, 2, 0)


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 2), (0, 3)])
def test_trace_matches_numpy(shape):
    a = RNG.standard_normal(shape)
    for got, expected in zip(jit(traces)(a), traces(a)):
        same(got, expected)
    ints = np.arange(np.prod(shape)).reshape(shape)
    for got, expected in zip(jit(traces)(ints), traces(ints)):
        same(got, expected)


def test_trace_of_stacks():
    a = RNG.standard_normal((3, 4, 5))
    for got, expected in zip(jit(traces_3d)(a), traces_3d(a)):
        same(got, expected)


EINSUMS = [("ij,jk->ik", [(3, 4), (4, 2)]), ("bij,bjk->bik", [(5, 2, 3), (5, 3, 2)]),
           ("i,i->", [(4,), (4,)]), ("i,i", [(4,), (4,)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]),
           ("ij->j", [(2, 3)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("i,j->ij", [(2,), (3,)]),
           ("ij,kj->ik", [(3, 4), (2, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
           ("bij,jk->bki", [(2, 3, 4), (4, 5)]), ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
           ("ij,jk", [(3, 4), (4, 2)]), ("i,jk->", [(2,), (3, 4)]), ("ab,bc->ca", [(0, 3), (3, 2)])]


def einsum_1(x):
    return np.einsum(SUBSCRIPTS, x)


def einsum_2(x, y):
    return np.einsum(SUBSCRIPTS, x, y)


def einsum_3(x, y, z):
    return np.einsum(SUBSCRIPTS, x, y, z)


@pytest.mark.parametrize("subscripts,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_matches_numpy(subscripts, shapes):
    global SUBSCRIPTS
    SUBSCRIPTS = subscripts
    fn = [einsum_1, einsum_2, einsum_3][len(shapes) - 1]
    args = [laid_out(RNG.standard_normal(s), "transposed" if k else "plain")
            for k, s in enumerate(shapes)]
    same(jit(fn)(*args), np.einsum(subscripts, *args))


def einsum_ellipsis(x):
    return np.einsum("...ij->...ji", x)


def einsum_diagonal(x):
    return np.einsum("ii->i", x)


def test_einsum_refusals_are_clear():
    with pytest.raises(CompileError, match="'...' is not supported yet"):
        jit(einsum_ellipsis)(np.ones((2, 2)))
    with pytest.raises(CompileError, match="repeated in one operand"):
        jit(einsum_diagonal)(np.ones((2, 2)))


# ---- norm ---------------------------------------------------------------------------------

NORMS = [(None, None, False), (None, None, True), (2, None, False), (1, None, False),
         (np.inf, None, False), (-np.inf, None, False), (0, None, False), (3, None, False),
         (0.5, None, False), (None, 0, False), (None, -1, True), (1, 1, False),
         (np.inf, 0, True), ("fro", None, False), ("fro", (1, 0), True), (1, (0, 1), False),
         (-1, None, False), (np.inf, (1, 0), False), (-np.inf, None, True)]


def norm(x):
    return np.linalg.norm(x, ORD, AXIS, KEEP)


@pytest.mark.parametrize("ord_,axis,keepdims", NORMS, ids=[str(n) for n in NORMS])
def test_norm_matches_numpy(ord_, axis, keepdims):
    global ORD, AXIS, KEEP
    ORD, AXIS, KEEP = ord_, axis, keepdims
    for shape in ((5,), (3, 4)):
        x = RNG.standard_normal(shape)
        x[0] = 0.0
        if (isinstance(ord_, str) or isinstance(axis, tuple)) and len(shape) == 1:
            continue
        if len(shape) == 1 and isinstance(axis, int) and axis not in (0, -1):
            continue
        if len(shape) == 2 and axis is None and ord_ not in (None, "fro", 1, -1, np.inf, -np.inf):
            continue  # NumPy: a matrix norm (the SVD's, or no such order)
        same(jit(norm)(laid_out(x, "strided")), np.linalg.norm(x, ord_, axis, keepdims))
        for z in (x + 1j * RNG.standard_normal(shape), (x - 2j * x).astype(np.complex64)):
            same(jit(norm)(z), np.linalg.norm(z, ord_, axis, keepdims))  # |z|, of z's real type
    f32 = RNG.standard_normal((3, 4)).astype(np.float32)
    if axis is not None or ord_ in (None, "fro", 1, -1, np.inf, -np.inf):
        same(jit(norm)(f32), np.linalg.norm(f32, ord_, axis, keepdims))
    ints = np.arange(-3, 3)
    if axis in (None, 0, -1) and not isinstance(ord_, str):
        AXIS = None if axis is None else 0
        same(jit(norm)(ints), np.linalg.norm(ints, ord_, AXIS, keepdims))


def whole_norm(x):
    return np.linalg.norm(x)


def whole_norm_kept(x):
    return np.linalg.norm(x, keepdims=True)


def frobenius_norm(x):
    return np.linalg.norm(x, "f")


def vector_two_norm(x):
    return np.linalg.norm(x, 2)


def c_ordered(x):
    """x, and views of it whose elements np.ravel reads in memory order (C order)."""
    views = [x]
    if x.ndim == 1:
        views += [x[::2], x[::-1]]
    if x.ndim >= 2:
        views += [x[::2], x[:, ::2], x[::-1], x[:, ::-1]]
    return views


def test_norm_of_the_whole_array_is_numpys_dot():
    """NumPy's norm of all of x (ord None; 'fro' of a matrix, 2 of a vector) is
    sqrt(dot(ravel(x), ravel(x))), BLAS's dot: the same bits for every dtype and layout
    whose ravel reads memory in C order, strided and reversed views too (their ravel is
    a contiguous copy: BLAS sums a strided vector in another order)."""
    rng = np.random.default_rng(3)
    compiled = {fn: jit(fn) for fn in (whole_norm, whole_norm_kept, frobenius_norm,
                                       vector_two_norm)}
    for shape in ((0,), (1,), (7,), (33,), (20001,), (0, 3), (1, 1), (64, 33), (5, 6, 17)):
        x = rng.standard_normal(shape) * 3
        z = x + 1j * rng.standard_normal(shape)
        for a in (x, x.astype(np.float32), z, z.astype(np.complex64), (x * 4).astype(np.int64),
                  x > 0):
            for fn, compiled_fn in compiled.items():
                if fn is frobenius_norm and len(shape) != 2 or \
                        fn is vector_two_norm and len(shape) != 1:
                    continue
                for view in c_ordered(a):
                    got, expected = compiled_fn(view), fn(view)
                    assert type(got) is type(expected) and got.dtype == expected.dtype
                    assert np.shape(got) == np.shape(expected)
                    assert np.array_equal(got, expected), (fn.__name__, shape, a.dtype)
    # Fortran order: NumPy reads memory order, compiled code C order (the same sum)
    f = np.asfortranarray(rng.standard_normal((30, 40)))
    for fn in (whole_norm, frobenius_norm):
        same(compiled[fn](f), fn(f))
        same(compiled[fn](f.T), fn(f.T))


def test_norm_of_a_number_and_of_empty_arrays():
    compiled = {fn: jit(fn) for fn in (whole_norm, whole_norm_kept)}
    for x in (np.float64(-3.0), -3.0, 2, True, np.array(-2.5), np.zeros((0, 3)),
              np.zeros((2, 0, 3), np.complex64)):
        for fn, compiled_fn in compiled.items():
            got, expected = compiled_fn(x), fn(x)
            assert type(got) is type(expected) and np.shape(got) == np.shape(expected)
            assert np.array_equal(got, expected)


def largest_norms(x):
    return (np.linalg.norm(x, np.inf), np.linalg.norm(x, 1), np.linalg.norm(x, np.inf, 1),
            np.linalg.norm(x, np.inf, 0, True), np.linalg.norm(x, 1, (1, 0), True))


def smallest_norm(x):
    return np.linalg.norm(x, -np.inf)


def test_the_max_norms_of_empty_axes_are_zero_as_numpys():
    """NumPy takes the max of an inf or 1 norm with `initial=0`: 0 for an empty axis (a NaN
    still propagates), where the min of the -inf norm raises its ValueError."""
    compiled = jit(largest_norms)
    for x in (np.zeros((0, 3)), np.zeros((3, 0)), np.zeros((0, 0)),
              np.array([[1.0, np.nan], [-4.0, 2.0]]), RNG.standard_normal((3, 4))):
        for got, expected in zip(compiled(x), largest_norms(x)):
            assert np.shape(got) == np.shape(expected) and got.dtype == expected.dtype
            assert np.array_equal(got, expected, equal_nan=True), (x.shape, got, expected)
    with pytest.raises(ValueError, match="zero-size array"):
        smallest_norm(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="zero-size array"):
        jit(smallest_norm)(np.zeros((0, 3)))


def matrix_two_norm(x):
    return np.linalg.norm(x, 2)


def test_norms_that_need_singular_values_are_refused():
    with pytest.raises(CompileError, match="singular values"):
        jit(matrix_two_norm)(np.ones((2, 2)))


# ---- solve, inv, det, cholesky ---------------------------------------------------------------

def lapack_functions(a, b):
    s = a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])
    return np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a, b), np.linalg.cholesky(s)


def solve(a, b):
    return np.linalg.solve(a, b)


def test_lapack_functions_match_numpy():
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @st.composite
    def cases(draw):
        n = draw(st.integers(0, 5))
        batch = tuple(draw(st.integers(0 if draw(st.booleans()) else 1, 3))
                      for _ in range(draw(st.integers(0, 2))))
        vector = draw(st.booleans())
        b_shape = (n,) if vector else (*batch[draw(st.integers(0, len(batch))):], n,
                                       draw(st.integers(1, 3)))
        dtype = draw(st.sampled_from((np.float64, np.float32, np.int64)))
        how = draw(st.sampled_from(("plain", "transposed", "strided")))
        return (*batch, n, n), b_shape, dtype, how, draw(st.integers(0, 2 ** 16))

    @hypothesis.settings(max_examples=20, deadline=None, database=None, derandomize=True)
    @hypothesis.given(cases())
    def check(case):
        a_shape, b_shape, dtype, how, seed = case
        rng = np.random.default_rng(seed)
        n = a_shape[-1]
        a = (rng.standard_normal(a_shape) * 3 + 4 * n * np.eye(n)).astype(dtype)
        b = (rng.standard_normal(b_shape) * 3).astype(dtype)
        a = laid_out(a, how)
        keep = a.copy()
        for got, expected in zip(jit(lapack_functions)(a, b), lapack_functions(a, b)):
            same(got, expected, rtol=1e-9)
        np.testing.assert_array_equal(a, keep)  # LAPACK overwrote a copy

    check()


def det(a):
    return np.linalg.det(a)


def inv(a):
    return np.linalg.inv(a)


def cholesky(a):
    return np.linalg.cholesky(a)


def cholesky_upper(a):
    return np.linalg.cholesky(a, upper=True)


def test_det_of_singular_and_permuted_matrices():
    for a in (np.ones((3, 3)), np.zeros((2, 2)), np.eye(4)[[1, 0, 3, 2]], np.eye(3)[[1, 2, 0]],
              np.zeros((0, 0)), -np.eye(3), np.array([[0.0, 2.0], [3.0, 0.0]])):
        same(jit(det)(a), np.linalg.det(a))
    stack = np.stack([np.ones((2, 2)), np.eye(2) * 3])
    same(jit(det)(stack), np.linalg.det(stack))


def test_cholesky_reads_the_lower_triangle_only():
    s = np.array([[4.0, 99.0], [2.0, 3.0]])
    same(jit(cholesky)(s), np.linalg.cholesky(s))
    same(jit(cholesky_upper)(s.T), np.linalg.cholesky(s.T, upper=True))


@pytest.mark.parametrize("fn,args,exc,message", [
    (inv, (np.ones((3, 3)),), np.linalg.LinAlgError, "Singular matrix"),
    (inv, (np.stack([np.eye(2), np.zeros((2, 2))]),), np.linalg.LinAlgError, "Singular matrix"),
    (solve, (np.ones((2, 2)), np.ones(2)), np.linalg.LinAlgError, "Singular matrix"),
    (cholesky, (-np.eye(3),), np.linalg.LinAlgError, "Matrix is not positive definite"),
    (inv, (np.ones((2, 3)),), np.linalg.LinAlgError, "Last 2 dimensions of the array must be square"),
    (det, (np.ones((2, 3, 4)),), np.linalg.LinAlgError, "Last 2 dimensions of the array must be square"),
    (solve, (np.eye(3), np.ones(2)), ValueError, "mismatch in its core dimension 0"),
    (solve, (np.ones((2, 3, 3)), np.ones((3, 3, 1))), ValueError, "broadcast"),
], ids=["inv", "inv-stack", "solve", "cholesky", "not-square", "det-not-square", "solve-sizes",
        "solve-batch"])
def test_errors_are_numpys(fn, args, exc, message):
    with pytest.raises(exc, match=message) as expected:
        fn(*args)
    with pytest.raises(exc, match=message) as got:
        jit(fn)(*args)
    assert type(got.value) is type(expected.value)
    assert str(got.value).startswith(str(expected.value)) or exc is ValueError


def test_vectors_are_refused_at_compile_time():
    with pytest.raises(CompileError, match="1-dimensional array given"):
        jit(inv)(np.ones(3))


# ---- gradients and tangents ------------------------------------------------------------------

def numeric_gradient(fn, args, i, h=1e-6):
    args = [np.array(a, dtype=float) for a in args]
    x, g = args[i], np.zeros_like(args[i])
    for idx in np.ndindex(x.shape):
        keep = x[idx]
        x[idx] = keep + h
        up = fn(*args)
        x[idx] = keep - h
        down = fn(*args)
        x[idx] = keep
        g[idx] = (up - down) / (2 * h)
    return g


def loss_products(a, b):
    return np.sum(np.sin(a @ b)) + np.sum(np.dot(a, b[0]) ** 2) + np.sum(np.outer(a[0], b) ** 2)


def loss_traces(a, b):
    return np.trace(a[0]) ** 2 + np.trace(a[1], 1) + np.sum(np.trace(a, 0, 1, 2) ** 3)


def loss_einsum(a, b):
    return np.sum(np.einsum("bij,bjk->bik", a, b) ** 2) + np.einsum("bij,bij->", a, a) + \
        np.sum(np.einsum("bij->jb", a) ** 3)


def loss_norms(a, b):
    return np.linalg.norm(a) + np.sum(np.linalg.norm(a, axis=1)) + np.linalg.norm(b[0], 1) + \
        np.linalg.norm(a[0], np.inf) + np.linalg.norm(b[1, 0], 3) + np.linalg.norm(a[1], "fro")


def loss_lapack(a, b):
    s = a @ np.swapaxes(a, 1, 2) + 3.0 * np.eye(3)
    return np.sum(np.linalg.inv(a) * a) + np.sum(np.linalg.det(a) ** 2) + \
        np.sum(np.linalg.solve(a, b) ** 2) + np.sum(np.linalg.solve(a[0], b[0, :, 0]) ** 2) + \
        np.sum(np.linalg.cholesky(s) * np.arange(9.0).reshape((3, 3)))


LOSSES = [loss_products, loss_traces, loss_einsum, loss_norms, loss_lapack]


def loss_arguments():
    a = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    return a, RNG.standard_normal((2, 3, 3))


@pytest.mark.parametrize("fn", LOSSES, ids=[f.__name__ for f in LOSSES])
def test_gradients_match_finite_differences(fn):
    args = loss_arguments()
    got = astjit.grad(fn, argnums=(0, 1))(*args)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, numeric_gradient(fn, args, i), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", LOSSES, ids=[f.__name__ for f in LOSSES])
def test_tangents_match_finite_differences(fn):
    args = loss_arguments()
    tangents = tuple(RNG.standard_normal(a.shape) for a in args)
    _, tangent = astjit.jvp(fn, args, tangents)
    h = 1e-6
    up = fn(*[a + h * t for a, t in zip(args, tangents)])
    down = fn(*[a - h * t for a, t in zip(args, tangents)])
    np.testing.assert_allclose(tangent, (up - down) / (2 * h), rtol=1e-5, atol=1e-6)


def test_interpreter_agrees():
    from astjit.frontend import lower_function
    from astjit.ir.interp import interpret

    a, b = loss_arguments()
    module = lower_function(loss_lapack)
    assert np.isclose(interpret(module, [a, b]), loss_lapack(a, b))


def everything(a, b):
    return (a @ b, np.einsum("bij,bjk->bik", a, b), np.linalg.inv(a), np.linalg.det(a),
            np.linalg.solve(a, b), np.linalg.norm(a, axis=2), np.trace(a[0]), np.outer(a[0], b[1]))


def test_on_the_gpu_simulator():
    a, b = loss_arguments()
    for got, expected in zip(jit(everything, target="cuda-sim")(a, b), everything(a, b)):
        same(got, expected)
