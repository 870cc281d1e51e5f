"""Gradients the differential fuzzer (astjit.fuzz) found wrong, against NumPy's answer and
finite differences."""
import math

import numpy as np
import pytest
from array_checks import central_difference

import astjit


def remainder(x, y):
    return x % y


def remainder_of_array(a, y):
    return np.sum(np.remainder(a, y) * a)


def fmod(x, y):
    return math.fmod(x, y)


def fmod_of_array(a, y):
    return np.sum(np.fmod(a, y) * a)


# d/dy of x % y is -floor(x / y), of fmod(x, y) -trunc(x / y): Python's int floor and trunc
# raised OverflowError past int64 (1e300 % -1.0), and the rules failed on arrays
@pytest.mark.parametrize("fn, array_fn, rounding, cases", [
    (remainder, remainder_of_array, np.floor, [(1e300, -1.0, 1e300), (7.5, 2.0, -3.0), (-7.5, 2.0, 4.0)]),
    (fmod, fmod_of_array, np.trunc, [(1e56, -0.1, 1e57), (7.5, 2.0, -3.0), (-7.5, 2.0, 3.0)]),
])
def test_remainder_gradients_take_a_float_rounding(fn, array_fn, rounding, cases):
    for x, y, dy in cases:
        got = astjit.grad(fn, argnums=(0, 1))(x, y)
        assert got[0] == 1.0 and got[1] == pytest.approx(dy, rel=1e-15)
    a, y = np.array([7.5, -3.0, 4.25]), 2.0
    da, dy = astjit.grad(array_fn, argnums=(0, 1))(a, y)
    np.testing.assert_array_equal(da, (a - y * rounding(a / y)) + a)   # d/da of (a rem y) a
    assert dy == -np.sum(rounding(a / y) * a)


def power(a, b):
    return a ** b


def power_of_array(a, b):
    return np.sum(a ** b)


def test_power_gradient_in_the_exponent_at_a_zero_base_is_zero():
    # 0 ** b is flat in b (0 for b > 0): JAX's convention; 0 * log(0) gave NaN
    assert astjit.grad(power, argnums=(0, 1))(0.0, 26.35) == (0.0, 0.0)
    assert astjit.grad(power, argnums=1)(0, 2.5) == 0.0
    assert astjit.grad(power, argnums=1)(2.0, 3.0) == 8.0 * np.log(2.0)
    da, db = astjit.grad(power_of_array, argnums=(0, 1))(np.array([0.0, 2.0]), np.array([3.0, 0.5]))
    np.testing.assert_allclose(da, [0.0, 0.5 / np.sqrt(2.0)])
    np.testing.assert_allclose(db, [0.0, np.sqrt(2.0) * np.log(2.0)])


def min_of_clipped(x, lo):
    return float(np.min(np.clip(x, lo, 10.0)))


def row_maxima(x):
    return np.max(x, axis=1)


def maximum(v):
    return float(np.max(v))


# Equal elements share a min's or max's derivative (JAX's rule): each took all of it, so
# where the tied elements move together (two clipped to `lo`) the derivative counted twice
# (fuzz seed 20261205, program 3649: d/dx 2x the finite differences)
def test_ties_of_a_min_or_max_share_its_derivative():
    x, lo, step = np.array([-1.0, -2.0, 3.0]), 0.5, 1e-6
    difference = (min_of_clipped(x, lo + step) - min_of_clipped(x, lo - step)) / (2 * step)
    assert astjit.grad(min_of_clipped, argnums=1)(x, lo) == pytest.approx(difference)
    assert astjit.jvp(min_of_clipped, (x, lo), (np.zeros(3), 1.0))[1] == pytest.approx(difference)
    np.testing.assert_array_equal(astjit.grad(maximum)(np.array([1.0, 3.0, 3.0])),
                                  [0.0, 0.5, 0.5])
    rows = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], dtype=np.float32)
    value, tangent = astjit.jvp(row_maxima, (rows,), (np.array([[0, 1, 3], [2, 4, 0]], np.float32),))
    np.testing.assert_array_equal(tangent, np.array([2.0, 3.0], np.float32))
    assert tangent.dtype == np.float32


def written_while_iterated_in_a_branch(p0, p3):
    s = 0.0
    if p3 < 100.0:
        s = float(p0 @ p0)
        for e in p0:
            p0[0] += 1.0
    return s


