"""Lowering expressions to IR, and the per-function state every lowering step shares.

`ExpressionLowerer` owns one function's lowering state (its source, its local
names, the problems found so far) and turns expression ASTs into Values of a
`Scope`: operators to primitives, names to locals / frozen globals, and the
short-circuiting forms (`and`, `or`, `x if c else y`, chained comparisons) to
`if` nodes whose regions evaluate the lazy operands only when Python would.

Subscripts and attributes, without knowing types (the frontend never does):

- `v[k]` with a literal integer `k` (`t[0]`, `x[-1]`) is `getitem {index=k}`,
  the tuple element; type inference turns a `getitem` whose operand is an
  array into `array_get(v, const k)`. Any other index (`x[i]`, `a[i, j]`) is
  `array_get(v, *indices)`, as a tuple takes only literal indices: inference
  rejects an `array_get` of a tuple with that hint. So the tuple IR stays as
  it was, and no op needs resolving later except that one `getitem` case.
- Slices (`x[1:n]`, `a[:, i]`) are views: `array_view` (views.py); `...`, `None`
  and starred indices are reported (not supported yet).
- `v.shape`, `v.size`, `v.ndim` of any expression but a module are
  `array_shape` / `array_size` / `array_ndim` of its value (inference rejects
  a value that is not an array; lowering a global array reports it, as arrays
  come in only as arguments); `v.shape[k]` is a getitem of that tuple (the
  simplifier makes it `array_dim`). Other attributes are reported, but
  `math.<name>` and `np.<name>` (NumPy and its submodules): a constant
  (`math.pi`, `np.inf`) or a function, resolved at compile time.
- Element assignment is in statements.py: `x[i] = v` is `array_set`, and
  `x[i] += v` reads with `array_get` then writes with `array_set`.

Problems do not stop lowering: each is recorded (`fail`) and the expression
becomes an `undef` placeholder, so one compile reports every problem at once.
Calls (calls.py), statements (statements.py) and loops (loops.py) extend this
class; `lower_expr` dispatches on the node's class name (`expr_<Name>`).
"""
from __future__ import annotations

import ast
import math
import types

from ..errors import CompileError, Loc, NameResolutionError, Problem, TypingError, UnsupportedSyntaxError
from ..ir.core import Value
from ..ir.types import BOOL
from .analysis import assigned_names
from .builtins import math_attribute
from .literals import int64_problem, literal_value, needs_exact_arithmetic
from .scope import Scope, Unbound, branch_value
from .source import NOT_CONSTANT, NOT_FOUND, FunctionSource, constant_value, resolve_free_name
from .syntax import describe, describe_constant
from .views import has_slice, lower_view

BINARY_OPS = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift",
    ast.BitAnd: "bitand", ast.BitOr: "bitor", ast.BitXor: "bitxor",
    ast.MatMult: "matmul",  # ir/ops/linalg.py: type inference refuses numbers
}
UNARY_OPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
ARRAY_ATTRIBUTES = {"shape": "array_shape", "size": "array_size", "ndim": "array_ndim",
                    "T": "array_transpose"}
"""The attributes of a value (an array) compiled code reads, and their primitives."""
COMPARE_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
               ast.NotEq: "ne"}

LOCAL = object()
"""`static_object`'s answer for a name that is a local variable, not a compile-time object."""


