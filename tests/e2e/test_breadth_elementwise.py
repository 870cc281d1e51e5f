"""Issue 14's elementwise functions over every dtype (bool, int8..uint64, float32/64,
complex64/128) against NumPy: each function with two combinations of operand dtypes (mixed ones promote as
NumPy's do, Python scalars as NEP 50 says) and numbers of axes (0 to 3), taken in turn so
that all are met, and for each hypothesis's shapes (empty ones too), strides (steps of 2,
reversed axes, transposes) and values (the extremes of each dtype, NaN, inf, -0.0); and
every differentiable one's gradient (reverse mode) and tangent (forward mode) against
central finite differences.

The rule the random cases check: compiled code gives NumPy's result (values, dtype,
shape), or NumPy's exception, or, for a combination compiled code does not compute, a
`CompileError` saying it is "not supported yet". That refusal is accepted only where NumPy's
result is a float16 (no compiled dtype), where NumPy itself raises TypeError, or where the
combination is listed in `MAY_REFUSE`; anything else (a wrong value or dtype, another
error, a crash) fails. One jitted function per function name, compiled once per case:
hypothesis's operands reuse it."""
import re
import types
import warnings

import numpy as np
import pytest
from array_checks import assert_same_array
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit, jvp
from astjit.errors import CompileError

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True, database=None)
REAL = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
        np.uint64, np.float32, np.float64)
COMPLEX = (np.complex64, np.complex128)

UNARY = ("negative", "positive", "absolute", "sign", "floor", "ceil", "round", "trunc", "fix",
         "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
         "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
         "isnan", "isinf", "isfinite", "logical_not", "invert", "real", "imag", "conj", "angle")
BINARY = ("add", "subtract", "multiply", "divide", "arctan2", "hypot", "mod", "remainder",
          "floor_divide", "power", "fmod", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "maximum", "minimum", "copysign",
          "greater", "less_equal", "equal", "not_equal")
WITH_COMPLEX = {"negative", "positive", "absolute", "isnan", "isinf", "isfinite", "logical_not",
                "real", "imag", "conj", "angle", "add", "subtract", "multiply", "divide", "power",
                "equal", "not_equal", "logical_and", "logical_or", "logical_xor", "sqrt", "exp",
                "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
                "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "exp2"}
"""The functions drawn with complex operands too."""
NOT_DRAWN = {"power": "u"}
"""An open bug, left out of the draw: np.power of unsigned ints raises "Integers to
negative integer powers are not allowed" for exponents of 2**(bits-1) and up."""

MAY_REFUSE = {
    **{(name, "c"): "complex math" for name in (
        "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
        "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh",
        "power")},
}
"""(function, a kind among its operands' dtypes): combinations compiled code may refuse
("not supported yet"), with what is missing; it may also compute them, as NumPy does."""

F = None
"""The function a template calls: `specialize` binds it (read at compile time)."""


def unary(x):
    return F(x)


def binary(x, y):
    return F(x, y)


def specialize(template, fn):
    scope = dict(template.__globals__)
    scope["F"] = fn
    return types.FunctionType(template.__code__, scope, template.__name__)


JITS = {}


def compiled(name: str, arity: int):
    """One jitted function per NumPy function (its compiled versions kept across cases)."""
    if name not in JITS:
        JITS[name] = jit(specialize(unary if arity == 1 else binary, getattr(np, name)))
    return JITS[name]


# ---- random operands -------------------------------------------------------------------------

def values(rng, shape, dtype):
    """Values of `dtype`, some at its edges (the extremes of an int, NaN, inf, -0.0)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -20), min(info.max, 20), shape, endpoint=True).astype(dtype)
        if x.size:
            x.flat[rng.integers(0, x.size, 2)] = [info.min, info.max]
        return x
    x = rng.standard_normal(shape) * 2
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    x = x.astype(dtype)
    if x.size > 3:
        x.flat[rng.integers(0, x.size, 3)] = [np.nan, np.inf, -0.0]
    return x


@st.composite
def arrays(draw, shape, dtype):
    """An array of `shape` and `dtype` that is a view with steps 2 or -1 on some axes, or a
    transpose, or a 0-d array."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    transposed = len(shape) >= 2 and draw(st.booleans())
    full = tuple(reversed(shape)) if transposed else tuple(shape)
    steps = [draw(st.sampled_from((1, 2, -1))) for _ in full]
    base = values(rng, tuple(n * abs(k) for n, k in zip(full, steps)), dtype)
    view = base[tuple(slice(None, None, k) for k in steps)]
    return view.T if transposed else view


@st.composite
def operands(draw, dtypes, ndims):
    """Operands of these dtypes and ndims that broadcast together (a Python scalar where
    the dtype is one of SCALARS' types), the later ones taking the first's trailing axes
    or 1."""
    shape = tuple(draw(st.integers(0, 4)) if draw(st.integers(0, 7)) == 0
                  else draw(st.integers(1, 4)) for _ in range(ndims[0]))
    out = []
    for k, (dtype, ndim) in enumerate(zip(dtypes, ndims)):
        if dtype in SCALARS:
            out.append(draw(st.sampled_from(SCALARS[dtype])))
            continue
        own = shape[len(shape) - ndim:]
        if k:
            own = tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in own)
        out.append(draw(arrays(own, dtype)))
    return tuple(out)


