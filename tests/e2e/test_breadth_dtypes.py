"""Issue 14's reductions, shape and joining functions, conversions, sorting and searching,
indexing forms and products over the dtypes their own tests do not draw (int8/16/32,
uint8..uint64, complex64/128, besides bool, int64 and the floats), against NumPy:
each expression with two of its dtypes and a number of axes (1 to 3), taken in turn so
that every dtype and ndim is met, and hypothesis's shapes (empty axes too) and strides
(steps of 2, reversed axes, transposes) for that compiled version.

Compiled code must give NumPy's result (value, dtype, shape, the type of a scalar) or
NumPy's exception, or a `CompileError` where NumPy raises (np.trace of a vector, an axis
out of range: errors the argument types decide). Each expression is one jitted function,
compiled once per case: hypothesis's arrays reuse it."""
import importlib.util
import pathlib
import tempfile
import warnings

import numpy as np
import pytest
from array_checks import assert_same_array
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import jit
from astjit.errors import CompileError

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True, database=None)
REAL = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
        np.uint64, np.float32, np.float64)
NUMBERS = REAL[1:]
ALL = REAL + (np.complex64, np.complex128)

EXPRESSIONS = {
    # reductions
    "np.prod(a, axis=-1)": REAL, "np.any(a, axis=0, keepdims=True)": REAL, "np.all(a)": ALL,
    "np.argmax(a, axis=-1)": REAL, "a.argmin()": REAL, "np.std(a, axis=0)": REAL,
    "np.var(a, ddof=1)": REAL, "np.cumsum(a, axis=-1)": REAL, "a.cumprod()": REAL,
    "np.nansum(a, axis=0)": NUMBERS, "np.nanmean(a)": NUMBERS, "np.nanmax(a, axis=-1)": NUMBERS,
    "np.nanmin(a)": NUMBERS, "np.nanprod(a, axis=0)": NUMBERS, "np.nanstd(a)": NUMBERS,
    "np.nanvar(a, axis=-1, ddof=1)": NUMBERS, "np.median(a, axis=-1)": NUMBERS,
    "np.percentile(a, 30.0)": NUMBERS, "np.quantile(a, 0.7, axis=0)": NUMBERS,
    "np.ptp(a, axis=-1)": NUMBERS, "np.count_nonzero(a, axis=0)": ALL, "np.sum(a, axis=0)": ALL,
    "np.mean(a, axis=-1)": ALL, "a.max(axis=0)": REAL,
    # shape and joining
    "np.concatenate((a, a[::-1]), axis=-1)": ALL, "np.stack((a, a), axis=1)": ALL,
    "np.hstack((a, a))": ALL, "np.vstack((a, a))": ALL, "np.squeeze(a[:1], axis=0)": ALL,
    "np.expand_dims(a, 0)": ALL, "a.ravel()": ALL, "a.flatten()": ALL,
    "np.flip(a, axis=-1)": ALL, "np.roll(a, 2, axis=0)": ALL, "np.roll(a, -3)": ALL,
    "np.tile(a, 2)": ALL, "np.repeat(a, 2, axis=-1)": ALL,
    "np.broadcast_to(a[:1], a.shape)": ALL, "np.swapaxes(a, 0, -1)": ALL,
    "np.moveaxis(a, 0, -1)": ALL,
    # creation and conversion
    "a.astype(np.float32)": ALL, "a.astype(np.int8)": REAL, "a.astype(np.complex128)": ALL,
    "a.astype(np.uint16)": REAL, "a.astype(bool)": ALL, "a.copy()": ALL, "np.copy(a.T)": ALL,
    "np.ascontiguousarray(a)": ALL, "np.array(a)": ALL, "np.zeros_like(a)": ALL,
    "np.full_like(a, 3)": ALL, "np.ones(a.shape, dtype=a.dtype)": ALL,
    "np.full(a.shape, a.ravel()[0])": ALL,
    # sorting and searching
    "np.sort(a, axis=-1)": REAL, "np.argsort(a, axis=0)": REAL, "np.unique(a)": REAL,
    "np.nonzero(a)": REAL, "np.where(a)": REAL,
    "np.searchsorted(np.sort(a.ravel()), a)": REAL,
    # indexing
    "a[..., None]": ALL, "a[None, ..., ::-1]": ALL, "a[a > a.ravel()[0]]": REAL,
    "a[np.array([0, -1, 0])]": ALL, "a[..., np.array([1, 0])]": ALL,
    "np.where(a > a.ravel()[0], a, a.ravel()[0])": REAL,
    # products
    "a @ np.swapaxes(a, -1, -2)": NUMBERS, "np.dot(a.ravel(), a.ravel())": NUMBERS,
    "np.outer(a, a)": NUMBERS, "np.trace(a)": NUMBERS, "np.linalg.norm(a, axis=-1, keepdims=True)": NUMBERS,
}
"""Each expression of `a` and the dtypes it is drawn with (the others are reported in the
issue as not yet computed, or crash: they are not drawn)."""


