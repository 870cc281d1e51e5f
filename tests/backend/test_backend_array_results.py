"""Arrays compiled code makes and returns, on hand-built typed graphs: allocation through
NumPy's C API (every dtype, fill and ndim; NumPy's errors), arange, returning new arrays,
arguments and views, arrays in tuples, calls handing arrays over, and ownership: the
retains and releases the retain/release pass would insert, written here by hand; no leak in
allocating loops or on error exits, argument refcounts unchanged."""
import gc
import math
import re
import sys
import tracemalloc
import weakref

import numpy as np
import pytest
from array_checks import expect
from ir_builders import Handler, compile_module, const, counted_loop, graph_of, module_of, no_fallback, op
from llvmlite import ir

from astjit.backend.llvm import aggregate_abi, owned
from astjit.backend.llvm.codegen import OK, emit_module
from astjit.backend.llvm.jit.engine import engine, runtime_llvm_ir
from astjit.backend.llvm.lltypes import ARRAY_DATA, ARRAY_OWNER, ARRAY_SHAPE, ARRAY_STRIDES, I64_T
from astjit.backend.llvm.runtime import numpy_api, pyapi
from astjit.backend.llvm.runtime.entry import EntryPins, make_builtin
from astjit.backend.llvm.runtime.wrapper import emit_wrapper
from astjit.ir.analysis import written_parameters
from astjit.ir.interp import interpret
from astjit.ir.types import BOOL, F32, F64, I64, NONE, ArrayType, TupleType

A0, A1, A2 = (ArrayType(F64, n) for n in (0, 1, 2))
INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
NAMES = {F64: "float64", F32: "float32", I64: "int64", BOOL: "bool"}
FILL_VALUES = {F64: 2.5, F32: np.float32(0.1), I64: -7, BOOL: True}
"""A fill argument of each type: an f32 parameter takes a NumPy float32 (a strong scalar)."""


# ---- building graphs -------------------------------------------------------------------

def release(graph, array):
    graph.add("array_release", [array], types=[NONE])


def retain(graph, array):
    return op(graph, "array_retain", [array], array.type)


def raise_if(graph, cond, message="k"):
    graph.add("raise_if", [cond], attrs={"exc": "ValueError", "message": message}, types=[NONE])


def new_module(dtype, ndim, fill):
    """make(*dims[, value]) -> np.empty/zeros/ones/full(dims, dtype)."""
    params = [I64] * ndim + ([dtype] if fill == "value" else [])
    g = graph_of("make", *params)
    g.outputs = [op(g, "array_new", g.params, ArrayType(dtype, ndim), dtype=dtype, fill=fill)]
    return module_of(g)


def outcome(f, *args):
    """('ok', result) or (exception type name, message)."""
    try:
        return "ok", f(*args)
    except Exception as exc:  # noqa: BLE001
        return type(exc).__name__, str(exc)


def assert_fresh(result, dtype, shape):
    """A new C-contiguous ndarray that owns its memory."""
    assert type(result) is np.ndarray
    assert result.dtype == np.dtype(NAMES[dtype]) and result.shape == shape
    assert result.flags.c_contiguous and result.flags.owndata and result.flags.writeable
    assert result.base is None


def traced(snapshot):
    """Bytes of a snapshot's traces. NumPy traces even a failed allocation (at address 0,
    with the size asked for); such impossible sizes are left out."""
    return sum(trace.size for trace in snapshot.traces if trace.size < 2 ** 40)


def traced_growth(run, repeat=3):
    """Bytes still traced (every domain, NumPy's included) after `run()`, after a warm-up."""
    run()
    gc.collect()
    tracemalloc.start()
    try:
        before = traced(tracemalloc.take_snapshot())
        for _ in range(repeat):
            run()
        gc.collect()
        return traced(tracemalloc.take_snapshot()) - before
    finally:
        tracemalloc.stop()