SCALARS = {int: (2, -3, 0), float: (0.5, -1.5), bool: (True, False)}
"""Python scalars (weak, NEP 50) as second operands, by type."""


def plan():
    """(function, operand dtypes, operand ndims): each function twice, the dtypes, the
    second operand's kind (the first's dtype, another, a Python scalar) and the ndims
    (0 to 3) taken in turn along the table so that all of them are met."""
    out = []
    for k, name in enumerate(UNARY + BINARY):
        dtypes = tuple(d for d in (REAL + COMPLEX if name in WITH_COMPLEX else REAL)
                       if np.dtype(d).kind != NOT_DRAWN.get(name))
        for j in (0, 1):
            first, ndim = dtypes[(3 * k + 7 * j) % len(dtypes)], (k + 2 * j) % 4
            if name in UNARY:
                out.append((name, (first,), (ndim,)))
                continue
            second = [first, dtypes[(5 * k + j) % len(dtypes)], (int, float, bool)[k // 3 % 3]][
                (k + j) % 3]
            out.append((name, (first, second), (ndim, 0 if second in SCALARS else
                                                 (k + j) % (ndim + 1))))
    return out


# ---- the comparison --------------------------------------------------------------------------

def numpy_outcome(fn, args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", fn(*args)
        except Exception as error:  # noqa: BLE001 - the exception is the outcome compared
            return "raised", error


def kinds(args):
    return {np.asarray(a).dtype.kind for a in args}


def assert_like_numpy(name, args):
    fn = getattr(np, name)
    status, want = numpy_outcome(fn, args)
    where = f"np.{name} of {[(np.asarray(a).dtype.name, np.shape(a)) for a in args]}"
    try:
        with np.errstate(all="ignore"):
            got = compiled(name, len(args))(*args)
    except CompileError as error:
        if status == "raised":
            assert isinstance(want, TypeError), (where, want, error)
            return
        allowed = np.asarray(want).dtype == np.float16 or any(
            (name, k) in MAY_REFUSE for k in kinds(args))
        assert allowed and "not supported yet" in str(error), (where, str(error))
        return
    except Exception as error:  # noqa: BLE001 - compared with NumPy's exception
        assert status == "raised" and type(error) is type(want), (where, error, want)
        return
    assert status == "ok", (where, "NumPy raised", want, "compiled code gave", got)
    assert_same_array(want, got, where, 2e-6, 1e-12)


@pytest.mark.parametrize(
    "name,dtypes,ndims", plan(),
    ids=[f"{n}-{'-'.join(getattr(d, '__name__', str(d)) for d in ds)}-{nd}" for n, ds, nd in plan()])
def test_matches_numpy(name, dtypes, ndims):
    """One compiled version (the dtypes and ndims), hypothesis's shapes, strides, values."""
    @SETTINGS
    @given(operands(dtypes, ndims))
    def check(args):
        assert_like_numpy(name, args)

    check()


def test_bools_compute_in_numpys_dtype():
    """np.mod, floor_divide, power and fmod of bools compute in int8, as NumPy's loops do."""
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    for name in ("mod", "floor_divide", "power", "fmod", "remainder"):
        assert_like_numpy(name, (a, b))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint64, np.int16, np.int64, np.float32,
                                   np.float64, np.bool_])
