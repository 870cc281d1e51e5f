"""Every spelling of every op astjit compiles, run compiled against CPython/NumPy on edge values.

The cases come from the frontend's name maps and the op table (semantics_cases.py):
a new operator, builtin, math function, ufunc or reduction is tested here without
anyone writing a case, and `test_every_spelled_op_is_covered` fails for an op that
neither has a case nor is listed below with the reason it has none. Each case is
one compilation (a spelling and its argument types) run on every edge value of
those types; it compares the value (NaN equal to NaN, -0.0 distinct from 0.0), its
exact type (float, np.float64, np.float32, bool, int; an array's dtype and
shape), the arguments after the call (no mutation), and the exception class. The
differences astjit keeps on purpose are rules in semantics_check.py (`KEPT`).
"""
import importlib.util

import numpy as np
import pytest
from semantics_cases import CASES, NOT_CALLABLE_ALONE, SPELLINGS, UNCALLED, Case, inputs
from semantics_check import (
    Refused,
    describe_args,
    differs,
    expected,
    first_bad_element,
    mutated,
    run,
    size_of,
)

import astjit
from astjit.ir.ops import OPS

CHECKED = {}
"""Case id -> how many op x input combinations it compared (its array elements included)."""
MIN_COMBINATIONS = 180_000
SHOWN = 6