def written_through_two_names_in_a_branch(p0, p3):
    s = 0.0
    if p3 < 100.0:
        q = p0
        s = float(p0 @ p0)
        for k in range(2):
            p0[0] += 1.0
            q[1] += 1.0
    return s


def test_a_loop_over_the_array_it_writes_inside_a_branch_logs_its_writes():
    """`for e in y: y[0] += 1` inside an `if` binds y to the loop twice (what it iterates
    over, what it writes into): the undo log went to the first binding, so the backward
    sweep read y as the loop left it (seed 41302, program 6823: d/dy[0] of y @ y was
    2 (y[0] + 3), not 2 y[0])."""
    x = np.array([1.0, 2.0, 3.0])
    grad = astjit.grad(written_while_iterated_in_a_branch, argnums=0)(x.copy(), 8.8)
    np.testing.assert_array_equal(grad, 2 * x)
    got = astjit.grad(written_through_two_names_in_a_branch, argnums=0)(x.copy(), 8.8)
    np.testing.assert_array_equal(got, 2 * x)


def arctangent(y, x):
    return math.atan2(y, x)


def arctangent_of_arrays(y, x):
    return np.sum(np.arctan2(y, x))


# d/dy atan2(y, x) = x / (x^2 + y^2): x^2 + y^2 overflowed past 1e154 and underflowed
# below 1e-162 (d/dy atan2(y, 1e300) came out 0, not 1e-300: fuzz seed 41309, program 8479)
@pytest.mark.parametrize("y, x", [(2.6, 1e300), (1e300, 3.0), (1e-200, 3e-200), (-4e-170, 1e-170),
                                  (0.5, -2.0)])
def test_arctangent_gradients_do_not_overflow_or_underflow(y, x):
    # as exact fractions: y and x are binary floats, so (x, -y) / (x^2 + y^2) is rational
    from fractions import Fraction
    fy, fx = Fraction(y), Fraction(x)
    want = (float(fx / (fx * fx + fy * fy)), float(-fy / (fx * fx + fy * fy)))
    for got in (astjit.grad(arctangent, argnums=(0, 1))(y, x),
                tuple(astjit.jacfwd(arctangent, argnums=(0, 1))(y, x)),
                tuple(float(d[0]) for d in astjit.grad(arctangent_of_arrays, argnums=(0, 1))(
                    np.array([y]), np.array([x])))):
        for g, w in zip(got, want):
            assert g == pytest.approx(w, rel=1e-14, abs=1e-320), (got, want)


def read_then_written_in_a_loop_that_rebinds_it(x, y, counts):
    while len(counts):
        first = counts[0]
        counts[0] = x
        return math.atan2(y, first)
        counts = counts  # noqa: PLW0127 - unreachable, but the loop now carries `counts`
    return x


def test_a_loop_writing_an_int_array_it_rebinds_and_reads_is_refused():
    """The backward recomputation of the body read `counts[0]` after the write (5, not -2):
    d/dy of atan2(y, -2) came out 0.11, not -0.081 (fuzz seed 41311, program 1827). No undo
    log follows a carried array, active or not, so such a loop is refused."""
    counts = np.array([-2])
    assert astjit.jit(read_then_written_in_a_loop_that_rebinds_it)(5.2, -4.5, counts.copy()) == \
        read_then_written_in_a_loop_that_rebinds_it(5.2, -4.5, counts.copy())
    with pytest.raises(astjit.DifferentiationError, match="writes into the array 'counts' it also rebinds"):
        astjit.grad(read_then_written_in_a_loop_that_rebinds_it, argnums=(0, 1))(5.2, -4.5, counts.copy())


def clip_below(x, low):
    x[x < low] = low
    return len(x)


def squares_after_a_condition_that_writes(x):
    steps = 0
    while steps < 12 and clip_below(x, 3.0):
        steps += 1
    return float(x @ x)


def test_a_loop_whose_condition_writes_into_an_array_is_refused():
    """Both modes took the condition for its truth alone: the write that made x [3, 3]
    reached neither, and both gave 2x (6, 6) where the result no longer depends on x
    (fuzz seed 41312, program 1348)."""
    x = np.array([0.8078, -2.34717])
    assert astjit.jit(squares_after_a_condition_that_writes)(x.copy()) == 18.0
    for transform in (astjit.grad, astjit.jacfwd):
        with pytest.raises(astjit.DifferentiationError, match="condition writes into an array"):
            transform(squares_after_a_condition_that_writes)(x.copy())


