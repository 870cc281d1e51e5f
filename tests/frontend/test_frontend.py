"""The frontend: Python source -> untyped graphs, checked by structure, by running them, and by errors.

The strongest check is `test_interpreted_graphs_match_cpython`: every corpus
function, lowered and run by the IR interpreter, returns what CPython returns.
The functions below the helpers are test inputs: the frontend reads their source.
"""
from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import os

import pytest
import scalar_functions
from corpus import CASE_IDS, CASES, NAMES, VALUE_ONLY, outcome, same

from astjit import jit
from astjit.errors import (
    CompileError,
    NameResolutionError,
    SourceUnavailableError,
    TypingError,
    UnsupportedCallError,
    UnsupportedSyntaxError,
)
from astjit.frontend import lower_function
from astjit.ir.core import Graph, Module
from astjit.ir.verify import verify_module

interp = pytest.importorskip("astjit.ir.interp")

FUNCTIONS = [fn for fn, _ in CASES]
THIS_FILE = os.path.basename(__file__)


# ---- helpers --------------------------------------------------------------------------

def free_values(graph: Graph) -> list[str]:
    """Values that `graph` or one of its regions uses without defining them itself."""
    found = []
    defined = set(graph.params)
    for node in graph.nodes:
        found += [f"{node.op} uses {v!r}" for v in node.inputs if v not in defined]
        for region in node.regions:
            found += free_values(region)
        defined.update(node.outputs)
    found += [f"output {v!r}" for v in graph.outputs if v not in defined]
    return found


def ops_of(graph: Graph) -> list[str]:
    """The ops of `graph`'s own nodes (not of its regions)."""
    return [node.op for node in graph.nodes]


def all_ops(module: Module, name: str | None = None) -> list[str]:
    return [node.op for node in module.graphs[name or module.entry].walk()]


def line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def compile_error(fn) -> CompileError:
    with pytest.raises(CompileError) as info:
        lower_function(fn)
    return info.value


# ---- every corpus function lowers to well-formed, untyped graphs -------------------------

@pytest.mark.parametrize("fn", FUNCTIONS, ids=[fn.__name__ for fn in FUNCTIONS])
def test_corpus_lowers_to_wellformed_graphs(fn):
    module = lower_function(fn)
    verify_module(module, typed=False)
    assert module.entry == fn.__qualname__
    entry = module.entry_graph
    assert [p.name for p in entry.params] == list(inspect.signature(fn).parameters)
    for graph in module.graphs.values():
        assert len(graph.outputs) == 1
        assert free_values(graph) == []
        for node in graph.walk():
            assert node.loc is not None and node.loc.filename.endswith(".py"), node
            assert node.loc.text.strip(), node
            assert all(v.type is None for v in node.outputs)


@pytest.mark.parametrize("fn,args", CASE_IDS, ids=NAMES)
def test_interpreted_graphs_match_cpython(fn, args):
    module = lower_function(fn)
    expected = outcome(fn, args)
    got = outcome(lambda *a: interp.interpret(module, list(a)), args)
    assert expected[0] == got[0], (expected, got)
    assert same(expected[1], got[1], fn in VALUE_ONLY), (expected, got)


# ---- structure ------------------------------------------------------------------------

def countdown(n):
    k = 0
    while n > 0:                  # the while line
        n -= 1
        k += 2
    return k


def over_tuple(x):
    total = 0.0
    for c in (1.0, x, 3.0):
        total = total * x + c
    return total


def over_named_tuple(x):
    t = (x, 2 * x)
    s = 0.0
    for v in t:
        s += v
    return s


def variable_step(a, b, step):
    s = 0
    for i in range(a, b, step):
        s += i
    return s


def divide_guarded(a, b):
    return b != 0 and a // b > 2


def middle_once(x):
    return 0 < x * x < 10


def named_values(a, b):
    total = a + b
    scaled = total * 2
    return scaled


def invariant_and_carried(x, n):
    s = 0.0
    for i in range(n):
        s += x
    return s


