"""`np.median`, `np.percentile`, `np.quantile` (method 'linear', NumPy's default) as views
of a sorted copy, with NumPy's arithmetic (numpy/lib/_function_base_impl.py):

- the array is sorted along the axis (flattened for `axis=None`): `s = sort(x)`, of
  length n along it;
- median: the element at (n - 1) // 2 where n is odd, else the mean of the two middle
  ones, `(a + b) / 2` (NumPy partitions and takes `np.mean` of them);
- quantile q (a number; percentile's q / 100), checked in [0, 1] at run time (NumPy's
  ValueError): the virtual index `v = (n - 1) * q`, its neighbours `floor(v)` and the
  next (both `n - 1` where `v >= n - 1`), `gamma = v - floor(v)` (`v + 1` past the end,
  as NumPy's index -1 gives), and NumPy's `_lerp`: `a + (b - a) * gamma`, or
  `b - (b - a) * (1 - gamma)` where `gamma >= 0.5`. An int q of np.quantile (0 or 1)
  takes the element at `v` itself, of x's dtype, as NumPy's integer path;
- a lane whose last sorted element is NaN gives that NaN (NumPy's NaN check).

Int and bool arrays give float64, float32 arrays float32, complex ones their own dtype
(the median only: NumPy refuses a complex quantile, and so does compiled code) (float64 where q is a NumPy
float64, as NumPy's promotion of a strong q). `keepdims` keeps the axis (all axes for
`axis=None`) with length 1. The gradient is that of the parts: the sort's permutation
and the interpolation weights (a median's adjoint goes to the middle element, or half to
each of the two).

The median of an empty lane is NaN, as NumPy's (without its RuntimeWarning "Mean of
empty slice"): a median reads its middle elements as one-element slices, which an empty
lane leaves empty, not as indices, which raise there. An empty lane is an IndexError for
quantiles, as NumPy's, and for a complex median (NumPy's is NaN+NaNj).

Not supported (compile errors saying so): an array q, a tuple axis, other methods,
`out=`.
"""
from __future__ import annotations

import math

from ..types import BOOL, F32, F64, I64, ArrayType, ScalarType, strong
from .vjp import select

RANGES = {"quantile": "Quantiles must be in the range [0, 1]",
          "percentile": "Percentiles must be in the range [0, 100]"}


def _take(em, s, k: int, index):
    """Element `index` of every lane of `s` along axis `k` (a number for a 1-d `s`)."""
    if s.type.ndim == 1:
        return em.op("array_get", s, index)
    return em.op("array_view", s, index, spec=("s000",) * k + ("i",))


def _to(em, v, t: ScalarType):
    if isinstance(v.type, ArrayType):
        return em.astype(v, t)
    return v if v.type == strong(t) else em.op("cast", v, to=strong(t))


def _float_type(x: ArrayType, q) -> ScalarType:
    if x.dtype.is_complex:
        return x.dtype  # a complex median is complex (NumPy's mean of the middle ones)
    t = F32 if x.dtype == F32 else F64
    if q is not None and not isinstance(q.type, ArrayType) and q.type.strong and q.type.is_float:
        return F64  # a NumPy float64 q promotes a float32 array's result
    return t


def _read(em, s, k: int, index):
    """Element `index` of every lane of a real `s` along axis `k`, or 1 where the lane is
    empty (where `_take` raises): the product over the lane's slice [index:index + 1],
    which is the element itself, -0.0 and NaN as they are, and 1 of an empty slice."""
    stop = em.op("add", index, em.const(1))
    part = em.op("array_view", s, index, stop, spec=("s000",) * k + ("s110",))
    return em.op("reduce", part, kind="prod", axis=(k,), keepdims=False, dtype=None)


def _median(em, s, k: int, n, t: ScalarType):
    """NumPy's median of each lane; of an empty lane NaN (NumPy also warns: "Mean of empty
    slice"), but for a complex `s`, whose empty lane raises IndexError."""
    one, two = em.const(1), em.const(2)
    read = _take if t.is_complex else _read
    low = _to(em, read(em, s, k, em.op("floordiv", em.op("sub", n, one), two)), t)
    high = _to(em, read(em, s, k, em.op("floordiv", n, two)), t)
    # NumPy's np.mean of the middle one or two: a sum from 0.0 (a median of -0.0 is 0.0)
    low = em.op("add", em.const(0.0), low)
    mean = em.op("truediv", em.op("add", low, high), em.const(2.0))
    odd = em.op("eq", em.op("mod", n, two), one)
    return select(em, odd, low, mean)


