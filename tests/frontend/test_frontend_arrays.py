"""NumPy arrays as arguments, element reads and writes in loops: frontend, inference, passes,
interpreter and dispatch, checked against NumPy / CPython running the same functions.

Each case goes through `lower_function`, `infer_types` (argument types from
`python_type_of`), `optimize` (verifying the module after every pass) and the
IR interpreter, before and after optimization, on fresh copies of its
arguments: the results and the arguments after the call (in-place writes
reach the caller's arrays) must be what Python gives. Where the compiled
backend takes arrays, `jit` is compared the same way; until then those
comparisons are skipped. The functions below the helpers are test inputs.
"""
from __future__ import annotations

import copy
import functools
import math

import array_functions
import numpy as np
import pytest

from astjit.dispatch import Signature, normalize_argument
from astjit.errors import NameResolutionError, TypingError, UnsupportedSyntaxError
from astjit.frontend import lower_function
from astjit.ir.core import Module
from astjit.ir.dot import format_dot
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.passes.effects import has_effects
from astjit.ir.passes.pipeline import optimize
from astjit.ir.printer import format_module
from astjit.ir.types import BOOL, F32, F64, I64, ArrayType, TupleType, python_type_of
from astjit.ir.verify import verify_module

# ---- helpers ---------------------------------------------------------------------------

def compile_stages(fn, args) -> tuple[Module, Module]:
    """(typed, optimized) modules of `fn` for the types of `args`, verified after every pass."""
    typed = infer_types(lower_function(fn), [python_type_of(a) for a in args])
    verify_module(typed, typed=True)
    optimized = optimize(copy.deepcopy(typed), verify=lambda m: verify_module(m, typed=True))
    return typed, optimized


def outcome(run, args):
    """(result or exception (type, message), the arguments after the call)."""
    try:
        result = ("ok", run(*args))
    except Exception as error:  # noqa: BLE001 - the exception is the outcome compared
        result = ("raised", type(error), str(error))
    return result, args