def test_while_stays_a_while_node():
    module = lower_function(countdown)
    entry = module.entry_graph
    assert ops_of(entry).count("while") == 1
    (loop,) = [node for node in entry.nodes if node.op == "while"]
    assert [r.name for r in loop.regions] == ["cond", "body"]
    assert loop.loc.line == line_of(countdown, "the while line")
    assert [v.name for v in loop.outputs] == ["n", "k"]  # carried: assigned in the loop


def test_range_loop_is_a_while_with_invariants_apart():
    module = lower_function(invariant_and_carried)
    (loop,) = [n for n in module.entry_graph.nodes if n.op == "while"]
    invariants = loop.inputs[:loop.attrs["n_invariants"]]
    assert [v.name for v in invariants] == ["n", "x"]
    cond, body = loop.regions
    assert len(cond.params) == len(body.params) == len(loop.inputs)
    assert len(body.outputs) == len(loop.outputs) == len(loop.inputs) - len(invariants)


def test_for_over_a_tuple_is_unrolled():
    for fn, copies in ((over_tuple, 3), (over_named_tuple, 2)):
        module = lower_function(fn)
        assert "while" not in all_ops(module)
        assert ops_of(module.entry_graph).count("add") == copies


def test_variable_step_checks_for_zero_and_selects_the_comparison():
    module = lower_function(variable_step)
    raise_if = [n for n in module.entry_graph.nodes if n.op == "raise_if"]
    assert raise_if and raise_if[0].attrs == {"exc": "ValueError",
                                              "message": "range() arg 3 must not be zero"}
    assert "select" in all_ops(module)
    with pytest.raises(ValueError):
        interp.interpret(module, [0, 5, 0])
    assert interp.interpret(module, [10, -2, -4]) == variable_step(10, -2, -4)


def test_short_circuit_puts_the_right_operand_in_a_region():
    module = lower_function(divide_guarded)
    assert "floordiv" not in ops_of(module.entry_graph)
    assert "floordiv" in all_ops(module)
    assert interp.interpret(module, [5, 0]) is False


def test_chained_comparison_evaluates_the_middle_once():
    module = lower_function(middle_once)
    assert all_ops(module).count("mul") == 1
    assert [interp.interpret(module, [x]) for x in (0.0, 2.0, 5.0)] == [False, True, False]


def test_values_carry_the_variable_names():
    graph = lower_function(named_values).entry_graph
    assert [v.name for n in graph.nodes for v in n.outputs if v.name] == ["total", "scaled"]


def test_falling_off_the_end_returns_none():
    def no_return(x):
        x + 1

    module = lower_function(no_return)
    assert interp.interpret(module, [1]) is None


# ---- calls, recursion, globals ------------------------------------------------------------

def _make_adder(k):
    def add(x):
        return x + k
    return add


add_one, add_two = _make_adder(1), _make_adder(2)
FROZEN = 10


def two_closures(x):
    return add_one(x) + add_two(x)


def reads_frozen(x):
    return x + FROZEN


class Jitted:
    """Stands for a jitted function object: the frontend compiles its `py_func`."""

    def __init__(self, fn):
        self.py_func = fn


jitted_square = Jitted(lambda v: v * v)
jitted_helper = Jitted(named_values)


def calls_jitted(a):
    return jitted_helper(a, 1)


def test_same_qualname_gets_distinct_graphs():
    module = lower_function(two_closures)
    assert sorted(module.graphs) == ["_make_adder.<locals>.add", "_make_adder.<locals>.add#2",
                                     "two_closures"]
    assert interp.interpret(module, [10]) == 23


def test_recursion_and_mutual_recursion_share_one_module():
    module = lower_function(scalar_functions.is_even)
    assert set(module.graphs) == {"is_even", "is_odd"}
    assert module.callees(module.graphs["is_odd"]) == {"is_even"}
    module = lower_function(scalar_functions.fib)
    assert module.callees(module.entry_graph) == {"fib"}


def test_keywords_and_defaults_are_bound_at_the_call():
    module = lower_function(scalar_functions.calls_helpers)
    calls = [n for n in module.entry_graph.walk() if n.op == "call" and n.attrs["callee"] == "_poly"]
    assert [len(c.inputs) for c in calls] == [4, 4]


