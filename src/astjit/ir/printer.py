"""The text dump of the IR, which reads like a program.

    graph @sum_to(%n: i64) -> i64 {                          # loops.py:1
      %s = const 0 : i64                                     # loops.py:2
      %i = const 0 : i64                                     # loops.py:3
      %s.3, %i.3 = while [%n] (%s, %i) {                     # loops.py:4
        cond (%n.1: i64, %s.1: i64, %i.1: i64) {
          %0 = lt %i.1, %n.1 : bool                          # loops.py:4
          yield %0
        }
        body (%n.2: i64, %s.2: i64, %i.2: i64) {
          ...
        }
      } : i64, i64
      return %s.3
    }

Values keep the user's variable name, with an SSA suffix (`%s`, `%s.1`, ...)
numbered in definition order; temporaries are `%0`, `%1`, ... Names are unique
within each function graph (regions included) and deterministic. Types follow a
colon (omitted while untyped); the source location is a right-aligned trailing
comment, which `locations=False` leaves out for golden tests.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import Loc
from .core import REGION_ROLES, Graph, Module, Node, Value
from .types import TapeType, Type

"""The role of each region of a structural op, by position."""

OPERAND_ATTRS = ("value", "index")
"""Attributes printed as trailing operands: `const 1.0`, `getitem %t, 1`."""

KEYWORD_ATTRS = ("to",)
"""Attributes printed as a keyword and a value: `cast %x to i64`."""

IMPLIED_ATTRS = {"type": lambda t: t, "element": TapeType}
"""Attributes left out when the result type says them: `const 1.0 : f64` (not
`{type=f64}`), `tape_new : tape<f64>` (not `{element=f64}`)."""

MAX_CODE_WIDTH = 80
"""Location comments align after the longest line, up to this column."""


def format_module(module: Module, *, locations: bool = True) -> str:
    """Every graph of `module`, the entry first, separated by blank lines."""
    names = sorted(module.graphs, key=lambda name: name != module.entry)
    return "\n".join(format_graph(module.graphs[name], locations=locations) for name in names)


def format_graph(graph: Graph, *, locations: bool = True) -> str:
    """One function graph with its regions nested, as text ending in a newline."""
    printer = _Printer(ValueNames(graph))
    printer.function(graph)
    return render_lines(printer.lines, locations)


class ValueNames:
    """The printed names of one function graph's values, assigned in definition order."""

    def __init__(self, graph: Graph):
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.next_temporary = 0
        self.name_definitions(graph)

    def assign(self, value: Value) -> str:
        """`%name` of `value`, given a fresh name on its first request.

        All defined values are named up front in definition order; a value used
        but never defined (ill-formed IR) is named where it is first printed.
        """
        if value not in self.names:
            self.names[value] = "%" + self.fresh(value.name)
        return self.names[value]

    __getitem__ = assign

    def name_definitions(self, graph: Graph) -> None:
        """Name parameters, then each node's region values before its own outputs."""
        for value in graph.params:
            self.assign(value)
        for node in graph.nodes:
            for region in node.regions:
                self.name_definitions(region)
            for value in node.outputs:
                self.assign(value)

    def fresh(self, base: str) -> str:
        if not base:
            self.next_temporary += 1
            return str(self.next_temporary - 1)
        suffix = self.next_suffix.get(base, 0)
        name = base if suffix == 0 else f"{base}.{suffix}"
        while name in self.taken:
            suffix += 1
            name = f"{base}.{suffix}"
        self.next_suffix[base] = suffix + 1
        self.taken.add(name)
        return name


@dataclass
class Line:
    """One printed line: indentation depth, code, and the source location if any."""

    depth: int
    code: str
    loc: Loc | None = None


def render_lines(lines: list[Line], locations: bool) -> str:
    """Indent each line and right-align the location comments in one column."""
    codes = ["  " * line.depth + line.code for line in lines]
    located = [len(code) for code, line in zip(codes, lines) if line.loc is not None]
    width = min(max(located, default=0), MAX_CODE_WIDTH)
    out = []
    for code, line in zip(codes, lines):
        if locations and line.loc is not None:
            code = f"{code.ljust(width)}  # {format_loc(line.loc)}"
        out.append(code)
    return "\n".join(out) + "\n"


def format_loc(loc: Loc) -> str:
    return f"{os.path.basename(loc.filename)}:{loc.line}"


def format_literal(value) -> str:
    """An attribute value as source-like text: types by name, the rest by repr."""
    return str(value) if isinstance(value, Type) else repr(value)


