"""Array modules compiled in two parts (backend/llvm/jit/split.py, engine.Engine.compile_ir):
the cut of a printed module, the cycle check that keeps loops out of the glue, and
modules that go through the engine whole or cut."""
from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest
from llvmlite import ir

from astjit import jit
from astjit.backend.llvm.jit import split
from astjit.backend.llvm.jit.engine import engine

PRINTED = '''\
@msg = private constant [3 x i8] c"hi\\00"

declare double @exp(double)

define internal double @helper(double %x) {
  %y = call double @exp(double %x)
  ret double %y
}

define internal void @"f.loop.7"(ptr %p, i64 %n) {
newFuncRoot:
  br label %head

head:
  %i = phi i64 [ 0, %newFuncRoot ], [ %next, %head ]
  %a = getelementptr double, ptr %p, i64 %i
  %v = load double, ptr %a
  %w = call double @helper(double %v)
  store double %w, ptr %a
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %head, label %done

done:
  ret void
}

define internal i32 @"f[array]"(ptr %p, i64 %n) {
entry:
  %ok = icmp sgt i64 %n, 0
  br i1 %ok, label %run, label %fail

run:
  call void @"f.loop.7"(ptr %p, i64 %n)
  ret i32 0

fail:
  ret i32 1
}

define i32 @wrapper(ptr %p, i64 %n) {
  %r = call i32 @"f[array]"(ptr %p, i64 %n)
  ret i32 %r
}
'''


def test_the_loops_module_defines_the_loops_and_what_they_call_and_declares_the_rest():
    text = split.loops_module(PRINTED, ["f.loop.7"])
    assert 'define void @"f.loop.7"(ptr %p, i64 %n) {' in text  # external now
    assert "define internal double @helper" in text  # the loop calls it: kept
    assert 'declare i32 @"f[array]"(ptr %p, i64 %n)\n' in text  # glue: declared only
    assert "declare i32 @wrapper(ptr %p, i64 %n)\n" in text
    assert "@msg = private constant" in text
    engine().parse(text)  # it is a module LLVM takes


def test_no_loops_module_while_some_other_function_keeps_a_loop():
    assert split.loops_module(PRINTED, []) is None
    assert split.loops_module(PRINTED, ["f.loop.7"]) is not None


@pytest.mark.parametrize(("body", "cycle"), [
    ("  ret void\n", False),
    ("  br i1 %c, label %a, label %b\na:\n  br label %d\nb:\n  br label %d\nd:\n  ret void\n",
     False),
    ("  br label %1\n1:\n  br i1 %c, label %1, label %2\n2:\n  ret void\n", True),
    ("  br label %\"x.y\"\n\"x.y\":\n  br label %z\nz:\n  br label %\"x.y\"\n", True),
    ("  switch i32 %k, label %a [\n    i32 1, label %b\n  ]\na:\n  ret void\n"
     "b:\n  br label %a\n", False),
    ("  switch i32 %k, label %a [\n    i32 1, label %b\n  ]\na:\n  ret void\n"
     "b:\n  br label %b\n", True),
])
def test_cycles_are_found_in_printed_functions(body, cycle):
    chunk = "define void @f(i1 %c, i32 %k) {\n" + body + "}\n"
    assert split._has_cycle(chunk) is cycle


def test_a_module_loops_where_one_of_its_functions_does():
    """What `Engine.emit_parts` asks before running the loop extractor."""
    assert split.has_loop(PRINTED)
    assert not split.has_loop(PRINTED.replace("br i1 %more, label %head, label %done",
                                              "br label %done"))
    assert not split.has_loop("declare double @exp(double)\n")


def test_a_loop_mark_answers_whether_a_module_loops_without_a_search(monkeypatch):
    """A module holding a branch with `llvm.loop` metadata (astjit's lowerings mark the
    branch closing each of their loops) loops; no function's blocks are searched."""
    marked = PRINTED.replace("br i1 %more, label %head, label %done",
                             "br i1 %more, label %head, label %done, !llvm.loop !0")
    marked += '!0 = distinct !{!0, !1}\n!1 = !{!"llvm.loop.unroll.disable"}\n'
    monkeypatch.setattr(split, "_has_cycle", lambda chunk: pytest.fail("searched"))
    assert split.has_loop(marked)