def test_globals_are_frozen_at_compile_time():
    global FROZEN
    module = lower_function(reads_frozen)
    FROZEN = 20
    try:
        assert interp.interpret(module, [1]) == 11
    finally:
        FROZEN = 10


def test_jitted_objects_are_unwrapped():
    module = lower_function(Jitted(calls_jitted))
    assert module.entry == "calls_jitted" and "named_values" in module.graphs


def _triple(x):
    return x, x, x


def unpacks_call_result(x):
    a, b = _triple(x)
    return a + b


def _add_one(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x) + 1
    return wrapper


@_add_one
def doubled_plus_one(x):
    return 2 * x


def calls_decorated(x):
    return doubled_plus_one(x)


def test_unpacking_a_tuple_of_unknown_length_checks_it():
    module = lower_function(unpacks_call_result)
    with pytest.raises(ValueError, match="too many values to unpack"):
        interp.interpret(module, [1])


def test_a_decorated_function_compiles_its_wrapper():
    module = lower_function(calls_decorated)
    assert interp.interpret(module, [5]) == calls_decorated(5) == 11


# ---- errors ------------------------------------------------------------------------------

def many_problems(x):
    y = {x}                             # problem: set
    try:                                # problem: try
        y = x
    except ValueError:
        pass
    open(x)                             # problem: open
    return undefined_thing + y          # problem: undefined  # noqa: F821


def one_branch(x):
    if x > 0:
        y = 1.0
    return y                            # problem: unassigned


def loop_only(n):
    for i in range(n):
        last = i
    return last                         # problem: loop


def read_first(x):
    x = z + 1                           # problem: read first  # noqa: F821
    z = 2  # noqa: F841
    return x


def rounds_to_digits(x):
    return round(x, 2)                  # problem: round


def nonlocal_write(x):
    def inner(y):
        nonlocal x                      # problem: nonlocal
        x = y
    inner(1.0)
    return x


def returns_lambda(x):
    return lambda y: y * x              # problem: lambda


def yields(x):
    yield x                             # problem: yield


def star_params(*args):
    return 0


def method_call(x):
    return x.as_integer_ratio()         # problem: method


def is_zero(x):
    zero = 0  # a name, not the literal: `x is 0` makes CPython warn when it compiles this file
    return x is zero                    # problem: is


def global_stmt(x):
    global FROZEN                       # problem: global  # noqa: PLW0602
    return x


def with_stmt(x):
    with open("f"):                     # problem: with
        pass
    return x


def uses_callee_with_problem(x):
    return one_branch(x)


@pytest.mark.parametrize("fn,marker,kind,words", [
    (one_branch, "problem: unassigned", NameResolutionError, ["'y' may be unassigned", "before the if"]),
    (loop_only, "problem: loop", NameResolutionError, ["'last' may be unassigned", "before the loop"]),
    (read_first, "problem: read first", NameResolutionError, ["'z' is read before"]),
    (rounds_to_digits, "problem: round", UnsupportedCallError, ["round()", "hint:"]),
    (nonlocal_write, "problem: nonlocal", UnsupportedSyntaxError, ["nonlocal x", "hint:"]),
    (returns_lambda, "problem: lambda", UnsupportedSyntaxError, ["'<lambda>' used as a value"]),
    (yields, "problem: yield", UnsupportedSyntaxError, ["yield"]),
    (is_zero, "problem: is", UnsupportedSyntaxError, ["'is'"]),
    (global_stmt, "problem: global", UnsupportedSyntaxError, ["global statement"]),
    (with_stmt, "problem: with", UnsupportedSyntaxError, ["with statement"]),
])
def test_error_names_the_construct_file_line_and_caret(fn, marker, kind, words):
    error = compile_error(fn)
    assert isinstance(error, kind)
    message = str(error)
    assert f'File "{__file__}", line {line_of(fn, marker)}' in message
    assert "^" in message
    for word in words:
        assert word in message


