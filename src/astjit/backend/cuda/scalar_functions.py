"""A whole optimized scalar module as `__device__` C functions: `vectorize`'s GPU code.

A kernel region (scalars.py) is straight-line; a vectorized function has structured
control flow (`if`, `while`) and calls, so it becomes C functions with mutable locals for
a loop's carried values. Ops compute with their `CExpr` templates (NumPy's semantics;
their `cuda_python` ones where Python's differ: a Python complex's abs, `/` and `**`);
where Python's would raise instead (a division by zero, `math.sqrt(-1.0)`, `int(nan)`),
a check before or after the op sets `astjit_error[0]` and returns at once, so that the
host can run the call again on the CPU, which raises Python's exception. A raising op
with no such check is refused, and so is recursion (a GPU thread's stack is small).
"""
from __future__ import annotations

from ...errors import CompileError
from ...ir.core import Graph, Module, Node, Value
from ...ir.ops import OPS, kind
from ...ir.types import ScalarType
from .csource import Source, c_type
from .scalars import c_expression, local_name, numpy_computes, python_lowering

_ZERO_DIVISOR = "({1} == 0)"
_PYTHON_COMPLEX_CHECKS = {"truediv": "astjit_cis_zero({1})",
                          "abs": "(!astjit_is_finite({r}) && astjit_cisfinite({0}))",
                          "pow": "astjit_error[0]"}
"""Where a Python complex's `/` (ZeroDivisionError) and abs (OverflowError) raise, and `**`
records its own ZeroDivisionError and OverflowError (complexes.h's astjit_py_cdiv,
astjit_py_cabs, astjit_py_cpow)."""
_CAST_TO_INT = "!({0} >= -9.2233720368547758e18 && {0} < 9.2233720368547758e18)"
NEVER_RAISE_ON_FLOATS = frozenset({"fabs", "copysign", "atan2", "hypot"})


def raise_check(node: Node) -> str | None:
    """A C condition over the operands `{0}`.. and the result `{r}` that holds where
    Python's op raises (or may: the CPU decides); "" where it never does; None where no
    check is known (the op is then refused)."""
    op = node.op
    traits = OPS[op].traits
    types = [v.type for v in node.inputs]
    python_complex = not node.attrs.get("numpy", False) and bool(types) and \
        getattr(types[0], "is_complex", False)
    if python_complex and op in _PYTHON_COMPLEX_CHECKS:
        return _PYTHON_COMPLEX_CHECKS[op]
    if "raises" not in traits:
        return ""
    if op == "pow" and types and kind(types[0]) == "i":
        return "astjit_error[0]"  # astjit_pow_int records its own error (prelude.py)
    if node.attrs.get("numpy", False):
        return ""  # NumPy's semantics (ops/strong.py), which the CExpr templates compute
    if op in ("truediv", "floordiv", "mod"):
        return _ZERO_DIVISOR
    if op == "cast":
        source, result = types[0], node.outputs[0].type
        return _CAST_TO_INT if source.is_float and result.is_int else ""
    if "math" in traits or op == "pow":
        if op in NEVER_RAISE_ON_FLOATS:
            return ""
        nan_in = " || ".join(f"astjit_is_nan({{{i}}})" for i in range(len(types)))
        finite_in = " && ".join(f"astjit_is_finite({{{i}}})" for i in range(len(types)))
        return f"((astjit_is_nan({{r}}) && !({nan_in})) || (!astjit_is_finite({{r}}) && {finite_in}))"
    return None


def function_name(graph: Graph, module: Module) -> str:
    return f"astjit_fn{list(module.graphs).index(graph.name)}"


def emit_functions(src: Source, module: Module) -> str:
    """Device functions for the module's entry graph and every graph it calls (callees
    first); the entry's function name. Each takes its scalars, then `int* astjit_error`."""
    order = _call_order(module)
    for graph in order:
        FunctionEmitter(src, module, graph).emit()
    return function_name(module.entry_graph, module)


def _call_order(module: Module) -> list[Graph]:
    """The graphs reachable from the entry, each after its callees; recursion refused."""
    done: list[Graph] = []
    active: list[str] = []

    def visit(name: str, loc) -> None:
        if name in active:
            raise CompileError(f"vectorize on a GPU: '{name}' is recursive; recursion is not "
                               "supported in a GPU-vectorized function", loc)
        graph = module.graphs[name]
        if graph in done:
            return
        active.append(name)
        for node in graph.walk():
            if node.op == "call":
                visit(node.attrs["callee"], node.loc)
        active.pop()
        done.append(graph)

    visit(module.entry, module.entry_graph.loc)
    return done


