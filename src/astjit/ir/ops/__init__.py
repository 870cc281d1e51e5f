"""The one table of leaf primitives: each op's type rule, reference evaluation and lowering.

An entry (`OpDef`) holds everything the stages need for one operation:

- `rule(input_types, attrs) -> (operand_types, result_type)`: type inference
  casts the operands to `operand_types` (Python's promotion) and gives the
  result `result_type`; it raises `OpTypeError` for an operator that does not
  apply (``1.5 << 2``).
- `evaluate(*args, **attrs)`: the Python semantics, used by the interpreter and
  by constant folding. Errors are Python's own (ZeroDivisionError, ValueError).
- `llvm`: the CPU lowering, as data keyed by the operand kind ('f' float,
  'i' int, 'b' bool, '*' any): an IRBuilder method, an LLVM intrinsic, a libm
  call, or a named routine of the backend for what takes several instructions.
- `check`: the error check compiled code performs ('math1': CPython's rule for
  `math` functions — NaN from a non-NaN argument is ValueError, an infinite
  result from finite arguments OverflowError when `can_overflow`, else ValueError).
- `traits`: 'pure' (no side effect), 'raises' (may raise at run time, so the
  node is kept even when unused), 'commutative', 'elementwise', 'view' (its
  result is a view of its first operand), 'allocates' (a new array), 'reads'
  (reads its array operands' elements), 'writes', 'linear' (its result is linear in
  its float operands taken together: its tangent is the op itself applied to their
  tangents, the other operands as they are: a view, a reshape, a transpose); and how
  it treats NumPy scalars ('operator', 'math', 'numpy_result': ops/strong.py).
- `vjp`: the reverse-mode rule (vjp.py), or the reason it has none:
  `zero_derivative` (AD cuts the path) or `no_vjp` (handled elsewhere, or not
  differentiable). Forward mode derives an elementwise op's tangent from the same
  rule, a 'linear' op's from the op itself; `jvp` is the forward rule of the others
  (matmul, the reductions: `ReductionKind.jvp`).
- `python`, `numpy`: the spellings the frontend lowers to this op; `ufunc`:
  the NumPy function computing it; `array_rule` (np.where's condition stays a
  bool) and `array_refusal` (`min()` of arrays), where the generic array rule
  of elementwise.py needs them.
- `decide`, `expand`, `operands`: what type inference settles from the types
  before (or instead of) the type rule: `x is None` a constant, `x[0]` of an
  array an `array_get`, `x op= v` of an array an update in place, a packed
  shape one int per axis (the `Inference` protocol says what they may use).
- `shape`: the symbolic-shape rule (ir/shape_algebra.py); an elementwise op's
  broadcasts.
- `cuda`: the GPU lowering: `CExpr`s (the C a kernel computes it with, NumPy's
  semantics), `OnHost()` (the host program runs its `evaluate`) or a `Refused`.

An op is declared once (`declare._def`), complete: lifting its type rule to
arrays and NumPy scalars, its VJP rule to broadcasting and giving an
elementwise op the broadcasting shape rule happen there, and nothing changes an
entry afterwards.

Modules: table.py (OpDef, descriptors, type rules, the `Inference` protocol),
declare.py, semantics.py (reference semantics Python's operators lack),
scalar.py (operators, conversions, stop_gradient), mathfuncs.py (`math` and
NumPy functions), ieee.py (IEEE float primitives derivative code uses),
tapes.py (what a differentiated `while` records), containers.py and sequences.py
(containers' fields; starred unpacking, comprehensions, dict keys), methods.py (calls
on objects, resolved from the receiver's class), reinterpret.py (x.view(dtype)), vjp.py (what VJP
rules are built from), arrays/views/allocation/reductions/linalg/adjoints.py (array ops),
elementwise.py and strong.py (NumPy's promotion). The structural ops (`if`, `while`, `call`) are
not in this table; see `core.py`.
"""
# The modules declaring ops, in any order: each declaration is complete (ops/declare.py).
from . import (  # noqa: F401
    adjoints,
    advanced_index,
    allocation,
    arrays,
    callbacks,
    complexes,
    containers,
    ieee,
    indexing,
    lapack,
    linalg,
    linalg_functions,
    mathfuncs,
    methods,
    python_complex,
    reductions,
    reinterpret,
    scalar,
    scans,
    sequences,
    shape_functions,
    shaping,
    sorting,
    sorting_functions,
    statistics,
    tapes,
    views,
)
from .ieee import ieee_div, ieee_log, ieee_pow
from .semantics import (
    EXCEPTIONS,
    float_pow,
    in_int64,
    int_pow,
    py_max,
    py_min,
    py_shift_left,
    py_shift_right,
    zero_of,
)
from .table import (
    BACKENDS,
    OPS,
    Builder,
    CExpr,
    Intrinsic,
    LibCall,
    OnHost,
    OpDef,
    OpTypeError,
    Refused,
    Routine,
    kind,
    lowering_for,
)

ZERO_DERIVATIVE = frozenset(name for name, op in OPS.items() if op.zero_derivative)
"""Ops whose result does not change with their float inputs (or that have none)."""

__all__ = ["OPS", "OpDef", "OpTypeError", "Builder", "Intrinsic", "LibCall", "Routine", "Refused",
           "CExpr", "OnHost",
           "BACKENDS", "kind", "lowering_for",
           "EXCEPTIONS", "ZERO_DERIVATIVE", "zero_of", "float_pow", "int_pow", "ieee_div",
           "ieee_log", "ieee_pow", "in_int64", "py_max", "py_min", "py_shift_left",
           "py_shift_right"]
