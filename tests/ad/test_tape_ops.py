"""Tapes and the other primitives derivative code uses, on hand-built typed graphs: compiled
code against the interpreter, memory (growth, no leaks on any exit, out of memory), the
passes keeping allocation and release, the verifier, printer and DOT export."""
import copy
import ctypes
import ctypes.util
import math
import os
import subprocess
import sys

import pytest
from ir_builders import const, graph_of, module_of, op

from astjit.backend.llvm import build_entry, messages
from astjit.ir.core import Graph
from astjit.ir.dot import format_dot
from astjit.ir.interp import interpret
from astjit.ir.ops import EXCEPTIONS, OPS
from astjit.ir.passes import eliminate_common_subexpressions, eliminate_dead_code, optimize, simplify
from astjit.ir.passes.effects import has_effects
from astjit.ir.printer import format_module
from astjit.ir.types import BOOL, F32, F64, I32, I64, NONE, TapeType, TupleType
from astjit.ir.verify import IRVerificationError, verify_module

REC = TupleType((F64, I64))
INF, NAN = math.inf, math.nan


# ---- building graphs -------------------------------------------------------------------

def while_loop(g, invariants, carried, cond, body):
    """A `while` node; `cond(region, params)` gives its bool, `body(region, params)` the new
    carried values (params are the invariants, then the carried values)."""
    types = [v.type for v in invariants + carried]
    regions = [graph_of("cond", *types), graph_of("body", *types)]
    regions[0].outputs = [cond(regions[0], regions[0].params)]
    regions[1].outputs = body(regions[1], regions[1].params)
    return g.add("while", invariants + carried, len(carried), attrs={"n_invariants": len(invariants)},
                 regions=regions, types=[v.type for v in carried]).outputs


def count_up(g, n, carried, step, extra=()):
    """`for i in range(n)` carrying `carried`: step(region, i, values) -> new values; the
    `extra` invariants are the region's params 1, 2, ..."""
    first = 1 + len(extra)

    def body(r, p):
        i = p[first]
        return [op(r, "add", [i, const(r, 1, I64)], I64)] + step(r, i, p[first + 1:])
    outs = while_loop(g, [n, *extra], [const(g, 0, I64)] + carried,
                      lambda r, p: op(r, "lt", [p[first], p[0]], BOOL), body)
    return outs[1:]


def raise_at(r, i, k):
    """ValueError('k') when i == k."""
    r.add("raise_if", [op(r, "eq", [i, k], BOOL)], attrs={"exc": "ValueError", "message": "k"},
          types=[NONE])


def count_down(g, tape, start, carried, step):
    """`for j in range(start, -1, -1)` with `tape` invariant: step(region, tape, j, values)."""
    def body(r, p):
        j = p[1]
        return [op(r, "sub", [j, const(r, 1, I64)], I64)] + step(r, p[0], j, p[2:])
    outs = while_loop(g, [tape], [start] + carried,
                      lambda r, p: op(r, "ge", [p[1], const(r, 0, I64)], BOOL), body)
    return outs[1:]


def record_replay(free=True):
    """(n, x, k): push (acc, i) for i < n (acc = acc / 2 + i; raise at i == k), then read
    them back in reverse: s = 1.5 s + acc_i - i. Returns (s, acc)."""
    g = graph_of("replay", I64, F64, I64)
    n, x, k = g.params
    tape = op(g, "tape_new", [], TapeType(REC), element=REC)

    def forward(r, i, values):
        t, acc = values
        raise_at(r, i, r.params[1])
        pushed = op(r, "tape_push", [t, op(r, "tuple", [acc, i], REC)], t.type)
        half = op(r, "mul", [acc, const(r, 0.5, F64)], F64)
        return [pushed, op(r, "add", [half, op(r, "cast", [i], F64, to=F64)], F64)]

    recorded, acc = count_up(g, n, [tape, x], forward, extra=[k])

    def backward(r, t, j, values):
        (s,) = values
        entry = op(r, "tape_get", [t, j], REC)
        a, i = op(r, "getitem", [entry], F64, index=0), op(r, "getitem", [entry], I64, index=1)
        grown = op(r, "add", [op(r, "mul", [s, const(r, 1.5, F64)], F64), a], F64)
        return [op(r, "sub", [grown, op(r, "cast", [i], F64, to=F64)], F64)]

    last = op(g, "sub", [n, const(g, 1, I64)], I64)
    (total,) = count_down(g, recorded, last, [const(g, 0.0, F64)], backward)
    if free:
        g.add("tape_free", [recorded], types=[NONE])
    g.outputs = [op(g, "tuple", [total, acc], TupleType((F64, F64)))]
    return module_of(g)


