"""Methods and models: @jit in a class body, jit of a bound method, calls on objects
(`self.forward(x)`, `self(x)`, a layer held by the model), grad with respect to `self`,
and functions passed as arguments; each against plain Python, gradients against central
differences."""
import functools
from dataclasses import dataclass

import numpy as np
import pytest

from astjit import TypingError, grad, jit, nn, value_and_grad


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


class Scaler:
    def __init__(self, data):
        self.mean, self.std, self.name = data.mean(axis=0), data.std(axis=0), "scaler"

    @jit
    def transform(self, x):
        return (x - self.mean) / self.std


class Dense:
    def __init__(self, n_in, n_out, seed):
        self.weight, self.bias = arr(n_in, n_out, seed=seed), arr(n_out, seed=seed + 1)

    def __call__(self, x):
        return x @ self.weight + self.bias


class Net:
    def __init__(self, seed=0):
        self.hidden, self.out, self.act = Dense(3, 4, seed), Dense(4, 2, seed + 2), np.tanh

    def forward(self, x):
        return self.out(np.tanh(self.hidden(x)))

    def loss(self, x, y, scale=1.0):
        d = self.forward(x) - y
        return scale * np.mean(d * d)

    @staticmethod
    def plain(x):
        return x * 2.0


@dataclass
class Ridge:
    w: np.ndarray
    lam: float

    @jit
    def loss(self, x, y):
        r = x @ self.w - y
        return np.mean(r * r) + self.lam * np.sum(self.w * self.w)


def central(fn, obj, attr_path, h=1e-6):
    """d fn(obj) / d the array at attr_path, by central differences."""
    *owners, last = attr_path
    holder = obj
    for name in owners:
        holder = getattr(holder, name)
    base = getattr(holder, last)
    grad_ = np.zeros_like(base)
    for idx in np.ndindex(base.shape):
        for sign in (1, -1):
            moved = base.copy()
            moved[idx] += sign * h
            setattr(holder, last, moved)
            grad_[idx] += sign * fn(obj) / (2 * h)
    setattr(holder, last, base)
    return grad_


def test_a_method_jitted_in_its_class_reads_self_at_every_call():
    data, x = arr(20, 3, seed=1) * 2 + 1, arr(4, 3, seed=2)
    s = Scaler(data)
    np.testing.assert_allclose(s.transform(x), (x - s.mean) / s.std, rtol=1e-12)
    np.testing.assert_allclose(Scaler.transform(s, x), s.transform(x), rtol=1e-12)
    s.mean, s.std = np.zeros(3), np.full(3, 4.0)
    np.testing.assert_allclose(s.transform(x), x / 4.0, rtol=1e-12)


def test_a_bound_method_with_nested_layers_and_defaults():
    net, x, y = Net(), arr(5, 3, seed=3), arr(5, 2, seed=4)
    forward, loss = jit(net.forward), jit(net.loss)
    np.testing.assert_allclose(forward(x), net.forward(x), rtol=1e-12)
    assert np.isclose(loss(x, y), net.loss(x, y), rtol=1e-12)
    net.hidden.weight = net.hidden.weight * 2.0
    np.testing.assert_allclose(forward(x), net.forward(x), rtol=1e-12)


def test_grad_with_respect_to_a_model_is_the_model_s_shape():
    net, x, y = Net(seed=5), arr(6, 3, seed=6), arr(6, 2, seed=7)
    value, g = value_and_grad(Net.loss)(net, x, y)
    assert np.isclose(value, net.loss(x, y), rtol=1e-12)
    assert type(g) is Net and type(g.hidden) is Dense and g.act is np.tanh
    for path in (("hidden", "weight"), ("hidden", "bias"), ("out", "weight")):
        holder = g
        for name in path:
            holder = getattr(holder, name)
        np.testing.assert_allclose(holder, central(lambda m: m.loss(x, y), net, path),
                                   rtol=1e-5, atol=1e-7, err_msg=".".join(path))


