"""Mutants of valid functions: what a user's half-edited source looks like.

`make_mutants(count)` derives `count` distinct functions from `BASES` by one mutation each
(a deleted line, a swapped operator, a name nobody assigned, a changed constant, a
duplicated line, a statement astjit does not compile: yield, global, nonlocal, class, try,
with, lambda, print, del, import, a set, a string method). `judge_mutants` (run in a child
process: a mutant might crash the compiler) runs each in CPython first, guarded (a run of
too many steps, or an int beyond int64, a documented difference, is skipped), then
compiled: the compiled outcome must be CPython's result, CPython's exception or a
CompileError.
"""
from __future__ import annotations

import importlib
import random
import re
import sys

import astjit
from astjit.fuzz.judge import differ

BASES = [
    ("""
def clamp_sum(x, n):
    s = 0.0
    for i in range(n):
        v = x * i - 3.0
        if v > 10.0:
            v = 10.0
        elif v < -10.0:
            v = -10.0
        s += v
    return s
""", "(1.5, 12)"),
    ("""
def halving_steps(n):
    steps = 0
    while n > 1 and steps < 100:
        n = n // 2 if n % 2 == 0 else n - 1
        steps += 1
    return steps
""", "(37,)"),
    ("""
def rational(x):
    a = 2.0 * x * x
    b = a - 3.0 * x
    return b / (x + 4.0) + math.sqrt(abs(b))
""", "(1.25,)"),
    ("""
def euclid(a, b):
    while b != 0:
        a, b = b, a % b
    return a
""", "(84, 36)"),
    ("""
def pick(a, b, flag):
    t = a + b
    if flag:
        t = t * 2
    else:
        t = t - 1
    u = (t, a)
    return u[0] + u[1] if t > 0 else t - a
""", "(3, 4, True)"),
    ("""
def scale_in_place(a, k):
    total = 0.0
    for i in range(len(a)):
        a[i] = a[i] * k
        total += float(a[i])
    if total > 4.0:
        a[0] = -total
    return total
""", "(np.array([1.0, 2.5, -0.5]), 1.5)"),
    ("""
def shift_pair(p, d):
    m = p.a + d["w"]
    n = p.b * 3 - d["n"]
    if m > n:
        m = m - n
    return Pair(m, n % 7)
""", "(Pair(2.5, 4), {'n': 3, 'w': 0.5})"),
    ("""
def power_sum(n, x):
    if n <= 0:
        return 1.0
    y = x * power_sum(n - 1, x)
    return y + 1.0
""", "(6, 0.5)"),
    ("""
def first_above(a, limit):
    found = -1
    for i in range(len(a)):
        if a[i] < 0.0:
            continue
        if a[i] > limit:
            found = i
            break
    return found, float(np.sum(a))
""", "(np.array([0.5, -2.0, 3.5, 9.0]), 2.0)"),
    ("""
def smooth(x, y):
    r = math.hypot(x, y)
    t = math.atan2(y, x)
    e = math.exp(-r) * math.cos(t)
    return [e, r - t]
""", "(0.75, -1.25)"),
]

HEADER = """import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Pair:
    a: float
    b: int


g_counter = 0
"""

SWAPS = [(" + ", " - "), (" - ", " + "), (" * ", " / "), (" / ", " * "), (" // ", " % "), (" % ", " // "),
         (" < ", " >= "), (" > ", " <= "), (" != ", " == "), (" == ", " != "), (" and ", " or "),
         (" * ", " ** "), (" + ", " // ")]
INSERTS = ["yield 0", "global g_counter", "nonlocal q", "class Local:\n{ind}    pass", "print('here')",
           "h = lambda q: q + 1", "del {name}", "import os", "s = {{1, 2}}", "w = 'ab'.upper()",
           "assert {name} == {name}", "raise ValueError('stop')", "async def g():\n{ind}    pass",
           "x = [i for i in range(3)]", "b = bytes(2)", "z = None + 1"]
WRAPS = ["try", "with", "if False", "for _ in range(0)", "while False"]
KINDS = ["delete", "swap", "undefined", "constant", "duplicate", "insert", "wrap"]
NOT_NAMES = {"if", "elif", "else", "while", "for", "in", "and", "or", "not", "return", "range", "abs", "math",
             "sqrt", "np", "len", "float", "Pair", "is"}


