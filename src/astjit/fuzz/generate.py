"""A random program: the text of a module that `astjit.fuzz.judge` runs.

The module holds a dataclass (`Pair`), a few helper functions the entry may call (each
may call the ones before it; one may call itself, its depth bounded by a guard), the
entry function `f`, the arguments (`make_args()`, called once for CPython and once for
the compiled function, so writes into arrays are compared too) and what the comparison
may allow (`TOLERANT`: sums NumPy and astjit order differently; `ZERO_SIGN_FREE`: the
sign of a zero np.min/np.max picks; `GRAD_ARGNUMS`: the float arguments to differentiate
when the result is a float). Programs are written as source because astjit reads a
function's source (inspect); `python FILE` runs the judge on it.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from astjit.fuzz.expressions import (
    BOOL,
    DCT,
    FARR,
    FLOAT,
    IARR,
    INT,
    INT_BOUND,
    LST,
    PAIR,
    TUP,
    Expressions,
    Features,
    Helper,
    Scope,
)
from astjit.fuzz.statements import Body, write_body

HEADER = '''"""{title}"""
import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Pair:
    a: float
    b: int
'''

FOOTER = '''

ENTRY = "f"
GRAD_ARGNUMS = {grad!r}
TOLERANT = {tolerant!r}
ZERO_SIGN_FREE = {zero_sign_free!r}


def make_args():
    return ({args})


if __name__ == "__main__":
    from astjit.fuzz.judge import main
    main(__file__)
'''

PARAM_KINDS = [FLOAT] * 6 + [INT] * 4 + [BOOL, FARR, FARR, IARR, TUP, LST, DCT, PAIR]
HELPER_RESULTS = [FLOAT] * 4 + [INT] * 3 + [BOOL, TUP, PAIR, FARR]
ENTRY_RESULTS = [FLOAT] * 8 + [INT] * 2 + [BOOL, FARR, IARR, TUP, LST, DCT, PAIR]
GRADIENT_SHARE = 0.3      # programs returning a float at generic arguments: their gradients are compared
FLOAT_ARGS = ("0.0", "-0.0", "1.0", "-1.0", "0.5", "2.0", "-2.5", "3.0", "1e-08", "1e+300", "float('nan')",
              "float('inf')", "-float('inf')")


@dataclass
class Program:
    """One generated program: its module's text and how it was made."""

    label: str
    source: str


def program(seed: int, index: int) -> Program:
    """The program numbered `index` of the run seeded `seed` (the same pair, the same text)."""
    rng = random.Random(f"{seed}:{index}")
    label = f"astjit fuzz program {index} of seed {seed}"
    features, helpers, functions = Features(), [], []
    for number in range(rng.choice([0, 1, 1, 2, 3])):
        exprs = Expressions(rng, list(helpers), features)
        if rng.random() < 0.3:
            text, helper = recursive_helper(exprs, f"r{number}")
        else:
            text, helper = plain_function(exprs, f"h{number}", rng.choice(HELPER_RESULTS),
                                          [rng.choice(PARAM_KINDS) for _ in range(rng.randint(1, 3))], size=3)
        functions.append(text)
        helpers.append(helper)
    params = [rng.choice(PARAM_KINDS) for _ in range(rng.randint(1, 5))]
    differentiable = rng.random() < GRADIENT_SHARE
    result = FLOAT if differentiable else rng.choice(ENTRY_RESULTS)
    text, _ = plain_function(Expressions(rng, helpers, features), "f", result, params, size=rng.randint(2, 7))
    functions.append(text)
    args = [argument(rng, kind, generic_only=differentiable) for kind in params]
    grad = () if result != FLOAT else \
        tuple(i for i, (kind, arg) in enumerate(zip(params, args)) if kind in (FLOAT, FARR) and generic(arg))
    source = HEADER.format(title=label) + "".join(f"\n\n{text}" for text in functions) + FOOTER.format(
        grad=grad, tolerant=features.reassociates, zero_sign_free=features.zero_sign_free,
        args="".join(f"{arg}, " for arg in args).rstrip(" "))
    return Program(label, source)


def plain_function(exprs: Expressions, name: str, result: str, params: list[str],
                   size: int) -> tuple[str, Helper]:
    names = [f"p{i}" for i in range(len(params))]
    scope = Scope(dict(zip(names, params)))
    lines = write_body(Body(result, exprs), scope, size)
    return "\n".join([f"def {name}({', '.join(names)}):", *lines]), Helper(name, params, result)


def recursive_helper(exprs: Expressions, name: str) -> tuple[str, Helper]:
    """`name(n, x)` returning a number, calling itself once with n - 1 until n leaves 1..8."""
    result = exprs.rng.choice([FLOAT, INT])
    kinds = [INT, FLOAT]
    helper = Helper(name, kinds, result)
    scope = Scope({"n": INT, "x": FLOAT}, {"n"})
    base = exprs.of(result, scope)
    body = Body(result, exprs)
    lines = write_body(body, scope.child(), exprs.rng.randint(0, 2))[:-1]
    step = exprs.of(FLOAT, scope, 1)
    combine = exprs.of(result, scope, 2)
    joined = f"{name}(n - 1, {step})"
    tail = f"({joined} + {combine}){' % ' + str(INT_BOUND) if result == INT else ''}"
    text = "\n".join([f"def {name}(n, x):", "    if n <= 0 or n > 8:", f"        return {base}", *lines,
                      f"    return {tail}"])
    return text, helper


def generic(source: str) -> bool:
    """Whether a float argument (or every element of a float array) is a point to differentiate
    at: not a constant like 0.0, 1.0 or 2.5, where a program's branches tie (max(-0.0, 0.0))
    and a derivative is a convention."""
    if source.startswith("np.array(["):  # every element generic, and at least one
        elements = source[len("np.array(["):source.index("]")].split(", ")
        return elements != [""] and all(map(generic, elements))
    try:
        value = float(source)
    except ValueError:  # float('nan') ...
        return False
    return math.isfinite(value) and round(value, 2) != value


def argument(rng: random.Random, kind: str, generic_only: bool = False) -> str:
    """The source of a random argument of `kind`; `generic_only`: floats with 3 to 6 decimals, not
    the special values (`generic`: points a gradient is compared at)."""
    def number() -> str:
        if generic_only:
            return repr(round(rng.uniform(-10, 10), rng.randint(3, 6)))
        if rng.random() < 0.35:
            return rng.choice(FLOAT_ARGS)
        return repr(round(rng.uniform(-10, 10), rng.randint(0, 6)))

    def integer() -> str:
        return str(rng.randint(-9, 9) if rng.random() < 0.8 else rng.randint(-INT_BOUND + 1, INT_BOUND - 1))

    length = rng.choice([0, 1, 2, 3, 4, 5, 6]) if rng.random() < 0.9 else 0
    return {
        FLOAT: number,
        INT: integer,
        BOOL: lambda: rng.choice(["True", "False"]),
        FARR: lambda: f"np.array([{', '.join(number() for _ in range(length))}], dtype=np.float64)",
        IARR: lambda: f"np.array([{', '.join(integer() for _ in range(length))}], dtype=np.int64)",
        TUP: lambda: f"({integer()}, {number()})",
        LST: lambda: f"[{number()}, {number()}]",
        DCT: lambda: f'{{"n": {integer()}, "w": {number()}}}',
        PAIR: lambda: f"Pair({number()}, {integer()})",
    }[kind]()
