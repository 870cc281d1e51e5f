"""Algebraic simplification: a table of rewrite rules, one per line, exact for Python semantics.

Each rule is (ops, when, then): for a node whose op is one of `ops`, seen as
the term `e` (operands `e.x`, `e.y`, `e.z`), when `when(e)` holds the node
becomes `then(e)`: an existing term (uses are renamed to it), `Const(v)` (the
node becomes a constant of its type), or `Apply(op, ...)` (the node is
rewritten in place, then simplified again). Rules hold for every input of the
types they check: integer rules are exact with 64-bit wrap-around, and float
rules keep NaN, infinities and the sign of zero (so `x + 0.0` and `x * 0.0`
stay). A rule never removes a check the program performs: operands that may
raise are computed by their own nodes, which are untouched.

Array shape queries become `array_dim` (one axis) and `a.ndim` a constant; a
new array's dimensions are those it was made with (`array_new` succeeded, so
they are not negative); array element reads and writes are never rewritten
(effects.py).

An `if` whose branches are a few effect-free leaf ops giving scalars becomes
`select`s: both branches then run, which is safe only because they cannot
raise; an `array_get` has effects (its bounds check raises), so a branch that
reads an array element is never speculated.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import Graph, Module, Node, Value
from ..ops import OPS
from ..ops.elementwise import is_array_elementwise
from ..types import BOOL, F64, I64, INT_OR_BOOL, ArrayType, exact
from .effects import has_effects
from .rewrite import Replacement, forward, make_const, rewrite_graph

SCALARS = (BOOL, I64, F64)
SPECULATION_BUDGET = 4
"""At most this many non-constant ops, both branches together, for `if` -> `select`."""
MAX_REWRITES = 16
"""Rewrites of one node in a row; the rules terminate well before, this only guards."""


class Term:
    """A value as the rules see it: its type, and the op and operands that define it."""

    __slots__ = ("defs", "node", "value")

    def __init__(self, value: Value, node: Node | None, defs: dict[Value, Node]):
        self.value, self.node, self.defs = value, node, defs

    @property
    def type(self):
        return self.value.type

    @property
    def op(self) -> str | None:
        """The defining op, or None for a parameter."""
        return self.node.op if self.node else None

    @property
    def const(self) -> Any:
        return self.node.attrs["value"]

    def arg(self, i: int) -> Term:
        operand = self.node.inputs[i]
        return Term(operand, self.defs.get(operand), self.defs)

    x = property(lambda self: self.arg(0))
    y = property(lambda self: self.arg(1))
    z = property(lambda self: self.arg(2))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Term) and self.value is other.value

    def __hash__(self) -> int:
        return id(self.value)


@dataclass(frozen=True)
class Const:
    """A rule's result: the constant `value`, converted to the node's type."""

    value: Any


class Apply:
    """A rule's result: the node rewritten as `op(*args, **attrs)`."""

    def __init__(self, op: str, *args: Term, **attrs: Any):
        self.op, self.inputs, self.attrs = op, [a.value for a in args], attrs


def is_int(t: Term) -> bool:
    return t.type == I64


def is_float(t: Term) -> bool:
    return t.type == F64


def is_bool(t: Term) -> bool:
    return t.type == BOOL


def is_array(t: Term) -> bool:
    return isinstance(t.type, ArrayType)


def constant(t: Term) -> bool:
    return t.op == "const"


def equals(t: Term, c: Any) -> bool:
    """`t` is the constant `c` (as a float, with the sign of zero)."""
    if not constant(t) or t.const != c:
        return False
    return not isinstance(c, float) or math.copysign(1.0, t.const) == math.copysign(1.0, c)


def from_bool(t: Term) -> bool:
    """`t` is a bool converted to a number (typed IR compares bools as ints)."""
    return t.op == "cast" and is_bool(t.x)


def _lone_array_operand(t: Term) -> Term | None:
    """The one array operand of an elementwise array op whose other operands are scalars
    (its result has that operand's shape), or None. A mask check of `x[x < c]` then
    compares `x`'s length with itself, and the mask fuses into the write."""
    if t.node is None or not is_array_elementwise(t.node):
        return None
    arrays = [k for k, v in enumerate(t.node.inputs) if isinstance(v.type, ArrayType)]
    if len(arrays) != 1 or t.node.inputs[arrays[0]].type.ndim != t.type.ndim:
        return None
    return t.arg(arrays[0])


COMMUTATIVE = " ".join(name for name, op in OPS.items() if "commutative" in op.traits)
When = Callable[[Term], bool]
Then = Callable[[Term], Any]

