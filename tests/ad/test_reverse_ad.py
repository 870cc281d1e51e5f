"""Reverse-mode AD (`ir.ad.reverse.reverse_graph`) on graphs from the real pipeline.

Each case is lowered, typed and optimized, differentiated, verified and run
by the reference interpreter; the result (value, gradients...) is compared
with the function itself and central finite differences. The gradient graph
is then optimized (as the driver does) and must give the same numbers. The
same functions drive every check: the gradient corpus plus the cases below
(nested loops, tuples through loops, loops in branches, mutual recursion ...).
"""
import dataclasses
import math

import grad_functions
import pytest

from astjit.errors import Loc
from astjit.frontend import lower_function
from astjit.ir.ad.recomputation import RECOMPUTED
from astjit.ir.ad.reverse import NotDifferentiableError, reverse_graph
from astjit.ir.core import Graph, Module, Value
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.ops import OPS
from astjit.ir.passes.pipeline import fingerprint, optimize
from astjit.ir.types import F32, F64, I64, TapeType, TupleType, python_type_of
from astjit.ir.verify import verify_module

# ---- more functions to differentiate ----------------------------------------------------------


def nested_loops(x, n):
    s = 0.0
    for i in range(n):
        t = x
        while t < 10.0 * (i + 1):
            t = t * 1.5 + 0.1 * s
        s = s + math.sin(t) * x
    return s


def triple_nested(x):
    s = 0.0
    for i in range(3):
        for j in range(2):
            k = 0
            t = x
            while k < i + j:
                t = math.sin(t) + s * 0.01
                k += 1
            s = s + t
    return s


def tuple_through_loop(x, y):
    p = (x, y)
    k = 0
    while k < 5:
        p = (p[1] * 0.5 + math.sin(p[0]), p[0] * p[1])
        k += 1
    return p[0] + 2.0 * p[1]


def tuple_invariant(x, y):
    p = (x, y, 3)
    s = 0.0
    i = 0
    while i < p[2]:
        s = s + p[0] * p[1] + s * p[0]
        i += 1
    return s


def loop_in_branch(x, y):
    if x > 0.0:
        s = y
        for _ in range(4):
            s = s * x + y
    else:
        s = x - y
    return s


def branch_in_loop(x):
    s = x
    for _ in range(6):
        if s > 2.0:
            s = math.sqrt(s) + x
        else:
            s = s * s + 0.5
    return s


def nested_branches(x, y):
    if x > 0.0:
        if y > 0.0:
            r = x * y
        else:
            r = x - math.exp(y)
    else:
        r = -x * math.cos(y)
    return r * x


def even_poly(x, n):
    if n == 0:
        return 1.0
    return x * odd_poly(x, n - 1) + 1.0


def odd_poly(x, n):
    if n == 0:
        return x
    return math.sin(x) * even_poly(x, n - 1)


def fib_like(x, n):
    if n < 2:
        return x
    return fib_like(x, n - 1) * 0.5 + math.sin(fib_like(x * 0.9, n - 2))


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def recursion_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s = s + power(x, i)
    return s


def loop_branch_loop(x, y):
    s = y
    i = 0
    while i < 4:
        if s < 3.0:
            t = s
            while t < 5.0:
                t = t * 1.7 + x
            s = s + math.log(t) * x
        else:
            s = s * 0.5
        i += 1
    return s


def recursion_with_loop(x, n):
    if n == 0:
        return x
    s = x
    for _ in range(n):
        s = s * 0.9 + math.sin(s)
    return recursion_with_loop(s, n - 1) * 0.5 + s


def minmax_abs_pow(x, y):
    return max(x, y) * min(x * 2.0, y) + abs(x - y) ** 1.5


