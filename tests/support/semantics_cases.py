"""The cases of test_semantics_table.py, derived from the frontend's name maps and the op table.

A *spelling* is one way to write an op in Python: `a + b`, `not a`, `abs(a)`,
`math.sqrt(a)`, `np.add(a, b)`, `np.sum(a, axis=0)`, `a.sum()`. The spellings
come from the maps the frontend compiles from, never from a list written here:

- operators: `operators.BINARY_OPS`, `UNARY_OPS`, `COMPARE_OPS` (the text is
  `ast.unparse` of the operator node);
- builtins and `math` functions: `builtins._BUILTIN_HANDLERS` and `_MATH_OPS`;
  each handler is called with a recording `emit` to learn its arity and ops;
- NumPy functions: `ufuncs._NAMES` (an alias that is the same object, like
  `np.divide` for `np.true_divide`, compiles identically and is tested once);
- reductions: `reductions.FUNCTIONS` and `METHODS`, each with axis variants.

A *case* is a spelling and one argument-type signature (one compilation); its
inputs are every combination of the edge values of those types. Which
signatures a spelling gets follows from where it is defined (`signatures`):
ops the table lifts to arrays (`elementwise.UFUNCS`) get array signatures.
"""
from __future__ import annotations

import ast
import itertools
import math
from dataclasses import dataclass

import numpy as np

from astjit.frontend import builtins as builtin_calls
from astjit.frontend import operators, reductions, ufuncs
from astjit.frontend.builtins import CallError
from astjit.ir.ops.elementwise import UFUNCS
from astjit.ir.ops.reductions import REDUCTIONS

# ---- spellings ---------------------------------------------------------------------------------

PARAMS = ("a", "b", "c")


@dataclass(frozen=True)
class Spelling:
    """One way to write an op, as an expression over the parameters a, b, c."""

    text: str
    ops: frozenset
    """The ops the frontend lowers it to."""
    arity: int
    family: str
    """'operator', 'builtin', 'math', 'numpy' or 'reduction'."""

    @property
    def name(self) -> str:
        """The generated function's name: the text with every other character as its code."""
        return "f_" + "".join(ch if ch.isalnum() else f"_{ord(ch):x}_" for ch in self.text)

    @property
    def source(self) -> str:
        return f"def {self.name}({', '.join(PARAMS[:self.arity])}):\n    return {self.text}\n"


def _probe(handler, arity: int) -> frozenset | None:
    """The ops `handler` emits for `arity` arguments, or None when it refuses that arity."""
    emitted = []

    def emit(op, inputs, attrs=None):
        emitted.append(op)
        return object()
    try:
        handler(emit, [object()] * arity)
    except CallError:
        return None
    return frozenset(emitted)


def _called(prefix: str, name: str, handler, family: str) -> Spelling | None:
    """`prefix.name(a, ...)` at the smallest arity (1 to 3) the handler takes; None for none."""
    for arity in (1, 2, 3):
        ops = _probe(handler, arity)
        if ops is not None:
            return Spelling(f"{prefix}{name}({', '.join(PARAMS[:arity])})", ops, arity, family)
    return None


def _operators() -> list[Spelling]:
    a, b = ast.Name("a"), ast.Name("b")
    out = [Spelling(ast.unparse(ast.BinOp(a, node(), b)), frozenset({op}), 2, "operator")
           for node, op in operators.BINARY_OPS.items()]
    out += [Spelling(ast.unparse(ast.UnaryOp(node(), a)), frozenset({op}), 1, "operator")
            for node, op in operators.UNARY_OPS.items()]
    out += [Spelling(ast.unparse(ast.Compare(a, [node()], [b])), frozenset({op}), 2, "operator")
            for node, op in operators.COMPARE_OPS.items()]
    return out


def _calls() -> list[Spelling | None]:
    """The builtins, math and NumPy functions; None for a handler that refuses every arity."""
    out = [_called("", fn.__name__, handler, "builtin")
           for fn, handler in builtin_calls._BUILTIN_HANDLERS.items()]
    out += [_called("math.", name, builtin_calls.call_handler(getattr(math, name)), "math")
            for name in builtin_calls._MATH_OPS]
    seen = set()
    for name in ufuncs._NAMES:
        fn = getattr(np, name)
        if id(fn) not in seen:  # np.divide is np.true_divide: the same handler, the same code
            seen.add(id(fn))
            out.append(_called("np.", name, ufuncs.ufunc_table()[fn], "numpy"))
    return out


