"""How much LLVM IR array code emits: first-call compile time follows it.

The setup and teardown of array ops (allocation with NumPy's checks, the
owned list, strided copies, BLAS operand preparation, unboxing an argument,
boxing a result) is a shared function compiled once per process
(backend/llvm/shared.py); each module declares it and each site calls it.
These tests keep it that way: line budgets for the emitted IR of `a @ b` and
of an MLP training step, the NumPy calls and error paths appearing in the
shared functions only, no module defining a shared function, array code compiled in
two parts, its loops apart from its glue (engine.Engine.compile_ir), and scalar recursion
without loops by a short pipeline of its own.
"""
from __future__ import annotations

import re

import numpy as np
from mlp_case import mlp_arrays, mlp_step, mlp_step_by_hand
from scalar_functions import is_even

from astjit import grad, jacfwd, jit
from astjit.backend.llvm.runtime import blas


def matmul(a, b):
    return a @ b


def emitted(fn, *args) -> str:
    return jit(fn).ir(*args, stage="llvm")


def functions(text: str) -> dict[str, str]:
    """Name -> body of every function the module defines."""
    return {m.group(1): m.group(2)
            for m in re.finditer(r'^define [^@]*@"?([^"(]+)"?\(.*?\n(.*?)^}', text, re.M | re.S)}


def calls_outside_shared(text: str, callee: str) -> int:
    """Calls of `callee` in functions other than the module's shared ones."""
    return sum(body.count(f'@"{callee}"') + body.count(f"@{callee}(")
               for name, body in functions(text).items()
               if not name.startswith(("astjit.array.", "astjit.owned.", "astjit.entry.",
                                       "astjit.copy.", "astjit.matmul.")))


def test_a_matrix_product_stays_small():
    a = np.ones((4, 3))
    text = emitted(matmul, a, a.T.copy())
    assert text.count("\n") < 250
    assert calls_outside_shared(text, "astjit.PyArray_NewFromDescr") == 0
    assert calls_outside_shared(text, blas.symbol("dgemm")) == 0
    # the operand copies (non-BLAS layouts) are the shared copy, not loops at the site
    assert "copy.head" not in "".join(body for name, body in functions(text).items()
                                      if not name.startswith("astjit.copy."))


def test_an_mlp_step_stays_small():
    args = (*mlp_arrays(), 0.1)
    text = emitted(mlp_step, *args)
    assert text.count("\n") < 4000
    for callee in ("astjit.PyArray_NewFromDescr", "astjit.PyArray_Zeros", "PyErr_Clear"):
        assert calls_outside_shared(text, callee) == 0, callee
    # one failure exit per function: error sites branch to it, they do not each return
    core = [body for name, body in functions(text).items() if name.startswith("astjit.")
            and "[" in name and not name.endswith(".fastcall")]
    assert all(len(re.findall(r"^\s+ret i32", body, re.M)) <= 2 for body in core)