class Handler:
    def __init__(self):
        self.errors = []

    def __call__(self, status):
        name, message, _ = self.errors[status - 1]
        raise EXCEPTIONS[name](message)


def compile_module(module):
    verify_module(module, typed=True)
    handler = Handler()

    def fallback(*args):
        raise AssertionError(f"unexpected fallback with {args}")
    entry = build_entry(module, fallback, handler)
    handler.errors = entry.errors
    return entry


def same(a, b):
    if isinstance(a, tuple):
        return type(b) is tuple and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return type(a) is type(b) and a == b


def check_against_interpreter(module, cases):
    call = compile_module(module).call
    for args in cases:
        want, got = interpret(module, list(args)), call(*args)
        assert same(got, want), (args, got, want)


# ---- tapes: compiled code against the interpreter -----------------------------------------

def test_record_and_replay_in_reverse():
    sizes = [0, 1, 2, 15, 16, 17, 33, 1000, 100_000, -5]
    check_against_interpreter(record_replay(), [(n, 0.25, -1) for n in sizes])


def test_replay_without_free_and_with_errors_midway():
    check_against_interpreter(record_replay(free=False), [(n, 1.0, -1) for n in (0, 17, 5000)])
    entry = compile_module(record_replay())
    for call in (entry.call, lambda *args: interpret(record_replay(), list(args))):
        with pytest.raises(ValueError, match="k"):
            call(50, 1.0, 20)


def element_of(r, i, t):
    """A value of type `t` made from the int `i`."""
    if isinstance(t, TupleType):
        parts = [element_of(r, op(r, "add", [i, const(r, k, I64)], I64), e)
                 for k, e in enumerate(t.elements)]
        return op(r, "tuple", parts, t)
    if t == NONE:
        return const(r, None, NONE)
    return op(r, "cast", [i], t, to=t)


ELEMENTS = [F64, F32, I64, I32, BOOL, NONE, TupleType(()), REC,
            TupleType((BOOL, F32, TupleType((I64, NONE, F64)), BOOL))]


@pytest.mark.parametrize("element", ELEMENTS, ids=str)
def test_elements_of_every_type_read_back(element):
    g = graph_of("nth", I64, I64)
    n, k = g.params
    tape = op(g, "tape_new", [], TapeType(element), element=element)
    (filled,) = count_up(g, n, [tape], lambda r, i, v: [
        op(r, "tape_push", [v[0], element_of(r, i, element)], v[0].type)])
    g.outputs = [op(g, "tape_get", [filled, k], element)]
    g.add("tape_free", [filled], types=[NONE])
    check_against_interpreter(module_of(g), [(40, k) for k in (0, 1, 15, 16, 17, 39)])


def tape_maker():
    """@make(n) -> tape<f64> holding 0.5 i for i < n; the caller owns it."""
    make = graph_of("make", I64)
    tape = op(make, "tape_new", [], TapeType(F64), element=F64)
    (make_out,) = count_up(make, make.params[0], [tape], lambda r, i, v: [
        op(r, "tape_push", [v[0], op(r, "mul", [op(r, "cast", [i], F64, to=F64),
                                                const(r, 0.5, F64)], F64)], v[0].type)])
    make.outputs = [make_out]
    return make


