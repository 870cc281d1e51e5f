"""The functions of the golden IR tests (test_golden_ir.py): one small function per syntax form.

`@case(*arg_types, optimized=False)` registers a function in `CASES` under its
name, with the argument types it is specialized for; `optimized=True` also
keeps a golden file of the optimized IR, for the cases where the optimizer has
something to show (inlining, folding, CSE, DCE).

`located` must stay the first function of this file: its golden file shows
source lines, which code added above it would shift.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from astjit.ir.types import BOOL, F64, I64, TupleType, Type


def located(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        s += i
    return s


@dataclass(frozen=True)
class Case:
    fn: object
    arg_types: tuple[Type, ...]
    optimized: bool


CASES: dict[str, Case] = {}


def case(*arg_types: Type, optimized: bool = False):
    def register(fn):
        CASES[fn.__name__] = Case(fn, arg_types, optimized)
        return fn
    return register


# ---- expressions ----------------------------------------------------------------------

@case(I64, I64)
def arith_int(a, b):
    return a + b - a * b + a // b + a % b + a ** b


@case(I64, F64, optimized=True)
def arith_promotion(n, x):
    return n * x + n / 2 - x ** n


@case(BOOL, BOOL, I64)
def arith_bool(p, q, n):
    return p + q + p * n - (-p)


@case(I64, F64)
def compare_each(n, x):
    return (n < x, n <= x, n > x, n >= x, n == x, n != x)


@case(I64, I64, I64, optimized=True)
def compare_chained(lo, x, hi):
    return lo < x <= hi < 100


@case(I64, I64, optimized=True)
def and_or_values(a, b):
    return (a and b, a or b, a and b or 7)


@case(I64, F64)
def and_or_mixed_types(n, x):
    return n or x


@case(I64, F64)
def and_or_short_circuit(n, x):
    return n != 0 and x / n > 1.0


@case(I64, F64, BOOL)
def unary(n, x, p):
    return (-n, +x, not p, not n, ~n, -p)


@case(I64, I64)
def bitwise(a, b):
    return (a & b) | (a ^ b) | (a << 3) | (b >> 1) | ~a


@case(I64)
def ternary(n):
    return n if n > 0 else -n


@case(I64, BOOL, optimized=True)
def ternary_promoted(n, p):
    return n if p else 0.5


# ---- tuples and assignment ----------------------------------------------------------

@case(I64, F64, optimized=True)
def tuple_display(n, x):
    t = (n, x, (n + 1, x * 2.0))
    return (t[0], t[-1][1], t)


@case(TupleType((I64, TupleType((F64, BOOL)))), optimized=True)
def tuple_unpack_nested(t):
    a, (b, c) = t
    return (c, b, a)


@case(I64, F64)
def tuple_swap(a, b):
    a, b = b, a
    (c, d), e = (a, b), 3
    return a + b + c + d + e


@case(I64, I64)
def aug_assign(n, k):
    n += k
    n -= 1
    n *= k
    n //= 2
    n %= 7
    n **= 2
    n <<= 1
    n |= k
    return n


@case(I64)
def aug_assign_promotes(n):
    n += 0.5
    return n


# ---- if ------------------------------------------------------------------------------

@case(I64)
def if_only(n):
    if n < 0:
        n = -n
    return n


@case(I64)
def if_else(n):
    if n % 2 == 0:
        r = n // 2
    else:
        r = 3 * n + 1
    return r


@case(F64, optimized=True)
def elif_chain(x):
    if x < 0.0:
        s = -1
    elif x == 0.0:
        s = 0
    elif x < 1.0:
        s = 1
    else:
        s = 2
    return s


@case(I64)
def if_returns_in_one_branch(n):
    if n < 0:
        return 0
    m = n * 2
    return m + 1


# ---- loops ---------------------------------------------------------------------------

@case(I64)
def while_loop(n):
    s = 0
    i = 0
    while i < n:
        s += i
        i += 1
    return s


@case(I64, optimized=True)
def while_else(n):
    i = 2
    while i * i <= n:
        if n % i == 0:
            break
        i += 1
    else:
        i = n
    return i


@case(I64)
def for_range_stop(n):
    s = 0
    for i in range(n):
        s += i
    return s


@case(I64, I64)
def for_range_start_stop(a, b):
    s = 0.0
    for i in range(a, b):
        s += i * 0.5
    return s


@case(I64, I64)
def for_range_step(a, b):
    s = 0
    for i in range(a, b, 3):
        s += i
    return s


@case(I64)
def for_range_negative_step(n):
    s = 0
    for i in range(n, 0, -1):
        s = s * 2 + i
    return s


@case(I64, I64, I64, optimized=True)
def for_range_variable_step(a, b, step):
    s = 0
    for i in range(a, b, step):
        s += i
    return s


@case(I64, F64, BOOL, optimized=True)
def for_tuple(n, x, p):
    s = 0.0
    for v in (n, x, p):
        s += v
    return s


@case(I64, optimized=True)
def for_break(n):
    i = 0
    for i in range(n):
        if i * i > n:
            break
    return i


@case(I64, optimized=True)
def for_continue(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        s += i
    return s


@case(I64, optimized=True)
def nested_early_return(n):
    for i in range(n):
        for j in range(i):
            if i * j > n:
                return i + j
    return -1


# ---- calls ---------------------------------------------------------------------------

def scaled(x, y=2, *, scale=1.0):
    return (x + y) * scale


@case(I64, optimized=True)
def call_keyword_default(n):
    return scaled(n) + scaled(n, 3) + scaled(y=1, x=n, scale=2.0)


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


@case(I64)
def call_recursive(n):
    return fib(n)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


@case(I64, optimized=True)
def call_mutually_recursive(n):
    return is_even(n)


@case(F64, I64)
def math_functions(x, n):
    a = math.sqrt(x) + math.exp(x) + math.log(x) + math.sin(x) + math.atan2(x, n)
    b = math.floor(x) + math.ceil(x) + math.trunc(x) + math.hypot(x, 1.0) + math.pow(x, 2)
    return (a + b + math.sqrt(n), math.isnan(x), math.pi + math.e + math.tau + math.inf)


@case(F64, I64, TupleType((I64, F64, BOOL)))
def builtin_functions(x, n, t):
    return (abs(x), abs(n), min(n, x, 3), max(n, 2), int(x), float(n), bool(n),
            bool(),  # noqa: UP018 (the form under test)
            round(x), len(t))


SCALE = 2.5
COUNT = 3
TABLE = (1, 2.0, True)
ENABLED = False


@case(F64, optimized=True)
def module_constants(x):
    if ENABLED:
        x = -x
    return x * SCALE + COUNT + TABLE[1]


# ---- what the optimizer does ----------------------------------------------------------

@case(F64, optimized=True)
def constant_folding(x):
    k = 2 * 3 + 1
    return x * (k / 2) + (k - 7) * x + 10 // 4


@case(I64, I64, optimized=True)
def common_subexpressions(a, b):
    return (a + b) * (a + b) - (a + b)


@case(I64, optimized=True)
def dead_code(n):
    unused = n * n + 1  # noqa: F841 (dead code is the point)
    flag = n > 3  # noqa: F841
    s = 0
    for i in range(n):
        s += i
    return s
