"""The IR core tools on hand-built graphs: interpreter, verifier, printer and DOT export."""
import re
import shutil
import subprocess
import time

import numpy as np
import pytest

from astjit.errors import Loc
from astjit.ir.core import Graph, Module, Value
from astjit.ir.dot import format_dot
from astjit.ir.interp import interpret
from astjit.ir.printer import format_graph, format_module
from astjit.ir.types import BOOL, F32, F64, I64, TupleType
from astjit.ir.verify import IRVerificationError, verify_graph, verify_module

# ---- building graphs by hand ------------------------------------------------------

def at(line, filename="loops.py"):
    return Loc(filename, line)


def op(graph, name, inputs, t=None, var="", loc=None, **attrs):
    """Append a one-output node of type `t` and return its output value."""
    node = graph.add(name, inputs, attrs=attrs, names=[var], types=[t], loc=loc)
    return node.outputs[0]


def const(graph, value, t=None, var="", loc=None):
    attrs = {"value": value, "type": t} if t else {"value": value}
    return op(graph, "const", [], t, var, loc, **attrs)


def params(*specs):
    """Values from ('name', type) pairs."""
    return [Value(name, t) for name, t in specs]


def module_of(*graphs):
    return Module({g.name: g for g in graphs}, graphs[0].name)


def scale_module(t=True):
    """scale(x: f64, n: i64) = x * float(n) + 1.0, straight-line."""
    f, i = (F64, I64) if t else (None, None)
    g = Graph("scale", params(("x", f), ("n", i)))
    x, n = g.params
    nf = op(g, "cast", [n], f, "n", to=F64)
    s = op(g, "mul", [x, nf], f, "s")
    s = op(g, "add", [s, const(g, 1.0, f)], f, "s")
    g.outputs = [s]
    return module_of(g)


def sum_to_module(typed=True):
    """sum_to(n): s = 0; i = 0; while i < n: s += i; i += 1; return s."""
    t = I64 if typed else None
    g = Graph("sum_to", params(("n", t)), loc=at(1))
    s0 = const(g, 0, t, "s", loc=at(2))
    i0 = const(g, 0, t, "i", loc=at(3))
    cond = Graph("cond", params(("n", t), ("s", t), ("i", t)))
    n, _, i = cond.params
    cond.outputs = [op(cond, "lt", [i, n], BOOL if typed else None, loc=at(4))]
    body = Graph("body", params(("n", t), ("s", t), ("i", t)))
    _, s, i = body.params
    s = op(body, "add", [s, i], t, "s", loc=at(5))
    i = op(body, "add", [i, const(body, 1, t, loc=at(6))], t, "i", loc=at(6))
    body.outputs = [s, i]
    loop = g.add("while", [g.params[0], s0, i0], 2, attrs={"n_invariants": 1},
                 regions=[cond, body], names=["s", "i"], types=[t, t], loc=at(4))
    g.outputs = [loop.outputs[0]]
    return module_of(g)


def fib_module():
    """fib(n) = n if n < 2 else fib(n - 1) + fib(n - 2), typed i64."""
    g = Graph("fib", params(("n", I64)), loc=at(1, "fib.py"))
    n = g.params[0]
    small = op(g, "lt", [n, const(g, 2, I64, loc=at(2, "fib.py"))], BOOL, loc=at(2, "fib.py"))
    then = Graph("then", params(("n", I64)))
    then.outputs = [then.params[0]]
    other = Graph("else", params(("n", I64)))
    m = other.params[0]
    a = op(other, "call", [op(other, "sub", [m, const(other, 1, I64)], I64)], I64, "a",
           loc=at(4, "fib.py"), callee="fib")
    b = op(other, "call", [op(other, "sub", [m, const(other, 2, I64)], I64)], I64, "b",
           loc=at(4, "fib.py"), callee="fib")
    other.outputs = [op(other, "add", [a, b], I64, loc=at(4, "fib.py"))]
    branch = g.add("if", [small, n], attrs={}, regions=[then, other], names=["r"],
                   types=[I64], loc=at(2, "fib.py"))
    g.outputs = [branch.outputs[0]]
    return module_of(g)


def swap_module():
    """swap(x: f64, y: i64) -> (y, x) through a tuple and getitem."""
    g = Graph("swap", params(("x", F64), ("y", I64)))
    x, y = g.params
    pair = op(g, "tuple", [x, y], TupleType((F64, I64)), "t")
    first = op(g, "getitem", [pair], F64, index=0)
    second = op(g, "getitem", [pair], I64, index=1)
    g.outputs = [op(g, "tuple", [second, first], TupleType((I64, F64)))]
    return module_of(g)


def binary_module(name, t):
    """f(a, b) = a <name> b, all values of type t."""
    g = Graph("f", params(("a", t), ("b", t)))
    g.outputs = [op(g, name, list(g.params), t)]
    return module_of(g)


