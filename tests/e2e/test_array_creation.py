"""Arrays compiled code makes and returns: NumPy's creation functions, arrays as results
(returned, in tuples, carried by loops, chosen by `if`), and the retain/release pass that makes
their ownership explicit.

Each case runs through `lower_function`, `infer_types`, `optimize` (the IR verified after
every pass), the retain/release pass (`insert_array_ownership`, then `check_array_ownership`) and
the interpreter, on fresh arguments; the result must be what NumPy gives (values, dtype,
shape; only shape and dtype for `np.empty`). `jit` is compared the same way, and checked
for leaked references and memory over many calls. The functions below the helpers are
test inputs: the frontend reads their source. The retain/release pass and its checker on hand-built
graphs are in passes/test_memory_pass.py.
"""
from __future__ import annotations

import gc
import sys
import tracemalloc

import array_functions
import numpy
import numpy as np
import pytest
from array_checks import outcome, stages
from numpy import arange, zeros

from astjit import jit
from astjit.errors import CompileError, TypingError, UnsupportedCallError
from astjit.frontend import lower_function
from astjit.ir.core import Graph, Module
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.passes.retain_release import insert_array_ownership
from astjit.ir.printer import format_module
from astjit.ir.types import BOOL, F32, F64, I64, NONE, ArrayType, TupleType
from astjit.ir.verify import verify_module

A1, A2 = ArrayType(F64, 1), ArrayType(F64, 2)


# ---- helpers -------------------------------------------------------------------------------

def same(a, b, values: bool = True) -> bool:
    """Equal results: arrays by type, dtype, shape (and values unless `values` is False)."""
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(same(x, y, values)
                                                                 for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape and (
            not values or np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, np.generic) and isinstance(b, (np.generic, float, int)):
        # compiled code gives NumPy's scalar (test_numpy_scalars.py checks its type), the
        # interpreter the Python number it equals
        a, b = a.item(), b.item() if isinstance(b, np.generic) else b
    return type(a) is type(b) and a == b


def same_outcome(want, have, values: bool = True) -> bool:
    if want[0] != have[0]:
        return False
    if want[0] == "raised":  # compiled code adds " (at file:line: source)"
        return want[1] is have[1] and have[2].startswith(want[2])
    return same(want[1], have[1], values)


def check_against_numpy(fn, make, values: bool = True):
    """The interpreter on the typed and the final module, and jit, do what `fn` does."""
    expected = outcome(fn, make())
    typed, final = stages(fn, make())
    for stage, module in (("typed", typed), ("final", final)):
        got = outcome(lambda *a, m=module: interpret(m, list(a)), make())
        assert same_outcome(expected, got, values), f"{fn.__name__} ({stage}): {got} vs {expected}"
    got = outcome(jit(fn), make())
    assert same_outcome(expected, got, values), f"{fn.__name__} (jit): {got} vs {expected}"
    return typed, final


def ops(module: Module) -> list[str]:
    return [node.op for graph in module.graphs.values() for node in graph.walk()]


def floats(*shape, seed=0):
    return np.random.default_rng([seed, *shape]).standard_normal(shape)


# ---- test inputs: creation functions --------------------------------------------------------

def zeros_n(n):
    return np.zeros(n)


def zeros_nm(n, m):
    return np.zeros((n, m))


def zeros_list_shape(n):
    return np.zeros([n, 2, 1])


def zeros_shape_of(a):
    return np.zeros(a.shape), np.ones(a.shape[1])


def zeros_tuple_variable(n):
    s = (n, n + 1)
    return np.zeros(s)


def zero_d():
    return np.zeros(()), np.full((), 2.5), np.ones((0, 3))


def dtypes(n):
    return (np.zeros(n, dtype=np.float32), np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.bool_),
            np.ones(n, dtype=bool), np.zeros(n, dtype=int), np.ones(n, dtype=float),
            np.zeros(n, dtype="float32"), np.ones((n, 2), np.int64), np.zeros(n, dtype=None))


