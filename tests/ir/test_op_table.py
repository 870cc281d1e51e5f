"""The op table is complete: every op says how to differentiate it and how each backend
lowers it, and an op's facts live in its own declaration (issue 11)."""

import pathlib

import pytest

from astjit.backend.llvm.codegen import ROUTINES
from astjit.ir.ops import BACKENDS, OPS, Builder, CExpr, Intrinsic, LibCall, OnHost, Refused, Routine
from astjit.ir.ops.elementwise import UFUNCS

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "src" / "astjit"


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_op_has_a_vjp_or_says_why_not(name):
    op = OPS[name]
    declared = [x for x in (op.vjp, op.zero_derivative, op.no_vjp) if x is not None]
    assert len(declared) == 1, f"'{name}' needs exactly one of vjp, zero_derivative, no_vjp"
    assert op.vjp is not None or declared[0].strip(), f"'{name}': say why it has no VJP"


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_op_has_a_lowering_or_a_refusal_for_every_backend(name, backend):
    lowering = OPS[name].lowering(backend)
    if isinstance(lowering, Refused):
        assert lowering.message, f"'{name}' refuses {backend} without a message"
        return
    if backend == "cuda" and isinstance(lowering, OnHost):
        assert name not in UFUNCS, f"'{name}' has an array form: a kernel must compute it"
        return
    assert isinstance(lowering, dict) and lowering, f"'{name}' has no {backend} lowering"
    kinds = (CExpr,) if backend == "cuda" else (Builder, Intrinsic, LibCall, Routine, Refused)
    for descriptor in lowering.values():
        assert isinstance(descriptor, kinds)
        if isinstance(descriptor, Routine) and backend == "llvm":
            assert descriptor.name in ROUTINES, f"'{name}': no routine {descriptor.name}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_numpy_lowering_routine_exists(name):
    for descriptor in OPS[name].llvm_numpy.values():
        if isinstance(descriptor, Routine):
            assert descriptor.name in ROUTINES, f"'{name}': no routine {descriptor.name}"


@pytest.mark.parametrize("name", sorted(n for n in OPS if OPS[n].cuda_python))
def test_python_semantics_gpu_lowerings_are_c_expressions(name):
    assert all(isinstance(d, CExpr) for d in OPS[name].cuda_python.values())


def test_an_op_declared_once_sits_in_one_place():
    """The names of an op with a C function (tanh) appear in its declaration only, the
    generic code (the frontend's name tables, the backend's symbols) derived from it. The
    fuzzer (astjit/fuzz) is left out: it writes Python programs, spelled as a user would;
    so is cmath.tanh, another op (cmath_tanh: CPython's algorithm, which calls C's tanh)."""
    cmath = {"ir/ops/python_complex.py", "backend/llvm/cmath_trig.py"}
    files = sorted(str(p.relative_to(SOURCE)) for p in SOURCE.rglob("*.py")
                   if "tanh" in p.read_text() and p.relative_to(SOURCE).parts[0] != "fuzz")
    assert len(set(files) - cmath) <= 3, files


def test_spellings_are_unique():
    numpy = [name for op in OPS.values() for name in op.numpy]
    python = [name for op in OPS.values() for name in op.python]
    assert len(numpy) == len(set(numpy)) and len(python) == len(set(python))
