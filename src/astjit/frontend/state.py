"""The state of lowering one function (`Lowering`) and the tables of lowering rules (`Rules`).

A rule lowers one construct: `rule(state, scope, node)`. `Rules` holds them by
AST node type (expressions, statements), by callee found at compile time
(`Callee`: NumPy's functions, ufuncs, builtins ...) and by array method name.
Each construct module exports its own tables; rules.py assembles them, so no
module fills a registry as a side effect of being imported. A construct module
reaches the others' rules only through `Lowering.lower_expr` and the tables; the
helpers several share are blocks.py's (statement lists, exit flags), targets.py's
(assignment targets), views.py's (indices) and resolve.py's (compile-time objects).

`Lowering` is what lowering one function carries: its source and local names,
the function table of the module being built, the problems found so far, the
frames of the loops around the current statement and a serial counter for the
hidden names of loops. Problems do not stop lowering: each is recorded (`fail`)
and the expression becomes an `undef` placeholder, so one compile reports every
problem at once.
"""
from __future__ import annotations

import ast
import itertools
import types
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import CompileError, Loc, Problem, UnsupportedSyntaxError
from ..ir.core import Value
from ..ir.types import BOOL
from .analysis import assigned_names, is_boolean
from .function_values import FUNCTION_VALUES, FunctionValue
from .scope import RETURNED, Scope
from .source import FunctionSource
from .syntax import describe

ExprRule = Callable[["Lowering", Scope, ast.expr], Value]
StmtRule = Callable[["Lowering", Scope, ast.stmt], None]
CallRule = Callable[["Lowering", Scope, ast.Call, object, str], Value]
"""`rule(state, scope, call, found, name)`: `found` is what `Callee.find` gave, `name`
the callee as written (`np.zeros`)."""
MethodRule = Callable[["Lowering", Scope, ast.Call], Value]


@dataclass(frozen=True)
class Callee:
    """The calls of the callables `find` recognizes (it gives None for any other)."""

    find: Callable[[object], object]
    lower: CallRule


@dataclass(frozen=True)
class Rules:
    """Every lowering rule of the frontend (assembled in rules.py)."""

    expressions: dict[type[ast.expr], ExprRule]
    statements: dict[type[ast.stmt], StmtRule]
    callees: tuple[Callee, ...]
    """Tried in order on the callee of a call, once it is known at compile time."""
    methods: dict[str, MethodRule]
    """Array methods by name: `x.reshape(...)`, `x.sum(...)`."""


@dataclass(frozen=True)
class LoopFrame:
    """The flags `break` and `continue` set inside the innermost loop (None outside loops)."""

    break_flag: str | None
    continue_flag: str | None


class FunctionTable:
    """The graph name of each function of the module being built, and those not lowered yet.

    A function with static parameters (`static_params`) gets one graph per binding of
    them to compile-time constants: `softmax[axis=-1]`.
    """

    def __init__(self):
        self.names: dict[tuple, str] = {}
        self.pending: deque[tuple[types.FunctionType, str, dict]] = deque()

    def request(self, fn: types.FunctionType, static: tuple[tuple[str, object], ...] = ()) -> str:
        """The name of `fn`'s graph (for this binding of its static parameters): its
        `__qualname__`, with the binding and `#2`, `#3` ... if already taken."""
        key = (fn, static)
        if key not in self.names:
            taken = set(self.names.values())
            base = fn.__qualname__
            if static:
                base += "[" + ", ".join(f"{k}={getattr(v, '__qualname__', repr(v))}"
                                        for k, v in static) + "]"
            name, serial = base, 1
            while name in taken:
                serial += 1
                name = f"{base}#{serial}"
            self.names[key] = name
            self.pending.append((fn, name, dict(static)))
        return self.names[key]


class Lowering:
    """What lowering one function carries from one construct to the next."""

    def __init__(self, source: FunctionSource, functions: FunctionTable, rules: Rules,
                 static: dict[str, object] | None = None):
        self.source = source
        self.functions = functions
        self.rules = rules
        args = source.tree.args
        self.params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.local_names = set(self.params) | set(assigned_names(source.tree.body))
        self.local_names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        self.static: dict[str, object] = dict(static or {})
        """The static parameters' compile-time values (calls.static_params)."""
        self.problems: list[tuple[type[CompileError], Problem]] = []
        self.frames = [LoopFrame(None, None)]
        """The loops around the statement being lowered, innermost last."""
        self.serial = itertools.count(1)
        """Numbers the hidden names of each loop: `$break#1`, `$range#2`."""
        self.def_loc = self.loc(source.tree)

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
        """The Value of `node`, by the rule for its node type."""
        value = self.lower_operand(scope, node)
        if isinstance(value, FUNCTION_VALUES):
            return self.fail(scope, node, UnsupportedSyntaxError,
                             f"the function '{value.__name__}' used as a value "
                             f"({ast.unparse(node)}) is not supported: compiled code cannot "
                             "return a function or store it",
                             "call it, or pass it to a function as an argument")
        return value

    def lower_operand(self, scope: Scope, node: ast.expr) -> Value | FunctionValue:
        """`lower_expr`, where a function value (a lambda, a local def) may be the result:
        what a name can be bound to and a call can take (function_values.py)."""
        rule = self.rules.expressions.get(type(node))
        return self.unsupported(scope, node) if rule is None else rule(self, scope, node)

    def condition(self, scope: Scope, node: ast.expr) -> Value:
        """The truth value of an expression, as a bool."""
        return self.truth(scope, self.lower_expr(scope, node), node)

    def truth(self, scope: Scope, value: Value, node: ast.expr) -> Value:
        """`bool(value)`; no cast where the expression is obviously a bool already."""
        if is_boolean(node):
            return value
        return scope.emit("cast", [value], self.loc(node), {"to": BOOL})

    # ---- loops ---------------------------------------------------------------------------

    def new_frame(self) -> LoopFrame:
        n = next(self.serial)
        return LoopFrame(f"$break#{n}", f"$continue#{n}")

    def exit_flags(self) -> list[str]:
        """The flags that end the current block's paths."""
        frame = self.frames[-1]
        return [RETURNED] + [flag for flag in (frame.break_flag, frame.continue_flag) if flag]