class ExpressionLowerer:
    """One function's lowering state, and the lowering of its expressions."""

    def __init__(self, source: FunctionSource):
        self.source = source
        args = source.tree.args
        self.params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.local_names = set(self.params) | set(assigned_names(source.tree.body))
        self.local_names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        self.problems: list[tuple[type[CompileError], Problem]] = []
        self.static: dict[str, object] = {}
        """The static parameters' compile-time values (calls.static_params)."""

    # ---- problems -------------------------------------------------------------------

    def loc(self, node: ast.AST) -> Loc:
        return self.source.loc(node)

    def report(self, kind: type[CompileError], message: str, node: ast.AST, hint: str = "") -> None:
        self.problems.append((kind, Problem(message, self.loc(node), hint)))

    def fail(self, scope: Scope, node: ast.AST, kind: type[CompileError], message: str,
             hint: str = "") -> Value:
        """Record a problem; the expression becomes a placeholder so lowering goes on."""
        self.report(kind, message, node, hint)
        return scope.emit("undef", [], self.loc(node))

    def unsupported(self, scope: Scope, node: ast.AST) -> Value:
        what, hint = describe(node)
        return self.fail(scope, node, UnsupportedSyntaxError, f"{what} is not supported", hint)

    # ---- expressions ------------------------------------------------------------------

    def lower_expr(self, scope: Scope, node: ast.expr) -> Value:
        method = getattr(self, f"expr_{type(node).__name__}", None)
        return self.unsupported(scope, node) if method is None else method(scope, node)

    def expr_Constant(self, scope: Scope, node: ast.Constant) -> Value:
        if constant_value(node.value) is NOT_CONSTANT:
            what, hint = describe_constant(node.value)
            return self.fail(scope, node, UnsupportedSyntaxError, f"{what} is not supported", hint)
        return self.constant(scope, node, node.value, ast.unparse(node))

    def constant(self, scope: Scope, node: ast.expr, value: object, what: str) -> Value:
        """A `const` of `value`, which `node` denotes; a TypingError for an int beyond int64."""
        problem = int64_problem(value, what)
        if problem is not None:
            return self.fail(scope, node, TypingError, *problem)
        return scope.const(value, self.loc(node))

    def literal_arithmetic(self, scope: Scope, node: ast.expr) -> Value | None:
        """`2**63 - 1`, `-2**63`: arithmetic on literals with a part beyond int64, computed
        exactly as Python does (literals.py); None for anything else, lowered as written."""
        if not needs_exact_arithmetic(node):
            return None
        return self.constant(scope, node, literal_value(node), ast.unparse(node))

    def expr_BinOp(self, scope: Scope, node: ast.BinOp) -> Value:
        if (literal := self.literal_arithmetic(scope, node)) is not None:
            return literal
        op = BINARY_OPS.get(type(node.op))
        left, right = self.lower_expr(scope, node.left), self.lower_expr(scope, node.right)
        if op is None:
            return self.fail(scope, node, UnsupportedSyntaxError,
                             "the '@' operator is not supported on numbers", "use '*'")
        return scope.emit(op, [left, right], self.loc(node))

    def expr_UnaryOp(self, scope: Scope, node: ast.UnaryOp) -> Value:
        if (literal := self.literal_arithmetic(scope, node)) is not None:
            return literal
        operand = self.lower_expr(scope, node.operand)
        return scope.emit(UNARY_OPS[type(node.op)], [operand], self.loc(node))

    def expr_Tuple(self, scope: Scope, node: ast.Tuple) -> Value:
        elements = [self.lower_expr(scope, element) for element in node.elts]
        result = scope.emit("tuple", elements, self.loc(node))
        scope.sizes[result] = len(elements)
        return result

    def expr_Subscript(self, scope: Scope, node: ast.Subscript) -> Value:
        """`t[0]` -> getitem (inference makes it an array_get when `t` is an array);
        `x[i]`, `x[i, j]` -> array_get."""
        base = self.lower_expr(scope, node.value)
        if self.unsupported_index(scope, node):
            return scope.emit("undef", [], self.loc(node))
        if has_slice(node):  # a view (views.py)
            if base in scope.sizes:
                return self.fail(scope, node.slice, UnsupportedSyntaxError,
                                 "slicing a tuple is not supported")
            return lower_view(self, scope, node, base)
        index = constant_index(node.slice)
        if index is not None:
            return scope.emit("getitem", [base], self.loc(node), {"index": index})
        if base in scope.sizes:  # a tuple display or a tuple constant: only literal indices
            return self.fail(scope, node.slice, UnsupportedSyntaxError,
                             "a tuple index must be a constant integer",
                             "index with a literal, e.g. t[0] or t[-1]; "
                             "to visit every element write: for x in t:")
        return scope.emit("array_get", [base, *self.lower_indices(scope, node)], self.loc(node))

    def lower_indices(self, scope: Scope, node: ast.Subscript) -> list[Value]:
        """The index values of `x[i]` or `x[i, j]`, left to right."""
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return [self.lower_expr(scope, part) for part in parts]

    def unsupported_index(self, scope: Scope, node: ast.Subscript) -> bool:
        """Report (and return True for) an index with `...`, `None` or `*`."""
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for part in parts:
            if isinstance(part, ast.Constant) and (part.value is Ellipsis or part.value is None):
                what = f"indexing with {ast.unparse(part)} ({ast.unparse(node)})"
            elif isinstance(part, ast.Starred):
                what = f"a starred index ({ast.unparse(node)})"
            else:
                continue
            self.report(UnsupportedSyntaxError, f"{what} is not supported yet", part,
                        "index one element at a time with integers, e.g. x[i] or a[i, j], "
                        "in a for loop over range()")
            return True
        return False

    def expr_IfExp(self, scope: Scope, node: ast.IfExp) -> Value:
        cond = self.condition(scope, node.test)
        return branch_value(scope, cond, lambda s: self.lower_expr(s, node.body),
                            lambda s: self.lower_expr(s, node.orelse), self.loc(node))

    def expr_BoolOp(self, scope: Scope, node: ast.BoolOp) -> Value:
        return self.lower_bool_op(scope, node, node.values)

    def lower_bool_op(self, scope: Scope, node: ast.BoolOp, operands: list[ast.expr]) -> Value:
        """`a and b` is `b if a else a`, `a or b` is `a if a else b`: b runs only when needed."""
        left = self.lower_expr(scope, operands[0])
        if len(operands) == 1:
            return left
        test = self.truth(scope, left, operands[0])
        rest = lambda s: self.lower_bool_op(s, node, operands[1:])
        keep = lambda s: left
        then, otherwise = (rest, keep) if isinstance(node.op, ast.And) else (keep, rest)
        return branch_value(scope, test, then, otherwise, self.loc(node))

    def expr_Compare(self, scope: Scope, node: ast.Compare) -> Value:
        left = self.lower_expr(scope, node.left)
        return self.lower_compare(scope, node, left, node.ops, node.comparators)

    def lower_compare(self, scope: Scope, node: ast.Compare, left: Value, ops: list[ast.cmpop],
                      comparators: list[ast.expr]) -> Value:
        """`a < b < c` is `b < c if a < b else False`, evaluating b once and c only if needed."""
        if isinstance(ops[0], (ast.Is, ast.IsNot)) and len(ops) == 1 \
                and _is_none_literal(comparators[0]):
            test = scope.emit("is_none", [left], self.loc(node))  # decided by left's type
            return test if isinstance(ops[0], ast.Is) else scope.emit("not", [test], self.loc(node))
        right = self.lower_expr(scope, comparators[0])
        op = COMPARE_OPS.get(type(ops[0]))
        if op is None:
            word = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
            return self.fail(scope, node, UnsupportedSyntaxError,
                             f"the '{word[type(ops[0])]}' comparison is not supported",
                             "compare numbers with ==, !=, <, <=, > or >=; "
                             "'x is None' and 'x is not None' are supported")
        result = scope.emit(op, [left, right], self.loc(node))
        if len(ops) == 1:
            return result
        return branch_value(
            scope, result, lambda s: self.lower_compare(s, node, right, ops[1:], comparators[1:]),
            lambda s: s.const(False, self.loc(node)), self.loc(node))

    # ---- truth values ------------------------------------------------------------------

    def condition(self, scope: Scope, node: ast.expr) -> Value:
        """The truth value of an expression, as a bool."""
        return self.truth(scope, self.lower_expr(scope, node), node)

    def truth(self, scope: Scope, value: Value, node: ast.expr) -> Value:
        """`bool(value)`; no cast where the expression is obviously a bool already."""
        if is_boolean(node):
            return value
        return scope.emit("cast", [value], self.loc(node), {"to": BOOL})

    # ---- names ---------------------------------------------------------------------------

    def expr_Name(self, scope: Scope, node: ast.Name) -> Value:
        entry = scope.lookup(node.id)
        if isinstance(entry, Value):
            return scope.use(entry)
        if isinstance(entry, Unbound):
            return self.fail(scope, node, NameResolutionError,
                             f"'{node.id}' may be unassigned here: {entry.why}", entry.hint)
        if node.id in self.local_names:
            return self.fail(scope, node, NameResolutionError,
                             f"local variable '{node.id}' is read before it is assigned",
                             f"assign '{node.id}' before this line")
        return self.global_value(scope, node, resolve_free_name(self.source.fn, node.id), node.id)

    def expr_Attribute(self, scope: Scope, node: ast.Attribute) -> Value:
        base = self.static_object(scope, node.value)
        if base is math:
            value = math_attribute(node.attr)
            if value is None:
                return self.fail(scope, node, UnsupportedSyntaxError,
                                 f"math.{node.attr} is not supported in compiled code")
            return self.global_value(scope, node, value, f"math.{node.attr}")
        if is_numpy_module(base):  # np.pi, np.inf: numbers; a function only in a call
            return self.global_value(scope, node, getattr(base, node.attr, NOT_FOUND),
                                     ast.unparse(node))
        if node.attr in ARRAY_ATTRIBUTES and not isinstance(base, types.ModuleType):
            # an array's (else a TypingError), or the problem of the base, reported by its lowering
            array = self.lower_expr(scope, node.value)
            return scope.emit(ARRAY_ATTRIBUTES[node.attr], [array], self.loc(node))
        return self.fail(scope, node, UnsupportedSyntaxError,
                         f"attribute access '{ast.unparse(node)}' is not supported",
                         "arrays have .shape, .size and .ndim here; otherwise only "
                         "math.<name> can be used, e.g. math.pi or math.sqrt(x)")

    def global_value(self, scope: Scope, node: ast.expr, obj: object, name: str) -> Value:
        """A global or closure value read at compile time: a number becomes a constant."""
        if obj is NOT_FOUND:
            return self.fail(scope, node, NameResolutionError, f"name '{name}' is not defined")
        value = constant_value(obj)
        if value is not NOT_CONSTANT:
            return self.constant(scope, node, value, name)
        if callable(obj):
            return self.fail(scope, node, UnsupportedSyntaxError,
                             f"function '{name}' is used as a value", "only calls to it are supported")
        hint = "pass the array as an argument: compiled code takes arrays only as arguments" \
            if type(obj).__name__ == "ndarray" else \
            "globals used in compiled code must be numbers, booleans, None, tuples of them, " \
            "functions, or the math and numpy modules"
        return self.fail(scope, node, NameResolutionError,
                         f"'{name}' is a {type(obj).__name__}, which compiled code cannot use", hint)

    def static_object(self, scope: Scope, node: ast.expr) -> object:
        """The compile-time object a name, `math.<name>` or `np.<name>` (`np.linalg.inv`)
        denotes; LOCAL or NOT_FOUND otherwise."""
        if isinstance(node, ast.Name):
            if node.id in self.static:
                return self.static[node.id]
            if node.id in self.local_names or scope.lookup(node.id) is not None:
                return LOCAL
            return resolve_free_name(self.source.fn, node.id)
        if isinstance(node, ast.Attribute):
            base = self.static_object(scope, node.value)
            if base is math:
                value = math_attribute(node.attr)
                return NOT_FOUND if value is None else value
            if is_numpy_module(base):
                return getattr(base, node.attr, NOT_FOUND)
            if isinstance(base, types.ModuleType) and callable(getattr(base, node.attr, None)):
                return getattr(base, node.attr)  # a function of another module: nn.relu
        if isinstance(node, ast.Call):
            return self.static_transform(scope, node)
        return NOT_FOUND

    def compile_time_value(self, scope: Scope, node: ast.expr) -> object:
        """The constant `node` denotes at compile time (`1`, `-1`, `(0, 1)`, a global
        constant, a static parameter), or NOT_CONSTANT."""
        if isinstance(node, ast.Constant):
            return constant_value(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.compile_time_value(scope, node.operand)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value if isinstance(node.op, ast.USub) else value
            return NOT_CONSTANT
        if isinstance(node, (ast.Tuple, ast.List)):
            values = tuple(self.compile_time_value(scope, e) for e in node.elts)
            return NOT_CONSTANT if NOT_CONSTANT in values else values
        if isinstance(node, (ast.Name, ast.Attribute)):
            obj = self.static_object(scope, node)
            return NOT_CONSTANT if obj is LOCAL or obj is NOT_FOUND else constant_value(obj)
        return NOT_CONSTANT

    def static_transform(self, scope: Scope, node: ast.Call) -> object:
        """`grad(f, argnums=1)` and the like, evaluated at compile time into a function object.

        The callee must be marked `__astjit_transform__` and every argument must be
        a function or a constant known at compile time.
        """
        transform = self.static_object(scope, node.func)
        if not getattr(transform, "__astjit_transform__", False):
            return NOT_FOUND
        args = [self.static_argument(scope, a) for a in node.args]
        kwargs = {k.arg: self.static_argument(scope, k.value) for k in node.keywords}
        if NOT_FOUND in args or NOT_FOUND in kwargs.values() or None in kwargs:
            return NOT_FOUND
        return transform(*args, **kwargs)

    def static_argument(self, scope: Scope, node: ast.expr) -> object:
        """A transform's argument: a function known at compile time or a literal."""
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError):
            found = self.static_object(scope, node)
            return NOT_FOUND if found in (LOCAL, NOT_CONSTANT) else found


def is_numpy_module(obj: object) -> bool:
    """NumPy or one of its submodules (`np.linalg`): their attributes resolve at compile time."""
    return isinstance(obj, types.ModuleType) and obj.__name__.partition(".")[0] == "numpy"


def constant_index(node: ast.expr) -> int | None:
    """The value of a literal integer index (`0`, `-1`), or None."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return sign * node.value
    return None


def is_boolean(node: ast.expr) -> bool:
    """Whether an expression's value is a bool by its form alone."""
    if isinstance(node, ast.Compare) or (isinstance(node, ast.UnaryOp)
                                         and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.BoolOp):
        return all(is_boolean(value) for value in node.values)
    if isinstance(node, ast.IfExp):
        return is_boolean(node.body) and is_boolean(node.orelse)
    return False


def _is_none_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
