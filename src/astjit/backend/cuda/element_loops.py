"""Element loops (`for i in range(start, stop): y[i] = ...`) as one CUDA kernel, one
thread per iteration, where the iterations are independent (issue 12).

The host program would otherwise run such a loop one element at a time, a device
round trip per `x[i]`. A `while` node is such a loop when:
- it counts: the body yields `i + 1` for its only carried value `i`, the cond is
  `i < stop` with `stop` loop-invariant (a `for i in range(start, stop)` with step 1,
  or the same hand-written `while`); a loop carrying anything else (`acc` of a prefix
  sum, `best` of a running max, a `break` flag) depends on its earlier iterations;
- its body (and the `if` regions in it) holds only scalar ops with a `CExpr` lowering
  (their `cuda_python` one where Python's semantics differ: a Python complex's abs, `/`
  and `**`), real or complex (complexes.h), and element reads and writes
  `x[..., i, ...]` indexed by the counter itself at one axis and by loop-invariant values
  (parameters, constants) at the others;
- an array it writes is accessed at one pattern of indices only (`x[i] = x[i] * s`, not
  `x[i, 0] = x[i, 1]`), so iteration `i` touches elements no other iteration does.
Loops around loops are not parallelised in this version (the outer loop stays on the
host; an inner loop that qualifies is a kernel launched once per outer iteration).

An op that raises with Python's semantics (a Python division, `math.sqrt`, abs of a Python
complex: scalar_functions.raise_check's condition) makes the loop *checked*: its kernel
takes `astjit_error` and `dry`, and is launched twice. The dry launch computes every
iteration and writes nothing, recording in `astjit_error` whether any check holds; if
one does, the host runs the loop (the CPU's writes up to the failing iteration, and its
exception); else the second launch writes. Without writes a dry iteration computes what
the host's would (no iteration reads what another writes), except where it reads an
element it wrote itself: such a checked loop stays on the host.

Arrays of the loop may be one array at run time (`f(x, x)`), and an index may be out of
bounds: loop_launch.py checks both for the whole range before the launch, and runs the
loop on the host (the interpreter's own step, the CPU's behaviour) where it must. The
loop's result, the final counter, is `max(start, stop)`, as the CPU leaves it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...ir.core import Graph, Node, Value
from ...ir.ops import OPS, CExpr, lowering_for
from ...ir.types import I64, ArrayType, ScalarType
from .csource import KERNEL_TYPES, Source, c_literal, c_type
from .scalar_functions import raise_check
from .scalars import c_expression, local_name, numpy_computes, python_lowering

THREADS = 256

COUNTER = "i"
"""An index that is the loop's counter, in an access pattern."""


@dataclass
class ElementLoop:
    """A parallel element loop: what its kernel takes and what the host checks."""

    node: Node
    stop: int
    """The invariant (of the node's inputs) that is the loop's stop."""
    used: dict[int, Any] = field(default_factory=dict)
    """Invariants the body uses -> their type (an ArrayType or a ScalarType)."""
    patterns: dict[int, set[tuple]] = field(default_factory=dict)
    """Array invariant -> its access patterns: per axis COUNTER, ("p", k) an invariant, or
    ("c", n) a constant."""
    written: set[int] = field(default_factory=set)
    body: list[str] = field(default_factory=list)
    """The C statements of one iteration (at depth 0)."""
    checked: bool = False
    """Whether an op of the body raises where a check holds (the dry launch first)."""
    rereads: bool = False
    """Whether the body reads an element after writing its array (no dry launch then)."""


class _Refused(Exception):
    """Why a loop stays on the host."""


def counted(node: Node) -> bool:
    """Whether `node` is a `while` whose first carried value counts up by one."""
    if node.op != "while":
        return False
    n, body = node.attrs["n_invariants"], node.regions[1]
    if len(body.params) <= n:
        return False
    inc = _producer(body, body.outputs[0])
    return (inc is not None and inc.op == "add" and inc.inputs[0] is body.params[n]
            and _const_value(body, inc.inputs[1]) == 1)


def element_loop(node: Node) -> ElementLoop | str | None:
    """The plan of `node`'s kernel; or why the element loop stays on the host; or None:
    not an element loop (no counted `while`, or no element access in it)."""
    if not counted(node) or not any(n.op in ("array_get", "array_set")
                                    for region in node.regions for n in region.walk()):
        return None
    n = node.attrs["n_invariants"]
    cond, body = node.regions
    carried = [v.name for v in node.outputs[1:]]
    if carried:
        if any(name.startswith("$") for name in carried):
            return "it may leave early (break or return)"
        return f"it carries {', '.join(carried)} from one iteration to the next"
    test = _producer(cond, cond.outputs[0])
    if test is None or test.op != "lt" or test.inputs[0] is not cond.params[n] \
            or test.inputs[1] not in cond.params[:n] or test.inputs[1].type != I64:
        return "its condition is not `i < stop` with a loop-invariant stop"
    plan = ElementLoop(node, cond.params.index(test.inputs[1]))
    env: dict[Value, tuple] = {body.params[n]: ("counter",)}
    for k, p in enumerate(body.params[:n]):
        env[p] = ("inv", k)
    src = Source()
    lowering = _Body(plan, src)
    try:
        lowering.region(body, env)
    except _Refused as why:
        return str(why)
    if not plan.written:
        return "it writes no array element"
    if plan.checked and plan.rereads:
        return "it may raise, and reads an element it wrote (a dry launch would read the old)"
    if plan.checked:
        lowering.guard_writes()
    plan.body = src.lines
    return plan


