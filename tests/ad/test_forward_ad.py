"""Forward mode (`ir.ad.forward.forward_graph`) against finite differences and reverse mode.

Each case goes through the real pipeline: lower, infer types, optimize, take
the JVP graph, verify it, interpret it; then optimize the module again (with
the JVP graph as its entry) and check that nothing changed. Tapes are tested
on hand-built graphs shaped like reverse-mode gradients: a forward loop
records on a tape, a second loop reads it back. Forward over reverse gives
second derivatives; on random programs, forward and reverse mode agree.
"""
import math
import os
from copy import deepcopy

import corpus
import grad_functions
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from program_gen import load, programs

from astjit.frontend import lower_function
from astjit.ir.ad.forward import NotDifferentiableError, forward_graph
from astjit.ir.ad.reverse import reverse_graph
from astjit.ir.core import Graph, Module, Value
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.passes.pipeline import optimize
from astjit.ir.types import BOOL, F64, I64, NONE, TapeType, TupleType, python_type_of
from astjit.ir.verify import verify_module

# ---- checking -----------------------------------------------------------------------

def typed(fn, args):
    """The optimized typed module of `fn` for the types of `args`."""
    types = [F64 if isinstance(a, float) else I64 for a in args]
    return optimize(infer_types(lower_function(fn), types))


def run_jvp(module, name, params, args, tangents):
    """Interpret the JVP of graph `name` before and after optimizing; they must agree."""
    jvp = forward_graph(module, name, params)
    verify_module(module)
    before = interpret(module, [*args, *tangents], graph_name=jvp)
    module.entry = jvp
    optimize(module, verify=verify_module)
    after = interpret(module, [*args, *tangents], graph_name=jvp)
    assert after == before
    return before


def shifted(args, direction, h):
    """args + h * direction, leaving the arguments off the direction (ints) untouched."""
    return [a + h * d if d else a for a, d in zip(args, direction)]


def finite_difference(fn, args, direction, h=1e-6):
    return (fn(*shifted(args, direction, h)) - fn(*shifted(args, direction, -h))) / (2 * h)


def check_against_fd(fn, args, i):
    """d fn / d args[i] by forward mode equals the finite difference; the value is fn's."""
    module = typed(fn, args)
    value, tangent = run_jvp(module, module.entry, [i], args, [1.0])
    direction = [1.0 if k == i else 0.0 for k in range(len(args))]
    assert value == fn(*args)
    reference = finite_difference(fn, args, direction)
    assert math.isclose(tangent, reference, rel_tol=1e-5, abs_tol=1e-6), (tangent, reference)


def float_cases(cases):
    return [(fn, args, i) for fn, argsets in cases for args in argsets
            for i, a in enumerate(args) if isinstance(a, float)]


def case_id(case):
    fn, args, i = case
    return f"{fn.__name__}{args}/d{i}"


# ---- building graphs by hand ----------------------------------------------------------

def node_value(graph, op, inputs, t, **attrs):
    return graph.add(op, inputs, attrs=attrs, types=[t]).outputs[0]


def const(graph, x, t):
    return node_value(graph, "const", [], t, value=x, type=t)


def region(name, params):
    return Graph(name, [Value(n, t) for n, t in params])


def while_node(graph, invariants, carried, cond, body):
    node = graph.add("while", [*invariants, *carried], len(carried),
                     attrs={"n_invariants": len(invariants)}, regions=[cond, body],
                     types=[v.type for v in carried])
    return node.outputs


# ---- the gradient corpus ---------------------------------------------------------------

CORPUS = float_cases(grad_functions.CASES)


@pytest.mark.parametrize("case", CORPUS, ids=[case_id(c) for c in CORPUS])
def test_corpus_matches_finite_differences(case):
    check_against_fd(*case)


# ---- more control flow --------------------------------------------------------------------

