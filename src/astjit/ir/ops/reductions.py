"""Reductions over array axes that fold one accumulator: `np.sum`, `np.mean`, `np.max`,
`np.min`, `np.prod`, `np.any`, `np.nanmax`, `np.nanmin` (and the methods).

Each kind is one row of `REDUCTIONS` (a `ReductionKind`): its spellings, result
dtype, identity, NumPy reference, LLVM combine / finish descriptors and VJP, so
that a new kind is one new row; every layer (frontend, type rule, fusion,
verifier, interpreter, backend) reads the row. Reductions that are not one fold
are elsewhere: var, std, ptp, count_nonzero, the other nan* and all (`not any(x ==
0)`) are built from these (ops/statistics.py); argmax, argmin, cumsum and cumprod are
ops of their own (ops/scans.py).

One primitive, `reduce`, with one input (an array) and these attrs:

- `kind`: a key of `REDUCTIONS`: "sum", "mean", "max", "min", "prod", "any", "nanmax"
  or "nanmin", or an extremum's "max_or_identity" (and min's, nanmax's, nanmin's), which
  gives its identity for an empty reduction (the `initial=` of np.max);
- `axis`: None (every axis) or a tuple of ints *as the user wrote them*: possibly
  negative, in any order. The type rule checks them against the input's ndim
  (NumPy's "axis 2 is out of bounds for array of dimension 2", "duplicate value
  in 'axis'"); `normalize_axes(axis, ndim)` gives the sorted, non-negative
  tuple, the form the fusion pass stores on a `fused` node (core.py) and the
  form a VJP rule wants;
- `keepdims`: a bool; True keeps each reduced axis with length 1;
- `dtype` (optional): NumPy's `dtype=`, the type the elements are converted to and
  reduced in (`accumulated`): a float type, or int64 for a sum or a product.

The result (`result_type`): NumPy's dtype (`result_dtype`: sum and prod of bool or
int64 is int64, of f32 f32, of f64 f64; mean of bool or int64 is f64, of f32 f32;
max, min, nanmax and nanmin keep the dtype, bool too; any is bool) and ndim
(the input's, less the reduced axes unless `keepdims`). Reducing every axis without
`keepdims` (or a 0-d array, keepdims or not) gives a scalar of that dtype, not a 0-d
array, as NumPy does.

Semantics are NumPy's: max and min (nanmax, nanmin) of an empty reduction (any
reduced axis of length 0) raise ValueError "zero-size array to reduction operation
maximum (fmax) which has no identity"; NaN propagates through max and min, and
nanmax and nanmin skip it (`llvm.maxnum`, C's `fmax`: NaN only where every element
is); sum of nothing is 0, prod 1, any False, and mean of nothing NaN (NumPy also
warns). any takes an element as true where it is not 0 (NaN is true). The gradient
of prod is the product of the other elements (exact where some are 0); any has none.
Integer sums wrap. Compiled code adds floats in an unspecified order (the vectorizer
keeps several partial sums; NumPy's own order is pairwise), so float sums agree with
NumPy's to rounding, not bit for bit.

Before fusion `reduce` is a leaf op with the interpreter's `evaluate` (NumPy
itself) and a Routine lowering; the fusion pass (passes/fuse.py) turns every
`reduce` into a `fused` node carrying the reduction, joined with the
elementwise group that computes its operand when it can.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..shape_algebra import reduced
from ..types import BOOL, F32, F64, I64, U64, ArrayType, ScalarType, Type, int_range
from .batching import NotBatchable, each, shifted
from .declare import _def
from .table import Builder, CExpr, Intrinsic, OpTypeError, Routine, lowering_for
from .vjp import c, div, is_array, select, with_attrs

EMPTY_REDUCTION = "zero-size array to reduction operation {name} which has no identity"


@dataclass(frozen=True)
class ReductionKind:
    """One reduction kind, as every layer needs it. Per-dtype entries are keyed like the op
    table's lowerings: 'f' (float), 'i' (int), 'b' (bool) of the accumulator dtype."""

    name: str
    """The `kind` attr of `reduce` and of a kernel's `Reduction`."""
    spellings: tuple[str, ...]
    """NumPy functions lowered to it (`np.amax` too); the first is also an array method."""
    ufunc: str
    """The name NumPy's errors give it ("zero-size array to reduction operation maximum")."""
    dtype: Callable[[ScalarType], ScalarType]
    """The result dtype of reducing an array of a dtype; also the accumulator's."""
    identity: dict[str, object]
    """The accumulator's start value."""
    empty_raises: bool
    """NumPy has no identity for it: reducing nothing raises ValueError (`empty_message`)."""
    reference: str
    """The NumPy function the interpreter runs (`py_reduce`)."""
    combine: dict[str, Builder | Intrinsic | Routine]
    """LLVM: the accumulator after taking in an element, `op(acc, x)` (a `Routine`: a
    function of the builder and both, backend/llvm/reduction_nests.py's `COMBINE_ROUTINES`)."""
    finish: Builder | None
    """LLVM: the result from the accumulator, `op(acc, count)` with the count converted to
    the accumulator's float type; None: the accumulator itself."""
    pick: str | None
    """For a float accumulator, the ordered compare by which an element replaces it: the
    backend's compare-select accumulator with a NaN flag (backend/llvm/reductions.py)."""
    signed_zero: bool
    """Its float result of a 0-d array is `identity + x` (NumPy's sum turns -0.0 into +0.0)."""
    vjp: Callable
    """`vjp(e, g, x, out, axes, keepdims)`: the adjoint of a float `x` (ops/vjp.py's builder)."""
    cuda_combine: dict[str, CExpr] = field(default_factory=dict)
    """CUDA: the accumulator after taking in another accumulator or element, `{0}` and `{1}`
    (a tree combines partial results in any order)."""
    cuda_finish: CExpr | None = None
    """CUDA: the result from the accumulator `{0}` and the count `{1}` (already of the
    accumulator's type); None: the accumulator itself."""
    jvp: Callable | None = None
    """`jvp(e, dx, x, out, axes, keepdims)`: the tangent of the result from the tangent `dx`
    of a float `x` (the transpose of the VJP's linear map); None: not differentiable."""
    skips_nan: bool = False
    """With `pick`: NaN elements are skipped (nanmax), the result NaN only where every
    element is; else one NaN makes the result NaN (max)."""
    reference_initial: bool = False
    """The interpreter gives `reference` the identity as NumPy's `initial=`: a kind that
    does not raise where its reference does (`max_or_identity`)."""

    def start(self, t: ScalarType):
        """The identity for an accumulator of dtype `t`: an int's clamped to its range (the
        max of int8 starts from -128, of uint8 from 0)."""
        value = lowering_for(self.identity, t)
        if t.is_int:
            low, high = int_range(t)
            return max(low, min(high, value))
        return value

    def combine_for(self, t: ScalarType):
        """The LLVM combine step for an accumulator of dtype `t`."""
        return lowering_for(self.combine, t)


