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

Attributes have one syntax on every op: `{name=value, ...}` after the operands
(`reduce %x {kind='max', axis=(1,), keepdims=True}`; on a structural op before
its regions' brace: `fused (%x, %0) {ndim=2, reduce='sum', axes=(1,),
keepdims=True} {`, a fused or rowwise node's typed attributes (kernels.py) field
by field; on a call after its arguments), in `ATTR_ORDER` and then by name.
Values print as literals (`repr`), types by name, graph names as `@name`, and
the attributes that point at operands by the operands' names: a fused
node's `reuse` (the input whose buffer each output is written into,
`reuse=%e.1`, a tuple with `None` when there are several outputs), `into` (the input
an assignment copies the output to: `into=%x`) and `ones`
(the inputs known to have length 1 along some axes: `ones={%m: (1,)}`).

Every attribute that changes what runs is printed, in braces or in the op's
own syntax: `value`/`index` as trailing operands (`const 1.0`, `getitem %t,
1`), `to` as a keyword (`cast %x to i64`), a call's `callee` as `@name`, a
`while`'s `n_invariants` as its bracketed operands. Left out are only:
attributes the types already say (`IMPLIED_ATTRS`: a `const`'s `type`, a
`tape_new`'s `element`, a fused node's `plan`, each shown when it differs),
and `primal` on a derived call, bookkeeping that names the graph
`ir(stage='grad')` prints next to the gradient (`BOOKKEEPING_ATTRS`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import Loc
from .core import REGION_ROLES, Graph, Module, Node, Value
from .kernels import fields_of, typed_attrs
from .types import ArrayType, TapeType, Type

OPERAND_ATTRS = ("value", "index")
"""Attributes printed as trailing operands: `const 1.0`, `getitem %t, 1`."""

KEYWORD_ATTRS = ("to",)
"""Attributes printed as a keyword and a value: `cast %x to i64`."""

HEADER_ATTRS = {"call": ("callee",), "while": ("n_invariants",)}
"""Attributes a structural op's own syntax shows: `call @f(...)`, `while [%n] (...)`."""


def _result_types(node: Node) -> list:
    return [v.type for v in node.outputs]


def _input_ndims(node: Node) -> tuple:
    return tuple(v.type.ndim if isinstance(v.type, ArrayType) else None for v in node.inputs)


IMPLIED_ATTRS = {
    "type": lambda node, t: _result_types(node) == [t],
    "element": lambda node, element: _result_types(node) == [TapeType(element)],
    "plan": lambda node, plan: node.op in ("fused", "rowwise")
    and tuple(plan) == _input_ndims(node),
}
"""Attributes left out when the types say them: `const 1.0 : f64` (not
`{type=f64}`), `tape_new : tape<f64>` (not `{element=f64}`), a fused or rowwise node's
`plan` (each input's ndim, None for a scalar: what its operands' types say)."""

BOOKKEEPING_ATTRS = ("primal", "derived")
"""Attributes with no effect on what runs, never printed: `primal` and `derived` on
a derived call (the graph it derives and how, for `ir(stage='grad')`'s side-by-side
view and for the reverse-mode rule of a gradient's call, ad/derive.py)."""

ATTR_ORDER = ("kind", "op", "ndim", "rows", "reduce", "axis", "axes", "keepdims", "dtype",
              "fill", "stages", "ones", "reuse", "into")
"""Attributes print in this order, then any other by name."""

GRAPH_ATTRS = ("callee", "custom_vjp")
"""Attributes naming a graph of the module, printed as `@name`."""

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


def format_node(node: Node, names: ValueNames, *, locations: bool = True) -> str:
    """One node (with its regions) as the dump of its graph shows it, `names` being that
    graph's (the CUDA source heads each kernel with its fused node)."""
    printer = _Printer(names)
    printer.node(node, 0)
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


def region_roles(node: Node) -> tuple[str, ...]:
    """The role of each region of a structural op, by position."""
    return REGION_ROLES[node.op]


def shown_attrs(node: Node) -> dict:
    """The attributes as printed: a fused or rowwise node's typed ones (kernels.py) field
    by field."""
    typed = typed_attrs(node)
    if typed is not None:
        return {**fields_of(typed), **{k: v for k, v in node.attrs.items() if k != node.op}}
    return node.attrs


def format_attrs(node: Node, names: ValueNames) -> str:
    """` {name=value, ...}`: the attributes the op's own syntax does not show, or ''."""
    attrs = shown_attrs(node)
    skip = set(OPERAND_ATTRS + KEYWORD_ATTRS + BOOKKEEPING_ATTRS + HEADER_ATTRS.get(node.op, ()))
    skip.update(name for name, implied in IMPLIED_ATTRS.items()
                if name in attrs and implied(node, attrs[name]))
    shown = [k for k in attrs if k not in skip]
    shown.sort(key=lambda k: (ATTR_ORDER.index(k), "") if k in ATTR_ORDER else (len(ATTR_ORDER), k))
    if not shown:
        return ""
    return " {" + ", ".join(f"{k}={_attr_value(node, k, attrs[k], names)}" for k in shown) + "}"


def _attr_value(node: Node, name: str, value, names: ValueNames) -> str:
    if name in GRAPH_ATTRS and isinstance(value, str):
        return "@" + value
    if node.op == "fused" and name == "reuse":  # per output: the index of the donor input
        donors = [names[node.inputs[j]] if isinstance(j, int) and 0 <= j < len(node.inputs)
                  else repr(j) for j in value]  # (an index out of range as itself)
        return donors[0] if len(donors) == 1 else "(" + ", ".join(donors) + ")"
    if node.op == "fused" and name == "into" and isinstance(value, int) \
            and 0 <= value < len(node.inputs):  # the input an assignment copies the output to
        return names[node.inputs[value]]
    if node.op == "fused" and name == "ones":  # per input: its axes of length 1
        known = [f"{names[v]}: {format_literal(tuple(axes))}"
                 for v, axes in zip(node.inputs, value) if axes]
        return "{" + ", ".join(known) + "}"
    return format_literal(value)


def format_op(node: Node, names: ValueNames, *, operands: bool = True) -> str:
    """A leaf op with its operands and attributes: `const 1.0`, `cast %x to i64`, `op %a {k=v}`.

    Attributes the types imply (`IMPLIED_ATTRS`) are not repeated. Without `operands`
    (DOT labels, whose edges show them) the value operands are left out.
    """
    shown = [names[v] for v in node.inputs] if operands else []
    shown += [format_literal(node.attrs[a]) for a in OPERAND_ATTRS if a in node.attrs]
    text = node.op + (" " + ", ".join(shown) if shown else "")
    text += "".join(f" {a} {format_literal(node.attrs[a])}" for a in KEYWORD_ATTRS
                    if a in node.attrs)
    return text + format_attrs(node, names)


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
            for role, region in zip(region_roles(node), node.regions):
                self.region(role, region, depth + 1)
            self.lines.append(Line(depth, "}" + types_suffix(node.outputs)))
            return
        if node.op == "call":
            text = f"call @{node.attrs.get('callee')}({self.refs(node.inputs)})"
            text += format_attrs(node, self.names)
        else:
            text = format_op(node, self.names)
        self.lines.append(Line(depth, results + text + types_suffix(node.outputs), node.loc))

    def structural_header(self, node: Node) -> str:
        """`if %c (%x, %y) {`, `while [%invariants] (%carried) {`, `fused (%x) {ndim=1} {`,
        `rowwise (%x, %0) {ndim=2, rows=1, stages=(...)} {`."""
        if node.op == "if":
            cond, captured = node.inputs[:1], node.inputs[1:]
            operands = f"{self.refs(cond)} ({self.refs(captured)})"
        elif node.op in ("fused", "rowwise"):
            operands = f"({self.refs(node.inputs)})"
        else:
            k = node.attrs.get("n_invariants", 0)
            operands = f"[{self.refs(node.inputs[:k])}] ({self.refs(node.inputs[k:])})"
        return f"{node.op} {operands}{format_attrs(node, self.names)} {{"

    def region(self, role: str, region: Graph, depth: int) -> None:
        self.lines.append(Line(depth, f"{role} ({self.declarations(region.params)}) {{",
                               region.loc))
        self.body(region, depth + 1)
        self.lines.append(Line(depth + 1, f"yield {self.refs(region.outputs)}".rstrip()))
        self.lines.append(Line(depth, "}"))