def nested_loops(x, n):
    s = 0.0
    for i in range(n):
        j = 0
        while j < i:
            s = s + math.sin(x * j) / (i + 1)
            j += 1
    return s


def runtime_trip_count(x):
    k = 0
    while x < 100.0:
        x = x * 1.7 + math.sqrt(x)
        k += 1
    return x / k


def for_with_break_and_continue(x, y):
    acc = y
    for i in range(20):
        if i % 3 == 0:
            continue
        acc = acc * math.cos(x) + x * y
        if acc > 10.0:
            break
    return acc


def nested_return(x):
    for i in range(5):
        for j in range(5):
            if x * (i + j) > 3.0:
                return x ** 2 * i - j
    return math.exp(x)


def _is_even(x, n):
    if n == 0:
        return x
    return _is_odd(math.sin(x), n - 1)


def _is_odd(x, n):
    if n == 0:
        return -x
    return _is_even(x * 1.5, n - 1)


def mutual_recursion(x, n):
    return _is_even(x, n) + _is_odd(x, n)


def _fib_like(x, n):
    if n < 2:
        return x
    return _fib_like(x, n - 1) * 0.5 + _fib_like(x * x, n - 2)


def tree_recursion(x, n):
    return _fib_like(x, n)


def tuples_inside(x, y):
    p = (x * y, x + y, 3)
    q = (p[1], p[0] * p[2])
    a, b = q
    return a * b - p[2]


def math_functions(x):
    a = math.tan(x) + math.atan(x) + math.tanh(x) + math.asinh(x) + math.erf(x)
    b = math.atan2(x, 2.0) + math.hypot(x, 3.0) + math.copysign(x, -1.0) + math.fmod(x, 0.3)
    c = math.log2(x + 2.0) + math.log10(x + 2.0) + math.expm1(x) + math.cosh(x) + math.sinh(x)
    d = max(x, 0.2) + min(x * x, 0.5) + abs(x - 1.0) + x ** 2.5 + 2.0 ** x + (x + 1.0) % 0.7
    return a + b + c + d + float(int(x * 10.0))


EXTRA = float_cases([
    (nested_loops, [(0.7, 5), (1.3, 0)]),
    (runtime_trip_count, [(0.5,), (3.0,)]),
    (for_with_break_and_continue, [(0.3, 2.0), (1.2, 0.4)]),
    (nested_return, [(0.2,), (0.9,), (5.0,)]),
    (mutual_recursion, [(0.8, 4), (1.1, 5)]),
    (tree_recursion, [(0.9, 6)]),
    (tuples_inside, [(1.5, -0.5)]),
    (math_functions, [(0.37,), (0.61,)]),
])


@pytest.mark.parametrize("case", EXTRA, ids=[case_id(c) for c in EXTRA])
def test_control_flow_matches_finite_differences(case):
    check_against_fd(*case)


def test_stop_gradient_cuts_the_path():
    g = Graph("cut", [Value("x", F64)])
    (x,) = g.params
    frozen = node_value(g, "stop_gradient", [node_value(g, "mul", [x, x], F64)], F64)
    g.outputs = [node_value(g, "mul", [x, frozen], F64)]
    assert run_jvp(Module({"cut": g}, "cut"), "cut", [0], [3.0], [1.0]) == (27.0, 9.0)


def test_directional_derivative_over_several_parameters():
    fn = grad_functions.branch_mixes_args
    args, direction = [0.2, 0.4], [0.3, -2.0]
    module = typed(fn, args)
    value, tangent = run_jvp(module, module.entry, [0, 1], args, direction)
    assert value == fn(*args)
    assert math.isclose(tangent, finite_difference(fn, args, direction), rel_tol=1e-6)


# ---- the whole scalar corpus, where it is smooth --------------------------------------