@pytest.fixture(scope="module")
def functions(tmp_path_factory):
    """The spellings as functions of a real module file, so astjit can read their source."""
    path = tmp_path_factory.mktemp("semantics") / "spellings.py"
    path.write_text("import math\n\nimport numpy as np\n\n\n"
                    + "\n\n".join(s.source for s in SPELLINGS))
    spec = importlib.util.spec_from_file_location("semantics_spellings", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {s.name: (getattr(module, s.name), astjit.jit(getattr(module, s.name)))
            for s in SPELLINGS}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_spelling_matches_python(case: Case, functions):
    s = case.spelling
    plain, compiled = functions[s.name]
    problems, checked, refusal = [], 0, None
    for args in inputs(case):
        want, kept = expected(s, plain, [_copy(a) for a in args])
        before = [_copy(a) for a in args]
        got = refusal or run(compiled, args)
        if isinstance(got, Refused):
            refusal = got  # types decide a refusal: the other inputs need no new compile
        checked += size_of(want)
        why = differs(s, want, got, before)
        if why is None and mutated(before, args):
            why = "the call changed its arguments"
        if why is not None:
            note = f" [kept difference: {kept}]" if kept else ""
            problems.append(f"{s.text} with {describe_args(before)}: {why}{note}"
                            f"{first_bad_element(s, before, want, got)}")
    CHECKED[case.id] = checked
    assert not problems, f"{len(problems)} of the inputs differ: " + "\n  ".join(problems[:SHOWN])


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


# ---- completeness ------------------------------------------------------------------------------

NO_SPELLING = {
    # structure and values, not operations
    "const": "a literal or a global constant", "undef": "a value not produced yet on a path",
    "getitem": "indexing a tuple with a constant",
    "select": "`x if c else y` (corpus and random programs)",
    "is_none": "`x is None`, decided by types (test_frontend.py)",
    "index": "range()'s bounds must be ints (test_python_semantics.py)",
    "tag": "a bool or an int merged as an int|bool (test_python_semantics.py)",
    "untag": "an int|bool read as its int (test_python_semantics.py)",
    # emitted by the compiler itself
    "add_sat": "a range() counter's saturating step",
    "raise_if": "a run-time check's raise",
    "array_unit_stride": "loop versioning's stride condition (tests/passes/test_versioning.py)",
    "array_retain": "array ownership", "array_release": "array ownership",
    # derivative code (test_reverse_ad.py, test_forward_ad.py, test_tape_ops.py)
    "fdiv": "IEEE division of derivative code", "powr": "C pow of derivative code",
    "logr": "C log of derivative code", "sum_to_like": "un-broadcasting an adjoint",
    "add_at": "scatter-add of an adjoint", "add_into": "adjoint accumulation",
    "set_at": "adjoint write", "zero_into": "adjoint reset",
    "tape_new": "AD tape", "tape_push": "AD tape", "tape_get": "AD tape",
    "tape_len": "AD tape", "tape_clear": "AD tape", "tape_free": "AD tape",
    "stop_gradient": "astjit.stop_gradient, not a Python or NumPy spelling (test_grad_api.py)",
}
"""Ops of the table that no Python or NumPy spelling reaches, and why."""

TESTED_ELSEWHERE = {
    "method_call": "obj.method(x), model(x): resolved into calls (tests/api/test_methods.py)",
    # spelled in Python, but indexing, attributes, creation and linear algebra, not operators
    # or functions of numbers: their own differential tests
    "array_get": "x[i] (test_array_views.py)", "array_set": "x[i] = v (test_array_views.py)",
    "array_view": "slices (test_array_views.py)", "array_transpose": "x.T (test_array_views.py)",
    "array_reshape": "x.reshape (test_array_views.py)",
    "complex_part": "np.real/np.imag, z.real/z.imag of complex arrays: views (test_complex_views.py)",
    "complex_sign": "np.sign of complex arrays and scalars, NumPy 2's loop (test_complex_sign.py)",
    # Python complex numbers and cmath, bit for bit against CPython (test_python_complex.py)
    "complex_new": "complex(a, b)", "cmath_phase": "cmath.phase", "cmath_abs": "cmath.polar",
    "cmath_rect": "cmath.rect", "cmath_sqrt": "cmath.sqrt", "cmath_exp": "cmath.exp",
    "cmath_log": "cmath.log", "cmath_log_base": "cmath.log(z, base)",
    "cmath_log10": "cmath.log10",
    **{f"cmath_{name}": f"cmath.{name} (test_cmath_trig.py)" for name in (
        "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh",
        "atanh", "isclose")},
    "array_assign": "y[...] = v (test_augmented_assignment.py)",
    "augassign": "x op= v on arrays, in place (test_augmented_assignment.py)",
    "array_dim": "x.shape[i] (test_frontend_arrays.py)",
    "array_shape": "x.shape", "array_size": "x.size", "array_ndim": "x.ndim",
    "array_new": "np.zeros/ones/empty/full (test_array_creation.py)",
    "array_new_like": "np.zeros_like ... (test_array_creation.py)",
    "array_arange": "np.arange (test_array_creation.py)",
    "eye": "np.eye (test_array_creation.py)", "diag": "np.diag (test_linalg.py)",
    # NumPy's shape, joining and conversion functions (test_shape_functions.py)
    "array_function": "np.concatenate, np.split, x.astype ... before type inference",
    "array_squeeze": "np.squeeze", "array_expand_dims": "np.expand_dims, np.stack",
    "array_permute": "np.swapaxes, np.moveaxis", "array_broadcast_to": "np.broadcast_to",
    "array_concatenate": "np.concatenate, np.stack, np.roll", "array_copy": "np.copy",
    "array_contiguous": "np.ascontiguousarray",
    "array_astype": "x.astype", "array_pack": "np.array((a, b))",
    "array_linspace": "np.linspace",
    # an array's attributes and methods (test_array_methods.py)
    "array_bytes": "x.itemsize, x.nbytes", "array_view_as": "x.view(dtype)",
    "callback": "print(...) and astjit.callback (test_python_calls.py)",
    "tuple_slice": "a, *rest = t (test_comprehensions.py)",
    "tuple_append": "comprehensions (test_comprehensions.py)",
    "dict_set": "dict comprehensions (test_comprehensions.py)",
    "dict_items": "d.items() (test_comprehensions.py)", "dict_keys": "d.keys() (ditto)",
    "dict_values": "d.values() (ditto)",
    "sorting_function": "np.sort, np.median ... before type inference (test_sorting.py)",
    "sort": "np.sort, x.sort() (test_sorting.py)", "argsort": "np.argsort (test_sorting.py)",
    "take_along": "the adjoint and tangent of np.sort (test_sorting.py)",
    "searchsorted": "np.searchsorted (test_sorting.py)",
    "unique_sorted": "np.unique (test_sorting.py)",
    "nonzero": "np.nonzero, np.where(cond) (test_sorting.py)",
    # linear algebra (test_linalg_functions.py)
    "linalg_function": "np.dot, np.einsum, np.linalg.norm ... before type inference",
    "linalg_solve": "np.linalg.solve", "linalg_inv": "np.linalg.inv",
    "linalg_det": "np.linalg.det", "linalg_cholesky": "np.linalg.cholesky",
    # integer-array and mask indexing, None, ... (test_fancy_indexing.py)
    "array_index": "x[..., 0] before type inference", "array_index_set": "x[..., 0] = v, np.add.at",
    "gather": "x[idx]", "gather_adjoint": "the adjoint of x[idx]", "scatter": "x[idx] = v",
    "compress": "x[mask]", "compress_adjoint": "the adjoint of x[mask]",
    "getfield": "p.w, d['w'] of containers (tests/api/test_trees.py)",
    "tree_leaves": "astjit.tree.leaves (test_trees.py)", "tree_map": "astjit.tree.map (ditto)",
    "tree_flatten": "astjit.tree.flatten (ditto)", "tree_unflatten": "astjit.tree.unflatten (ditto)",
}
"""Ops with a Python spelling outside this test's scope, and the tests that cover them.
(`matmul`, `a @ b`, is here for numbers, which Python and astjit both refuse.)"""


def test_every_spelled_op_is_covered():
    assert UNCALLED == sorted(NOT_CALLABLE_ALONE), "a builtin with no callable form, unlisted"
    assert all(any(c.spelling == s for c in CASES) for s in SPELLINGS), "a spelling with no case"
    covered = {op for s in SPELLINGS for op in s.ops}
    listed = set(NO_SPELLING) | set(TESTED_ELSEWHERE)
    assert not set(OPS) - covered - listed, "ops with neither a case here nor a reason"
    assert not covered & listed, "ops listed as uncovered that have a case: drop them from the list"
    assert not listed - set(OPS), "listed ops that are no longer in the table"


def test_combination_count():
    """The static count of op x input combinations (arrays count their elements in the
    run); printed with `-s`, and the number the run compared when every case ran."""
    calls = sum(len(inputs(c)) for c in CASES)
    compared = sum(CHECKED.values())
    print(f"\nsemantics table: {len(SPELLINGS)} spellings, {len(CASES)} compilations, "
          f"{calls} calls; {compared} op x input combinations compared in this run")
    assert calls > 100_000
    if len(CHECKED) == len(CASES):
        assert compared >= MIN_COMBINATIONS
