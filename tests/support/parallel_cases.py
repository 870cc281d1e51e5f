"""Kernels and checks of `jit(parallel=True)` and `astjit.prange` (tests/backend/test_parallel.py).

The checks run in a child process (the test module starts it with ASTJIT_NUM_THREADS and
ASTJIT_MIN_CHUNK_WORK set so that loops of a few elements split into chunks too); each
returns a JSON-able result the parent asserts on. Differential: every kernel against
NumPy / CPython and against serial `jit`, over hypothesis-drawn sizes (0, 1, fewer than the
threads, more) and layouts (contiguous, strided, reversed, transposed views).
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astjit import jit, prange

# ---- kernels --------------------------------------------------------------------------------

def fused_float(x, y):
    return np.exp(-x * x) * np.sin(y) + x / (1.0 + y * y)


def fused_int(a, b):
    return (a * 3 + b) * (a - b) + np.abs(a - 2 * b) // 3


def fused_2d(m, v):
    return (m * 7 - v) % 11 + m * v


def fused_two_outputs(x, y):
    return x * y + 1.0, x - y


def stored_and_sum(x, y):  # a reduction that also stores its elementwise values
    e = np.exp(-x * x) * np.sin(y)
    return e, np.sum(e)


def float_sum(x, y):
    return np.sum(np.exp(-x * x) * np.sin(y) + x / (1.0 + y * y))


def int_sum(a, b):
    return np.sum((a * b) % 1000 - a)


def float_max(x):
    return np.max(x * 2.0 - 1.0)


def float_mean(x):
    return np.mean(x * x)


def rows_sum(m):
    return np.sum(m * 2.0 + 1.0, axis=1)


def columns_sum(m):
    return np.sum(m * 2.0 + 1.0, axis=0)


def softmax(m):  # a row group, or its fused members where the rows do not fit
    e = np.exp(m - np.max(m, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def divide(a, b):
    return a / b, a // b


def prange_int_sum(a):
    s = 0
    for i in prange(a.shape[0]):
        s += (a[i] * a[i]) % 97
    return s


def prange_float_sum(x, y):
    s = 0.0
    for i in prange(x.shape[0]):
        s += np.exp(-x[i] * x[i]) * np.sin(y[i]) + x[i] / (1.0 + y[i] * y[i])
    return s


def prange_fill(a, out):
    for i in prange(a.shape[0]):
        out[i] = a[i] * 3 + i
    return out


def prange_reductions(a, start):
    s = 10
    p = 1
    bits = 0
    d = 0.5
    for i in prange(start, a.shape[0]):
        s += a[i]
        p *= a[i] % 3 + 1
        bits |= a[i] & 12
        d -= a[i] * 0.25
    return s, p, bits, d


def prange_rows(m, out):
    for i in prange(m.shape[0]):
        acc = 0.0
        for j in range(m.shape[1]):
            acc += m[i, j] * (j + 1)
        out[i] = acc
    return out


def prange_nested(m):
    s = 0.0
    for i in prange(m.shape[0]):
        for j in prange(m.shape[1]):
            s += m[i, j]
    return s


def prange_last(a):
    i = -7
    for i in prange(a.shape[0]):
        a[i] = i * 2
    return i


def prange_serial_recurrence(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s = s * 0.5 + a[i]
    return s


def prange_break(a):
    s = 0
    for i in prange(a.shape[0]):
        if a[i] > 50:
            break
        s += a[i]
    return s


def prange_stepped(a):
    s = 0
    for i in prange(1, a.shape[0], 3):
        s += a[i]
    return s


def prange_index(a, idx):
    s = 0
    for i in prange(idx.shape[0]):
        s += a[idx[i]]
    return s


def prange_divide(n, z):
    s = 0
    for i in prange(n):
        s += 1000 // (i - z)
    return s


def escape_time(cr, ci):
    zr = zi = 0.0
    k = 0
    while k < 50 and zr * zr + zi * zi < 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        k += 1
    return k


def reciprocal(x):
    return 1.0 / x


# ---- checks run in the child ---------------------------------------------------------------

def _layouts(draw, shape, dtype):
    base = draw(st.integers(-1000, 1000))
    full = (np.arange(int(np.prod(shape)) * 4) * 37 % 2003 + base).astype(dtype)
    if dtype == np.float64:
        full = full / 300.0
    layout = draw(st.sampled_from(["contiguous", "strided", "reversed", "transposed"]))
    if layout == "strided":
        return full[::4] if len(shape) == 1 else full.reshape(shape[0], shape[1] * 4)[:, ::4]
    if layout == "reversed":
        return full[: int(np.prod(shape))][::-1].reshape(shape)
    if layout == "transposed" and len(shape) == 2:
        return full[: int(np.prod(shape))].reshape(shape[::-1]).T
    return full[: int(np.prod(shape))].reshape(shape)


def _same(parallel, expected, exact: bool) -> bool:
    if isinstance(expected, tuple):
        return isinstance(parallel, tuple) and len(parallel) == len(expected) and all(
            _same(p, e, exact) for p, e in zip(parallel, expected))
    parallel, expected = np.asarray(parallel), np.asarray(expected)
    if parallel.shape != expected.shape:
        return False
    if exact:
        return np.array_equal(parallel, expected)
    return np.allclose(parallel, expected, rtol=1e-9, atol=1e-12, equal_nan=True)


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


_JITTED: dict = {}


def _jitted(fn, parallel: bool):
    """One jitted function per kernel and option, compiled once per signature."""
    key = (fn, parallel)
    if key not in _JITTED:
        _JITTED[key] = jit(fn, parallel=parallel)
    return _JITTED[key]


def _compare(fn, args, exact, failures):
    """`fn(*args)` under parallel jit against serial jit and against Python / NumPy."""
    with np.errstate(all="ignore"):
        expected = fn(*_copies(args))
    serial = _jitted(fn, False)(*_copies(args))
    parallel = _jitted(fn, True)(*_copies(args))
    if not (_same(parallel, expected, exact) and _same(parallel, serial, exact)):
        shapes = [np.shape(a) for a in args]
        failures.append(f"{fn.__name__}{shapes}: parallel {parallel!r}, expected {expected!r}")


SIZES = st.one_of(st.sampled_from([0, 1, 2, 3, 5]), st.integers(0, 300))


def differential(examples: int) -> list[str]:
    """Every kernel over drawn sizes and layouts; the failures found (none: [])."""
    failures: list[str] = []

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data(), SIZES, st.integers(1, 9))
    def run(data, n, k):
        draw = data.draw
        x, y = _layouts(draw, (n,), np.float64), _layouts(draw, (n,), np.float64)
        a, b = _layouts(draw, (n,), np.int64), _layouts(draw, (n,), np.int64)
        m = _layouts(draw, (n, k), np.int64)
        mf = _layouts(draw, (n, k), np.float64)
        for fn, args, exact in [
            (fused_float, (x, y), False), (fused_int, (a, b), True),
            (fused_2d, (m, a[:k] if n >= k else np.arange(k)), True),
            (fused_2d, (m[:, :1], np.arange(k)), True),  # broadcast along the last axis
            (fused_two_outputs, (x, y), False), (float_sum, (x, y), False),
            (int_sum, (a, b), True), (float_mean, (x,), False), (rows_sum, (mf,), False),
            (columns_sum, (mf,), False), (softmax, (mf,), False),
            (divide, (x, y - y[::-1] if n else y), False),
            (prange_int_sum, (a,), True), (prange_float_sum, (x, y), False),
            (prange_fill, (a, np.zeros(n, np.int64)), True),
            (prange_reductions, (a, min(2, n)), True),
            (prange_rows, (mf, np.zeros(n)), False), (prange_nested, (mf,), False),
            (prange_last, (np.zeros(n, np.int64),), True),
            (prange_serial_recurrence, (x,), False), (prange_break, (a % 60,), True),
            (prange_stepped, (a,), True),
        ] + ([(float_max, (x,), False)] if n else []):
            _compare(fn, args, exact, failures)

    run()
    return failures


def errors() -> list[list[str]]:
    """(Python's exception, parallel jit's) for loops failing in one chunk or several: the
    parallel loop must raise what the serial one does, the first failing iteration's."""
    n = 1000
    a = np.arange(n)
    cases = []
    for bad in ([999], [3, 500, 998], [640, 10]):
        idx = np.arange(n) % n
        for j, position in enumerate(bad):
            idx[position] = n + j
        cases.append((prange_index, (a, idx)))
    cases += [(prange_divide, (n, 0)), (prange_divide, (n, 700)), (prange_index, (a, a - 5000))]
    seen = []
    for fn, args in cases:
        pair = []
        for run in (fn, jit(fn, parallel=True)):
            try:
                run(*args)
                pair.append("no error")
            except Exception as exc:  # noqa: BLE001 (comparing whatever each raises)
                pair.append(f"{type(exc).__name__}: {str(exc).split(' (at ')[0]}")
        seen.append(pair)
    return seen