def _quantile(em, function: str, s, k: int, n, q, t: ScalarType):
    if isinstance(q.type, ArrayType):
        em.fail(f"np.{function}() of an array of q is not supported yet",
                f"call np.{function}() once per q, e.g. in a tuple")
    if q.type not in (F64, I64, strong(F64), strong(I64), BOOL):
        em.fail(f"q of np.{function}() must be a number, got {q.type}")
    last = em.op("sub", n, em.const(1))
    if function == "quantile" and not q.type.is_float:
        em.raise_if(em.op("bitor", em.op("lt", q, em.const(0)), em.op("gt", q, em.const(1))),
                    "ValueError", RANGES[function])
        return _take(em, s, k, em.op("mul", last, em.op("cast", q, to=I64)))  # x's dtype
    q = em.op("cast", q, to=strong(F64))
    if function == "percentile":
        q = em.op("fdiv", q, em.op("const", value=100.0, type=strong(F64)))
    inside = em.op("bitand", em.op("ge", q, em.const(0.0)), em.op("le", q, em.const(1.0)))
    em.raise_if(em.op("not", inside), "ValueError", RANGES[function])
    v = em.op("mul", em.op("cast", last, to=strong(F64)), q)
    above = em.op("ge", v, em.op("cast", last, to=strong(F64)))
    floor = em.op("cast", v, to=I64)  # v >= 0: truncation is the floor
    previous = em.op("select", above, last, floor)
    following = em.op("select", above, last, em.op("add", floor, em.const(1)))
    gamma = em.op("sub", v, em.op("select", above, em.op("const", value=-1.0, type=strong(F64)),
                                  em.op("cast", floor, to=strong(F64))))
    a, b = _to(em, _take(em, s, k, previous), t), _to(em, _take(em, s, k, following), t)
    diff = em.op("sub", b, a)
    rising = em.op("add", a, em.op("mul", diff, _to(em, gamma, t)))
    rest = em.op("sub", em.op("const", value=1.0, type=strong(F64)), gamma)
    falling = em.op("sub", b, em.op("mul", diff, _to(em, rest, t)))
    return select(em, em.op("ge", gamma, em.const(0.5)), falling, rising)


def order_statistic(em, function: str, x, q, attrs: dict):
    """The median / percentile / quantile of `x` (ops/sorting_functions.py's `em`)."""
    if attrs.get("method", "linear") != "linear":
        em.fail(f"method={attrs['method']!r} of np.{function}() is not supported yet: compiled "
                "code computes NumPy's default, 'linear'")
    if x.type.dtype == BOOL and function != "median":
        em.fail(f"np.{function}() of a bool array: NumPy raises TypeError (numpy boolean "
                "subtract)", "convert it first: x.astype(np.float64)")
    if x.type.dtype.is_complex and function != "median":
        em.fail(f"np.{function}() of a complex array: NumPy raises TypeError (a must be an "
                "array of real numbers)", "take the quantiles of "
                "x.real and x.imag, or of np.abs(x)")
    axis, keepdims, ndim = attrs.get("axis"), bool(attrs.get("keepdims")), x.type.ndim
    if isinstance(axis, tuple):
        if len(axis) != 1:
            em.fail(f"np.{function}() over a tuple of axes is not supported yet",
                    "move the axes to the end and reshape them into one: "
                    "np.median(x.reshape(x.shape[0], -1), axis=1)")
        axis = axis[0]
    if axis is None or ndim == 0:
        s, k = em.op("sort", em.ravel(x), axis=0, kind="quicksort"), 0
    else:
        k = em.axis(axis, ndim)
        s = em.op("sort", x, axis=k, kind="quicksort")
    t = _float_type(x.type, q)
    n = em.dim(s, k)
    result = _median(em, s, k, n, t) if function == "median" \
        else _quantile(em, function, s, k, n, q, t)
    if x.type.dtype.is_float:
        read = _read if function == "median" else _take
        end = _to(em, read(em, s, k, em.op("sub", n, em.const(1))), t)
        result = select(em, em.op("isnan", end), end, result)
    if function == "median" and not t.is_complex:
        # NumPy's is its mean of an empty slice, 0.0 / 0, whose NaN has the sign bit set
        nan = em.op("const", value=-math.nan, type=strong(t))
        result = select(em, em.op("eq", n, em.const(0)), nan, result)
    if not keepdims:
        return result
    if axis is None or ndim == 0:
        return em.reshape(em.as_array(result), [em.const(1)] * ndim)
    if not isinstance(result.type, ArrayType):
        return em.reshape(em.as_array(result), [em.const(1)])
    return em.op("array_expand_dims", result, axes=(k,))