def test_sign_of_every_real_dtype(dtype):
    """np.sign of arrays and NumPy scalars: NumPy's values, dtype and type (a NumPy scalar
    of a scalar, never a 0-d array), unsigned ints 0 or 1, +0.0 for -0.0, NaN for NaN; of
    bools NumPy's TypeError, a refusal here."""
    if dtype == np.bool_:
        with pytest.raises(CompileError, match="not supported yet"):
            compiled("sign", 1)(np.array([True, False]))
        return
    if np.dtype(dtype).kind == "f":
        x = np.array([-2.5, -0.0, 0.0, 3.0, np.nan, -np.inf, np.inf], dtype=dtype)
    else:
        info = np.iinfo(dtype)
        x = np.array([info.min, 0, 1, info.max, *([-1] if info.min else [])], dtype=dtype)
    assert_like_numpy("sign", (x,))
    assert_like_numpy("sign", (x[::-2],))
    for element in x[:2]:
        want, got = np.sign(element), compiled("sign", 1)(element)
        assert type(got) is type(want) and np.array_equal(got, want, equal_nan=True), (
            element, got, want)
        assert np.signbit(got) == np.signbit(want), element


@pytest.mark.parametrize("name", ["absolute", "floor", "ceil", "trunc", "maximum", "minimum"])
def test_bools_stay_bools(name):
    """np.abs, np.floor, np.ceil, np.trunc of bools are the bools, np.maximum and np.minimum
    of bools are or and and, as NumPy's (arrays; the first two of NumPy bools too);
    np.round of bools (NumPy's float16) is refused, saying to convert first."""
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    assert_like_numpy(name, (a[::-1], b) if name in ("maximum", "minimum") else (a[::-1],))
    if name in ("absolute", "maximum"):
        assert_like_numpy(name, (np.False_, np.True_) if name == "maximum" else (np.True_,))
    if name == "floor":
        with pytest.raises(CompileError, match=r"astype\(np.float32\)"):
            compiled("round", 1)(a)


def scalar_power(x, p):
    return x ** p


def power_fused(x, p):
    return np.power(x * 0.5 + 0.5, p) * 2.0 + x


POWERS = {name: jit(fn) for name, fn in (("scalar_power", scalar_power), ("power_fused", power_fused))}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_powers_of_one_exponent_are_numpys_bits(dtype):
    """x ** p of a float array and a run-time number p, alone and fused: where p is 0.5, 2,
    -1, 1, 0 (-0.0) NumPy's loop computes sqrt, x * x, 1 / x, x, 1, and so does compiled
    code (each kernel has a version for them), bit for bit: -0.0 ** 0.5 is -0.0, -inf **
    0.5 NaN. Other exponents are pow's, within rounding."""
    rng = np.random.default_rng(3)
    with np.errstate(over="ignore"):
        x = np.concatenate([rng.uniform(0.1, 10, 200), rng.standard_normal(200),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1e308, -1.0]]
                           ).astype(dtype)
    unsigned = np.uint64 if dtype == np.float64 else np.uint32
    for name, fn in (("scalar_power", scalar_power), ("power_fused", power_fused)):
        for p in (0.5, 2.0, -1.0, 1.0, 0.0, -0.0, 3.0, -0.5, np.nan):
            with np.errstate(all="ignore"):
                want, got = fn(x, p), POWERS[name](x, p)
            where = f"{name} of {dtype.__name__} at p={p}"
            if p in (0.5, 2.0, -1.0, 1.0, 0.0):
                nan = np.isnan(want)
                assert got.dtype == want.dtype and np.array_equal(np.isnan(got), nan), where
                assert np.array_equal(got.view(unsigned)[~nan], want.view(unsigned)[~nan]), where
            else:
                assert_same_array(want, got, where, 1e-5, 1e-13)


# ---- remainders bit for bit ------------------------------------------------------------------