def determinism() -> list[bool]:
    """Whether float reductions give the same result at every call (for this thread count),
    and whether they equal serial jit's exactly (so they must with one thread: one chunk)."""
    x = np.linspace(-3.0, 3.0, 100_003)
    y = np.cos(x * 7.0)
    f, g = jit(float_sum, parallel=True), jit(prange_float_sum, parallel=True)
    return [len({f(x, y) for _ in range(5)}) == 1, len({g(x, y) for _ in range(5)}) == 1,
            bool(f(x, y) == jit(float_sum)(x, y)),
            bool(g(x, y) == jit(prange_float_sum)(x, y))]


def elementwise_exact() -> list[str]:
    """The cases where elementwise float results of a kernel split into many chunks are not
    serial jit's bit for bit (none: []): 1-d arrays, and rows of 1001 elements (parallel
    code must loop over them as the serial code does, rows merged into one loop or not),
    an elementwise kernel and one whose values a sum also reduces. The vector loop calls
    libmvec, its remainder iterations libm, which differ in the last bit for most of these
    inputs: a loop of the parallel code with its remainder where the serial code's has
    none would show."""
    differing = []
    for fn, first in ((fused_float, lambda r: r), (stored_and_sum, lambda r: r[0])):
        serial, parallel = jit(fn), jit(fn, parallel=True)
        for shape in ((5_077,), (100_003,), (301, 1001)):
            x = np.linspace(-3.0, 3.0, int(np.prod(shape))).reshape(shape)
            if not np.array_equal(first(parallel(x, x * 17.0)), first(serial(x, x * 17.0))):
                differing.append(f"{fn.__name__}{shape}")
    return differing