def rounding_ops(x, y):
    return (x % y) * x + (x // y) * y + math.fmod(x, y)


def int_and_float(n, x):
    return n * x


def constant(x):
    return 3.0


def ignores_y(x, y):
    return x * x


def to_int(x):
    return int(x)


def cubic_plus_sin(x):
    return x ** 3 + math.sin(x)


def mixed_widths(x, y):
    return 2.0 * x * y + math.sin(x) * y


def newton_sum(x, n):
    """A loop to tolerance in a for loop: the backward needs `i`, never the running sum."""
    s = 0.0
    for i in range(n):
        t = x + i
        y = t if t > 1.0 else 1.0
        while abs(y * y - t) > 1e-12 * t:
            y = 0.5 * (y + t / y)
        s += y
    return s


def sum_of_x(x, n):
    """The backward of `s = s + x` reads no carried value: a counted loop, no tape."""
    s = 0.0
    i = 0
    while i < n:
        s = s + x
        i += 1
    return s


def loop_only_compared(x, n):
    """`t` depends on x but reaches the result only through a comparison: no adjoint."""
    t = x
    i = 0
    while i < n:
        t = t * 1.5 + 0.25
        i += 1
    r = 2.0 if t > 10.0 else 3.0
    return r * x


def reads_every_carried(x):
    """Each new carried value reads all the others: the tape keeps the three floats."""
    a, b, c = x, 1.0, 0.5
    k = 0
    while k < 6:
        a, b, c = b * c + x, a * math.sin(c), a * b * 0.5
        k += 1
    return a + b + c


def branch_sum(x, n):
    """sin in one branch: its backward needs cos only, and no second sin."""
    s = 0.0
    for i in range(n):
        t = x + 0.5 * i
        if t > 2.0:
            s = s + math.sin(t)
        else:
            s = s + t * t
    return s


def divides_in_loop(x, n):
    """A ZeroDivisionError inside an inner loop whose result only feeds the sum."""
    s = 0.0
    for i in range(n):
        t = x
        k = 0
        while k < 2:
            t = t / (x - i)
            k += 1
        s = s + t
    return s


EXTRA_CASES = [
    (newton_sum, [(2.0, 6), (0.3, 3)]),
    (sum_of_x, [(1.7, 4), (0.5, 0)]),
    (loop_only_compared, [(1.1, 3), (0.2, 2)]),
    (reads_every_carried, [(0.7,)]),
    (branch_sum, [(0.9, 6)]),
    (divides_in_loop, [(4.5, 3)]),
    (nested_loops, [(1.3, 3), (2.2, 2)]),
    (triple_nested, [(0.4,)]),
    (tuple_through_loop, [(0.3, 0.7)]),
    (tuple_invariant, [(0.5, 0.25)]),
    (loop_in_branch, [(0.8, 1.1), (-0.5, 2.0)]),
    (branch_in_loop, [(0.7,), (3.0,)]),
    (nested_branches, [(1.0, 2.0), (1.0, -1.0), (-1.0, 0.5)]),
    (even_poly, [(0.7, 5), (1.2, 4)]),
    (fib_like, [(0.6, 6)]),
    (recursion_in_loop, [(1.1, 5)]),
    (loop_branch_loop, [(0.3, 0.5), (1.1, 2.9)]),
    (recursion_with_loop, [(0.7, 3)]),
    (minmax_abs_pow, [(1.3, 0.4), (0.2, 0.9)]),
    (rounding_ops, [(5.3, 1.7)]),
    (int_and_float, [(3, 2.0)]),
    (constant, [(1.0,)]),
    (ignores_y, [(1.5, 2.0)]),
]
CASES = [(fn, args) for fn, argsets in grad_functions.CASES + EXTRA_CASES for args in argsets]


# ---- helpers ------------------------------------------------------------------------------------


def verify_typed(module: Module) -> None:
    verify_module(module, typed=True)


def typed_module(fn, types) -> Module:
    return optimize(infer_types(lower_function(fn), list(types)))


def differentiate(fn, args, wrt=None) -> tuple[Module, str, list[int]]:
    """The optimized module of `fn` for `args`' types, with its gradient graph added."""
    module = typed_module(fn, [python_type_of(a) for a in args])
    wrt = [i for i, a in enumerate(args) if isinstance(a, float)] if wrt is None else wrt
    name = reverse_graph(module, module.entry, wrt)
    verify_typed(module)
    return module, name, wrt


def optimized_gradient(module: Module, name: str) -> Module:
    """The module optimized with the gradient as its entry, verified after every pass."""
    module.entry = name
    return optimize(module, verify=verify_typed)


def finite_difference(fn, args, i, h=1e-6):
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    return (fn(*up) - fn(*down)) / (2 * h)


def close(a, b, rel=1e-5, abs_=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)


# ---- gradients against finite differences -----------------------------------------------------


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{fn.__name__}{args}" for fn, args in CASES])
def test_gradient_matches_finite_differences(fn, args):
    module, name, wrt = differentiate(fn, args)
    result = interpret(module, list(args), graph_name=name)
    assert isinstance(result, tuple) and len(result) == 1 + len(wrt)
    assert result[0] == fn(*args)
    for i, got in zip(wrt, result[1:]):
        ref = finite_difference(fn, args, i)
        assert close(got, ref), f"d{fn.__name__}/darg{i}: {got} vs {ref}"
    optimized = optimized_gradient(module, name)
    again = interpret(optimized, list(args), graph_name=name)
    assert all(close(a, b, rel=1e-12, abs_=1e-15) for a, b in zip(again, result))


def test_seed_example_linear_square():
    module, name, _ = differentiate(grad_functions.linear_square, (2.0, 3.0, 1.0))
    assert interpret(module, [2.0, 3.0, 1.0], graph_name=name) == (49.0, 42.0, 28.0, 14.0)


def test_seed_example_graph():
    module, name, _ = differentiate(grad_functions.seed_graph, (2.0, 5.0))
    value, gx1, gx2 = interpret(module, [2.0, 5.0], graph_name=name)
    assert value == grad_functions.seed_graph(2.0, 5.0)
    assert math.isclose(gx1, 1 / 2.0 + 5.0, rel_tol=1e-12)
    assert math.isclose(gx2, 2.0 - math.cos(5.0), rel_tol=1e-12)


def test_wrt_order_and_repetition_are_kept():
    module, name, _ = differentiate(grad_functions.seed_graph, (2.0, 5.0), wrt=[1, 0, 1])
    value, g1, g0, g1_again = interpret(module, [2.0, 5.0], graph_name=name)
    assert (g1, g0, g1_again) == (2.0 - math.cos(5.0), 5.5, 2.0 - math.cos(5.0))
    assert name.endswith(".vjp[1,0,1]")


def test_newton_sqrt_derivative_is_exact_enough():
    module, name, _ = differentiate(grad_functions.newton_sqrt, (2.0,))
    _, g = interpret(module, [2.0], graph_name=name)
    assert math.isclose(g, 0.5 / math.sqrt(2.0), rel_tol=1e-9)


def test_single_precision_parameters_get_single_precision_adjoints():
    module = typed_module(mixed_widths, [F32, F32])
    name = reverse_graph(module, module.entry, [0, 1])
    verify_typed(module)
    assert module.graphs[name].outputs[0].type == TupleType((F32, F32, F32))  # NEP 50: f32 wins
    x, y = 0.5, 1.25
    _, gx, gy = interpret(module, [x, y], graph_name=name)
    assert math.isclose(gx, 2.0 * y + math.cos(x) * y, rel_tol=1e-6)
    assert math.isclose(gy, 2.0 * x + math.sin(x), rel_tol=1e-6)


# ---- the shape of what is built ----------------------------------------------------------------


def test_the_differentiated_graph_is_left_unchanged():
    module = typed_module(grad_functions.loop_with_break, [F64])
    before = fingerprint(module)
    name = reverse_graph(module, module.entry, [0])
    del module.graphs[name]
    assert fingerprint(module) == before


def ops_of(module: Module, name: str) -> list[str]:
    return [node.op for node in module.graphs[name].walk()]


def tape_elements(module: Module, name: str) -> list[TupleType]:
    """The element types of the tapes the graph makes, outermost first."""
    return [n.attrs["element"] for n in module.graphs[name].walk() if n.op == "tape_new"]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{fn.__name__}{args}" for fn, args in CASES])
def test_every_tape_is_freed(fn, args):
    module, name, _ = differentiate(fn, args)
    ops = ops_of(module, name)
    assert ops.count("tape_new") == ops.count("tape_free")


def test_loops_are_taped_and_every_tape_is_freed():
    module, name, _ = differentiate(newton_sum, (2.0, 6))
    ops = ops_of(module, name)
    # The outer loop's tape, and the inner loop's in the outer backward body's recomputation.
    assert ops.count("tape_new") == ops.count("tape_free") == 2
    assert "tape_push" in ops and "tape_get" in ops
    tapes = [n for n in module.graphs[name].walk() if n.op == "tape_new"]
    assert all(isinstance(n.outputs[0].type, TapeType) for n in tapes)


def test_a_tape_records_only_the_carried_values_the_backward_reads():
    """newton_sum's backward reads `i` to recompute x + i, never the running sum `s`; the
    Newton loop's backward reads `y` (its `t` is an invariant, its condition runs forward)."""
    module, name, _ = differentiate(newton_sum, (2.0, 6))
    assert tape_elements(module, name) == [TupleType((I64,)), TupleType((F64,))]
    reads = [n for n in module.graphs[name].walk() if n.op == "tape_get"]
    assert [n.outputs[0].type for n in reads] == tape_elements(module, name)
    optimized = optimized_gradient(module, name)
    assert tape_elements(optimized, name) == [TupleType((I64,)), TupleType((F64,))]


def test_a_tape_keeps_every_carried_value_the_backward_reads():
    module, name, _ = differentiate(reads_every_carried, (0.7,))
    assert tape_elements(module, name) == [TupleType((F64, F64, F64))]  # not the counter k


def test_a_loop_whose_backward_reads_no_carried_value_is_counted_without_a_tape():
    module, name, _ = differentiate(sum_of_x, (1.7, 4))
    ops = ops_of(module, name)
    assert not {"tape_new", "tape_push", "tape_get", "tape_free"} & set(ops)
    assert ops.count("while") == 2  # forward, counting; backward, counting down
    assert interpret(module, [1.7, 4], graph_name=name) == (sum_of_x(1.7, 4), 4.0)


def test_a_loop_no_adjoint_reaches_is_copied_plain():
    module, name, _ = differentiate(loop_only_compared, (1.1, 3))
    ops = ops_of(module, name)
    assert ops.count("while") == 1 and not {"tape_new", "tape_push"} & set(ops)
    loop = next(n for n in module.graphs[name].nodes if n.op == "while")
    assert len(loop.outputs) == 2  # t and i, no tape or trip count


def test_a_backward_branch_does_not_recompute_what_it_does_not_read():
    """sin runs once per iteration, in the forward loop; the backward body computes cos."""
    module, name, _ = differentiate(branch_sum, (0.9, 6))
    ops = ops_of(optimized_gradient(module, name), name)
    assert ops.count("sin") == 1 and ops.count("cos") == 1


def drop_unused_recomputed(graph: Graph) -> None:
    """What a pass honouring RECOMPUTED may do: delete marked nodes whose results are unused."""
    for node in graph.nodes:
        for region in node.regions:
            drop_unused_recomputed(region)
    used = {v for node in graph.nodes for v in node.inputs} | set(graph.outputs)
    graph.nodes = [n for n in graph.nodes if not n.attrs.get(RECOMPUTED)
                   or any(out in used for out in n.outputs)]


def gradient_only(module: Module, name: str) -> str:
    """A graph returning only the gradient of `name`'s (value, gradient), optimized."""
    inner = module.graphs[name]
    params = [Value(p.name, p.type) for p in inner.params]
    outer = Graph(f"{name}.grad", params)
    result = outer.add("call", params, attrs={"callee": name}, types=[inner.outputs[0].type])
    outer.outputs = outer.add("getitem", result.outputs, attrs={"index": 1},
                              types=[F64]).outputs
    module.graphs[outer.name] = outer
    module.entry = outer.name
    optimize(module, verify=verify_typed)
    return outer.name


def test_the_forward_loop_marks_the_inner_loops_the_backward_repeats():
    """With only the gradient wanted, newton_sum's forward loop computes its sum for
    nothing: the Newton loop in it is marked, and deleting it leaves the gradient exact."""
    module, name, _ = differentiate(newton_sum, (2.0, 6))
    expected = interpret(module, [2.0, 6], graph_name=name)[1]
    forward = next(n for n in module.graphs[name].nodes if n.op == "while")
    marked = [n for n in module.graphs[name].walk() if n.attrs.get(RECOMPUTED)]
    assert [n.op for n in marked] == ["while"] and marked[0] in forward.regions[1].nodes
    entry = gradient_only(module, name)
    graph = module.graphs[entry]
    drop_unused_recomputed(graph)  # if the optimizer has not
    verify_typed(module)
    assert [n.op for n in graph.walk()].count("while") == 4  # forward, backward, Newton twice
    assert interpret(module, [2.0, 6], graph_name=entry) == expected


def test_work_the_backward_repeats_still_raises_once_the_forward_copy_goes():
    module, name, _ = differentiate(divides_in_loop, (4.5, 3))
    entry = gradient_only(module, name)
    drop_unused_recomputed(module.graphs[entry])
    verify_typed(module)
    assert math.isclose(interpret(module, [4.5, 3], graph_name=entry),
                        finite_difference(divides_in_loop, (4.5, 3), 0), rel_tol=1e-5)
    with pytest.raises(ZeroDivisionError):
        divides_in_loop(2.0, 3)
    with pytest.raises(ZeroDivisionError):
        interpret(module, [2.0, 3], graph_name=entry)


def test_straight_line_code_needs_no_tape():
    module, name, _ = differentiate(grad_functions.branch_mixes_args, (2.0, 3.0))
    ops = {node.op for node in module.graphs[name].walk()}
    assert not ops & {"tape_new", "tape_push", "tape_get", "tape_free", "while"}


def test_recursion_gets_a_vjp_graph_per_graph_of_the_cycle():
    module, name, _ = differentiate(even_poly, (0.7, 5))
    helpers = sorted(n for n in module.graphs if n.endswith(".vjp"))
    assert [h.split("[")[0] for h in helpers] == ["even_poly", "odd_poly"]
    for helper in helpers:
        graph = module.graphs[helper]
        assert graph.outputs[0].type == TupleType((F64, I64))  # adjoints of (x, n)
        assert graph.params[-1].type == F64  # the output adjoint


def test_stop_gradient_cuts_the_path():
    """x * stop_gradient(x * x): the derivative is x * x, not 3 x^2 (hand-built IR)."""
    x = Value("x", F64)
    graph = Graph("detached", [x])
    square = graph.add("mul", [x, x], types=[F64]).outputs[0]
    cut = graph.add("stop_gradient", [square], types=[F64]).outputs[0]
    graph.outputs = [graph.add("mul", [x, cut], types=[F64]).outputs[0]]
    module = Module({"detached": graph}, "detached")
    name = reverse_graph(module, "detached", [0])
    verify_typed(module)
    assert interpret(module, [3.0], graph_name=name) == (27.0, 9.0)
    assert interpret(optimized_gradient(module, name), [3.0], graph_name=name) == (27.0, 9.0)


def test_a_constant_result_has_zero_gradient():
    module, name, _ = differentiate(constant, (1.0,))
    assert interpret(module, [1.0], graph_name=name) == (3.0, 0.0)


# ---- second derivatives: the gradient graph is differentiable again ---------------------------


def derivative_graph(module: Module, gradient: str, index: int) -> str:
    """Add a graph returning component `index` of the gradient graph's result; make it the entry."""
    inner = module.graphs[gradient]
    params = [Value(p.name, p.type) for p in inner.params]
    outer = Graph(f"{gradient}.d{index}", params)
    result = outer.add("call", params, attrs={"callee": gradient}, types=[inner.outputs[0].type])
    item = outer.add("getitem", result.outputs, attrs={"index": index},
                     types=[inner.outputs[0].type.elements[index]])
    outer.outputs = item.outputs
    module.graphs[outer.name] = outer
    module.entry = outer.name
    optimize(module, verify=verify_typed)
    return outer.name


@pytest.mark.parametrize("fn,x,d2", [
    (cubic_plus_sin, 1.3, 6 * 1.3 - math.sin(1.3)),
    (grad_functions.piecewise, 4.0, -0.25 * 4.0 ** -1.5 + math.exp(-4.0)),
])
def test_reverse_over_reverse(fn, x, d2):
    module, name, _ = differentiate(fn, (x,))
    first = derivative_graph(module, name, 1)
    second = reverse_graph(module, first, [0])
    verify_typed(module)
    assert math.isclose(interpret(module, [x], graph_name=second)[1], d2, rel_tol=1e-9)


# ---- what cannot be differentiated ------------------------------------------------------------


def test_a_gradient_with_tapes_is_refused_cleanly():
    """Differentiating a loop's gradient meets tape_push: the driver falls back to forward mode."""
    module, name, _ = differentiate(grad_functions.newton_sqrt, (2.0,))
    first = derivative_graph(module, name, 1)
    graphs = dict(module.graphs)
    with pytest.raises(NotDifferentiableError) as error:
        reverse_graph(module, first, [0])
    assert error.value.op == "tape_push" and "tape_push" in str(error.value)
    assert module.graphs == graphs  # nothing added


def test_an_op_without_a_rule_is_named_with_its_line(monkeypatch):
    monkeypatch.setitem(OPS, "mystery", dataclasses.replace(OPS["sin"], name="mystery", vjp=None))
    loc = Loc("model.py", 7, 4, "    return mystery(x)")
    x = Value("x", F64)
    graph = Graph("g", [x])
    graph.outputs = graph.add("mystery", [x], types=[F64], loc=loc).outputs
    module = Module({"g": graph}, "g")
    with pytest.raises(NotDifferentiableError, match=r"'mystery'.*model\.py:7") as error:
        reverse_graph(module, "g", [0])
    assert error.value.op == "mystery" and error.value.loc == loc
    assert list(module.graphs) == ["g"]


def test_an_integer_parameter_is_refused_by_name():
    module = typed_module(int_and_float, [I64, F64])
    with pytest.raises(NotDifferentiableError, match="'n'") as error:
        reverse_graph(module, module.entry, [0])
    assert error.value.op is None


def test_a_non_float_result_is_refused():
    module = typed_module(to_int, [F64])
    with pytest.raises(NotDifferentiableError, match="i64"):
        reverse_graph(module, module.entry, [0])


# ---- compiled code, where the backend already takes the gradient graph -----------------------


@pytest.mark.parametrize("fn,args", [
    (grad_functions.seed_graph, (2.0, 5.0)),
    (grad_functions.branch_mixes_args, (0.2, 0.4)),
    (grad_functions.power_rec, (1.3, 5)),
    (grad_functions.newton_sqrt, (2.0,)),
])
def test_compiled_gradient_agrees_with_the_interpreter(fn, args):
    from astjit.backend.llvm import build_entry

    module, name, _ = differentiate(fn, args)
    expected = interpret(module, list(args), graph_name=name)
    optimized = optimized_gradient(module, name)

    def refuse(*args, **kwargs):
        raise TypeError("no fallback")

    def raise_status(status):
        raise RuntimeError(f"compiled code failed with status {status}")

    try:
        compiled = build_entry(optimized, refuse, raise_status)
    except Exception as error:  # noqa: BLE001 - tape ops may not be lowered yet
        pytest.skip(f"the LLVM backend cannot compile this gradient yet: {error!r}")
    got = compiled.call(*args)
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(got, expected))
