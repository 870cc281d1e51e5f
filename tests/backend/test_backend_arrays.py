"""Arrays in the CPU backend, on hand-built typed graphs: element reads and writes in loops,
strided views, NumPy's indexing errors, the entry's ndarray checks and fallback, refcounts."""
import sys

import numpy as np
import pytest
from ir_builders import Handler, compile_module, const, counted_loop, graph_of, module_of, no_fallback, op

from astjit.api import ErrorHandler
from astjit.backend.llvm import array_layout, build_entry
from astjit.errors import CompileError, Loc
from astjit.ir.analysis import written_parameters
from astjit.ir.interp import interpret
from astjit.ir.types import BOOL, F32, F64, I64, NONE, ArrayType, TupleType, python_type_of

A1, A2, A3, A0 = (ArrayType(F64, n) for n in (1, 2, 3, 0))


# ---- building graphs -----------------------------------------------------------------

def none(graph):
    return const(graph, None, NONE)


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append(args)
        return "fallback"


# ---- the modules under test -----------------------------------------------------------

def sum_module(t=A1, acc=F64, **attrs):
    """total(a): s = 0; for i in range(len(a)): s += a[i]."""
    g = graph_of("total", t)
    (a,) = g.params
    n = op(g, "len", [a], I64)

    def body(r, inv, car, i):
        x = op(r, "array_get", [inv[0], i], t.dtype, **attrs)
        if t.dtype != acc:
            x = op(r, "cast", [x], acc, to=acc)
        return [op(r, "add", [car[0], x], acc)]
    (s,) = counted_loop(g, n, [a], [const(g, 0 if acc == I64 else 0.0, acc)], body)
    g.outputs = [s]
    return module_of(g)


def scale_module(t=A1, **attrs):
    """scale(a, c): for i in range(len(a)): a[i] = a[i] * c."""
    g = graph_of("scale", t, t.dtype)
    a, c = g.params
    n = op(g, "len", [a], I64)

    def body(r, inv, car, i):
        arr, factor = inv
        x = op(r, "array_get", [arr, i], t.dtype, **attrs)
        r.add("array_set", [arr, op(r, "mul", [x, factor], t.dtype), i], attrs=attrs,
              types=[NONE])
        return []
    counted_loop(g, n, [a, c], [], body)
    g.outputs = [none(g)]
    return module_of(g)


def sum2d_module(t=A2):
    """total2(a): nested loops over a.shape[0] and a.shape[1]; sum of (i+1) * a[i, j]."""
    g = graph_of("total2", t)
    (a,) = g.params
    rows, cols = op(g, "array_dim", [a], I64, axis=0), op(g, "array_dim", [a], I64, axis=1)

    def outer(r, inv, car, i):
        arr, m = inv
        weight = op(r, "cast", [op(r, "add", [i, const(r, 1, I64)], I64)], F64, to=F64)

        def inner(r2, inv2, car2, j):
            arr2, i2, w2 = inv2
            x = op(r2, "array_get", [arr2, i2, j], F64)
            return [op(r2, "add", [car2[0], op(r2, "mul", [w2, x], F64)], F64)]
        return counted_loop(r, m, [arr, i, weight], [car[0]], inner)
    (s,) = counted_loop(g, rows, [a, cols], [const(g, 0.0, F64)], outer)
    g.outputs = [s]
    return module_of(g)


