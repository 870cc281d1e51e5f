"""Whole-graph optimizations on array code: CSE of array expressions (only where no one can
tell), algebraic simplification, dead kernel code; each checked against NumPy and in the dump."""
import re

import numpy as np
import pytest

from astjit import grad, hessian, jit


def repeated(x, y):
    a = -(-x) * 1.0  # noqa: B002 - a double negation to simplify away
    b = (a.T).T
    return np.sum(b * y) + np.sum(b * y)


def test_repeated_array_expressions_become_one_kernel():
    x, y = np.arange(12.0).reshape(3, 4), np.ones((3, 4)) * 0.5
    assert jit(repeated)(x, y) == repeated(x, y)
    text = jit(repeated).ir(x, y, stage="optimized")
    assert text.count("fused") == 1 and "array_transpose" not in text
    assert "neg" not in text  # -(-x) went, and the dead kernel code with it


def sums_around_a_write(y):
    before = np.sum(y)
    y[0] = 5.0
    return before, np.sum(y)


def test_no_merging_across_a_write():
    y = np.zeros(3)
    assert jit(sums_around_a_write)(y) == (0.0, 5.0)


def both_returned(x):
    return x * 2.0, x * 2.0


def one_written(x):
    a = x * 2.0
    b = x * 2.0
    a[0] = -1.0
    return np.sum(b)


def test_arrays_someone_can_tell_apart_stay_apart():
    x = np.arange(3.0)
    a, b = jit(both_returned)(x)
    assert a is not b
    a[0] = 99.0
    assert b[0] == 0.0
    assert jit(one_written)(x) == 6.0


def squares_around_other_writes(x):
    h = np.tanh(x)
    acc = np.zeros(2)
    acc[0] = np.sum(h * h)  # writes into acc, which shares no memory with h
    acc[1] = np.sum(h * h)
    return acc


def squares_around_a_write_into_them(x):
    h = x * 1.5
    before = np.sum(h * h)
    v = h[1:]
    v[0] = 10.0  # a write into a view of h
    return before, np.sum(h * h)


def squares_around_a_write_into_an_argument(x, y):
    before = np.sum(x * x)
    y[0] = 10.0  # y may be x
    return before, np.sum(x * x)


def test_merging_across_writes_into_other_arrays_only():
    x = np.arange(3.0)
    np.testing.assert_allclose(jit(squares_around_other_writes)(x), squares_around_other_writes(x))
    assert jit(squares_around_other_writes).ir(x, stage="optimized").count(" mul ") == 1
    assert jit(squares_around_a_write_into_them)(x) == squares_around_a_write_into_them(x)
    x1, x2 = np.arange(3.0), np.arange(3.0)
    assert jit(squares_around_a_write_into_an_argument)(x1, x1) == \
        squares_around_a_write_into_an_argument(x2, x2)


def unused_float_work(x, y):
    unused = np.sin(x) * 2.0 - x  # noqa: F841 - x with itself broadcasts
    return np.sum(y)


def unused_sum_of_two(x, y):
    unused = x + y  # noqa: F841 - may not broadcast: its ValueError stays
    return np.sum(x)


def test_unused_array_work_goes_unless_it_may_raise():
    x, y = np.arange(3.0), np.arange(4.0)
    assert jit(unused_float_work)(x, y) == 6.0
    assert "sin" not in jit(unused_float_work).ir(x, y, stage="optimized")
    with pytest.raises(ValueError, match="could not be broadcast"):
        jit(unused_sum_of_two)(x, y)
    assert jit(unused_sum_of_two)(x, x) == 3.0


def tanh_and_derivative(x, m):
    h = np.tanh(x)
    return h, (1.0 - h * h) * m


def test_a_group_not_exact_splits_by_the_arrays_its_members_read():
    x, m = np.linspace(-1.0, 1.0, 4), np.arange(12.0).reshape(3, 4)
    got, want = jit(tanh_and_derivative)(x, m), tanh_and_derivative(x, m)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-15)
    text = jit(tanh_and_derivative).ir(x, m, stage="optimized")
    assert text.count("= fused") == 2  # tanh, h * h and 1 - h * h in one loop over x


def sliced_bias(w, v, y):
    s, a, b = w[2:4], v.reshape((3, 2)), y.reshape((5, 3, 2))
    h = np.tanh(a + s)  # s has 2 elements or 1 wherever this ran
    return h, (b + s) * h