def test_borrowed_loops_print_as_declarations():
    glue = PRINTED.replace('define internal void @"f.loop.7"',
                           'define available_externally void @"f.loop.7"')
    shown = split.without_borrowed(glue)
    assert 'declare void @"f.loop.7"(ptr %p, i64 %n)\n' in shown
    assert "newFuncRoot" not in shown and "define i32 @wrapper" in shown


MINIMAL_LOOP = '''\
define i64 @count(i64 %n) {
entry:
  br label %head

head:
  %i = phi i64 [ 0, %entry ], [ %next, %head ]
  %s = phi i64 [ 0, %entry ], [ %t, %head ]
  %t = add i64 %s, %i
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %head, label %done

done:
  ret i64 %t
}
'''


def test_a_loop_the_extractor_leaves_in_place_compiles_whole():
    """LLVM's extractor keeps a function that is nothing but its loop: the module then
    compiles whole, at O3, never as glue holding a loop."""
    compiled = engine().compile_ir(MINIMAL_LOOP, arrays=True)
    assert compiled.pipelines == ("scalar",)
    count = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(compiled.addresses["count"])
    assert count(10) == 45


def test_a_function_that_is_one_loop_nest_is_cut():
    """The emitter's entry block holds the stack slots alone and branches on: a graph with
    one nest and no choice before it (np.trace's sum of its strided diagonal) is not
    nothing but its loop to the extractor, and compiles in two parts."""
    def trace(a):
        return np.trace(a)

    f = jit(trace)
    a = np.arange(12.0).reshape(3, 4)
    assert f(a) == np.trace(a)
    (spec,) = f.dispatcher.specializations.values()
    assert spec.compiled.compiled.pipelines == ("direct", "glue")


def stacked_product(a, b):
    return a @ b, b.swapaxes(1, 2) @ a.swapaxes(1, 2)


def sorted_columns(x):
    return np.sort(x, axis=0), np.argsort(x, axis=0)


@pytest.mark.parametrize("fn, shapes", [(stacked_product, [(3, 4, 5), (3, 5, 2)]),
                                        (sorted_columns, [(6, 4)])])
def test_loops_around_runtime_calls_live_in_the_runtime(fn, shapes):
    """A stack of products and the lanes of a sort loop in runtime functions (shared.py)
    calling BLAS or NumPy's sort per item: the kernel's module has no loop to compile."""
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(shape) for shape in shapes]
    f = jit(fn)
    for got, expected in zip(f(*args), fn(*args)):
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    (spec,) = f.dispatcher.specializations.values()
    assert spec.compiled.compiled.pipelines == ("glue",)


def test_loops_with_error_exits_and_results_cross_the_cut():
    """An explicit loop's bounds check leaves it for the glue's error path, and a value
    it computes is used after it."""
    def scan(x, k):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i + k]
        return s * 2.0, x * s

    f = jit(scan)
    x = np.arange(6.0)
    total, scaled = f(x, 0)
    assert total == 30.0
    np.testing.assert_array_equal(scaled, x * 15.0)
    with pytest.raises(IndexError):
        f(x, 1)
    (spec,) = f.dispatcher.specializations.values()
    assert spec.compiled.compiled.pipelines == ("loops", "glue")


def test_identical_loop_nests_compile_once():
    def twice(a, b):
        return a * 2.0 + 1.0, b * 2.0 + 1.0

    f = jit(twice)
    a, b = np.arange(5.0), np.arange(7.0)
    ra, rb = f(a, b)
    np.testing.assert_array_equal(ra, a * 2.0 + 1.0)
    np.testing.assert_array_equal(rb, b * 2.0 + 1.0)
    (spec,) = f.dispatcher.specializations.values()
    loops = spec.compiled.compiled.parts[0].llvm_ir_optimized
    assert loops.count("\ndefine ") == 1


