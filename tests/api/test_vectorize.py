"""`astjit.vectorize` against `np.vectorize`: control flow, calls, broadcasting, dtypes,
errors, on the CPU and on the CUDA simulator; each generated CUDA source compiles with NVRTC."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scalar_functions
from complex_checks import COMPLEXES
from cuda_checks import DEVICE_TARGETS, compile_to_ptx, on_target, to_host
from hypothesis import given, settings
from hypothesis import strategies as st

from astjit import CompileError, vectorize

TARGETS = ["cpu", *DEVICE_TARGETS]
"""The CPU, the simulator, and a real device where CuPy sees one."""
mandel, gcd = scalar_functions.mandel_point, scalar_functions.gcd_loop


def _square(v):
    return v * v


def poly(x, a):
    return a * _square(x) + 2.0 * x + 1.0


def first_divisor(n):
    d = 2
    while d * d <= n:
        if n % d == 0:
            return d
        d += 1
    return n


def clipped(x, lo):
    if x < lo:
        return lo
    return math.sqrt(x) if x > 1.0 else x


def affine(x, y):
    return x * 2.0 + y


def inside(x, y):
    return x * x + y * y < 1.0


def root(x):
    return math.sqrt(x)


def ratio(a, b):
    return a / b


def to_int(x):
    return int(x) // 3


def grow(x):
    return math.exp(x)


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def pair(x):
    return (x, x)


def complex_step(z, w):
    if z.real > 0.0:
        return z * w + 1j
    return np.divide(z, w) - z.conjugate() * (w.imag - 1.0)


def python_complex(z, w):
    return abs(z) + (z / w).imag


def python_power(z):
    return (z ** 2).real


def complex_imag(x, z):
    return (x * z).imag


def _vectorized(fn, target):
    """`vectorize(fn, target=target)`; on "gpu" NumPy arguments go to the device as CuPy
    arrays and results come back as NumPy's."""
    vectorized = vectorize(fn, target=target)
    if target != "gpu":
        return vectorized
    return lambda *args: to_host(vectorized(*on_target(args, target)))


def check(fn, target, *args):
    got = _vectorized(fn, target)(*args)
    ref = np.vectorize(fn)(*args)
    assert got.shape == ref.shape
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    if target == "gpu" and got.dtype.kind in "fc":  # CUDA's hypot, exp ... are within ulps of
        np.testing.assert_allclose(got, ref, rtol=1e-15, atol=0)  # the C library's (abs(z))
    else:
        np.testing.assert_array_equal(got, ref)
    return got


@pytest.mark.parametrize("target", TARGETS)
def test_mandelbrot_control_flow(target):
    cr, ci = np.meshgrid(np.linspace(-2, 1, 23), np.linspace(-1.2, 1.2, 17))
    check(mandel, target, cr, ci)


@pytest.mark.parametrize("target", TARGETS)
def test_integer_loops_and_branches(target):
    a = np.arange(1, 60).reshape(59, 1)
    b = np.array([0, 1, 6, 35, 48])
    check(gcd, target, a, b)
    check(scalar_functions.collatz_steps, target, np.arange(1, 40))
    check(first_divisor, target, np.arange(2, 80))


@pytest.mark.parametrize("target", TARGETS)
def test_calls_and_math(target):
    check(poly, target, np.linspace(-2, 2, 9), 3.0)
    check(clipped, target, np.linspace(-1, 4, 11), 0.0)


@pytest.mark.parametrize("target", TARGETS)
def test_broadcasting_and_scalars(target):
    x = np.arange(12.0).reshape(3, 4)
    check(affine, target, x, np.array([1.0, -1.0, 0.5, 2.0]))
    check(affine, target, x[:, :1], 1.5)
    got = _vectorized(affine, target)(2.0, 3.0)
    assert got.shape == () and got == 7.0