# ---- the interpreter ----------------------------------------------------------------

@pytest.mark.parametrize("typed", [True, False])
def test_straight_line(typed):
    assert interpret(scale_module(typed), [1.5, 2]) == 4.0


@pytest.mark.parametrize("typed", [True, False])
def test_while_loop_sums(typed):
    assert interpret(sum_to_module(typed), [10]) == 45
    assert interpret(sum_to_module(typed), [0]) == 0


def test_recursive_call_is_fast():
    module = fib_module()
    assert [interpret(module, [n]) for n in range(8)] == [0, 1, 1, 2, 3, 5, 8, 13]
    start = time.perf_counter()
    assert interpret(module, [20], "fib") == 6765
    assert time.perf_counter() - start < 20.0  # not a Python-level recursion per IR op


def test_long_loop_does_not_recurse():
    assert interpret(sum_to_module(), [100_000]) == 100_000 * 99_999 // 2


def test_tuples():
    assert interpret(swap_module(), [1.5, 7]) == (7, 1.5)


def test_i64_wraps_like_compiled_code():
    big = 2**63 - 1
    assert interpret(binary_module("add", I64), [big, 1]) == -2**63
    assert interpret(binary_module("mul", I64), [2**62, 4]) == 0
    assert interpret(binary_module("add", None), [big, 1]) == 2**63  # untyped: Python ints


def test_results_take_their_types_representation():
    g = Graph("f", params(("x", I64)))
    g.outputs = [op(g, "tuple", [g.params[0], const(g, 0.1, F32), const(g, 1, F64)],
                    TupleType((I64, F32, F64)))]
    x, tenth, one = interpret(module_of(g), [3])
    assert (x, type(one)) == (3, float)
    assert type(tenth) is np.float32 and float(tenth) != 0.1 and abs(float(tenth) - 0.1) < 1e-8


def test_python_errors_propagate():
    with pytest.raises(ZeroDivisionError):
        interpret(binary_module("floordiv", I64), [1, 0])
    with pytest.raises(ZeroDivisionError):
        interpret(binary_module("truediv", F64), [1.0, 0.0])


# ---- the verifier: good graphs ---------------------------------------------------------

@pytest.mark.parametrize("build", [scale_module, sum_to_module, fib_module, swap_module])
def test_verifier_accepts_typed_graphs(build):
    module = build()
    verify_module(module, typed=True)
    verify_graph(module.entry_graph, module)


@pytest.mark.parametrize("build", [scale_module, sum_to_module])
def test_verifier_accepts_untyped_graphs(build):
    verify_module(build(False))


# ---- the verifier: each kind of bad graph ------------------------------------------------

def rejects(module, *fragments, typed=None):
    with pytest.raises(IRVerificationError) as info:
        verify_module(module, typed=typed)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_free_variable_in_region():
    module = fib_module()
    g = module.entry_graph
    then = g.nodes[-1].regions[0]
    then.outputs = [g.params[0]]  # the function's %n, not the region's parameter
    rejects(module, "@fib/if.then", "free variable")


def test_use_before_definition():
    module = scale_module()
    nodes = module.entry_graph.nodes
    nodes[0], nodes[1] = nodes[1], nodes[0]
    rejects(module, "@scale", "'mul'", "before its definition")


def test_double_definition():
    module = scale_module()
    g = module.entry_graph
    g.nodes.append(g.nodes[1])
    rejects(module, "defined twice")


def test_value_shared_between_graphs():
    module = scale_module()
    other = Graph("other", [module.entry_graph.params[0]])
    other.outputs = [other.params[0]]
    module.graphs["other"] = other
    rejects(module, "defined twice", "@scale")


def test_wrong_region_parameter_count():
    module = sum_to_module()
    body = module.entry_graph.nodes[-1].regions[1]
    body.params.pop()
    rejects(module, "'while'", "loops.py:4", "'body' parameters")


def test_wrong_region_output_count():
    module = fib_module()
    other = module.entry_graph.nodes[-1].regions[1]
    other.outputs.append(other.params[0])
    rejects(module, "'if'", "'else' outputs")


def test_if_condition_must_be_bool():
    module = fib_module()
    branch = module.entry_graph.nodes[-1]
    branch.inputs[0] = module.entry_graph.params[0]
    rejects(module, "'if'", "condition")


def test_while_without_n_invariants():
    module = sum_to_module()
    del module.entry_graph.nodes[-1].attrs["n_invariants"]
    rejects(module, "n_invariants")


def test_typed_operands_need_explicit_casts():
    module = scale_module()
    g = module.entry_graph
    g.nodes[1].inputs[1] = g.params[1]  # x * n with n: i64
    rejects(module, "'mul'", "should have types (f64, f64)")


