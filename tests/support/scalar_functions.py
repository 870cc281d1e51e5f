"""The scalar corpus: plain Python functions that @jit must run exactly as CPython does.

The differential tests (`corpus.CASES`, with `corpus_extra`) and a few frontend
tests draw on it. Each entry of CASES is (function, list of argument tuples).
Only int, float and bool arguments and results (and tuples of them) appear here.
Every function is deterministic, stays inside int64, and avoids math domain
errors. The functions match the issues' acceptance corpus; they live here so
that the tests need nothing outside the repository.
"""
import math

SCALE = 3.0
LIMIT = 7


# ---- arithmetic and operators -------------------------------------------------

def arith_mix(a, b):
    return a * b + a - b / 4


def int_floor_ops(a, b):
    return a // b, a % b


def float_floor_ops(a, b):
    return a // b, a % b


def true_div_ints(a, b):
    return a / b


def power_ops(x, n):
    return x ** 2 + x ** 0.5 + n ** 3


def unary_ops(a, x):
    return -a, +x, ~a, not a


def bit_ops(a, b):
    return (a & b) | (a ^ b) + (a << 2) - (b >> 1)


def bool_arith(p, q):
    return p + q, p * 3, p and q, p or q


def int_and_or(a, b):
    return (a and b) + (a or b)


def chained_compare(x):
    return 0 < x <= 10, -5 <= x < 5 != x


def compare_mixed(a, x):
    return a < x, a == x, a >= x


def ternary(x, y):
    return x if x > y else y * 2.0


def builtins_mix(a, x):
    return abs(a) + abs(x), min(a, x, 3.5), max(a, 2, x), int(x) + int(-x)


def builtin_round(x):
    return round(x)


def conversions(a, x, p):
    return float(a) + x, int(x * 10.0), bool(a), bool(x), int(p)


def math_funcs(x):
    return (math.sqrt(x) + math.exp(-x) + math.log(x) + math.sin(x) * math.cos(x)
            + math.tan(x / 4) + math.tanh(x) + math.atan2(x, 2.0) + math.hypot(x, 3.0)
            + math.log10(x) + math.log2(x) + math.log1p(x) + math.expm1(x / 8)
            + math.fabs(-x) + math.copysign(2.0, -x) + math.fmod(x, 0.75) + math.pow(x, 1.5))


def math_int_results(x):
    return math.floor(x), math.ceil(x), math.trunc(-x)


def math_constants(x):
    return x * math.pi + math.e - math.tau / 2


def math_predicates(x):
    y = math.inf if x == 0.0 else x
    z = y - y
    return math.isnan(z), math.isinf(x * 1e308 * 10.0), math.isfinite(y), z != z


def uses_global(x):
    return x * SCALE + LIMIT


# ---- assignment forms ---------------------------------------------------------

def tuple_unpack(a, b):
    a, b = b, a + b
    c, (d, e) = a, (b, a * b)
    return a, b, c + d + e


def aug_assign(x, n):
    y = x
    y += n
    y *= 2
    y -= 1.5
    y /= 3
    k = n
    k //= 2
    k %= 5
    k **= 2
    k <<= 1
    k |= 1
    return y, k


def reassign_types(n):
    total = 0
    total = total + n
    scale = 1.5
    scale = scale * n
    return total, scale


# ---- if / elif / else ---------------------------------------------------------

def piecewise(x):
    if x < -1.0:
        return -x * x
    elif x < 0.0:
        return x
    elif x < 1.0:
        y = x * 3.0
        return y - 1.0
    else:
        return math.sqrt(x)


def nested_if(a, b):
    r = 0
    if a > 0:
        if b > 0:
            r = 1
        else:
            r = 2
    elif b > 0:
        r = 3
    return r


def if_without_else(x):
    y = x
    if x > 2.0:
        y = y * 10.0
    if y < 0.0:
        y = -y
    return y


def if_defines_both(x):
    if x > 0:
        a = x
        b = 1.0
    else:
        a = -x
        b = -1.0
    return a * b


def short_circuit_guard(a, b):
    # the division must not run when b == 0
    if b != 0 and a // b > 2:
        return 1
    if b == 0 or a % b == 0:
        return 2
    return 3


def bool_conditions(p, x):
    if p:
        x = x + 1.0
    if not p and x > 0:
        x = x * 2.0
    return x


# ---- while / for --------------------------------------------------------------

def sum_range(n):
    s = 0
    for i in range(n):
        s += i
    return s


def range_forms(n):
    s = 0
    for i in range(2, n):
        s += i
    for i in range(n, 0, -3):
        s += 10 * i
    for i in range(1, n, 2):
        s -= i
    return s


def pi_sum(n):
    s = 0.0
    for k in range(1, n + 1):
        s += 1.0 / (k * k)
    return s


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def newton_sqrt(x):
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-12 * x:
        y = 0.5 * (y + x / y)
    return y


def loop_break(n):
    i = 0
    total = 0
    while True:
        if i * i > n:
            break
        total += i
        i += 1
    return total, i