def same(a, b) -> bool:
    """Equal values of the same kind: arrays by dtype, shape and bits; floats NaN-aware."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape \
            and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, np.float32) and type(b) is float:
        # NumPy 2 keeps `0.0 + x[i]` of a float32 array float32; astjit, as Numba, computes
        # with Python's float (f64): the same number to float32's precision
        return math.isclose(float(a), b, rel_tol=1e-6, abs_tol=1e-6)
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    if type(a) is not type(b) and not (type(a) in (int, float) and type(b) in (int, float)):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return a == b


def check_against_python(fn, make):
    """The interpreter on the typed and the optimized module does what `fn` does in Python."""
    expected = outcome(fn, make())
    typed, optimized = compile_stages(fn, make())
    for stage, module in (("typed", typed), ("optimized", optimized)):
        got = outcome(lambda *a, m=module: interpret(m, list(a)), make())
        assert same_outcome(expected, got), f"{fn.__name__} ({stage}): {got} vs {expected}"
    return typed, optimized


def same_outcome(expected, got) -> bool:
    (want, want_args), (have, have_args) = expected, got
    if want[0] != have[0] or not same(want_args, have_args):
        return False
    if want[0] == "raised":  # messages as NumPy's, but for OverflowError (CPython's int())
        return want[1] is have[1] and (want[2] == have[2] or want[1] is OverflowError)
    return same(want[1], have[1])


def ops(module: Module) -> list[str]:
    return [node.op for node in module.entry_graph.walk()]


def floats(*shape, dtype=np.float64, seed=0):
    """The same normal numbers for the same arguments: every `make()` gives equal arrays."""
    return np.random.default_rng([seed, *shape]).standard_normal(shape).astype(dtype)


# ---- test inputs: functions the frontend reads ---------------------------------------------

def total_2d(a):
    s = 0.0
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            s += a[i, j]
    return s


def sum_loop(x):
    acc = 0.0
    for i in range(len(x)):
        acc += x[i]
    return acc


def ends(x, a):
    return x[-1] - x[0], x[-2], a[-1, -1], a[0, -2], a[-a.shape[0], 1]


def add_outer(a, u, v):
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            a[i, j] += u[i] * v[j]


def transpose_into(a, out):
    n, m = a.shape
    for i in range(n):
        for j in range(m):
            out[j, i] = a[i, j]
    return out.shape[0] * 100 + out.shape[-1]


def count_and_double(k):
    c = 0
    for i in range(k.size):
        if k[i] > 0:
            c += 1
        k[i] = k[i] * 2
    return c


def int_mean(k):
    acc = 0.0
    for i in range(len(k)):
        acc += k[i]
    return acc / len(k)


def scale_f32(x):
    acc = 0.0
    for i in range(x.shape[0]):
        x[i] = x[i] * 0.1
        acc += x[i]
    return acc


def flip_bools(b):
    n = 0
    for i in range(b.shape[0]):
        b[i] = not b[i]
        if b[i]:
            n += 1
    return n


def store_converts(k, b, f):
    k[0] = 2.7
    k[1] = -2.7
    k[2] += 0.5
    b[0] = 0.5
    b[1] = 0
    b[2] = -3
    f[0] = 0.1
    f[1] = True
    return k[0] + k[1] + k[2]


def first_best(x):
    best = 0
    for i in range(len(x)):
        if x[i] > best:
            best = x[i]
    return best


def read_at(x, i):
    return x[i]


def write_at(x, i, v):
    x[i] = v


def read_2d_at(a, i, j):
    return a[i, j]


def add_at(a, i, j, v):
    a[i, j] += v
    return a[i, j]


def unused_read(x, i):
    x[i]
    return 0


def first_or_default(x, n):
    if n > 0:
        v = x[0]
    else:
        v = -1.0
    return v


def read_write_read(x):
    a = x[0]
    x[0] = 5.0
    b = x[0]
    x[1] = 1.0
    x[1] = 2.0
    return a, b, x[0] + x[0]


def _fill(x, v):
    for i in range(len(x)):
        x[i] = v
    return len(x)


def fill_through_a_call(x, y):
    return _fill(x, 3.0) + _fill(y, -1.0)


def tuple_of_arrays(t):
    a, b = t
    a[0] = b[1]
    return a[0] + b[0], len(t)


def choose_array(x, y, c):
    z = x if c else y
    z[0] = 9.0
    return z[1]


def swap_elements(x, i, j):
    x[i], x[j] = x[j], x[i]


def shape_facts(a):
    n, m = a.shape
    s = a.shape
    return n * m == a.size, a.ndim, s[-1], len(a), s


def three_d(c):
    n, m, p = c.shape
    s = 0
    for i in range(n):
        for j in range(m):
            for k in range(p):
                c[i, j, k] = i * 100 + j * 10 + k
                s += c[i, j, k]
    return s


def loop_over_rows(a, i):
    t = 0.0
    j = 0
    while j < a.shape[1]:
        t += a[i, j]
        j += 1
    return t


# ---- the acceptance corpus's element-wise functions -------------------------------------

CORPUS = {fn.__name__: make for fn, make in array_functions.CASES}
CORPUS["scale_in_place"] = lambda: (floats(7), 2.5)


@pytest.mark.parametrize("fn", [array_functions.scale_in_place, array_functions.running_max_index,
                                array_functions.attributes], ids=lambda fn: fn.__name__)
def test_corpus_targets_match_numpy(fn):
    check_against_python(fn, CORPUS[fn.__name__])


def test_scale_in_place_writes_into_the_callers_array():
    x = np.arange(5.0)
    _, optimized = compile_stages(array_functions.scale_in_place, (x, 3.0))
    assert interpret(optimized, [x, 3.0]) is None
    np.testing.assert_array_equal(x, np.arange(5.0) * 3.0)


CASES = [
    (total_2d, lambda: (floats(3, 4),)),
    (sum_loop, lambda: (floats(10),)),
    (sum_loop, lambda: (np.zeros(0),)),
    (ends, lambda: (floats(5), floats(3, 4))),
    (add_outer, lambda: (floats(3, 4), floats(3), floats(4))),
    (add_outer, lambda: (floats(3, 4)[:, ::2], floats(3), floats(2))),   # a strided view
    (add_outer, lambda: (np.asfortranarray(floats(3, 4)), floats(3), floats(4))),
    (transpose_into, lambda: (floats(2, 3), np.zeros((3, 2)))),
    (count_and_double, lambda: (np.arange(-4, 6, dtype=np.int64),)),
    (int_mean, lambda: (np.arange(-4, 7, dtype=np.int64),)),
    (scale_f32, lambda: (floats(6, dtype=np.float32),)),
    (flip_bools, lambda: (np.array([True, False, False, True, False]),)),
    (store_converts, lambda: (np.zeros(3, np.int64), np.zeros(3, bool), np.zeros(2, np.float32))),
    (first_best, lambda: (floats(9),)),
    (first_best, lambda: (np.arange(5, dtype=np.int64),)),
    (read_at, lambda: (floats(5), 4)),
    (read_at, lambda: (floats(5), -5)),
    (read_at, lambda: (np.arange(5, dtype=np.int64), 2)),
    (read_at, lambda: (np.array([True, False]), 1)),
    (read_at, lambda: (floats(5, dtype=np.float32), 3)),
    (write_at, lambda: (floats(5), -1, 7.5)),
    (write_at, lambda: (np.zeros(4, np.int64), 1, 3)),
    (read_2d_at, lambda: (floats(3, 4), 2, -1)),
    (add_at, lambda: (floats(3, 4), -1, 0, 0.5)),
    (first_or_default, lambda: (floats(3), 1)),
    (first_or_default, lambda: (np.zeros(0), 0)),  # x[0] must not be speculated
    (read_write_read, lambda: (floats(3),)),
    (fill_through_a_call, lambda: (floats(3), floats(4))),
    (tuple_of_arrays, lambda: ((floats(3), floats(2)),)),
    (choose_array, lambda: (floats(3), floats(3, seed=1), True)),
    (choose_array, lambda: (floats(3), floats(3, seed=1), False)),
    (swap_elements, lambda: (floats(5), 1, -1)),
    (shape_facts, lambda: (floats(3, 5),)),
    (three_d, lambda: (np.zeros((2, 3, 4), np.int64),)),
    (loop_over_rows, lambda: (floats(3, 4), 1)),
    # bounds errors: IndexError with NumPy's message, the arrays left as NumPy leaves them
    (read_at, lambda: (floats(5), 5)),
    (read_at, lambda: (floats(5), -6)),
    (read_at, lambda: (np.zeros(0), 0)),
    (write_at, lambda: (floats(5), 5, 1.0)),
    (write_at, lambda: (np.zeros(3, np.int64), -4, 1)),
    (read_2d_at, lambda: (floats(3, 4), 1, 4)),
    (read_2d_at, lambda: (floats(3, 4), -4, 0)),
    (add_at, lambda: (floats(3, 4), 3, 0, 1.0)),
    (unused_read, lambda: (floats(2), 2)),  # an unused read still checks its index
    (swap_elements, lambda: (floats(5), 1, 5)),
    (loop_over_rows, lambda: (floats(3, 4), 3)),
    (write_at, lambda: (np.zeros(2, np.int64), 0, math.nan)),  # ValueError, as NumPy
    (write_at, lambda: (np.zeros(2, np.int64), 0, 1e300)),  # OverflowError, as NumPy
]


def case_id(case) -> str:
    fn, make = case
    return fn.__name__ + "-" + "-".join(
        f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else type(a).__name__
        if isinstance(a, tuple) else repr(a) for a in make())


@pytest.mark.parametrize("fn,make", CASES, ids=[case_id(c) for c in CASES])
def test_interpreted_matches_python(fn, make):
    check_against_python(fn, make)


def test_every_bounds_error_has_numpys_message():
    x, a = np.arange(5.0), np.zeros((3, 4))
    for fn, args in ((read_at, (x, 5)), (read_at, (x, -6)), (read_2d_at, (a, 1, 4)),
                     (read_2d_at, (a, -4, 0)), (write_at, (x, 7, 1.0))):
        _, optimized = compile_stages(fn, args)
        with pytest.raises(IndexError) as ours:
            interpret(optimized, list(args))
        with pytest.raises(IndexError) as numpys:
            fn(*args)
        assert str(ours.value) == str(numpys.value)
        assert "out of bounds for axis" in str(ours.value)


# ---- the IR: lowering, types, passes -----------------------------------------------------

def test_lowering_uses_the_array_primitives():
    module = lower_function(add_outer)
    verify_module(module, typed=False)
    assert {"array_get", "array_set", "array_shape"} <= set(ops(module))
    module = lower_function(array_functions.attributes)
    assert {"array_shape", "array_size", "array_ndim", "len"} <= set(ops(module))
    # a literal index stays a tuple getitem until inference sees an array
    assert "getitem" in ops(lower_function(read_first))
    typed = infer_types(lower_function(read_first), [ArrayType(F64, 1)])
    assert "getitem" not in ops(typed) and ops(typed).count("array_get") == 1


def read_first(x):
    return x[0]


def test_inference_types_the_elements():
    typed, _ = compile_stages(scale_f32, (floats(3, dtype=np.float32),))
    graph = typed.entry_graph
    assert graph.params[0].type == ArrayType(F32, 1) and graph.outputs[0].type == F32  # NEP 50
    gets = [n for n in graph.walk() if n.op == "array_get"]
    sets = [n for n in graph.walk() if n.op == "array_set"]
    assert {n.outputs[0].type for n in gets} == {F32}
    assert [n.inputs[1].type for n in sets] == [F32]  # np.float32 * 0.1 is a float32
    typed, _ = compile_stages(flip_bools, (np.zeros(2, bool),))
    assert {n.outputs[0].type for n in typed.entry_graph.walk() if n.op == "array_get"} == {BOOL}
    typed, _ = compile_stages(count_and_double, (np.zeros(2, np.int64),))
    assert typed.entry_graph.outputs[0].type == I64
    typed, _ = compile_stages(shape_facts, (floats(2, 3),))
    assert typed.entry_graph.outputs[0].type == TupleType((BOOL, I64, I64, I64, TupleType((I64, I64))))


def test_passes_keep_every_element_read_and_write():
    typed, optimized = compile_stages(read_write_read, (floats(3),))
    for module in (typed, optimized):
        assert ops(module).count("array_get") == 4  # a, b and x[0] twice: none merged
        assert ops(module).count("array_set") == 3  # the overwritten store stays too
    order = [n.op for n in optimized.entry_graph.nodes if n.op.startswith("array_")]
    assert order == ["array_get", "array_set", "array_get", "array_set", "array_set",
                     "array_get", "array_get"]
    _, optimized = compile_stages(unused_read, (floats(2), 0))
    assert ops(optimized).count("array_get") == 1
    _, optimized = compile_stages(array_functions.scale_in_place, (floats(2), 2.0))
    versioned = [n for n in optimized.entry_graph.walk() if n.op == "if" and "hoisted" in n.attrs]
    assert len(versioned) == 1  # the loop checked once before it, and as it was (versioning.py)
    for version in versioned[0].regions:
        found = [n.op for n in version.walk()]
        assert found.count("array_get") == 1 and found.count("array_set") == 1


def test_a_branch_reading_an_element_is_not_speculated():
    _, optimized = compile_stages(first_or_default, (floats(2), 1))
    assert "if" in ops(optimized) and "select" not in ops(optimized)
    assert interpret(optimized, [np.zeros(0), 0]) == -1.0


def test_shape_queries_simplify_to_array_dim():
    _, optimized = compile_stages(array_functions.attributes, (floats(3, 7),))
    found = ops(optimized)
    assert "array_shape" not in found and "getitem" not in found and "len" not in found
    assert "array_ndim" not in found  # the type says it: a constant
    dims = sorted(n.attrs["axis"] for n in optimized.entry_graph.walk() if n.op == "array_dim")
    assert dims == [0, 1]  # a.shape[0] and len(a) merged
    _, optimized = compile_stages(ends, (floats(5), floats(3, 4)))
    assert all(0 <= n.attrs["axis"] < 2 for n in optimized.entry_graph.walk() if n.op == "array_dim")


def test_effects_of_the_array_primitives():
    _, optimized = compile_stages(add_outer, (floats(2, 2), floats(2), floats(2)))
    kinds = {n.op: has_effects(n) for n in optimized.entry_graph.walk() if n.op.startswith("array")}
    assert kinds == {"array_get": True, "array_set": True, "array_dim": False}


def test_printer_and_dot_show_array_types():
    typed, optimized = compile_stages(add_outer, (floats(2, 2), floats(2), floats(2)))
    for module in (typed, optimized):
        text = format_module(module)
        assert "%a: array<f64, 2>" in text and "array_set" in text and "array_get" in text
        dot = format_dot(module)
        assert "array<f64, 2>" in dot and dot.startswith("digraph")


def test_the_untyped_graph_verifies_and_interprets():
    module = lower_function(add_outer)
    verify_module(module, typed=False)
    a, u, v = floats(2, 3), floats(2), floats(3)
    expected = a + np.outer(u, v)
    interpret(module, [a, u, v])
    np.testing.assert_allclose(a, expected)


# ---- errors ----------------------------------------------------------------------------------

def starred_index(a, t):
    return a[*t]


def assign_attribute(a):
    a.shape = (1, 2)


def tuple_display_store(x):
    t = (x, x)
    t[0] = 1
    return t


GLOBAL_ARRAY = np.zeros(3)


def global_array_shape():
    return GLOBAL_ARRAY.shape[0] + GLOBAL_ARRAY[0]


def undefined_shape():
    return nowhere.size  # noqa: F821


def tuple_variable_index(i):
    t = (1, 2, 3)
    return t[i]


@pytest.mark.parametrize("fn,words", [
    (starred_index, ["a starred index"]),
    (assign_attribute, ["assignment to 'a.shape'"]),
    (tuple_display_store, ["element of a tuple"]),
    (tuple_variable_index, ["a tuple index must be a constant integer"]),
])
def test_unsupported_forms_are_compile_errors_naming_them(fn, words):
    check_compile_error(fn, words, UnsupportedSyntaxError)


@pytest.mark.parametrize("fn,words,count", [
    (global_array_shape, ["'GLOBAL_ARRAY' is a ndarray", "as an argument"], 2),
    (undefined_shape, ["name 'nowhere' is not defined"], 1),
])
def test_global_arrays_and_unknown_names_are_reported(fn, words, count):
    check_compile_error(fn, words, NameResolutionError, count)


def check_compile_error(fn, words, kind, count=None):
    with pytest.raises(kind) as info:
        lower_function(fn)
    message = str(info.value)
    for word in words:
        assert word in message
    assert "internal error" not in message
    assert len(info.value.problems) == (len(words) if count is None else count)


def float_index(x, f):
    return x[f]


def too_many_indices(x):
    return x[0, 1]


def tuple_param_index(t, i):
    return t[i]


def tuple_param_store(t):
    t[0] = 1.0


def mixed_join(x, c):
    v = x if c else 1.0
    return v


def mixed_arrays(x, y, c):
    v = x if c else y
    return v[0]


def shape_of_a_number(n):
    return n.shape


def store_a_tuple(x):
    x[0] = (1.0, 2.0)


def whole_array(x):
    return float(x)  # x * 2.0 works now (elementwise); a conversion of a whole array does not


def array_truth(x):
    if x:
        return 1
    return 0


@pytest.mark.parametrize("fn,types,words", [
    (float_index, [ArrayType(F64, 1), F64], ["array indices must be integers", "int(i)"]),
    (float_index, [ArrayType(F64, 1), BOOL], ["array indices must be integers"]),
    (too_many_indices, [ArrayType(F64, 1)], ["1-d array needs 1 index, got 2"]),
    (tuple_param_index, [TupleType((F64, F64)), I64], ["needs an array", "literal integer"]),
    (tuple_param_store, [TupleType((F64, F64))], ["needs an array", "cannot be changed"]),
    (mixed_join, [ArrayType(F64, 1), BOOL], ["array<f64, 1> on one path and f64"]),
    (mixed_arrays, [ArrayType(F64, 1), ArrayType(F32, 1), BOOL], ["array<f32, 1>"]),
    (mixed_arrays, [ArrayType(F64, 1), ArrayType(F64, 2), BOOL], ["array<f64, 2>"]),
    (shape_of_a_number, [F64], [".shape needs an array, got f64"]),
    (store_a_tuple, [ArrayType(F64, 1)], ["cannot store tuple<f64, f64>", "one number"]),
    (whole_array, [ArrayType(F64, 1)], ["needs numbers, got array<f64, 1>", "whole arrays"]),
    (array_truth, [ArrayType(F64, 1)], ["array<f64, 1>", "whole arrays"]),
])
def test_type_errors_name_the_problem(fn, types, words):
    with pytest.raises(TypingError) as info:
        infer_types(lower_function(fn), types)
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert info.value.loc is not None and info.value.loc.line > 0


# ---- dispatch ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,t", [(np.float64, F64), (np.float32, F32), (np.int64, I64),
                                     (np.bool_, BOOL)])
def test_supported_dtypes_give_array_types(dtype, t):
    for shape in ((3,), (2, 3), (2, 1, 2)):
        assert python_type_of(np.zeros(shape, dtype)) == ArrayType(t, len(shape))


@pytest.mark.parametrize("value,words", [
    (np.zeros(3, np.float16), ["'x'", "dtype float16"]),
    (np.zeros(3, np.longdouble), ["'x'", "dtype float128"]),
    (np.zeros(3, "M8[s]"), ["'x'", "dtype datetime64[s]"]),
    ({1.0, 2.0}, ["'x'", "set"]),
    ((1.0, np.zeros(2, np.float16)), ["'x'", "element 1", "dtype float16"]),
])
def test_unsupported_arguments_are_type_errors_naming_parameter_and_dtype(value, words):
    signature = Signature(read_at)
    with pytest.raises(TypeError) as info:
        signature.types_of(signature.bind((value, 0), {}))
    for word in words:
        assert word in str(info.value)


def test_arrays_are_passed_through_not_copied():
    x = np.arange(3.0)
    assert normalize_argument(x) is x
    values = Signature(tuple_of_arrays).bind(((x, x),), {})
    assert values[0][0] is x and values[0][1] is x
    assert Signature(read_at).types_of([x, 1]) == (ArrayType(F64, 1), I64)


class Subclass(np.ndarray):
    pass


def test_a_subclass_is_passed_as_a_view_of_the_same_memory(tmp_path):
    mapped = np.memmap(tmp_path / "x.bin", dtype=np.float64, mode="w+", shape=(4,))
    for x in (mapped, np.zeros(4).view(Subclass)):
        (value,) = Signature(read_at).bind((x,), {"i": 0})[:1]
        assert type(value) is np.ndarray and np.shares_memory(value, x)
        _, optimized = compile_stages(write_at, (value, 0, 0.0))
        interpret(optimized, [value, 2, 7.5])
        assert x[2] == 7.5


def unaligned():
    return np.frombuffer(bytearray(8 * 4 + 1), dtype=np.float64, offset=1, count=4)


def test_an_unaligned_array_binds_as_itself():
    """Unaligned arrays (Dask hands them out) are taken: bound as they are, typed as any
    array; the call goes through an aligned copy (dispatch.call_aligned,
    tests/backend/test_unaligned.py)."""
    x = unaligned()
    signature = Signature(read_at)
    values = signature.bind((x, 0), {})
    assert values[0] is x and x.ctypes.data % 8
    assert signature.types_of(values) == (ArrayType(F64, 1), I64)


@pytest.mark.parametrize("make,words", [
    (lambda: np.arange(3, dtype=">f8"), ["'x'", "non-native byte order", "newbyteorder"]),
    (lambda: np.ma.arange(3.0), ["'x'", "MaskedArray"]),
    (lambda: (np.zeros(2), np.arange(2, dtype=">i8")), ["'x'", "element 1", "byte order"]),
])
def test_arrays_compiled_code_cannot_take_are_refused_not_copied(make, words):
    signature = Signature(read_at)
    with pytest.raises(TypeError) as info:
        signature.types_of(signature.bind((make(), 0), {}))
    for word in words:
        assert word in str(info.value)


# ---- compiled code, where the backend takes arrays ---------------------------------------------

@functools.cache
def _backend_takes_arrays() -> bool:
    from astjit import jit
    try:
        return jit(read_at)(np.arange(3.0), 1) == 1.0
    except Exception:  # noqa: BLE001 - not there yet: the comparisons are skipped
        return False


JIT_CASES = [(fn, CORPUS[fn.__name__]) for fn in (array_functions.scale_in_place,
                                                  array_functions.running_max_index,
                                                  array_functions.attributes)] + CASES


@pytest.mark.parametrize("fn,make", JIT_CASES, ids=[case_id(c) for c in JIT_CASES])
def test_compiled_matches_python(fn, make):
    if not _backend_takes_arrays():
        pytest.skip("the LLVM backend does not take array arguments yet")
    from astjit import jit

    expected = outcome(fn, make())
    got = outcome(jit(fn), make())
    if got[0][0] == "raised" and expected[0][0] == "raised":  # compiled messages add the line
        assert got[0][1] is expected[0][1]
        assert got[0][2].startswith(expected[0][2]) or expected[0][1] is OverflowError
        assert same(got[1], expected[1])
    else:
        assert same_outcome(expected, got), f"{got} vs {expected}"


def test_compiled_writes_reach_the_callers_arrays():
    if not _backend_takes_arrays():
        pytest.skip("the LLVM backend does not take array arguments yet")
    from astjit import jit

    x = np.arange(5.0)
    assert jit(array_functions.scale_in_place)(x, 3.0) is None
    np.testing.assert_array_equal(x, np.arange(5.0) * 3.0)
    sub = np.zeros(3).view(Subclass)
    jit(write_at)(sub, 1, 2.0)
    assert sub[1] == 2.0
    with pytest.raises(TypeError, match="'x' of write_at"):
        jit(write_at)(np.zeros(3, ">f8"), 1, 2.0)