NOT_EMPTY = {"np.median(a, axis=-1)": "c"}
"""Expressions drawn with non-empty shapes only for these dtype kinds: a complex
np.median(a, axis=-1) of an empty lane raises IndexError where NumPy gives NaN+NaNj (of a
(0, 0) array an empty result), docs/arrays.md."""


def _load(texts):
    """One function per text, from a module written to a file (astjit reads their source)."""
    path = pathlib.Path(tempfile.mkdtemp()) / "breadth_dtype_cases.py"
    path.write_text("import numpy as np\n\n" + "".join(
        f"def f{k}(a):\n    return {text}\n\n" for k, text in enumerate(texts)))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {text: getattr(module, f"f{k}") for k, text in enumerate(texts)}


FUNCTIONS = _load(list(EXPRESSIONS))
JITS = {text: jit(fn) for text, fn in FUNCTIONS.items()}


def values(rng, shape, dtype, nans):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -9), min(info.max, 9), shape, endpoint=True).astype(dtype)
    x = np.round(rng.standard_normal(shape) * 3, 1)
    if dtype.kind == "c":
        x = x + 1j * np.round(rng.standard_normal(shape), 1)
    x = x.astype(dtype)
    if nans and x.size > 2:
        x.flat[rng.integers(0, x.size, 2)] = np.nan
    return x


@st.composite
def arrays(draw, dtype, ndim, nans, empty=True):
    """An array of `dtype` and `ndim` (its axes 0 to 4 long, or 1 to 4 unless `empty`): a
    view with steps 2 or -1 on some axes, or a transpose."""
    shape = tuple(draw(st.integers(0, 4)) if empty and draw(st.integers(0, 7)) == 0
                  else draw(st.integers(1, 4)) for _ in range(ndim))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    transposed = ndim >= 2 and draw(st.booleans())
    full = tuple(reversed(shape)) if transposed else shape
    steps = [draw(st.sampled_from((1, 2, -1))) for _ in full]
    base = values(rng, tuple(n * abs(k) for n, k in zip(full, steps)), dtype, nans)
    view = base[tuple(slice(None, None, k) for k in steps)]
    return view.T if transposed else view


def plan():
    """(expression, dtype, ndim) cases: each expression with two of its dtypes, the dtypes
    and the ndims (1 to 3) taken in turn along the table so that all of them are met."""
    out = []
    for k, (text, dtypes) in enumerate(EXPRESSIONS.items()):
        for j in (0, 1):
            dtype = dtypes[(3 * k + 5 * j) % len(dtypes)]
            out.append((text, dtype, 1 + (k + j) % 3))
    return out


def same(want, got, where):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (where, got)
        for k, (w, g) in enumerate(zip(want, got)):
            same(w, g, f"{where}[{k}]")
        return
    assert_same_array(want, got, where, 1e-5, 1e-10)


def assert_like_numpy(text, a):
    where = f"{text} of {a.dtype}{a.shape} strides {a.strides}"
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want, error = FUNCTIONS[text](a.copy()), None
        except Exception as raised:  # noqa: BLE001 - the exception is the outcome compared
            want, error = None, raised
        try:
            got = JITS[text](a)
        except CompileError as refusal:
            assert error is not None, (where, refusal)
            return
        except Exception as raised:  # noqa: BLE001 - compared with NumPy's exception
            assert error is not None and type(raised) is type(error), (where, raised, error)
            return
    assert error is None, (where, "NumPy raised", error, "compiled code gave", got)
    same(want, got, where)


def test_median_of_empty_lanes_is_nan():
    """np.median of an empty lane is NaN, as NumPy's (which warns "Mean of empty slice"):
    of every real dtype, 1-d to 3-d; the median of no lanes is empty."""
    for dtype in (np.float64, np.float32, np.int32, np.uint8, np.bool_):
        for shape in ((3, 0), (0,), (0, 0), (0, 2), (2, 0, 3)):
            assert_like_numpy("np.median(a, axis=-1)", np.zeros(shape, dtype=dtype))
    assert_like_numpy("np.median(a, axis=-1)", np.array([[-0.0], [-0.0]]))


@pytest.mark.parametrize("text,dtype,ndim", plan(),
                         ids=[f"{t}-{np.dtype(d).name}-{n}d" for t, d, n in plan()])
def test_matches_numpy(text, dtype, ndim):
    """One compiled version (the dtype and ndim), hypothesis's shapes and strides."""
    @SETTINGS
    @given(arrays(dtype, ndim, "nan" in text, np.dtype(dtype).kind not in NOT_EMPTY.get(text, "")))
    def check(a):
        assert_like_numpy(text, a)

    check()
