"""Containers at the compiled boundary, natively (backend/llvm/runtime/trees.py): every kind
as an argument and as a result, nested, against the Python function; each structure that
differs from the signature's falls back (same results, same errors); descriptors,
`__getattr__` and exceptions raised while reading; no reference leaks."""
import sys
from collections import namedtuple
from dataclasses import FrozenInstanceError, dataclass

import numpy as np
import pytest

import astjit
from astjit import jit


@dataclass
class Layer:
    w: np.ndarray
    b: np.ndarray


@dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    scale: float


class Model:
    def __init__(self, layer, gain, name="model"):
        self.layer = layer
        self.gain = gain
        self.name = name  # static: part of the signature


Pair = namedtuple("Pair", ["x", "y"])


class OwnNew(Pair):
    __slots__ = ()

    def __new__(cls, x, y):
        return super().__new__(cls, x, y)


def step(model, pairs, table, extra):
    layer = model.layer
    w = layer.w * model.gain + table["shift"]
    first, rest = pairs[0], pairs[1]
    return (Layer(w, layer.b + first.x), model,
            [rest.x, {"a": extra[0], "b": (extra[1], rest.y)}], Pair(table["shift"], w))


def arguments(gain=2.0, name="model"):
    model = Model(Layer(np.arange(3.0), np.ones(3)), gain, name)
    pairs = (Pair(1.5, 2.5), Pair(np.arange(2.0), 4.0))
    return model, pairs, {"shift": 0.5}, [3, np.full(2, 7.0)]


def same(got, want):
    """The same tree: structure and classes (astjit.tree), leaves equal and of the same types."""
    got_leaves, got_def = astjit.tree.flatten(got)
    want_leaves, want_def = astjit.tree.flatten(want)
    assert got_def == want_def
    for a, b in zip(got_leaves, want_leaves):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a, b)


def taking_trees(f) -> bool:
    """Whether the jitted entry targets a compiled builtin taking containers natively."""
    return any(f.func is spec.compiled.trees for spec in f.signatures.values())


def test_every_kind_as_argument_and_result_nested():
    f = jit(step)
    for _ in range(3):  # compile, then the native path
        same(f(*arguments()), step(*arguments()))
    assert taking_trees(f) and len(f.signatures) == 1
    result = f(*arguments())
    assert type(result[1]) is Model and vars(result[1]).keys() == {"layer", "gain", "name"}


@pytest.mark.parametrize("change", [
    "wrong class", "tuple length", "list length", "missing key", "extra key",
    "extra attribute", "static attribute", "int leaf", "keyword"])
def test_a_structure_that_differs_falls_back(change):
    f = jit(step)
    f(*arguments())
    model, pairs, table, extra = arguments()
    keywords = {}
    if change == "wrong class":
        model.layer = type("Other", (Layer,), {})(model.layer.w, model.layer.b)
    elif change == "tuple length":
        pairs = (*pairs, Pair(0.0, 0.0))
    elif change == "list length":
        extra = [*extra, 1.0]
    elif change == "missing key":
        table = {"offset": 0.5}
    elif change == "extra key":
        table = {"shift": 0.5, "other": 1.0}
    elif change == "extra attribute":
        model.other = np.zeros(1)
    elif change == "static attribute":
        model.name = "renamed"
    elif change == "int leaf":
        table = {"shift": 1}
    else:
        keywords, extra = {"extra": extra}, None
    args = [a for a in (model, pairs, table, extra) if a is not None]
    if change == "missing key":  # a new signature, which cannot compile
        with pytest.raises(astjit.errors.TypingError, match="no key 'shift'"):
            f(*args)
    else:
        same(f(*args, **keywords), step(*args, **keywords))
    same(f(*arguments()), step(*arguments()))  # the first signature still runs


@dataclass
class Doubled:
    w: np.ndarray


Doubled.w = property(lambda self: self.__dict__["raw"] * 2.0,
                     lambda self, value: self.__dict__.__setitem__("raw", value))


@dataclass
class Lazy:
    w: np.ndarray
    b: float

    def __getattr__(self, name):
        if name == "b":
            raise ValueError("no b today")
        raise AttributeError(name)


class Interrupt(BaseException):
    pass


def weighted(p):
    return np.sum(p.w) + p.b


def doubled_sum(p):
    return np.sum(p.w)