def test_shared_functions_compute_what_numpy_does():
    """The MLP step compiled with the shared functions still matches NumPy's result."""
    args = (*mlp_arrays(), 0.1)
    got = jit(mlp_step)(*args)
    want = mlp_step_by_hand(*args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def scalar(x, y):
    return x * y + 1.0


def scalar_loop(n):
    s = 0.0
    for k in range(1, n + 1):
        s += 1.0 / k
    return s


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def triangles(n):
    if n <= 0:
        return 0
    s = 0
    for k in range(n):
        s += k
    return s + triangles(n - 1)


def test_recursion_without_loops_compiles_by_a_short_pipeline():
    """O3 spent most of fib's compile on passes with nothing to do there (jit/engine.py
    `RECURSIVE_PASSES`); recursion that loops keeps O3, and so does mutual recursion, whose
    calls O3's inliner halves."""
    f = jit(fib)
    assert [f(n) for n in range(12)] == [fib(n) for n in range(12)]
    (spec,) = f.dispatcher.specializations.values()
    assert spec.compiled.compiled.pipelines == ("recursive",)
    assert "fastcc" in spec.compiled.compiled.llvm_ir_optimized  # global_opt ran
    g = jit(triangles)
    assert g(30) == triangles(30)
    (spec,) = g.dispatcher.specializations.values()
    assert spec.compiled.compiled.pipelines == ("scalar",)
    h = jit(is_even)
    assert (h(7), h(10)) == (False, True)
    (spec,) = h.dispatcher.specializations.values()
    assert spec.compiled.compiled.pipelines == ("scalar",)


def test_modules_declare_the_shared_functions_they_call():
    a = np.ones((4, 3))
    for text in (emitted(matmul, a, a.T.copy()), emitted(softmax, a), emitted(mlp_step, *mlp_arrays(), 0.1)):
        defined = set(functions(text))
        assert not {name for name in defined if name.startswith(
            ("astjit.array.", "astjit.entry.", "astjit.copy.", "astjit.matmul."))}
        assert re.search(r'^declare .*@"?astjit\.entry\.', text, re.M)  # its wrapper, or unboxing


def compiled_module(fn, *args):
    f = jit(fn)
    f(*args)
    (spec,) = f.dispatcher.specializations.values()
    return spec.compiled.compiled


def test_array_glue_is_compiled_lightly_and_its_loops_apart():
    a = np.ones((4, 3))
    glue = compiled_module(matmul, a, a.T.copy())
    assert glue.pipelines == ("glue",) and "vector.body" not in glue.llvm_ir_optimized
    assert "astjit.entry.(array<f64, 2>,array<f64, 2>)->array<f64, 2>" in glue.asm  # its table's
    rows = compiled_module(softmax, a)
    assert rows.pipelines == ("direct", "glue")  # loops astjit vectorized itself (widen.py)
    loops, rest = (part.llvm_ir_optimized for part in rows.parts)
    assert ".masked:" in loops and ".masked:" not in rest and ".widened:" not in rest
    assert "call i1 @astjit.entry.unbox" not in loops
    assert re.search(r'^@"astjit\.\d+\.softmax\[array<f64, 2>\]\.entry" = constant', rest, re.M)
    assert "].entry\"" not in loops  # the glue's table
    assert "available_externally" not in rows.llvm_ir_optimized
    shown = [line for line in rows.llvm_ir_optimized.splitlines() if line.startswith("; ----")]
    assert shown == ["; ---- astjit: the direct module ----", "; ---- astjit: the glue module ----"]
    # scalar arithmetic is a hot path: compiled whole, at O3; where it loops, its wrapper
    # (unboxing, boxing) apart from it, lightly
    assert compiled_module(scalar, 1.0, 2.0).pipelines == ("scalar",)
    kernel, wrapper = compiled_module(scalar_loop, 10).parts
    assert (kernel.pipeline, wrapper.pipeline) == ("scalar", "glue")
    assert "fastcall" in wrapper.llvm_ir_optimized and "fastcall" not in kernel.llvm_ir_optimized
    assert "PyFloat_FromDouble" in wrapper.llvm_ir_optimized
    assert "PyFloat_FromDouble" not in kernel.llvm_ir_optimized


def horner(x, n):
    s = 0.0
    for k in range(n):
        s = s * x + 1.0 / (k + 1)
    return s


def test_a_gradients_tape_helpers_are_the_runtimes():
    """The helpers that allocate and free a loop's tape run once per call and are the same
    for every tape: the runtime's (tapes.py), compiled once per process, which neither part
    of a kernel defines; the wrapper compiles apart as `glue`, and the push's fast path
    stays in the loop."""
    g = grad(horner)
    for n in (0, 1, 17, 100):  # 17 pushes grow the tape past its first 16 elements
        x = 0.9
        expected = sum((n - 1 - k) * x ** (n - 2 - k) / (k + 1) for k in range(n - 1))
        assert abs(g(x, n) - expected) <= 1e-12 * max(1.0, abs(expected))
    (spec,) = g.entry.dispatcher.specializations.values()
    kernel, wrapper = spec.compiled.compiled.parts
    assert (kernel.pipeline, wrapper.pipeline) == ("scalar", "glue")
    for name in ("astjit.tape.new", "astjit.tape.grow", "astjit.tape.free", "astjit.tape.free_all"):
        defined = re.compile(rf'^define [^\n]*@"?{re.escape(name)}"?\(', re.M)
        assert re.search(rf'^declare [^\n]*@"?{re.escape(name)}"?\(', kernel.llvm_ir_optimized,
                         re.M)
        assert not defined.search(kernel.llvm_ir_optimized)
        assert not defined.search(wrapper.llvm_ir_optimized)


def sliced_loss(w, x, b):
    """Slices of the parameters (add_into of each slice's adjoint) and a bias broadcast over
    the batch (sum_to_like of its adjoint)."""
    h = np.tanh(x @ w[:6].reshape((3, 2)) + b)
    return np.sum(h * w[6:8]) + w[8] * np.sum(h)


def test_a_gradients_accumulations_are_the_runtimes():
    """`add_into` and the un-broadcasting sum are the same nests in every gradient: calls of
    the runtime's astjit.add_into.* and astjit.sum_to.*, not loops of the kernel's module;
    the gradient is still the finite differences' (either layout of the adjoint)."""
    rng = np.random.default_rng(3)
    w, x, b = rng.standard_normal(9), rng.standard_normal((5, 3)), rng.standard_normal(2)
    g = jit(grad(sliced_loss, argnums=(0, 2)))
    gw, gb = g(w, x, b)
    for k, (value, got) in enumerate(((w, gw), (b, gb))):
        for i in range(value.size):
            step = np.zeros_like(value)
            step[i] = 1e-6
            args = [w, x, b]
            args[2 * k] = value + step
            above = sliced_loss(*args)
            args[2 * k] = value - step
            assert abs((above - sliced_loss(*args)) / 2e-6 - got[i]) < 1e-6
    (spec,) = g.dispatcher.specializations.values()
    text = spec.compiled.compiled.llvm_ir_optimized
    for name in ("astjit.add_into.f64.1", "astjit.sum_to.f64.f64.2.1"):
        assert re.search(rf'^declare [^\n]*@"?{re.escape(name)}"?\(', text, re.M), name
        assert not re.search(rf'^define [^\n]*@"?{re.escape(name)}"?\(', text, re.M), name
    assert "add_into.head" not in text and "sum_to.head" not in text


def jacobian_of_tanh(x):
    return np.tanh(x) * 2.0


def test_eyes_diagonal_is_the_runtimes():
    """np.eye's ones (jacfwd builds an identity in every kernel) are a call of the runtime's
    astjit.eye.<dtype>, not a loop of the kernel's module."""
    x = np.linspace(-1.0, 1.0, 4)
    f = jit(jacfwd(jacobian_of_tanh))
    np.testing.assert_allclose(f(x), np.diag(2.0 / np.cosh(x) ** 2), rtol=1e-12)
    (spec,) = f.dispatcher.specializations.values()
    text = spec.compiled.compiled.llvm_ir_optimized
    assert re.search(r'^declare [^\n]*@"?astjit\.eye\.f64"?\(', text, re.M)
    assert not re.search(r'^define [^\n]*@"?astjit\.eye\.f64"?\(', text, re.M)
    assert "diagonal.head" not in text