def mutate(source: str, kind: str, rng: random.Random) -> str | None:
    """One mutant of `source` (a function), or None where this try is not valid Python."""
    lines = source.strip().split("\n")
    k = rng.randrange(1, len(lines))
    line = lines[k]
    ind, stmt = line[: len(line) - len(line.lstrip())], line.strip()
    names = [m for m in re.finditer(r"\b[a-z_]\w*\b", line) if m.group() not in NOT_NAMES]
    if kind == "delete":
        del lines[k]
    elif kind == "swap":
        pairs = [p for p in SWAPS if p[0] in line]
        if not pairs:
            return None
        lines[k] = line.replace(*rng.choice(pairs), 1)
    elif kind == "undefined":
        if not names:
            return None
        m = rng.choice(names)
        lines[k] = line[: m.start()] + "undefined_value" + line[m.end():]
    elif kind == "constant":
        numbers = list(re.finditer(r"\b\d+(\.\d+)?\b", line))
        if not numbers:
            return None
        m = rng.choice(numbers)
        constant = rng.choice(["0", "1", "-1", "0.0", "2.5", "1e308", "True"])
        lines[k] = line[: m.start()] + constant + line[m.end():]
    elif kind == "duplicate":
        lines.insert(k, line)
    elif kind == "insert":
        name = rng.choice(names).group() if names else "q"
        lines.insert(k, ind + rng.choice(INSERTS).format(ind=ind, name=name))
    else:
        if stmt.endswith(":") or stmt.startswith(("else", "elif")):
            return None
        header = {"try": None, "with": "with memoryview(b'') as view:"}.get(kind, f"{kind}:")
        wrapped = ["try:", "    " + stmt, "except ZeroDivisionError:", "    pass"] if header is None else \
            [header, "    " + stmt]
        lines[k: k + 1] = [ind + s for s in wrapped]
    mutant = "\n".join(lines) + "\n"
    try:
        compile(mutant, "<mutant>", "exec")
    except SyntaxError:
        return None
    return mutant


def make_mutants(count: int, seed: int = 15) -> list[tuple[str, str, str]]:
    """`count` distinct (name, source, arguments' source) mutants, every kind of every base."""
    rng, mutants, seen = random.Random(seed), [], set()
    attempt = 0
    while len(mutants) < count:
        kind, (source, args) = KINDS[attempt % len(KINDS)], BASES[attempt // len(KINDS) % len(BASES)]
        attempt += 1
        mutant = mutate(source, kind, rng)
        if mutant is None or mutant in seen:
            continue
        seen.add(mutant)
        base = re.search(r"def (\w+)", source).group(1)
        name = f"m{len(mutants)}_{kind}_{base}"
        mutants.append((name, mutant.replace(f"def {base}(", f"def {name}(", 1), args))
    return mutants


def module_source(mutants: list[tuple[str, str, str]]) -> str:
    """One module holding the bases (mutants call the original for recursion) and every mutant."""
    return HEADER + "".join(f"\n\n{source.strip()}\n" for source, _ in BASES) + \
        "".join(f"\n\n{source}" for _, source, _ in mutants)


class Runaway(Exception):
    """A CPython run stopped: too many steps, or an int beyond int64 (a documented difference)."""


def guard(frame, event, arg):
    guard.steps += 1
    if guard.steps > 20000 or any(type(v) is int and not -2 ** 63 <= v < 2 ** 63
                                  for v in frame.f_locals.values()):
        raise Runaway()
    return guard


def outcome(call):
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - every exception is an outcome to compare
        return "raise", exc


def judge_mutants(module_name: str, cases: list[tuple[str, str]]) -> dict[str, str]:  # runs in a child
    """Each mutant's verdict; a line `START name` on stdout before each, to name a crasher."""
    module, verdicts = importlib.import_module(module_name), {}
    for name, args in cases:
        fn = getattr(module, name)
        print("START " + name, flush=True)
        guard.steps = 0
        ref_args, got_args = eval(args, vars(module)), eval(args, vars(module))
        sys.settrace(guard)
        try:
            ref = outcome(lambda: fn(*ref_args))
        finally:
            sys.settrace(None)
        if isinstance(ref[1], Runaway) or ref[0] == "ok" and isinstance(ref[1], int) \
                and not -2 ** 63 <= ref[1] < 2 ** 63:
            verdicts[name] = "skipped"
            continue
        got = outcome(lambda: astjit.jit(fn)(*got_args))
        if got[0] == "raise" and isinstance(got[1], astjit.CompileError):
            verdicts[name] = "CompileError"
        elif got[0] == ref[0] == "raise":
            same = isinstance(got[1], type(ref[1]))
            verdicts[name] = "the same exception" if same else f"bad: raised {got[1]!r}; CPython {ref[1]!r}"
        elif got[0] == ref[0] == "ok":
            difference = differ(ref[1], got[1], joined=True) or differ(ref_args, got_args, "args")
            verdicts[name] = f"bad: {difference}" if difference else "compiled, same result"
        else:
            verdicts[name] = f"bad: {got[0]} {got[1]!r}; CPython {ref[0]} {ref[1]!r}"
    return verdicts