# (ops, when, then); `n` an int, `x` a float or int, `b` a bool, `c` a constant.
RULES: list[tuple[str, When, Then]] = [
    (COMMUTATIVE, lambda e: constant(e.x) and not constant(e.y),
     lambda e: Apply(e.op, e.y, e.x, **e.node.attrs)),                        # c + x = x + c
    ("add", lambda e: is_int(e) and equals(e.y, 0), lambda e: e.x),           # n + 0 = n
    ("add", lambda e: is_float(e) and equals(e.y, -0.0), lambda e: e.x),      # x + -0.0 = x
    ("sub", lambda e: is_int(e) and equals(e.y, 0), lambda e: e.x),           # n - 0 = n
    ("sub", lambda e: is_float(e) and equals(e.y, 0.0), lambda e: e.x),       # x - 0.0 = x
    ("sub", lambda e: is_int(e) and e.x == e.y, lambda e: Const(0)),          # n - n = 0
    ("mul", lambda e: equals(e.y, 1), lambda e: e.x),                         # x * 1 = x
    ("mul", lambda e: is_int(e) and equals(e.y, 0), lambda e: Const(0)),      # n * 0 = 0
    ("truediv", lambda e: equals(e.y, 1.0), lambda e: e.x),                   # x / 1.0 = x
    ("floordiv", lambda e: is_int(e) and equals(e.y, 1), lambda e: e.x),      # n // 1 = n
    ("mod", lambda e: is_int(e) and equals(e.y, 1), lambda e: Const(0)),      # n % 1 = 0
    ("pow", lambda e: equals(e.y, 1), lambda e: e.x),                         # x ** 1 = x
    ("pow", lambda e: equals(e.y, 0), lambda e: Const(1)),                    # x ** 0 = 1
    ("neg", lambda e: e.x.op == "neg", lambda e: e.x.x),                      # -(-x) = x
    ("pos", lambda e: True, lambda e: e.x),                                   # +x = x
    ("index", lambda e: True, lambda e: e.x),             # operator.index(n) = n (typed: n is an int)
    ("untag", lambda e: e.x.op == "tag" and is_int(e.x.x), lambda e: e.x.x),  # int(tag(n)) = n
    ("untag", lambda e: e.x.op == "tag" and is_bool(e.x.x),
     lambda e: Apply("cast", e.x.x, to=I64)),                                 # int(tag(b)) = int(b)
    ("invert", lambda e: e.x.op == "invert", lambda e: e.x.x),                # ~~n = n
    ("abs", lambda e: e.x.op == "abs", lambda e: e.x),                        # ||x|| = |x|
    ("not", lambda e: e.x.op == "not" and is_bool(e.x.x), lambda e: e.x.x),   # not not b = b
    ("min max", lambda e: e.x == e.y, lambda e: e.x),                         # min(x, x) = x
    ("bitand bitor", lambda e: e.x == e.y, lambda e: e.x),                    # n & n = n
    ("bitxor", lambda e: e.x == e.y, lambda e: Const(0)),                     # n ^ n = 0
    ("bitand", lambda e: equals(e.y, 0), lambda e: Const(0)),                 # n & 0 = 0
    ("bitand", lambda e: is_int(e) and equals(e.y, -1), lambda e: e.x),       # n & -1 = n
    ("bitand", lambda e: is_bool(e) and equals(e.y, True), lambda e: e.x),    # b & True = b
    ("bitor bitxor", lambda e: equals(e.y, 0), lambda e: e.x),                # n | 0 = n
    ("bitor", lambda e: is_bool(e) and equals(e.y, True),
     lambda e: Const(True)),                                                  # b | True = True
    ("eq le ge", lambda e: e.x == e.y and is_int(e.x), lambda e: Const(True)),   # n == n
    ("ne lt gt", lambda e: e.x == e.y and is_int(e.x), lambda e: Const(False)),  # not n < n
    ("eq", lambda e: from_bool(e.x) and equals(e.y, 1), lambda e: e.x.x),     # (b == 1) = b
    ("ne", lambda e: from_bool(e.x) and equals(e.y, 0), lambda e: e.x.x),     # (b != 0) = b
    ("eq", lambda e: from_bool(e.x) and equals(e.y, 0),
     lambda e: Apply("not", e.x.x)),                                          # (b == 0) = not b
    ("ne", lambda e: from_bool(e.x) and equals(e.y, 1),
     lambda e: Apply("not", e.x.x)),                                          # (b != 1) = not b
    ("select", lambda e: e.y == e.z, lambda e: e.y),                          # x if c else x = x
    ("select", lambda e: constant(e.x),
     lambda e: e.y if e.x.const else e.z),                                    # x if True else y = x
    ("select", lambda e: equals(e.y, True) and equals(e.z, False),
     lambda e: e.x),                                                          # T if c else F = c
    ("getitem", lambda e: e.x.op == "array_shape" and is_array(e.x.x),
     lambda e: Apply("array_dim", e.x.x, axis=e.node.attrs["index"] % e.x.x.type.ndim)),  # a.shape[k]
    ("len", lambda e: is_array(e.x), lambda e: Apply("array_dim", e.x, axis=0)),  # len(a) = a.shape[0]
    ("array_ndim", lambda e: is_array(e.x), lambda e: Const(e.x.type.ndim)),     # a.ndim
    ("array_dim", lambda e: e.x.op == "array_new",
     lambda e: e.x.arg(e.node.attrs["axis"])),                        # np.zeros((n, m)).shape[1] = m
    ("array_dim", lambda e: e.x.op == "array_new_like",
     lambda e: Apply("array_dim", e.x.x, axis=e.node.attrs["axis"])),  # zeros_like(a).shape = a.shape
    ("array_dim", lambda e: _lone_array_operand(e.x) is not None,
     lambda e: Apply("array_dim", _lone_array_operand(e.x),
                     axis=e.node.attrs["axis"])),                     # (x < c).shape = x.shape
    ("array_transpose", lambda e: e.x.op == "array_transpose",
     lambda e: e.x.x),                                     # (a.T).T = a: the same memory, shape, strides
    ("cast", lambda e: e.x.type == e.type, lambda e: e.x),                    # T(x: T) = x
    ("cast", lambda e: e.x.op == "cast" and is_bool(e.x.x),
     lambda e: Apply("cast", e.x.x, to=e.type)),                              # T(U(b)) = T(b)
    ("cast", lambda e: is_bool(e) and e.x.op == "cast" and is_float(e.x) and is_int(e.x.x),
     lambda e: Apply("cast", e.x.x, to=BOOL)),                           # bool(float(n)) = bool(n)
]