@pytest.mark.parametrize("how", ["callee frees", "caller frees", "nobody frees"])
def test_tapes_returned_by_calls(how):
    g = graph_of("use", I64)
    (n,) = g.params
    t = op(g, "call", [n], TapeType(F64), callee="make")
    last = op(g, "sub", [n, const(g, 1, I64)], I64)
    (total,) = count_down(g, t, last, [const(g, 0.0, F64)], lambda r, tape, j, v: [
        op(r, "add", [v[0], op(r, "tape_get", [tape, j], F64)], F64)])
    graphs = [g, tape_maker()]
    if how == "callee frees":
        free = graph_of("release", TapeType(F64))
        free.outputs = [op(free, "tape_free", free.params, NONE)]
        op(g, "call", [t], NONE, callee="release")
        graphs.append(free)
    elif how == "caller frees":
        g.add("tape_free", [t], types=[NONE])
    g.outputs = [total]
    module = module_of(*graphs)
    check_against_interpreter(module, [(n,) for n in (0, 1, 100, 3000)])


def tapes_across_calls():
    """@use(n, k): makes a tape, has @extend push n values onto it (and onto a scratch tape
    of its own, which it never frees; raising at i == k), gets (tape, count) from @pair and
    frees only the first tape. Every tape is somebody's to free, on every exit."""
    extend = graph_of("extend", TapeType(F64), I64, I64)
    t, n, k = extend.params
    scratch = op(extend, "tape_new", [], TapeType(I64), element=I64)

    def push_both(r, i, v):
        raise_at(r, i, r.params[1])
        x = op(r, "cast", [i], F64, to=F64)
        return [op(r, "tape_push", [v[0], x], v[0].type), op(r, "tape_push", [v[1], i], v[1].type)]
    extend.outputs = count_up(extend, n, [t, scratch], push_both, extra=[k])[:1]
    pair = graph_of("pair", I64)
    pair_type = TupleType((TapeType(F64), I64))
    made = op(pair, "call", pair.params, TapeType(F64), callee="make")
    pair.outputs = [op(pair, "tuple", [made, pair.params[0]], pair_type)]
    g = graph_of("use", I64, I64)
    own = op(g, "tape_new", [], TapeType(F64), element=F64)
    mine = op(g, "call", [own, *g.params], TapeType(F64), callee="extend")
    got = op(g, "call", [g.params[0]], pair_type, callee="pair")
    theirs = op(g, "getitem", [got], TapeType(F64), index=0)
    last = op(g, "sub", [g.params[0], const(g, 1, I64)], I64)
    (total,) = count_down(g, theirs, last, [const(g, 0.0, F64)], lambda r, tape, j, v: [
        op(r, "add", [v[0], op(r, "tape_get", [tape, j], F64)], F64)])
    g.add("tape_free", [mine], types=[NONE])
    g.outputs = [total]
    return module_of(g, extend, pair, tape_maker())


# ---- memory ------------------------------------------------------------------------------

def resident_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def assert_no_leak(step, calls=10_000):
    """Resident memory grows by less than 8 MB over `calls` calls (after a warm-up)."""
    for _ in range(200):
        step()
    before = resident_bytes()
    for _ in range(calls):
        step()
    growth = resident_bytes() - before
    assert growth < 8 << 20, f"resident memory grew by {growth} bytes over {calls} calls"


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")


@needs_proc
@pytest.mark.parametrize("variant", ["freed", "never freed", "raising midway", "returned"])
def test_no_leak_over_many_calls(variant):
    """Each call records 1000 entries (16 kB: 160 MB over 10^4 calls if leaked)."""
    if variant == "returned":
        g = graph_of("use", I64)
        t = op(g, "call", g.params, TapeType(F64), callee="make")
        g.outputs = [op(g, "tape_get", [t, const(g, 999, I64)], F64)]
        call = compile_module(module_of(g, tape_maker())).call
        assert call(1000) == 499.5
        assert_no_leak(lambda: call(1000))
        return
    module = record_replay(free=variant == "freed")
    call = compile_module(module).call
    if variant == "raising midway":
        def step():
            with pytest.raises(ValueError):
                call(2000, 1.0, 1000)
        assert_no_leak(step)
    else:
        assert_no_leak(lambda: call(1000, 1.0, -1))


