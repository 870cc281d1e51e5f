"""Issue 14's functions that array_run.py, shape_run.py and index_run.py do not time: the
elementwise functions (each alone at 10^6 elements, and fused into an expression), complex
arrays' np.abs/real/imag/conj/angle, creation with a dtype, np.where of one argument,
`x ** p` of a run-time p NumPy computes without pow (0.5, 2, -1), np.quantile and np.dot:
astjit's median time per call over NumPy's (issue 14: within 1.2x NumPy's time alone,
faster than NumPy fused).

    python benchmarks/breadth_run.py                 # every case, about 2 minutes
    python benchmarks/breadth_run.py hypot clip      # the cases whose name starts so
    python benchmarks/breadth_run.py --cpu where     # CPU time (a loaded machine's wall
                                                     # time swings 2 ms calls to 30 ms)

Single-threaded, like array_run.py. Each case is checked against NumPy's result (shape,
dtype, values) before timing, then timed in interleaved rounds (interleaved.py); every
row goes to benchmarks/_build/breadth_results.json.

A row is one function (`F`) put into one of a few templates, alone (`F(x)`) or fused
(`F(x * 0.5 + 0.5) * 2.0 + x`: NumPy makes four passes over memory, a fused kernel one),
so that every function is timed the same way; the input kind keeps each function in its
domain (arcsin's in (-1, 1), log's positive, arccosh's at least 1).
"""
from __future__ import annotations

import json
import os
import sys
import time
import types

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from engines import BUILD_DIR  # noqa: E402
from interleaved import interleaved_medians, ratio_line  # noqa: E402

from astjit import jit  # noqa: E402

N = 10 ** 6
RESULTS_JSON = BUILD_DIR / "breadth_results.json"
ALONE, FUSED = 1.2, 1.0
"""Issue 14's targets: astjit's time over NumPy's, alone at most ALONE, fused under FUSED."""

F = None
"""The function a template calls: `specialize` binds it per case (read at compile time)."""


def one(x): return F(x)
def two(x, y): return F(x, y)
def clip(x): return F(x, -1.0, 1.0)
def one_fused(x): return F(x * 0.5 + 0.5) * 2.0 + x
def two_fused(x, y): return F(x * 0.5 + 0.5, y) * 2.0 + x
def clip_fused(x): return F(x * 0.5 + 0.5, -1.0, 1.0) * 2.0 + x
def int_one_fused(i): return F(i * 3 + 1) + i
def int_two_fused(i, j): return F(i * 3 + 1, j) + i
def test_fused(x, y): return F(x * 0.5 + y) | (x > 2.0)
def logic_one_fused(x, y): return F(x > 0.0) | (y > 0.5)
def logic_two_fused(x, y): return F(x > 0.0, y < 0.5) | (x > 2.0)
def complex_fused(z): return F(z * 0.5 + z) * 2.0
def where_one(x): return np.where(x > 0.5)
def scalar_power(x, p): return x ** p
def scalar_power_fused(x, p): return (x * 0.5 + 0.5) ** p * 2.0 + x
def quantile(x): return np.quantile(x, 0.3)
def dot(x, y): return np.dot(x, y)
def dot_fused(x, y): return np.dot(x * 0.5 + 1.0, y)
def ones_float32(n): return np.ones(n, dtype=np.float32)
def full_int32(n): return np.full(n, 7, dtype=np.int32)
def empty_int8(n): return np.empty(n, dtype=np.int8)
def zeros_complex(n): return np.zeros(n, dtype=np.complex128)
def zeros_bool(n): return np.zeros(n, dtype=np.bool_)


def specialize(template, fn):
    """`template` calling `fn` as F (a new function object: its own compiled code)."""
    scope = dict(template.__globals__)
    scope["F"] = fn
    return types.FunctionType(template.__code__, scope, template.__name__)


