"""Lowering expressions: operators, names, attributes and the short-circuiting forms.

Operators become primitives (operators.py), names locals or frozen globals, and
the short-circuiting forms (`and`, `or`, `x if c else y`, chained comparisons)
`if` nodes whose regions evaluate the lazy operands only when Python would.

Attributes, without knowing types (the frontend never does): `v.shape`,
`v.size`, `v.ndim`, `v.T` of any expression but a module are `array_shape` /
`array_size` / `array_ndim` / `array_transpose` of its value (inference rejects
a value that is not an array; lowering a global array reports it, as arrays
come in only as arguments); `v.shape[k]` is a getitem of that tuple (the
simplifier makes it `array_dim`). Other attributes are reported, but
`math.<name>` and `np.<name>` (NumPy and its submodules): a constant (`math.pi`,
`np.inf`) or a function, resolved at compile time (resolve.py).

Each rule is a function `(state, scope, node) -> Value`, listed in `EXPRESSIONS`
by node type; subscripts are views.py's, calls calls.py's.
"""
from __future__ import annotations

import ast
import cmath
import math
import types

from ..errors import NameResolutionError, UnsupportedSyntaxError
from ..ir.core import Value
from .builtins import cmath_attribute, math_attribute
from .containers import lower_field
from .function_values import FUNCTION_VALUES
from .literals import literal_value, needs_exact_arithmetic
from .operators import ARRAY_ATTRIBUTES, BINARY_OPS, COMPARE_OPS, UNARY_OPS
from .resolve import LOCAL, constant, is_numpy_module, static_object
from .scope import Scope, Unbound, branch_value
from .source import NOT_CONSTANT, NOT_FOUND, constant_value, resolve_free_name
from .state import ExprRule, Lowering
from .syntax import describe_constant


def lower_constant(state: Lowering, scope: Scope, node: ast.Constant) -> Value:
    if constant_value(node.value) is NOT_CONSTANT:
        what, hint = describe_constant(node.value)
        return state.fail(scope, node, UnsupportedSyntaxError, f"{what} is not supported", hint)
    return constant(state, scope, node, node.value, ast.unparse(node))


def literal_arithmetic(state: Lowering, scope: Scope, node: ast.expr) -> Value | None:
    """`2**63 - 1`, `-2**63`: arithmetic on literals with a part beyond int64, computed
    exactly as Python does (literals.py); None for anything else, lowered as written."""
    if not needs_exact_arithmetic(node):
        return None
    return constant(state, scope, node, literal_value(node), ast.unparse(node))


def lower_binop(state: Lowering, scope: Scope, node: ast.BinOp) -> Value:
    if (literal := literal_arithmetic(state, scope, node)) is not None:
        return literal
    op = BINARY_OPS.get(type(node.op))
    left, right = state.lower_expr(scope, node.left), state.lower_expr(scope, node.right)
    if op is None:
        return state.fail(scope, node, UnsupportedSyntaxError,
                          "the '@' operator is not supported on numbers", "use '*'")
    return scope.emit(op, [left, right], state.loc(node))


def lower_unaryop(state: Lowering, scope: Scope, node: ast.UnaryOp) -> Value:
    if (literal := literal_arithmetic(state, scope, node)) is not None:
        return literal
    operand = state.lower_expr(scope, node.operand)
    return scope.emit(UNARY_OPS[type(node.op)], [operand], state.loc(node))


def lower_tuple(state: Lowering, scope: Scope, node: ast.Tuple) -> Value:
    elements = [state.lower_expr(scope, element) for element in node.elts]
    result = scope.emit("tuple", elements, state.loc(node))
    scope.sizes[result] = len(elements)
    return result


# ---- short-circuiting forms -------------------------------------------------------------

def lower_ifexp(state: Lowering, scope: Scope, node: ast.IfExp) -> Value:
    cond = state.condition(scope, node.test)
    return branch_value(scope, cond, lambda s: state.lower_expr(s, node.body),
                        lambda s: state.lower_expr(s, node.orelse), state.loc(node))


def lower_boolop(state: Lowering, scope: Scope, node: ast.BoolOp) -> Value:
    return _bool_op(state, scope, node, node.values)


def _bool_op(state: Lowering, scope: Scope, node: ast.BoolOp, operands: list[ast.expr]) -> Value:
    """`a and b` is `b if a else a`, `a or b` is `a if a else b`: b runs only when needed."""
    left = state.lower_expr(scope, operands[0])
    if len(operands) == 1:
        return left
    test = state.truth(scope, left, operands[0])
    rest = lambda s: _bool_op(state, s, node, operands[1:])
    keep = lambda s: left
    then, otherwise = (rest, keep) if isinstance(node.op, ast.And) else (keep, rest)
    return branch_value(scope, test, then, otherwise, state.loc(node))


def lower_compare(state: Lowering, scope: Scope, node: ast.Compare) -> Value:
    left = state.lower_expr(scope, node.left)
    return _compare(state, scope, node, left, node.ops, node.comparators)