def types_suffix(values: list[Value]) -> str:
    """` : t1, t2` for typed values ('?' for an untyped one among them), '' if none is typed."""
    if all(v.type is None for v in values):
        return ""
    return " : " + ", ".join(str(v.type) if v.type is not None else "?" for v in values)


def format_op(node: Node, operands: list[str]) -> str:
    """A leaf op with its operands and attributes: `const 1.0`, `cast %x to i64`, `op %a {k=v}`.

    Attributes the result type implies (`IMPLIED_ATTRS`) are not repeated.
    """
    operands = operands + [format_literal(node.attrs[a]) for a in OPERAND_ATTRS if a in node.attrs]
    text = node.op + (" " + ", ".join(operands) if operands else "")
    text += "".join(f" {a} {format_literal(node.attrs[a])}" for a in KEYWORD_ATTRS
                    if a in node.attrs)
    shown = set(OPERAND_ATTRS + KEYWORD_ATTRS)
    result_types = [v.type for v in node.outputs]
    shown.update(name for name, implied in IMPLIED_ATTRS.items()
                 if name in node.attrs and result_types == [implied(node.attrs[name])])
    others = [f"{k}={format_literal(v)}" for k, v in node.attrs.items() if k not in shown]
    return text + (" {" + ", ".join(others) + "}" if others else "")


class _Printer:
    """Collects the lines of one function graph."""

    def __init__(self, names: ValueNames):
        self.names = names
        self.lines: list[Line] = []

    def refs(self, values: list[Value]) -> str:
        return ", ".join(self.names[v] for v in values)

    def declarations(self, values: list[Value]) -> str:
        return ", ".join(self.names[v] + (f": {v.type}" if v.type is not None else "")
                         for v in values)

    def function(self, graph: Graph) -> None:
        result = ""
        if graph.outputs and all(v.type is not None for v in graph.outputs):
            types = ", ".join(str(v.type) for v in graph.outputs)
            result = f" -> {types}" if len(graph.outputs) == 1 else f" -> ({types})"
        header = f"graph @{graph.name}({self.declarations(graph.params)}){result} {{"
        self.lines.append(Line(0, header, graph.loc))
        self.body(graph, 1)
        self.lines.append(Line(1, f"return {self.refs(graph.outputs)}"))
        self.lines.append(Line(0, "}"))

    def body(self, graph: Graph, depth: int) -> None:
        for node in graph.nodes:
            self.node(node, depth)

    def node(self, node: Node, depth: int) -> None:
        results = f"{self.refs(node.outputs)} = " if node.outputs else ""
        if node.op in REGION_ROLES:
            self.lines.append(Line(depth, results + self.structural_header(node), node.loc))
            roles = ("rows",) if "rows" in node.attrs else REGION_ROLES[node.op]  # a row group
            for role, region in zip(roles, node.regions):
                self.region(role, region, depth + 1)
            self.lines.append(Line(depth, "}" + types_suffix(node.outputs)))
            return
        if node.op == "call":
            text = f"call @{node.attrs.get('callee')}({self.refs(node.inputs)})"
        else:
            text = format_op(node, [self.names[v] for v in node.inputs])
        self.lines.append(Line(depth, results + text + types_suffix(node.outputs), node.loc))

    def structural_header(self, node: Node) -> str:
        """`if %c (%x, %y) {` or `while [%invariants] (%carried) {`."""
        if node.op == "if":
            cond, captured = node.inputs[:1], node.inputs[1:]
            return f"if {self.refs(cond)} ({self.refs(captured)}) {{"
        if node.op == "fused":
            reduction = ""
            if "reduce" in node.attrs:
                reduction = f", {node.attrs['reduce']} axes={format_literal(node.attrs['axes'])}"
                reduction += ", keepdims" if node.attrs.get("keepdims") else ""
            if "rows" in node.attrs:
                reduction = f", rows={node.attrs['rows']}"
            return f"fused [ndim={node.attrs.get('ndim')}{reduction}] ({self.refs(node.inputs)}) {{"
        k = node.attrs.get("n_invariants", 0)
        return f"while [{self.refs(node.inputs[:k])}] ({self.refs(node.inputs[k:])}) {{"

    def region(self, role: str, region: Graph, depth: int) -> None:
        self.lines.append(Line(depth, f"{role} ({self.declarations(region.params)}) {{",
                               region.loc))
        self.body(region, depth + 1)
        self.lines.append(Line(depth + 1, f"yield {self.refs(region.outputs)}".rstrip()))
        self.lines.append(Line(depth, "}"))