@needs_proc
def test_no_leak_across_calls_on_any_exit():
    module = tapes_across_calls()
    check_against_interpreter(module, [(n, -1) for n in (0, 1, 17, 1000)])
    call = compile_module(module).call
    assert_no_leak(lambda: call(1000, -1))

    def step():
        with pytest.raises(ValueError):
            call(1000, 999)
    assert_no_leak(step)


OUT_OF_MEMORY = """
import resource, sys
sys.path[:0] = {paths!r}
from test_tape_ops import compile_module, record_replay
entry = compile_module(record_replay())
assert entry.call(10, 1.0, -1) == entry.call(10, 1.0, -1)
with open("/proc/self/statm") as statm:
    size = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), resource.RLIM_INFINITY))
try:
    entry.call(10 ** 9, 1.0, -1)
except Exception as exc:
    print(type(exc).__name__, exc)
print(entry.call(100, 1.0, -1) == entry.call(100, 1.0, -1))
"""


@needs_proc
def test_out_of_memory_is_an_error_status_not_a_crash():
    here = os.path.dirname(__file__)  # this file, and ir_builders in ../support
    script = OUT_OF_MEMORY.format(paths=[here, os.path.join(os.path.dirname(here), "support")])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{messages.OUT_OF_MEMORY} {messages.TAPE_MEMORY}", "True"]


# ---- the passes keep allocation and release -------------------------------------------------

def ops_in(module):
    return [node.op for graph in module.graphs.values() for node in graph.walk()]


def test_cse_keeps_two_tape_new_and_dce_keeps_tape_free():
    g = graph_of("two", I64)
    tapes = [op(g, "tape_new", [], TapeType(F64), element=F64) for _ in range(2)]
    pushed = [op(g, "tape_push", [t, const(g, 2.0, F64)], t.type) for t in tapes]
    pushed[1] = op(g, "tape_push", [pushed[1], const(g, 3.0, F64)], TapeType(F64))
    reads = [op(g, "tape_get", [pushed[0], const(g, 0, I64)], F64),
             op(g, "tape_get", [pushed[1], g.params[0]], F64)]
    again = op(g, "tape_get", [pushed[0], const(g, 0, I64)], F64)
    for t in pushed:
        g.add("tape_free", [t], types=[NONE])
    g.outputs = [op(g, "tuple", [*reads, again], TupleType((F64, F64, F64)))]
    module = module_of(g)
    before = ops_in(module)
    eliminate_dead_code(eliminate_common_subexpressions(module))
    after = ops_in(module)
    verify_module(module, typed=True)
    assert after.count("tape_new") == 2 and after.count("tape_free") == 2
    assert after.count("tape_push") == 3 and after.count("tape_get") == before.count("tape_get") - 1
    assert interpret(module, [0]) == (2.0, 2.0, 2.0)
    assert compile_module(module).call(1) == (2.0, 3.0, 2.0)


def test_optimize_keeps_the_tape_program():
    module = record_replay()
    optimized = optimize(copy.deepcopy(module), verify=lambda m: verify_module(m, typed=True))
    assert sorted(ops_in(optimized)).count("tape_free") == 1
    assert ops_in(optimized).count("tape_new") == 1
    for args in [(0, 0.5, -1), (40, -1.0, -1)]:
        assert same(interpret(optimized, list(args)), interpret(module, list(args)))
        assert same(compile_module(optimized).call(*args), interpret(module, list(args)))


def test_tape_ops_have_effects():
    g = graph_of("g", TapeType(F64), I64)
    nodes = [g.add(name, inputs, attrs=attrs, types=[t]) for name, inputs, attrs, t in [
        ("tape_new", [], {"element": F64}, TapeType(F64)),
        ("tape_push", [g.params[0], const(g, 1.0, F64)], {}, TapeType(F64)),
        ("tape_free", [g.params[0]], {}, NONE),
        ("tape_get", g.params, {}, F64)]]
    assert all(has_effects(n) for n in nodes)


