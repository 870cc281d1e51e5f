"""NumPy's sorting, searching and order-statistic functions, made of primitives by type
inference: the frontend lowers each call to one `sorting_function {function, ...}` node
(its array arguments its inputs, the compile-time ones its attrs), replaced here
(`expand`) as NumPy defines the function:

| function | made of |
|---|---|
| `np.sort(a, axis, kind)`, `np.argsort` | `sort` / `argsort` (of `ravel(a)` for axis=None) |
| `a.sort(axis, kind)` | `a[...] = sort(a)`: the caller's array is sorted |
| `np.searchsorted(a, v, side)` | `searchsorted` |
| `np.unique(ar)` | `unique_sorted(sort(ravel(ar)))` |
| `np.nonzero(a)`, `np.where(a)`, `a.nonzero()` | the rows of `nonzero a` (a tuple of views) |
| `np.median`, `np.percentile`, `np.quantile` | ops/order_statistics.py: views of a `sort` |

`kind` (and `stable=True`, which is kind 'stable') picks NumPy's kernel: sorted values
are the same for every kind but for the order of -0.0 and 0.0; argsort's order of ties
is each kernel's own, NumPy's. Errors that types decide are compile errors with
NumPy's message (an axis out of range, a 0-d array sorted along an axis).
"""
from __future__ import annotations

from ..types import NONE, ArrayType
from .declare import _def
from .order_statistics import order_statistic
from .shape_functions import _Emitter as Emitter
from .sorting import KINDS, NONZERO_0D, SIDES
from .table import OpTypeError, Refused

_RESOLVED = "np.sort() ... calls are replaced by their primitives in type inference"


def _kind(em: Emitter, kind, stable) -> str:
    if stable:
        if kind is not None:
            em.fail("`kind` and `stable` parameters can't be provided at the same time. "
                    "Use only one of them.")
        return "stable"
    kind = "quicksort" if kind is None else kind
    kind = "stable" if kind == "mergesort" else kind
    if kind not in KINDS:
        em.fail(f"sort kind must be one of 'quick', 'heap', or 'stable' (got '{kind}')")
    return kind


def _array(em: Emitter, x, what: str):
    if not isinstance(x.type, ArrayType):
        return em.as_array(x)
    return x


def _along(em: Emitter, op: str, x, axis, kind: str):
    """sort / argsort of `x` along `axis` (None: of x flattened)."""
    x = _array(em, x, f"np.{op}()")
    if axis is None:
        return em.op(op, em.ravel(x), axis=0, kind=kind)
    if x.type.ndim == 0:
        em.fail(f"axis {axis} is out of bounds for array of dimension 0")
    return em.op(op, x, axis=em.axis(axis, x.type.ndim), kind=kind)


def _sort_in_place(em: Emitter, x, axis, kind: str):
    if not isinstance(x.type, ArrayType):
        em.fail(f"x.sort() needs an array, got {x.type}")
    if axis is None:
        em.fail("x.sort(axis=None) is not supported by NumPy: an array sorts in place along "
                "an axis", "write x = np.sort(x, axis=None)")
    em.op("array_assign", x, _along(em, "sort", x, axis, kind))
    return em.op("const", value=None, type=NONE)


def _unique(em: Emitter, x):
    return em.op("unique_sorted", em.op("sort", em.ravel(_array(em, x, "np.unique()")), axis=0,
                                        kind="quicksort"))


def _nonzero(em: Emitter, x):
    x = _array(em, x, "np.nonzero()")
    if x.type.ndim == 0:
        em.fail(NONZERO_0D)
    found = em.op("nonzero", x)
    return em.op("tuple", *(em.op("array_view", found, em.const(k), spec=("i",))
                            for k in range(x.type.ndim)))


def _searchsorted(em: Emitter, a, v, side):
    if side not in SIDES:
        em.fail(f"side must be 'left' or 'right' (got '{side}')")
    if not isinstance(a.type, ArrayType):
        em.fail("object of too small depth for desired array")
    return em.op("searchsorted", a, v, side=side)


def _expand(inference, node, inputs, out):
    em = Emitter(inference, node, out)
    at = node.attrs
    function = at["function"]
    if function in ("sort", "argsort", "sort_in_place"):
        kind = _kind(em, at.get("kind"), at.get("stable"))
        result = _sort_in_place(em, inputs[0], at["axis"], kind) if function == "sort_in_place" \
            else _along(em, function, inputs[0], at["axis"], kind)
    elif function == "searchsorted":
        result = _searchsorted(em, inputs[0], inputs[1], at["side"])
    elif function == "unique":
        result = _unique(em, inputs[0])
    elif function in ("nonzero", "where"):
        result = _nonzero(em, inputs[0])
    else:
        result = order_statistic(em, function, _array(em, inputs[0], f"np.{function}()"),
                                 inputs[1] if len(inputs) > 1 else None, at)
    result.name = result.name or node.outputs[0].name
    return [result]


def _function_rule(types, attrs):
    raise OpTypeError(_RESOLVED)


def py_sorting_function(*inputs, function, **statics):
    """The call itself, NumPy's (the interpreter's, on untyped IR)."""
    import numpy

    if function == "sort_in_place":
        inputs[0].sort(**statics)
        return None
    if function == "where":
        return numpy.nonzero(inputs[0])
    if function in ("percentile", "quantile", "median"):
        return order_statistic_reference(function, *inputs, **statics)
    return getattr(numpy, function)(*inputs, **statics)


def order_statistic_reference(function, *inputs, **statics):
    """NumPy's median / percentile / quantile, a NumPy scalar where NumPy's result is one."""
    import warnings

    import numpy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return getattr(numpy, function)(*inputs, **statics)


_def("sorting_function", -1, _function_rule, py_sorting_function, {"*": Refused(_RESOLVED)},
     ("raises", "writes"), no_vjp="type inference replaces it by the primitives it is made of",
     expand=_expand, cuda=Refused(_RESOLVED),
     doc="np.sort/argsort/searchsorted/unique/nonzero/median/percentile/quantile(...) and "
         "x.sort(): replaced by primitives in type inference (ops/sorting_functions.py)")

FUNCTIONS = ("sort", "argsort", "searchsorted", "unique", "nonzero", "where", "median",
             "percentile", "quantile")
"""The NumPy functions (np.<name>) that lower to `sorting_function`."""