def loop_continue(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        s += i
    return s


def nested_loops(n):
    count = 0
    for i in range(n):
        for j in range(i):
            if (i + j) % 5 == 0:
                continue
            if j > 6:
                break
            count += i * j
    return count


def early_return_in_loop(n, target):
    for i in range(n):
        for j in range(n):
            if i * j == target:
                return i, j
    return -1, -1


def while_with_counter(x):
    k = 0
    while x > 1.0:
        x = x / 2.0
        k += 1
        if k > 100:
            break
    return x, k


def loop_var_after_loop(n):
    i = -1
    for i in range(n):
        pass
    return i


def mandel_point(cr, ci):
    zr = 0.0
    zi = 0.0
    n = 0
    while n < 80 and zr * zr + zi * zi <= 4.0:
        zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
        n += 1
    return n


def gcd_loop(a, b):
    while b:
        a, b = b, a % b
    return a


def prime_count(n):
    count = 0
    for k in range(2, n):
        is_prime = True
        d = 2
        while d * d <= k:
            if k % d == 0:
                is_prime = False
                break
            d += 1
        if is_prime:
            count += 1
    return count


# ---- calls, recursion, closures -----------------------------------------------

def _square(v):
    return v * v


def _poly(x, a, b=2.0, c=1.0):
    return a * _square(x) + b * x + c


def calls_helpers(x):
    return _poly(x, 3.0) + _poly(x, 1.0, c=-1.0) + _square(x + 1.0)


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def is_even(n):
    if n == 0:
        return True
    return is_odd(n - 1)


def is_odd(n):
    if n == 0:
        return False
    return is_even(n - 1)


def returns_tuple_from_call(x):
    q, r = _divmod_floats(x, 0.75)
    return q + r


def _divmod_floats(a, b):
    return a // b, a % b


def make_scaler(k):
    def scaled(x):
        return k * x + SCALE
    return scaled


scale_by_2_5 = make_scaler(2.5)


def uses_closure(x):
    return scale_by_2_5(x) + 1.0


CASES = [
    (arith_mix, [(3, 4), (2.5, -1.25), (7, 0.5)]),
    (int_floor_ops, [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5)]),
    (float_floor_ops, [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (1.0, 0.3)]),
    (true_div_ints, [(7, 2), (-7, 2), (1, 3)]),
    (power_ops, [(2.0, 3), (0.5, -2), (9.0, 0)]),
    (unary_ops, [(5, 1.5), (0, -2.0), (-3, 0.0)]),
    (bit_ops, [(12, 10), (255, 7), (-8, 3)]),
    (bool_arith, [(True, False), (True, True), (False, False)]),
    (int_and_or, [(0, 5), (3, 0), (4, 9), (0, 0)]),
    (chained_compare, [(3,), (10,), (-5,), (0,), (11,)]),
    (compare_mixed, [(2, 2.0), (1, 1.5), (3, -1.0)]),
    (ternary, [(3.0, 1.0), (1.0, 3.0)]),
    (builtins_mix, [(-3, 2.5), (4, -7.25), (0, 0.0)]),
    (builtin_round, [(2.5,), (3.5,), (-2.5,), (1.4,), (-0.6,)]),
    (conversions, [(3, 2.75, True), (-2, -1.5, False), (0, 0.0, True)]),
    (math_funcs, [(0.5,), (1.0,), (2.0,), (7.3,)]),
    (math_int_results, [(2.5,), (-2.5,), (3.0,), (-0.1,)]),
    (math_constants, [(1.0,), (-2.0,)]),
    (math_predicates, [(1.0,), (0.0,), (-3.5,)]),
    (uses_global, [(1.0,), (-2.0,)]),
    (tuple_unpack, [(1, 2), (3.0, -1.0)]),
    (aug_assign, [(1.0, 7), (-2.5, 12)]),
    (reassign_types, [(3,), (-4,)]),
    (piecewise, [(-2.0,), (-0.5,), (0.5,), (4.0,), (1.0,), (-1.0,)]),
    (nested_if, [(1, 1), (1, -1), (-1, 1), (-1, -1)]),
    (if_without_else, [(3.0,), (1.0,), (-4.0,)]),
    (if_defines_both, [(2.0,), (-3.0,)]),
    (short_circuit_guard, [(9, 2), (5, 0), (4, 2), (3, 2)]),
    (bool_conditions, [(True, 1.0), (False, 1.0), (False, -3.0)]),
    (sum_range, [(0,), (1,), (100,), (-5,)]),
    (range_forms, [(0,), (1,), (10,), (17,)]),
    (pi_sum, [(1,), (1000,)]),
    (collatz_steps, [(1,), (6,), (27,), (97,)]),
    (newton_sqrt, [(2.0,), (0.25,), (1e6,), (1.0,)]),
    (loop_break, [(0,), (10,), (99,)]),
    (loop_continue, [(0,), (10,), (31,)]),
    (nested_loops, [(0,), (5,), (20,)]),
    (early_return_in_loop, [(5, 6), (5, 17), (10, 0)]),
    (while_with_counter, [(100.0,), (0.5,), (1e300,)]),
    (loop_var_after_loop, [(0,), (5,)]),
    (mandel_point, [(0.0, 0.0), (0.3, 0.5), (-1.0, 0.3), (2.0, 2.0)]),
    (gcd_loop, [(48, 18), (17, 5), (0, 9), (9, 0)]),
    (prime_count, [(2,), (30,), (200,)]),
    (calls_helpers, [(1.5,), (-2.0,)]),
    (fib, [(0,), (1,), (10,), (20,)]),
    (ackermann, [(2, 3), (1, 5)]),
    (is_even, [(0,), (7,), (10,)]),
    (returns_tuple_from_call, [(2.3,), (-1.1,)]),
    (uses_closure, [(2.0,), (-1.0,)]),
]
