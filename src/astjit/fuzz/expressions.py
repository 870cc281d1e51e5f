"""Random typed expressions over a scope: the leaves of generated programs.

Every expression is built for one type (`INT`, `FLOAT`, `BOOL`, a 1-d float or int
array, or a container) and is well typed in both CPython and astjit, so a difference
between them is a compiler bug, not a typing accident. What the generator avoids
is what the README's "Where astjit differs from CPython" documents:

- ints beyond int64 (astjit wraps): an int expression carries a bound on its
  magnitude; an operation whose bound would pass 2**62 reduces an operand `% 10007`
  instead, and int variables hold values below `INT_BOUND` (`fuzz.statements` reduces
  what it stores);
- NumPy scalars mixed with Python scalars (astjit keeps one type per variable): an
  array element or reduction is read through `float(...)` / `int(...)`;
- negative bases to fractional powers (CPython gives a complex): `abs(x) ** y`;
- `int ** negative int` (astjit raises, CPython gives a float): constant exponents;
- dynamic indexes into lists and tuples (a refusal): constant indexes;
- the median of an empty array (docs/arrays.md: an IndexError, NumPy's NaN): only of
  one that is not empty.

Operations that raise are kept on purpose (division by zero, `math.sqrt(-1.0)`,
`math.exp(1000.0)`, an index out of range, arrays of different lengths): CPython's
exception is the expected outcome.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

INT, FLOAT, BOOL = "int", "float", "bool"
FARR, IARR = "farr", "iarr"           # 1-d float64 / int64 arrays
ELEM = "elem"                         # a float64 array's element (a NumPy scalar): read as float(v)
IELEM = "ielem"                       # an int64 array's element: read as int(v)
TUP, LST, DCT, PAIR = "tup", "lst", "dct", "pair"
TREES = (TUP, LST, DCT, PAIR)
ARRAYS = (FARR, IARR)

INT_BOUND = 10007                     # int variables hold values of smaller magnitude
INT64_SAFE = 2 ** 62
REDUCE = f" % {INT_BOUND}"

HUGE = "1e300"
FLOAT_CONSTANTS = ("0.0", "1.0", "-1.0", "0.5", "2.5", "-3.75", "0.1", "1e-3", "100.0", HUGE,
                   "-0.0", "3.0")
MATH_1 = ("sin", "cos", "tanh", "atan", "fabs", "sqrt", "exp", "log", "log1p", "expm1")
MATH_2 = ("atan2", "hypot", "fmod", "copysign")
NP_1 = ("sin", "cos", "tanh", "exp", "arctan", "log1p", "expm1")   # libmvec's in kernels: a few ulp


def arithmetic(a: str, op: str, b: str) -> str:
    """`a op b`, a sum with 1e300 made a product: 1e300 + x is flat in x in floats, not in
    the reals, where AD differentiates (as JAX does); where x also reaches the result by
    another path, finite differences see only that one (seed 41316, program 7539:
    `p % sin(1e300 + p)`)."""
    if op in ("+", "-") and HUGE in (a, b):
        op = "*"
    return f"({a} {op} {b})"


@dataclass
class Scope:
    """The variables an expression may read: name -> type; `fixed` ones are never assigned."""

    names: dict[str, str] = field(default_factory=dict)
    fixed: set[str] = field(default_factory=set)

    def child(self) -> Scope:
        return Scope(dict(self.names), set(self.fixed))

    def of(self, kind: str) -> list[str]:
        return [n for n, k in self.names.items() if k == kind]


@dataclass
class Helper:
    """A generated module-level function that expressions may call."""

    name: str
    params: list[str]
    result: str


@dataclass
class Features:
    """What a program uses that loosens the comparison of its results."""

    reassociates: bool = False        # np.sum / np.mean / np.dot: NumPy sums pairwise, astjit does not;
                                      # np.sin ... on arrays: libmvec's few ulp (docs/vecmath.md)
    zero_sign_free: bool = False      # np.min / np.max among zeros of both signs (documented)


class Expressions:
    """Draws expressions of a requested type from `rng` over a scope and the callable helpers."""

    def __init__(self, rng: random.Random, helpers: list[Helper], features: Features):
        self.rng, self.helpers, self.features = rng, helpers, features

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def of(self, kind: str, scope: Scope, depth: int = 0) -> str:
        if kind == INT:
            return self.int_stored(scope, depth)
        return getattr(self, kind)(scope, depth)

    def int_stored(self, scope: Scope, depth: int = 0) -> str:
        """An int expression whose value fits a variable: below INT_BOUND in magnitude."""
        return self.small(*self.int_bounded(scope, depth), INT_BOUND)[0]

    # ---- ints: (source, bound on the magnitude) --------------------------------------------

    def int_bounded(self, scope: Scope, depth: int = 0) -> tuple[str, int]:
        if depth >= 3 or self.chance(0.3):
            return self.int_leaf(scope, depth)
        op = self.rng.choice(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "abs", "neg", "minmax",
                              "ifexp", "andor", "pow", "call"])
        if op == "call":
            return self.call(INT, scope, depth), INT_BOUND
        if op == "ifexp":
            (a, ba), (b, bb) = self.int_bounded(scope, depth + 1), self.int_bounded(scope, depth + 1)
            return f"({a} if {self.bool(scope, depth + 1)} else {b})", max(ba, bb)
        a, ba = self.int_bounded(scope, depth + 1)
        if op in ("abs", "neg"):
            return (f"abs({a})" if op == "abs" else f"(-{a})"), ba
        if op in ("<<", ">>"):
            count = self.rng.randrange(6)
            a, ba = self.small(a, ba, 2 ** 40)
            return f"({a} {op} {count})", ba << count if op == "<<" else ba
        if op == "pow":
            exponent = self.rng.randrange(4)
            a, ba = self.small(a, ba, 2 ** 20)
            return f"({a} ** {exponent})", max(ba, 1) ** exponent
        b, bb = self.int_bounded(scope, depth + 1)
        if op == "minmax":
            return f"{self.rng.choice(['min', 'max'])}({a}, {b})", max(ba, bb)
        if op == "andor":
            return f"({a} {self.rng.choice(['and', 'or'])} {b})", max(ba, bb)
        if op in ("//", "%"):
            if self.chance(0.8):  # mostly a divisor that cannot be zero; else ZeroDivisionError is fair
                b, bb = f"(abs({b}) + 1)", bb + 1
            return f"({a} {op} {b})", ba if op == "//" else bb
        if op == "*":
            a, ba = self.small(a, ba, 2 ** 31)
            b, bb = self.small(b, bb, 2 ** 31)
            return f"({a} * {b})", ba * bb
        a, ba = self.small(a, ba, 2 ** 60)
        b, bb = self.small(b, bb, 2 ** 60)
        return f"({a} {op} {b})", 2 * max(ba, bb) if op in "&|^" else ba + bb

    @staticmethod
    def small(source: str, bound: int, limit: int) -> tuple[str, int]:
        """`source` reduced below INT_BOUND where its bound passes `limit`."""
        return (source, bound) if bound <= limit else (f"({source}{REDUCE})", INT_BOUND)

    def int_leaf(self, scope: Scope, depth: int) -> tuple[str, int]:
        options = [lambda: (str(self.rng.randint(-9, 9)), 9)]
        if scope.of(INT):
            options += [lambda: (self.rng.choice(scope.of(INT)), INT_BOUND)] * 4
        if scope.of(FLOAT) and depth < 3:
            options.append(lambda: (f"int(max(-1e6, min({self.float(scope, depth + 1)}, 1e6)))", 10 ** 6))
        for name in scope.of(FARR) + scope.of(IARR):
            options.append(lambda name=name: (f"len({name})", 64))
        # an int array's elements are any int64 (`a << 63`, `a * 3` in a loop: NumPy wraps), and
        # abs or - of INT64_MIN wraps in astjit (documented): read them reduced
        for name in scope.of(IARR):
            options.append(lambda name=name: (f"(int({name}[{self.index(name, scope, depth)}]){REDUCE})",
                                              INT_BOUND))
            options.append(lambda name=name: (f"(int(np.sum({name})){REDUCE})", INT_BOUND))
        for name in scope.of(IELEM):
            options.append(lambda name=name: (f"(int({name}){REDUCE})", INT_BOUND))
        for name in scope.of(FARR):
            options.append(lambda name=name: (self.count(name, self.float(scope, 2)), 64))
        for name in scope.of(IARR):
            options.append(lambda name=name: (self.count(name, self.int_bounded(scope, 2)[0]), 64))
        for name in scope.of(TUP):
            options.append(lambda name=name: (f"{name}[0]", INT_BOUND))
        for name in scope.of(DCT):
            options.append(lambda name=name: (f'{name}["n"]', INT_BOUND))
        for name in scope.of(PAIR):
            options.append(lambda name=name: (f"{name}.b", INT_BOUND))
        return self.rng.choice(options)()

    def count(self, array: str, limit: str) -> str:
        """An int read from an array by a search or a count (np.argmax of an empty one: ValueError)."""
        return self.rng.choice([
            lambda: f"int(np.{self.rng.choice(['argmax', 'argmin'])}({array}))",
            lambda: f"int(np.sum({array} > {limit}))",
            lambda: f"int(np.count_nonzero({array} <= {limit}))",
            lambda: f"int(np.searchsorted(np.sort({array}), {limit}))",
        ])()

    def index(self, array: str, scope: Scope, depth: int) -> str:
        """An index into `array`: mostly in range (or a ZeroDivisionError of an empty one), else any."""
        i = self.int_bounded(scope, depth + 1)[0]
        return f"{i} % len({array})" if self.chance(0.9) else str(self.rng.randint(-7, 7))

    # ---- floats ----------------------------------------------------------------------------

    def float(self, scope: Scope, depth: int = 0) -> str:
        if depth >= 3 or self.chance(0.3):
            return self.float_leaf(scope, depth)
        op = self.rng.choice(["+", "-", "*", "/", "//", "%", "**", "math1", "math2", "np1", "abs", "neg",
                              "minmax", "ifexp", "mixed", "call"])
        if op == "call":
            return self.call(FLOAT, scope, depth)
        if op == "ifexp":
            a, b = self.float(scope, depth + 1), self.float(scope, depth + 1)
            return f"({a} if {self.bool(scope, depth + 1)} else {b})"
        a = self.float(scope, depth + 1)
        if op == "math1":
            name = self.rng.choice(MATH_1)
            if name in ("sqrt", "log", "log1p") and self.chance(0.6):  # mostly inside the domain
                a = f"(abs({a}) + 0.5)"
            return f"math.{name}({a})"
        if op == "np1":  # NumPy's ufunc on a Python float: NaN or inf where math raises;
            # exact: compiled scalar calls run NumPy's own loop (backend/llvm/ufunc_calls.py)
            return f"float(np.{self.rng.choice(NP_1 + ('sqrt', 'log'))}({a}))"
        if op == "abs":
            return f"abs({a})"
        if op == "neg":
            return f"(-{a})"
        if op == "mixed":  # an int operand, converted exactly (ints stay far below 2**53)
            return f"({a} {self.rng.choice(['+', '-', '*', '/'])} {self.int_bounded(scope, depth + 1)[0]})"
        if op == "**":
            if self.chance(0.5):
                return f"({a} ** {self.rng.randrange(4)})"
            return f"(abs({a}) ** {self.float(scope, depth + 1)})"
        b = self.float(scope, depth + 1)
        if op == "math2":
            return f"math.{self.rng.choice(MATH_2)}({a}, {b})"
        if op == "minmax":
            return f"{self.rng.choice(['min', 'max'])}({a}, {b})"
        if op in ("/", "//", "%") and self.chance(0.7):  # mostly a divisor that cannot be zero
            b = f"(abs({b}) + 1.0)"
        return arithmetic(a, op, b)

    def float_leaf(self, scope: Scope, depth: int) -> str:
        options = [lambda: self.rng.choice(FLOAT_CONSTANTS)]
        if scope.of(FLOAT):
            options += [lambda: self.rng.choice(scope.of(FLOAT))] * 4
        if scope.of(INT):
            options.append(lambda: f"float({self.rng.choice(scope.of(INT))})")
        for name in scope.of(ELEM) + scope.of(IELEM):
            options.append(lambda name=name: f"float({name})")
        for name in scope.of(FARR):
            options.append(lambda name=name: f"float({name}[{self.index(name, scope, depth)}])")
            options.append(lambda name=name: self.reduction(name, scope))
        for name in scope.of(TUP):
            options.append(lambda name=name: f"{name}[1]")
        for name in scope.of(LST):
            options.append(lambda name=name: f"{name}[{self.rng.randrange(2)}]")
        for name in scope.of(DCT):
            options.append(lambda name=name: f'{name}["w"]')
        for name in scope.of(PAIR):
            options.append(lambda name=name: f"{name}.a")
        return self.rng.choice(options)()

    def reduction(self, array: str, scope: Scope) -> str:
        """A float from a float array: a reduction (of an empty one: NaN or NumPy's ValueError),
        a dot product (lengths that differ: ValueError) or a median."""
        name = self.rng.choice(["sum", "mean", "max", "min", "prod", "std", "dot", "median"])
        if name in ("max", "min", "median"):
            self.features.zero_sign_free = True
        else:
            self.features.reassociates = True
        if name == "dot":
            other = self.rng.choice(scope.of(FARR))
            return f"float({array} @ {other})" if self.chance(0.5) else f"float(np.dot({array}, {other}))"
        if name == "median":  # of an empty array: NumPy's NaN, astjit's IndexError (docs/arrays.md)
            return f"(float(np.median({array})) if len({array}) > 0 else -0.5)"
        return f"float(np.{name}({array}))"

    # ---- bools -----------------------------------------------------------------------------

    def bool(self, scope: Scope, depth: int = 0) -> str:
        choice = self.rng.randrange(10 if depth < 2 else 6)
        cmp = self.rng.choice(["<", "<=", ">", ">=", "==", "!="])
        if choice < 2:
            return f"({self.int_bounded(scope, depth + 1)[0]} {cmp} {self.int_bounded(scope, depth + 1)[0]})"
        if choice < 4:
            return f"({self.float(scope, depth + 1)} {cmp} {self.float(scope, depth + 1)})"
        if choice == 4 and scope.of(BOOL):
            return self.rng.choice(scope.of(BOOL))
        if choice == 4 and scope.of(FARR):
            array = self.rng.choice(scope.of(FARR))
            return f"bool(np.{self.rng.choice(['any', 'all'])}({array} {cmp} {self.float(scope, depth + 1)}))"
        if choice == 5:
            if self.chance(0.3):
                return f"math.isnan({self.float(scope, depth + 1)})"
            a, b, c = (self.float(scope, depth + 1) for _ in range(3))
            return f"({a} < {b} <= {c})"
        if choice < 8:
            joiner = self.rng.choice(["and", "or"])
            return f"({self.bool(scope, depth + 1)} {joiner} {self.bool(scope, depth + 1)})"
        if choice == 8:
            return f"(not {self.bool(scope, depth + 1)})"
        return self.call(BOOL, scope, depth)

    # ---- arrays ----------------------------------------------------------------------------

    def farr(self, scope: Scope, depth: int = 0) -> str:
        names = scope.of(FARR)
        if not names or depth >= 2:
            return self.rng.choice(names) if names else f"np.zeros({self.int_bounded(scope, 2)[0]} % 6)"
        a = self.rng.choice(names)

        def inner() -> str:
            return self.farr(scope, depth + 1)

        def number() -> str:
            return self.float(scope, 2)

        return self.rng.choice([
            lambda: f"({a} + {self.rng.choice(names)})",  # lengths may differ: NumPy's ValueError
            lambda: arithmetic(inner(), self.rng.choice(['+', '-', '*']), number()),
            lambda: f"np.{self.rng.choice(['abs', 'negative'])}({inner()})",
            lambda: f"np.sqrt(np.abs({inner()}))",
            lambda: f"{a}.copy()",
            lambda: f"np.{self.rng.choice(['maximum', 'minimum'])}({inner()}, {number()})",
            lambda: f"{a}[{self.rng.choice(['1:', '::-1', ':2', '::2'])}]",
            lambda: f"np.where({a} > {number()}, {a}, {number()})",
            lambda: f"({inner()} * {inner()})",
            lambda: f"np.zeros({self.int_bounded(scope, 2)[0]} % 6)",
            lambda: f"({inner()} / {number()})",  # by zero: inf and NaN, no exception
            lambda: self.ufunc(inner()),
            lambda: f"np.clip({inner()}, {number()}, {number()})",
            lambda: f"{a}[{a} {self.rng.choice(['>', '<=', '!='])} {number()}]",  # a mask
            lambda: f"{a}[{self.int_bounded(scope, 2)[0]}:{self.int_bounded(scope, 2)[0]}]",
            lambda: f"np.concatenate(({a}, {inner()}))[:8]",  # cut: a loop must not double it
            lambda: f"np.{self.rng.choice(['sort', 'cumsum'])}({inner()})",
            lambda: f"np.linspace({number()}, {number()}, {self.int_bounded(scope, 2)[0]} % 6)",
            lambda: self.outer(a, self.rng.choice(names)),
            lambda: f"({self.iarr(scope, 2)} * {number()})" if scope.of(IARR) else a,  # int64 * float
        ])()

    def ufunc(self, array: str) -> str:
        self.features.reassociates = True
        return f"np.{self.rng.choice(NP_1)}({array})"

    def outer(self, a: str, b: str) -> str:
        """A 2-d array by broadcasting (n, 1) against (m,), reduced along one axis (of length 0:
        np.max's ValueError)."""
        name = self.rng.choice(["sum", "max", "min"])
        if name == "sum":
            self.features.reassociates = True
        else:
            self.features.zero_sign_free = True
        op = self.rng.choice(["+", "-", "*"])
        return f"np.{name}({a}[:, None] {op} {b}[None, :], axis={self.rng.randrange(2)})"

    def iarr(self, scope: Scope, depth: int = 0) -> str:
        names = scope.of(IARR)
        if not names:
            return f"np.zeros({self.int_bounded(scope, 2)[0]} % 6, dtype=np.int64)"
        a = self.rng.choice(names)
        return self.rng.choice([
            lambda: f"(({a} + {self.int_bounded(scope, 2)[0]}){REDUCE})",
            lambda: f"(({a} * {self.rng.randint(-3, 3)}) // {self.rng.randint(1, 4)})",
            lambda: f"{a}[{self.rng.choice(['1:', '::-1', ':2'])}]",
            lambda: f"np.abs({a})",
            lambda: a,
            lambda: f"({a} {self.rng.choice(['%', '//'])} {self.rng.randint(-3, 3)})",  # by zero: NumPy's 0
            lambda: f"({a} {self.rng.choice(['%', '//'])} {self.rng.choice(names)})",
            lambda: f"({a} {self.rng.choice(['&', '|', '^'])} {self.rng.randint(0, 5)})",
            lambda: f"({a} {self.rng.choice(['<<', '>>'])} {self.rng.randint(-2, 70)})",  # 0/-1 past 63
            lambda: f"np.{self.rng.choice(['maximum', 'minimum'])}({a}, {self.int_stored(scope, 2)})",
            lambda: f"np.where({a} > {self.rng.randint(-5, 5)}, {a}, -{a})",
            lambda: f"np.sort({a})",
            lambda: f"(np.cumsum({a}){REDUCE})",
            lambda: f"{a}[{a} != {self.rng.randint(-3, 3)}]",
            lambda: f"np.arange({self.int_bounded(scope, 2)[0]} % 6)",
            lambda: f"np.concatenate(({a}, {self.rng.choice(names)}))[:8]",
        ])()

    # ---- containers ------------------------------------------------------------------------

    def tup(self, scope: Scope, depth: int = 0) -> str:
        return self.tree(TUP, scope, depth) or \
            f"({self.of(INT, scope, depth + 1)}, {self.float(scope, depth + 1)})"

    def lst(self, scope: Scope, depth: int = 0) -> str:
        return self.tree(LST, scope, depth) or \
            f"[{self.float(scope, depth + 1)}, {self.float(scope, depth + 1)}]"

    def dct(self, scope: Scope, depth: int = 0) -> str:
        return self.tree(DCT, scope, depth) or \
            f'{{"n": {self.of(INT, scope, depth + 1)}, "w": {self.float(scope, depth + 1)}}}'

    def pair(self, scope: Scope, depth: int = 0) -> str:
        return self.tree(PAIR, scope, depth) or \
            f"Pair({self.float(scope, depth + 1)}, {self.of(INT, scope, depth + 1)})"

    def tree(self, kind: str, scope: Scope, depth: int) -> str | None:
        """A container variable, a choice between two, or a helper's result; None: build one."""
        names = scope.of(kind)
        if names and self.chance(0.4):
            if self.chance(0.3):
                a, b = self.rng.choice(names), self.rng.choice(names)
                return f"({a} if {self.bool(scope, depth + 1)} else {b})"
            return self.rng.choice(names)
        if depth < 3 and self.chance(0.15) and any(h.result == kind for h in self.helpers):
            return self.call(kind, scope, depth)
        return None

    # ---- calls -----------------------------------------------------------------------------

    def call(self, kind: str, scope: Scope, depth: int) -> str:
        """A call of a helper returning `kind`; a leaf where there is none."""
        helpers = [h for h in self.helpers if h.result == kind]
        if not helpers or depth >= 3:
            leaves = {INT: lambda: self.int_leaf(scope, depth)[0],
                      FLOAT: lambda: self.float_leaf(scope, depth),
                      BOOL: lambda: f"({self.float_leaf(scope, depth)} > 0.5)"}
            return leaves[kind]() if kind in leaves else self.of(kind, scope, 3)
        helper = self.rng.choice(helpers)
        args = [self.of(p, scope, depth + 1) for p in helper.params]
        return f"{helper.name}({', '.join(args)})"
