"""Element loops on the CUDA backend (backend/cuda/element_loops.py), without a GPU: a loop
whose iterations are independent is one kernel launch on cuda-sim and agrees with the CPU,
writes into arguments included; the others (carried values, raising ops, aliasing or
out-of-bounds accesses found at run time) run on the host with the CPU's behaviour, and
the CUDA source says why for those it knows at compile time."""
import math

import array_functions
import numpy as np
import pytest
from cuda_checks import DEVICE_TARGETS, compile_to_ptx, on_target, to_host

from astjit import jit


def axpy(a, x, y, out):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]
    return out


def clipped(x, y, s):
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            y[i] = x[i] * s
        else:
            y[i] = -x[i]
    return y


def column(y, x, j0):
    for i in range(x.shape[0]):
        y[i, j0] = y[i, j0] + x[i]
    return y


def shifted(y, x):
    for i in range(x.shape[0] - 1):
        y[i] = x[i + 1] * 2.0
    return y


def doubled(y, x):
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
    return y


def incremented(y, x):
    for i in range(x.shape[0]):
        y[i] = x[i] + 1.0
    return y


def from_to(y, start, stop):
    for i in range(start, stop):
        y[i] = y[i] + 1.0
    return y


def roots(y, x):
    for i in range(x.shape[0]):
        y[i] = math.sqrt(x[i])
    return y


def ints_and_bools(k, m, x):
    for i in range(k.shape[0]):
        k[i] = k[i] * 3 + 1
        m[i] = x[i] > 0.5
    return k, m


def counted_by_hand(y, x):
    i, n = 0, x.shape[0]
    while i < n:  # `i < x.shape[0]` reads the shape in the condition: the host's
        y[i] = x[i] * 0.1 + 1.0
        i += 1
    return i


def until_negative(y, x):
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            break
        y[i] = x[i]
    return y


def complex_loop(z, out, mag, w):
    for i in range(z.shape[0]):
        if z[i].real > 0.0:
            out[i] = z[i] * w + w / z[i] - np.conj(z[i])
        else:
            out[i] = -z[i] * z[i] + 1.0
        mag[i] = abs(z[i]) + z[i].imag
    return out, mag


def python_magnitudes(y, x):
    for i in range(x.shape[0]):
        y[i] = abs(complex(x[i]) * (1 + 1j))  # CPython's abs of a Python complex: the host's
    return y


def _complex_operands(dtype):
    rng = _rng()
    z = (rng.standard_normal(300) + 1j * rng.standard_normal(300)).astype(dtype)
    z[:4] = [complex(np.inf, 1), complex(np.nan, 0), 0j, complex(-0.0, 2)]
    real = np.float32 if dtype == np.complex64 else np.float64
    return z, np.zeros(300, dtype), np.zeros(300, real), 1.5 - 2j


