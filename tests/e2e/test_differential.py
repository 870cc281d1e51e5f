"""Differential tests: compiled code, and the IR at every stage, against CPython.

One case list (corpus.py) drives all of them: `jit(fn)` vs CPython; the
reference interpreter on the parsed, typed and optimized IR vs CPython; and
each optimization pass alone vs the interpreter, with the verifier after it.
"""
import functools

import pytest
from corpus import CASE_IDS, NAMES, VALUE_ONLY, outcome, same

from astjit import jit
from astjit.api import clone_module
from astjit.dispatch import Signature
from astjit.frontend import lower_function
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.passes.pipeline import PASSES, optimize
from astjit.ir.verify import verify_module


def typed_module(fn, args):
    signature = Signature(fn)
    values = signature.bind(args, {})
    return infer_types(lower_function(fn), list(signature.types_of(values))), values


compiled = functools.cache(jit)
"""One compiled function per corpus function: its cases whose arguments have the same types
share a signature's compilation, as calls of one @jit function do."""


@pytest.mark.parametrize("fn,args", CASE_IDS, ids=NAMES)
def test_jit_matches_cpython(fn, args):
    expected = outcome(fn, args)
    got = outcome(compiled(fn), args)
    assert same(expected, got, fn in VALUE_ONLY), f"CPython {expected}, jit {got}"


@pytest.mark.parametrize("fn,args", CASE_IDS, ids=NAMES)
def test_interpreter_at_every_stage_matches_cpython(fn, args):
    expected = outcome(fn, args)
    parsed = lower_function(fn)
    verify_module(parsed)
    assert same(expected, outcome(lambda *a: interpret(parsed, list(a)), args), True), "parsed"
    typed, values = typed_module(fn, args)
    verify_module(typed)
    got = outcome(lambda *a: interpret(typed, list(a)), values)
    assert same(expected, got, fn in VALUE_ONLY), f"typed: CPython {expected}, interp {got}"
    optimized = optimize(clone_module(typed), verify=verify_module)
    got = outcome(lambda *a: interpret(optimized, list(a)), values)
    assert same(expected, got, fn in VALUE_ONLY), f"optimized: CPython {expected}, interp {got}"


@pytest.mark.parametrize("fn,args", CASE_IDS, ids=NAMES)
def test_each_pass_alone_preserves_meaning(fn, args):
    typed, values = typed_module(fn, args)
    expected = outcome(lambda *a: interpret(typed, list(a)), values)
    for name, run_pass in PASSES:
        module = run_pass(clone_module(typed))
        verify_module(module)
        got = outcome(lambda *a: interpret(module, list(a)), values)
        assert same(expected, got), f"pass {name}: before {expected}, after {got}"