class FunctionEmitter:
    """One graph as one `__device__` function."""

    def __init__(self, src: Source, module: Module, graph: Graph):
        self.src, self.module, self.graph = src, module, graph
        (result,) = graph.outputs
        self.result = _scalar(result, graph.loc)

    def emit(self) -> None:
        params = [f"{c_type(_scalar(p, self.graph.loc))} {local_name(p)}" for p in self.graph.params]
        params.append("int* astjit_error")
        self.src.line()
        self.src.open(f"__device__ {c_type(self.result)} "
                      f"{function_name(self.graph, self.module)}({', '.join(params)})")
        names = {p: local_name(p) for p in self.graph.params}
        (out,) = self.region(self.graph, names)
        self.src.line(f"return {out};")
        self.src.close()

    def fail(self) -> str:
        return "{ astjit_error[0] = 1; return {}; }"

    def region(self, graph: Graph, names: dict[Value, str]) -> list[str]:
        """Statements of `graph`'s nodes (its params already named in `names`); the C
        names of its outputs."""
        for node in graph.nodes:
            if node.op == "if":
                self.emit_if(node, names)
            elif node.op == "while":
                self.emit_while(node, names)
            elif node.op == "call":
                self.emit_call(node, names)
            elif node.regions:
                raise CompileError(f"'{node.op}' is not supported in a GPU-vectorized function",
                                   node.loc)
            else:
                self.emit_leaf(node, names)
        return [names[v] for v in graph.outputs]

    def emit_leaf(self, node: Node, names: dict[Value, str]) -> None:
        (out,) = node.outputs
        t = _scalar(out, node.loc)
        operands = [names[v] for v in node.inputs]
        name = local_name(out)
        if node.op == "undef":  # a value no path reads (a return value before the return)
            self.src.line(f"const {c_type(t)} {name} = {{}};")
            names[out] = name
            return
        types = [v.type for v in node.inputs]
        if not numpy_computes(node) and python_lowering(node.op, node.attrs, types) is None:
            raise CompileError(f"'{node.op}' of a Python complex (CPython's algorithm) has no "
                               "GPU lowering; use target='cpu'", node.loc)
        check = raise_check(node)
        if check is None:
            raise CompileError(f"'{node.op}' raises in Python; not supported in a "
                               "GPU-vectorized function yet", node.loc)
        expression = c_expression(node.op, node.attrs, operands, types, t, node.loc,
                                  "in a GPU-vectorized function", python=True)
        after = check and "{r}" in check or check == "astjit_error[0]"
        if check and not after:
            self.src.line(f"if ({check.format(*operands)}) {self.fail()}")
        self.src.line(f"const {c_type(t)} {name} = {expression};")
        if after:
            self.src.line(f"if ({check.format(*operands, r=name)}) {self.fail()}")
        names[out] = name

    def emit_call(self, node: Node, names: dict[Value, str]) -> None:
        (out,) = node.outputs
        t = _scalar(out, node.loc)
        callee = function_name(self.module.graphs[node.attrs["callee"]], self.module)
        args = [names[v] for v in node.inputs] + ["astjit_error"]
        name = local_name(out)
        self.src.line(f"const {c_type(t)} {name} = {callee}({', '.join(args)});")
        self.src.line(f"if (astjit_error[0]) {self.fail()}")
        names[out] = name

    def declare(self, values: list[Value], loc) -> list[str]:
        """Mutable locals for `values` (a node's outputs, assigned in its regions)."""
        declared = []
        for v in values:
            self.src.line(f"{c_type(_scalar(v, loc))} {local_name(v)};")
            declared.append(local_name(v))
        return declared

    def assign(self, targets: list[str], values: list[str], types: list[ScalarType]) -> None:
        """`targets = values` all at once (a value may be a target another assignment reads)."""
        temps = []
        for value, t in zip(values, types):
            temp = self.src.fresh("t")
            self.src.line(f"const {c_type(t)} {temp} = {value};")
            temps.append(temp)
        for target, temp in zip(targets, temps):
            self.src.line(f"{target} = {temp};")

    def emit_if(self, node: Node, names: dict[Value, str]) -> None:
        """`if`: inputs are the condition and the captured values both regions take."""
        outs = self.declare(node.outputs, node.loc)
        cond, captured = names[node.inputs[0]], [names[v] for v in node.inputs[1:]]
        types = [v.type for v in node.outputs]
        for i, region in enumerate(node.regions):
            if i == 0:
                self.src.open(f"if ({cond})")
            else:
                self.src.depth -= 1
                self.src.line("} else {")
                self.src.depth += 1
            inner = dict(names)
            inner.update(zip(region.params, captured))
            self.assign(outs, self.region(region, inner), types)
        self.src.close()
        names.update(zip(node.outputs, outs))

    def emit_while(self, node: Node, names: dict[Value, str]) -> None:
        """`while`: the cond and body regions take the invariants, then the carried values;
        the body yields the next carried values, which are the node's outputs at the end."""
        n = node.attrs["n_invariants"]
        invariants = [names[v] for v in node.inputs[:n]]
        carried = self.declare(node.outputs, node.loc)
        types = [v.type for v in node.outputs]
        self.assign(carried, [names[v] for v in node.inputs[n:]], types)
        cond_region, body_region = node.regions
        self.src.open("while (true)")
        inner = dict(names)
        inner.update(zip(cond_region.params, invariants + carried))
        (cond,) = self.region(cond_region, inner)
        self.src.line(f"if (!({cond})) break;")
        inner = dict(names)
        inner.update(zip(body_region.params, invariants + carried))
        self.assign(carried, self.region(body_region, inner), types)
        self.src.close()
        names.update(zip(node.outputs, carried))


def _scalar(v: Value, loc) -> ScalarType:
    if not isinstance(v.type, ScalarType):
        raise CompileError(f"a value of type {v.type} cannot be computed in a GPU-vectorized "
                           "function (only numbers and bools)", loc)
    return v.type