def test_a_property_on_a_dataclass_field_is_read_as_python_reads_it():
    f = jit(doubled_sum)
    for _ in range(2):
        assert f(Doubled(np.arange(3.0))) == doubled_sum(Doubled(np.arange(3.0))) == 6.0
    assert taking_trees(f)


def test_an_exception_raised_while_reading_falls_back_to_the_same_error():
    f = jit(weighted)
    assert f(Lazy(np.ones(2), 1.0)) == 3.0
    broken = Lazy(np.ones(2), 1.0)
    del broken.__dict__["b"]  # now read through __getattr__, which raises
    with pytest.raises(ValueError, match="no b today"):
        weighted(broken)
    with pytest.raises(ValueError, match="no b today"):
        f(broken)
    assert f(Lazy(np.ones(2), 2.0)) == 4.0 and taking_trees(f)


def test_an_exception_that_is_not_an_exception_propagates_from_the_native_path():
    f = jit(doubled_sum)
    f(Doubled(np.ones(2)))
    broken = Doubled(np.ones(2))
    broken.__dict__.pop("raw")
    with pytest.raises(KeyError):  # the property raises an Exception: the slow path's
        f(broken)
    Doubled.w = property(lambda self: (_ for _ in ()).throw(Interrupt()), Doubled.w.fset)
    try:
        with pytest.raises(Interrupt):
            f(Doubled(np.ones(2)))
    finally:
        Doubled.w = property(lambda self: self.__dict__["raw"] * 2.0,
                             lambda self, value: self.__dict__.__setitem__("raw", value))


def rescale(p, s):
    return Frozen(p.w * s, p.scale * s)


def test_a_frozen_dataclass_result():
    f = jit(rescale)
    for _ in range(2):
        got = f(Frozen(np.ones(2), 2.0), 3.0)
        assert type(got) is Frozen and got.scale == 6.0
        np.testing.assert_array_equal(got.w, np.full(2, 3.0))
    with pytest.raises(FrozenInstanceError):
        got.scale = 1.0


POST_INIT_CALLS = []


@dataclass
class Checked:
    w: np.ndarray

    def __post_init__(self):
        POST_INIT_CALLS.append(self)


def doubled(p):
    return Checked(p.w * 2.0)


def test_a_dataclass_result_is_made_without_init_or_post_init():
    f = jit(doubled)
    argument = Checked(np.ones(2))
    POST_INIT_CALLS.clear()
    for _ in range(2):
        got = f(argument)
        assert type(got) is Checked and vars(got).keys() == {"w"}
    assert POST_INIT_CALLS == []  # as tree.rebuild makes it: object.__new__, no __init__


def pair_of(x):
    return Pair(x, x + 1.0), OwnNew(x, 2.0)


def test_namedtuple_results_are_their_class_s():
    f = jit(pair_of)
    for _ in range(2):
        plain, own = f(1.0)
        assert type(plain) is Pair and plain == Pair._make((1.0, 2.0))
        assert type(own) is OwnNew and own == (1.0, 2.0)


def first(p):
    return p.layer.w, p.layer, p


def test_no_reference_leaks():
    f = jit(step)
    args = arguments()
    changed = (args[0], args[1], {"shift": 0.5, "extra": 0.0}, args[3])  # falls back
    f(*args)
    f(*changed)
    leaves = astjit.tree.leaves(args) + [args[0], args[0].layer, args[1], args[2], args[3]]
    before = [sys.getrefcount(x) for x in leaves]
    for _ in range(200):
        f(*args)
    assert [sys.getrefcount(x) for x in leaves] == before
    for _ in range(50):
        f(*changed)
    assert [sys.getrefcount(x) for x in leaves] == before
    g = jit(first)
    model = args[0]
    g(model)
    before = [sys.getrefcount(x) for x in (model, model.layer, model.layer.w)]
    for _ in range(200):
        g(model)
    assert [sys.getrefcount(x) for x in (model, model.layer, model.layer.w)] == before


def out_of_bounds(p, i):
    return p.w[i]


def test_an_error_in_compiled_code_releases_what_the_call_held():
    f = jit(out_of_bounds)
    layer = Layer(np.ones(3), np.ones(3))
    f(layer, 0)
    before = sys.getrefcount(layer.w), sys.getrefcount(layer)
    for _ in range(50):
        with pytest.raises(IndexError):
            f(layer, 5)
    assert (sys.getrefcount(layer.w), sys.getrefcount(layer)) == before
