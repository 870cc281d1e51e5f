"""NumPy scalars among the operands of scalar ops: NEP 50 promotion and NumPy's semantics.

A value is a *strong* scalar (ir/types.py) when it is a NumPy scalar in the
plain Python program: a NumPy scalar argument, an element `x[i]` of an array,
a reduction or dot product of arrays, the result of a NumPy function, any f32.
Python literals, Python arguments and Python arithmetic on them are *weak*.

- An operator (`+ - * / // % ** & | ^ << >> ~`, unary `-`/`+`, `abs`, the
  comparisons) with a strong operand, and a NumPy function (`np.sqrt(2.0)`,
  attr `numpy` from the frontend) on any scalars, promote as NumPy does on
  arrays (`types.numpy_promote`) with the strong scalars playing the
  arrays' part: `np.float32(1) * 2.0` is np.float32, `np.int64(1) + 1.5`
  np.float64, `x32[i] + np.float64(1)` np.float64, `np.add(1, 2)` np.int64.
  The result is strong. Its dtype is checked against NumPy's own, as for
  arrays: where they differ (`np.bool_ + np.bool_` is a bool in NumPy) the
  combination is "not supported yet".
- Type inference marks such a node (attr `numpy`, `numpy_semantics`): it
  computes with NumPy's semantics. Float division by zero is inf or nan,
  integer `//` and `%` by zero give 0, math functions give nan and inf instead
  of raising, `~` of a bool is `not`, `np.int64 ** negative` is ValueError. The
  interpreter and constant folding evaluate it with NumPy (`evaluate_numpy`),
  the backend with the lowerings of fused array kernels (`OpDef.llvm_numpy`).
  NumPy's RuntimeWarnings are not emitted.
- `math` functions stay Python's whatever their operands (`math.sqrt(x[i])`
  raises on a negative, returns a Python float, of an f32 too), and so
  do `int()`, `float()`, `round()`, `not`: their results are weak. The
  builtins `min` and `max` return one of their operands: with a strong one, a
  strong scalar of NumPy's promotion of the operands (`types.numpy_join`'s rule).
- Two paths that merge (`join`) meet as NumPy combines them (`types.numpy_join`): a
  strong and a weak value meet at NumPy's promotion of the two, strong.
- One exception, Python's own: np.float64 is a subclass of `float`, which a Python
  complex's operators take, so `z * np.float64(2)` with a Python complex z on the left
  is Python's complex arithmetic (a Python complex; `/` raising), while
  `np.float64(2) * z` is NumPy's (`python_complex_first`).
"""
from __future__ import annotations

import functools

from ..types import (
    BOOL,
    C128,
    F32,
    F64,
    NUMPY_NAMES,
    ScalarType,
    Type,
    TypeKey,
    is_numeric,
    is_strong,
    numpy_promote,
    python_type_of,
    strong,
    weak,
)
from .elementwise import (
    BOOL_LOGIC,
    has_array,
    in_numpy_dtype,
    instead,
    numpy_function,
    numpy_result_dtype,
)
from .table import OPS, OpTypeError

NUMPY_ONLY = ("where", "real", "imag")
"""Ops with a NumPy function that is no ufunc: np.where of scalars is a 0-d array (ir/infer.py),
np.real and np.imag of a Python scalar its own `.real`/`.imag` (a Python scalar)."""

STRENGTH_TRAITS = frozenset({"operator", "math", "numpy_result"})
"""The traits saying how an op treats NumPy scalars: 'operator' (a Python operator: NumPy's
semantics when an operand is a NumPy scalar), 'math' (a `math` function: Python's whatever
its operands), 'numpy_result' (its scalar result is a NumPy scalar: an element, a
reduction, a dot product)."""


# ---- type rules ---------------------------------------------------------------------------

def numpy_semantics(op: str, types: list[Type], attrs: dict) -> bool:
    """Whether a leaf node of `op` on operands of `types` computes as NumPy does on scalars."""
    opdef = OPS[op]
    if not _numpy_function(opdef) or has_array(types):
        return False
    if attrs.get("numpy"):
        return True
    return "operator" in opdef.traits and any(map(is_strong, types)) and \
        not python_complex_first(op, types)