@pytest.mark.parametrize("n", [4, 3])
def test_a_part_read_by_one_other_joins_it_where_a_literal_length_settles_a_slice(n):
    """`b + s` is read by the product with `h` alone: one kernel with it, whose space, the
    broadcast of (5, 3, 2), s and (3, 2), is the product's shape wherever it runs."""
    w, v, y = np.linspace(-1.0, 1.0, n), np.linspace(0.0, 1.0, 6), np.linspace(1.0, 2.0, 30)
    for got, want in zip(jit(sliced_bias)(w, v, y), sliced_bias(w, v, y)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    assert jit(sliced_bias).ir(w, v, y, stage="optimized").count("= fused") == 2


def product_after_its_check(x, W):
    p = x @ W
    unused = W.T @ x  # noqa: F841 - W's rows are x's length, x @ W checked it
    return np.sum(p)


def product_before_its_check(x, W):
    unused = W.T @ x  # noqa: F841 - may raise: it stays, and raises first
    return np.sum(x @ W)


def test_unused_products_go_where_an_earlier_check_proves_their_lengths():
    x, W = np.arange(3.0), np.ones((3, 2))
    assert jit(product_after_its_check)(x, W) == product_after_its_check(x, W)
    assert jit(product_before_its_check)(x, W) == product_before_its_check(x, W)
    assert jit(product_after_its_check).ir(x, W, stage="optimized").count(" matmul ") == 1
    assert jit(product_before_its_check).ir(x, W, stage="optimized").count(" matmul ") == 2
    for fn in (product_after_its_check, product_before_its_check):
        with pytest.raises(ValueError) as numpy_error:
            fn(x, np.ones((4, 2)))
        with pytest.raises(ValueError, match="matmul") as compiled_error:
            jit(fn)(x, np.ones((4, 2)))
        assert str(numpy_error.value) in str(compiled_error.value)


def small_mlp_loss(w, x):
    h = np.tanh(x @ w[:6].reshape(3, 2))
    return np.sum(h[:, 0] * w[6:8][0])


def test_hessian_does_not_accumulate_the_gradient_it_does_not_return():
    """Forward over reverse mode computes the gradient along with its tangents; the writes
    accumulating it into a new array nobody reads (add_at, add_into) go, with their work."""
    w, x = np.linspace(-0.5, 0.7, 8), np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    hess = jit(hessian(small_mlp_loss))
    optimized = hess.ir(w, x, stage="optimized")
    assert " add_at " not in optimized
    assert ": array<f64, 1>" not in "".join(line for line in optimized.splitlines()
                                           if " add_into " in line)
    g, eps = jit(grad(small_mlp_loss)), 1e-6
    steps = np.eye(8) * eps
    differences = np.stack([(g(w + e, x) - g(w - e, x)) / (2 * eps) for e in steps], axis=1)
    np.testing.assert_allclose(hess(w, x), differences, atol=1e-7)


def like_of_a_square(y):
    z = np.zeros_like(y ** 2)  # y ** 2 only for its shape and dtype: y's
    z[0] = 1.0
    return z


def test_a_new_array_like_a_result_takes_its_operand_shape():
    y = np.arange(3.0)
    np.testing.assert_array_equal(jit(like_of_a_square)(y), like_of_a_square(y))
    assert " pow " not in jit(like_of_a_square).ir(y, stage="optimized")


def unused_reshape_to(x, n):
    unused = np.ones(12).reshape(n)  # noqa: F841 - n may not be 12: its ValueError stays
    return np.sum(x)


def test_an_unused_reshape_to_a_length_only_known_at_run_time_stays():
    x = np.arange(12.0)
    assert jit(unused_reshape_to)(x, 12) == unused_reshape_to(x, 12)
    with pytest.raises(ValueError, match="reshape"):
        jit(unused_reshape_to)(x, 13)


def unused_broadcast_to(x, n):
    unused = np.broadcast_to(np.ones(1), (n, 1))  # noqa: F841 - n may be negative: it raises
    return np.sum(x)


def test_an_unused_broadcast_to_a_length_of_unknown_sign_stays():
    x = np.arange(3.0)
    assert jit(unused_broadcast_to)(x, 2) == unused_broadcast_to(x, 2)
    with pytest.raises(ValueError):
        unused_broadcast_to(x, -2)
    with pytest.raises(ValueError):
        jit(unused_broadcast_to)(x, -2)


def einsum_product(a):
    return np.einsum("ij,jk->ik", a, a)


def reshaped_product(a, b):
    m = a @ b
    return m.reshape(a.shape[0], b.shape[1]) + m.reshape(m.shape[0], m.shape[1])


def test_reshapes_to_their_own_shapes_are_the_arrays():
    """np.einsum's operands and result, reshaped to the shapes they have, are the arrays
    themselves (passes/shapes.py): the product alone; a new array also used otherwise
    keeps its views only read."""
    a = np.arange(12.0).reshape(3, 4)[:, :3].copy()
    f = jit(einsum_product)
    np.testing.assert_allclose(f(a), einsum_product(a), rtol=1e-14)
    assert "array_reshape" not in f.ir(a, stage="optimized")
    g = jit(reshaped_product)
    np.testing.assert_allclose(g(a, a.T), reshaped_product(a, a.T), rtol=1e-14)
    assert "array_reshape" not in g.ir(a, a.T, stage="optimized")


def outer_of_rows(a):
    return np.outer(a[0], a[1])


def outer_of_columns(a):
    return np.outer(a[:, 0], a[:, 1]) + 1.0


def ravel_then_write(x):
    r = np.ravel(x)
    x[0] = 100.0
    return r * 2.0


def test_a_flattened_vector_only_read_is_the_vector():
    """np.outer ravels its operands: of a vector, read through a new axis by the product
    alone, that is the vector itself (passes/shapes.py), strided or not; where the graph
    writes an array, np.ravel's copy of a strided vector stays a copy."""
    a = np.arange(20.0).reshape(4, 5)
    for fn in (outer_of_rows, outer_of_columns):
        f = jit(fn)
        np.testing.assert_array_equal(f(a), fn(a))
        assert "array_reshape" not in f.ir(a, stage="optimized")
    x, expected = np.arange(10.0)[::2], ravel_then_write(np.arange(10.0)[::2])
    g = jit(ravel_then_write)
    np.testing.assert_array_equal(g(x), expected)
    assert "array_reshape" in g.ir(x, stage="optimized")


def offset_loss(w, x, y):
    return np.mean((x @ w + w[0] - y) ** 2)


def _unread_kernel_params(text):
    """The kernel parameters of a printed graph that their kernel's body never names."""
    lines, unread = text.splitlines(), []
    for i, line in enumerate(lines):
        header = re.match(r"(\s*)kernel \((.*)\) \{", line)
        if header:
            indent, body = header.group(1), []
            for later in lines[i + 1:]:
                if later.startswith(indent + "}"):
                    break
                body.append(later)
            unread += [name for name in re.findall(r"(%[\w.]+):", header.group(2))
                       if not re.search(re.escape(name) + r"\b", "\n".join(body))]
    return unread


def _offset_loss_arguments():
    return np.linspace(-0.5, 0.7, 3), np.linspace(-1.0, 1.0, 15).reshape(5, 3), np.ones(5)


def test_an_adjoint_summed_to_an_elementwise_result_keeps_no_kernel_for_its_shape():
    """`sum_to_like(g, t + w[0])` reads only the shape of `t + w[0]`, `t`'s: the sum is
    computed in the kernel that subtracts y, not in one of its own."""
    w, x, y = _offset_loss_arguments()
    g = jit(grad(offset_loss))
    assert g.ir(w, x, y, stage="optimized").count("= fused") == 4
    eps = 1e-6
    differences = [(offset_loss(w + e, x, y) - offset_loss(w - e, x, y)) / (2 * eps)
                   for e in np.eye(3) * eps]
    np.testing.assert_allclose(g(w, x, y), differences, atol=1e-7)


def test_no_kernel_takes_an_array_it_does_not_read():
    """Forward mode over the adjoint leaves a kernel whose member reading an array went;
    the array, of another input's shape, goes from the kernel's inputs too."""
    w, x, y = _offset_loss_arguments()
    hess = jit(hessian(offset_loss))
    assert _unread_kernel_params(hess.ir(w, x, y, stage="optimized")) == []
    g, eps = jit(grad(offset_loss)), 1e-6
    differences = np.stack([(g(w + e, x, y) - g(w - e, x, y)) / (2 * eps)
                            for e in np.eye(3) * eps], axis=1)
    np.testing.assert_allclose(hess(w, x, y), differences, atol=1e-7)


def flat_mlp_loss(w, x, y):
    h = np.tanh(x @ w[:12].reshape((3, 4)) + w[12:16])
    return np.mean((h @ w[16:20] + w[20] - y) ** 2)


def test_an_adjoint_accumulated_into_a_new_array_leaves_the_groups_around_it_open():
    """The `add_into` of each slice's adjoint writes into the accumulator, which no kernel
    reads: the elementwise work before and after it is one kernel (11 without the rule)."""
    rng = np.random.default_rng(0)
    w, x, y = rng.standard_normal(21) * 0.5, rng.standard_normal((8, 3)), rng.standard_normal(8)
    hess = jit(hessian(flat_mlp_loss))
    assert hess.ir(w, x, y, stage="optimized").count("= fused") == 9
    g, eps = jit(grad(flat_mlp_loss)), 1e-6
    differences = np.stack([(g(w + e, x, y) - g(w - e, x, y)) / (2 * eps)
                            for e in np.eye(21) * eps], axis=1)
    np.testing.assert_allclose(hess(w, x, y), differences, atol=1e-6)