def test_a_tape_read_is_not_speculated():
    """`if c: x = t[j] else: x = 0.0` stays an `if`: j may be out of range when c is false."""
    g = graph_of("guarded", TapeType(F64), I64, BOOL)
    then, other = graph_of("then", TapeType(F64), I64), graph_of("else", TapeType(F64), I64)
    then.outputs = [op(then, "tape_get", then.params, F64)]
    other.outputs = [const(other, 0.0, F64)]
    g.outputs = [g.add("if", [g.params[2], *g.params[:2]], regions=[then, other],
                       types=[F64]).outputs[0]]
    module = simplify(module_of(g))
    assert "if" in ops_in(module) and "select" not in ops_in(module)


# ---- verifier, printer, DOT -------------------------------------------------------------------

def test_printer_and_dot_show_tapes():
    text = format_module(record_replay(), locations=False)
    assert "%0 = tape_new : tape<tuple<f64, i64>>" in text
    assert "tape_push" in text and "tape_get" in text and "tape_free" in text
    assert ": tape<tuple<f64, i64>>" in text
    dot = format_dot(record_replay())
    assert "tape_new\\ntape<tuple<f64, i64>>" in dot
    g = Graph("untyped")
    g.outputs = [g.add("tape_new", [], attrs={"element": F64}).outputs[0]]
    assert "tape_new {element=f64}" in format_module(module_of(g))


def test_verifier_checks_tape_types_and_use_after_free():
    verify_module(record_replay(), typed=True)
    g = graph_of("bad", TapeType(F64))
    op(g, "tape_push", [g.params[0], const(g, 1, I64)], TapeType(F64))
    g.outputs = [g.params[0]]
    with pytest.raises(IRVerificationError, match="cannot push i64 onto tape<f64>"):
        verify_module(module_of(g), typed=True)
    g = graph_of("after_free", TapeType(F64))
    more = op(g, "tape_push", [g.params[0], const(g, 1.0, F64)], TapeType(F64))
    g.add("tape_free", [more], types=[NONE])
    g.outputs = [op(g, "tape_get", [g.params[0], const(g, 0, I64)], F64)]
    with pytest.raises(IRVerificationError, match="freed"):
        verify_module(module_of(g), typed=True)


# ---- the IEEE and saturating primitives ------------------------------------------------------

FLOATS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.0, -8.0, 1e308, -1e308, 5e-324, 0.1,
          INF, -INF, NAN, 2.5, 1 / 3, 400.0, -400.0]
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
LIBM.pow.restype, LIBM.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]


def leaf(name, in_types, out_type):
    g = graph_of(name, *in_types)
    g.outputs = [op(g, name, g.params, out_type)]
    return module_of(g)


def test_fdiv_is_ieee_division():
    module = leaf("fdiv", [F64, F64], F64)
    check_against_interpreter(module, [(a, b) for a in FLOATS for b in FLOATS])


def test_powr_is_c_pow():
    call = compile_module(leaf("powr", [F64, F64], F64)).call
    for a in FLOATS:
        for b in FLOATS:
            assert same(call(a, b), LIBM.pow(a, b)), (a, b)
            reference = OPS["powr"].evaluate(a, b)
            assert same(call(a, b), reference), (a, b)


def test_f32_fdiv_and_powr():
    for name in ("fdiv", "powr"):
        g = graph_of(name, F64, F64)
        narrow = [op(g, "cast", [p], F32, to=F32) for p in g.params]
        g.outputs = [op(g, "cast", [op(g, name, narrow, F32)], F64, to=F64)]
        check_against_interpreter(module_of(g), [(7.0, 3.0), (2.0, 0.5), (1.0, 0.0), (-1.0, 0.5)])


def test_stop_gradient_is_the_identity():
    for t, values in [(F64, [0.0, -0.0, NAN, INF, 2.5]), (I64, [0, -(2 ** 63), 7])]:
        check_against_interpreter(leaf("stop_gradient", [t], t), [(v,) for v in values])


def test_add_sat_clamps_to_int64():
    big = 2 ** 63 - 1
    values = [0, 1, -1, 7, big, -big - 1, big - 1, -big, 2 ** 62]
    module = leaf("add_sat", [I64, I64], I64)
    check_against_interpreter(module, [(a, b) for a in values for b in values])
    assert compile_module(module).call(big, 1) == big
    assert compile_module(module).call(-big - 1, -1) == -big - 1