@pytest.mark.parametrize("target", TARGETS)
def test_float32_and_bool_results(target):
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    assert check(affine, target, x, np.float32(0.25)).dtype == np.float32
    y = np.linspace(-1, 1, 5).reshape(5, 1)
    assert check(inside, target, y, y.T).dtype == np.bool_


@pytest.mark.parametrize("target", TARGETS)
def test_empty_arrays(target):
    got = _vectorized(mandel, target)(np.zeros((0, 3)), np.zeros(3))
    assert got.shape == (0, 3) and got.dtype == np.int64


@pytest.mark.parametrize("target", TARGETS)
def test_python_errors_raise_as_on_the_cpu(target):
    """Elements are Python scalars, as np.vectorize passes them: Python's errors."""
    with pytest.raises(ValueError, match="math domain"):
        _vectorized(root, target)(np.array([4.0, -1.0]))
    with pytest.raises(ZeroDivisionError):
        _vectorized(ratio, target)(np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    with pytest.raises(ZeroDivisionError):
        _vectorized(_int_mod, target)(np.array([4, 5]), np.array([2, 0]))
    np.testing.assert_array_equal(_vectorized(root, target)(np.array([4.0, 9.0])), [2.0, 3.0])
    check(ratio, target, np.array([1.0, -2.0, 0.5]), np.array([1.0, 4.0, 2.0]))
    check(to_int, target, np.array([1.5, 7.0, -8.0]))
    with pytest.raises(ValueError, match="NaN"):
        _vectorized(to_int, target)(np.array([1.5, np.nan]))
    with pytest.raises(OverflowError):
        _vectorized(grow, target)(np.array([1.0, 1000.0]))


def _int_mod(a, b):
    return a % b


@pytest.mark.parametrize("target", TARGETS)
def test_refusals(target):
    with pytest.raises(CompileError, match="returns|number"):
        _vectorized(pair, target)(np.arange(3.0))
    with pytest.raises(TypeError, match="dtype"):
        _vectorized(root, target)(np.arange(3, dtype=np.int32))


def _complex_operands():
    z = (np.arange(12) * 0.5 - 3 + 1j * (np.arange(12) * 0.25 - 1.3)).reshape(3, 4)
    return z, np.array([1 + 2j, -0.5j, 3.0, 0j])


@pytest.mark.parametrize("target", TARGETS)
def test_complex_elements(target):
    """complex128 elements are Python complexes, complex64 ones NumPy complex64 scalars
    (np.vectorize's first call; its later ones compute in complex128 and round)."""
    z, w = _complex_operands()
    with np.errstate(all="ignore"):
        check(complex_step, target, z, w)
        assert check(complex_imag, target, np.arange(4.0), z).dtype == np.float64
        z64, w64 = z.astype(np.complex64), w.astype(np.complex64)
        got, ref = _vectorized(complex_step, target)(z64, w64), np.vectorize(complex_step)(z64, w64)
    assert got.dtype == ref.dtype == np.complex64
    np.testing.assert_allclose(got, ref, rtol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
def test_python_complex_semantics(target):
    """abs, `/` and `**` of Python complexes are CPython's, OverflowError and
    ZeroDivisionError included, on every target."""
    z, w = _complex_operands()
    check(python_complex, target, z[:, :3], w[:3])
    with pytest.raises(ZeroDivisionError):
        _vectorized(python_complex, target)(z, w)
    with pytest.raises(OverflowError):
        _vectorized(python_complex, target)(np.array([1 + 1j, 1.5e308 + 1.5e308j]), 1 + 0j)
    check(python_power, target, z)


def python_powers(z, w):
    return z ** w


POWER_EDGES = [complex(a, b) for a in (0.0, -0.0, 1.0, -2.5, 1e-200, 1e200, np.inf, np.nan)
               for b in (0.0, -0.0, 0.5, -3.0)]
EXPONENTS = [0j, -0j, 1 + 0j, 2 + 0j, 3 + 0j, -1 + 0j, -2 + 0j, 7 + 0j, 100 + 0j, -100 + 0j,
             101 + 0j, 0.5 + 0j, -0.5 + 0j, 2.5 + 0j, 1j, -1j, 0.5 - 2j, 1e300 + 0j,
             complex(np.inf, 0), complex(0, np.inf), complex(np.nan, 0), complex(2, np.nan)]


def _python_power_outcome(z, w):
    """CPython's z ** w (a Python complex each), or its exception's type."""
    try:
        return complex(z) ** complex(w)
    except (ZeroDivisionError, OverflowError) as error:
        return type(error)


@pytest.mark.parametrize("target", ["cpu", "cuda-sim"])  # bit for bit needs the C library's
def test_python_complex_power_as_cpython(target):         # functions: a GPU's differ in ulps
    """`**` of Python complexes: c_powi's products for an integral exponent up to 100 (exact,
    bit for bit), the polar form otherwise (the C library's functions: bit for bit on
    cuda-sim, which calls glibc's), CPython's ZeroDivisionError and OverflowError (the GPU
    records them, the CPU's rerun raises them)."""
    power = _vectorized(python_powers, target)
    for w in EXPONENTS:
        for z in POWER_EDGES:
            _check_power(power, z, w)


_SIM_POWER = vectorize(python_powers, target="cuda-sim")


@settings(max_examples=300, deadline=None)
@given(COMPLEXES, st.one_of(COMPLEXES, st.builds(complex, st.integers(-110, 110), st.just(0.0))))
def test_python_complex_power_on_cuda_sim_as_cpython(z, w):
    _check_power(_SIM_POWER, z, w)


def _check_power(power, z, w):
    expected = _python_power_outcome(z, w)
    if isinstance(expected, type):
        with pytest.raises(expected):
            power(np.array([z, z]), w)
        return
    got = power(np.array([z]), np.array([w]))[0]
    for part, want in ((got.real, expected.real), (got.imag, expected.imag)):
        assert part == want or (np.isnan(part) and np.isnan(want)), (z, w, got, expected)
        assert np.signbit(part) == np.signbit(want) or np.isnan(want), (z, w, got, expected)


def test_recursion_refused_on_the_gpu_targets():
    assert list(vectorize(fact, target="cpu")(np.arange(5))) == [1, 1, 2, 6, 24]
    with pytest.raises(CompileError, match="recursi"):
        vectorize(fact, target="cuda-sim")(np.arange(5))


def test_gpu_target_takes_cupy_arrays():
    pytest.importorskip("cupy")
    with pytest.raises(TypeError, match="cupy.asarray"):
        vectorize(mandel, target="gpu")(np.zeros(3), np.zeros(3))


CASES = [(mandel, (np.float64, np.float64)), (gcd, (np.int64, np.int64)),
         (poly, (np.float64, np.float64)), (scalar_functions.collatz_steps, (np.int64,)),
         (first_divisor, (np.int64,)), (clipped, (np.float64, np.float64)),
         (affine, (np.float32, np.float32)), (inside, (np.float64, np.float64)),
         (root, (np.float64,)), (ratio, (np.float64, np.float64)), (_int_mod, (np.int64, np.int64)),
         (to_int, (np.float64,)), (grow, (np.float64,)),
         (complex_step, (np.complex128, np.complex128)), (complex_step, (np.complex64, np.float32)),
         (complex_imag, (np.float64, np.complex128)),
         (python_complex, (np.complex128, np.complex128)), (python_power, (np.complex128,)),
         (python_powers, (np.complex128, np.complex128))]


@pytest.mark.parametrize("fn, dtypes", CASES, ids=[c[0].__name__ for c in CASES])
def test_generated_cuda_compiles_with_nvrtc(fn, dtypes):
    from astjit.backend.cuda.vectorized import build_program

    vectorized = vectorize(fn, target="cuda-sim")
    types = vectorized.element_types([np.zeros(1, dtype=d) for d in dtypes])
    assert b".entry" in compile_to_ptx(build_program(vectorized, types).source)