def _compare(state: Lowering, scope: Scope, node: ast.Compare, left: Value,
             ops: list[ast.cmpop], comparators: list[ast.expr]) -> Value:
    """`a < b < c` is `b < c if a < b else False`, evaluating b once and c only if needed."""
    if isinstance(ops[0], (ast.Is, ast.IsNot)) and len(ops) == 1 \
            and _is_none_literal(comparators[0]):
        test = scope.emit("is_none", [left], state.loc(node))  # decided by left's type
        return test if isinstance(ops[0], ast.Is) else scope.emit("not", [test], state.loc(node))
    right = state.lower_expr(scope, comparators[0])
    op = COMPARE_OPS.get(type(ops[0]))
    if op is None:
        word = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
        return state.fail(scope, node, UnsupportedSyntaxError,
                          f"the '{word[type(ops[0])]}' comparison is not supported",
                          "compare numbers with ==, !=, <, <=, > or >=; "
                          "'x is None' and 'x is not None' are supported")
    result = scope.emit(op, [left, right], state.loc(node))
    if len(ops) == 1:
        return result
    return branch_value(
        scope, result, lambda s: _compare(state, s, node, right, ops[1:], comparators[1:]),
        lambda s: s.const(False, state.loc(node)), state.loc(node))


def _is_none_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


# ---- names and attributes ---------------------------------------------------------------

def lower_name(state: Lowering, scope: Scope, node: ast.Name) -> Value:
    entry = scope.lookup(node.id)
    if isinstance(entry, Value):
        return scope.use(entry)
    if isinstance(entry, FUNCTION_VALUES):
        return entry  # a local def or lambda: only a call or an assignment may take it
    if isinstance(entry, Unbound):
        return state.fail(scope, node, NameResolutionError,
                          f"'{node.id}' may be unassigned here: {entry.why}", entry.hint)
    if node.id in state.local_names:
        return state.fail(scope, node, NameResolutionError,
                          f"local variable '{node.id}' is read before it is assigned",
                          f"assign '{node.id}' before this line")
    return global_value(state, scope, node, resolve_free_name(state.source.fn, node.id), node.id)


def lower_attribute(state: Lowering, scope: Scope, node: ast.Attribute) -> Value:
    base = static_object(state, scope, node.value)
    if base is math or base is cmath:
        module = base.__name__
        value = (math_attribute if base is math else cmath_attribute)(node.attr)
        if value is None:
            return state.fail(scope, node, UnsupportedSyntaxError,
                              f"{module}.{node.attr} is not supported in compiled code")
        return global_value(state, scope, node, value, f"{module}.{node.attr}")
    if is_numpy_module(base):  # np.pi, np.inf: numbers; a function only in a call
        return global_value(state, scope, node, getattr(base, node.attr, NOT_FOUND),
                            ast.unparse(node))
    if node.attr in ARRAY_ATTRIBUTES and not isinstance(base, types.ModuleType):
        # an array's (else a TypingError), or the problem of the base, reported by its lowering
        array = state.lower_expr(scope, node.value)
        attrs = {"numpy": True} if node.attr in ("real", "imag") else None  # True.real is 1
        if ARRAY_ATTRIBUTES[node.attr] == "array_bytes":
            attrs = {"name": node.attr}
        return scope.emit(ARRAY_ATTRIBUTES[node.attr], [array], state.loc(node), attrs)
    if base is LOCAL or (base is NOT_FOUND and not isinstance(node.value, ast.Name)):
        return lower_field(state, scope, node)  # p.w of a container, resolved by its type
    return state.fail(scope, node, UnsupportedSyntaxError,
                      f"attribute access '{ast.unparse(node)}' is not supported",
                      "arrays have .shape, .size and .ndim here; otherwise only "
                      "math.<name> can be used, e.g. math.pi or math.sqrt(x)")


def global_value(state: Lowering, scope: Scope, node: ast.expr, obj: object, name: str) -> Value:
    """A global or closure value read at compile time: a number becomes a constant."""
    if obj is NOT_FOUND:
        return state.fail(scope, node, NameResolutionError, f"name '{name}' is not defined")
    value = constant_value(obj)
    if value is not NOT_CONSTANT:
        return constant(state, scope, node, value, name)
    if callable(obj):
        return state.fail(scope, node, UnsupportedSyntaxError,
                          f"function '{name}' is used as a value", "only calls to it are supported")
    hint = "pass the array as an argument: compiled code takes arrays only as arguments" \
        if type(obj).__name__ == "ndarray" else \
        "globals used in compiled code must be numbers, booleans, None, tuples of them, " \
        "functions, or the math and numpy modules"
    return state.fail(scope, node, NameResolutionError,
                      f"'{name}' is a {type(obj).__name__}, which compiled code cannot use", hint)


EXPRESSIONS: dict[type[ast.expr], ExprRule] = {
    ast.Constant: lower_constant,
    ast.BinOp: lower_binop,
    ast.UnaryOp: lower_unaryop,
    ast.Tuple: lower_tuple,
    ast.IfExp: lower_ifexp,
    ast.BoolOp: lower_boolop,
    ast.Compare: lower_compare,
    ast.Name: lower_name,
    ast.Attribute: lower_attribute,
}
