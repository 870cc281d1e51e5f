"""`vectorize`: a scalar Python function mapped elementwise over broadcast arrays, compiled.

Like `np.vectorize`, but the function is compiled once per signature of element types:
on the CPU one jitted loop over the flattened broadcast arguments; on a GPU (or the
`cuda-sim` simulator) one thread per element (backend/cuda/vectorized.py). Every
argument is taken as an array (`np.asarray`; a scalar is a 0-d array); each element is
the Python scalar `np.vectorize` passes (a float32 or complex64 one stays a NumPy
scalar of its dtype), so the function has Python's semantics, as under np.vectorize; the
result's dtype is what astjit's type inference gives the function on those element types.
"""
from __future__ import annotations

import functools
import itertools
import linecache
import threading
from collections.abc import Callable
from typing import Any

from .errors import CompileError
from .ir.types import NUMPY_NAMES, ScalarType, python_type_of

TARGETS = ("cpu", "gpu", "cuda-sim")

_LOOP_NAMES = itertools.count()

PYTHON_ELEMENTS = {"float64": "float", "int64": "int", "bool": "bool", "complex128": "complex",
                   "float32": "", "complex64": ""}
"""The supported dtypes, and the Python type the CPU loop makes of each element ("": none)."""


def vectorize(fn: Callable, *, target: str = "cpu", parallel: bool = False) -> Callable:
    """`fn` (a scalar function: its `if`/`while`, calls of other plain functions, math)
    compiled to map elementwise over its broadcast array arguments.

        mandel = vectorize(mandel_point)          # target="cpu"
        counts = mandel(cr, ci)                   # an int64 array of cr and ci's broadcast shape

    Targets: "cpu" (a jitted loop, LLVM), "gpu" (a CUDA kernel launched through CuPy, one
    thread per element: arguments and results are CuPy arrays) and "cuda-sim" (the same
    kernel run on the host on NumPy arrays; a test target). Arguments broadcast as
    NumPy's; element dtypes float64, float32, int64, bool, complex128 and complex64 are
    supported. Each element is the Python scalar np.vectorize passes (float32's and
    complex64's a NumPy scalar of that dtype, as np.vectorize's first call, which decides
    its dtype, sees), so `/` by zero raises ZeroDivisionError as under np.vectorize. The
    function
    must return a scalar for those element types (else a CompileError). On the GPU targets,
    an element whose Python semantics raise (a division by zero, `math.sqrt` of a negative,
    `int()` of NaN) stops its thread; the call then runs again on the CPU, which raises
    the same exception the CPU target raises. Refused on the GPU targets (CompileError):
    recursion, ops with no kernel form (tuples, arrays, `math.floor` & co), and `**` of a
    Python complex (CPython's algorithm: write np.power for NumPy's, or use the CPU target).

    `parallel=True` (the CPU target) runs the loop over the elements as an `astjit.prange`
    loop under `jit(parallel=True)`: split over a thread per core (docs/parallel.md).
    """
    if not isinstance(parallel, bool):
        raise TypeError(f"vectorize() option 'parallel' must be True or False, got {parallel!r}")
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; available: "
                         + ", ".join(repr(t) for t in TARGETS))
    if getattr(fn, "py_func", None) is not None:
        fn = fn.py_func
    vectorized = Vectorized(fn, target, parallel)
    functools.update_wrapper(vectorized, fn)
    return vectorized