def edge_floats(dtype):
    """A float dtype's edges (zeros, infinities, NaN, extremes, subnormals, quotients near
    2**53) and numbers of every magnitude, integral ones and tenths."""
    fi = np.finfo(dtype)
    with np.errstate(over="ignore"):
        edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0,
                          0.1, -0.1, fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_subnormal,
                          -fi.smallest_subnormal, 2.0 ** 52, 2.0 ** 53, -2.0 ** 54, 7.5, -2.5,
                          1 - 2.0 ** -53, 1 + 2.0 ** -52], dtype=dtype)
    rng = np.random.default_rng(5)
    spread = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300),
                             rng.integers(-50, 50, 300), rng.integers(-50, 50, 300) * 0.1])
    with np.errstate(over="ignore"):
        spread = spread.astype(dtype)
    return (np.concatenate([np.repeat(edges, len(edges)), spread, spread * dtype(3)]),
            np.concatenate([np.tile(edges, len(edges)), spread[::-1], np.roll(spread, 7)]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_float_remainders_are_numpys_bits(dtype):
    """np.fmod, np.mod and np.floor_divide of floats give NumPy's bits (-0.0, inf, and NaN
    where NumPy's is NaN): the compiled fmod computes most remainders without libm's call."""
    a, b = edge_floats(dtype)
    unsigned = np.uint64 if dtype == np.float64 else np.uint32
    for name in ("fmod", "mod", "floor_divide"):
        with np.errstate(all="ignore"):
            want = getattr(np, name)(a, b)
            got = compiled(name, 2)(a, b)
        assert got.dtype == want.dtype
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan), name
        differ = np.flatnonzero(got.view(unsigned)[~nan] != want.view(unsigned)[~nan])
        assert not differ.size, (name, a[~nan][differ[:4]], b[~nan][differ[:4]])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64])
def test_int_fmod_at_the_extremes(dtype):
    """np.fmod of ints at the extremes: the lowest value by -1 is 0, by zero is 0."""
    info = np.iinfo(dtype)
    edges = np.array(sorted({info.min, info.min + 1, info.min // 2, 0, 1, 7, info.max,
                             info.max - 1} | ({-7, -1} if info.min else set())), dtype=dtype)
    a, b = np.repeat(edges, len(edges)), np.tile(edges, len(edges))
    with np.errstate(all="ignore"):
        assert_same_array(np.fmod(a, b), compiled("fmod", 2)(a, b), f"fmod {dtype}", 0, 0)


# ---- gradients and tangents against central differences -------------------------------------

