"""`jit`'s options: only implemented ones are accepted, and `boundscheck=False` compiles
indexing without bounds checks (ir/passes/boundscheck.py) but with negative indices."""
import numpy as np
import pytest

from astjit import grad, jit


def read(x, i):
    return x[i]


def write(x, i, v):
    x[i] = v
    return x


def corner(a, i, j):
    return a[i, j]


def row(a, i):
    return a[i]


def shifted_sum(x):
    s = 0.0
    for i in range(1, len(x)):
        s += x[i - 1] * x[i]
    return s


def index_sites(compiled) -> list:
    """The IndexError sites of every compiled specialization of `compiled`."""
    return [site for spec in compiled.signatures.values() for site in spec.compiled.errors
            if site.exc == "IndexError"]


def test_an_unknown_option_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="fastmath_please"):
        jit(read, fastmath_please=True)
    with pytest.raises(TypeError, match="nopython"):
        jit(nopython=True)
    with pytest.raises(TypeError, match="boundscheck"):
        jit(read, boundscheck="no")


def test_boundscheck_false_compiles_no_checks():
    x = np.arange(3.0)
    checked = jit(read).ir(x, 1, stage="llvm-opt")
    unchecked_fn = jit(read, boundscheck=False)
    unchecked = unchecked_fn.ir(x, 1, stage="llvm-opt")
    assert "out of bounds" not in unchecked.lower() and len(unchecked) < len(checked)
    assert "boundscheck=False" in unchecked_fn.ir(x, 1)
    assert index_sites(unchecked_fn) == [] and index_sites(jit(read)) == []  # not yet compiled
    compiled = jit(read)
    compiled(x, 1)
    assert index_sites(compiled)


@pytest.mark.parametrize("decorate", [lambda f: jit(f, boundscheck=False),
                                      lambda f: jit(boundscheck=False)(f)])
def test_negative_indices_still_count_from_the_end(decorate):
    x = np.arange(5.0)
    assert decorate(read)(x, -1) == 4.0 and decorate(read)(x, 2) == 2.0
    np.testing.assert_array_equal(decorate(write)(x.copy(), -2, 9.0), [0, 1, 2, 9, 4])
    a = np.arange(6.0).reshape(2, 3)
    assert decorate(corner)(a, -1, -3) == 3.0
    np.testing.assert_array_equal(decorate(row)(a, -1), [3.0, 4.0, 5.0])
    for fn in (read, write, corner, row):
        assert index_sites(decorate(fn)) == []


def test_unchecked_loops_give_the_checked_results():
    x = np.random.default_rng(0).standard_normal(1000)
    unchecked = jit(shifted_sum, boundscheck=False)
    assert unchecked(x) == jit(shifted_sum)(x) == shifted_sum(x)
    assert index_sites(unchecked) == []


def test_checks_stay_by_default():
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        jit(read)(np.zeros(5), 5)


def test_boundscheck_false_applies_to_derived_functions():
    derived = grad(shifted_sum)
    derivative = jit(derived, boundscheck=False)
    x = np.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(derivative(x), derived(x))
    assert index_sites(derivative) == [] and index_sites(jit(derived))
    assert jit(derived) is derived.entry  # without options: the derived function's own entry