def python_sum2d(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            s += (i + 1) * float(a[i, j])
    return s


def get_module(t, **attrs):
    """get(a, *indices) -> a[indices]."""
    g = graph_of("get", t, *[I64] * t.ndim)
    g.outputs = [op(g, "array_get", g.params, t.dtype, **attrs)]
    return module_of(g)


def set_module(t, **attrs):
    """put(a, v, *indices): a[indices] = v."""
    g = graph_of("put", t, t.dtype, *[I64] * t.ndim)
    g.outputs = [op(g, "array_set", g.params, NONE, **attrs)]
    return module_of(g)


# ---- reading and writing in loops -------------------------------------------------------

def test_sum_loop_matches_the_interpreter_and_python():
    module = sum_module()
    call = compile_module(module).call
    rng = np.random.default_rng(0)
    for x in [np.arange(10.0), rng.standard_normal(1001), np.zeros(0), np.array([np.nan, 1.0]),
              np.array([-0.0])]:
        got = call(x)
        assert type(got) is float
        want = interpret(module, [x])
        assert got == want or (np.isnan(got) and np.isnan(want))
        assert got == sum(x.tolist(), 0.0) or np.isnan(got)


def test_scale_loop_writes_into_the_callers_array():
    module = scale_module()
    call = compile_module(module).call
    x = np.arange(7.0)
    alias = x
    assert call(x, 2.5) is None
    assert alias is x and x.tolist() == [2.5 * k for k in range(7)]
    y = np.linspace(-1, 1, 33)
    want = y.copy()
    interpret(module, [want, -3.0])
    call(y, -3.0)
    assert np.array_equal(y, want)


def test_scale_loop_through_strided_views_touches_only_the_view():
    call = compile_module(scale_module()).call
    base = np.arange(12.0)
    call(base[::3], 10.0)
    assert base.tolist() == [10.0 * k if k % 3 == 0 else float(k) for k in range(12)]
    back = np.arange(5.0)
    call(back[::-1], -1.0)
    assert back.tolist() == [-0.0, -1.0, -2.0, -3.0, -4.0]


def copy_module():
    """double_into(src, dst): for i in range(len(dst)): dst[i] = 2 * src[i]."""
    g = graph_of("double_into", A1, A1)
    src, dst = g.params
    n = op(g, "len", [dst], I64)

    def body(r, inv, car, i):
        a, b = inv
        x = op(r, "mul", [op(r, "array_get", [a, i], F64), const(r, 2.0, F64)], F64)
        r.add("array_set", [b, x, i], types=[NONE])
        return []
    counted_loop(g, n, [src, dst], [], body)
    g.outputs = [none(g)]
    return module_of(g)


def test_overlapping_arrays_keep_the_loops_order():
    """Vectorized loops check for overlap at run time: each step sees the previous writes."""
    module = copy_module()
    call = compile_module(module).call
    for n in [3, 17, 1000]:
        for shift in [1, 2, 5]:
            z, want = np.ones(n + shift), np.ones(n + shift)
            call(z[:-shift], z[shift:])
            interpret(module, [want[:-shift], want[shift:]])
            assert np.array_equal(z, want)
            assert z[-1] == 2.0 ** ((n + shift - 1) // shift)
        z = np.arange(n + 1.0)
        call(z[1:], z[:-1])  # reading ahead of the writes: NumPy's z[:-1] = 2 * z[1:]
        assert np.array_equal(z[:-1], 2 * np.arange(1.0, n + 1.0))
    x = np.arange(1000.0)
    call(x, x)
    assert np.array_equal(x, 2 * np.arange(1000.0))


def test_two_dimensional_loops_over_views():
    module = sum2d_module()
    call = compile_module(module).call
    a = np.arange(30.0).reshape(5, 6) ** 1.5
    for view in [a, a.T, a[:, 1:], a[::2, ::-3], a[1:4, 2:3], a[:0], np.asfortranarray(a),
                 np.broadcast_to(np.arange(4.0), (3, 4))]:
        assert call(view) == python_sum2d(view) == interpret(module, [view]), view.strides


def test_one_dimensional_views_read_through_strides():
    x = np.arange(20.0) * 1.25
    m = x.reshape(4, 5)
    call = compile_module(sum_module()).call
    for v in [x[::2], x[::-1], x[3:], x[::7], m[:, 1], m[2], m.T[1], m[::-2, -1]]:
        assert call(v) == sum(v.tolist(), 0.0), v.strides


# ---- element types ------------------------------------------------------------------------

def test_float32_arrays_round_like_numpy():
    t = ArrayType(F32, 1)
    call = compile_module(scale_module(t)).call
    x = np.linspace(0, 1, 9, dtype=np.float32)
    want = x * np.float32(0.1)
    call(x, np.float32(0.1))
    assert np.array_equal(x, want)
    total = compile_module(sum_module(t, acc=F32)).call
    want = np.float32(0)
    for v in x:
        want = np.float32(want + v)
    assert total(x) == float(want)


def test_int64_arrays_wrap():
    t = ArrayType(I64, 1)
    x = np.array([1, -2, 2 ** 62, 7], dtype=np.int64)
    assert compile_module(sum_module(t, acc=I64)).call(x) == int(x.sum())
    compile_module(scale_module(t)).call(x, 4)
    assert x.tolist() == [4, -8, 0, 28]
    q = np.array([5, 6], dtype=np.longlong)  # int64 as C long long: another type number
    assert compile_module(sum_module(t, acc=I64)).call(q) == 11


def test_bool_arrays_are_bytes():
    t = ArrayType(BOOL, 1)
    flags = np.array([True, False, True, True])
    total = compile_module(sum_module(t, acc=I64)).call
    assert total(flags) == 3
    get = compile_module(get_module(t)).call
    assert [get(flags, i) for i in range(-4, 4)] == flags.tolist() * 2
    assert type(get(flags, 0)) is bool
    # A byte other than 0 or 1 reads as True, as NumPy reads it.
    odd = np.array([0, 2, 255], dtype=np.uint8).view(np.bool_)
    assert [get(odd, i) for i in range(3)] == [bool(v) for v in odd] == [False, True, True]
    put = compile_module(set_module(t)).call
    put(flags, False, 0)
    put(flags, True, -3)
    assert flags.tolist() == [False, True, True, True]
    assert flags.view(np.uint8).tolist() == [0, 1, 1, 1]


# ---- indexing: negative indices, bounds, errors --------------------------------------------

def test_two_dimensional_reads_with_negative_indices():
    module = get_module(A2)
    get = compile_module(module).call
    a = np.arange(12.0).reshape(3, 4)
    for view in [a, a.T, a[:, 1:], a[::-1, ::2]]:
        rows, cols = view.shape
        for i in range(-rows, rows):
            for j in range(-cols, cols):
                assert get(view, i, j) == view[i, j] == interpret(module, [view, i, j])


def numpy_error(fn):
    try:
        fn()
    except IndexError as exc:
        return str(exc)
    raise AssertionError("no IndexError")


@pytest.mark.parametrize("index", [(3, 0), (-4, 0), (0, 4), (0, -5), (2 ** 63 - 1, 0),
                                   (-(2 ** 63), 0), (5, 9)])
def test_out_of_bounds_raises_numpys_index_error(index):
    module = get_module(A2)
    entry = compile_module(module)
    a = np.arange(12.0).reshape(3, 4)
    want = numpy_error(lambda: a[index])
    assert want == numpy_error(lambda: interpret(module, [a, *index]))
    with pytest.raises(IndexError) as info:
        entry.call(a, *index)
    assert str(info.value) == want
    # The function is still usable, and the next error is reported afresh.
    assert entry.call(a, 1, -1) == 7.0
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        entry.call(a, 3, 0)


def test_index_error_in_a_loop_and_in_a_write():
    g = graph_of("shifted", A1, I64)
    a, k = g.params
    n = op(g, "len", [a], I64)

    def body(r, inv, car, i):
        arr, shift = inv
        x = op(r, "array_get", [arr, op(r, "add", [i, shift], I64)], F64)
        r.add("array_set", [arr, x, i], types=[NONE])
        return []
    counted_loop(g, n, [a, k], [], body)
    g.outputs = [none(g)]
    entry = compile_module(module_of(g))
    x = np.arange(5.0)
    with pytest.raises(IndexError, match="^index 5 is out of bounds for axis 0 with size 5$"):
        entry.call(x, 1)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0, 4.0]  # written up to the failing read
    entry.call(x, 0)
    put = compile_module(set_module(A1)).call
    with pytest.raises(IndexError, match="^index -6 is out of bounds for axis 0 with size 5$"):
        put(x, 1.0, -6)
    with pytest.raises(IndexError, match="^index 0 is out of bounds for axis 0 with size 0$"):
        put(np.zeros(0), 1.0, 0)


def test_index_error_through_the_api_handler_keeps_the_location():
    loc = Loc("user.py", 7, 4, "    return a[i]")
    g = graph_of("get", A1, I64)
    g.outputs = [g.add("array_get", g.params, types=[F64], loc=loc).outputs[0]]
    handler = ErrorHandler()
    entry = build_entry(module_of(g), no_fallback, handler)
    handler.errors = entry.errors
    assert entry.errors == [("IndexError", "index out of bounds for axis 0", loc)]
    assert entry.error_details == {1: "index {0} is out of bounds for axis 0 with size {1}"}
    with pytest.raises(IndexError) as info:
        entry.call(np.zeros(2), -3)
    assert str(info.value) == ("index -3 is out of bounds for axis 0 with size 2 "
                               "(at user.py:7: return a[i])")


def test_a_handler_that_returns_gets_the_status_and_the_numbers_pass_through():
    seen = []
    entry = build_entry(get_module(A1), no_fallback, lambda s: seen.append(s) or "handled")
    assert entry.call(np.zeros(2), 9) == "handled"
    assert seen == [1]


def test_boundscheck_false_skips_the_checks():
    entry = compile_module(get_module(A2, boundscheck=False))
    assert entry.errors == [] and "IndexError" not in entry.llvm_ir
    a = np.arange(12.0).reshape(3, 4)
    assert [entry.call(a, i, j) for i, j in [(0, 0), (2, 3), (-1, -1), (-3, 1)]] == \
        [0.0, 11.0, 11.0, 1.0]
    # An index past a row is read where the strides lead, as C would (here: the next row).
    assert entry.call(a, 0, 5) == 5.0
    total = compile_module(sum_module(boundscheck=False))
    assert {site.exc for site in total.errors} <= {"KeyboardInterrupt"}  # a long loop's check
    assert total.call(np.arange(100.0)) == 4950.0
    scale = compile_module(scale_module(boundscheck=False))
    x = np.arange(4.0)
    scale.call(x, 2.0)
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0]