def host_note(node: Node, reason: str) -> str:
    """The dump's comment for an element loop left on the host."""
    where = f" at {os.path.basename(node.loc.filename)}:{node.loc.line}" if node.loc else ""
    return f"// host: the loop{where} runs on the host, one element at a time: {reason}"


def _producer(graph: Graph, v: Value) -> Node | None:
    return next((n for n in graph.nodes if v in n.outputs), None)


def _const_value(graph: Graph, v: Value):
    node = _producer(graph, v)
    return node.attrs["value"] if node is not None and node.op == "const" else None


def _line(node: Node) -> str:
    return f" at line {node.loc.line}" if node.loc else ""


class _Body:
    """Checks a body against the rules (module docstring) while writing its C."""

    def __init__(self, plan: ElementLoop, src: Source):
        self.plan, self.src = plan, src
        self.writes: list[int] = []
        """The lines of `src` that write an element: a checked loop's dry launch skips them."""

    def guard_writes(self) -> None:
        """Each element write `if (!dry)`, once the body is known to be checked."""
        for k in self.writes:
            line = self.src.lines[k]
            indent = len(line) - len(line.lstrip())
            self.src.lines[k] = f"{line[:indent]}if (!dry) {line[indent:]}"

    def region(self, graph: Graph, env: dict) -> list[str]:
        for node in graph.nodes:
            if node.op == "if":
                self.emit_if(node, env)
            elif node.regions:
                what = "a loop" if node.op == "while" else f"'{node.op}'"
                raise _Refused(f"it contains {what}{_line(node)} (loops are not parallelised "
                               "around another loop in this version)")
            elif node.op in ("array_get", "array_set"):
                self.access(node, env)
            else:
                self.leaf(node, env)
        return [self.scalar(v, env, None) for v in graph.outputs]

    def scalar(self, v: Value, env: dict, node: Node | None) -> str:
        """The C expression of scalar `v`."""
        entry = env[v]
        if entry[0] == "inv":
            t = self.plan.node.regions[1].params[entry[1]].type
            if not isinstance(t, ScalarType) or t not in KERNEL_TYPES:
                raise _Refused(f"it uses a value of type {t}{_line(node) if node else ''}")
            self.plan.used[entry[1]] = t
            return f"s{entry[1]}"
        if entry[0] == "array":
            raise _Refused(f"it uses an array as a value{_line(node) if node else ''}")
        return COUNTER if entry[0] == "counter" else entry[1]

    def leaf(self, node: Node, env: dict) -> None:
        if node.op not in OPS or len(node.outputs) != 1:
            raise _Refused(f"'{node.op}'{_line(node)} runs on the host")
        (out,) = node.outputs
        if not isinstance(out.type, ScalarType) or out.type not in KERNEL_TYPES:
            raise _Refused(f"'{node.op}'{_line(node)} makes a {out.type}")
        lowering = OPS[node.op].lowering("cuda")
        types = [v.type for v in node.inputs]
        template = (lowering_for(lowering, types[0] if types else out.type)
                    if isinstance(lowering, dict) else None)
        if not isinstance(template, CExpr):
            raise _Refused(f"'{node.op}'{_line(node)} has no GPU kernel lowering")
        if not numpy_computes(node) and python_lowering(node.op, node.attrs, types) is None:
            raise _Refused(f"'{node.op}'{_line(node)} of a Python complex has no GPU lowering "
                           "of CPython's algorithm")
        check = raise_check(node)
        if check is None:
            raise _Refused(f"'{node.op}'{_line(node)} may raise (Python's semantics), with "
                           "no check on the GPU")
        operands = [self.scalar(v, env, node) for v in node.inputs]
        name = local_name(out)
        expression = c_expression(node.op, node.attrs, operands, types, out.type, node.loc,
                                  python=True)
        after = "{r}" in check or check == "astjit_error[0]"
        if check and not after:
            self.fail_if(check.format(*operands))
        self.src.line(f"const {c_type(out.type)} {name} = {expression};")
        if after:
            self.fail_if(check.format(*operands, r=name))
        const = node.attrs.get("value") if node.op == "const" and out.type == I64 else None
        env[out] = ("const", name, const) if const is not None else ("value", name)

    def fail_if(self, condition: str) -> None:
        """Where `condition` holds, Python raises: record it and leave the iteration."""
        self.plan.checked = True
        self.src.line(f"if ({condition}) {{ astjit_error[0] = 1; continue; }}")

    def access(self, node: Node, env: dict) -> None:
        array, *rest = node.inputs
        entry = env[array]
        if entry[0] != "inv" or not isinstance(array.type, ArrayType) \
                or array.type.dtype not in KERNEL_TYPES:
            raise _Refused(f"the element access{_line(node)} is not of a loop-invariant array")
        k = entry[1]
        self.plan.used[k] = array.type
        indices = rest if node.op == "array_get" else rest[1:]
        pattern = tuple(self.index(env[v], node) for v in indices)
        if pattern.count(COUNTER) != 1:
            raise _Refused(f"the element access{_line(node)} is not indexed by the loop's "
                           "counter itself at one axis and loop-invariant values at the others")
        self.plan.patterns.setdefault(k, set()).add(pattern)
        terms = []
        for j, index in enumerate(pattern):
            c = COUNTER if index == COUNTER else f"s{index[1]}" if index[0] == "p" \
                else c_literal(index[1], I64)
            terms.append(f"({c} < 0 ? {c} + a{k}_n{j} : {c}) * a{k}_s{j}")
        element = f"a{k}[{' + '.join(terms)}]"
        if node.op == "array_get":
            self.plan.rereads |= k in self.plan.written
            (out,) = node.outputs
            if out.type != array.type.dtype:
                raise _Refused(f"the element read{_line(node)} is typed {out.type}")
            self.src.line(f"const {c_type(out.type)} {local_name(out)} = {element};")
            env[node.outputs[0]] = ("value", local_name(out))
            return
        if rest[0].type != array.type.dtype:
            raise _Refused(f"the element write{_line(node)} stores a {rest[0].type}")
        self.plan.written.add(k)
        if len(self.plan.patterns[k]) > 1:
            raise _Refused(f"{array.name or 'an array'} is written{_line(node)} and accessed "
                           "at other indices too")
        self.writes.append(len(self.src.lines))
        self.src.line(f"{element} = {self.scalar(rest[0], env, node)};")

    def index(self, entry: tuple, node: Node):
        if entry[0] == "counter":
            return COUNTER
        if entry[0] == "inv" and self.plan.node.regions[1].params[entry[1]].type == I64:
            self.plan.used[entry[1]] = I64
            return ("p", entry[1])
        if entry[0] == "const":
            return ("c", entry[2])
        raise _Refused(f"the element access{_line(node)} is indexed by a value computed in "
                       "the loop, not by its counter itself")

    def emit_if(self, node: Node, env: dict) -> None:
        for v in node.outputs:
            if not isinstance(v.type, ScalarType) or v.type not in KERNEL_TYPES:
                raise _Refused(f"the if{_line(node)} makes a {v.type}")
            self.src.line(f"{c_type(v.type)} {local_name(v)};")
        self.src.open(f"if ({self.scalar(node.inputs[0], env, node)})")
        for n, region in enumerate(node.regions):
            if n:
                self.src.depth -= 1
                self.src.line("} else {")
                self.src.depth += 1
            inner = dict(env)
            inner.update((p, env[v]) for p, v in zip(region.params, node.inputs[1:]))
            for v, value in zip(node.outputs, self.region(region, inner)):
                self.src.line(f"{local_name(v)} = {value};")
        self.src.close()
        for v in node.outputs:
            env[v] = ("value", local_name(v))


