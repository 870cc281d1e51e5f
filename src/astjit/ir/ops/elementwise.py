"""Elementwise ops on whole arrays: NumPy broadcasting and NEP 50 promotion, once for every op.

An `elementwise` scalar op of the table (add, mul, truediv, the comparisons,
exp, ...) that NumPy has as a ufunc (`UFUNCS`) also accepts arrays: its type
rule is wrapped here (`lift`), not written per op. With at least one array
operand:

- the result is an `ArrayType` whose ndim is the largest operand ndim (NumPy
  broadcasting aligns trailing axes; a size-1 axis stretches; shapes are
  checked at run time: "operands could not be broadcast together with shapes
  (3,) (4,)");
- the *computation type* `c` is NumPy's (NEP 50): array dtypes promote as
  NumPy's do (i64 with f32 gives f64), then *weak* scalar operands (Python
  scalars) join in: one of a higher kind (bool < int < float)
  than the arrays' gives that kind's default (int64, float64), else it takes
  the arrays' dtype (f32 array * 2.0 -> f32 array); a strong scalar (a NumPy
  scalar, ops/strong.py) promotes as an array does (f32 array * np.float64(2.0)
  -> f64 array);
- the op's scalar rule applied to `c` gives the element types the operands are
  converted to and the result dtype (int array / int -> f64 array,
  comparisons -> bool array); an op whose operands do not all promote
  together declares its own (`OpDef.array_rule`: np.where's condition stays a
  bool, its a and b promote);
- operand types: arrays as they are (the conversion of their elements happens
  inside the elementwise computation), scalars converted (type inference casts
  them) to the computation's element type.

The result dtype is checked against NumPy's own (`numpy_result_dtype`); where
they differ (bool + bool is bool in NumPy; np.sqrt of a bool array is float16)
the combination is "not supported yet" rather than silently different.

Semantics on arrays are NumPy's, not Python's: no ZeroDivisionError (1/0 is
inf, integer division by zero 0), math functions give NaN/inf instead of
raising, integers wrap. The result is always a new array (owned).

Which ops these are is declared with each op (ops/declare.py lifts the rule
of every `elementwise` op; those declaring a `ufunc` have an array form; the
others refuse arrays, with the reason they declare, `OpDef.array_refusal`:
min() of arrays is ambiguous).
"""
from __future__ import annotations

import dataclasses
import functools

from ..types import (
    BOOL,
    NUMPY_DTYPES,
    NUMPY_NAMES,
    ArrayType,
    ScalarType,
    Type,
    TypeKey,
    is_numeric,
    numpy_promote,
    strong,
    weak,
)
from .table import OPS, OpTypeError

UFUNCS: dict[str, object] = {}
"""The ops that work on whole arrays, and the NumPy function each one is (its name, or the
op's own function where NumPy has none: `numpy_function`): the elementwise ops that declare
a `ufunc` (ops/declare.py fills it as they are declared)."""

BITWISE_UFUNCS: dict[str, str] = {}
"""Scalar ops NumPy also has as ufuncs, which compiled code has on scalars only (ops/strong.py)."""


BOOL_LOGIC = {"add": "bitor", "mul": "bitand", "invert": "not", "maximum": "bitor",
              "minimum": "bitand", "abs": None, "numpy_floor": None, "numpy_ceil": None,
              "numpy_trunc": None}
"""The ops NumPy computes on bools as logic, giving a bool (where Python's give ints), and
the logic op each is: `+` and np.maximum are or, `*` and np.minimum and, `~` is not; abs,
np.floor, np.ceil and np.trunc give the bool itself (None; `-` of bools is NumPy's
TypeError, np.round's a float16, which compiled code refuses). A fused kernel computes
them as that op, or takes the operand (passes/fuse.py); a NumPy bool scalar's op takes its
'b' lowering."""


def _numpy():
    import numpy

    return numpy


def numpy_function(op: str):
    """The function computing `op` on NumPy arrays and scalars: NumPy's, which `OpDef.ufunc`
    names, or the one it is where NumPy has none (math.erf's, ops/mathfuncs.py)."""
    function = OPS[op].ufunc
    return getattr(_numpy(), function) if isinstance(function, str) else function


# ---- the array rule ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Plan:
    """How an elementwise op computes on arrays: each operand's element type, the result's."""

    operands: tuple[ScalarType, ...]
    result: ScalarType
    ndim: int


def has_array(types) -> bool:
    return any(isinstance(t, ArrayType) for t in types)


def array_plan(op: str, types: tuple[Type, ...]) -> Plan:
    """The plan of `op` on these operand types (at least one an array); OpTypeError if none."""
    return _array_plan(op, TypeKey(types))


def computation_type(types) -> ScalarType:
    """NEP 50's promotion of operands of these types, at least one an array: the arrays'
    dtypes and the strong scalars', then the weak scalars join in (the module docstring)."""
    return numpy_promote([t.dtype if isinstance(t, ArrayType) else weak(t) for t in types
                          if isinstance(t, ArrayType) or t.strong],
                         [t for t in types if not isinstance(t, ArrayType) and not t.strong])


