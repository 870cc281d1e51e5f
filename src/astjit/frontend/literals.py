"""Integer constants: exact arithmetic on literals, and the int64 range every constant must fit.

Compiled code's `int` is int64. A constant outside that range cannot be
represented, and wrapping it silently would compute something else than Python
(`n < 2**63` would compare with -2**63; a loop bounded by `10**20` would run
about 2**63 times). So arithmetic on literals only with a part beyond int64
(`-2**63`, `2**64 // 4`) is computed here, exactly as Python does, and becomes
one constant; its result, every literal, and every global or default value
that is an int must fit in int64, else compiling fails with a `TypingError`
naming the constant and suggesting a float.
"""
from __future__ import annotations

import ast
import operator

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1

NOT_LITERAL = object()
"""What `literal_value` gives for an expression that reads anything but literals."""
TOO_LARGE = object()
"""What it gives for an int so large that computing it could take very long."""

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
MAX_EXPONENT = 4096
"""A literal `a ** b` or `a << b` with a larger b is not computed (it could take very
long); with |a| > 1 its result is far outside int64 anyway."""


def literal_value(node: ast.expr) -> object:
    """The value of an int/float/bool literal or an arithmetic expression of literals,
    computed as Python computes it; NOT_LITERAL for anything else or when Python
    raises (1 // 0 raises at run time, where it is written)."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, (int, float)) else NOT_LITERAL
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = literal_value(node.operand)
        if operand is TOO_LARGE:
            return TOO_LARGE
        if operand is NOT_LITERAL or (isinstance(node.op, ast.Invert) and isinstance(operand, float)):
            return NOT_LITERAL
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = literal_value(node.left), literal_value(node.right)
        if left is NOT_LITERAL or right is NOT_LITERAL:
            return NOT_LITERAL
        if TOO_LARGE in (left, right) or _too_costly(node.op, left, right):
            return TOO_LARGE
        try:
            return _BINARY[type(node.op)](left, right)
        except (ArithmeticError, ValueError, TypeError):
            return NOT_LITERAL
    return NOT_LITERAL


def needs_exact_arithmetic(node: ast.expr) -> bool:
    """Whether `node` is arithmetic on literals of which some part is an int beyond int64
    (`2**63`, `-2**63`, `2**64 // 4`): then only Python's exact value is right."""
    if isinstance(node, (ast.UnaryOp, ast.BinOp)) and literal_value(node) is not NOT_LITERAL:
        return any(int64_problem(literal_value(part), "") is not None for part in ast.walk(node)
                   if isinstance(part, ast.expr))
    return False


def _too_costly(op: ast.operator, left: object, right: object) -> bool:
    if isinstance(op, (ast.Pow, ast.LShift)) and isinstance(left, int) and isinstance(right, int):
        return right > MAX_EXPONENT and left not in (0, 1, -1)
    return False


def int64_problem(value: object, what: str) -> tuple[str, str] | None:
    """(message, hint) when `value` (a constant, or a tuple of them) holds an int outside
    int64; `what` names the constant in the message."""
    if isinstance(value, tuple):
        return next((p for v in value if (p := int64_problem(v, what))), None)
    if value is TOO_LARGE:
        return (f"the integer constant {what} is far outside int64, astjit's int", "")
    if isinstance(value, bool) or not isinstance(value, int) or INT64_MIN <= value <= INT64_MAX:
        return None
    shown = f"{value}" if value.bit_length() < 80 else f"an int of {value.bit_length()} bits"
    named = what if what == shown else f"{what} = {shown}"
    try:
        as_float = f"write {float(value)!r} if a float is meant"
    except OverflowError:
        as_float = "it is too large even for a float"
    return (f"the integer constant {named} does not fit in int64, astjit's int "
            "(compiled code would wrap it)", as_float)