def smooth_reference(fn, args, i):
    """d fn / d args[i] by central differences, or None where fn is not smooth there: where
    two step sizes disagree, or the one-sided differences do (a kink, a jump), or fn fails."""
    direction = [1.0 if k == i else 0.0 for k in range(len(args))]
    h = 1e-6 * max(1.0, abs(args[i]))
    try:
        coarse = finite_difference(fn, args, direction, 100 * h)
        fine = finite_difference(fn, args, direction, h)
        here = fn(*args)
        left = (here - fn(*shifted(args, direction, -h))) / h
    except (ArithmeticError, ValueError):
        return None
    right = 2 * fine - left
    tolerance = 1e-4 * max(1.0, abs(fine))
    if not (math.isfinite(fine) and abs(coarse - fine) <= tolerance
            and abs(right - left) <= 10 * tolerance):
        return None
    return fine


def outcome(fn, args):
    try:
        return fn(*args)
    except (ArithmeticError, ValueError, IndexError, AssertionError):
        return None


ITERATION_COUNT_CHANGES = {("newton_sqrt", (1.0,))}
"""Points where the program's derivative is not the function's: at x = 1.0 Newton's loop runs
zero times and returns a constant, while sqrt is smooth there (AD differentiates the program)."""

SCALAR_CORPUS = [(fn, args, i) for fn, args in corpus.CASE_IDS if outcome(fn, args) is not None
                 and (fn.__name__, args) not in ITERATION_COUNT_CHANGES
                 for i, a in enumerate(args) if type(a) is float]


@pytest.mark.parametrize("case", SCALAR_CORPUS, ids=[case_id(c) for c in SCALAR_CORPUS])
def test_scalar_corpus_values_and_smooth_tangents(case):
    fn, args, i = case
    expected = fn(*args)
    module = optimize(infer_types(lower_function(fn), [python_type_of(a) for a in args]))
    value, tangent = run_jvp(module, module.entry, [i], args, [1.0])
    assert corpus.same(expected, value, value_only=True)
    parts = range(len(expected)) if isinstance(expected, tuple) else [None]
    for k in parts:
        element = expected if k is None else expected[k]
        if type(element) is not float:
            continue
        reference = smooth_reference(lambda *a: (fn(*a) if k is None else fn(*a)[k]), args, i)
        got = tangent if k is None else tangent[k]
        if reference is not None:
            assert math.isclose(got, reference, rel_tol=1e-4, abs_tol=1e-5), (k, got, reference)


# ---- output conventions and activity -----------------------------------------------------

def pair_with_count(x, n):
    k = 0
    while k < n:
        x = x * 0.5
        k += 1
    return x, k, x > 1.0


def count_steps(x):
    k = 0
    while x > 1.0:
        x = x / 2.0
        k += 1
    return k


def test_tuple_output_has_a_tuple_tangent_with_zeros_for_ints_and_bools():
    module = typed(pair_with_count, [3.0, 2])
    jvp = forward_graph(module, module.entry, [0])
    assert module.graphs[jvp].outputs[0].type == TupleType(
        (TupleType((F64, I64, BOOL)), TupleType((F64, I64, BOOL))))
    assert interpret(module, [3.0, 2, 2.0], graph_name=jvp) == ((0.75, 2, False), (0.5, 0, False))


def test_int_output_has_a_zero_tangent():
    module = typed(count_steps, [9.0])
    assert run_jvp(module, module.entry, [0], [9.0], [1.0]) == (4, 0)


def test_inactive_values_get_no_tangents():
    def only_first(x, y):
        s = 0.0
        while y > 0.1:  # a loop that depends on y only: stays as it is
            y = y * 0.5
            s = s + y
        return x * x + s

    module = typed(only_first, [1.0, 2.0])
    loops = [n for n in module.entry_graph.nodes if n.op == "while"]
    jvp = forward_graph(module, module.entry, [0])
    (loop,) = [n for n in module.graphs[jvp].nodes if n.op == "while"]
    assert len(loop.inputs) == len(loops[0].inputs)
    assert interpret(module, [1.5, 2.0, 1.0], graph_name=jvp)[1] == 3.0


