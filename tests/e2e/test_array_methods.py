"""The array methods and attributes of issue 14 against NumPy: x.item(), x.fill(v),
np.diagonal/x.diagonal, np.take/x.take (axis=, mode=), np.compress/x.compress, np.max/min
(nanmax, nanmin) with initial=, x.itemsize, x.nbytes, x.flat[i] and iteration, a dtype
taken as y.dtype; values, dtypes, Python vs NumPy scalars, which results share memory
with the arguments, errors, gradients against central differences, and the clear
refusals (x.tolist(), x.dtype as a value, writes through x.flat). One compiled function
is shared by the inputs of a signature."""
import numpy as np
import pytest
from array_checks import central_difference
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jacfwd, jit, vmap
from astjit.errors import CompileError


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def same(expected, got, where=""):
    """Equal values of the same types (a Python float is not an np.float64), dtypes, shapes."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), (where, got)
        for k, (e, g) in enumerate(zip(expected, got)):
            same(e, g, f"{where}[{k}]")
        return
    assert type(got) is type(expected), (where, type(got), type(expected))
    if isinstance(expected, np.ndarray):
        assert (got.shape, got.dtype) == (expected.shape, expected.dtype), (where, got, expected)
    np.testing.assert_array_equal(got, expected, err_msg=where)


def sharing(fn, x, *rest):
    """Which arrays of fn(x, ...) share memory with x, compiled and by NumPy: the same."""
    compiled = fn if hasattr(fn, "py_func") else jit(fn)
    plain = getattr(fn, "py_func", fn)
    found = [[np.shares_memory(r, x) for r in run(x, *rest) if isinstance(r, np.ndarray)]
             for run in (compiled, plain)]
    assert found[0] == found[1], (plain.__name__, found)
    return found[0]


def against_numpy(fn, *args):
    """fn compiled and fn run by NumPy on copies of args: the same result and the same
    writes into the arguments; the compiled result."""
    compiled = fn if hasattr(fn, "py_func") else jit(fn)
    plain = getattr(fn, "py_func", fn)
    mine, theirs = [[a.copy() if isinstance(a, np.ndarray) else a for a in args]
                    for _ in range(2)]
    expected, got = plain(*theirs), compiled(*mine)
    same(expected, got, plain.__name__)
    for a, b in zip(theirs, mine):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(b, a, err_msg=f"{plain.__name__}: argument")
    return got


# ---- x.item() --------------------------------------------------------------------------------

@jit
def item_flat(x, i):
    return x.item(i)


@jit
def item_2d(x, i, j):
    return x.item(i, j)


@jit
def item_only(x):
    return x.item()


def test_item_is_a_python_scalar_of_the_element():
    x = rand(3, 4)
    for i in (0, 5, 11, -1, -12):
        assert against_numpy(item_flat, x, i) == x.item(i)
    for i, j in ((0, 0), (2, 3), (-1, -2)):
        against_numpy(item_2d, x, i, j)
    against_numpy(item_flat, x.T, 5)  # a flat index in C order of the transposed array
    for dtype in (np.float32, np.int8, np.uint16, np.bool_, np.complex64):
        against_numpy(item_flat, (rand(5) * 3).astype(dtype), 2)  # float, int, bool, complex
    against_numpy(item_only, np.array([[2.5]]))
    against_numpy(item_only, np.array(7, dtype=np.int32))


def test_item_errors_are_numpy_s():
    x = rand(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        item_flat(x, 12)
    with pytest.raises(IndexError, match="out of bounds"):
        item_2d(x, 3, 0)
    with pytest.raises(ValueError, match="can only convert an array of size 1"):
        item_only(x)


def test_item_of_a_numpy_scalar_and_of_a_computed_array():
    def of_values(s, x):
        return s.item(), (x * 2).item(1)

    against_numpy(of_values, np.float32(1.5), rand(3))


# ---- x.fill(v) -----------------------------------------------------------------------------

def fills(x, v):
    x.fill(v)
    y = np.zeros((2, 3), np.int8)
    y[1].fill(v)
    return y


def test_fill_writes_every_element_with_numpy_s_cast():
    fill = jit(fills)
    for x, v in ((rand(3, 4), 2.5), (rand(3, 4).T, -1.0), (np.zeros(0), 3.0)):
        against_numpy(fill, x, v)
    assert fill(rand(3), 2.9)[1].tolist() == [2, 2, 2]  # floats truncate into int8


def test_fill_is_a_write_for_grad():
    def loss(x):
        y = x * x
        y[0].fill(2.0)
        return np.sum(y * x)

    x = rand(3, 2)
    np.testing.assert_allclose(grad(loss)(x), central_difference(loss, [x], 0), rtol=1e-6)


# ---- np.diagonal ---------------------------------------------------------------------------

def diagonals(x, k):
    return np.diagonal(x), x.diagonal(k), np.diagonal(x, k, 1, 0), x.diagonal(offset=-1)


def test_diagonal_is_a_view_of_numpy_s_diagonal():
    fn = jit(diagonals)
    for x, k in ((rand(4, 5), 1), (rand(5, 3), -2), (rand(3, 3), 7), (rand(4, 6)[:, ::2], 0)):
        against_numpy(fn, x, k)
        assert sharing(fn, x, k)[0]


def test_diagonal_of_a_3d_array_is_refused_clearly():
    def nd(x):
        return np.diagonal(x)

    with pytest.raises(CompileError, match="more than 2 dimensions is not supported yet"):
        jit(nd)(rand(2, 2, 2))


# ---- np.take ---------------------------------------------------------------------------------

def takes(x, idx, i):
    return (np.take(x, idx), x.take(idx, axis=1), np.take(x, i, axis=0), x.take(i),
            np.take(x, idx, mode="wrap"), np.take(x, indices=idx, axis=-1, mode="clip"))


def test_take_along_an_axis_or_the_flattened_array():
    fn = jit(takes)
    x = rand(3, 4)
    for idx, i in ((np.array([0, 2, -1]), 1), (np.array([[3, 0], [1, 1]]), -2),
                   (np.zeros(0, np.int64), 0)):
        against_numpy(fn, x, idx, i)
        assert not any(sharing(fn, x, idx, i))
    with pytest.raises(IndexError, match="out of bounds"):
        fn(x, np.array([0, 12]), 0)

    def wrap_clip(x, idx, i):
        return np.take(x, idx, mode="wrap"), x.take(idx, 0, None, "clip"), np.take(x, i, 1, None, "wrap")

    against_numpy(wrap_clip, x, np.array([20, -7, 3]).astype(np.int32), -9)  # any index


def test_take_reads_bool_indices_as_ints_and_refuses_a_bad_mode():
    def take_bools(x, b):
        return np.take(x, b)

    against_numpy(take_bools, rand(4), np.array([True, False, True]))

    def bad_mode(x, i):
        return np.take(x, i, mode="nearest")

    with pytest.raises(CompileError, match="clipmode must be one of"):
        jit(bad_mode)(rand(4), np.array([1]))


class Stack:
    def __init__(self, items):
        self.items = items

    def take(self, k):
        return self.items[k] * 2.0


def test_an_object_s_own_take_stays_its_own():
    def use(s, x):
        return s.take(1) + x.take(np.array([1]))[0]

    s, x = Stack(rand(3)), rand(4)
    assert jit(use)(s, x) == pytest.approx(use(s, x))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 2),
       st.sampled_from(["raise", "wrap", "clip"]), st.lists(st.integers(-9, 9), max_size=5),
       st.sampled_from([np.float64, np.int32]))
def test_take_hypothesis(shape, axis, mode, indices, dtype):
    x = (rand(*shape, seed=len(indices)) * 5).astype(dtype)
    axis = axis % len(shape)
    idx = np.array(indices, dtype=np.int64)
    fn = TAKES[(axis, mode)]
    try:
        expected = fn.py_func(x, idx)
    except IndexError:
        with pytest.raises(IndexError):
            fn(x, idx)
        return
    same(expected, fn(x, idx))


def _take_at(axis, mode):
    def take_at(x, idx):
        return np.take(x, idx, axis=axis, mode=mode)

    return jit(take_at)


TAKES = {(axis, mode): _take_at(axis, mode) for axis in range(3)
         for mode in ("raise", "wrap", "clip")}


# ---- np.compress -----------------------------------------------------------------------------

def compresses(x, c):
    return np.compress(c, x), x.compress(c, axis=0), np.compress(condition=c, a=x, axis=1)


def test_compress_takes_the_positions_of_the_nonzero_conditions():
    fn = jit(compresses)
    x = rand(3, 4)
    for c in (np.array([True, False, True]), np.array([False] * 3),
              np.array([True, False, True, False, False])):  # longer: only Trues must fit
        against_numpy(fn, x, c)
        assert not any(sharing(fn, x, c))
    with pytest.raises(IndexError, match="out of bounds"):
        fn(x, np.array([False, False, False, True]))

    def ints(c, x):
        return np.compress(c, x)

    against_numpy(ints, np.array([2, 0, -1]), rand(4))


def test_compress_of_a_condition_of_two_dimensions_is_refused():
    with pytest.raises(CompileError, match="condition must be a 1-d array"):
        jit(compresses)(rand(3, 4), np.ones((2, 2), bool))


# ---- extrema with initial= -------------------------------------------------------------------

def extrema(x):
    return (np.max(x, initial=0.5), x.min(initial=-0.25), np.max(x, axis=0, initial=0.0),
            np.amin(x, axis=(0, 1), keepdims=True, initial=1.0), np.nanmax(x, 1, initial=-9.0),
            x.max(axis=-1, initial=np.inf))


def test_max_and_min_with_initial():
    fn = jit(extrema)
    for x in (rand(3, 4), np.zeros((0, 4)), np.zeros((3, 0)),
              np.array([[np.nan, 1.0], [2.0, 3.0]]), rand(4, 3).T):
        against_numpy(fn, x)

    def ints(k):
        return np.max(k, initial=5.5), np.min(k, initial=2)

    against_numpy(ints, np.arange(4, dtype=np.int8))  # the initial value cast to int8


def outcome(fn, *args):
    """fn(*args), or the type of the OverflowError or ValueError it raised."""
    try:
        return fn(*args)
    except (OverflowError, ValueError) as error:
        return type(error)


def initial_of_each(x, v):
    return np.max(x, initial=v), np.min(x, initial=v), np.nanmax(x, initial=v), \
        np.nanmin(x, initial=v)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's All-NaN slice, cast
def test_initial_against_signed_zeros_and_nans():
    """np.maximum(v, R) in NumPy's order: a tie gives x's element (its zero's sign), NaN in x
    or as v wins for max and min and loses for nanmax and nanmin (fmax), an empty x gives v."""
    fn = jit(initial_of_each)
    for x in ([-0.0], [0.0], [np.nan], [np.nan, 1.0], [-1.0, np.nan, 2.0], [np.nan] * 9,
              list(np.linspace(-2.0, 3.0, 37)), []):
        for v in (0.0, -0.0, np.nan, 1.5, -np.inf):
            got = against_numpy(fn, np.array(x), v)
            expected = initial_of_each(np.array(x), v)
            assert np.signbit(got).tolist() == np.signbit(expected).tolist(), (x, v, got)


def initial_of_ints(k, v):
    return np.max(k, initial=v), np.min(k, axis=0, initial=v), np.nanmax(k, initial=v)


def test_initial_of_ints_is_cast_as_numpy_casts_it():
    """v in k's dtype: a float toward zero; NumPy 2's OverflowError for an int out of the
    dtype's range (not a wrapped value), ValueError for NaN, OverflowError for infinity."""
    for dtype in (np.int8, np.uint8, np.int64, np.uint64):
        k = np.arange(3, dtype=dtype)
        for values in ((5, -3, 300, -300, -1, 2 ** 40), (5.7, -2.7, 1e10, np.nan, np.inf)):
            fn = jit(initial_of_ints)
            for v in values:
                expected, got = outcome(initial_of_ints, k, v), outcome(fn, k, v)
                if isinstance(expected, type):
                    assert got is expected, (dtype, v, got)
                else:
                    same(expected, got, f"{dtype.__name__} {v}")
    same(initial_of_ints(np.zeros(0, np.int8), 3), jit(initial_of_ints)(np.zeros(0, np.int8), 3))


def initial_of_bools(b):
    return np.max(b, initial=2), np.min(b, initial=0.5), np.max(b, axis=0, initial=0), \
        np.min(b, keepdims=True, initial=True), np.nanmax(b, initial=False)


def initial_of_float32(k, v, w):
    return np.max(k, initial=1e300), np.min(k, initial=1.1), np.max(k, axis=0, initial=v), \
        np.min(k, initial=w)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's All-NaN slice, cast
def test_initial_of_bools_and_float32():
    """A bool array's result is bool (v's truth); a float32 array's float32 (a float64 v
    rounded, 1e300 to inf, as NumPy casts it)."""
    fn = jit(initial_of_bools)
    for b in (np.array([[False], [True]]), np.zeros((0, 1), bool), np.array([[False]])):
        against_numpy(fn, b)
    fn = jit(initial_of_float32)
    for k in (rand(2, 3, dtype=np.float32), np.zeros((0, 3), np.float32)):
        against_numpy(fn, k, np.float32(0.3), -1e300)
        against_numpy(fn, k, np.float32(-0.5), 0.1)


def initial_over_axes(x):
    return (np.max(x, axis=(1, -1), initial=3.0, keepdims=True),
            np.nanmin(x, axis=(-1, 0), initial=np.nan), np.max(x, axis=-2, initial=-1.0),
            x.min(axis=(0, 2), initial=0.25), np.nanmax(x, axis=(0, 1, 2), keepdims=True,
                                                       initial=-0.5))


def initial_of_0d(x):
    return np.max(x, initial=3.0), np.min(x, keepdims=True, initial=3.0), \
        np.nanmax(x, initial=-1.0), x.max(initial=2.5)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's All-NaN slice, cast
def test_initial_over_axis_tuples_empty_axes_and_0d():
    fn = jit(initial_over_axes)
    nans = rand(2, 4, 3)
    nans[0, 1, :], nans[1, :, 0] = np.nan, np.nan
    for x in (rand(2, 4, 3), np.zeros((2, 0, 3)), np.zeros((0, 4, 3)), nans,
              rand(3, 4, 2).transpose(2, 1, 0)):
        against_numpy(fn, x)
    fn = jit(initial_of_0d)
    for x in (np.array(2.0), np.array(np.nan), np.array(4.0)):
        against_numpy(fn, x)


def complex_initial(x):
    return np.max(x, initial=1j)


def test_a_complex_initial_is_refused():
    """NumPy's TypeError (a complex does not cast to float), at compile time."""
    with pytest.raises(CompileError, match="must be a real number"):
        jit(complex_initial)(rand(3))


def tie_with_initial(x):
    return np.max(x, initial=1.0)


def test_a_tie_with_initial_gives_x_no_derivative():
    """np.maximum(v, R)'s adjoint goes to v on a tie (docs/arrays.md: JAX's balanced max
    would give x half); ties within x share it equally."""
    for derivative in (grad, jacfwd):
        np.testing.assert_array_equal(derivative(tie_with_initial)(np.array([0.5, 1.0, 0.2])),
                                      [0.0, 0.0, 0.0])
        np.testing.assert_array_equal(derivative(tie_with_initial)(np.array([0.5, 2.0, 2.0])),
                                      [0.0, 0.5, 0.5])


# ---- gradients -------------------------------------------------------------------------------

def selected(x):
    return (x.item(3) * 2.0 + np.sum(np.take(x, np.array([0, 0, 5]))) + np.sum(
        x.take(np.array([1, 0]), axis=1) ** 2) + np.sum(np.compress(
            np.array([True, False, True]), x, axis=0) * 3.0) + np.sum(x.diagonal(1) ** 3)
        + np.max(x, initial=0.0) + np.sum(np.min(x, axis=1, initial=0.25))
        + np.sum(np.nanmax(x, axis=0, initial=0.1)) + np.nanmin(x, initial=0.3))


def test_gradients_against_central_differences():
    x = rand(3, 4, seed=3)
    np.testing.assert_allclose(grad(selected)(x), central_difference(selected, [x], 0),
                               rtol=1e-6, atol=1e-8)


def test_forward_mode_and_vmap():
    x = rand(3, 4, seed=4)
    np.testing.assert_allclose(jacfwd(selected)(x), grad(selected)(x), rtol=1e-10, atol=1e-12)
    xs = rand(5, 3, 4, seed=5)
    np.testing.assert_allclose(vmap(selected)(xs), [selected(x) for x in xs], rtol=1e-12)


# ---- attributes: itemsize, nbytes, dtype, flat -----------------------------------------------

def sizes(x):
    return x.itemsize, x.nbytes, x[0].itemsize


def test_itemsize_and_nbytes():
    fn = jit(sizes)
    for dtype in (np.float64, np.float32, np.int8, np.uint16, np.complex64, np.bool_):
        x = np.ones((3, 2), dtype)
        assert fn(x) == sizes(x)
    assert fn(np.ones((4, 6))[:, ::2]) == sizes(np.ones((4, 6))[:, ::2])


def converted(x, y):
    return (x.astype(y.dtype), np.array([1, 2], dtype=y.dtype), np.zeros(2, y[1:].dtype),
            np.linspace(0, 1, 3, dtype=y.dtype), x.astype(y.dtype).itemsize)


def test_a_dtype_given_as_y_dtype():
    fn = jit(converted)
    for dtype in (np.float32, np.int16, np.complex128):
        against_numpy(fn, rand(3), np.ones(2, dtype))


def reduced(x, y):
    return (np.sum(x, dtype=y.dtype), x.prod(axis=0, dtype=y.dtype), np.cumsum(x, dtype=y.dtype),
            np.mean(x, axis=1, keepdims=True, dtype=y.dtype), np.var(x, 0, ddof=1, dtype=y.dtype),
            np.nansum(x, dtype=y.dtype), np.std(x, dtype=y.dtype), np.nanvar(x, 1, dtype=y.dtype))


def test_a_reduction_s_dtype_given_as_y_dtype():
    fn = jit(reduced)
    for x in (rand(3, 4), np.arange(12, dtype=np.int8).reshape(3, 4)):
        for y in (np.ones(2, np.float32), np.ones(2)):
            got = against_numpy(fn, x, y)
            assert got[0].dtype == y.dtype

    def int_mean(x, k):
        return np.mean(x, dtype=k.dtype)

    with pytest.raises(CompileError, match="it takes a float type"):
        jit(int_mean)(rand(3), np.ones(2, np.int16))


def flat_reads(x, i):
    total = 0.0
    for e in x.flat:
        total += e
    return x.flat[i], x.flat[1:4], x.flat[np.array([0, 2])], total


def test_flat_reads_in_c_order_and_copies_what_numpy_copies():
    fn = jit(flat_reads)
    for x in (rand(3, 4), rand(4, 3).T, rand(5)):
        against_numpy(fn, x, 2)
        assert sharing(fn, x, 2) == [False, False]


def views(x, k):
    bits = x.view(np.int64)
    bits[0] = k  # a write through the view reaches x
    return bits, x.view(dtype=np.uint64), x.view(np.complex64), x.view(x.dtype), x.view(k.dtype)


def test_view_reads_the_memory_as_a_dtype_of_one_item_size():
    fn = jit(views)
    for x in (rand(4), rand(3, 4)[:, ::2], rand(2, 3).T):
        against_numpy(fn, x, np.int64(4607182418800017408))
        assert all(sharing(fn, x, np.int64(1)))

    def narrow(x):
        return x.view(np.int8), x.view(np.uint32), np.zeros(2, np.int8).view(np.bool_)

    with pytest.raises(CompileError, match=r"x.view\(int8\) of a float64 array is not supported"):
        jit(narrow)(rand(3))


class Camera:
    def __init__(self, shift):
        self.shift = shift

    def view(self, x):
        return x + self.shift


def test_an_object_s_own_view_stays_its_own():
    def look(c, x):
        return c.view(x)

    assert jit(look)(Camera(1.0), 2.0) == 3.0


@jit
def flat_at(x, i):
    return x.flat[i]


def test_flat_index_reads_the_element_at_its_c_order_position():
    for x in (rand(3, 4), rand(4, 3).T, rand(2, 3, 2)[:, ::-1], np.array(2.5)):
        for i in (0, x.size - 1, -1, -x.size):
            against_numpy(flat_at, x, i)
        for i in (x.size, -x.size - 1):
            with pytest.raises(IndexError, match="out of bounds"):
                flat_at(x, i)


@jit
def flat_and_item(x, i):
    return x.flat[i], x.item(i)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.booleans(), st.data())