def median_after_copying_in_a_while(p0, p1):
    g1 = 0
    while g1 < 12:
        g1 += 1
        for e2 in p1:
            p1[np.count_nonzero(p1) % len(p1)] = e2
    return float(np.median(p1))


def last_element_in_a_branch(y, t):
    if t > 0:
        for e in y:
            y[0] = e
    return y[0] + 0.0


def squares_read_back_in_a_loop(y, t):
    s = 0.0
    for k in range(2):
        if t > k:
            for e in y:
                y[2] = e * e
                s += y[2]
    return s + y[0] * y[2]


def sum_read_after_its_write_in_a_loop(y, t):
    s = 0.0
    for k in range(2):
        for e in y:
            s += e
            y[2] = 2.0 * e
    return s


def squares_of_one_array_by_two_names(a, b):
    s = 0.0
    for e in a:
        b[2] = e * e
        s += e
    return s


def squares_through_an_inlined_call(y, t):
    return squares_of_one_array_by_two_names(y, y) + y[2]


@pytest.mark.parametrize("fn, args, argnum", [
    (median_after_copying_in_a_while, (1.5, np.array([9.368963, -2.61794])), 1),
    *((fn, (np.array([0.3, -1.1, 0.7]), 1.5), 0) for fn in (
        last_element_in_a_branch, squares_read_back_in_a_loop, sum_read_after_its_write_in_a_loop,
        squares_through_an_inlined_call)),
])
def test_a_loop_over_the_array_it_writes_sees_its_writes_in_any_region(fn, args, argnum):
    """`for e in y: y[0] = e` inside a `while` or an `if` bound y to the inner loop through
    two parameters (the frontend captured the name again), so the backward sweep kept two
    adjoints of one array: the write's never reached what was read through the other
    (fuzz seed 41313, program 7257: d/dy[1] of the median was 0.5, not 1). An inlined
    `h(y, y)` binds y twice too; the optimizer now gives it one parameter (cse.py)."""
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    np.testing.assert_allclose(astjit.grad(fn, argnums=argnum)(*copies),
                               central_difference(fn, args, argnum), rtol=1e-6, atol=1e-8)


def squares_read_through_a_view(y, t):
    v = y[:]
    s = 0.0
    for i in range(3):
        y[2] = v[i] * v[i]
        s += v[i]
    return s + y[2]


def product_read_through_a_view_in_a_branch(y, t):
    v = y[:]
    s = 0.0
    if t > 0:
        y[2] = v[0] * v[1]
        s += v[2]
    return s + y[2]


def product_by_two_names(a, b, n):
    if n <= 0:
        b[2] = a[0] * a[1]
        return a[2]
    return product_by_two_names(a, b, n - 1)


def product_through_a_recursive_call(y, t):
    return product_by_two_names(y, y, 2) + y[2]


@pytest.mark.parametrize("fn, construct", [(squares_read_through_a_view, "loop or branch"),
                                           (product_read_through_a_view_in_a_branch, "loop or branch"),
                                           (product_through_a_recursive_call, "function call")])
def test_a_write_into_an_array_read_through_another_name_is_refused_in_reverse_mode(fn, construct):
    """A view and its array, or one array passed twice to a call that stays a call, are two
    names of one memory: reverse mode would keep an adjoint for each (both were wrong).
    Forward mode keeps tangents as memory, and is right."""
    y = np.array([0.3, -1.1, 0.7])
    with pytest.raises(astjit.DifferentiationError, match=f"cannot differentiate a {construct} "
                       "that writes into an array it also reads through another name"):
        astjit.grad(fn)(y.copy(), 1.5)
    np.testing.assert_allclose(astjit.jacfwd(fn)(y.copy(), 1.5), central_difference(fn, (y, 1.5), 0),
                               rtol=1e-6, atol=1e-8)


def written_after_a_branch_made_it(x, s):
    y = x * s if s > 0.0 else np.sin(x)
    y[1] = s * y[0]
    return float(np.sum(y * y))


def written_after_a_loop_made_it(x, s):
    y = x * 1.0
    for k in range(3):
        y = y * s + x
    y[0] = s
    return float(np.sum(y * y))


@pytest.mark.parametrize("fn", [written_after_a_branch_made_it, written_after_a_loop_made_it])
def test_a_write_into_an_array_a_branch_or_loop_made_differentiates_in_both_modes(fn):
    """jacfwd's batching followed the written array's views into the `if` or `while` that
    made it and raised KeyError (fuzz seed 41314, program 8832, shrunk)."""
    x = np.array([0.3, -1.1, 0.7])
    for argnum in (0, 1):
        expected = central_difference(fn, (x, 1.5), argnum)
        for transform in (astjit.grad, astjit.jacfwd):
            np.testing.assert_allclose(transform(fn, argnums=argnum)(x.copy(), 1.5), expected,
                                       rtol=1e-6, atol=1e-8)