def test_non_float_parameter_is_refused_by_name():
    module = typed(grad_functions.horner, [0.5, 3])
    with pytest.raises(NotDifferentiableError, match="'n'"):
        forward_graph(module, module.entry, [1])


def test_recursive_helpers_are_made_once():
    module = typed(mutual_recursion, [0.8, 4])
    forward_graph(module, module.entry, [0])
    helpers = [name for name in module.graphs if name.endswith(".jvp")]
    assert len(helpers) == len(set(helpers)) >= 1
    verify_module(module)


# ---- tapes, as reverse-mode gradients use them ----------------------------------------------

def taped_graph(record_counter=False):
    """f(x, n): a tape gets 2.0, then y_i for i < n (y = y*x + 0.1 sin y), or float(i) when
    `record_counter`; a second loop reads them back, last first: s = 0.5 s + t[j] x.
    Returns s + y."""
    tape = TapeType(F64)
    g = Graph("taped", [Value("x", F64), Value("n", I64)])
    x, n = g.params
    t0 = node_value(g, "tape_push", [node_value(g, "tape_new", [], tape, element=F64), const(g, 2.0, F64)],
               tape)
    params = [("x", F64), ("n", I64), ("i", I64), ("y", F64), ("t", tape)]
    cond, body = region("cond", params), region("body", params)
    cond.outputs = [node_value(cond, "lt", [cond.params[2], cond.params[1]], BOOL)]
    bx, _, bi, by, bt = body.params
    recorded = node_value(body, "cast", [bi], F64, to=F64) if record_counter else by
    grown = body.add("tape_push", [bt, recorded], types=[tape]).outputs[0]
    step = node_value(body, "mul", [const(body, 0.1, F64), node_value(body, "sin", [by], F64)], F64)
    body.outputs = [node_value(body, "add", [bi, const(body, 1, I64)], I64),
                    node_value(body, "add", [node_value(body, "mul", [by, bx], F64), step], F64), grown]
    _, y, t = while_node(g, [x, n], [const(g, 0, I64), const(g, 1.0, F64), t0], cond, body)

    params = [("t", tape), ("x", F64), ("j", I64), ("s", F64)]
    cond, body = region("cond", params), region("body", params)
    cond.outputs = [node_value(cond, "ge", [cond.params[2], const(cond, 0, I64)], BOOL)]
    bt, bx, bj, bs = body.params
    read = node_value(body, "mul", [node_value(body, "tape_get", [bt, bj], F64), bx], F64)
    body.outputs = [node_value(body, "sub", [bj, const(body, 1, I64)], I64),
                    node_value(body, "add", [node_value(body, "mul", [bs, const(body, 0.5, F64)], F64),
                                        read], F64)]
    _, s = while_node(g, [t, x], [n, const(g, 0.0, F64)], cond, body)
    node_value(g, "tape_free", [t], NONE)
    g.outputs = [node_value(g, "add", [s, y], F64)]
    return Module({"taped": g}, "taped")


def taped_reference(x, n, record_counter=False):
    tape, y = [2.0], 1.0
    for i in range(n):
        tape.append(float(i) if record_counter else y)
        y = y * x + 0.1 * math.sin(y)
    s = 0.0
    for j in range(n, -1, -1):
        s = 0.5 * s + tape[j] * x
    return s + y


@pytest.mark.parametrize("record_counter", [False, True])
@pytest.mark.parametrize("x,n", [(0.8, 4), (1.3, 1), (0.5, 0)])
def test_tapes_carry_tangent_tapes(x, n, record_counter):
    def reference(x):
        return taped_reference(x, n, record_counter)

    module = taped_graph(record_counter)
    verify_module(module)
    assert interpret(module, [x, n]) == pytest.approx(reference(x), rel=1e-14)
    value, tangent = run_jvp(module, "taped", [0], [x, n], [1.0])
    assert value == pytest.approx(reference(x), rel=1e-14)
    assert math.isclose(tangent, finite_difference(reference, [x], [1.0]), rel_tol=1e-6)


