"""The IR verifier: checks every invariant `core.py` states, and the types once typed.

`verify_module` / `verify_graph` raise `IRVerificationError` naming the graph
(with the region path, e.g. ``@f/while.body``), the node's op and its source
location. What is checked:

- SSA: each Value is defined once in the Module (a parameter or a node output),
  used only after its definition and within the graph that defines it; a
  region sees only its own parameters (no free variables).
- Tapes: no value of a graph is used after `tape_free` released it, or the
  same tape under another name (`tape_push` returns the tape it was given).
- Shapes of the structural ops (``if``, ``while``, ``call``), handled by hand
  below; every other op is a leaf from `ops.OPS` with its declared arity, one
  output and no regions.
- A function graph has exactly one output.
- When typed (every value has a type): region parameters have the types of the
  node inputs they receive, region outputs the types of the node outputs, the
  conditions are ``bool``, calls agree with their callee's signature, and each
  leaf op's type rule accepts its operand types unchanged (typed IR has
  explicit casts) and gives its result type.

Array ownership (each owned array released or consumed exactly once) holds only
after the retain/release pass; `passes.ownership.check_array_ownership` checks it.
"""
from __future__ import annotations

from .core import REGION_ROLES, STRUCTURAL_OPS, Graph, Module, Node, Value
from .kernels import Kernel, RowGroup, kernel_of
from .ops import OPS, OpTypeError
from .ops.reductions import REDUCTIONS, result_dtype, result_type
from .types import BOOL, ArrayType, Type


class IRVerificationError(Exception):
    """The IR breaks an invariant; the message names the graph, the op and the location."""


def verify_module(module: Module, *, typed: bool | None = None) -> None:
    """Check every graph of `module`; raise `IRVerificationError` at the first violation.

    `typed`: True demands a fully typed module, False skips the type checks,
    None (the default) checks types when every value of the module has one.
    """
    if module.entry and module.entry not in module.graphs:
        raise IRVerificationError(f"entry graph @{module.entry} is not in the module")
    if typed is None:
        typed = all(is_typed(graph) for graph in module.graphs.values())
    definitions: dict[Value, str] = {}
    for graph in module.graphs.values():
        _GraphChecker(module, typed, definitions).check_function(graph)


def verify_graph(graph: Graph, module: Module, *, typed: bool | None = None) -> None:
    """Check one function graph of `module` (callees are looked up in `module`)."""
    if typed is None:
        typed = is_typed(graph)
    _GraphChecker(module, typed, {}).check_function(graph)


def is_typed(graph: Graph) -> bool:
    """Whether every value of `graph` (its regions included) has a type."""
    values = list(graph.params) + [v for n in graph.walk() for v in n.outputs]
    values += [p for n in graph.walk() for r in n.regions for p in r.params]
    return all(v.type is not None for v in values)


def _names(values: list[Value]) -> str:
    return ", ".join(map(repr, values))


def _types(values: list[Value]) -> list[Type | None]:
    return [v.type for v in values]


class _ReleasedTapes:
    """The tapes `tape_free` has freed so far in one graph, each known by its first name."""

    ALIASES = {"tape_push": 0, "tape_clear": 0}
    """Ops whose output is the tape they got as input k."""
    RELEASES = frozenset({"tape_free"})

    def __init__(self) -> None:
        self.first_name: dict[Value, Value] = {}
        self.freed: set[Value] = set()

    def has(self, value: Value) -> bool:
        return bool(self.freed) and self.first_name.get(value, value) in self.freed

    def record(self, node: Node) -> None:
        if node.op in self.ALIASES and node.inputs:
            tape = node.inputs[self.ALIASES[node.op]]
            self.first_name[node.outputs[0]] = self.first_name.get(tape, tape)
        if node.op in self.RELEASES and node.inputs:
            self.freed.add(self.first_name.get(node.inputs[0], node.inputs[0]))