def _rng():
    return np.random.default_rng(7)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def run_both(fn, *args, target="cuda-sim"):
    """The CPU's and the device target's results and arguments after the call, checked
    equal."""
    cpu_args, device_args = _copies(args), on_target(tuple(_copies(args)), target)
    expected, got = jit(fn)(*cpu_args), to_host(jit(fn, target=target)(*device_args))
    for e, g in zip(expected if isinstance(expected, tuple) else [expected],
                    got if isinstance(got, tuple) else [got]):
        np.testing.assert_array_equal(g, e)
    for a, b in zip(cpu_args, device_args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(to_host(b), a)
    return cpu_args, device_args


def cuda_source(fn, *args):
    return jit(fn, target="gpu").ir(*args, stage="cuda")


INDEPENDENT = [
    (array_functions.scale_in_place, lambda: (_rng().standard_normal(1000), 1.5)),
    (axpy, lambda: (2.0, _rng().standard_normal(700), np.arange(700.0), np.empty(700))),
    (clipped, lambda: (_rng().standard_normal(300), np.zeros(300), 3.0)),
    (column, lambda: (np.ones((50, 4)), np.arange(50.0), 2)),
    (column, lambda: (np.ones((50, 4)), np.arange(50.0), -1)),
    (ints_and_bools, lambda: (np.arange(40), np.zeros(40, dtype=bool), _rng().random(40))),
]


@pytest.mark.parametrize("target", DEVICE_TARGETS)
@pytest.mark.parametrize("fn,make", INDEPENDENT, ids=lambda v: getattr(v, "__name__", ""))
def test_an_independent_loop_is_one_launch(fn, make, target, launches):
    run_both(fn, *make(), target=target)
    assert launches == (["k0_loop"] if target == "cuda-sim" else [])  # the simulator's count


def test_strided_arrays(launches):
    x, y = np.arange(40.0)[::-2], np.zeros((20, 3))[:, 1]
    run_both(doubled, y, x)
    assert launches == ["k0_loop"]


def test_the_same_array_at_the_same_indices_is_one_launch(launches):
    """incremented(z, z): y[i] = x[i] + 1 reads and writes z[i] only: still independent."""
    a, b = np.arange(10.0), np.arange(10.0)
    expected, got = jit(incremented)(a, a), jit(incremented, target="cuda-sim")(b, b)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(b, a)
    assert launches == ["k0_loop"]


def test_aliasing_at_other_indices_runs_on_the_host(launches):
    x = np.arange(10.0)
    a, b = x.copy(), x.copy()
    jit(shifted)(a, a)  # y[i] = x[i + 1]: an index computed in the loop
    jit(shifted, target="cuda-sim")(b, b)
    np.testing.assert_array_equal(b, a)
    assert launches == []
    a, b = x.copy(), x.copy()
    jit(doubled)(a[1:], a[:-1])  # overlapping views: found at run time
    jit(doubled, target="cuda-sim")(b[1:], b[:-1])
    np.testing.assert_array_equal(b, a)
    assert launches == []
    assert "// host: the loop at test_element_loops.py:" in cuda_source(shifted, x, x)


def test_out_of_bounds_raises_as_on_the_cpu_after_the_same_writes(launches):
    x = np.arange(10.0)
    cpu_y, sim_y = np.zeros(6), np.zeros(6)
    with pytest.raises(IndexError) as cpu:
        jit(doubled)(cpu_y, x)
    with pytest.raises(IndexError) as sim:
        jit(doubled, target="cuda-sim")(sim_y, x)
    assert str(sim.value) == str(cpu.value)
    assert "index 6 is out of bounds for axis 0 with size 6" in str(sim.value)
    np.testing.assert_array_equal(sim_y, cpu_y)
    assert launches == []
    with pytest.raises(IndexError) as cpu:
        jit(column)(np.ones((10, 3)), x, 3)
    with pytest.raises(IndexError) as sim:
        jit(column, target="cuda-sim")(np.ones((10, 3)), x, 3)
    assert str(sim.value) == str(cpu.value) and launches == []


@pytest.mark.parametrize("start,stop,n_launches", [(-3, 2, 1), (-5, 0, 1), (-3, 3, 0), (-6, 2, 0),
                                                   (5, 2, 0), (0, 0, 0), (2, 5, 1)])
def test_negative_starts_and_empty_ranges(start, stop, n_launches, launches):
    """range(-3, 3) of a length-5 array touches y[2] twice: the host runs it."""
    y = np.arange(5.0)
    if -5 <= start and stop <= 5:
        run_both(from_to, y, start, stop)
    else:
        with pytest.raises(IndexError) as cpu:
            jit(from_to)(y.copy(), start, stop)
        with pytest.raises(IndexError) as sim:
            jit(from_to, target="cuda-sim")(y.copy(), start, stop)
        assert str(sim.value) == str(cpu.value)
    assert len(launches) == n_launches


def test_carried_values_stay_on_the_host_with_a_note(launches):
    x = _rng().standard_normal(50)
    run_both(array_functions.prefix_sum, x)
    assert launches == []
    source = cuda_source(array_functions.prefix_sum, x)
    assert ("// host: the loop at array_functions.py:61 runs on the host, one element at a "
            "time: it carries acc from one iteration to the next") in source
    assert "it carries best, k" in cuda_source(array_functions.running_max_index, x)


def test_a_hand_written_counting_while_is_one_launch(launches):
    x = np.arange(30, dtype=np.float32)
    assert run_both(counted_by_hand, np.zeros(30, np.float32), x) and launches == ["k0_loop"]
    assert jit(counted_by_hand, target="cuda-sim")(np.zeros(30, np.float32), x) == 30


def test_a_loop_that_may_break_stays_on_the_host(launches):
    x = np.array([1.0, 2.0, -1.0, 3.0])
    run_both(until_negative, np.zeros(4), x)
    assert launches == []
    assert "it may leave early (break or return)" in cuda_source(until_negative, x, x)


def _raises_as_on_the_cpu(fn, error, *args):
    """The CPU's exception, message and writes before it, from the host's run of the loop."""
    cpu_args, sim_args = _copies(args), _copies(args)
    with pytest.raises(error) as cpu:
        jit(fn)(*cpu_args)
    with pytest.raises(error) as sim:
        jit(fn, target="cuda-sim")(*sim_args)
    assert str(sim.value).split(" (at ")[0] == str(cpu.value).split(" (at ")[0]
    for a, b in zip(cpu_args, sim_args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(b, a)


def test_python_semantics_that_may_raise_are_checked_by_a_dry_launch(launches):
    """math.sqrt raises where Python's does: a dry launch finds whether any iteration
    would, then one launch writes; where one would, the host runs the loop (the CPU's
    writes up to the failing element, its ValueError)."""
    x = np.abs(_rng().standard_normal(20))
    run_both(roots, np.zeros(20), x)
    assert launches == ["k0_loop", "k0_loop"]
    launches.clear()
    _raises_as_on_the_cpu(roots, ValueError, np.full(3, -5.0), np.array([1.0, -1.0, 2.0]))
    assert launches == ["k0_loop"]
    assert "if (!dry) " in cuda_source(roots, np.zeros(20), x)


def rereads(y, x):
    for i in range(x.shape[0]):
        y[i] = x[i] * 2.0
        y[i] = math.sqrt(y[i])
    return y


def test_a_checked_loop_reading_what_it_wrote_stays_on_the_host(launches):
    run_both(rereads, np.zeros(5), np.arange(5.0))
    assert launches == []
    assert "reads an element it wrote" in cuda_source(rereads, np.zeros(5), np.arange(5.0))


def test_a_loop_around_a_loop_launches_the_inner_one_per_row(launches):
    a, b = _rng().standard_normal((4, 5)), _rng().standard_normal(5)
    run_both(array_functions.loop_2d, a, b)
    assert launches == ["k0_loop"] * 4
    assert "it contains a loop at line 71" in cuda_source(array_functions.loop_2d, a, b)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_a_complex_loop_is_one_launch(dtype, launches):
    """Element reads and writes of complex arrays, complex arithmetic with NumPy's
    semantics (Smith's division, |z|), a Python complex argument, a complex `if`."""
    with np.errstate(all="ignore"):
        cpu, sim = run_both(complex_loop, *_complex_operands(dtype))
    assert launches == ["k0_loop"]


def test_abs_of_a_python_complex_runs_on_the_device(launches):
    """CPython's abs (hypot of the parts), its OverflowError where finite parts overflow."""
    x = np.array([3.0, 1.7e308, -0.5, np.inf, np.nan, -0.0, 5e-324, 1e-300])
    run_both(python_magnitudes, np.zeros(8), x / 2)
    assert launches == ["k0_loop", "k0_loop"]
    assert "astjit_py_cabs(" in cuda_source(python_magnitudes, x, x)
    _raises_as_on_the_cpu(python_magnitudes, OverflowError, np.full(8, -1.0), x)


def python_powers_and_quotients(y, z, w):
    for i in range(z.shape[0]):
        y[i] = complex(z[i]) ** w + complex(z[i]) ** 3 + w / complex(z[i])
    return y


def test_python_complex_power_and_division_run_on_the_device(launches):
    """CPython's `**` (c_powi's products, the polar form) and `/` (_Py_c_quot) of Python
    complexes; their ZeroDivisionError and OverflowError as the CPU raises them."""
    z = _rng().standard_normal(40) + 1j * _rng().standard_normal(40)
    z[:3] = [complex(1e100, -0.0), complex(-0.0, 2.0), 1e-100]
    for w in (2 + 0j, -3 + 0j, 0.5 - 1j, 1j):
        launches.clear()
        run_both(python_powers_and_quotients, np.zeros(40, complex), z, w)
        assert launches == ["k0_loop", "k0_loop"]
    z[5] = 0
    _raises_as_on_the_cpu(python_powers_and_quotients, ZeroDivisionError,
                          np.zeros(40, complex), z, 2 + 0j)
    z[5] = 1e-200  # (1e-200) ** -3: the product underflows to 0, CPython's EDOM
    _raises_as_on_the_cpu(python_powers_and_quotients, ZeroDivisionError,
                          np.zeros(40, complex), z, -3 + 0j)
    z[5] = 1e200
    _raises_as_on_the_cpu(python_powers_and_quotients, OverflowError,
                          np.zeros(40, complex), z, 2 + 0j)


SOURCES = [(fn, make) for fn, make in INDEPENDENT] + [
    (complex_loop, lambda: _complex_operands(np.complex64)),
    (complex_loop, lambda: _complex_operands(np.complex128)),
    (doubled, lambda: (np.zeros(3), np.ones(3))),
    (counted_by_hand, lambda: (np.zeros(3, np.float32), np.ones(3, np.float32))),
    (until_negative, lambda: (np.zeros(3), np.ones(3))),
    (from_to, lambda: (np.zeros(3), 0, 3)),
    (roots, lambda: (np.zeros(3), np.ones(3))),
    (python_magnitudes, lambda: (np.zeros(3), np.ones(3))),
    (python_powers_and_quotients, lambda: (np.zeros(3, complex), np.ones(3), 2j)),
    (shifted, lambda: (np.zeros(3), np.ones(3))),
    (array_functions.loop_2d, lambda: (np.ones((2, 3)), np.ones(3))),
    (array_functions.prefix_sum, lambda: (np.ones(3),)),
]


@pytest.mark.parametrize("fn,make", SOURCES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_source_compiles_with_nvrtc(fn, make):
    source = cuda_source(fn, *make())
    assert compile_to_ptx(source).count(b".entry") == source.count("__global__")