def empty_message(kind: str) -> str:
    """NumPy's ValueError for reducing nothing with a kind that has no identity."""
    return EMPTY_REDUCTION.format(name=REDUCTIONS[kind].ufunc)


def normalize_axes(axis: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """The reduced axes, non-negative and sorted; OpTypeError as NumPy's AxisError."""
    if axis is None:
        return tuple(range(ndim))
    fixed = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise OpTypeError(f"axis {a} is out of bounds for array of dimension {ndim}")
        fixed.append(a + ndim if a < 0 else a)
    if len(set(fixed)) != len(fixed):
        raise OpTypeError(f"duplicate value in 'axis': {axis}")
    return tuple(sorted(fixed))


def result_dtype(kind: str, dtype: ScalarType) -> ScalarType:
    """NumPy's result dtype of reduction `kind` of an array of `dtype`."""
    return REDUCTIONS[kind].dtype(dtype)


def accumulator(kind: str, attrs: dict, dtype: ScalarType) -> ScalarType:
    """The dtype a `reduce` node of `kind` and `attrs` accumulates (and returns) elements of
    `dtype` in: NumPy's `dtype=` for a sum or product (np.sum(k, dtype=np.int8) wraps in
    int8), else the kind's result dtype of `accumulated`'s."""
    given = attrs.get("dtype")
    if given is not None and kind in ("sum", "prod"):
        return given
    return result_dtype(kind, accumulated(attrs, dtype))


def result_type(kind: str, dtype: ScalarType, ndim: int, axes: tuple[int, ...],
                keepdims: bool, explicit: bool = False) -> Type:
    """The type of reducing `axes` (normalized) of an ndim-d array of `dtype`; `explicit`:
    `dtype` was given (NumPy's `dtype=`), which a sum or product keeps (int8 too)."""
    out = dtype if explicit and kind in ("sum", "prod") else result_dtype(kind, dtype)
    if ndim == 0 or len(axes) == ndim and not keepdims:
        return out  # NumPy reduces a 0-d array to a scalar, keepdims or not
    return ArrayType(out, ndim if keepdims else ndim - len(axes))


def reduce_rule(types, attrs):
    (t,) = types
    kind = attrs["kind"]
    if kind not in REDUCTIONS:
        raise OpTypeError(f"unknown reduction {kind!r}")
    if not isinstance(t, ArrayType):
        raise OpTypeError(f"np.{kind}() needs an array here, got {t}")
    if t.dtype.is_complex and "c" not in REDUCTIONS[kind].combine:
        raise OpTypeError(f"np.{kind}() of a complex array is not supported yet "
                          "(docs/arrays.md: complex)")
    axes = normalize_axes(attrs.get("axis"), t.ndim)
    return [t], result_type(kind, accumulated(attrs, t.dtype), t.ndim, axes,
                            bool(attrs.get("keepdims")), attrs.get("dtype") is not None)


def accumulated(attrs: dict, dtype: ScalarType) -> ScalarType:
    """The dtype a `reduce` node's elements are reduced in: its `dtype` attr (NumPy's
    `dtype=`, a type the kind keeps: float, or int64 for a sum or product) or theirs."""
    return attrs.get("dtype") or dtype


def py_reduce(x, *, kind: str, axis=None, keepdims: bool = False, dtype=None):
    """NumPy's reduction; a Python scalar when every axis goes and none is kept."""
    import warnings

    import numpy

    from ..types import NUMPY_DTYPES, NUMPY_NAMES

    row = REDUCTIONS[kind]
    reference = getattr(numpy, row.reference)
    extra = {"dtype": NUMPY_NAMES[dtype.name]} if dtype is not None else {}
    if row.reference_initial:
        extra["initial"] = row.start(ScalarType(NUMPY_DTYPES[numpy.asarray(x).dtype.name]))
    with numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice"
        result = reference(x, axis=axis, keepdims=keepdims, **extra)
    if isinstance(result, numpy.ndarray):
        return result
    if keepdims and numpy.ndim(x) > 0:  # NumPy may give a scalar where the type says 0-d array
        return numpy.asarray(result)
    return result.item()


def _expand(e, v, x, axes: tuple[int, ...], keepdims: bool):
    """A reduction's result (or adjoint) `v` with the reduced axes of `x` back, of length 1,
    so that it broadcasts against `x` (a scalar broadcasts as it is)."""
    if not is_array(v) or keepdims:
        return v
    dims = [e.const(1, I64) if k in axes else e.op("array_dim", x, axis=k)
            for k in range(x.type.ndim)]
    return e.op("array_reshape", v, *dims)


def _count(e, x, axes: tuple[int, ...], like):
    """How many elements each result of reducing `axes` of `x` summed, as `like`'s float."""
    n = e.const(1, I64)
    for k in axes:
        n = e.op("mul", n, e.op("array_dim", x, axis=k))
    return e.op("cast", n, to=c(e, 0.0, like).type)


def _sum_vjp(e, g, x, out, axes, keepdims):
    """g spread back over the reduced axes, to x's shape."""
    return e.op("add", e.op("array_new_like", x, fill=0), _expand(e, g, x, axes, keepdims))


def _mean_vjp(e, g, x, out, axes, keepdims):
    """The sum's, over the count."""
    spread = div(e, _expand(e, g, x, axes, keepdims), _count(e, x, axes, g))
    return e.op("add", e.op("array_new_like", x, fill=0), spread)


def _ties(e, x, out, axes, keepdims, like):
    """The positions holding the result, and how many there are in each reduced slice (as
    `like`'s float, keepdims'd): several equal ones share the derivative equally, JAX's
    rule. Each taking all of it counted a derivative once per tie where the tied elements
    move together (`np.min(np.clip(x, lo, hi))` with two elements clipped to `lo`)."""
    picked = e.op("eq", x, _expand(e, out, x, axes, keepdims))
    ones = select(e, picked, c(e, 1.0, like), c(e, 0.0, like))
    return picked, e.op("reduce", ones, kind="sum", axis=axes, keepdims=True)


def _extremum_vjp(e, g, x, out, axes, keepdims):
    """g to the positions holding the result, shared equally among equal ones."""
    picked, ties = _ties(e, x, out, axes, keepdims, g)
    share = div(e, _expand(e, g, x, axes, keepdims), ties)
    return select(e, picked, share, c(e, 0.0, g))


def _same_reduction(kind: str) -> Callable:
    """The forward rule of a linear reduction: the same reduction of the tangent."""
    def jvp(e, dx, x, out, axes, keepdims):
        return e.op("reduce", dx, kind=kind, axis=axes, keepdims=keepdims)
    return jvp


def _extremum_jvp(e, dx, x, out, axes, keepdims):
    """The transpose of `_extremum_vjp`'s map: the mean of the tangents at the positions
    holding the result."""
    picked, ties = _ties(e, x, out, axes, keepdims, dx)
    total = e.op("reduce", select(e, picked, dx, c(e, 0.0, dx)), kind="sum", axis=axes,
                 keepdims=True)
    mean = div(e, total, ties)
    return mean if keepdims else e.op("reduce", mean, kind="sum", axis=axes, keepdims=False)


def _prod_partials(e, x, axes):
    """d prod / d x at each element of `x`: the product of the others along `axes` (JAX's
    rule, exact at zeros): p / x where no element of the slice is zero, p (the product of
    the non-zeros) at the one zero of a slice with one, 0 elsewhere."""
    zero = e.op("eq", x, c(e, 0.0, x))
    p = e.op("reduce", select(e, zero, c(e, 1.0, x), x), kind="prod", axis=axes, keepdims=True)
    zeros = e.op("reduce", zero, kind="sum", axis=axes, keepdims=True)
    one, none = e.op("eq", zeros, e.const(1, I64)), e.op("eq", zeros, e.const(0, I64))
    at_zero = select(e, one, p, c(e, 0.0, p))
    elsewhere = select(e, none, div(e, p, x), c(e, 0.0, p))
    return select(e, zero, at_zero, elsewhere)


def _prod_vjp(e, g, x, out, axes, keepdims):
    """g times the product of the others."""
    return e.op("mul", _prod_partials(e, x, axes), _expand(e, g, x, axes, keepdims))


def _prod_jvp(e, dx, x, out, axes, keepdims):
    """The tangents times the product of the others, summed."""
    return e.op("reduce", e.op("mul", _prod_partials(e, x, axes), dx), kind="sum", axis=axes,
                keepdims=keepdims)


def _no_derivative(e, g, x, out, axes, keepdims):
    """A bool result (`any`): no derivative; AD cuts the path (None)."""
    return None


def _mean_dtype(dtype: ScalarType) -> ScalarType:
    """NumPy's mean: of a float32 or complex its own dtype, else float64."""
    return dtype if dtype == F32 or dtype.is_complex else F64


def _sum_dtype(dtype: ScalarType) -> ScalarType:
    """NumPy's sum and prod of small ints are of the platform's int (uint64 for unsigned)."""
    if dtype == BOOL or dtype.kind == "i":
        return I64
    return U64 if dtype.is_unsigned else dtype


ADD = {"f": Builder("fadd", flags=("reassoc",)), "i": Builder("add"),
       "c": Builder("fadd", flags=("reassoc",))}
"""Integers wrap; float sums may be reassociated (vectorized with partial sums)."""
C_ADD = {"*": CExpr("({0} + {1})")}


def _with_identities(rows: tuple[ReductionKind, ...]) -> tuple[ReductionKind, ...]:
    """The rows and, for each that raises on an empty reduction (max, min, nanmax, nanmin),
    `<name>_or_identity`: the same row, but an empty reduction gives its identity (-inf for
    max of floats, the dtype's lowest int, False; NaN for nanmax). np.max(x, initial=v) is
    np.maximum(v, max_or_identity(x)) (shape_functions.py's `extremum`); no spelling."""
    return (*rows, *(replace(row, name=f"{row.name}_or_identity", spellings=(),
                             empty_raises=False, reference_initial=True)
                     for row in rows if row.empty_raises))


REDUCTIONS: dict[str, ReductionKind] = {row.name: row for row in _with_identities((
    ReductionKind("sum", ("sum",), "add", _sum_dtype, {"f": 0.0, "i": 0, "c": 0j}, False,
                  "sum", ADD, None, None, True, _sum_vjp, cuda_combine=C_ADD,
                  jvp=_same_reduction("sum")),
    ReductionKind("mean", ("mean",), "add", _mean_dtype,
                  {"f": 0.0, "i": 0, "c": 0j}, False, "mean", ADD, Builder("fdiv"), None, True, _mean_vjp,
                  cuda_combine=C_ADD, cuda_finish=CExpr("({0} / {1})"), jvp=_same_reduction("mean")),
    ReductionKind("max", ("max", "amax"), "maximum", lambda t: t,
                  {"f": -math.inf, "i": -math.inf, "b": 0}, True, "max",
                  {"f": Intrinsic("llvm.maximum"), "i": Intrinsic("llvm.smax"),
                   "u": Intrinsic("llvm.umax"), "b": Builder("or_")},
                  None, ">", False, _extremum_vjp,
                  cuda_combine={"*": CExpr("astjit_reduce_max({0}, {1})"),
                                "b": CExpr("({0} | {1})")},
                  jvp=_extremum_jvp),
    ReductionKind("min", ("min", "amin"), "minimum", lambda t: t,
                  {"f": math.inf, "i": math.inf, "b": 1}, True, "min",
                  {"f": Intrinsic("llvm.minimum"), "i": Intrinsic("llvm.smin"),
                   "u": Intrinsic("llvm.umin"), "b": Builder("and_")},
                  None, "<", False, _extremum_vjp,
                  cuda_combine={"*": CExpr("astjit_reduce_min({0}, {1})"),
                                "b": CExpr("({0} & {1})")},
                  jvp=_extremum_jvp),
    ReductionKind("prod", ("prod",), "multiply", _sum_dtype, {"f": 1.0, "i": 1, "c": 1 + 0j},
                  False, "prod", {"f": Builder("fmul", flags=("reassoc",)), "i": Builder("mul"),
                                   "c": Routine("complex_mul")}, None, None,
                  False, _prod_vjp, cuda_combine={"*": CExpr("({0} * {1})")}, jvp=_prod_jvp),
    ReductionKind("any", ("any",), "logical_or", lambda t: BOOL, {"b": 0}, False, "any",
                  {"b": Builder("or_")}, None, None, False, _no_derivative,
                  cuda_combine={"b": CExpr("({0} | {1})")}, jvp=_no_derivative),
    ReductionKind("nanmax", ("nanmax",), "fmax", lambda t: t,
                  {"f": math.nan, "i": -math.inf, "b": 0}, True, "nanmax",
                  {"f": Intrinsic("llvm.maxnum"), "i": Intrinsic("llvm.smax"),
                   "u": Intrinsic("llvm.umax"), "b": Builder("or_")},
                  None, ">", False, _extremum_vjp,
                  cuda_combine={"f": CExpr("fmax({0}, {1})"),
                                "i": CExpr("astjit_reduce_max({0}, {1})"), "b": CExpr("({0} | {1})")},
                  jvp=_extremum_jvp, skips_nan=True),
    ReductionKind("nanmin", ("nanmin",), "fmin", lambda t: t,
                  {"f": math.nan, "i": math.inf, "b": 1}, True, "nanmin",
                  {"f": Intrinsic("llvm.minnum"), "i": Intrinsic("llvm.smin"),
                   "u": Intrinsic("llvm.umin"), "b": Builder("and_")},
                  None, "<", False, _extremum_vjp,
                  cuda_combine={"f": CExpr("fmin({0}, {1})"),
                                "i": CExpr("astjit_reduce_min({0}, {1})"), "b": CExpr("({0} & {1})")},
                  jvp=_extremum_jvp, skips_nan=True),
))}
"""Every reduction kind, one row each (`ReductionKind`)."""


@with_attrs
def _reduce_vjp(e, g, ins, out, needs, attrs):
    """The row's VJP, for a float or complex operand (an integer one has no gradient)."""
    x = ins[0]
    if not (x.type.dtype.is_float or x.type.dtype.is_complex):
        return [None]
    keepdims = bool(attrs.get("keepdims"))
    axes = normalize_axes(attrs.get("axis"), x.type.ndim)
    return [REDUCTIONS[attrs["kind"]].vjp(e, g, x, out, axes, keepdims)]


def _reduce_jvp(e, tangents, ins, out, attrs):
    """The row's forward rule, for a float operand."""
    x = ins[0]
    axes = normalize_axes(attrs.get("axis"), x.type.ndim)
    return REDUCTIONS[attrs["kind"]].jvp(e, tangents[0], x, out, axes, bool(attrs.get("keepdims")))


def _reduced_shape(node, table):
    """Its axes dropped, or made ONE with `keepdims` (ir/shape_algebra.py)."""
    shape = table.shape(node.inputs[0])
    return reduced(shape, normalize_axes(node.attrs.get("axis"), len(shape)),
                   node.attrs.get("keepdims"))


def _reduce_batch(b, node, ins, batched):
    """The example axes reduced, shifted past the batch axis (all of them for axis=None)."""
    x = ins[0]
    if x.type.ndim == 1:
        raise NotBatchable("a reduction of 0-d arrays")
    axes = normalize_axes(node.attrs.get("axis"), x.type.ndim - 1)
    return each(b.op("reduce", x, **{**node.attrs, "axis": shifted(axes)}))


_def("reduce", 1, reduce_rule, py_reduce, {"*": Routine("reduce")},
     # holomorphic: the kinds of complex arrays (sum, mean: reduce_rule) are linear
     ("pure", "raises", "reads", "numpy_result", "holomorphic"), vjp=_reduce_vjp, jvp=_reduce_jvp,
     shape=_reduced_shape, batch=_reduce_batch,
     doc="np.sum/mean/max/min/prod/any/all/nanmax/nanmin(x, axis, keepdims, dtype): attrs kind, "
         "axis (None or a tuple), keepdims, dtype")