def test_the_loops_outputs_are_private_slots():
    chunk = ('define void @"f.loop.1"(i64 %n, ptr %p, ptr %.5.out, ptr %.6.out) {\n'
             "head:\n  store i64 %n, ptr %.5.out, align 8\n  store i1 true, ptr %.6.out, align 1\n"
             "  store double 0.0, ptr %p\n  ret void\n}\n")
    header = split._private_outputs(chunk).split("\n", 1)[0]
    assert "ptr %p," in header  # an array's data: not an output
    assert "ptr noalias writable dereferenceable(8) %.5.out," in header
    assert "ptr noalias writable dereferenceable(1) %.6.out)" in header


def test_a_recurrence_across_the_cut_reads_what_it_wrote():
    def recur(x):
        y = np.empty_like(x)
        y[0] = x[0]
        for i in range(1, x.shape[0]):
            y[i] = 0.5 * y[i - 1] + np.sin(x[i])
        return y

    x = np.linspace(-2.0, 2.0, 50)
    expected = np.empty_like(x)
    expected[0] = x[0]
    for i in range(1, 50):
        expected[i] = 0.5 * expected[i - 1] + np.sin(x[i])
    np.testing.assert_allclose(jit(recur)(x), expected, rtol=1e-15)


def _summed(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return x * s


def test_compiles_leave_no_llvmlite_objects_behind():
    """What a compile keeps is the machine code and texts: the llvmlite IR objects it
    built (and whatever caches hang on them, such as a parameter's dims) go with it."""
    def alive() -> int:
        gc.collect()
        return sum(isinstance(o, ir.Function) for o in gc.get_objects())

    before = alive()
    for _ in range(3):
        np.testing.assert_array_equal(jit(_summed)(np.ones(3)), np.full(3, 3.0))
    assert alive() == before


MARKED = '''\
define void @"f.loop.1"(ptr %p, i64 %n) {
newFuncRoot:
  br label %head

head:
  %i = phi i64 [ 0, %newFuncRoot ], [ %next, %body ]
  %more = icmp slt i64 %i, %n
  br i1 %more, label %body, label %done

body:
  %next = add i64 %i, 1
  br label %head, !llvm.loop !0

done:
  ret void
}
'''


def test_loops_the_lowerings_marked_are_told_from_the_users():
    """A loop whose closing branch carries `llvm.loop` metadata is one the array lowerings
    made (nests.count_up); one without, a loop the user wrote."""
    assert split.marked_loops_only(MARKED)
    assert not split.marked_loops_only(MARKED.replace(", !llvm.loop !0", ""))
    assert split.marked_loops_only(MARKED.replace(", !llvm.loop !0", "").replace(
        "br label %head\n\ndone", "br label %done\n\ndone"))  # no cycle left
    assert not split.marked_loops_only(PRINTED)


DONE = '''
!0 = distinct !{!0, !1, !2}
!1 = !{!"llvm.loop.vectorize.enable", i1 false}
!2 = !{!"llvm.loop.unroll.disable"}
!3 = distinct !{!3, !2}
'''


def test_a_module_of_done_loops_alone_needs_no_optimizer():
    """Loops astjit vectorized itself, or left scalar on purpose, carry `vectorize.enable`
    false (loop_metadata.mark_done); a loops module of those alone is compiled without
    LLVM's optimizer (engine.Engine.emit_parts: the `direct` pipeline)."""
    def direct(text: str) -> bool:
        return split.marked_loops_only(text) and split.marks_done(text)

    assert direct(MARKED + DONE)
    assert not direct(MARKED.replace("!llvm.loop !0", "!llvm.loop !3") + DONE)
    assert not direct(MARKED.replace(", !llvm.loop !0", "") + DONE)


def _prefix_sum(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
        out[i] = s
    return s


def test_array_loops_compile_without_loop_strength_reduction():
    """The loops module of elementwise work and reductions has its machine code made
    without LLVM's loop strength reduction (engine.ARRAY_LOOPS_CODEGEN), which its
    assembly (regenerated from the optimized IR) shows too; one holding a loop the user
    wrote keeps it."""
    from astjit.backend.llvm.jit.engine import ARRAY_LOOPS_CODEGEN

    x = np.linspace(-1.0, 1.0, 37)
    f = jit(_row_softmax_like)
    np.testing.assert_allclose(f(x), np.exp(x) / np.sum(np.exp(x)), rtol=1e-14)
    (spec,) = f.dispatcher.specializations.values()
    loops = spec.compiled.compiled.parts[0]
    assert (loops.pipeline, loops.codegen) == ("direct", ARRAY_LOOPS_CODEGEN)  # widen.py
    assert "# ---- astjit: the direct module" in spec.compiled.compiled.asm

    g = jit(_prefix_sum)
    out = np.zeros_like(x)
    assert g(x, out) == pytest.approx(np.sum(x), rel=1e-14)
    np.testing.assert_allclose(out, np.cumsum(x), rtol=1e-14)
    (spec,) = g.dispatcher.specializations.values()
    loops = spec.compiled.compiled.parts[0]
    assert (loops.pipeline, loops.codegen) == ("loops", ())


def _row_softmax_like(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def _argmax(x):
    return np.argmax(x)


def _argmax_rows(x):
    return np.argmax(x, axis=1)


def _argmax_distance(x):
    return np.argmax(np.abs(x - 0.5))


def _pipelines(f) -> set[tuple[str, ...]]:
    return {spec.compiled.compiled.pipelines for spec in f.dispatcher.specializations.values()}


def test_argmax_searches_are_calls_of_the_runtime():
    """np.argmax's searches are the runtime's (scans.py): one row for one index (a flat
    array) by `astjit.arg.row.<kind>.<dtype>`, the rows of a result array by
    `astjit.arg.rows.<kind>.<dtype>` (bools too), so that their kernels compile no loop
    of their own; only a fused loop (argmax_distance's `|x - 0.5|`) has a module. Rows
    that are not evenly spaced unit-stride rows leave the first tier for the general one,
    whose loop over rows calls the one-row search or compares element by element."""
    rng = np.random.default_rng(3)
    x = rng.random(1000)
    for fn, a, want in ((_argmax, x, ("glue",)),
                        (_argmax_rows, x.reshape(20, 50), ("glue",)),
                        (_argmax_rows, (x.reshape(10, 100) * 200 - 100).astype(np.int8),
                         ("glue",)),
                        (_argmax_distance, x, ("direct", "glue")),
                        (_argmax_rows, x.reshape(20, 50) > 0.5, ("glue",))):
        f = jit(fn)
        assert np.array_equal(f(a), fn(a))
        assert _pipelines(f) == {want}, (fn.__name__, a.dtype)
    strided = x.reshape(50, 20)[:, ::2]
    f = jit(_argmax_rows)
    assert np.array_equal(f(strided), np.argmax(strided, axis=1))
    assert _pipelines(f) == {("direct", "glue")}  # scalar loops alone: no LLVM optimizer


def test_external_names_are_those_a_link_finds():
    """`split.external_names` reads a printed module's external definitions off its text, as
    the parsed module's linkages say them (the engine links by these names)."""
    text = '''\
@"t.entry" = constant {i8*, i64} {i8* null, i64 0}
@"astjit.error_values" = internal global [4 x i64] zeroinitializer
@"astjit.obj.x" = external global i8
@"q\\22x" = global i64 0
@msg = private constant [3 x i8] c"hi\\00"

declare double @exp(double)

define internal i32 @"k[array<f64, 1>]"(i64 %n) {
entry:
  ret i32 0
}

define i8* @"k.fastcall"(i8* %a) {
entry:
  ret i8* %a
}

define available_externally void @borrowed() {
entry:
  ret void
}

define void @plain.name() {
entry:
  ret void
}
'''
    found = split.external_names(text)
    assert found == ["k.fastcall", "plain.name", "t.entry", 'q"x']
    module = engine().parse(text)
    linked = {v.name for v in (*module.functions, *module.global_variables)
              if not v.is_declaration and v.linkage.name == "external"}
    assert linked == set(found)
