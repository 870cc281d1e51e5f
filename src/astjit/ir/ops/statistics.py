"""Reductions NumPy defines from other reductions: `np.var`, `np.std`, `np.ptp`,
`np.count_nonzero`, `np.all` and the NaN-ignoring `np.nansum`, `np.nanprod`, `np.nanmean`,
`np.nanvar`, `np.nanstd` (`np.nanmax` and `np.nanmin` are rows of `REDUCTIONS`).

One primitive, `statistic`, inputs `[x, ddof]`, attrs `kind` (a key of `STATISTICS`),
`axis` and `keepdims` (as `reduce`'s) and `dtype` (None or the float type NumPy's
`dtype=` names). Type inference expands it (`OpDef.expand`) into `reduce` nodes and
elementwise ops, the kind's entry of `STATISTICS`, written as NumPy's own
implementation computes it (numpy/_core/_methods.py, numpy/lib/_nanfunctions_impl.py):

- var: `mean(x, keepdims=True)` (a scalar where every axis is reduced: `_kept`), then
  `sum((x - mean) ** 2) / max(n - ddof, 0)` (0 / 0 is NaN, s / 0 inf); std: its square
  root. Two passes over `x`, each one fused loop;
- ptp: `max(x) - min(x)` (NumPy's errors for an empty reduction);
- count_nonzero: `sum(x != 0)`, int64; all: `not any(x == 0)` (`_all` says why);
- nansum / nanprod: the sum / product with each NaN replaced by 0 / 1;
- nanmean: that sum over the count of non-NaN elements (NaN where there are none);
- nanvar / nanstd: var over the non-NaN elements, NaN where `count - ddof <= 0`.

On integer and bool arrays the nan* kinds are their plain kinds, as in NumPy.
So every later layer (fusion, both backends, reverse and forward mode) sees only
ops it knows: the gradients are those of the parts (a NaN's adjoint is 0).
"""
from __future__ import annotations

from ..core import Node, Value
from ..types import BOOL, C64, F32, F64, I64, ArrayType, ScalarType, strong
from .declare import _def
from .reductions import normalize_axes
from .table import OpTypeError, Refused
from .vjp import div, select


class _Expansion:
    """Typed nodes appended to the graph type inference builds, typed by inference itself
    (its coercions and NumPy's promotion): the `e` the rules of `STATISTICS` call, with the
    interface of ad/builder.GraphBuilder (so vjp.py's helpers serve)."""

    def __init__(self, inference, out, loc, name: str):
        self.inference, self.out, self.loc, self.name = inference, out, loc, name

    def op(self, name: str, *inputs: Value, **attrs) -> Value:
        node = Node(name, [], [Value(self.name, None)], attrs, loc=self.loc)
        return self.inference.infer_leaf(node, list(inputs), self.out)[0]

    def const(self, value, t: ScalarType) -> Value:
        return self.op("const", value=value, type=t)


def _float_of(x: Value, dtype: ScalarType | None) -> ScalarType:
    """The float type NumPy computes a var / nanmean of `x` in (a complex's part's)."""
    return dtype or (F32 if x.type.dtype in (F32, C64) else F64)


def _inexact(x: Value) -> bool:
    """Whether `x` may hold NaNs (NumPy's inexact dtypes: a complex is NaN where either
    part is, np.isnan's and `x != x`'s NaN)."""
    return x.type.dtype.is_float or x.type.dtype.is_complex


def _scalar_type(v: Value) -> ScalarType:
    return v.type.dtype if isinstance(v.type, ArrayType) else v.type


def _count(e, x, axes) -> Value:
    """The number of elements each result reduces (an int64 scalar)."""
    n = e.const(1, I64)
    for k in axes:
        n = e.op("mul", n, e.op("array_dim", x, axis=k))
    return n


def _kept(x, axes) -> bool:
    """Whether a mean over `axes`, broadcast back against `x`, keeps its axes (NumPy's
    keepdims=True): not where it reduces every axis, whose scalar broadcasts the same, with
    no array of one element to allocate, check against x's shape and free."""
    return len(axes) < x.type.ndim


def _squares(e, x, axes, keepdims, dtype, mask=None):
    """sum((x - mean) ** 2) over `axes`, the mean that of `x` (of the non-NaN elements of
    x, where `mask` (NaN-free) and `mask`'s count, of `_nan_parts`, are given), and the
    deviations of masked elements 0. The mean and the sum in `dtype` (NumPy's _var: x -
    mean in x's)."""
    kept = _kept(x, axes)
    if mask is None:
        m = e.op("reduce", x, kind="mean", axis=axes, keepdims=kept, dtype=dtype)
        d = e.op("sub", x, m)
    else:
        zeroed, count = mask
        m = div(e, e.op("reduce", zeroed, kind="sum", axis=axes, keepdims=kept, dtype=dtype), count)
        d = e.op("sub", zeroed, m)
        d = select(e, e.op("eq", x, x), d, e.const(0.0, _scalar_type(d)))
    squares = e.op("mul", d, d)
    if _scalar_type(d).is_complex:  # NumPy's |d|^2: the real part of d * conj(d)
        squares = e.op("real", e.op("mul", d, e.op("conj", d)))
    return e.op("reduce", squares, kind="sum", axis=axes, keepdims=keepdims, dtype=dtype)


