"""SSA environments for structured control flow: `Scope`, `RegionGroup`, `branch`.

A `Scope` is the lowering state of one Graph (a function body or a region): the
environment (name -> entry), the names assigned in it, and whether control can
still reach its end (`dead` after a return, break or continue on every path).
Names resolve through the chain of enclosing scopes, but a Value of an enclosing
graph is never used directly: `Scope.use` turns it into a parameter of every
region between its definition and its use (lazy capture), so regions have no
free variables and capture exactly what they read. `Scope.emit` applies `use` to
every input, so no node can reference a value of another graph.

A `RegionGroup` is the regions of one structured node (`then`/`else` of an `if`,
`cond`/`body` of a `while`): they share their parameter lists, whose leading
part is the captured outer values (the node's inputs), followed by the values a
loop carries. `branch` and `branch_value` build `if` nodes; `branch` also merges
the branches' environments into the enclosing scope (what phi nodes would do).

Environment entries are a Value; a Python bool for an exit flag known at compile
time (an absent flag is False); or `Unbound` for a name not assigned on every
path. Hidden names start with '$' (exit flags, the return slot, loop counters)
and never clash with Python identifiers; '#' separates a per-loop serial number
from the name shown in the IR.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import Loc
from ..ir.core import Graph, Node, Value

RETURNED = "$returned"
"""Flag: a `return` has run."""
RESULT = "$result"
"""The return value slot."""


@dataclass(frozen=True)
class Unbound:
    """A name that may be unassigned here, with why and what to write instead."""

    why: str
    hint: str


Entry = Value | bool | Unbound | None


def is_hidden(name: str) -> bool:
    return name.startswith("$")


def is_flag(name: str) -> bool:
    """Exit flags default to False where a path does not set them."""
    return name == RETURNED or name.startswith(("$break", "$continue"))


def display_name(name: str) -> str:
    """The name a Value holding `name` shows in the IR."""
    return name.split("#")[0]


class Scope:
    """The environment and node list of one graph under construction."""

    def __init__(self, graph: Graph, parent: Scope | None = None,
                 group: RegionGroup | None = None, sizes: dict[Value, int] | None = None):
        self.graph = graph
        self.parent = parent
        self.group = group
        self.sizes: dict[Value, int] = sizes if sizes is not None else parent.sizes
        """Lengths of the tuple values known at compile time (shared by a function's scopes)."""
        self.env: dict[str, Entry] = {}
        self.assigned: dict[str, None] = {}
        """Names assigned in this scope, in order: what a merge or a loop must carry out."""
        self.dead = False
        self.defined: set[Value] = set(graph.params)

    # ---- names --------------------------------------------------------------------

    def lookup(self, name: str) -> Entry:
        """The entry of `name` here or in an enclosing scope; None if it has none."""
        scope = self
        while scope is not None:
            if name in scope.env:
                return scope.env[name]
            scope = scope.parent
        return None

    def assign(self, name: str, entry: Entry) -> None:
        """Bind `name`; a temporary Value assigned to a user's variable takes its name."""
        if isinstance(entry, Value) and not entry.name and not is_hidden(name):
            entry.name = name
        self.env[name] = entry
        self.assigned[name] = None

    def know(self, name: str, entry: Entry) -> None:
        """Bind `name` without it counting as an assignment (parameters, known flags)."""
        self.env[name] = entry

    def forget(self, name: str) -> None:
        self.env.pop(name, None)
        self.assigned.pop(name, None)

    def value_of(self, name: str, loc: Loc) -> Value:
        """A local Value for `name`: known flags become constants, unbound names undef."""
        entry = self.lookup(name)
        if isinstance(entry, Value):
            return self.use(entry)
        if entry is None and is_flag(name):
            entry = False
        if isinstance(entry, bool):
            return self.const(entry, loc)
        return self.emit("undef", [], loc)

    # ---- values and nodes -----------------------------------------------------------

    def use(self, value: Value) -> Value:
        """`value` as seen from this graph: itself, or the parameter that captures it."""
        if value in self.defined:
            return value
        if self.group is None:
            raise AssertionError(f"{value!r} is defined in no enclosing graph")
        return self.group.capture(value, self)

    def add_node(self, op: str, inputs: list[Value], names: list[str], loc: Loc, *,
                 attrs: dict | None = None, regions: list[Graph] | None = None) -> Node:
        node = self.graph.add(op, [self.use(v) for v in inputs], len(names), attrs=attrs,
                              regions=regions, loc=loc, names=list(names))
        self.defined.update(node.outputs)
        return node

    def emit(self, op: str, inputs: list[Value], loc: Loc, attrs: dict | None = None) -> Value:
        """Append a one-result leaf node; return its result."""
        return self.add_node(op, inputs, [""], loc, attrs=attrs).outputs[0]

    def const(self, value: object, loc: Loc) -> Value:
        result = self.emit("const", [], loc, {"value": value})
        if isinstance(value, tuple):
            self.sizes[result] = len(value)
        return result


class RegionGroup:
    """The regions of one structured node, sharing parameters and captured inputs."""

    def __init__(self, parent: Scope, roles: list[str], loc: Loc,
                 carried: list[tuple[str, str]] = ()):
        """`carried`: (name, parameter name) of the values a loop carries, after the captures."""
        self.parent = parent
        self.inputs: list[Value] = []
        """The outer values captured so far: the node's inputs that feed the leading params."""
        self.captured: dict[Value, list[Value]] = {}
        self.scopes = [Scope(Graph(role, loc=loc), parent, self) for role in roles]
        for name, param_name in carried:
            for scope in self.scopes:
                param = Value(param_name)
                scope.graph.params.append(param)
                scope.defined.add(param)
                scope.know(name, param)

    @property
    def graphs(self) -> list[Graph]:
        return [scope.graph for scope in self.scopes]

    def capture(self, value: Value, asking: Scope) -> Value:
        """The parameter of `asking`'s region that receives the outer `value`."""
        if value not in self.captured:
            outer = self.parent.use(value)
            if outer in self.captured:  # one outer value, one parameter (AD relies on it)
                self.captured[value] = self.captured[outer]
                return self.captured[value][self.scopes.index(asking)]
            params = [Value(value.name) for _ in self.scopes]
            for scope, param in zip(self.scopes, params):
                scope.graph.params.insert(len(self.inputs), param)
                scope.defined.add(param)
                if outer in self.parent.sizes:
                    self.parent.sizes[param] = self.parent.sizes[outer]
            self.inputs.append(outer)
            self.captured[value] = self.captured[outer] = params
        return self.captured[value][self.scopes.index(asking)]

    def set_outputs(self, outputs: list[list[Value]]) -> None:
        """Close the regions; capturing stops being possible once the node is built."""
        for scope, values in zip(self.scopes, outputs):
            scope.graph.outputs = [scope.use(v) for v in values]


def branch_value(parent: Scope, cond: Value, then_value: Callable[[Scope], Value],
                 else_value: Callable[[Scope], Value], loc: Loc) -> Value:
    """An `if` node computing one value: each callback lowers its branch and returns it."""
    group = RegionGroup(parent, ["then", "else"], loc)
    group.set_outputs([[fill(scope)] for scope, fill in zip(group.scopes, (then_value, else_value))])
    node = parent.add_node("if", [cond, *group.inputs], [""], loc, regions=group.graphs)
    return node.outputs[0]


def branch(parent: Scope, cond: Value, fill_then: Callable[[Scope], None],
           fill_else: Callable[[Scope], None], loc: Loc) -> None:
    """An `if` statement: lower both branches, then merge what they assign into `parent`."""
    group = RegionGroup(parent, ["then", "else"], loc)
    for scope, fill in zip(group.scopes, (fill_then, fill_else)):
        fill(scope)
    names = list(dict.fromkeys(name for scope in group.scopes for name in scope.assigned))
    if all(scope.lookup(RETURNED) is True for scope in group.scopes):
        names = [name for name in names if name in (RESULT, RETURNED)]  # nothing else is read
    outputs: list[list[Value]] = [[], []]
    out_names, merged = [], {}
    for name in names:
        entry = _merge(name, group.scopes, loc)
        if entry is not _NEEDS_OUTPUT:
            merged[name] = entry
            continue
        for scope, values in zip(group.scopes, outputs):
            values.append(scope.value_of(name, loc))
        out_names.append(name)
    group.set_outputs(outputs)
    node = parent.add_node("if", [cond, *group.inputs], [display_name(n) for n in out_names],
                           loc, regions=group.graphs)
    for name, result, then_out, else_out in zip(out_names, node.outputs, *outputs):
        parent.assign(name, result)
        size = parent.sizes.get(then_out)
        if size is not None and size == parent.sizes.get(else_out):
            parent.sizes[result] = size
    for name, entry in merged.items():
        parent.assign(name, entry)
    parent.dead = all(scope.dead for scope in group.scopes)


_NEEDS_OUTPUT = object()


def _merge(name: str, scopes: list[Scope], loc: Loc) -> Entry:
    """What `name` holds after the branches join, or _NEEDS_OUTPUT for a node output."""
    entries = [scope.lookup(name) for scope in scopes]
    if is_flag(name):
        known = [False if e is None else e for e in entries]
        if all(isinstance(e, bool) for e in known) and len(set(known)) == 1:
            return known[0]
        return _NEEDS_OUTPUT
    if is_hidden(name):
        return _NEEDS_OUTPUT
    live = [e for e, scope in zip(entries, scopes) if not scope.dead]
    for entry in live:
        if isinstance(entry, Unbound):
            return entry
    if any(entry is None for entry in live) or not any(isinstance(e, Value) for e in entries):
        return Unbound(f"it is assigned in only one branch of the if at line {loc.line}",
                       "assign it before the if")
    return _NEEDS_OUTPUT
