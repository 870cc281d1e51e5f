"""Matrix products of complex arrays (issue 14): `@`, np.matmul, np.dot, np.outer, np.einsum
on complex64 and complex128 (BLAS's zgemm/zgemv, cgemm/cgemv), against NumPy: matrix and
vector operands, strided, transposed and reversed ones (copied where BLAS cannot read
them), a real operand with a complex one (converted as NumPy converts it), stacks, empty
sums."""
import numpy as np
import pytest

from astjit import jit


def products(a, b, v, w, r):
    return (a @ b, a @ v, v @ a.T, v @ w, np.dot(a, b), np.dot(v, w), np.matmul(a, r),
            r.T @ a.T, v @ v[::-1], np.outer(v, w), a[:, ::2] @ b[::2], np.einsum("ij,jk->ik", a, b),
            np.einsum("i,i->", v, w))


PRODUCTS_JIT = jit(products)


def random_complex(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def assert_like(got, want, dtype):
    rtol = 1e-4 if dtype == np.complex64 else 1e-12
    for g, w in zip(got, want):
        assert type(g) is type(w)
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_products_like_numpy(dtype):
    rng = np.random.default_rng(0)
    a, b = random_complex(rng, (3, 4), dtype), random_complex(rng, (4, 5), dtype)
    v, w = random_complex(rng, 4, dtype), random_complex(rng, 4, dtype)
    r = rng.standard_normal((4, 2))
    args = (a, b, v, w, r)
    assert_like(PRODUCTS_JIT(*args), products(*args), dtype)


def stacked(a, b, c):
    return a @ b, a @ c, np.matmul(c.T, b)


def test_stacked_and_empty_products_like_numpy():
    """Stacks broadcast their batch axes; a sum of nothing is 0j (BLAS not called)."""
    rng = np.random.default_rng(1)
    a, b = random_complex(rng, (2, 3, 4), np.complex128), random_complex(rng, (2, 4, 3), np.complex128)
    c = random_complex(rng, (4, 3), np.complex128)
    assert_like(jit(stacked)(a, b, c), stacked(a, b, c), np.complex128)
    a, b, c = np.zeros((1, 2, 0), complex), np.zeros((0, 3), complex), np.zeros((0, 2), complex)
    assert_like(jit(stacked)(a, b, c), stacked(a, b, c), np.complex128)
