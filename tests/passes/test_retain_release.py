"""The retain/release pass (`insert_array_ownership`, ir/passes/retain_release.py) and the ownership checker
(`check_array_ownership`, ir/passes/ownership.py) on hand-built typed graphs: the retains and
releases the pass places for tuples, loops and branches, and the checker's messages for leaks,
double releases and uses after release. The same pass on graphs from the frontend is checked
with the arrays compiled code makes (e2e/test_array_creation.py)."""
from __future__ import annotations

import pytest

from astjit.ir.core import Graph, Module, Value
from astjit.ir.interp import interpret
from astjit.ir.passes.ownership import OwnershipError, check_array_ownership
from astjit.ir.passes.retain_release import insert_array_ownership
from astjit.ir.types import BOOL, F64, I64, NONE, ArrayType, TupleType
from astjit.ir.verify import verify_module

A1 = ArrayType(F64, 1)


# ---- the retain/release pass and the checker on hand-built graphs -----------------------

def op(graph, name, inputs, t, **attrs):
    return graph.add(name, inputs, attrs=attrs, types=[t]).outputs[0]


def new_array(graph, n):
    return op(graph, "array_new", [n], A1, dtype=F64, fill=0)


def function(name, *types):
    return Graph(name, [Value(f"p{i}", t) for i, t in enumerate(types)])


def module_of(graph):
    return Module({graph.name: graph}, graph.name)


def placed(graph) -> Module:
    module = insert_array_ownership(module_of(graph))
    verify_module(module, typed=True)
    check_array_ownership(module)
    return module


def test_a_tuple_takes_no_reference_and_getitem_picks_leaves():
    g = function("f", I64, A1)
    n, x = g.params
    a = new_array(g, n)
    t = op(g, "tuple", [a, x], TupleType((A1, A1)))
    first = op(g, "getitem", [t], A1, index=0)
    second = op(g, "getitem", [t], A1, index=-1)
    g.outputs = [op(g, "tuple", [second, first], TupleType((A1, A1)))]
    placed(g)
    assert [node.op for node in g.nodes] == ["array_new", "tuple", "getitem", "getitem", "tuple",
                                             "getitem", "array_retain", "getitem", "tuple"]
    # the argument (element 0 of the result) is retained, the new array moved


def test_a_while_consuming_what_it_also_borrows_gets_a_reference():
    g = function("f", I64)
    (n,) = g.params
    a = new_array(g, n)
    cond, body = function("cond", A1, A1), function("body", A1, A1)
    cond.outputs = [op(cond, "const", [], BOOL, value=False, type=BOOL)]
    body.outputs = [body.params[0]]  # yields the invariant, drops the carried value
    loop = g.add("while", [a, a], attrs={"n_invariants": 1}, regions=[cond, body], types=[A1])
    g.outputs = loop.outputs
    placed(g)
    assert [node.op for node in g.nodes] == ["array_new", "array_retain", "while", "array_release"]
    assert loop.inputs[0] is a and loop.inputs[1] is not a
    assert [node.op for node in body.nodes] == ["array_release", "array_retain"]


def test_the_same_array_yielded_twice_is_retained_once():
    g = function("f", I64, BOOL)
    n, c = g.params
    then, orelse = function("then", I64), function("else", I64)
    made = new_array(then, then.params[0])
    then.outputs = [made, made]
    other = new_array(orelse, orelse.params[0])
    orelse.outputs = [other, new_array(orelse, orelse.params[0])]
    branch = g.add("if", [c, n], 2, regions=[then, orelse], types=[A1, A1])
    g.outputs = [op(g, "tuple", branch.outputs, TupleType((A1, A1)))]
    placed(g)
    assert [node.op for node in then.nodes] == ["array_new", "array_retain"]
    assert then.outputs[0] is made and then.outputs[1] is not made
    assert "array_retain" not in [node.op for node in orelse.nodes]