# ---- allocation -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F64, F32, I64, BOOL])
@pytest.mark.parametrize("fill", [None, 0, 1, "value"])
@pytest.mark.parametrize("ndim", [0, 1, 2, 3])
def test_new_arrays_of_every_dtype_fill_and_ndim(dtype, fill, ndim):
    module = new_module(dtype, ndim, fill)
    call = compile_module(module).call
    for shape in [(3, 4, 5)[:ndim], (2, 0, 3)[:ndim], (1, 7, 1)[:ndim]]:
        args = list(shape) + ([FILL_VALUES[dtype]] if fill == "value" else [])
        result = call(*args)
        assert_fresh(result, dtype, shape)
        assert sys.getrefcount(result) == 2  # held only by the caller
        if fill is not None:
            want = interpret(module, args)
            assert want.dtype == result.dtype and np.array_equal(result, want)
        if result.size and dtype != BOOL:
            result[(0,) * ndim] = 1  # writeable, and the elements are the array's own
            assert result[(0,) * ndim] == 1


def test_new_arrays_match_numpy_element_for_element():
    assert compile_module(new_module(F32, 1, "value")).call(3, np.float32(0.1)).tolist() == \
        np.full(3, 0.1, np.float32).tolist()
    assert compile_module(new_module(BOOL, 2, 1)).call(2, 2).tolist() == [[True] * 2] * 2
    assert compile_module(new_module(BOOL, 1, "value")).call(3, False).tolist() == [False] * 3
    big = compile_module(new_module(F64, 1, 0)).call(1 << 20)
    assert not big.any()
    nan = compile_module(new_module(F64, 1, "value")).call(5, math.nan)
    assert np.isnan(nan).all()


@pytest.mark.parametrize("shape", [(-1,), (3, -2), (-1, 2 ** 62, 4), (2 ** 62, 4, -1),
                                   (0, 2 ** 62, 4), (2 ** 62, 0, 4), (2 ** 31, 2 ** 31, 2),
                                   (2 ** 30, 2 ** 30, 8), (2 ** 30, 2 ** 30, 0), (0, -1, 0),
                                   (1, 1, INT64_MAX), (INT64_MIN, 1, 1)])
def test_dimension_errors_are_numpys(shape):
    module = new_module(F64, len(shape), None)
    call = compile_module(module).call
    got, want = outcome(call, *shape), outcome(interpret, module, list(shape))
    if want[0] == "MemoryError":
        assert got[0] == "MemoryError"
    elif want[0] == "ok":
        assert got[0] == "ok" and got[1].shape == want[1].shape
    else:
        assert got == want