@functools.cache
def _array_plan(op: str, types: TypeKey) -> Plan:
    opdef = OPS[op]
    if op not in UFUNCS:
        raise OpTypeError(opdef.array_refusal or f"'{op}' on whole arrays is not supported yet")
    for t in types:
        if not isinstance(t, ArrayType) and not is_numeric(t):
            raise OpTypeError(f"'{op}' needs arrays or numbers, got {t}")
    c = computation_type(types)
    if opdef.array_rule is not None:
        operands, result = opdef.array_rule(types)
    elif c == BOOL and op in BOOL_LOGIC:
        operands, result = [BOOL] * len(types), BOOL
    else:
        operands, result = opdef.scalar_rule([c] * len(types), {})
    expected = numpy_result_dtype(op, types)
    if expected != NUMPY_NAMES[result.name] and opdef.array_rule is None:
        operands, result = in_numpy_dtype(op, len(types), expected) or (operands, result)
    if expected != NUMPY_NAMES[result.name]:
        shown = ", ".join(map(str, types))
        raise OpTypeError(f"'{op}' of ({shown}) is not supported yet: NumPy gives "
                          f"{expected}, which compiled code does not compute{instead(expected)}")
    ndim = max(t.ndim for t in types if isinstance(t, ArrayType))
    return Plan(tuple(operands), result, ndim)


def instead(expected: str) -> str:
    """What to write where NumPy's result dtype is one compiled code lacks: float16, which
    NumPy gives for np.sqrt or np.round of bools and int8/uint8, np.sin of int16 ..."""
    return "; convert the operands first: x.astype(np.float32)" if expected == "float16" else ""


def in_numpy_dtype(op: str, arity: int, expected: str):
    """(operand types, result type) of `op` computed in the dtype named `expected`, NumPy's
    result dtype, where promotion gave another one: NumPy picks the ufunc loop its operands
    cast to safely, so np.sin of int16 computes in float32 and np.mod of bools in int8,
    where Python's rule at the promoted type would give float64 and int64. None where
    compiled code has no such dtype (float16)."""
    loop = NUMPY_DTYPES.get(expected)
    return None if loop is None else OPS[op].scalar_rule([ScalarType(loop)] * arity, {})


def numpy_result_dtype(op: str, types: tuple[Type, ...]) -> str:
    """NumPy's own result dtype name for these operand types (a strong scalar a NumPy
    scalar, a weak one a Python scalar), or an error text."""
    return _numpy_result_dtype(op, TypeKey(types))


@functools.cache
def _numpy_result_dtype(op: str, types: TypeKey) -> str:
    np = _numpy()
    samples = []
    for t in types:
        if isinstance(t, ArrayType):
            samples.append(np.ones(1, dtype=NUMPY_NAMES[t.dtype.name]))
        elif t.strong:
            samples.append(np.dtype(NUMPY_NAMES[t.name]).type(1))
        else:
            samples.append({"bool": True, "f32": 1.0, "f64": 1.0, "c128": 1j}.get(t.name, 1))
    try:
        with np.errstate(all="ignore"):
            return np.asarray(numpy_function(op)(*samples)).dtype.name
    except TypeError as error:
        return f"a TypeError ({error})"


def lift(op: str, scalar_rule):
    """`scalar_rule` extended to array operands (the module docstring's rules)."""
    def rule(types, attrs):
        if not has_array(types):
            return scalar_rule(types, attrs)
        if attrs.get("scalar_function"):  # math.sqrt(x): Python's function, which refuses arrays
            instead = f"np.{UFUNCS[op]}" if isinstance(UFUNCS.get(op), str) else \
                "the NumPy function" if op not in UFUNCS else "a loop over the elements"
            raise OpTypeError(f"{attrs['scalar_function']}() takes numbers, not arrays (Python's "
                              f"raises TypeError); use {instead}")
        plan = array_plan(op, tuple(types))
        operands = [t if isinstance(t, ArrayType) else strong(s) if t.strong else s
                    for t, s in zip(types, plan.operands)]  # a scalar keeps its strength
        return operands, ArrayType(plan.result, plan.ndim)
    return rule


def is_array_elementwise(node) -> bool:
    """A leaf node computing an elementwise op over whole arrays (a new array)."""
    return (node.op in OPS and "elementwise" in OPS[node.op].traits
            and isinstance(node.outputs[0].type if node.outputs else None, ArrayType))


# ---- evaluation on arrays (the interpreter's) ----------------------------------------------

def broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """NumPy's broadcast of `shapes`; ValueError naming them all when they do not agree."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(ndim):
        sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            shown = " ".join(f"({', '.join(map(str, s))}{',' if len(s) == 1 else ''})"
                             for s in shapes)
            raise ValueError(f"operands could not be broadcast together with shapes {shown}")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def apply_numpy(op: str, args: list, operand_types: list[Type], result_type: Type):
    """`op` on NumPy arrays and scalars, each converted to its element type first, the
    result converted to `result_type`'s dtype (NumPy's semantics; errors ignored as NumPy's
    are: they are warnings there)."""
    np = _numpy()
    converted = []
    for a, t in zip(args, operand_types):
        dtype = NUMPY_NAMES[(t.dtype if isinstance(t, ArrayType) else t).name]
        converted.append(np.asarray(a, dtype=dtype) if isinstance(a, np.ndarray)
                         else np.dtype(dtype).type(a))
    dtype = NUMPY_NAMES[(result_type.dtype if isinstance(result_type, ArrayType)
                         else result_type).name]
    with np.errstate(all="ignore"):
        return np.asarray(numpy_function(op)(*converted)).astype(dtype, copy=False)


def evaluate_on_arrays(op: str, args: list, types: list[Type] | None, result: Type | None):
    """The interpreter's evaluation of an elementwise leaf node whose operands include arrays:
    a new array, NumPy's semantics; shapes that do not broadcast raise ValueError."""
    np = _numpy()
    broadcast_shape([np.shape(a) for a in args if isinstance(a, np.ndarray)])
    if types is None or result is None or not has_array(types):
        with np.errstate(all="ignore"):
            return np.array(numpy_function(op)(*args))
    plan = array_plan(op, tuple(types))
    out = apply_numpy(op, args, list(plan.operands), plan.result)
    return np.array(out, copy=True)