def full_values(n, v):
    return np.full(n, v), np.full((2, n), 7), np.full(n, True), np.full(n, v, dtype=np.int64), \
        np.full(n, 1, dtype=np.float32), np.full(shape=(n,), fill_value=-1.5)


def like_functions(x, k):
    return np.zeros_like(x), np.ones_like(x), np.full_like(x, 2.5), np.full_like(k, 2.5), \
        np.zeros_like(x, dtype=np.int64), np.ones_like(k, dtype=bool), np.full_like(x, 3, np.float32)


def empties(x, n):
    return np.empty(n), np.empty((n, 2), dtype=np.int64), np.empty_like(x), \
        np.empty_like(x, dtype=np.float32)


def aranges(n, f):
    return np.arange(n), np.arange(2, n), np.arange(n, 0, -2), np.arange(f), \
        np.arange(0.0, 1.0, 0.25), np.arange(1, f, 0.5), np.arange(True), np.arange(-n)


def by_other_names(n):
    return zeros(n), arange(n), numpy.ones(n)


def negative_size(n):
    return np.zeros((2, n))


def zero_step(a, b, s):
    return np.arange(a, b, s)


def negative_full(n):
    return np.full(n, 1.0)


# ---- test inputs: arrays as results ---------------------------------------------------------

def returns_argument(x):
    return x


def returns_in_tuples(x, n):
    a = np.zeros(n)
    return (a, x), ((x, a), n), a


def _new_next(y, i):
    z = np.zeros_like(y)
    for j in range(len(y)):
        z[j] = y[j] + i
    return z


def reallocate_in_loop(x, k):
    y = x
    for i in range(k):
        y = _new_next(y, i)
    return y


def zeros_like_in_loop(x, k):
    y = x
    for i in range(k):
        y = np.zeros_like(y)
        y[0] = y[0] + i
    return y


def swap_in_loop(x, k):
    a, b = x, np.ones(len(x))
    i = 0
    while i < k:
        a, b = b, a
        i += 1
    return a, b


def temporary_in_loop(n):
    s = 0.0
    for i in range(n):
        t = np.full(3, float(i))
        s += t[0] + t[2]
    return s


def choose_new_or_argument(x, c):
    if c:
        z = np.ones(3)
    else:
        z = x
    return z


def choose_arguments(x, y, c):
    return x if c else y


def same_array_twice(x, c):
    if c:
        a = b = np.zeros(2)
    else:
        a = x
        b = np.ones(2)
    a[0] = 5.0
    return a, b


def first_large(x, n):
    for i in range(n):
        if x[i] > 0.5:
            return np.full(2, x[i])
    return np.arange(float(n))


def allocate_until(n):
    total = np.zeros(1)
    while total[0] < n:
        step = np.ones(1)
        total[0] += step[0]
    return total


def _ramp(n):
    if n == 0:
        return np.zeros(1)
    out = np.zeros(n + 1)
    previous = _ramp(n - 1)
    for i in range(n):
        out[i] = previous[i]
    out[n] = n
    return out


def recursion_returns_arrays(n):
    return _ramp(n)


def _first(t):
    return t[0]


def pick_from_tuple_argument(t):
    a, b = t
    return b, _first(t)


def out_of_bounds_after_allocating(x, i):
    out = np.zeros_like(x)
    for j in range(len(x)):
        out[j] = x[j] * 2.0
    return out[i]


def discarded(n):
    np.zeros(n)
    return n


def unused_then_reassigned(n):
    a = np.zeros(n)
    a = np.ones(n)
    return a