def std_then_written_through_a_branch(p0, p1):
    if p1 <= 0.5:
        if not len(p0):
            p0 = np.min(p0[None], axis=1)
        else:
            p1 -= float(np.std(p0))
        p0[9 % len(p0)] = 0.1
    return p1


def first_read_by_its_own_name(p0, c):
    if c > 0:
        q = p0
    else:
        q = np.zeros(3)
    q[0] = 5.0
    return p0[0] * 1.0 + q[1] * 2.0


def first_read_after_a_loop(p0, c):
    q = p0
    for k in range(2):
        if c > k:
            q = q
        else:
            q = q * 2.0
    q[0] = 5.0
    return p0[0] * 3.0


def written_after_an_early_return(p0, c):
    if p0[0] % p0[1]:
        return p0[0]
    if p0[2] > 5.0:
        p0 = np.zeros(3)
    elif c == 3.0:
        return 3.0
    p0[0] = np.std(p0)
    return p0[2] * 1.0


@pytest.mark.parametrize("fn, construct", [(std_then_written_through_a_branch, "branch"),
                                           (first_read_by_its_own_name, "branch"),
                                           (first_read_after_a_loop, "loop"),
                                           (written_after_an_early_return, "branch")])
def test_a_write_into_an_array_a_branch_or_loop_may_return_unmade_is_refused(fn, construct):
    """An `if` or `while` may return an array it was given: both modes followed the written
    array and the given one as two, so the write never reached reads through the other name
    (program 8832: d/dp0[1] of `p1 - np.std(p0)` was -0.304, not -0.094, where p0 was
    written later through the name the inner `if` returned). After an early return the write
    sits in a branch of its own, whose parameter receives the name the `if` returned
    (program 3371 of seed 41324: its gradient ran into the other branch)."""
    x = np.array([3.99492, 6.244, 2.2797])
    assert astjit.jit(fn)(x.copy(), -1.11119) == fn(x.copy(), -1.11119)
    for transform in (astjit.grad, astjit.jacfwd):
        with pytest.raises(astjit.DifferentiationError, match=f"a {construct} returned, which may "
                           "be an array it was given"):
            transform(fn)(x.copy(), -1.11119)


def cos_of_a_float(x):
    return float(np.cos(x))


def arcsin_of_a_float(x):
    return float(np.arcsin(x))


def sinh_of_a_float(x):
    return float(np.sinh(x))


def cos_written_into_an_array(p0):
    p0[p0 <= 0.1] = 1e300
    p0[len(p0) % len(p0)] += np.cos(float(p0 @ p0))
    return 1.0


# A NumPy function of a Python float never raises (NaN, inf), nor does its derivative, which
# is NumPy's too: -np.sin(x) for np.cos, where math.sin(inf) raised ValueError in both modes
# (fuzz seed 41323, program 6378; OverflowError for np.sinh's np.cosh)
@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:overflow encountered")
@pytest.mark.parametrize("fn, x, expected", [
    (cos_of_a_float, math.inf, math.nan), (arcsin_of_a_float, 2.0, math.nan),
    (sinh_of_a_float, 1000.0, math.inf), (cos_of_a_float, 1.0, -math.sin(1.0)),
])
def test_the_derivative_of_a_numpy_function_of_a_float_is_numpys(fn, x, expected):
    for transform in (astjit.grad, astjit.jacfwd):
        got = float(transform(fn)(x))
        assert got == expected or (math.isnan(got) and math.isnan(expected)), transform


@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:overflow encountered")
def test_a_numpy_function_of_an_infinite_dot_product_differentiates():
    """Both modes raised ValueError (math.sin of inf in np.cos's derivative). Reverse mode
    still runs back through the write with a zero adjoint, and 0 * -sin(inf) is NaN in the
    elements the dot product read, where the result reads none of them (JAX drops such a
    path); forward mode's tangent of the constant result is 0."""
    x = np.array([6.19542, 2.93296, -5.25906])
    np.testing.assert_array_equal(astjit.jacfwd(cos_written_into_an_array)(x.copy()), [0.0] * 3)
    assert astjit.grad(cos_written_into_an_array)(x.copy())[2] == 0.0