def test_tape_ops_are_mirrored_on_the_tangent_tape():
    module = taped_graph()
    primal = [n.op for n in module.graphs["taped"].walk()]
    jvp = module.graphs[forward_graph(module, "taped", [0])]
    ops = [n.op for n in jvp.walk()]
    for op in ("tape_new", "tape_push", "tape_get", "tape_free"):
        assert ops.count(op) == 2 * primal.count(op), op
    (first_loop, _) = [n for n in jvp.nodes if n.op == "while"]
    assert [v.type for v in first_loop.outputs].count(TapeType(F64)) == 2


def test_a_tape_of_constants_gets_no_tangent_tape():
    module = taped_graph(record_counter=True)
    jvp = module.graphs[forward_graph(module, "taped", [0])]
    assert [n.op for n in jvp.walk()].count("tape_new") == 1


# ---- forward over reverse ------------------------------------------------------------------

def test_forward_over_reverse_gives_second_derivatives():
    module = typed(grad_functions.newton_sqrt, [2.0])
    gradient = reverse_graph(module, module.entry, [0])
    module.entry = gradient
    optimize(module, verify=verify_module)
    for x in (2.0, 0.3, 50.0):
        (value, first), (_, second) = run_jvp(deepcopy(module), gradient, [0], [x], [1.0])
        assert math.isclose(first, 0.5 * x ** -0.5, rel_tol=1e-9)
        assert math.isclose(second, -0.25 * x ** -1.5, rel_tol=1e-7)


@pytest.mark.parametrize("case", CORPUS + EXTRA, ids=[case_id(c) for c in CORPUS + EXTRA])
def test_forward_over_reverse_matches_differences_of_the_gradient(case):
    fn, args, i = case
    module = typed(fn, args)
    gradient = reverse_graph(module, module.entry, [i])
    module.entry = gradient
    optimize(module, verify=verify_module)

    def derivative(*point):
        return interpret(module, list(point), graph_name=gradient)[1]

    (_, first), (_, second) = run_jvp(deepcopy(module), gradient, [i], args, [1.0])
    assert first == derivative(*args)
    direction = [1.0 if k == i else 0.0 for k in range(len(args))]
    reference = finite_difference(derivative, args, direction, h=1e-5)
    assert math.isclose(second, reference, rel_tol=1e-4, abs_tol=1e-5), (second, reference)


# ---- random programs: forward mode against reverse mode ------------------------------------

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "100")) // 4


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(source=programs(), a=st.integers(-20, 20), b=st.integers(-20, 20),
       x=st.floats(-5, 5), y=st.floats(-5, 5))
def test_random_programs_forward_matches_reverse(tmp_path_factory, source, a, b, x, y):
    """The JVP along (0.3, -0.7) equals the gradient's dot product with it: both modes apply
    the same rules, so they agree even at kinks, where differences are no reference."""
    fn = load(source, tmp_path_factory.mktemp("jvps"))
    args = [a, b, x, y]
    expected = outcome(fn, args)
    if expected is None:
        return
    module = optimize(infer_types(lower_function(fn), [I64, I64, F64, F64]))
    value, tangent = run_jvp(deepcopy(module), module.entry, [2, 3], args, [0.3, -0.7])
    assert corpus.same(expected, value, value_only=True), f"\n{source}\nargs={args}"
    _, gx, gy = interpret(module, args, graph_name=reverse_graph(module, module.entry, [2, 3]))
    assert math.isclose(tangent, 0.3 * gx - 0.7 * gy, rel_tol=1e-9, abs_tol=1e-9), \
        f"\n{source}\nargs={args}: {tangent} vs {0.3 * gx - 0.7 * gy}"