def test_flat_and_item_hypothesis(shape, transposed, data):
    x = rand(*shape, seed=len(shape))
    x = x.T if transposed else x
    i = data.draw(st.integers(-x.size - 2, x.size + 1))
    if -x.size <= i < x.size:
        got = flat_and_item(x, i)
        assert got == (x.flat[i], x.item(i)) and type(got[1]) is float
    else:
        with pytest.raises(IndexError):
            flat_and_item(x, i)


class Grid:
    def __init__(self, flat):
        self.flat = flat


def test_a_field_named_flat_stays_a_field():
    def read(g, i):
        total = 0.0
        for e in g.flat:
            total += e
        return g.flat[i] + total

    g = Grid(rand(4))
    assert jit(read)(g, 2) == pytest.approx(read(g, 2))


def test_refusals_say_what_to_write():
    def tolist(x):
        return x.tolist()

    def dtype(x):
        return x.dtype

    def keep_flat(x):
        f = x.flat
        return f[0]

    def write_flat(x):
        x.flat[0] = 1.0
        return x

    for fn, words in ((tolist, "call .tolist"), (dtype, "is not a value"),
                      (keep_flat, "can be indexed"), (write_flat, "not kept or written")):
        with pytest.raises(CompileError, match=words):
            jit(fn)(rand(3))


# ---- the GPU backend (its host program runs the selections, views and copies) ----------------

def on_device(x, idx, c):
    y = x * 1.0
    y[0].fill(0.5)
    return (np.take(x, idx, axis=1, mode="wrap"), np.compress(c, x, axis=0), x.diagonal(1),
            x.item(4), np.max(x, axis=0, initial=0.0), x.flat[1:3], x.view(np.int64), y,
            x.nbytes)


def test_gpu_simulator_agrees():
    x, idx, c = rand(3, 4), np.array([5, -1]), np.array([True, False, True])
    expected = on_device(x, idx, c)
    same(expected, jit(on_device)(x, idx, c), "cpu")
    same(expected, jit(on_device, target="cuda-sim")(x, idx, c), "cuda-sim")