def test_owned_tuples_are_released_leaf_by_leaf():
    g = function("f", I64)
    (n,) = g.params
    pair = TupleType((A1, TupleType((I64, A1))))
    callee = function("g", I64)
    callee.outputs = [op(callee, "tuple", [new_array(callee, callee.params[0]),
                                           op(callee, "tuple", [callee.params[0],
                                                                new_array(callee, callee.params[0])],
                                              TupleType((I64, A1)))], pair)]
    t = op(g, "call", [n], pair, callee="g")
    zero = op(g, "const", [], I64, value=0, type=I64)
    g.outputs = [op(g, "array_get", [op(g, "getitem", [t], A1, index=0), zero], F64)]
    module = Module({"f": g, "g": callee}, "f")
    insert_array_ownership(module)
    verify_module(module, typed=True)
    check_array_ownership(module)
    releases = [node for node in g.nodes if node.op == "array_release"]
    assert len(releases) == 2 and [node.op for node in g.nodes][-1] == "array_release"
    assert interpret(module, [3]) == 0.0


def test_a_body_releases_a_carried_array_it_ignores_first_thing():
    g = function("f", I64, A1)
    n, x = g.params
    cond, body = function("cond", I64, A1), function("body", I64, A1)
    cond.outputs = [op(cond, "const", [], BOOL, value=False, type=BOOL)]
    body.outputs = [new_array(body, body.params[0])]
    loop = g.add("while", [n, x], attrs={"n_invariants": 1}, regions=[cond, body], types=[A1])
    g.outputs = loop.outputs
    placed(g)
    assert [node.op for node in body.nodes] == ["array_release", "array_new"]
    assert [node.op for node in g.nodes] == ["array_retain", "while"]


def broken(build) -> str:
    """The checker's message for a graph `build` fills (no retain/release pass)."""
    g = function("f", I64, A1)
    build(g, *g.params)
    with pytest.raises(OwnershipError) as info:
        check_array_ownership(module_of(g))
    return str(info.value)


def test_the_checker_finds_leaks_double_releases_and_uses_after_release():
    def leak(g, n, x):
        new_array(g, n)
        g.outputs = [n]
    assert "never released or consumed (a leak)" in broken(leak)

    def double(g, n, x):
        a = new_array(g, n)
        op(g, "array_release", [a], NONE)
        op(g, "array_release", [a], NONE)
        g.outputs = [n]
    assert "after it was released or consumed" in broken(double)

    def use_after(g, n, x):
        a = new_array(g, n)
        op(g, "array_release", [a], NONE)
        g.outputs = [op(g, "array_get", [a, n], F64)]
    assert "after it was released or consumed" in broken(use_after)

    def borrowed(g, n, x):
        g.outputs = [x]
    assert "consumes a borrowed array" in broken(borrowed)

    def released_param(g, n, x):
        op(g, "array_release", [x], NONE)
        g.outputs = [n]
    assert "consumes a borrowed array" in broken(released_param)

    def projection_after_parent(g, n, x):
        a = new_array(g, n)
        t = op(g, "tuple", [a, n], TupleType((A1, I64)))
        op(g, "array_release", [a], NONE)
        g.outputs = [op(g, "getitem", [t], A1, index=0)]
    assert "after it was released" in broken(projection_after_parent)

    def consumed_and_borrowed(g, n, x):
        a = new_array(g, n)
        cond, body = function("cond", A1, A1), function("body", A1, A1)
        cond.outputs = [op(cond, "const", [], BOOL, value=False, type=BOOL)]
        op(body, "array_release", [body.params[1]], NONE)
        body.outputs = [op(body, "array_retain", [body.params[0]], A1)]
        loop = g.add("while", [a, a], attrs={"n_invariants": 1}, regions=[cond, body], types=[A1])
        g.outputs = loop.outputs
    assert "that the same node also borrows" in broken(consumed_and_borrowed)

    def body_leaks(g, n, x):
        cond, body = function("cond", A1), function("body", A1)
        cond.outputs = [op(cond, "const", [], BOOL, value=False, type=BOOL)]
        body.outputs = [new_array(body, op(body, "const", [], I64, value=1, type=I64))]
        loop = g.add("while", [op(g, "array_retain", [x], A1)], attrs={"n_invariants": 0},
                     regions=[cond, body], types=[A1])
        g.outputs = loop.outputs
    assert "@f/while.body" in broken(body_leaks) and "a leak" in broken(body_leaks)
