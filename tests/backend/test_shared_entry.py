"""The runtime's wrapper shared by every array kernel of a signature (runtime/shared_entry.py).

An array kernel's module holds a table instead of a wrapper; the builtin calls the
runtime's wrapper of its signature, which reads the kernel, its error numbers, its
statuses and its fallback, handler and general tier from the builtin's `self` and the
table. These tests check that each kernel still gets its own: results, fallbacks,
errors with their numbers and locations, read-only arguments, the first tier's way out.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from astjit import cabi, jit


def doubled(x):
    return x * 2.0


def shifted(x):
    return x + 1.0


def write_first(x, v):
    x[0] = v
    return x * 1.0


def read_first(x, v):
    return x * v


def pick(x, i):
    return x[i] * 1.0


def pair(x, y):
    return x * 2.0 + y


def tupled(x):
    return x, x * 2.0


def first_doubled(p):
    return p[0] * 2.0


def entry_of(f, *args):
    values = f.dispatcher.signature.bind(args, {})
    return f.dispatcher.specializations[f.dispatcher.signature.types_of(values)].compiled


def test_kernels_of_one_signature_call_one_wrapper_each_with_its_own_table():
    x = np.arange(5.0)
    f, g = jit(doubled), jit(shifted)
    np.testing.assert_array_equal(f(x), x * 2.0)
    np.testing.assert_array_equal(g(x), x + 1.0)
    first, second = entry_of(f, x), entry_of(g, x)
    assert first.table and second.table
    assert first.call.__self__.method == second.call.__self__.method
    assert first.call.__self__.table != second.call.__self__.table
    assert first.entry_symbol.endswith("].entry") and first.entry_symbol in first.compiled.addresses
    text = first.llvm_ir
    assert "fastcall" not in text
    assert re.search(r'^declare .*@"astjit\.entry\.\(array<f64, 1>\)->array<f64, 1>"', text, re.M)
    assert cabi.slot_offsets()["table"] % 8 == 0


def test_a_call_the_entry_does_not_take_goes_to_its_own_fallback():
    f, g = jit(doubled), jit(shifted)
    x = np.arange(4.0)
    f(x), g(x)
    np.testing.assert_array_equal(f(x=x), x * 2.0)  # keywords
    np.testing.assert_array_equal(g(x=x), x + 1.0)
    np.testing.assert_array_equal(f(np.arange(4)), np.arange(4) * 2.0)  # another dtype
    single = np.arange(3.0, dtype=np.float32)
    assert g(single).dtype == np.float32 and g(single[::-1])[0] == 3.0
    np.testing.assert_array_equal(f(x[::2]), x[::2] * 2.0)  # strided, not transposed: taken
    with pytest.raises(TypeError):
        f(x, x)


def test_read_only_arguments_fail_where_the_kernel_writes_them_only():
    x = np.ones(3)
    writer, reader = jit(write_first), jit(read_first)
    np.testing.assert_array_equal(writer(x.copy(), 5.0), [5.0, 1.0, 1.0])
    np.testing.assert_array_equal(reader(x, 5.0), [5.0, 5.0, 5.0])
    assert entry_of(writer, x, 5.0).call.__self__.method == entry_of(reader, x, 5.0).call.__self__.method
    frozen = np.ones(3)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="assignment destination is read-only") as raised:
        writer(frozen, 2.0)
    assert "x[0] = v" in str(raised.value)
    np.testing.assert_array_equal(reader(frozen, 2.0), [2.0, 2.0, 2.0])


def test_errors_report_the_kernels_own_numbers_and_line():
    f = jit(pick)
    x = np.arange(5.0)
    assert f(x, 3) == 3.0
    assert entry_of(f, x, 3).table
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5") as raised:
        f(x, 7)
    assert "return x[i] * 1.0" in str(raised.value)


def test_a_call_the_first_tier_does_not_fit_leaves_through_the_table():
    f = jit(pair)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    np.testing.assert_allclose(f(x, y), pair(x, y), rtol=1e-14)
    first = entry_of(f, x, y)
    assert first.table and not first.general
    transposed = rng.standard_normal((6, 4)).T
    np.testing.assert_allclose(f(transposed, y), pair(transposed, y), rtol=1e-14)
    assert entry_of(f, x, y).general and entry_of(f, x, y).table


def test_containers_keep_a_wrapper_of_their_own():
    f = jit(tupled)
    x = np.arange(3.0)
    a, b = f(x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x * 2.0)
    assert not entry_of(f, x).table
    assert "fastcall" in entry_of(f, x).llvm_ir
    g = jit(first_doubled)  # a signature taking containers: its entry takes their leaves too
    np.testing.assert_array_equal(g((x, x)), x * 2.0)
    assert not entry_of(g, (x, x)).table
