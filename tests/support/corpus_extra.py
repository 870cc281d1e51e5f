"""More scalar functions for differential tests, beyond scalar_functions.py.

Each entry of CASES is (function, list of argument tuples), the same shape as
scalar_functions.CASES. These stress the corners: loop `else`, variable range
steps, early returns from deep nesting, int64 edge values, Python's sign rules,
keyword and default arguments, tuples through calls and loops.
"""
import math

OFFSETS = (1, 2.5, -3)
BIG = 2 ** 62


def while_else(n):
    i = 0
    while i < n:
        if i == 7:
            break
        i += 1
    else:
        i = -i
    return i


def for_else(n):
    found = -1
    for k in range(n):
        if k * k > 50:
            found = k
            break
    else:
        found = 100
    return found


def variable_step(start, stop, step):
    s = 0
    for i in range(start, stop, step):
        s = s * 3 + i
    return s


def range_at_int64_limits(start, stop, step):
    count = 0
    last = 0
    for i in range(start, stop, step):
        count += 1
        last = i
    return count, last


def tuple_loop(x):
    total = 0.0
    for c in OFFSETS:
        total = total * x + c
    return total


def tuple_loop_break(x):
    total = 0.0
    for c in (1.0, 2.0, 3.0, 4.0):
        if c * x > 5.0:
            break
        total += c
    return total


def deep_return(n):
    i = 0
    while i < n:
        j = 0
        while j < n:
            if i + j == 7:
                if i > j:
                    return i * 100 + j
            j += 1
        i += 1
    return -1


def int_sign_rules(a, b):
    return a // b, a % b, -a // b, -a % b, a // -b, a % -b


def float_sign_rules(x, y):
    return x // y, x % y, -x // y, -x % y, x % -y, math.fmod(x, y)


def int64_edges(a):
    return a + 1, a * 2, -a, abs(a)


def big_constant(a):
    return a + BIG


def shifts(a, s):
    return a << s, a >> s, -a >> s


def counting_floats(n):
    x = 0
    for i in range(n):
        x = x + 0.5
    return x


def mixed_loop_types(n):
    acc = 1
    k = 0
    while k < n:
        acc = acc * 2
        k += 1
    return acc, k


def _weighted(x, w=2.0, *, bias=0.5):
    return w * x + bias


def keyword_calls(x):
    return _weighted(x) + _weighted(x, 3.0) + _weighted(x, bias=-1.0) + _weighted(w=0.5, x=x)


def _stats(a, b):
    return a + b, a - b, a * b


def tuple_through_call(x, y):
    s, d, p = _stats(x, y)
    t = _stats(s, d)
    return t[0] + t[2] + p + len(t)


def _sum_to(n):
    if n <= 0:
        return 0
    return n + _sum_to(n - 1)


def recursion_in_loop(n):
    total = 0
    for i in range(n):
        total += _sum_to(i)
    return total


def _tak(x, y, z):
    if y < x:
        return _tak(_tak(x - 1, y, z), _tak(y - 1, z, x), _tak(z - 1, x, y))
    return z


def tak(x, y, z):
    return _tak(x, y, z)


def round_and_casts(x):
    return round(x), round(-x), int(x), float(int(x)), bool(x - x)


def bool_ops(p, q):
    return p & q, p | q, p ^ q, not p, p == q, p < q, -p, ~q


def compare_chain_calls(x):
    return 0.0 < math.sin(x) < 0.5 < math.cos(x)


def nested_ternary(x):
    return 1 if x > 2 else (2 if x > 1 else (3 if x > 0 else 4))


def power_forms(a, x):
    return a ** 2, a ** 0, x ** -1, 2 ** a, x ** a, (-8.0) ** 2


def min_max_many(a, b, x):
    return min(a, b, 7), max(x, a, b), min(x, 2.5), max(a, -a)


def augmented_everything(a, b):
    c = a
    c += b
    c -= 3
    c *= 2
    c //= 3
    c %= 97
    c <<= 2
    c >>= 1
    c &= 255
    c |= 4
    c ^= 9
    return c


def loop_carrying_tuple(n):
    pair = (0, 1)
    for _ in range(n):
        pair = (pair[1], pair[0] + pair[1])
    return pair


def returns_none_or_value(x):
    y = x * 2.0
    if y > 100.0:
        return -1.0
    return y


def continue_in_while(n):
    i = 0
    s = 0
    while i < n:
        i += 1
        if i % 2:
            continue
        s += i
    return s


def harmonic_until(limit):
    s = 0.0
    k = 0
    while s < limit:
        k += 1
        s += 1.0 / k
    return k


# An int on one path and a float on another join to float (documented): CPython
# returns the int 0 for counting_floats(0), astjit 0.0; min/max over mixed int
# and float promote to float. Only values are compared for these.
VALUE_ONLY = {counting_floats, min_max_many}

CASES = [
    (while_else, [(3,), (10,), (0,)]),
    (for_else, [(3,), (20,), (0,)]),
    (variable_step, [(0, 10, 3), (10, 0, -3), (5, 5, 1), (-4, 9, 5), (9, -4, -5)]),
    (range_at_int64_limits, [(2 ** 63 - 4, 2 ** 63 - 1, 3), (2 ** 63 - 3, 2 ** 63 - 1, 5),
                             (-(2 ** 63) + 3, -(2 ** 63), -3), (-(2 ** 63) + 2, -(2 ** 63), -7)]),
    (tuple_loop, [(2.0,), (-1.5,)]),
    (tuple_loop_break, [(1.0,), (2.0,), (10.0,)]),
    (deep_return, [(3,), (10,), (5,)]),
    (int_sign_rules, [(7, 3), (-7, 3), (7, -3), (0, 4), (9, 9)]),
    (float_sign_rules, [(7.5, 2.0), (-7.5, 2.0), (0.0, 3.0), (-0.0, 2.5), (5.0, -0.5)]),
    (int64_edges, [(0,), (2 ** 61,), (-(2 ** 62),), (12345,)]),
    (big_constant, [(1,), (-5,)]),
    (shifts, [(5, 3), (-9, 2), (1, 62), (7, 0)]),
    (counting_floats, [(0,), (3,)]),
    (mixed_loop_types, [(0,), (10,)]),
    (keyword_calls, [(1.5,), (-2.0,)]),
    (tuple_through_call, [(1.5, 2.5), (-3.0, 0.5)]),
    (recursion_in_loop, [(0,), (12,)]),
    (tak, [(6, 4, 2), (8, 5, 1)]),
    (round_and_casts, [(2.5,), (-3.5,), (0.49999999999999994,), (7.0,), (-0.0,)]),
    (bool_ops, [(True, False), (False, False), (True, True)]),
    (compare_chain_calls, [(0.3,), (1.0,), (3.0,)]),
    (nested_ternary, [(3.0,), (1.5,), (0.5,), (-1.0,)]),
    (power_forms, [(3, 2.0), (5, 0.5), (0, 4.0)]),
    (min_max_many, [(3, 9, 1.5), (-4, -8, -0.0), (7, 7, 7.0)]),
    (augmented_everything, [(10, 3), (-50, 7), (1000, -999)]),
    (loop_carrying_tuple, [(0,), (1,), (30,)]),
    (returns_none_or_value, [(1.0,), (60.0,)]),
    (continue_in_while, [(0,), (9,), (10,)]),
    (harmonic_until, [(1.0,), (5.0,)]),
]
