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
  node is kept even when unused), 'commutative', 'elementwise'.

`vjp`: the reverse-mode rule (vjp.py; forward mode derives its tangents from
the same rules); `cuda` lowerings come with the GPU work.

Modules: table.py (OpDef, descriptors, type rules), semantics.py (reference
semantics Python's operators lack), scalar.py (the scalar entries),
derivative.py (IEEE primitives and tapes that derivative code uses), vjp.py.
The structural ops (`if`, `while`, `call`) are not in this table; see `core.py`.
"""
# Fill the table: scalar, derivative, the reverse rules, then the whole-array forms
# (elementwise.py imports vjp first).
from . import elementwise, linalg, reductions, vjp, vjp_arrays  # noqa: F401, I001 - order matters
from . import strong  # noqa: F401 - last: it wraps the rules of the entries above
from .derivative import ieee_div, ieee_log, ieee_pow
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
from .table import OPS, Builder, Intrinsic, LibCall, OpDef, OpTypeError, Routine, kind
from .vjp import ZERO_DERIVATIVE

__all__ = ["OPS", "OpDef", "OpTypeError", "Builder", "Intrinsic", "LibCall", "Routine", "kind",
           "EXCEPTIONS", "ZERO_DERIVATIVE", "zero_of", "float_pow", "int_pow", "ieee_div",
           "ieee_log", "ieee_pow", "in_int64", "py_max", "py_min", "py_shift_left",
           "py_shift_right"]