def test_a_method_of_a_value_that_is_not_an_object_is_refused_with_its_type():
    """`x.as_integer_ratio()` is a call on an object for the frontend (frontend/methods.py): the
    type decides, so the refusal comes from type inference, located as any other."""
    with pytest.raises(TypingError) as info:
        jit(method_call)(1.5)
    message = str(info.value)
    assert "'as_integer_ratio' of f64 is not a method" in message
    assert f'File "{__file__}", line {line_of(method_call, "problem: method")}' in message


def test_every_problem_of_a_function_is_reported_at_once():
    error = compile_error(many_problems)
    assert isinstance(error, UnsupportedSyntaxError)  # the kind of the first problem
    lines = [p.loc.line for p in error.problems]
    assert lines == [line_of(many_problems, f"problem: {w}")
                     for w in ("set", "try", "open", "undefined")]
    message = str(error)
    assert message.startswith("4 problems:")
    for word in ("set display", "try statement", "call to 'open'", "'undefined_thing'"):
        assert word in message


def test_problems_of_callees_are_reported_too():
    error = compile_error(uses_callee_with_problem)
    assert [p.loc.line for p in error.problems] == [line_of(one_branch, "problem: unassigned")]


def test_star_parameters_are_rejected():
    assert "*args" in str(compile_error(star_params))


def test_source_must_be_available():
    namespace = {}
    exec("def made(x):\n    return x\n", namespace)  # noqa: S102
    for fn in (namespace["made"], len, math.sqrt):
        with pytest.raises(SourceUnavailableError):
            lower_function(fn)


def odd_syntax_1(x):
    a, *b = (1, 2)
    del a
    assert x
    import os  # noqa: F401
    return {x: 1}, {x}, f"{x}", x[1:], (y := 2), b"b", 1j, ..., [i for i in b]  # noqa: F841


def odd_syntax_2(x):
    class K:
        pass
    for e in [1, 2]:
        x += e
    for e in x:
        x @= e
    match x:
        case 1:
            pass
    x.a = x[0] = 1
    return x.a(1)(2) + K() + nonexistent(*x, **x)  # noqa: F821


async def odd_syntax_3(x):
    async with x:
        await x
    async for i in x:
        pass
    return [await x]


def odd_syntax_4(x, f=print):
    try:
        raise ValueError
    except ValueError as err:
        x = err
    finally:
        x = 1
    return range(x), min(x), int(x, 2), abs(x, y=1), math.gcd(x), math.nope, len()


@pytest.mark.parametrize("fn", [odd_syntax_1, odd_syntax_2, odd_syntax_3, odd_syntax_4])
def test_any_syntax_gives_compile_errors_never_internal_ones(fn):
    error = compile_error(fn)
    assert "internal error" not in str(error)
    assert len(error.problems) >= 5
    for problem in error.problems:
        assert problem.loc.filename == __file__ and problem.loc.text


def test_a_frontend_bug_is_still_a_compile_error(monkeypatch):
    from astjit.frontend import module

    def broken(state, graph_name):
        raise KeyError("oops")
    monkeypatch.setattr(module, "lower_graph", broken)
    with pytest.raises(CompileError, match="internal error.*KeyError") as info:
        lower_function(named_values)
    assert isinstance(info.value.__cause__, KeyError)


# ---- random programs ---------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
strategies = hypothesis.strategies


def load_program(source: str, directory) -> object:
    """`prog` from `source`, imported from a real file so that its source can be read."""
    path = directory / "prog.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"prog_{directory.name}", path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    return program.prog


@hypothesis.settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "60")), deadline=None,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(data=strategies.data())
def test_random_programs_interpret_like_cpython(tmp_path_factory, data):
    from program_gen import programs

    source = data.draw(programs())
    args = data.draw(strategies.tuples(strategies.integers(-50, 50), strategies.integers(-50, 50),
                                       strategies.floats(-20, 20),
                                       strategies.sampled_from([0.0, -0.0, 1.0, -3.5])))
    fn = load_program(source, tmp_path_factory.mktemp("programs"))
    module = lower_function(fn)
    verify_module(module, typed=False)
    expected = outcome(fn, args)
    got = outcome(lambda *a: interp.interpret(module, list(a)), args)
    assert expected[0] == got[0] and same(expected[1], got[1]), f"{source}\n{args}: {expected} {got}"