NOT_CALLABLE_ALONE = {"range": "only the iterable of a for loop (test_frontend.py, the corpus)"}
"""Builtins whose handler refuses every plain call, and where they are tested instead."""
UNCALLED = sorted(fn.__name__ for fn, handler in builtin_calls._BUILTIN_HANDLERS.items()
                  if _called("", fn.__name__, handler, "builtin") is None)
"""The builtins that gave no spelling; the completeness test compares them with the list."""

AXIS_VARIANTS = ("", "axis=0", "axis=-1, keepdims=True")
"""The reductions' keyword forms: every one for np.<kind>, no axis for an alias (np.amax),
the first and last for the methods; a scan (np.cumsum) takes no keepdims."""
ALIASES = {name for row in REDUCTIONS.values() for name in row.spellings[1:]}
"""Another name of a reduction kind (np.amax)."""


def _variants(name: str) -> tuple[str, ...]:
    if name in ALIASES:
        return AXIS_VARIANTS[:1]
    if reductions.FUNCTIONS[name].op == "scan":
        return ("", "axis=0", "axis=-1")
    return AXIS_VARIANTS


def _reductions() -> list[Spelling]:
    out = []
    for name, reducer in reductions.FUNCTIONS.items():
        out += [Spelling(f"np.{name}(a{', ' * bool(v)}{v})", frozenset({reducer.op}), 1,
                         "reduction") for v in _variants(name)]
    for name in reductions.METHODS:  # the same lowering as np.<name>: two forms suffice
        out += [Spelling(f"a.{name}({v})", frozenset({reductions.FUNCTIONS[name].op}), 1,
                         "reduction") for v in _variants(name)[::2]]
    return out


SPELLINGS: list[Spelling] = _operators() + [s for s in _calls() if s] + _reductions()
NUMPY_SPELLED_OPS = {op for s in SPELLINGS if s.family == "numpy" for op in s.ops}


# ---- edge values -------------------------------------------------------------------------------

INTS = [0, 1, -1, 2, -2, 3, -7, 5, 63, 64, 2 ** 31, 2 ** 53 + 1, -(2 ** 53 + 1), 2 ** 62,
        2 ** 63 - 1, -2 ** 63, -2 ** 63 + 1]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -7.0, math.pi, 1e-8, 1e-300, 5e-324,
          -5e-324, 1e16, 1e300, -1e300, 2.0 ** 63, 1e19, 710.0, -745.5, math.nan, math.inf,
          -math.inf]
BOOLS = [False, True]


def _distinct(values) -> list:
    """`values` without repeats, by type and bits (so 0.0 and -0.0 both stay)."""
    seen, out = set(), []
    for v in values:
        key = (type(v), np.asarray(v).tobytes())
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


with np.errstate(over="ignore"):
    FLOAT32S = _distinct(np.float32(x) for x in FLOATS)
SCALARS = {
    "int": INTS, "float": FLOATS, "bool": BOOLS,
    "np.float64": [np.float64(x) for x in FLOATS],
    "np.float32": FLOAT32S,
    "np.int64": [np.int64(x) for x in INTS],
    "np.bool_": [np.bool_(x) for x in BOOLS],
}
"""Argument type -> its edge values."""
DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "b": np.bool_}
ARRAY_EDGES = {"f64": FLOATS, "f32": SCALARS["np.float32"], "i64": INTS, "b": BOOLS}
ZERO_D_EDGES = {"f64": [0.0, -0.0, 1.0, -2.5, 3.0, 1e300, 5e-324, math.nan, math.inf, -math.inf],
                "i64": [0, 1, -7, 2 ** 63 - 1, -2 ** 63], "b": BOOLS}
"""0-d arrays run one combination a call: fewer values."""


def array_kind(kind: str) -> tuple[str, int] | None:
    """'f64[1d]' -> ('f64', 1); None for a scalar kind."""
    if not kind.endswith("d]"):
        return None
    dtype, ndim = kind[:-2].split("[")
    return dtype, int(ndim)


# ---- signatures --------------------------------------------------------------------------------