# ---- the kernel ---------------------------------------------------------------------

def parameters(plan: ElementLoop) -> list[str]:
    """Per used invariant (in order): an array's pointer `a<k>`, its lengths `a<k>_n<j>` and
    element strides `a<k>_s<j>`, or a scalar `s<k>`; then `start` and `stop`, and for a
    checked loop the error flag and `dry` (module docstring)."""
    params = []
    for k, t in sorted(plan.used.items()):
        if isinstance(t, ArrayType):
            params.append(f"{c_type(t.dtype)}* a{k}")
            params += [f"long long a{k}_n{j}" for j in range(t.ndim)]
            params += [f"long long a{k}_s{j}" for j in range(t.ndim)]
        else:
            params.append(f"{c_type(t)} s{k}")
    checks = ["int* astjit_error", "long long dry"] if plan.checked else []
    return params + ["long long start", "long long stop", *checks]


def emit_element_loop(src: Source, plan: ElementLoop, name: str) -> list[str]:
    """The loop's kernel into `src`: a grid-stride loop over the iterations; its names."""
    name += "_loop"
    src.open(f'extern "C" __global__ void {name}({", ".join(parameters(plan))})')
    src.open("for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
             "t < stop - start; t += (long long)gridDim.x * blockDim.x)")
    src.line(f"const long long {COUNTER} = start + t;")
    for line in plan.body:
        src.line(line)
    src.close()
    src.close()
    return [name]