CREATION_CASES = [
    (zeros_n, lambda: (3,)),
    (zeros_n, lambda: (0,)),
    (zeros_nm, lambda: (2, 3)),
    (zeros_list_shape, lambda: (2,)),
    (zeros_shape_of, lambda: (floats(2, 3),)),
    (zeros_tuple_variable, lambda: (2,)),
    (zero_d, lambda: ()),
    (dtypes, lambda: (3,)),
    (full_values, lambda: (3, 2.75)),
    (full_values, lambda: (2, -1.5)),
    (like_functions, lambda: (floats(2, 3), np.arange(4))),
    (aranges, lambda: (5, 2.5)),
    (aranges, lambda: (0, -1.0)),
    (by_other_names, lambda: (3,)),
    (array_functions.creation, lambda: (4, floats(3, 2))),
    (array_functions.prefix_sum, lambda: (floats(50),)),
    (array_functions.loop_2d, lambda: (floats(4, 5), floats(5))),
    # NumPy's errors, raised by compiled code too
    (negative_size, lambda: (-1,)),
    (negative_full, lambda: (-3,)),
    (zero_step, lambda: (0, 5, 0)),
    (zero_step, lambda: (0.0, 5.0, 0.0)),
]

RESULT_CASES = [
    (returns_argument, lambda: (floats(3),)),
    (returns_in_tuples, lambda: (floats(2), 3)),
    (reallocate_in_loop, lambda: (floats(3), 4)),
    (reallocate_in_loop, lambda: (floats(3), 0)),
    (zeros_like_in_loop, lambda: (floats(3), 3)),
    (swap_in_loop, lambda: (floats(2), 3)),
    (temporary_in_loop, lambda: (4,)),
    (choose_new_or_argument, lambda: (floats(3), True)),
    (choose_new_or_argument, lambda: (floats(3), False)),
    (choose_arguments, lambda: (floats(3), floats(2), True)),
    (choose_arguments, lambda: (floats(3), floats(2), False)),
    (same_array_twice, lambda: (floats(2), True)),
    (same_array_twice, lambda: (floats(2), False)),
    (first_large, lambda: (np.array([0.1, 0.7, 0.2]), 3)),
    (first_large, lambda: (np.array([0.1, 0.2]), 2)),
    (allocate_until, lambda: (3,)),
    (recursion_returns_arrays, lambda: (4,)),
    (pick_from_tuple_argument, lambda: ((floats(2), floats(3)),)),
    (out_of_bounds_after_allocating, lambda: (floats(3), 1)),
    (out_of_bounds_after_allocating, lambda: (floats(3), 3)),
    (discarded, lambda: (2,)),
    (unused_then_reassigned, lambda: (2,)),
]


def case_id(case) -> str:
    fn, make = case
    return fn.__name__ + "-" + "-".join(
        f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else
        type(a).__name__ if isinstance(a, tuple) else repr(a) for a in make())


@pytest.mark.parametrize("fn,make", CREATION_CASES + RESULT_CASES,
                         ids=[case_id(c) for c in CREATION_CASES + RESULT_CASES])
def test_matches_numpy(fn, make):
    check_against_numpy(fn, make)


def test_empty_has_numpys_shape_and_dtype():
    check_against_numpy(empties, lambda: (floats(2, 3), 4), values=False)


def test_results_write_into_the_caller_s_array_when_they_are_it():
    x = floats(3)
    assert jit(returns_argument)(x) is x
    assert interpret(stages(returns_argument, (x,))[1], [x]) is x
    z = jit(choose_new_or_argument)(x, False)
    assert z is x
    a, b = jit(swap_in_loop)(x, 1)
    assert b is x and a is not x


# ---- the IR: frontend and inference ---------------------------------------------------------