def test_grad_of_a_dataclass_method_jitted_in_its_class():
    model, x, y = Ridge(arr(3, 1, seed=8), 0.1), arr(12, 3, seed=9), arr(12, 1, seed=10)
    g = grad(Ridge.loss)(model, x, y)
    r = x @ model.w - y
    assert isinstance(g, Ridge)
    np.testing.assert_allclose(g.w, 2.0 / 12 * x.T @ r + 0.2 * model.w, rtol=1e-10)
    assert np.isclose(g.lam, np.sum(model.w ** 2), rtol=1e-10)


def call_static(x):
    return Net.plain(x)


def test_a_static_method_is_called_without_self():
    np.testing.assert_allclose(jit(call_static)(arr(3)), 2 * arr(3), rtol=1e-12)


def conjugate(x):
    return x.conjugate()


def hexed(x):
    return x.hex()


def test_a_method_of_a_number_is_refused_by_type():
    with pytest.raises(TypingError, match="'hex' of f64 is not a method"):
        jit(hexed)(1.5)


def test_conjugate_of_a_real_number_is_itself():  # Python's, since complex numbers compile
    for x in (1.5, 3, -0.0):
        assert repr(jit(conjugate)(x)) == repr(conjugate(x))


def array_methods(z, w, x, m, v):
    ordered = np.sort(x)
    return (z.conjugate(), w.conj(), w.conjugate(), w.round(), x.round(), x.conj(),
            m.dot(v), m.trace(), m.transpose(), v.dot(v), m.T.dot(m),
            ordered.searchsorted(0.5), ordered.searchsorted(x))


def rounded_to(x):
    return x.round(1)


class Vector:
    """A class of the user's with a method named as an array's (`dot`): its own."""

    def __init__(self, data):
        self.data = data

    def dot(self, other):
        return float(np.sum(self.data * other.data)) + 0.5

    def clip(self, low, high):
        return np.clip(self.data, low, high) * 2.0


def dotted(a, b):
    return a.dot(b), a.clip(0.5, 1.5)


def test_an_arrays_methods_are_its_numpy_functions():
    """x.conj(), x.round(), x.dot(y), x.trace(), x.transpose() of arrays and NumPy scalars:
    np.conj(x) ... with NumPy's types; an object's method of the same name stays its own."""
    args = (np.complex128(1 + 2j), np.float64(-2.5), np.array([0.5, 1.5, -2.5, 2.675, -0.0]),
            np.arange(6.0).reshape(3, 2), np.array([1.0, -2.0]))
    for got, want in zip(jit(array_methods)(*args), array_methods(*args), strict=True):
        assert type(got) is type(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()  # zeros' signs too
    with pytest.raises(TypingError, match=r"call np.round\(x, ...\) instead"):
        jit(rounded_to)(args[2])
    with pytest.raises(TypingError, match="'round' of f64 is not a method"):
        jit(rounded_to)(1.5)  # Python's float has no method round
    a, b = Vector(np.arange(3.0)), Vector(np.ones(3))
    (got, clipped), (want, expected) = jit(dotted)(a, b), dotted(a, b)
    assert got == want == 3.5
    np.testing.assert_array_equal(clipped, expected)


def apply_twice(f, x):
    return f(f(x))


def scaled(x, s):
    return x * s


def test_functions_passed_as_arguments_each_compile_once():
    g, x = jit(apply_twice), arr(4, seed=11)
    for f in (np.tanh, nn.relu, functools.partial(scaled, s=0.5), jit(nn.sigmoid), nn.relu):
        np.testing.assert_allclose(g(f, x), apply_twice(f, x), rtol=1e-12)
    dispatcher = g.dispatcher
    before = len(dispatcher.with_functions)
    g(functools.partial(scaled, s=0.5), x)  # an equal partial: the same specialization
    assert len(dispatcher.with_functions) == before


def test_a_partial_binding_an_array_is_refused_clearly():
    with pytest.raises(TypeError, match="partial"):
        jit(apply_twice)(functools.partial(scaled, s=np.ones(3)), arr(3))
