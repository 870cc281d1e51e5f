"""A hypothesis strategy for random NumPy array programs: expressions over broadcast-compatible
inputs of random dtypes, shapes and strides (views), optionally reduced.

A case is (source of `def prog(a, b, c, s)`, the inputs a, b, c, s). The inputs
are views of larger arrays (steps 1, 2 or -1 per axis, or a transpose), so
compiled code sees arbitrary strides; their shapes are the trailing axes of one
base shape with some axes set to 1, so they broadcast. Every operation is
defined on every value it can meet (no division by zero: `x / (abs(y) + 1)`;
`exp` of `minimum(x, 5)`; `sqrt` of `abs`), and bool inputs enter only as
`where` conditions or `(b * 1)`, so NumPy's result is the reference. Integer
arithmetic wraps in both.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

DTYPES = (np.float64, np.float32, np.int64, np.bool_)
NAMES = ("a", "b", "c")


@st.composite
def views(draw, shape: tuple[int, ...], dtype, salt: int = 0) -> np.ndarray:
    """An array of `shape` and `dtype` whose strides are not (necessarily) C's; `salt` keeps
    the arrays of one program apart when hypothesis shrinks their seeds alike."""
    rng = np.random.default_rng([draw(st.integers(0, 2**32 - 1)), salt])
    transposed = len(shape) >= 2 and draw(st.booleans())
    full = tuple(reversed(shape)) if transposed else shape
    steps = [draw(st.sampled_from((1, 2, -1))) for _ in full]
    big = tuple(n * abs(k) + (1 if k == 2 else 0) for n, k in zip(full, steps))
    data = rng.standard_normal(big) * 3
    if dtype == np.int64:
        data = np.round(data * 5)
    elif dtype == np.bool_:
        data = data > 0
    data = data.astype(dtype)
    index = tuple(slice(None, None, k) if k != 2 else slice(1, None, 2) for k in steps)
    view = data[index][tuple(slice(0, n) for n in full)]
    return view.T if transposed else view


@st.composite
def shapes(draw) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    ndim = draw(st.integers(1, 3))
    base = tuple(draw(st.integers(0, 4)) if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, 5))
                 for _ in range(ndim))
    inputs = []
    for i, _ in enumerate(NAMES):
        k = ndim if i == 0 else draw(st.integers(1, ndim))  # a has every axis
        own = [1 if draw(st.integers(0, 3)) == 0 else n for n in base[ndim - k:]]
        inputs.append(tuple(own))
    return base, inputs


@st.composite
def expr(draw, kinds: dict[str, str], depth: int = 0) -> tuple[str, str, bool]:
    """(source, kind, is_array) of an expression; kind is 'f' (float), 'i' (int) or 'b' (bool).

    NumPy's functions of Python scalars return NumPy scalars, which NEP 50 treats as
    strongly typed where compiled code keeps Python scalars weak (README); so a
    NumPy function is applied to array expressions only."""
    leaves = [n for n in NAMES if kinds[n] != "b"] + ["s"]
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(NAMES + ("s",)))
        if name == "s":
            return "s", "f", False
        if kinds[name] == "b":
            return f"({name} * 1)", "i", True
        return name, kinds[name], True
    op = draw(st.sampled_from(["+", "-", "*", "/", "maximum", "minimum", "where", "abs", "neg",
                               "exp", "sin", "tanh", "sqrt"]))
    left, lk, la = draw(expr(kinds, depth + 1))
    if not la and op not in ("+", "-", "*", "/", "neg"):
        left, lk, la = "a", kinds["a"], True
        if lk == "b":
            left, lk = "(a * 1)", "i"
    if op in ("abs", "neg"):
        return (f"np.abs({left})" if op == "abs" else f"(-{left})"), lk, la
    if op in ("exp", "sin", "tanh", "sqrt"):
        arg = {"exp": f"np.minimum({left}, 5.0)", "sqrt": f"np.abs({left}) + 0.5"}.get(op, left)
        return f"np.{op}({arg})", "f", True
    right, rk, ra = draw(expr(kinds, depth + 1))
    kind = "f" if "f" in (lk, rk) else "i"
    if op == "/":
        if not ra:
            return f"({left} / (abs({right}) + 1))", "f", la
        return f"({left} / (np.abs({right}) + 1))", "f", True
    if op in ("maximum", "minimum"):
        return f"np.{op}({left}, {right})", kind, True
    if op == "where":
        conds = [n for n in NAMES if kinds[n] == "b"]
        cond = draw(st.sampled_from(conds)) if conds and draw(st.booleans()) else \
            f"({left} > {draw(st.sampled_from(leaves))})"
        return f"np.where({cond}, {left}, {right})", kind, True
    return f"({left} {op} {right})", kind, la or ra


@st.composite
def programs(draw, reductions: bool = True):
    base, input_shapes = draw(shapes())
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in NAMES]
    return draw(_program(base, input_shapes, dtypes, reductions))


@st.composite
def losses(draw):
    """A float64 program whose result is `np.sum` of a random expression: for gradients."""
    base, input_shapes = draw(shapes())
    source, args = draw(_program(base, input_shapes, [np.float64] * len(NAMES), False))
    body = source.split("return ", 1)[1].strip()
    source = source.replace(f"return {body}", f"return np.sum(({body}) + a * 0 + b * 0 + c * 0)")
    return source, args


@st.composite
def _program(draw, base, input_shapes, dtypes, reductions):
    kinds = {n: np.dtype(d).kind.replace("u", "i") for n, d in zip(NAMES, dtypes)}
    body, _, _ = draw(expr(kinds))
    reduce = reductions and draw(st.booleans())
    if reduce or draw(st.booleans()):  # the whole base shape (a reduction's axis refers to it)
        body = f"({body}) + a * 0 + b * 0 + c * 0"
    if reduce:
        fn = draw(st.sampled_from(["sum", "max", "min", "mean"]))
        nonempty = all(n > 0 for n in base)
        if fn in ("max", "min") and not nonempty:
            fn = "sum"
        axis = draw(st.sampled_from([None, *range(-len(base), len(base))]))
        keep = draw(st.booleans())
        body = f"np.{fn}({body}, axis={axis}, keepdims={keep})"
    source = f"import numpy as np\n\n\ndef prog(a, b, c, s):\n    return {body}\n"
    arrays = [draw(views(shape, dtype, salt))
              for salt, (shape, dtype) in enumerate(zip(input_shapes, dtypes))]
    s = draw(st.floats(0.05, 3)) * draw(st.sampled_from((-1, 1)))  # away from abs's kink
    return source, (*arrays, s)