def test_lowering_gives_the_creation_primitives():
    module = lower_function(array_functions.creation)
    verify_module(module, typed=False)
    nodes = [n for n in module.entry_graph.nodes if n.op.startswith("array_")]
    assert [n.op for n in nodes] == ["array_new", "array_new", "array_new_like", "array_new",
                                     "array_arange"]
    assert nodes[0].attrs == {"dtype": F64, "fill": 0, "packed_shape": True}  # np.zeros(n)
    assert nodes[1].attrs == {"dtype": F64, "fill": 1} and len(nodes[1].inputs) == 2
    assert nodes[2].attrs == {"dtype": None, "fill": 0, "what": "np.zeros_like"}
    assert nodes[3].attrs == {"dtype": None, "fill": "value"} and len(nodes[3].inputs) == 3
    assert nodes[4].attrs == {} and len(nodes[4].inputs) == 1


def test_inference_unpacks_shapes_and_settles_dtypes():
    typed, _ = stages(array_functions.creation, (4, floats(3, 2)))
    graph = typed.entry_graph
    assert graph.outputs[0].type == TupleType((A1, A2, A2, A2, ArrayType(I64, 1)))
    made = [n for n in graph.nodes if n.op.startswith("array_")]
    assert all("packed_shape" not in n.attrs and n.attrs.get("dtype") is not None
               for n in made if n.op != "array_arange")
    typed, _ = stages(zeros_shape_of, (floats(2, 3),))
    new = [n for n in typed.entry_graph.nodes if n.op == "array_new"][0]
    assert len(new.inputs) == 2 and new.outputs[0].type == A2
    typed, _ = stages(full_values, (3, 2.5))
    kinds = [e.dtype for e in typed.entry_graph.outputs[0].type.elements]
    assert kinds == [F64, I64, BOOL, I64, F32, F64]
    typed, _ = stages(like_functions, (floats(2, 3), np.arange(4)))
    kinds = [e.dtype for e in typed.entry_graph.outputs[0].type.elements]
    assert kinds == [F64, F64, F64, I64, I64, BOOL, F32]


def test_the_untyped_graph_interprets():
    module = lower_function(array_functions.creation)
    assert same(interpret(module, [3, floats(2)]), array_functions.creation(3, floats(2)))
    module = lower_function(full_values)
    assert same(interpret(module, [2, 1.5]), full_values(2, 1.5))


@pytest.mark.parametrize("source,words", [
    ("np.linalg.eig(x)", ["np.linalg.eig is not supported yet"]),
    ("np.nanmedian(x)", ["np.nanmedian is not supported yet"]),
    ("np.fft.fft(x)", ["np.fft.fft is not supported yet"]),
    ("np.random.rand(3)", ["np.random.rand is not supported yet"]),
    ("np.zeros(3, order='C')", ["keyword argument order= of np.zeros() is not supported"]),
    ("np.zeros(3, dtype=np.float16)", ["dtype np.float16 of np.zeros() is not supported",
                                       "int8 ... int64, uint8 ... uint64"]),
    ("np.zeros(3, dtype=x)", ["dtype of np.zeros() must be known at compile time"]),
    ("np.arange(3, dtype=float)", ["dtype= of np.arange() is not supported", "float(n)"]),
    ("np.arange()", ["np.arange() takes 1 to 3 arguments"]),
    ("np.full(3)", ["np.full() is missing the argument 'fill_value'"]),
    ("np.ones(3, float, 4)", ["np.ones() takes at most 2 positional arguments"]),
    ("np.nothing(3)", ["call to 'np.nothing' is not supported", "numpy has no 'nothing'"]),
])
def test_unsupported_numpy_calls_are_compile_errors_naming_them(tmp_path, source, words):
    fn = function_from_source(tmp_path, f"def f(x):\n    return {source}\n")
    with pytest.raises(UnsupportedCallError) as info:
        lower_function(fn)
    for word in words:
        assert word in str(info.value)
    assert len(info.value.problems) == 1 and info.value.loc.line == 3  # after the import