# ---- shape queries --------------------------------------------------------------------------

def test_shape_queries():
    g = graph_of("shape", A3)
    (a,) = g.params
    s3 = TupleType((I64, I64, I64))
    outs = [op(g, "array_shape", [a], s3), op(g, "array_size", [a], I64),
            op(g, "array_ndim", [a], I64), op(g, "len", [a], I64),
            *[op(g, "array_dim", [a], I64, axis=k) for k in range(3)]]
    t = TupleType((s3, I64, I64, I64, I64, I64, I64))
    g.outputs = [op(g, "tuple", outs, t)]
    module = module_of(g)
    call = compile_module(module).call
    for x in [np.zeros((2, 3, 4)), np.zeros((2, 3, 4)).T, np.zeros((5, 0, 2)),
              np.zeros((1, 1, 1))[:, :, ::-1]]:
        want = (x.shape, x.size, x.ndim, len(x), *x.shape)
        assert call(x) == want == interpret(module, [x])


def test_zero_dimensional_arrays():
    g = graph_of("scalar", A0)
    (a,) = g.params
    old = op(g, "array_get", [a], F64)
    g.add("array_set", [a, op(g, "add", [old, const(g, 1.0, F64)], F64)], types=[NONE])
    t = TupleType((F64, I64, I64, TupleType(())))
    g.outputs = [op(g, "tuple", [old, op(g, "array_size", [a], I64),
                                 op(g, "array_ndim", [a], I64),
                                 op(g, "array_shape", [a], TupleType(()))], t)]
    x = np.array(2.5)
    assert compile_module(module_of(g)).call(x) == (2.5, 1, 0, ())
    assert x[()] == 3.5