def test_out_of_memory_is_a_memory_error_and_clears_numpys():
    call = compile_module(new_module(F64, 2, 1)).call
    for _ in range(3):
        expect(MemoryError, call, 2 ** 25, 2 ** 25)  # 8 PiB
        assert call(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("like", [np.arange(12.0).reshape(3, 4), np.ones((3, 4), order="F"),
                                  np.arange(20.0).reshape(4, 5)[::2, ::-2], np.zeros((0, 3)),
                                  np.ones((1, 5))[:, ::2]])
@pytest.mark.parametrize("dtype", [None, F64, I64, BOOL])
@pytest.mark.parametrize("fill", [None, 0, 1, "value"])
def test_new_like_takes_the_shape_in_c_order(like, dtype, fill):
    out_dtype = dtype or F64
    g = graph_of("like", A2, *([out_dtype] if fill == "value" else []))
    attrs = {"fill": fill} | ({"dtype": dtype} if dtype else {})
    g.outputs = [op(g, "array_new_like", g.params, ArrayType(out_dtype, 2), **attrs)]
    module = module_of(g)
    args = [like] + ([FILL_VALUES[out_dtype]] if fill == "value" else [])
    before = sys.getrefcount(like)
    result = compile_module(module).call(*args)
    assert_fresh(result, out_dtype, like.shape)
    if fill is not None:
        assert np.array_equal(result, interpret(module, args))
    assert sys.getrefcount(like) == before


def test_new_arrays_from_read_only_arrays_are_writeable():
    """zeros_like(x) is a new array: writing into it needs no writeable x."""
    g = graph_of("scratch", A1)
    y = op(g, "array_new_like", g.params, A1, fill=0)
    g.add("array_set", [y, const(g, 4.0, F64), const(g, 0, I64)], types=[NONE])
    g.outputs = [y]
    module = module_of(g)
    assert written_parameters(module) == {}
    x = np.arange(3.0)
    x.flags.writeable = False
    assert compile_module(module).call(x).tolist() == [4.0, 0.0, 0.0]


def test_fill_loops_vectorize():
    """The fill is a shared function: compiled once, in the process's runtime module."""
    entry = compile_module(new_module(F64, 2, "value"))
    assert re.search(r'declare .*@"?astjit\.array\.fill\.double"?\(', entry.llvm_ir)
    fill = re.search(r'^define .*@"?astjit\.array\.fill\.double"?\(.*?^}', runtime_llvm_ir(),
                     re.M | re.S).group(0)
    assert "vector.body" in fill or "memset" in fill


# ---- arange ---------------------------------------------------------------------------------

INT_RANGES = [(5,), (0,), (-3,), (2, 9), (9, 2), (0, 10, 3), (10, 0, -3), (5, 0, -1),
              (-7, 7, 2), (3, 3, 1), (0, 1, 10 ** 18), (0, 2 ** 62, 2 ** 60), (1, -1, -1),
              (INT64_MIN, INT64_MAX, 2 ** 62), (INT64_MAX, INT64_MIN, -(2 ** 62)),
              (INT64_MAX - 1, INT64_MAX, 1), (INT64_MIN, INT64_MIN + 3, 1),
              (0, 5, 0), (0, 0, 0), (INT64_MIN, INT64_MAX), (0, 2 ** 60), (0, INT64_MIN, 1),
              (-5, INT64_MAX, INT64_MAX), (INT64_MAX, -5, INT64_MIN), (-(2 ** 62), INT64_MAX, 1)]
FLOAT_RANGES = [(5.0,), (0.5,), (-1.0,), (0.1, 1.0, 0.3), (1.0, 0.0, -0.1), (0.0, 1.0, 0.1),
                (-1.5, 2.5, 0.5), (1.0, 2.0, -0.5), (0.0, 1.0, math.inf), (0.0, -1.0, math.inf),
                (0.0, 1.0, -math.inf), (0.0, 1e-320, 1e300), (1e16, 1e16 + 10.0, 1.0),
                (2.0, 2.0, 1.0), (1e308, -1e308, -1e307), (0.0, 1.0, 1e308),
                (0.0, 5.0, 0.0), (1.0, 1.0, 0.0), (0.0, math.nan, 1.0), (0.0, 1.0, math.nan),
                (0.0, math.inf, 1.0), (-math.inf, math.inf, 1.0), (math.inf, math.inf, 1.0),
                (0.0, 1e300, 1e-300), (0.0, 2.0 ** 63 + 2.0 ** 11, 1.0), (0.0, 2.0 ** 60, 1.0),
                (0.0, -(2.0 ** 63 + 2.0 ** 11), -1.0)]
"""Not here: a length of exactly 2**63 (np.arange(0.0, 2.0**63) or np.arange(0, -2**63, -1)),
where NumPy's C cast of 2.0**63 to npy_intp is undefined (an empty array on x86-64); compiled
code reports it as "Maximum allowed size exceeded"."""


@pytest.mark.parametrize("args", INT_RANGES + FLOAT_RANGES, ids=str)
def test_arange_is_numpys(args):
    """Elements bit for bit, errors message for message (MemoryError: only the type)."""
    t = F64 if isinstance(args[0], float) else I64
    g = graph_of("span", *[t] * len(args))
    g.outputs = [op(g, "array_arange", g.params, ArrayType(t, 1))]
    module = module_of(g)
    got, want = outcome(compile_module(module).call, *args), outcome(np.arange, *args)
    if want[0] != "ok":
        assert outcome(interpret, module, list(args)) == want
    if want[0] in ("ok", "MemoryError"):
        assert got[0] == want[0], (got, want)
    else:
        assert got == want
    if want[0] == "ok":
        assert_fresh(got[1], t, want[1].shape)
        assert got[1].dtype == want[1].dtype and got[1].tobytes() == want[1].tobytes()


def test_arange_in_a_loop_sums_like_python():
    """sum over k < n of sum(arange(k)), releasing each range."""
    g = graph_of("triangles", I64)
    (n,) = g.params

    def body(r, inv, car, k):
        span = op(r, "array_arange", [k], ArrayType(I64, 1))
        m = op(r, "array_dim", [span], I64, axis=0)

        def inner(r2, inv2, car2, j):
            return [op(r2, "add", [car2[0], op(r2, "array_get", [inv2[0], j], I64)], I64)]
        (s,) = counted_loop(r, m, [span], [car[0]], inner)
        release(r, span)
        return [s]
    (total,) = counted_loop(g, n, [], [const(g, 0, I64)], body)
    g.outputs = [total]
    call = compile_module(module_of(g)).call
    assert call(200) == sum(k * (k - 1) // 2 for k in range(200))
    assert traced_growth(lambda: call(300)) < 4096


# ---- returning arrays --------------------------------------------------------------------------

def test_a_returned_new_array_is_the_callers_only_reference():
    call = compile_module(new_module(F64, 1, 0)).call
    result = call(10)
    assert_fresh(result, F64, (10,))
    assert sys.getrefcount(result) == 2
    alive = weakref.ref(result)
    del result
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("x", [np.arange(5.0), np.arange(12.0).reshape(3, 4)[::2, ::-1],
                               np.ones((3, 4), order="F"), np.zeros((0, 4)), np.ones((1, 4)),
                               np.ones((4, 1)), np.array(3.0), np.arange(6.0)[::2]], ids=repr)
def test_returning_a_retained_argument_gives_the_same_object(x):
    t = ArrayType(F64, x.ndim)
    g = graph_of("same", t)
    g.outputs = [retain(g, g.params[0])]
    call = compile_module(module_of(g)).call
    before = sys.getrefcount(x)
    for _ in range(1000):
        assert call(x) is x
    assert sys.getrefcount(x) == before


def test_returning_one_of_two_retained_references():
    """r1 = retain(x); r2 = retain(x); release(r1); return r2."""
    g = graph_of("twice", A1)
    r1, r2 = retain(g, g.params[0]), retain(g, g.params[0])
    release(g, r1)
    g.outputs = [r2]
    call = compile_module(module_of(g)).call
    x = np.arange(3.0)
    before = sys.getrefcount(x)
    for _ in range(1000):
        assert call(x) is x
    assert sys.getrefcount(x) == before


def view_entry(transform):
    """The fast entry of `view(x: array<f64, 1>) -> array<f64, 1>` whose core returns an owned
    reference to `transform(builder, x)`, an array value over x's memory (no IR op makes
    views yet, so the core is written in LLVM directly)."""
    g = graph_of("view", A1)
    g.outputs = [retain(g, g.params[0])]
    module = module_of(g)
    lowered = emit_module(module)
    old = lowered.entry_function
    core = aggregate_abi.declare(lowered.module, aggregate_abi.logical_type(old),
                                 old.name + ".core")
    b = aggregate_abi.AggregateCalls(core.append_basic_block("entry"))
    value = transform(b, aggregate_abi.arguments(b, core)[0])
    b.call(pyapi.declare(lowered.module, "Py_IncRef"), [b.extract_value(value, ARRAY_OWNER)])
    b.store(value, core.args[1])
    b.ret(OK)
    lowered.functions[module.entry] = core
    handler = Handler()
    name = emit_wrapper(lowered, no_fallback, handler)
    pyapi.register_functions()
    compiled = engine().compile_ir(lowered.text)
    handler.errors = lowered.errors
    return make_builtin(compiled, name, "view", EntryPins(None, no_fallback, handler))


def every_other(b, x):
    """x[::2]"""
    n = b.extract_value(x, [ARRAY_SHAPE, 0])
    half = b.sdiv(b.add(n, ir.Constant(I64_T, 1)), ir.Constant(I64_T, 2))
    stride = b.extract_value(x, [ARRAY_STRIDES, 0])
    x = b.insert_value(x, half, [ARRAY_SHAPE, 0])
    return b.insert_value(x, b.mul(stride, ir.Constant(I64_T, 2)), [ARRAY_STRIDES, 0])


def reversed_(b, x):
    """x[::-1]"""
    n = b.extract_value(x, [ARRAY_SHAPE, 0])
    stride = b.extract_value(x, [ARRAY_STRIDES, 0])
    last = b.gep(b.extract_value(x, ARRAY_DATA), [b.mul(b.sub(n, ir.Constant(I64_T, 1)), stride)])
    x = b.insert_value(x, last, ARRAY_DATA)
    return b.insert_value(x, b.neg(stride), [ARRAY_STRIDES, 0])


def tail(b, x):
    """x[1:]"""
    n = b.extract_value(x, [ARRAY_SHAPE, 0])
    stride = b.extract_value(x, [ARRAY_STRIDES, 0])
    x = b.insert_value(x, b.gep(b.extract_value(x, ARRAY_DATA), [stride]), ARRAY_DATA)
    return b.insert_value(x, b.sub(n, ir.Constant(I64_T, 1)), [ARRAY_SHAPE, 0])


@pytest.mark.parametrize("transform, index", [(every_other, np.s_[::2]),
                                              (reversed_, np.s_[::-1]), (tail, np.s_[1:])])
def test_returning_a_view_of_an_argument(transform, index):
    call = view_entry(transform)
    x = np.arange(7.0)
    before = sys.getrefcount(x)
    view = call(x)
    assert type(view) is np.ndarray and view is not x
    assert view.base is x and not view.flags.owndata
    assert view.tolist() == x[index].tolist() and view.strides == x[index].strides
    assert sys.getrefcount(x) == before + 1  # the view's base
    view[0] = -1.0  # writes reach x
    assert x[index][0] == -1.0
    del view
    assert sys.getrefcount(x) == before
    frozen = np.arange(5.0)
    frozen.flags.writeable = False
    assert not call(frozen).flags.writeable
    strided = np.arange(10.0)[::2]  # a view itself: the new view's base is the data's owner
    assert call(strided).tolist() == strided[index].tolist()
    for _ in range(1000):
        call(x)
    assert sys.getrefcount(x) == before


def test_a_view_of_a_new_array_keeps_it_alive():
    """The owner a view is based on is an array compiled code made."""
    def fresh_tail(b, x):
        return tail(b, x)
    call = view_entry(fresh_tail)
    x = np.arange(4.0)
    view = call(x)
    del x
    gc.collect()
    assert view.tolist() == [1.0, 2.0, 3.0]


def test_arrays_in_returned_tuples():
    """pair(x, n) -> (ones(n), x, n, (zeros(n, n), 1.5))."""
    inner = TupleType((A2, F64))
    t = TupleType((A1, A1, I64, inner))
    g = graph_of("pair", A1, I64)
    x, n = g.params
    ones = op(g, "array_new", [n], A1, dtype=F64, fill=1)
    zeros = op(g, "array_new", [n, n], A2, dtype=F64, fill=0)
    nested = op(g, "tuple", [zeros, const(g, 1.5, F64)], inner)
    g.outputs = [op(g, "tuple", [ones, retain(g, x), n, nested], t)]
    call = compile_module(module_of(g)).call
    arg = np.arange(2.0)
    before = sys.getrefcount(arg)
    for _ in range(100):
        result = call(arg, 3)
        assert type(result) is tuple and len(result) == 4 and result[1] is arg
        assert result[0].tolist() == [1.0] * 3 and result[2] == 3
        assert result[3][0].shape == (3, 3) and result[3][1] == 1.5
        assert sys.getrefcount(result[0]) == 3  # the tuple's, the subscript's, getrefcount's
    del result
    assert sys.getrefcount(arg) == before


# ---- calls hand their results over ---------------------------------------------------------------

def test_calls_hand_their_array_results_to_the_caller():
    """make(n) = ones(n); keep(x) = retain(x);
    outer(x, n): a = make(n); b = make(n); c = keep(x); release(a); release(c); return b."""
    make = graph_of("make", I64)
    make.outputs = [op(make, "array_new", make.params, A1, dtype=F64, fill=1)]
    keep = graph_of("keep", A1)
    keep.outputs = [retain(keep, keep.params[0])]
    g = graph_of("outer", A1, I64)
    x, n = g.params
    a = op(g, "call", [n], A1, callee="make")
    b = op(g, "call", [n], A1, callee="make")
    c = op(g, "call", [x], A1, callee="keep")
    release(g, a)
    release(g, c)
    g.outputs = [b]
    call = compile_module(module_of(g, make, keep)).call
    arg = np.zeros(1)
    before = sys.getrefcount(arg)
    result = call(arg, 4)
    assert_fresh(result, F64, (4,))
    assert result.tolist() == [1.0] * 4
    assert traced_growth(lambda: [call(arg, 100) for _ in range(1000)]) < 4096
    assert sys.getrefcount(arg) == before


# ---- no leaks -------------------------------------------------------------------------------------

def allocating_loop():
    """churn(n, size): s = 0.0; for i in range(n): a = full(size, i); s += a[-1]; release(a)."""
    g = graph_of("churn", I64, I64)
    n, size = g.params

    def body(r, inv, car, i):
        value = op(r, "cast", [i], F64, to=F64)
        a = op(r, "array_new", [inv[0], value], A1, dtype=F64, fill="value")
        x = op(r, "array_get", [a, const(r, -1, I64)], F64)
        release(r, a)
        return [op(r, "add", [car[0], x], F64)]
    (s,) = counted_loop(g, n, [size], [const(g, 0.0, F64)], body)
    g.outputs = [s]
    return module_of(g)


def test_an_allocating_loop_does_not_leak():
    call = compile_module(allocating_loop()).call
    n = 10 ** 5
    assert call(n, 100) == n * (n - 1) / 2
    assert traced_growth(lambda: call(n, 100), repeat=1) < 4096


def carried_loop(error_at=True):
    """grow(x, n, k): acc = retain(x); for i in range(n): t = full(len(acc), i);
    new = zeros_like(acc); new[0] = acc[0] + t[0]; [raise if i == k]; release(acc);
    release(t); acc = new; return acc. At the raise the invocation owns acc (carried),
    t and new."""
    g = graph_of("grow", A1, I64, I64)
    x, n, k = g.params

    def body(r, inv, car, i):
        acc = car[0]
        size = op(r, "array_dim", [acc], I64, axis=0)
        t = op(r, "array_new", [size, op(r, "cast", [i], F64, to=F64)], A1, dtype=F64,
               fill="value")
        new = op(r, "array_new_like", [acc], A1, fill=0)
        zero = const(r, 0, I64)
        total = op(r, "add", [op(r, "array_get", [acc, zero], F64),
                              op(r, "array_get", [t, zero], F64)], F64)
        r.add("array_set", [new, total, zero], types=[NONE])
        if error_at:
            raise_if(r, op(r, "eq", [i, inv[0]], BOOL))
        release(r, acc)
        release(r, t)
        return [new]
    (acc,) = counted_loop(g, n, [k], [retain(g, x)], body)
    g.outputs = [acc]
    return module_of(g)


def test_a_loop_carrying_arrays_does_not_leak():
    call = compile_module(carried_loop()).call
    x = np.full(1000, 1.0)
    before = sys.getrefcount(x)
    result = call(x, 10, -1)
    assert result[0] == 1.0 + sum(range(10)) and result is not x
    assert call(x, 0, -1) is x
    assert traced_growth(lambda: call(x, 1000, -1)) < 4096
    del result
    assert sys.getrefcount(x) == before


def test_errors_after_allocations_leak_nothing():
    call = compile_module(carried_loop()).call
    x = np.full(1000, 1.0)
    before = sys.getrefcount(x)

    def fail():
        for k in (0, 1, 5, 99):
            expect(ValueError, call, x, 100, k)
    assert traced_growth(fail, repeat=20) < 4096
    assert sys.getrefcount(x) == before


def test_errors_in_and_after_calls_leak_nothing():
    """part(n, k): a = ones(n); [raise if k == 0]; return a.
    outer(x, n, k): r = retain(x); b = part(n, k); c = part(n, k - 1); [IndexError if
    k == 2: b[n]]; release(b); release(r); return c."""
    part = graph_of("part", I64, I64)
    n, k = part.params
    a = op(part, "array_new", [n], A1, dtype=F64, fill=1)
    raise_if(part, op(part, "eq", [k, const(part, 0, I64)], BOOL))
    part.outputs = [a]
    g = graph_of("outer", A1, I64, I64)
    x, n, k = g.params
    r = retain(g, x)
    b = op(g, "call", [n, k], A1, callee="part")
    c = op(g, "call", [n, op(g, "sub", [k, const(g, 1, I64)], I64)], A1, callee="part")
    index = op(g, "select", [op(g, "eq", [k, const(g, 2, I64)], BOOL), n, const(g, 0, I64)],
               I64)
    op(g, "array_get", [b, index], F64)
    release(g, b)
    release(g, r)
    g.outputs = [c]
    call = compile_module(module_of(g, part)).call
    arg = np.zeros(3)
    before = sys.getrefcount(arg)
    assert call(arg, 50, 5).tolist() == [1.0] * 50

    def fail():
        for k, exc in [(0, ValueError), (1, ValueError), (2, IndexError)]:
            expect(exc, call, arg, 1000, k)
    assert traced_growth(fail, repeat=50) < 4096
    assert sys.getrefcount(arg) == before


def test_allocation_errors_release_what_was_made_before():
    """a = ones(n); r = retain(x); b = empty(m) (fails for m < 0 or m huge); ..."""
    g = graph_of("two", A1, I64, I64)
    x, n, m = g.params
    a = op(g, "array_new", [n], A1, dtype=F64, fill=1)
    r = retain(g, x)
    b = op(g, "array_new", [m], A1, dtype=F64, fill=None)
    release(g, a)
    release(g, r)
    g.outputs = [b]
    call = compile_module(module_of(g)).call
    arg = np.zeros(2)
    before = sys.getrefcount(arg)

    def fail():
        for m, exc in [(-1, ValueError), (2 ** 61, ValueError), (2 ** 55, MemoryError)]:
            expect(exc, call, arg, 1000, m)
    assert traced_growth(fail, repeat=50) < 4096
    assert sys.getrefcount(arg) == before
    assert call(arg, 3, 2).shape == (2,)


def test_ir_that_never_releases_overflows_the_owned_list_without_crashing():
    """Leaking IR (no releases) outgrows the list's capacity; an error exit still works."""
    g = graph_of("leaky", I64, I64)
    n, k = g.params

    def body(r, inv, car, i):
        op(r, "array_new", [const(r, 1, I64)], A1, dtype=F64, fill=0)
        raise_if(r, op(r, "eq", [i, inv[0]], BOOL))
        return []
    counted_loop(g, n, [k], [], body)
    g.outputs = [const(g, None, NONE)]
    call = compile_module(module_of(g)).call
    with pytest.raises(ValueError):
        call(100, 50)
    assert call(10, -1) is None


def test_argument_refcounts_are_unchanged_after_many_calls():
    modules = [carried_loop(), allocating_loop()]
    grow, churn = (compile_module(m).call for m in modules)
    x = np.full(10, 2.0)
    before = sys.getrefcount(x)
    for i in range(2000):
        grow(x, 3, -1)
        grow(x, 0, -1)
        try:
            grow(x, 3, 1)
        except ValueError:
            pass
        churn(3, 2)
    gc.collect()
    assert sys.getrefcount(x) == before


def test_a_new_array_is_owned_until_it_is_returned():
    """The owned list holds it (released on an error exit): compiled as glue, without
    optimization, its stores stay (engine.Engine.compile_ir), and the call leaks nothing."""
    module = new_module(F64, 1, 1)
    assert owned.owns_arrays(module.entry_graph)
    entry = compile_module(module)
    assert "@astjit.owned.release" in entry.llvm_ir_optimized
    made = entry.call(3)
    np.testing.assert_array_equal(made, np.ones(3))
    assert sys.getrefcount(made) == 2  # the name, and getrefcount's argument


def test_the_numpy_api_table_is_verified():
    api = numpy_api.api()
    assert api.abi_version >> 24 in (1, 2)
    assert api.addresses["PyArray_Type"] == id(np.ndarray)
    assert set(numpy_api.FUNCTIONS) <= set(api.addresses)