def function_from_source(tmp_path, text: str):
    """`f` of a module written to a file (the frontend reads source files)."""
    import importlib.util

    path = tmp_path / f"m{abs(hash(text))}.py"
    path.write_text("import numpy as np\n" + text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def float_shape(f):
    return np.zeros(f)


def tuple_fill(n):
    return np.full(n, (1.0, 2.0))


def like_of_a_number(f):
    return np.zeros_like(f)


def mixed_dtypes(n, c):
    a = np.zeros(n) if c else np.zeros(n, dtype=np.int64)
    return a


def mixed_ndims(n, c):
    if c:
        a = np.zeros(n)
    else:
        a = np.zeros((n, n))
    return a


def array_or_number(n, c):
    return np.zeros(n) if c else 0.0


@pytest.mark.parametrize("fn,types,words", [
    (float_shape, [F64], ["shape of np.zeros() must be an int or a tuple of ints, got f64"]),
    (float_shape, [TupleType((F64,))], ["array dimensions must be ints, got f64"]),
    (float_shape, [NONE], ["shape of np.zeros() must be an int or a tuple of ints, got none"]),
    (tuple_fill, [I64], ["np.full() fills an array with a number, got tuple<f64, f64>"]),
    (like_of_a_number, [F64], ["np.zeros_like() needs an array, got f64"]),
    (mixed_dtypes, [I64, BOOL], ["array<f64, 1> on one path and array<i64, 1>"]),
    (mixed_ndims, [I64, BOOL], ["array<f64, 1> on one path and array<f64, 2>"]),
    (array_or_number, [I64, BOOL], ["array<f64, 1> on one path and f64"]),
])
def test_type_errors_name_the_problem(fn, types, words):
    with pytest.raises(TypingError) as info:
        infer_types(lower_function(fn), types)
    for word in words:
        assert word in str(info.value)
    assert info.value.loc is not None and info.value.loc.line > 0


# ---- the retain/release pass on real graphs -----------------------------------------------

def count(module: Module, op: str) -> int:
    return ops(module).count(op)


def test_no_references_change_where_nothing_is_consumed():
    _, final = stages(array_functions.prefix_sum, (floats(3),))
    assert count(final, "array_retain") == count(final, "array_release") == 0
    _, final = stages(array_functions.creation, (3, floats(2)))  # all moved into the tuple
    assert count(final, "array_retain") == count(final, "array_release") == 0


def test_returning_or_yielding_a_borrowed_array_retains_it():
    _, final = stages(returns_argument, (floats(2),))
    assert ops(final) == ["array_retain"]
    _, final = stages(choose_new_or_argument, (floats(2), True))
    (node,) = final.entry_graph.nodes
    then, orelse = node.regions
    assert [n.op for n in then.nodes] == ["const", "array_new"]
    assert [n.op for n in orelse.nodes] == ["array_retain"]


def test_a_loop_releases_the_array_it_replaces():
    _, final = stages(zeros_like_in_loop, (floats(2), 2))
    graph = final.entry_graph
    assert [n.op for n in graph.nodes] == ["const", "array_retain", "while"]  # x, retained
    loop = graph.nodes[-1]
    body_ops = [n.op for n in loop.regions[1].nodes]
    assert body_ops.count("array_release") == 1
    assert body_ops.index("array_release") == body_ops.index("array_new_like") + 1
    assert "array_release" not in ops_of(loop.regions[0])


def ops_of(graph: Graph) -> list[str]:
    return [n.op for n in graph.walk()]


def test_a_temporary_is_released_after_its_last_use():
    _, final = stages(temporary_in_loop, (3,))
    body = final.entry_graph.nodes[-1].regions[1] if final.entry_graph.nodes[-1].op == "while" \
        else next(n for n in final.entry_graph.nodes if n.op == "while").regions[1]
    names = [n.op for n in body.nodes]
    last_read = max(i for i, op in enumerate(names) if op == "array_get")
    assert names.index("array_release") == last_read + 1


def test_an_unused_array_is_released_at_once():
    _, final = stages(discarded, (2,))
    assert [n.op for n in final.entry_graph.nodes] == ["array_new", "array_release"]
    _, final = stages(unused_then_reassigned, (2,))
    assert [n.op for n in final.entry_graph.nodes] == ["array_new", "array_release", "array_new"]


def test_the_optimized_stage_shows_the_references():
    f = jit(zeros_like_in_loop)
    text = f.ir(floats(2), 2)
    assert "array_retain" in text and "array_release" in text
    assert text == format_module(f.dispatcher.specialize((A1, I64)).optimized)


def test_the_pass_is_idempotent():
    for fn, make in RESULT_CASES:
        _, final = stages(fn, make())
        before = format_module(final)
        insert_array_ownership(final)
        assert format_module(final) == before, fn.__name__


# ---- compiled code: no leaks ----------------------------------------------------------------

LEAK_CASES = [case for case in CREATION_CASES + RESULT_CASES
              if case[0] not in (array_functions.loop_2d, array_functions.prefix_sum)]


def arrays_in(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [a for v in value for a in arrays_in(v)]
    return [value] if isinstance(value, np.ndarray) else []


def reference_counts(run, args) -> tuple[list[int], list[int]]:
    """The reference counts of the result's arrays, and of the argument arrays after 50 calls."""
    arguments = arrays_in(args)
    for _ in range(50):
        result = outcome(run, args)
    counts = [sys.getrefcount(a) for a in arrays_in(result[1])] if result[0] == "ok" else []
    del result
    gc.collect()
    return counts, [sys.getrefcount(a) for a in arguments]


@pytest.mark.parametrize("fn,make", LEAK_CASES, ids=[case_id(c) for c in LEAK_CASES])
def test_compiled_code_leaks_no_reference(fn, make):
    """The result holds what the Python function's result holds; the arguments end as they began."""
    args = make()
    before = [sys.getrefcount(a) for a in arrays_in(args)]
    f = jit(fn)
    assert reference_counts(f, args) == reference_counts(fn, args)
    assert reference_counts(f, args)[1] == before


@pytest.mark.parametrize("fn,make", [
    (reallocate_in_loop, lambda: (floats(1000), 5)),
    (swap_in_loop, lambda: (floats(1000), 3)),
    (returns_in_tuples, lambda: (floats(10), 1000)),
    (first_large, lambda: (np.full(1000, 0.1), 1000)),
    (temporary_in_loop, lambda: (100,)),
    (out_of_bounds_after_allocating, lambda: (floats(1000), 5000)),  # IndexError every call
    (zero_step, lambda: (0, 5, 0)),
])
def test_compiled_code_frees_what_it_allocates(fn, make):
    f = jit(fn)
    args = make()
    outcome(f, args)  # compile, and warm NumPy's caches
    tracemalloc.start()
    try:
        outcome(f, args)
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(200):
            outcome(f, args)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{fn.__name__}: {grown} bytes still allocated after 200 calls"


def test_errors_name_the_source_line_in_compiled_code():
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        jit(negative_size)(-2)
    with pytest.raises(IndexError, match="out of bounds"):
        jit(out_of_bounds_after_allocating)(floats(3), 7)


def test_jit_failures_are_compile_errors_not_crashes():
    with pytest.raises(CompileError):
        jit(mixed_ndims)(2, True)


def sizes_of_new_arrays(n, m, x):
    a = np.zeros((n, m))
    b = np.ones_like(x)
    return a.shape[1] + len(a) + b.shape[0] + len(np.arange(n))


def test_the_dimensions_of_a_new_array_are_those_it_was_made_with():
    _, final = check_against_numpy(sizes_of_new_arrays, lambda: (2, 3, floats(4)))
    dims = [n for n in final.entry_graph.walk() if n.op == "array_dim"]
    assert [(n.inputs[0].name, n.attrs["axis"]) for n in dims] == [("x", 0), ("", 0)]  # arange's