# ---- arrays through calls, ifs and tuples -----------------------------------------------------

def test_arrays_pass_through_calls_ifs_and_tuple_arguments():
    callee = graph_of("fill", A1, F64)
    arr, v = callee.params
    callee.add("array_set", [arr, v, const(callee, -1, I64)], types=[NONE])
    callee.outputs = [op(callee, "array_retain", [arr], A1)]  # results are owned by the caller
    pair = TupleType((A1, I64))
    g = graph_of("outer", pair, BOOL)
    p, flag = g.params
    a = op(g, "getitem", [p], A1, index=0)
    k = op(g, "getitem", [p], I64, index=1)
    then, other = graph_of("then", A1, I64), graph_of("else", A1, I64)
    then.outputs = [op(then, "call", [then.params[0], const(then, 9.0, F64)], A1, callee="fill")]
    other.outputs = [op(other, "array_retain", [other.params[0]], A1)]
    same = g.add("if", [flag, a, k], regions=[then, other], types=[A1]).outputs[0]
    g.outputs = [op(g, "array_get", [same, k], F64)]
    g.add("array_release", [same], types=[NONE])
    module = module_of(g, callee)
    call = compile_module(module).call
    x = np.arange(4.0)
    assert call((x, 3), False) == 3.0 and x[-1] == 3.0
    assert call((x, 3), True) == 9.0 and x[-1] == 9.0
    y = np.arange(4.0)
    assert interpret(module, [(y, 3), True]) == 9.0 and np.array_equal(x, y)


