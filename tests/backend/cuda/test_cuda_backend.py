"""The CUDA backend, checked without a GPU: every array function of the corpus and every
array gradient case runs through target="cuda-sim" (the generated kernels on the host
simulator) and must agree with the CPU backend; every generated source compiles to PTX
with NVRTC; hypothesis draws shapes, strides and broadcasts. Where CuPy sees a CUDA
device, the same cases run on it too (target="gpu", `DEVICE_TARGETS`)."""
import importlib.util
import pathlib

import array_functions
import grad_functions
import numpy as np
import pytest
from cuda_checks import DEVICE_TARGETS, compile_to_ptx, on_target, to_host
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import grad, jit

TESTS = pathlib.Path(__file__).resolve().parents[2]


def _cases_of(relative: str) -> list:
    """The CASES list of another test module (gradient cases live with their tests)."""
    spec = importlib.util.spec_from_file_location(relative.replace("/", "_")[:-3], TESTS / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


GRAD_CASES = _cases_of("ad/test_grad_arrays.py")
WRITE_CASES = _cases_of("ad/test_grad_array_writes.py")


def check_same(expected, got, where):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), where
        for k, (e, g) in enumerate(zip(expected, got)):
            check_same(e, g, f"{where}[{k}]")
        return
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), (where, type(got))
        assert got.shape == expected.shape and got.dtype == expected.dtype, where
        tol = 1e-5 if expected.dtype == np.float32 else 1e-11
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=where)
        return
    assert type(got) is type(expected), (where, type(got), type(expected))
    assert np.isclose(got, expected, rtol=1e-11, atol=1e-11, equal_nan=True), (where, got, expected)


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@pytest.mark.parametrize("fn,make", array_functions.CASES,
                         ids=[fn.__name__ for fn, _ in array_functions.CASES])
def test_corpus_agrees_with_the_cpu(fn, make, target):
    cpu_args, device_args = make(), on_target(make(), target)
    got = to_host(jit(fn, target=target)(*device_args))
    check_same(jit(fn)(*cpu_args), got, fn.__name__)
    for a, b in zip(cpu_args, device_args):  # writes into arguments reach the caller on both
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(to_host(b), a, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@pytest.mark.parametrize("fn,make,argnums", GRAD_CASES,
                         ids=[f"{c[0].__name__}{k}" for k, c in enumerate(GRAD_CASES)])
def test_gradients_agree_with_the_cpu(fn, make, argnums, target):
    args = make()
    cpu = grad(fn, argnums=argnums)(*args)
    device = jit(grad(fn, argnums=argnums), target=target)(*on_target(args, target))
    check_same(cpu, to_host(device), fn.__name__)


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@pytest.mark.parametrize("fn,args,argnums", WRITE_CASES, ids=[c[0].__name__ for c in WRITE_CASES])
def test_gradients_of_loops_with_tapes_agree_with_the_cpu(fn, args, argnums, target):
    copies = on_target(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args), target)
    cpu = grad(fn, argnums=argnums)(*args)
    device = jit(grad(fn, argnums=argnums), target=target)(*copies)
    check_same(cpu, to_host(device), fn.__name__)


SCALAR_GRADS = [(fn, args) for fn, argsets in grad_functions.CASES for args in argsets]


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@pytest.mark.parametrize("fn,args", SCALAR_GRADS,
                         ids=[f"{fn.__name__}{k}" for k, (fn, _) in enumerate(SCALAR_GRADS)])
def test_scalar_gradients_agree_with_the_cpu(fn, args, target):
    """Scalar code runs in the host program: the same values and types as the CPU's."""
    check_same(grad(fn)(*args), jit(grad(fn), target=target)(*args), fn.__name__)


@pytest.mark.parametrize("fn,make", array_functions.CASES,
                         ids=[fn.__name__ for fn, _ in array_functions.CASES])
def test_every_generated_source_compiles_with_nvrtc(fn, make):
    source = jit(fn, target="gpu").ir(*make(), stage="cuda")
    ptx = compile_to_ptx(source)
    assert ptx.count(b".entry") == source.count("__global__")


def test_kernels_are_headed_by_their_ir_nodes():
    source = jit(array_functions.keepdims_softmax, target="gpu").ir(np.ones((3, 4)), stage="cuda")
    assert "// k0: from @" in source and "// %10 = rowwise (%x) {ndim=2, rows=1" in source
    assert "//     %0 = fused (%x.1) {ndim=2, reduce='max'" in source
    assert "void __launch_bounds__(1024, 2) k0_rows(" in source


@pytest.mark.parametrize("shape", [(5, 300), (3, 1), (2, 3, 40), (4, 8192)])
def test_a_softmax_is_one_launch(shape, launches):
    x = np.random.default_rng(1).standard_normal(shape)
    if len(shape) == 3:
        x = x.reshape(shape[0] * shape[1], shape[2])
    got = jit(array_functions.keepdims_softmax, target="cuda-sim")(x)
    check_same(jit(array_functions.keepdims_softmax)(x), got, "softmax")
    assert launches == ["k0_rows"]