SCALAR_SIGNATURES = {
    "python": {  # operators and builtins: Python's own types, and NumPy scalars meeting them
        1: [("int",), ("float",), ("bool",), ("np.float32",), ("np.int64",)],
        2: [("int", "int"), ("float", "float"), ("int", "float"), ("float", "int"),
            ("bool", "bool"), ("bool", "int"), ("np.float32", "float"), ("np.int64", "int")]},
    "math": {  # math converts its arguments to float first
        1: [("int",), ("float",), ("np.float32",)],
        2: [("float", "float"), ("int", "float"), ("np.float32", "np.float32")]},
    "numpy": {  # NumPy's promotion: Python scalars are weak, NumPy scalars strong
        1: [("int",), ("float",), ("bool",), ("np.float32",)],
        2: [("int", "int"), ("float", "float"), ("int", "float"), ("bool", "bool"),
            ("np.float32", "float"), ("np.float64", "np.int64")],
        3: [("bool", "int", "float"), ("np.bool_", "np.float32", "float")]},
}
ARRAY_SIGNATURES = {
    "numpy": {  # every dtype, weak scalars, broadcasting, 0-d
        1: [("f64[1d]",), ("f32[1d]",), ("i64[1d]",), ("b[1d]",)],
        2: [("f64[1d]", "f64[1d]"), ("i64[1d]", "i64[1d]"), ("b[1d]", "b[1d]"),
            ("f32[1d]", "float"), ("f64[2d]", "f64[1d]"), ("f64[0d]", "f64[0d]")],
        3: [("b[1d]", "f64[1d]", "f64[1d]"), ("b[1d]", "f32[1d]", "float")]},
    "operator": {  # an operator NumPy also spells (which has the full set), or not on arrays yet
        1: [("f32[1d]",), ("i64[1d]",)],
        2: [("f32[1d]", "float"), ("i64[1d]", "int")]},
    "builtin": {  # Python functions given arrays: refused, or NumPy's answer (abs, pow, len)
        1: [("f64[1d]",), ("f64[0d]",)],
        2: [("f64[1d]", "f64[1d]")]},
    "math": {1: [("f64[1d]",)], 2: [("f64[1d]", "f64[1d]")]},
}
REDUCTION_SIGNATURES = {
    "": [("f64[1d]",), ("i64[1d]",), ("b[1d]",), ("f64[2d]",), ("f64[0d]",)],
    "axis": [("f64[2d]",), ("f32[2d]",), ("i64[2d]",), ("b[2d]",), ("f64[1d]",)],
    "alias": [("f64[2d]",), ("i64[1d]",)],  # np.amax, the methods: np.<kind>'s own lowering
}


def signatures(s: Spelling) -> list[tuple[str, ...]]:
    """The argument types `s` is compiled for: scalars, and arrays by where the spelling
    comes from: the np.* functions and the operators that only Python spells (`~`) get
    the full array set, a Python function given an array must give Python's answer."""
    if s.family == "reduction":
        alias = not any(s.text.startswith(f"np.{name}(") for name in reductions.FUNCTIONS
                        if name not in ALIASES)
        return REDUCTION_SIGNATURES["alias" if alias else "axis" if "axis" in s.text else ""]
    scalars = SCALAR_SIGNATURES.get(s.family, SCALAR_SIGNATURES["python"]).get(s.arity, [])
    arrays = ARRAY_SIGNATURES["numpy" if _full_array_set(s) else s.family].get(s.arity, [])
    return [*scalars, *(arrays if s.ops != {"matmul"} else [])]  # a @ b of arrays: test_linalg


def _full_array_set(s: Spelling) -> bool:
    return s.family == "numpy" or (s.family == "operator" and s.ops <= set(UFUNCS)
                                   and not s.ops <= NUMPY_SPELLED_OPS)


@dataclass(frozen=True)
class Case:
    """One compilation: a spelling and the types of its arguments."""

    spelling: Spelling
    signature: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.spelling.text} ({', '.join(self.signature)})"


CASES = [Case(s, sig) for s in SPELLINGS for sig in signatures(s)]


# ---- inputs ------------------------------------------------------------------------------------

def inputs(case: Case) -> list[tuple]:
    """Every argument tuple the case runs: the edge values of each argument type."""
    if case.spelling.family == "reduction":
        return [(x,) for x in reduction_arrays(*array_kind(case.signature[0]))]
    kinds = case.signature
    arrays = [i for i, k in enumerate(kinds) if array_kind(k)]
    if not arrays:
        return list(itertools.product(*(SCALARS[k] for k in kinds)))
    scalar_choices = [SCALARS[k] if i not in arrays else [None] for i, k in enumerate(kinds)]
    out = []
    for fixed in itertools.product(*scalar_choices):
        for columns in _array_layouts([array_kind(kinds[i]) for i in arrays]):
            args = list(fixed)
            for i, column in zip(arrays, columns):
                args[i] = column
            out.append(tuple(args))
    return out