def _rows(x, axes) -> bool:
    """Whether `axes` are x's last ones and not all of them (rowfuse.py's row-wise
    reductions)."""
    return bool(axes) and axes[0] >= 1 and tuple(axes) == tuple(range(axes[0], x.type.ndim))


def _deviation(root: bool):
    """NumPy's var: the squared deviations' sum over max(n - ddof, 0); its square root
    where `root` (std). Along rows the sum keeps its axes and the reduced axes go after
    the division (and root): a view of a fresh array, where the division is then one value
    per row of the row group (rowfuse.py), not a loop over the rows of its own."""
    def rule(e, x, ddof, axes, keepdims, dtype):
        squeeze = not keepdims and _rows(x, axes)
        s = _squares(e, x, axes, keepdims or squeeze, dtype)
        t = _scalar_type(s)
        dof = e.op("sub", e.op("cast", _count(e, x, axes), to=t), e.op("cast", ddof, to=t))
        dof = e.op("select", e.op("gt", dof, e.const(0.0, t)), dof, e.const(0.0, t))
        result = div(e, s, dof)
        if root:
            result = e.op("sqrt", result)
        return e.op("array_squeeze", result, axes=tuple(axes)) if squeeze else result
    rule.__doc__ = "The standard deviation." if root else "The variance."
    return rule


_var = _deviation(root=False)


def _nan_parts(e, x, axes, dtype):
    """x with NaNs as 0, and the count of non-NaN elements along `axes` (as floats, its axes
    kept as `_kept` says)."""
    t = _float_of(x, dtype)
    zeroed = select(e, e.op("isnan", x), e.const(0.0, x.type.dtype), x)
    count = e.op("reduce", e.op("eq", x, x), kind="sum", axis=axes, keepdims=_kept(x, axes),
                 dtype=t)
    return zeroed, count


def _nanvar(e, x, ddof, axes, keepdims, dtype):
    """NumPy's: var of the non-NaN elements; NaN where count - ddof <= 0."""
    if not _inexact(x):
        return _var(e, x, ddof, axes, keepdims, dtype)
    zeroed, count = _nan_parts(e, x, axes, dtype)
    s = _squares(e, x, axes, keepdims, dtype, (zeroed, count))
    t = _scalar_type(s)
    if not keepdims and _kept(x, axes):
        count = e.op("reduce", e.op("eq", x, x), kind="sum", axis=axes, keepdims=False, dtype=t)
    dof = e.op("sub", count, e.op("cast", ddof, to=t))
    return select(e, e.op("gt", dof, e.const(0.0, t)), div(e, s, dof), e.const(float("nan"), t))


def _nanmean(e, x, ddof, axes, keepdims, dtype):
    """The sum of the non-NaN elements over their count (0 / 0: NaN)."""
    if not _inexact(x):
        return e.op("reduce", x, kind="mean", axis=axes, keepdims=keepdims, dtype=dtype)
    t = _float_of(x, dtype)
    zeroed = select(e, e.op("isnan", x), e.const(0.0, x.type.dtype), x)
    total = e.op("reduce", zeroed, kind="sum", axis=axes, keepdims=keepdims, dtype=dtype)
    count = e.op("reduce", e.op("eq", x, x), kind="sum", axis=axes, keepdims=keepdims, dtype=t)
    if _scalar_type(total).is_complex:  # NumPy's division (`div`'s fdiv takes real numbers)
        return e.op("truediv", total, count)
    return div(e, total, count)


def _nan_replaced(kind: str, fill: float):
    """nansum / nanprod: the reduction with NaNs replaced by its identity `fill`."""
    def rule(e, x, ddof, axes, keepdims, dtype):
        if _inexact(x):
            x = select(e, e.op("isnan", x), e.const(fill, x.type.dtype), x)
        return e.op("reduce", x, kind=kind, axis=axes, keepdims=keepdims, dtype=dtype)
    rule.__doc__ = f"np.{kind} with each NaN replaced by {fill}."
    return rule


def _std(var_rule):
    def rule(e, x, ddof, axes, keepdims, dtype):
        return e.op("sqrt", var_rule(e, x, ddof, axes, keepdims, dtype))
    rule.__doc__ = "The square root of the variance."
    return rule