def test_rows_too_long_for_registers_run_member_by_member(launches):
    x = np.random.default_rng(2).standard_normal((2, 8193))
    got = jit(array_functions.keepdims_softmax, target="cuda-sim")(x)
    check_same(jit(array_functions.keepdims_softmax)(x), got, "softmax")
    assert "k0_rows" not in launches and len(launches) >= 3


def _two_outputs(x, k, a):
    return np.sin(x) * a + k, k * 2


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@pytest.mark.parametrize("n", [0, 5, 8191, 3 * 8192 + 5, 5 * 8192 + 4097])
def test_a_contiguous_kernel_s_unrolled_loop_and_its_tail(n, target, launches):
    """Sizes the simulator's grid (8 blocks of 256) covers by the tail loop alone, by the
    unrolled main loop and a tail, by the main loop exactly."""
    x, k = np.linspace(-4, 4, n, dtype=np.float32), (np.arange(n) % 1000 - 7).astype(np.int16)
    expected = jit(_two_outputs)(x, k, 1.5)
    check_same(expected, to_host(jit(_two_outputs, target=target)(*on_target((x, k), target), 1.5)),
               "two outputs")
    if target == "cuda-sim" and n:
        assert launches and all(name.endswith("_c") for name in launches)  # contiguous


@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_errors_raise_as_on_the_cpu(target):
    def f(x, y):
        return x + y

    with pytest.raises(ValueError, match="could not be broadcast together"):
        jit(f, target=target)(*on_target((np.ones(3), np.ones(4)), target))

    def m(x):
        return np.max(x)

    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        jit(m, target=target)(on_target(np.ones(0), target))

    def p(k, e):
        return k ** e

    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        jit(p, target=target)(*on_target((np.arange(3), np.array([1, -1, 2])), target))

    if target == "gpu":  # a device array given to the CPU says what to pass
        with pytest.raises(TypeError, match=r"CuPy array.*cupy\.asnumpy\(x\)"):
            jit(f)(on_target(np.ones(3), target), np.ones(3))


def test_gpu_target_refuses_numpy_arrays():
    def f(x):
        return x * 2.0

    with pytest.raises(TypeError, match="cupy.asarray"):  # before any device is needed
        jit(f, target="gpu")(np.ones(3))


def test_the_cpu_stages_are_refused_for_a_device_target():
    def f(x):
        return x * 2.0

    with pytest.raises(ValueError, match="'llvm' is the CPU's"):
        jit(f, target="cuda-sim").ir(np.ones(3), stage="llvm")


@st.composite
def broadcast_operands(draw):
    """Two arrays whose shapes broadcast against each other (leading axes dropped, axes of
    length 1), each maybe a strided or reversed view."""
    shape = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    arrays = []
    for _ in range(2):
        own = shape[draw(st.integers(0, len(shape) - 1)):]
        own = [1 if draw(st.booleans()) else n for n in own]
        step = draw(st.sampled_from([1, 2, -1]))
        big = [n * abs(step) for n in own]
        base = np.linspace(-1.5, 1.5, int(np.prod(big))).reshape(big)
        arrays.append((base, tuple(slice(None, None, step) for _ in own)))
    return arrays


def _kernel(x, y):
    return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x), np.sum(x * y)


KERNEL_CPU = jit(_kernel)
"""The reference for all examples: each signature (ranks, layouts) compiles once. The
cuda-sim side stays one dispatcher per example: one dispatcher given a second signature
launches the first one's kernels (`k0_r takes 11 arguments, got 13`)."""


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@settings(max_examples=25, deadline=None)
@given(operands=broadcast_operands())
def test_shapes_strides_and_broadcasts(operands, target):
    """Each operand a view of a base array, on the device a view of the base's copy."""
    (x_base, x_index), (y_base, y_index) = operands
    x, y = x_base[x_index], y_base[y_index]
    device_x = on_target(x_base, target)[x_index]
    device_y = on_target(y_base, target)[y_index]
    try:
        expected = KERNEL_CPU(x, y)
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error).split(" (at")[0][:40]):
            jit(_kernel, target=target)(device_x, device_y)
        return
    check_same(expected, to_host(jit(_kernel, target=target)(device_x, device_y)), "kernel")


def test_the_dump_writes_the_cuda_source(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTJIT_DUMP", str(tmp_path))

    def double(x):
        return x * 2.0

    jit(double, target="cuda-sim")(np.ones(3))
    written = sorted(p.name for p in tmp_path.iterdir())
    (cuda,) = [name for name in written if name.endswith("double[array<f64, 1>].07-cuda.cu")]
    assert not any(name.endswith(".ll") for name in written)
    assert "__global__" in (tmp_path / cuda).read_text()