RULES_BY_OP: dict[str, list[tuple[When, Then]]] = {}
for _ops, _when, _then in RULES:
    for _op in _ops.split():
        RULES_BY_OP.setdefault(_op, []).append((_when, _then))


def simplify(module: Module) -> Module:
    """Simplify every graph of `module` and all their regions."""
    for graph in module.graphs.values():
        _simplify_graph(graph)
    return module


def _simplify_graph(graph: Graph) -> None:
    defs: dict[Value, Node] = {}

    def visit(node: Node) -> Replacement | None:
        for region in node.regions:
            _simplify_graph(region)
        if node.op == "if":
            replacement = _if_to_select(node)
            if replacement is not None:
                return replacement
        elif node.op in RULES_BY_OP and not is_array_elementwise(node) \
                and node.outputs[0].type != INT_OR_BOOL:  # new arrays stay new; the rules'
            # constants would lose an int|bool's tag (True ^ True is False, not 0)
            result = _rewrite(node, defs)
            if result is not None:
                return forward(node, [result])
        defs.update((out, node) for out in node.outputs)
        return None

    rewrite_graph(graph, visit)


def _rewrite(node: Node, defs: dict[Value, Node]) -> Value | None:
    """Apply the first matching rule until none matches; return a value replacing the node."""
    for _ in range(MAX_REWRITES):
        e = Term(node.outputs[0], node, defs)
        result = _first_match(e)
        if isinstance(result, Term):
            return result.value
        if isinstance(result, Const):
            make_const(node, result.value)
        elif isinstance(result, Apply):
            node.op, node.inputs, node.attrs = result.op, result.inputs, result.attrs
        else:
            return None
    return None


def _first_match(e: Term) -> Term | Const | Apply | None:
    """The result of the first rule for `e.op` that applies (a term only of `e`'s exact type:
    `+x` of a Python int is a NumPy int under np.positive, so it stays)."""
    for when, then in RULES_BY_OP.get(e.op, ()):
        if when(e):
            result = then(e)
            if not isinstance(result, Term) or exact(result.type) == exact(e.type):
                return result
    return None


def _if_to_select(node: Node) -> Replacement | None:
    """`if c` of tiny, effect-free branches giving scalars -> both branches, then `select`s."""
    then, orelse = node.regions
    body = then.nodes + orelse.nodes
    outputs = zip(node.outputs, then.outputs, orelse.outputs)
    if not node.outputs or any(not out.type == a.type == b.type or out.type not in SCALARS
                               for out, a, b in outputs):
        return None
    if any(n.op not in OPS or has_effects(n) for n in body):
        return None
    if sum(n.op != "const" for n in body) > SPECULATION_BUDGET:
        return None
    cond, captured = node.inputs[0], node.inputs[1:]
    selects = [Node("select", [cond, a, b], [out], {}, [], node.loc)
               for out, a, b in zip(node.outputs, then.outputs, orelse.outputs)]
    renames = {**dict(zip(then.params, captured)), **dict(zip(orelse.params, captured))}
    return Replacement(body + selects, renames)