def python_complex_first(op: str, types) -> bool:
    """A Python complex operator's operands: a Python complex, then an np.float64 (a float
    subclass, which Python's complex takes before NumPy's reflected operator is tried; its
    `<` returns NotImplemented, so NumPy compares those)."""
    return len(types) == 2 and types[0] == C128 and not types[0].strong and \
        types[1] == F64 and types[1].strong and op not in ("lt", "le", "gt", "ge")


def _numpy_function(opdef) -> bool:
    """Whether NumPy has the op as a ufunc, which computes it on NumPy scalars."""
    return opdef.ufunc is not None and opdef.name not in NUMPY_ONLY


@functools.cache
def scalar_plan(op: str, types: TypeKey) -> tuple[list[Type], Type]:
    """The operand and result types of `op` on NumPy scalars (strong) and Python ones."""
    c = numpy_promote([weak(t) for t in types if t.strong], [weak(t) for t in types if not t.strong])
    if op in BOOL_LOGIC and c == BOOL:
        operands, result = [BOOL] * len(types), BOOL  # ~np.True_ is np.False_
    else:
        operands, result = OPS[op].scalar_rule([c] * len(types), {})
    expected = numpy_result_dtype(op, types)
    if expected != NUMPY_NAMES[result.name]:
        operands, result = in_numpy_dtype(op, len(types), expected) or (operands, result)
    if expected != NUMPY_NAMES[result.name]:
        shown = ", ".join(map(str, types))
        raise OpTypeError(f"'{op}' of ({shown}) is not supported yet: NumPy gives {expected}, "
                          f"which compiled code does not compute{instead(expected)}")
    return [strong(t) for t in operands], strong(result)


def with_strength(op: str, rule, traits: frozenset, ufunc: str | None):
    """`rule` (which handles arrays) extended with the scalar rules of the module docstring,
    for an op of these traits and NumPy function; `rule` itself for the other ops."""
    numpy_function = ufunc is not None and op not in NUMPY_ONLY
    operator, python_math = "operator" in traits, "math" in traits
    numpy_result = "numpy_result" in traits
    if not (numpy_function or operator or python_math or numpy_result):
        return rule

    def typed(types, attrs):
        if has_array(types):
            operands, result = rule(types, attrs)
            return operands, strong(result) if numpy_result else result
        if operator and not attrs.get("numpy") and python_complex_first(op, types):
            return rule([types[0], weak(types[1])], attrs)
        if numpy_function and all(map(is_numeric, types)) and (
                attrs.get("numpy") or operator and any(map(is_strong, types))):
            return scalar_plan(op, TypeKey(types))
        if python_math:  # math.sqrt(np.float64(x)) is a Python float
            if attrs.get("scalar_function"):  # math's own function computes in double
                types = [F64 if t == F32 else t for t in types]
            operands, result = rule(types, attrs)
            return operands, weak(result)
        return rule(types, attrs)
    return typed


def numpy_constant(attrs: dict) -> dict:
    """A `const`'s attrs with a NumPy scalar value (a global `EPS = np.float32(1e-3)`) as
    the Python scalar it equals, typed as the strong scalar it is."""
    value = attrs["value"]
    if type(value).__module__ != "numpy" or not hasattr(value, "item"):
        return attrs
    return {**attrs, "value": value.item(), "type": attrs.get("type") or python_type_of(value)}


# ---- evaluation (the interpreter's and constant folding's) -------------------------------

def evaluate_numpy(op: str, operand_types: list[Type] | None, result_type: Type | None):
    """A function computing `op` on scalars as NumPy does on NumPy scalars of the operand
    types, giving a Python scalar (as the interpreter represents every scalar)."""
    import numpy

    ufunc = numpy_function(op)

    def evaluate(*args):
        if operand_types is not None:
            args = [numpy.dtype(NUMPY_NAMES[t.name]).type(a) if isinstance(t, ScalarType) else a
                    for a, t in zip(args, operand_types)]
        with numpy.errstate(all="ignore"):
            result = ufunc(*args)
        if isinstance(result_type, ScalarType):
            result = numpy.asarray(result).astype(NUMPY_NAMES[result_type.name])
        return result.item() if isinstance(result, (numpy.generic, numpy.ndarray)) else result
    return evaluate