def test_returning_an_argument_hands_back_the_same_object():
    g = graph_of("same", A1)
    g.outputs = [op(g, "array_retain", [g.params[0]], A1)]  # a returned array is owned
    x = np.arange(3.0)
    assert build_entry(module_of(g), no_fallback, Handler()).call(x) is x


# ---- the entry: which arrays it takes ------------------------------------------------------------

class Sub(np.ndarray):
    pass


def unaligned_f64(n):
    return np.frombuffer(np.zeros(8 * n + 8, np.uint8).data, np.float64, n, offset=1)


def odd_strides():
    record = np.zeros(4, dtype=[("a", "i1"), ("x", "f8")])  # packed: itemsize 9
    return record["x"]


def arguments_for(t):
    """Arrays (and non-arrays) to offer a parameter of type `t`."""
    shape = (3,) * t.ndim
    name = {F64: "float64", F32: "float32", I64: "int64", BOOL: "bool"}[t.dtype]
    good = np.ones(shape, dtype=name)
    samples = [good, good.copy(order="F"), good[..., ::-1] if t.ndim else good,
               np.ones(shape, dtype=np.dtype(name).newbyteorder()),
               np.ones(shape + (1,), dtype=name), np.ones(shape[1:], dtype=name),
               np.ones(shape, dtype="float64" if name != "float64" else "float32"),
               np.ones(shape, dtype=np.int32), np.ones(shape, dtype=np.uint64),
               good.view(Sub), np.matrix(np.ones((1, 3))), [1.0, 2.0], 1.5, None,
               unaligned_f64(3), odd_strides(), np.zeros((0,) + shape[1:], dtype=name),
               np.ones((1,) * t.ndim, dtype=name)]
    if t.ndim:
        samples.append(np.lib.stride_tricks.as_strided(good, shape, (good.itemsize + 1,) * t.ndim)
                       if good.itemsize > 1 else good)
    return samples


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")  # np.matrix offered
@pytest.mark.parametrize("t", [A1, A2, ArrayType(F32, 1), ArrayType(I64, 2), ArrayType(BOOL, 1),
                               A0])
def test_the_entry_takes_exactly_what_accepts_says(t):
    g = graph_of("ndim", t)
    g.outputs = [op(g, "array_ndim", g.params, I64)]
    recorder = Recorder()
    call = compile_module(module_of(g), recorder).call
    for sample in arguments_for(t):
        expected = isinstance(sample, np.ndarray) and array_layout.accepts(sample, t)
        got = call(sample)
        assert (got == t.ndim) if expected else (got == "fallback"), (sample, t)
        if expected:
            assert python_type_of(sample) == t  # what the slow path would compile for it


