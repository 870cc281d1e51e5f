"""A hypothesis strategy for random scalar programs inside astjit's subset.

A program is the source of `def prog(a, b, x, y)` (a, b ints; x, y floats)
built from random expression trees over the live variables, nested
if / while / for-range statements with break, continue and early returns.
Programs are total by construction, so CPython's result is a reference:

- every loop is bounded (a fresh counter caps each `while`; ranges are short);
- ints stay far inside int64: every int assignment is reduced `% 10007`;
- divisors are shifted away from zero (`abs(e) + 1`), so only the operators'
  sign rules are exercised, not ZeroDivisionError;
- float variables and results go through `float(...)`: an expression over int
  leaves is an int in CPython, and astjit joins a variable's int and float
  assignments to float (documented), which is not what is being tested here.
"""
from __future__ import annotations

import importlib.util
import itertools

from hypothesis import strategies as st

INT_VARS = ("a", "b", "i", "j")
FLOAT_VARS = ("x", "y", "z")


@st.composite
def int_expr(draw, depth: int = 0, names=("a", "b")):
    # At most four leaves: products of values below 10007 stay inside int64.
    if depth > 1 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return draw(st.sampled_from(names))
        return str(draw(st.integers(-9, 9)))
    left = draw(int_expr(depth + 1, names))
    right = draw(int_expr(depth + 1, names))
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "&", "|", "^", "min", "max", "abs"]))
    if op in ("//", "%"):
        return f"({left} {op} (abs({right}) + 1))"
    if op in ("min", "max"):
        return f"{op}({left}, {right})"
    if op == "abs":
        return f"abs({left})"
    return f"({left} {op} {right})"


@st.composite
def float_expr(draw, depth: int = 0, ints=("a", "b"), floats=("x", "y")):
    if depth > 2 or draw(st.integers(0, 3)) == 0:
        choice = draw(st.integers(0, 2))
        if choice == 0:
            return draw(st.sampled_from(floats))
        if choice == 1:
            return draw(st.sampled_from(ints))
        return repr(draw(st.sampled_from([0.5, 1.5, -2.0, 3.25, 0.1])))
    left = draw(float_expr(depth + 1, ints, floats))
    right = draw(float_expr(depth + 1, ints, floats))
    op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%", "sin", "fabs", "ternary"]))
    if op in ("/", "//", "%"):
        return f"({left} {op} (abs({right}) + 1.0))"
    if op in ("sin", "fabs"):
        return f"math.{op}({left})"
    if op == "ternary":
        return f"({left} if {left} < {right} else {right})"
    return f"({left} {op} {right})"


@st.composite
def condition(draw, ints, floats, depth: int = 0):
    kind = draw(st.integers(0, 3 if depth < 2 else 1))
    cmp = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    if kind == 0:
        return f"{draw(int_expr(1, ints))} {cmp} {draw(int_expr(1, ints))}"
    if kind == 1:
        return f"{draw(float_expr(1, ints, floats))} {cmp} {draw(float_expr(1, ints, floats))}"
    joiner = draw(st.sampled_from(["and", "or"]))
    return (f"({draw(condition(ints, floats, depth + 1))}) {joiner} "
            f"not ({draw(condition(ints, floats, depth + 1))})")


@st.composite
def block(draw, depth: int, ints: tuple, floats: tuple, in_loop: bool):
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        lines += draw(statement(depth, ints, floats, in_loop))
    return lines


def indent(lines):
    return ["    " + line for line in lines]


@st.composite
def statement(draw, depth: int, ints: tuple, floats: tuple, in_loop: bool):
    kinds = ["int", "float"]
    if depth < 3:
        kinds += ["if", "while", "for"]
    if in_loop:
        kinds += ["break", "continue"]
    kinds.append("return")
    kind = draw(st.sampled_from(kinds))
    assigned_ints = tuple(v for v in ints if v not in ("i", "j"))
    if kind == "int":
        target = draw(st.sampled_from(assigned_ints))
        return [f"{target} = ({draw(int_expr(0, ints))}) % 10007"]
    if kind == "float":
        target = draw(st.sampled_from(floats))
        return [f"{target} = float({draw(float_expr(0, ints, floats))})"]
    if kind == "if":
        lines = [f"if {draw(condition(ints, floats))}:"]
        lines += indent(draw(block(depth + 1, ints, floats, in_loop)))
        if draw(st.booleans()):
            lines += ["else:"] + indent(draw(block(depth + 1, ints, floats, in_loop)))
        return lines
    if kind == "while":
        counter = f"w{depth}"
        lines = [f"{counter} = 0",
                 f"while {counter} < {draw(st.integers(0, 6))} and "
                 f"({draw(condition(ints, floats))}):",
                 f"    {counter} += 1"]
        return lines + indent(draw(block(depth + 1, ints, floats, True)))
    if kind == "for":
        var = "i" if "i" not in ints else "j"
        if var in ints:
            return ["pass"]
        start, stop, step = draw(st.integers(-3, 3)), draw(st.integers(-6, 6)), \
            draw(st.sampled_from([1, 2, -1, -2, 3]))
        lines = [f"for {var} in range({start}, {stop}, {step}):"]
        return lines + indent(draw(block(depth + 1, ints + (var,), floats, True)))
    if kind == "break":
        return ["break"]
    if kind == "continue":
        return ["continue"]
    return [f"return float({draw(float_expr(0, ints, floats))})"]


@st.composite
def programs(draw) -> str:
    """The source text of a random `prog(a, b, x, y)` returning a float."""
    body = ["z = 0.0"]
    body += draw(block(0, ("a", "b"), FLOAT_VARS, False))
    body.append(f"return float({draw(float_expr(0, ('a', 'b'), FLOAT_VARS))})")
    return "import math\n\n\ndef prog(a, b, x, y):\n" + "\n".join(indent(body)) + "\n"


SERIALS = itertools.count()


def load(source: str, directory):
    """Import `source` from a real file, so inspect.getsource finds it."""
    name = f"prog_{next(SERIALS)}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.prog