class _GraphChecker:
    """Walks one function graph and its regions, keeping the set of values in scope."""

    def __init__(self, module: Module, typed: bool, definitions: dict[Value, str]):
        self.module = module
        self.typed = typed
        self.definitions = definitions
        """Every value defined so far, with the path of the graph that defines it."""

    def check_function(self, graph: Graph) -> None:
        if len(graph.outputs) != 1:
            raise IRVerificationError(f"in @{graph.name}: a function graph has exactly one "
                                      f"output, got {len(graph.outputs)}")
        self.check_body(graph, f"@{graph.name}")

    # ---- SSA and scopes -------------------------------------------------------------

    def check_body(self, graph: Graph, path: str) -> None:
        """Check `graph`'s nodes in order; its scope starts with its own parameters only."""
        scope: set[Value] = set()
        released = _ReleasedTapes()
        self.define(graph.params, scope, path, None)
        for node in graph.nodes:
            for i, value in enumerate(node.inputs):
                self.check_in_scope(value, scope, path, node, f"input {i}")
                self.check_not_released(value, released, path, node, f"input {i}")
            self.check_node(node, path)
            self.define(node.outputs, scope, path, node)
            released.record(node)
        for i, value in enumerate(graph.outputs):
            self.check_in_scope(value, scope, path, None, f"output {i}")
            self.check_not_released(value, released, path, None, f"output {i}")

    def define(self, values: list[Value], scope: set[Value], path: str, node: Node | None):
        for value in values:
            if self.typed and value.type is None:
                self.fail(path, node, f"{value!r} has no type in a typed module")
            if value in self.definitions:
                self.fail(path, node, f"{value!r} is defined twice "
                                      f"(first in {self.definitions[value]})")
            self.definitions[value] = path
            scope.add(value)

    def check_in_scope(self, value: Value, scope: set[Value], path: str, node: Node | None,
                       what: str) -> None:
        if value in scope:
            return
        if value in self.definitions:
            self.fail(path, node, f"{what} {value!r} is a free variable: defined in "
                                  f"{self.definitions[value]}, not in this graph (values enter "
                                  "and leave regions only as node inputs and region outputs)")
        self.fail(path, node, f"{what} {value!r} is used before its definition")

    def check_not_released(self, value: Value, released: _ReleasedTapes, path: str,
                           node: Node | None, what: str) -> None:
        if released.has(value):
            self.fail(path, node, f"{what} {value!r} is a tape used after tape_free freed it")

    # ---- node shapes and types ---------------------------------------------------------

    def check_node(self, node: Node, path: str) -> None:
        if node.op == "if":
            self.check_if(node, path)
        elif node.op == "while":
            self.check_while(node, path)
        elif node.op == "call":
            self.check_call(node, path)
        elif node.op == "fused":
            self.check_fused(node, path)
        elif node.op == "rowwise":
            self.check_rowwise(node, path)
        else:
            self.check_leaf(node, path)

    def check_if(self, node: Node, path: str) -> None:
        if not node.inputs:
            self.fail(path, node, "'if' needs a condition input")
        captured = node.inputs[1:]
        self.check_regions(node, path, REGION_ROLES["if"], captured)
        for region in node.regions:
            self.expect_count(path, node, f"'{region.name}' outputs", region.outputs,
                              len(node.outputs))
        if self.typed:
            self.expect_types(path, node, "condition", [node.inputs[0]], [BOOL])
            for region in node.regions:
                self.expect_types(path, node, f"'{region.name}' outputs", region.outputs,
                                  _types(node.outputs))

    def check_while(self, node: Node, path: str) -> None:
        n_invariants = node.attrs.get("n_invariants")
        if not isinstance(n_invariants, int) or not 0 <= n_invariants <= len(node.inputs):
            self.fail(path, node, f"'while' needs attrs['n_invariants'] in 0..{len(node.inputs)}, "
                                  f"got {n_invariants!r}")
        carried = node.inputs[n_invariants:]
        self.check_regions(node, path, REGION_ROLES["while"], node.inputs)
        cond, body = node.regions
        self.expect_count(path, node, "'cond' outputs", cond.outputs, 1)
        self.expect_count(path, node, "'body' outputs", body.outputs, len(carried))
        self.expect_count(path, node, "outputs", node.outputs, len(carried))
        if self.typed:
            self.expect_types(path, node, "'cond' output", cond.outputs, [BOOL])
            self.expect_types(path, node, "'body' outputs", body.outputs, _types(carried))
            self.expect_types(path, node, "outputs", node.outputs, _types(carried))

    def check_regions(self, node: Node, path: str, roles: tuple[str, str],
                      inputs: list[Value]) -> None:
        """Two regions, each taking `inputs` as parameters, each checked in its own scope."""
        self.expect_count(path, node, "regions", node.regions, len(roles))
        for role, region in zip(roles, node.regions):
            self.expect_count(path, node, f"'{role}' parameters", region.params, len(inputs))
            if self.typed:
                self.expect_types(path, node, f"'{role}' parameters", region.params,
                                  _types(inputs))
            self.check_body(region, f"{path}/{node.op}.{role}")

    def check_call(self, node: Node, path: str) -> None:
        callee = self.module.graphs.get(node.attrs.get("callee"))
        if callee is None:
            self.fail(path, node, f"callee {node.attrs.get('callee')!r} is not in the module")
        self.expect_count(path, node, "regions", node.regions, 0)
        self.expect_count(path, node, "arguments", node.inputs, len(callee.params))
        self.expect_count(path, node, "outputs", node.outputs, 1)
        if self.typed:
            self.expect_types(path, node, "arguments", node.inputs, _types(callee.params))
            self.expect_types(path, node, "output", node.outputs, _types(callee.outputs))

    def check_fused(self, node: Node, path: str) -> None:
        """The shape core.py gives `fused`: a kernel of scalar leaf ops over the inputs' elements."""
        spec = node.attrs.get("fused")
        if not isinstance(spec, Kernel):
            self.fail(path, node, f"'fused' needs attrs['fused'], a Kernel, got {spec!r}")
        self.expect_count(path, node, "regions", node.regions, 1)
        (kernel,) = node.regions
        self.expect_count(path, node, "'kernel' parameters", kernel.params, len(node.inputs))
        self.expect_count(path, node, "'kernel' outputs", kernel.outputs, len(node.outputs))
        if not node.outputs:
            self.fail(path, node, "a fused node has at least one output")
        ndim, plan = spec.ndim, spec.plan
        if not isinstance(ndim, int) or ndim < 0:
            self.fail(path, node, f"'fused' needs a Kernel with ndim >= 0, got {ndim!r}")
        for inner in kernel.nodes:
            if inner.regions or inner.op in STRUCTURAL_OPS:
                self.fail(path, node, f"a fused kernel holds scalar leaf ops only, got {inner.op!r}")
        if not self.typed:
            self.check_body(kernel, f"{path}/fused.kernel")
            return
        if plan != tuple(v.type.ndim if isinstance(v.type, ArrayType) else None
                         for v in node.inputs):
            self.fail(path, node, f"the Kernel's plan {plan!r} does not match the inputs' ndims")
        if any(p is not None and p > ndim for p in plan):
            self.fail(path, node, f"an input has more than the space's {ndim} dimensions")
        elements = [v.type.dtype if isinstance(v.type, ArrayType) else v.type for v in node.inputs]
        self.expect_types(path, node, "'kernel' parameters", kernel.params, elements)
        self.check_body(kernel, f"{path}/fused.kernel")
        for inner in kernel.walk():
            for value in inner.outputs:
                if isinstance(value.type, ArrayType):
                    self.fail(path, node, f"kernel value {value!r} is an array: a kernel computes "
                                          "one element")
        if spec.reduce is not None:
            self.check_reduction(node, spec, path)
            return
        self.expect_types(path, node, "outputs", node.outputs,
                          [ArrayType(v.type, ndim) for v in kernel.outputs])

    def check_rowwise(self, node: Node, path: str) -> None:
        """A row group (passes/rowfuse.py): a region of plain `fused` nodes over the same
        ndim, whose reductions run over the trailing axes after the `rows` outer ones, and
        `sum_to_like` nodes; one role in its `stages` per member."""
        group = node.attrs.get("rowwise")
        if not isinstance(group, RowGroup):
            self.fail(path, node, f"'rowwise' needs attrs['rowwise'], a RowGroup, got {group!r}")
        self.expect_count(path, node, "regions", node.regions, 1)
        (body,) = node.regions
        self.expect_count(path, node, "'rows' parameters", body.params, len(node.inputs))
        self.expect_count(path, node, "'rows' outputs", body.outputs, len(node.outputs))
        ndim, rows = group.ndim, group.rows
        if not isinstance(ndim, int) or not isinstance(rows, int) or not 1 <= rows < ndim:
            self.fail(path, node, f"a row group needs 1 <= rows < ndim, got {rows!r}, {ndim!r}")
        inner = tuple(range(rows, ndim))
        members = [m for m in body.nodes if m.op not in ("array_retain", "array_release")]
        if len(group.stages) != len(members):
            self.fail(path, node, "a row group's stages need one role per member")
        for member in members:
            if member.op == "sum_to_like":
                continue
            spec = kernel_of(member)
            if spec is None or spec.ndim != ndim:
                self.fail(path, node, f"a row group holds fused nodes of ndim {ndim}, "
                                      f"got {member.op!r}")
            if spec.reduce is not None and spec.reduce.axes != inner:
                self.fail(path, node, f"a row group's reductions run over axes {inner}, got "
                                      f"{spec.reduce.axes!r}")
        if self.typed:
            self.expect_types(path, node, "'rows' parameters", body.params, _types(node.inputs))
            self.expect_types(path, node, "'rows' outputs", body.outputs, _types(node.outputs))
        self.check_body(body, f"{path}/rowwise.rows")

    def check_reduction(self, node: Node, spec: Kernel, path: str) -> None:
        """A `fused` node with a reduction: the last output reduces the kernel's last one."""
        kind, axes, ndim = spec.reduce.kind, spec.reduce.axes, spec.ndim
        if kind not in REDUCTIONS or not isinstance(axes, tuple) \
                or list(axes) != sorted(set(axes)) or any(not 0 <= a < ndim for a in axes):
            self.fail(path, node, f"bad reduction attrs: reduce={kind!r}, axes={axes!r}")
        *stored, element = [v.type for v in node.regions[0].outputs]
        given = result_dtype(kind, element) != element  # np.sum(k, dtype=np.int8): its own
        if given and kind not in ("sum", "prod"):
            self.fail(path, node, f"the kernel of a {kind} yields {element}, not its accumulator")
        self.expect_types(path, node, "outputs", node.outputs,
                          [*(ArrayType(t, ndim) for t in stored),
                           result_type(kind, element, ndim, axes, spec.reduce.keepdims, given)])

    def check_leaf(self, node: Node, path: str) -> None:
        opdef = OPS.get(node.op)
        if opdef is None:
            self.fail(path, node, f"unknown op {node.op!r}")
        if opdef.arity != -1:
            self.expect_count(path, node, "inputs", node.inputs, opdef.arity)
        self.expect_count(path, node, "outputs", node.outputs, 1)
        self.expect_count(path, node, "regions", node.regions, 0)
        if not self.typed:
            return
        try:
            operand_types, result_type = opdef.rule(_types(node.inputs), node.attrs)
        except OpTypeError as error:
            self.fail(path, node, f"the type rule rejects the inputs: {error}")
        except KeyError as error:
            self.fail(path, node, f"missing attribute {error}")
        self.expect_types(path, node, "inputs (typed IR casts explicitly)", node.inputs,
                          operand_types)
        self.expect_types(path, node, "output", node.outputs, [result_type])

    # ---- reporting ------------------------------------------------------------------------

    def expect_count(self, path: str, node: Node, what: str, items: list, count: int) -> None:
        if len(items) != count:
            self.fail(path, node, f"expected {count} {what}, got {len(items)}")

    def expect_types(self, path: str, node: Node, what: str, values: list[Value],
                     expected: list[Type | None]) -> None:
        actual = _types(values)
        if actual != list(expected):
            shown = ", ".join(map(str, expected))
            self.fail(path, node, f"{what} {_names(values)} should have types ({shown})")

    @staticmethod
    def fail(path: str, node: Node | None, message: str):
        where = f"in {path}"
        if node is not None:
            where += f", node '{node.op}'"
            if node.loc is not None:
                where += f" at {node.loc}"
        raise IRVerificationError(f"{where}: {message}")