def test_wrong_dtype_or_ndim_goes_to_the_fallback():
    recorder = Recorder()
    call = compile_module(sum_module(), recorder).call
    bad = [np.zeros(3, np.float32), np.zeros((2, 2)), np.zeros(3, np.int64), [1.0],
           np.zeros(3, ">f8"), np.zeros(3).view(Sub), unaligned_f64(2), odd_strides()]
    for x in bad:
        assert call(x) == "fallback"
    assert [args[0] is x for args, x in zip(recorder.calls, bad)] == [True] * len(bad)
    assert call(np.ones(3)) == 3.0
    # Arrays python_type_of types as A1 but accepts() refuses: the slow path must convert
    # them (a copy: writes would not reach the caller) or refuse them, never pass them back.
    for x in bad[4:]:
        assert python_type_of(x) == A1 and not array_layout.accepts(x, A1)
        assert call(np.array(x, dtype=np.float64)) == float(np.sum(x))


def test_read_only_arrays():
    x = np.arange(3.0)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="^assignment destination is read-only$"):
        compile_module(scale_module()).call(x, 2.0)
    assert x.tolist() == [0.0, 1.0, 2.0]
    assert compile_module(sum_module()).call(x) == 3.0  # reading is fine
    # Only the arrays that a write may reach must be writeable.
    g = graph_of("copy", A1, A1)
    src, dst = g.params
    n = op(g, "len", [dst], I64)

    def body(r, inv, car, i):
        a, b = inv
        r.add("array_set", [b, op(r, "array_get", [a, i], F64), i], types=[NONE])
        return []
    counted_loop(g, n, [src, dst], [], body)
    g.outputs = [none(g)]
    call = compile_module(module_of(g)).call
    out = np.zeros(3)
    call(x, out)
    assert out.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        call(out, x)
    assert written_parameters(module_of(g)) == {1: None}


def test_written_parameters_follow_calls_loops_and_tuples():
    callee = graph_of("poke", TupleType((A1, F64)))
    inner = op(callee, "getitem", callee.params, A1, index=0)
    callee.outputs = [op(callee, "array_set", [inner, const(callee, 1.0, F64),
                                               const(callee, 0, I64)], NONE)]
    g = graph_of("outer", A1, A1, A1, BOOL)
    a, b, c, flag = g.params
    picked = op(g, "select", [flag, a, b], A1)
    cond = graph_of("cond", A1)
    cond.outputs = [const(cond, False, BOOL)]
    body = graph_of("body", A1)
    body.outputs = [body.params[0]]
    looped = g.add("while", [picked], attrs={"n_invariants": 0}, regions=[cond, body],
                   types=[A1]).outputs[0]
    packed = op(g, "tuple", [looped, const(g, 0.0, F64)], TupleType((A1, F64)))
    g.add("call", [packed], attrs={"callee": "poke"}, types=[NONE])
    g.outputs = [op(g, "array_get", [c, const(g, 0, I64)], F64)]
    module = module_of(g, callee)
    assert sorted(written_parameters(module)) == [0, 1]
    call = compile_module(module).call
    x, y, z = np.zeros(1), np.zeros(1), np.full(1, 5.0)
    z.flags.writeable = False
    assert call(x, y, z, True) == 5.0 and (x[0], y[0]) == (1.0, 0.0)
    assert call(x, y, z, False) == 5.0 and y[0] == 1.0


# ---- references and speed -----------------------------------------------------------------------

def test_no_reference_leaks_on_any_path():
    recorder = Recorder()
    entry = compile_module(get_module(A1), recorder)
    scale = compile_module(scale_module()).call
    x = np.arange(10.0)
    f32 = np.zeros(3, np.float32)
    before = sys.getrefcount(x), sys.getrefcount(f32)
    for _ in range(2000):
        entry.call(x, 3)
        scale(x, 1.0)
        try:
            entry.call(x, 10)
        except IndexError:
            pass
    for _ in range(100):
        entry.call(f32, 0)
    recorder.calls.clear()
    assert (sys.getrefcount(x), sys.getrefcount(f32)) == before


def test_inner_loops_vectorize():
    for module in [scale_module(), sum_module(), copy_module()]:
        entry = compile_module(module)
        assert "vector.body" in entry.llvm_ir_optimized, module.entry


def test_array_constants_are_refused():
    g = graph_of("captured")
    g.outputs = [op(g, "array_size", [const(g, np.zeros(3), A1)], I64)]
    with pytest.raises(CompileError, match="pass the array as an argument"):
        build_entry(module_of(g), no_fallback, Handler())