def _ptp(e, x, ddof, axes, keepdims, dtype):
    """max - min (NumPy's errors for an empty reduction: its max's)."""
    high = e.op("reduce", x, kind="max", axis=axes, keepdims=keepdims)
    return e.op("sub", high, e.op("reduce", x, kind="min", axis=axes, keepdims=keepdims))


def _zero(e, x) -> Value:
    """0 of x's dtype (False for bools)."""
    return e.const(False if x.type.dtype == BOOL else 0, x.type.dtype)


def _all(e, x, ddof, axes, keepdims, dtype):
    """not any(x == 0): an `or` of the complements, negated (an `and` of AVX-512 mask
    registers compiles to one chain of masked compares, four times slower)."""
    found = e.op("reduce", e.op("eq", x, _zero(e, x)), kind="any", axis=axes, keepdims=keepdims)
    return e.op("eq", found, e.const(False, BOOL))


def _count_nonzero(e, x, ddof, axes, keepdims, dtype):
    """The number of x != 0 (NaN counts), int64."""
    return e.op("reduce", e.op("ne", x, _zero(e, x)), kind="sum", axis=axes, keepdims=keepdims)


STATISTICS = {
    "var": _var,
    "std": _deviation(root=True),
    "nanvar": _nanvar,
    "nanstd": _std(_nanvar),
    "nanmean": _nanmean,
    "nansum": _nan_replaced("sum", 0.0),
    "nanprod": _nan_replaced("prod", 1.0),
    "ptp": _ptp,
    "count_nonzero": _count_nonzero,
    "all": _all,
}
"""Kind -> `rule(e, x, ddof, axes, keepdims, dtype)` building its result from `x`."""

TAKES = {"var": ("dtype", "ddof"), "std": ("dtype", "ddof"), "nanvar": ("dtype", "ddof"),
         "nanstd": ("dtype", "ddof"), "nanmean": ("dtype",), "nansum": ("dtype",),
         "nanprod": ("dtype",), "ptp": (), "count_nonzero": (), "all": ()}
"""The NumPy parameters each kind has besides `axis` and `keepdims`."""


def _check(types, attrs) -> tuple[int, ...]:
    """The reduced axes; OpTypeError where NumPy raises (or compiled code can't follow)."""
    x, ddof = types
    kind = attrs["kind"]
    if not isinstance(x, ArrayType):
        raise OpTypeError(f"np.{kind}() needs an array here, got {x}")
    if ddof not in (I64, F64):
        raise OpTypeError(f"ddof= of np.{kind}() must be an int or a float, got {ddof}")
    return normalize_axes(attrs.get("axis"), x.ndim)


def statistic_rule(types, attrs):
    """Only where the operands are wrong (the expansion types the rest): the error."""
    _check(types, attrs)
    raise OpTypeError(f"np.{attrs['kind']}() is expanded by type inference")


def _expand(inference, node, inputs, out):
    """The kind's rule on the typed operands (OpDef.expand); None where they are wrong, so
    that the type rule reports it, located."""
    try:
        axes = _check([v.type for v in inputs], node.attrs)
    except OpTypeError:
        return None
    e = _Expansion(inference, out, node.loc, node.outputs[0].name)
    x, keepdims = inputs[0], bool(node.attrs.get("keepdims"))
    if x.type.ndim == 0:  # as one element of a 1-d array: NumPy's result is a scalar too
        x, axes, keepdims = e.op("array_reshape", x, e.const(1, I64)), (0,), False
    result = STATISTICS[node.attrs["kind"]](e, x, inputs[1], axes, keepdims,
                                            node.attrs.get("dtype"))
    if isinstance(result.type, ScalarType) and not result.type.strong:
        result = e.op("cast", result, to=strong(result.type))  # NumPy's is a NumPy scalar
    return [result]


def py_statistic(x, ddof, *, kind: str, axis=None, keepdims: bool = False, dtype=None):
    """NumPy's function (an untyped graph's interpretation)."""
    import warnings

    import numpy

    from ..types import NUMPY_NAMES

    kw = {"keepdims": keepdims} | ({"ddof": ddof} if "ddof" in TAKES[kind] else {})
    if dtype is not None:
        kw["dtype"] = NUMPY_NAMES[dtype.name]
    with numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = getattr(numpy, kind)(x, axis=axis, **kw)
    return result if isinstance(result, numpy.ndarray) else result.item()


_EXPANDED = "type inference expands it into reductions and elementwise ops"
_def("statistic", 2, statistic_rule, py_statistic, {"*": Refused(_EXPANDED)},
     ("pure", "raises", "reads"), expand=_expand, cuda=Refused(_EXPANDED), no_vjp=_EXPANDED,
     doc="np.var/std/ptp/count_nonzero/nan*(x, ddof, axis, keepdims, dtype): expanded by type "
         "inference (ops/statistics.py)")