SMOOTH = {  # name: (the loss's term, an input row in the function's smooth domain)
    "negative": ("-x", (-2.0, 2.0)), "absolute": ("np.absolute(x)", (0.2, 2.0)),
    "sign": ("np.sign(x) * x", (0.2, 2.0)), "floor": ("np.floor(x) * x", (0.1, 0.9)),
    "ceil": ("np.ceil(x) * x", (0.1, 0.9)), "round": ("np.round(x) * x", (0.6, 1.4)),
    "trunc": ("np.trunc(x) * x", (1.1, 1.9)), "fix": ("np.fix(x) * x", (1.1, 1.9)),
    "sqrt": ("np.sqrt(x)", (0.2, 3.0)), "exp": ("np.exp(x)", (-1.0, 1.0)),
    "exp2": ("np.exp2(x)", (-1.0, 1.0)), "expm1": ("np.expm1(x)", (-1.0, 1.0)),
    "log": ("np.log(x)", (0.2, 3.0)), "log2": ("np.log2(x)", (0.2, 3.0)),
    "log10": ("np.log10(x)", (0.2, 3.0)), "log1p": ("np.log1p(x)", (-0.5, 2.0)),
    "sin": ("np.sin(x)", (-2.0, 2.0)), "cos": ("np.cos(x)", (-2.0, 2.0)),
    "tan": ("np.tan(x)", (-1.0, 1.0)), "arcsin": ("np.arcsin(x)", (-0.9, 0.9)),
    "arccos": ("np.arccos(x)", (-0.9, 0.9)), "arctan": ("np.arctan(x)", (-2.0, 2.0)),
    "sinh": ("np.sinh(x)", (-2.0, 2.0)), "cosh": ("np.cosh(x)", (-2.0, 2.0)),
    "tanh": ("np.tanh(x)", (-2.0, 2.0)), "arcsinh": ("np.arcsinh(x)", (-2.0, 2.0)),
    "arccosh": ("np.arccosh(x)", (1.2, 3.0)), "arctanh": ("np.arctanh(x)", (-0.9, 0.9)),
    "clip": ("np.clip(x, -0.5, 0.5) * x", (-1.0, 1.0)),
    "arctan2": ("np.arctan2(x, y)", (-2.0, 2.0)), "hypot": ("np.hypot(x, y)", (0.3, 2.0)),
    "mod": ("np.mod(x, y)", (0.1, 0.4)), "remainder": ("np.remainder(x * 7.0, y)", (0.1, 0.4)),
    "fmod": ("np.fmod(x * 7.0, y)", (0.1, 0.4)),
    "floor_divide": ("np.floor_divide(x * 7.0, y) * x", (0.1, 0.4)),
    "power": ("np.power(x, y)", (0.5, 2.0)), "maximum": ("np.maximum(x, y * 0.5)", (0.3, 2.0)),
    "minimum": ("np.minimum(x, y * 0.5)", (0.3, 2.0)),
    "copysign": ("np.copysign(x, y - 1.0)", (0.3, 2.0)),
    "where": ("np.where(x > 1.0, x * x, y)", (0.3, 2.0)),
}
"""Every differentiable elementwise function as a term of one loss, row k of x (and of y,
where the function has two operands, y's values in [1.5, 2.5] where x's are given) for
function k. The piecewise constant ones are multiplied by x so the term has a derivative
(their own is zero away from their jumps, which the rows keep clear of)."""


def _load_losses():
    import importlib.util
    import pathlib
    import tempfile

    operand = re.compile(r"\b([xy])\b")
    terms = " +\n        ".join(f"w[{k}] * {operand.sub(lambda m: f'{m[1]}[{k}]', term)}"
                                for k, (term, _) in enumerate(SMOOTH.values()))
    path = pathlib.Path(tempfile.mkdtemp()) / "breadth_elementwise_losses.py"
    path.write_text(f"import numpy as np\n\n\ndef loss(x, y, w):\n    return np.sum({terms})\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.loss


loss = _load_losses()


def inputs(dtype=np.float64):
    rng = np.random.default_rng(11)
    lows, highs = np.array([d for _, d in SMOOTH.values()]).T
    x = lows[:, None] + (highs - lows)[:, None] * rng.uniform(0.05, 0.95, (len(SMOOTH), 3))
    y = rng.uniform(1.5, 2.5, x.shape)
    w = rng.uniform(0.5, 1.5, x.shape)
    return x.astype(dtype), y.astype(dtype), w.astype(dtype)


def central(fn, args, i, h=1e-6):
    g = np.zeros_like(args[i])
    for idx in np.ndindex(g.shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[i][idx] += h
        down[i][idx] -= h
        g[idx] = (fn(*up) - fn(*down)) / (2 * h)
    return g


def test_gradients_match_finite_differences():
    args = inputs()
    gx, gy = grad(loss, argnums=(0, 1))(*args)
    for got, i in ((gx, 0), (gy, 1)):
        want = central(loss, args, i)
        for k, name in enumerate(SMOOTH):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-6, atol=1e-7,
                                       err_msg=f"d/d{'xy'[i]} of {name}")


def test_tangents_match_finite_differences():
    args = inputs()
    rng = np.random.default_rng(12)
    dx, dy = rng.standard_normal(args[0].shape), rng.standard_normal(args[1].shape)
    value, tangent = jvp(loss, args, (dx, dy, np.zeros_like(args[2])))
    h = 1e-6
    step = (args[0] + h * dx, args[1] + h * dy, args[2])
    back = (args[0] - h * dx, args[1] - h * dy, args[2])
    np.testing.assert_allclose(value, loss(*args), rtol=1e-12)
    np.testing.assert_allclose(tangent, (loss(*step) - loss(*back)) / (2 * h), rtol=1e-6)