def _array_layouts(kinds: list[tuple[str, int]]) -> list[tuple]:
    """The arrays for array arguments of these kinds: together they hold every combination
    of the dtypes' edge values, contiguous; 0-d arrays one combination at a time. With a
    float64 first argument also as negative-stride views, in Fortran order and empty (each
    needs the general compiled tier: one more compilation, for one signature a spelling)."""
    dtypes = [DTYPES[d] for d, _ in kinds]
    ndims = [n for _, n in kinds]
    if all(n == 0 for n in ndims):
        grid = itertools.product(*(ZERO_D_EDGES[d] for d, _ in kinds))
        return [tuple(np.array(v, dtype=t) for v, t in zip(row, dtypes)) for row in grid]
    grid = list(itertools.product(*(ARRAY_EDGES[d] for d, _ in kinds)))
    if ndims[0] == 2:  # a 2-d first argument, the others 1-d along its last axis
        first = np.array(ARRAY_EDGES[kinds[0][0]], dtype=dtypes[0])
        if len(kinds) == 1:
            full = (np.stack([first, first[::-1]]),)
        else:
            rest = [np.array(ARRAY_EDGES[d], dtype=t) for (d, _), t in zip(kinds[1:], dtypes[1:])]
            full = (np.repeat(first[:, None], len(rest[0]), axis=1), *rest)
        return [full, (np.asfortranarray(full[0]), *full[1:]),
                (full[0][::-1, ::-1], *(x[::-1] for x in full[1:])),
                (full[0][:0], *full[1:])]
    full = tuple(np.array([row[i] for row in grid], dtype=t) for i, t in enumerate(dtypes))
    if dtypes[0] != np.float64:
        return [full]
    return [full, tuple(x[::-1] for x in full), tuple(x[:0] for x in full)]


REDUCTION_VALUES = {
    "f64": [[1.5, -2.0, 3.25, 0.5, 7.0, 1e3, -0.25, 2.0 ** -10], [1.0, math.nan, 2.0, 0.5],
            [math.nan, 1.0, -1.0, 4.0], [math.inf, 1.0, -2.0, 3.0], [-math.inf, math.inf, 1.0, 2.0],
            [-0.0, -0.0, -0.0, -0.0], [0.0, -0.0, -0.0, 0.0], [1e308, 1e308, 1.0, 2.0],
            [5e-324, 5e-324, -0.0, 0.0]],
    "i64": [[3, -7, 2 ** 40, 5, -2 ** 40 + 1, 0, 11, -1], [2 ** 62, 2 ** 62, 1, 2],
            [2 ** 63 - 1, 1, -2 ** 63, -1], [0, 0, 0, 0]],
    "b": [[True, False, True, True], [False, False, False, False], [True, True, True, True]],
}
REDUCTION_VALUES["f32"] = REDUCTION_VALUES["f64"]


def reduction_arrays(dtype: str, ndim: int) -> list[np.ndarray]:
    """Arrays to reduce: edge contents (NaN, infinities, signed zeros, overflow, int64 limits),
    as 0-d, 1-d or 2-d arrays, one element; float64 ones also as views with negative strides,
    strided, transposed, in Fortran order and empty (the general compiled tier)."""
    t = DTYPES[dtype]
    with np.errstate(over="ignore"):  # 1e308 as float32
        rows = [np.array(v, dtype=t) for v in REDUCTION_VALUES[dtype]]
    if ndim == 0:
        return [np.array(v, dtype=t) for v in rows[0][:3]] + [np.array(r[1], dtype=t) for r in rows]
    if ndim == 1:
        layouts = [rows[0][::-1], rows[0][::3], rows[0][:0]]
        return rows + [rows[0][:1]] + (layouts if dtype == "f64" else [])
    out = [r.reshape(2, -1) for r in rows] + [rows[1].reshape(2, -1)[:1]]
    layouts = [out[0].T, out[0][::-1, ::-1], np.asfortranarray(np.stack(rows[1:3])),
               np.zeros((0, 3), dtype=t), np.zeros((3, 0), dtype=t)]
    return out + (layouts if dtype == "f64" else [])