def _inputs() -> dict[str, tuple]:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N) * 3, rng.standard_normal(N)
    with_specials = x.copy()
    with_specials[rng.integers(0, N, N // 100)] = np.nan
    with_specials[rng.integers(0, N, N // 100)] = np.inf
    return {
        "real": (x,), "unit": (rng.uniform(-0.99, 0.99, N),), "pos": (rng.uniform(0.1, 10.0, N),),
        "ge1": (rng.uniform(1.0, 11.0, N),), "special": (with_specials,),
        "special_y": (with_specials, y), "xy": (x, y),
        "pos_xy": (rng.uniform(0.1, 10.0, N), rng.uniform(-2.0, 2.0, N)),
        **{f"pos_p{p}": (rng.uniform(0.1, 10.0, N), p) for p in (0.5, 2.0, -1.0)},
        "ints": (rng.integers(-1000, 1000, N), rng.integers(1, 100, N)),
        "shifts": (rng.integers(-1000, 1000, N), rng.integers(0, 20, N)),
        "powers": (rng.integers(-10, 10, N), rng.integers(0, 5, N)),
        "int": (rng.integers(-1000, 1000, N),),
        "bools": (x > 0.0, y > 0.5), "bool": (x > 0.0,),
        "complex": (x + 1j * y,), "n": (N,),
    }


UNARY_FLOAT = {
    "real": ["sign", "floor", "ceil", "round", "trunc", "expm1", "exp2", "arctan", "sinh", "cosh",
             "tanh", "arcsinh", "sin", "cos", "exp", "absolute", "negative"],
    "unit": ["arcsin", "arccos", "arctanh"],
    "pos": ["log1p", "log2", "log10", "log", "sqrt"],
    "ge1": ["arccosh"],
}
BINARY_FLOAT = {"xy": ["arctan2", "hypot", "mod", "floor_divide", "fmod", "maximum", "minimum"],
                "pos_xy": ["power"]}
BINARY_INT = {"ints": ["mod", "floor_divide", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor"],
              "shifts": ["left_shift", "right_shift"], "powers": ["power"]}


def _cases() -> list[tuple[str, str, object, str]]:
    """(name, 'alone' or 'fused', the function, its input kind), in the order timed."""
    cases = []

    def both(name, alone, fused, fn, kind):
        cases.append((name, "alone", specialize(alone, fn), kind))
        cases.append((name, "fused", specialize(fused, fn), kind))

    for kind, names in UNARY_FLOAT.items():
        for name in names:
            both(name, one, one_fused, getattr(np, name), kind)
    both("clip", clip, clip_fused, np.clip, "real")
    for kind, names in BINARY_FLOAT.items():
        for name in names:
            both(name, two, two_fused, getattr(np, name), kind)
    for name in ("isnan", "isinf", "isfinite"):
        cases.append((name, "alone", specialize(one, getattr(np, name)), "special"))
        cases.append((name, "fused", specialize(test_fused, getattr(np, name)), "special_y"))
    for kind, names in BINARY_INT.items():
        for name in names:
            both(f"{name}_int", two, int_two_fused, getattr(np, name), kind)
    both("invert_int", one, int_one_fused, np.invert, "int")
    both("sign_int", one, int_one_fused, np.sign, "int")
    cases.append(("logical_not", "alone", specialize(one, np.logical_not), "bool"))
    cases.append(("logical_not", "fused", specialize(logic_one_fused, np.logical_not), "xy"))
    for name in ("logical_and", "logical_or", "logical_xor"):
        cases.append((name, "alone", specialize(two, getattr(np, name)), "bools"))
        cases.append((name, "fused", specialize(logic_two_fused, getattr(np, name)), "xy"))
    for p in (0.5, 2.0, -1.0):  # a run-time exponent NumPy's loop computes without pow
        cases.append((f"power_scalar_{p}", "alone", scalar_power, f"pos_p{p}"))
        cases.append((f"power_scalar_{p}", "fused", scalar_power_fused, f"pos_p{p}"))
    for name in ("absolute", "real", "imag", "conj", "angle"):
        both(f"{name}_complex", one, complex_fused, getattr(np, name), "complex")
    cases += [("where_one_arg", "alone", where_one, "real"), ("quantile", "alone", quantile, "real"),
              ("dot", "alone", dot, "xy"), ("dot", "fused", dot_fused, "xy")]
    cases += [(fn.__name__, "alone", fn, "n")
              for fn in (ones_float32, full_int32, empty_int8, zeros_complex, zeros_bool)]
    return cases


def _same(want, got) -> bool:
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    for w, g in zip(wants, gots, strict=True):
        w, g = np.asarray(w), np.asarray(g)
        if w.shape != g.shape or w.dtype != g.dtype:
            return False
        if w.dtype.kind in "fc" and not np.allclose(g, w, rtol=1e-9, atol=1e-12, equal_nan=True):
            return False
        if w.dtype.kind in "biu" and not np.array_equal(g, w) and w.size:
            return False
    return True


def main(only: list[str]) -> None:
    clock = time.perf_counter
    if "--cpu" in only:  # CPU time: steadier than wall time on a loaded machine
        only, clock = [name for name in only if name != "--cpu"], time.process_time
    inputs = _inputs()
    rows, width = [], 26
    print(f"{'function':{width}s} {'NumPy':>10s} {'astjit':>10s} {'astjit/NumPy':>13s}  target")
    with np.errstate(all="ignore"):
        for name, form, fn, kind in _cases():
            label = f"{name} ({form})"
            if only and not any(name.startswith(o) for o in only):
                continue
            args = inputs[kind]
            try:
                compiled = jit(fn)
                got = compiled(*args)
            except Exception as error:  # noqa: BLE001 - a refusal is a row of the report
                print(f"{label:{width}s} n/a: {type(error).__name__}: {str(error).splitlines()[0]}")
                rows.append({"name": name, "form": form, "error": str(error).splitlines()[0]})
                continue
            if fn.__name__ != "empty_int8" and not _same(fn(*args), got):
                print(f"{label:{width}s} WRONG RESULT")
                rows.append({"name": name, "form": form, "error": "wrong result"})
                continue
            numpy_time, astjit_time = interleaved_medians(fn, compiled, args, clock=clock)
            target = ALONE if form == "alone" else FUSED
            ratio = astjit_time / numpy_time
            met = ratio <= target if form == "alone" else ratio < target
            print(ratio_line(label, width, numpy_time, astjit_time)
                  + f"  {'<=' if form == 'alone' else '<'}{target}{'' if met else '  MISSED'}")
            rows.append({"name": name, "form": form, "numpy_s": numpy_time, "astjit_s": astjit_time,
                         "ratio": ratio, "target": target, "met": met})
    BUILD_DIR.mkdir(exist_ok=True)
    RESULTS_JSON.write_text(json.dumps(rows, indent=1))
    missed = [f"{r['name']} ({r['form']})" for r in rows if not r.get("met")]
    print(f"\n{len(rows) - len(missed)} of {len(rows)} rows meet their target; "
          f"missed or n/a: {', '.join(missed) or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