class Vectorized:
    """The compiled elementwise form of one function for one target, per element types."""

    def __init__(self, fn: Callable, target: str, parallel: bool = False):
        self.fn, self.target, self.parallel = fn, target, parallel
        self.lock = threading.Lock()
        self.loops: dict[tuple, Callable] = {}
        self.parsed = None
        self.kernels: dict[tuple, Any] = {}

    def __copy__(self) -> Vectorized:
        return self  # copied, a function is itself

    def __deepcopy__(self, memo: dict) -> Vectorized:
        return self

    def __reduce__(self) -> str | tuple:
        """By reference to its name where its module holds it, else as `vectorize(fn,
        target=...)`: its loops and kernels are compiled again where it is unpickled."""
        from . import pickling

        name = pickling.by_reference(self)
        if name is not None:
            return name
        return _unpickle, (pickling.portable(self.fn), self.target, self.parallel)

    def __call__(self, *args: Any) -> Any:
        if self.target == "cpu":
            return self.run_cpu(*args)
        from .backend.cuda.vectorized import run_on_device

        return run_on_device(self, args)

    def element_types(self, arrays: list) -> tuple[ScalarType, ...]:
        """The element type of each array, as `np.vectorize` passes elements (through
        `np.frompyfunc`): a Python float, int, bool or complex, except float32's and
        complex64's NumPy scalars (Python has no such types; np.vectorize's first call,
        which decides its dtype, sees one)."""
        types = []
        for i, a in enumerate(arrays):
            if a.dtype.name not in PYTHON_ELEMENTS:
                raise TypeError(f"vectorize({self.fn.__name__}): argument {i} has dtype "
                                f"{a.dtype}; supported: "
                                f"{', '.join(PYTHON_ELEMENTS)}")
            types.append(python_type_of(a.dtype.type(0).item() if PYTHON_ELEMENTS[a.dtype.name]
                                        else a.dtype.type(0)))
        return tuple(types)

    def typed(self, types: tuple[ScalarType, ...]):
        """`fn` typed for `types`, and its result type (a scalar, else a CompileError)."""
        from .api import typed_module
        from .frontend import lower_function

        with self.lock:
            if self.parsed is None:
                self.parsed = lower_function(self.fn)
        module = typed_module(self.parsed, types)
        result = module.entry_graph.outputs[0].type
        if not isinstance(result, ScalarType) or result.name not in NUMPY_NAMES:
            raise CompileError(f"vectorize({self.fn.__name__}) needs a function returning a "
                               f"number or bool; for elements of types "
                               f"({', '.join(map(str, types))}) it returns {result}",
                               module.entry_graph.loc)
        return module, result

    def cpu_twin(self) -> Vectorized:
        """The CPU target of the same function (the GPU targets' error path)."""
        with self.lock:
            twin = self.kernels.get("cpu")
            if twin is None:
                twin = self.kernels["cpu"] = Vectorized(self.fn, "cpu")
            return twin

    def result_dtype(self, types: tuple[ScalarType, ...]) -> str:
        return NUMPY_NAMES[self.typed(types)[1].name]

    def run_cpu(self, *args: Any) -> Any:
        import numpy as np

        arrays = np.broadcast_arrays(*(np.asarray(a) for a in args))
        shape = arrays[0].shape if arrays else ()
        flat = [np.ascontiguousarray(a).ravel() for a in arrays]
        dtype = self.result_dtype(self.element_types(flat))
        out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=dtype)
        self.loop(tuple(a.dtype.name for a in flat))(out, out.size, *flat)
        return out.reshape(shape)

    def loop(self, dtypes: tuple[str, ...]) -> Callable:
        """The jitted `for i in range(n): out[i] = fn(float(a0[i]), ...)` for these dtypes."""
        with self.lock:
            loop = self.loops.get(dtypes)
            if loop is None:
                loop = self.loops[dtypes] = _make_loop(self.fn, dtypes, self.parallel)
            return loop


def _unpickle(fn: Callable, target: str, parallel: bool = False) -> Callable:
    from .pickling import unportable

    return vectorize(unportable(fn), target=target, parallel=parallel)


def _make_loop(fn: Callable, dtypes: tuple[str, ...], parallel: bool) -> Callable:
    """The loop's source is generated, registered in `linecache` under a fake file name
    (astjit reads every function's source with `inspect`), run with `fn` (and `prange`) as
    its globals (the frontend resolves the call through the loop's globals), and jitted."""
    from .api import jit
    from .parallel import prange

    name = f"astjit_vectorized_{fn.__name__}"
    params = "".join(f", a{i}" for i in range(len(dtypes)))
    elements = ", ".join(f"{PYTHON_ELEMENTS[d]}(a{i}[i])" for i, d in enumerate(dtypes))
    text = (f"def {name}(out, n{params}):\n"
            f"    for i in {'astjit_prange' if parallel else 'range'}(n):\n"
            f"        out[i] = astjit_element_fn({elements})\n")
    filename = f"<astjit-vectorize-{next(_LOOP_NAMES)}:{fn.__qualname__}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope: dict[str, Any] = {"astjit_element_fn": fn, "astjit_prange": prange,
                             "__name__": __name__}
    exec(compile(text, filename, "exec"), scope)
    return jit(scope[name], parallel=parallel)