def off_thread_cpu() -> float:
    """The share of the process's CPU time a second of parallel calls spent off the calling
    thread."""
    import time

    f = jit(float_sum, parallel=True)
    x, y = np.linspace(-2.0, 2.0, 2_000_000), np.linspace(3.0, -1.0, 2_000_000)
    f(x, y)
    cpu, main, wall = time.process_time(), time.thread_time(), time.perf_counter()
    while time.perf_counter() - wall < 0.5:
        f(x, y)
    process = time.process_time() - cpu
    return (process - (time.thread_time() - main)) / process


def refusal() -> str:
    """What compiling a parallel function says (with ASTJIT_NUM_THREADS set badly)."""
    try:
        jit(fused_float, parallel=True)(np.ones(3), np.ones(3))
    except ValueError as exc:
        return str(exc)
    return "compiled"


def after_fork() -> list[bool]:
    """Parallel calls in a child forked after the pool started (which has none of its
    threads), and in the parent after: right, and no hang."""
    import multiprocessing

    f = jit(float_sum, parallel=True)
    x, y = np.linspace(-2.0, 2.0, 400_000), np.linspace(3.0, -1.0, 400_000)
    expected = float_sum(x, y)
    first = bool(np.isclose(f(x, y), expected, rtol=1e-9))
    with multiprocessing.get_context("fork").Pool(2) as pool:
        children = pool.starmap(f, [(x, y), (x, y)])
    return [first, *(bool(np.isclose(c, expected, rtol=1e-9)) for c in children),
            bool(np.isclose(f(x, y), expected, rtol=1e-9))]


def vectorized() -> list[str]:
    """`vectorize(f, parallel=True)` against serial `vectorize` and `np.vectorize` over
    broadcast shapes, and the error of its first failing element."""
    from astjit import vectorize

    problems = []
    serial, parallel = vectorize(escape_time), vectorize(escape_time, parallel=True)
    for rows, cols in [(0, 3), (1, 1), (3, 1), (7, 5), (40, 60)]:
        cr = np.linspace(-2.0, 1.0, cols)[None, :]
        ci = np.linspace(-1.5, 1.5, rows)[:, None]
        got, want = parallel(cr, ci), np.vectorize(escape_time)(cr, ci) if rows else None
        if not (np.array_equal(got, serial(cr, ci)) and (want is None or np.array_equal(got, want))):
            problems.append(f"escape_time {rows}x{cols}")
    x = np.ones(1000)
    x[[400, 900]] = 0.0
    try:
        vectorize(reciprocal, parallel=True)(x)
        problems.append("no ZeroDivisionError")
    except ZeroDivisionError as exc:
        if "float division by zero" not in str(exc):
            problems.append(str(exc))
    return problems


def concurrent_calls() -> list[bool]:
    """Parallel calls from several Python threads at once (where compiled code releases the
    GIL, all but one find the pool busy and run their chunks themselves): each right."""
    from concurrent.futures import ThreadPoolExecutor

    f, g = jit(float_sum, parallel=True), jit(prange_int_sum, parallel=True)
    x, y = np.linspace(-2.0, 2.0, 300_000), np.linspace(3.0, -1.0, 300_000)
    a = np.arange(300_000)
    want_f, want_g = f(x, y), g(a)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: f(x, y) if k % 2 else g(a), range(16)))
    return [bool(v == (want_f if k % 2 else want_g)) for k, v in enumerate(got)]