def test_while_condition_must_be_bool():
    module = sum_to_module()
    cond = module.entry_graph.nodes[-1].regions[0]
    cond.outputs[0].type = I64
    rejects(module, "'lt'")  # the leaf's rule says bool
    cond.nodes[-1].op = "add"
    rejects(module, "'cond' output")


def test_region_parameter_types_match_inputs():
    module = fib_module()
    module.entry_graph.nodes[-1].regions[0].params[0].type = F64
    rejects(module, "'then' parameters")


def test_call_checks():
    module = fib_module()
    call = next(n for n in module.entry_graph.walk() if n.op == "call")
    call.attrs["callee"] = "fob"
    rejects(module, "callee 'fob'", "fib.py:4")
    call.attrs["callee"] = "fib"
    call.outputs[0].type = F64
    rejects(module, "'call'", "output")


def test_unknown_op_and_wrong_arity():
    module = scale_module()
    module.entry_graph.nodes[1].op = "frobnicate"
    rejects(module, "unknown op 'frobnicate'")
    module = scale_module()
    module.entry_graph.nodes[1].inputs.pop()
    rejects(module, "expected 2 inputs")


def test_function_graph_has_one_output():
    module = scale_module()
    module.entry_graph.outputs *= 2
    rejects(module, "exactly one output")


def test_typed_demands_types():
    rejects(scale_module(False), "has no type", typed=True)


# ---- the printer ------------------------------------------------------------------

SUM_TO = """\
graph @sum_to(%n: i64) -> i64 {
  %s = const 0 : i64
  %i = const 0 : i64
  %s.4, %i.4 = while [%n] (%s, %i) {
    cond (%n.1: i64, %s.1: i64, %i.1: i64) {
      %0 = lt %i.1, %n.1 : bool
      yield %0
    }
    body (%n.2: i64, %s.2: i64, %i.2: i64) {
      %s.3 = add %s.2, %i.2 : i64
      %1 = const 1 : i64
      %i.3 = add %i.2, %1 : i64
      yield %s.3, %i.3
    }
  } : i64, i64
  return %s.4
}
"""


def test_printer_golden():
    assert format_module(sum_to_module(), locations=False) == SUM_TO


def test_printer_shows_locations_right_aligned():
    lines = format_module(fib_module()).splitlines()
    assert lines[0] == "graph @fib(%n: i64) -> i64 {    # fib.py:1"
    located = [line for line in lines if "#" in line]
    assert len({line.index("#") for line in located}) == 1
    assert any(line.strip().startswith("%a = call @fib(%") and line.endswith("# fib.py:4")
               for line in lines)


def test_printer_keeps_user_names_and_shows_attrs():
    text = format_graph(scale_module(False).entry_graph, locations=False)
    assert text.splitlines() == [
        "graph @scale(%x, %n) {",
        "  %n.1 = cast %n to f64",
        "  %s = mul %x, %n.1",
        "  %0 = const 1.0",
        "  %s.1 = add %s, %0",
        "  return %s.1",
        "}",
    ]
    swapped = format_module(swap_module(), locations=False)
    assert "%0 = getitem %t, 0 : f64" in swapped
    assert "-> tuple<i64, f64> {" in swapped


def test_printer_is_deterministic_and_shows_other_attrs():
    g = Graph("check", params(("c", BOOL)))
    g.outputs = [op(g, "raise_if", [g.params[0]], exc="ValueError", message="bad")]
    first = format_module(module_of(g), locations=False)
    assert "raise_if %c {exc='ValueError', message='bad'}" in first
    assert first == format_module(module_of(g), locations=False)
    assert "#" not in format_module(sum_to_module(), locations=False)


def test_printer_survives_ill_formed_ir():
    module = fib_module()
    module.entry_graph.nodes[-1].regions[0].outputs = [module.entry_graph.params[0]]
    assert "yield %n" in format_module(module)


# ---- DOT ---------------------------------------------------------------------------

@pytest.mark.parametrize("build", [scale_module, sum_to_module, fib_module, swap_module])
def test_dot_export(build):
    module = build()
    dot = format_dot(module)
    assert dot.startswith("digraph")
    assert dot.count("{") == dot.count("}")
    assert f'label="@{module.entry}"' in dot
    assert dot.count("subgraph cluster_") == 1 + sum(len(n.regions) for n in
                                                      module.entry_graph.walk())
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg"], input=dot, text=True, check=True, capture_output=True)


def test_dot_labels_are_escaped():
    g = Graph("check", params(("c", BOOL)))
    g.outputs = [op(g, "raise_if", [g.params[0]], exc="ValueError", message='say "hi"\\n')]
    (line,) = [line for line in format_dot(module_of(g)).splitlines() if "raise_if" in line]
    label = re.fullmatch(r'\s*n\d+ \[label="((?:[^"\\]|\\.)*)"\];', line)
    assert label is not None, line
    assert r"""message='say \"hi\"\\\\n'""" in label.group(1)
