"""Elementwise arithmetic on whole arrays, at the IR level: NumPy's broadcasting and NEP 50
promotion in the type rules, NumPy functions in the frontend, the fusion pass and the
`fused` op (verifier, printer, ownership), and interpreter results against NumPy."""
import itertools
import math

import numpy as np
import pytest

from astjit.errors import TypingError
from astjit.frontend import lower_function
from astjit.ir.core import REGION_ROLES, STRUCTURAL_OPS, Graph, Module, Node, Value
from astjit.ir.dot import format_dot
from astjit.ir.infer import infer_types
from astjit.ir.interp import interpret
from astjit.ir.kernels import Kernel, fused_attrs
from astjit.ir.ops import OPS, OpTypeError
from astjit.ir.ops.elementwise import UFUNCS, is_array_elementwise, numpy_promote
from astjit.ir.passes.fuse import fuse_elementwise
from astjit.ir.passes.pipeline import optimize
from astjit.ir.passes.retain_release import check_array_ownership, insert_array_ownership
from astjit.ir.printer import format_module
from astjit.ir.types import BOOL, F32, F64, I64, ArrayType, python_type_of
from astjit.ir.verify import IRVerificationError, verify_module

DTYPES = {F64: np.float64, F32: np.float32, I64: np.int64, BOOL: np.bool_}
WEAK = {F64: 1.5, I64: 2, BOOL: True}


def sample(t):
    """A NumPy value of IR type t (an array of ones, or a weak Python scalar)."""
    if isinstance(t, ArrayType):
        return np.ones((2,) * t.ndim, dtype=DTYPES[t.dtype])
    return WEAK[t]


# ---- typing: broadcasting and promotion against NumPy -----------------------------------

BINARY = ["add", "sub", "mul", "truediv", "floordiv", "mod", "lt", "eq", "ne", "ge",
          "minimum", "maximum", "atan2", "hypot", "copysign", "numpy_fmod"]
OPERANDS = [ArrayType(d, n) for d in (F64, F32, I64, BOOL) for n in (1, 2)] + [F64, I64, BOOL]


@pytest.mark.parametrize("op", BINARY)
def test_binary_rules_match_numpy(op):
    ufunc = getattr(np, UFUNCS[op])
    for a, b in itertools.product(OPERANDS, repeat=2):
        if not (isinstance(a, ArrayType) or isinstance(b, ArrayType)):
            continue
        try:
            with np.errstate(all="ignore"):
                expected = ufunc(sample(a), sample(b))
        except TypeError:
            expected = None
        try:
            _, result = OPS[op].rule([a, b], {})
        except OpTypeError as error:
            assert "not supported yet" in str(error)
            continue  # refused rather than different
        assert expected is not None, (op, a, b)
        assert result == ArrayType(python_type_of(np.ones(1, expected.dtype)).dtype,
                                   expected.ndim), (op, a, b)


@pytest.mark.parametrize("op", ["neg", "abs", "sqrt", "exp", "log", "sin", "cos", "tan",
                                "tanh", "isnan", "isfinite"])
def test_unary_rules_match_numpy(op):
    for t in OPERANDS:
        if not isinstance(t, ArrayType):
            continue
        try:
            _, result = OPS[op].rule([t], {})
        except OpTypeError as error:
            assert "not supported yet" in str(error)
            continue
        with np.errstate(all="ignore"):
            expected = getattr(np, UFUNCS[op])(sample(t))
        assert result == ArrayType(python_type_of(np.ones(1, expected.dtype)).dtype, t.ndim)


def test_weak_scalars_and_operand_types():
    a32 = ArrayType(F32, 1)
    assert OPS["mul"].rule([a32, F64], {}) == ([a32, F32], a32)  # f32 array * 2.0 -> f32
    ai = ArrayType(I64, 2)
    assert OPS["truediv"].rule([ai, I64], {}) == ([ai, F64], ArrayType(F64, 2))
    assert OPS["lt"].rule([ai, F64], {})[1] == ArrayType(BOOL, 2)
    assert OPS["add"].rule([ArrayType(I64, 1), ArrayType(F32, 3)], {})[1] == ArrayType(F64, 3)
    assert numpy_promote([F32], [I64]) == F32 and numpy_promote([I64], [F64]) == F64
    assert numpy_promote([BOOL], [I64]) == I64 and numpy_promote([F32, I64], []) == F64


def test_where_rule():
    c = ArrayType(BOOL, 2)
    assert OPS["where"].rule([c, ArrayType(F32, 1), F64], {}) == (
        [c, ArrayType(F32, 1), F32], ArrayType(F32, 2))
    with pytest.raises(OpTypeError, match="bool condition"):
        OPS["where"].rule([ArrayType(F64, 1), F64, F64], {})


def test_refusals():
    a = ArrayType(F64, 1)
    with pytest.raises(OpTypeError, match="np.maximum"):
        OPS["max"].rule([a, a], {})
    with pytest.raises(OpTypeError, match="not supported yet"):
        OPS["floor"].rule([a], {})
    with pytest.raises(OpTypeError, match="not supported yet"):
        OPS["sub"].rule([ArrayType(BOOL, 1), ArrayType(BOOL, 1)], {})  # NumPy: a TypeError
    bools = ArrayType(BOOL, 1)
    assert OPS["add"].rule([bools, bools], {}) == ([bools, bools], bools)  # NumPy: logical or
    assert OPS["add"].rule([F64, I64], {}) == ([F64, F64], F64)  # scalars unchanged


# ---- the frontend and inference --------------------------------------------------------

def typed(fn, *args):
    module = infer_types(lower_function(fn), [python_type_of(a) for a in args])
    verify_module(module)
    return module


def leaf_ops(module):
    return [n.op for g in module.graphs.values() for n in g.walk()]


def test_numpy_functions_map_to_ops():
    def f(x, y):
        return np.maximum(np.exp(x), np.minimum(np.sqrt(y), np.abs(x))) + np.where(x > y, x, y)

    ops = leaf_ops(lower_function(f))
    for op in ("maximum", "exp", "minimum", "sqrt", "abs", "where", "gt", "add"):
        assert op in ops
    x = np.linspace(0.1, 2, 6)
    module = typed(f, x, x[::-1].copy())
    assert module.entry_graph.outputs[0].type == ArrayType(F64, 1)


def test_scalar_numpy_functions_stay_scalar():
    def f(a):
        return np.sin(a) + np.add(a, 1)

    module = typed(f, 0.5)
    assert module.entry_graph.outputs[0].type == F64
    assert interpret(module, [0.5]) == pytest.approx(math.sin(0.5) + 1.5)


def test_type_errors_are_typing_errors():
    def f(x):
        return max(x, x)

    with pytest.raises(TypingError, match="np.maximum"):
        typed(f, np.ones(3))


# ---- fusion -----------------------------------------------------------------------------

def run_all(fn, *args):
    """lower -> infer -> optimize (with fusion) -> retain/release pass -> interpret, every stage checked."""
    module = typed(fn, *args)

    def fresh():
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    before = interpret(module, fresh())
    optimized = insert_array_ownership(optimize(module, verify=verify_module))
    verify_module(optimized)
    check_array_ownership(optimized)
    return optimized, before, interpret(optimized, fresh())


def fused_nodes(module):
    return [n for g in module.graphs.values() for n in g.walk() if n.op == "fused"]


def test_expression_becomes_one_fused_node():
    def f(x, y):
        return np.exp(-x * x) * np.sin(3.0 * x) + np.tanh(y) / (1.0 + x * x)

    x = np.linspace(-1, 1, 7)
    y = np.linspace(0, 3, 7).astype(np.float32)
    module, before, after = run_all(f, x, y)
    (fused,) = fused_nodes(module)
    assert fused.inputs == module.entry_graph.params and fused.attrs == {"fused": Kernel(1, (1, 1))}
    assert not any(is_array_elementwise(n) for g in module.graphs.values() for n in g.walk())
    np.testing.assert_allclose(after, f(x, y))
    np.testing.assert_allclose(before, f(x, y))
    text = format_module(module)
    assert "fused (%x, %y) {ndim=1} {" in text and "kernel (" in text
    assert "kernel" in format_dot(module) and '"fused {ndim=1}' in format_dot(module)


def test_intermediates_used_outside_become_outputs():
    def f(x):
        a = x * 2.0
        b = np.exp(a) + 1.0
        return a, b, a[0]

    x = np.arange(4.0)
    module, _, (a, b, first) = run_all(f, x)
    (fused,) = fused_nodes(module)
    assert len(fused.outputs) == 2
    np.testing.assert_allclose(a, x * 2.0)
    np.testing.assert_allclose(b, np.exp(x * 2.0) + 1.0)
    assert first == 0.0


def test_single_op_and_broadcasting_split():
    def f(x, m):
        a = x * 2.0  # 1-d, also used outside: cannot share the 2-d space of a + m
        return a + m, a

    x, m = np.arange(3.0), np.ones((2, 3))
    module, _, (s, a) = run_all(f, x, m)
    assert [fused_attrs(n).ndim for n in fused_nodes(module)] == [1, 2]
    np.testing.assert_allclose(s, x * 2.0 + m)
    assert a.shape == (3,)


def test_writes_separate_groups():
    def f(x):
        y = x + 1.0
        x[0] = 10.0
        return y * x

    x = np.arange(3.0)
    module, _, result = run_all(f, x.copy())
    assert len(fused_nodes(module)) == 2
    np.testing.assert_allclose(result, np.array([10.0, 2.0, 6.0]))


def test_new_arrays_are_not_merged():
    def f(x):
        a = x + 1.0
        b = x + 1.0
        a[0] = 5.0
        return b

    module, _, result = run_all(f, np.zeros(2))
    np.testing.assert_allclose(result, [1.0, 1.0])


def test_fusion_in_loops_and_where():
    def f(x, n):
        acc = np.zeros_like(x)
        i = 0
        while i < n:
            acc = acc + np.where(x > 0.5, x, -x) * i
            i += 1
        return acc

    x = np.linspace(0, 1, 5)
    module, before, after = run_all(f, x, 3)
    assert len(fused_nodes(module)) == 1
    np.testing.assert_allclose(after, f(x, 3))
    np.testing.assert_allclose(before, f(x, 3))


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int64, np.float32),
                                    (np.int64, np.int64), (np.bool_, np.int64),
                                    (np.float64, np.int64)])
def test_results_match_numpy(dtypes):
    def f(x, y, s):
        return (x * s - y) / (y + 7) + np.minimum(x, y) * (x < y), x // 3 + y % 4, x * 2.0

    rng = np.random.default_rng(0)
    x = (rng.uniform(-5, 5, (3, 4)) * 3).astype(dtypes[0])
    y = rng.uniform(1, 5, (4,)).astype(dtypes[1])
    _, before, after = run_all(f, x, y, 3)
    for got, want in zip(after, f(x, y, 3)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    for got, want in zip(before, after):
        np.testing.assert_allclose(got, want)


def test_numpy_semantics_no_exceptions():
    def f(x, y):
        return x / y, np.log(x - 2.0)

    with np.errstate(all="ignore"):
        _, _, (q, lg) = run_all(f, np.array([1.0, 0.0]), np.array([0.0, 0.0]))
    assert q[0] == np.inf and np.isnan(q[1]) and np.isnan(lg).all()


def test_shape_mismatch_names_both_shapes():
    def f(x, y):
        return np.sin(x) + y

    module = typed(f, np.ones(3), np.ones(4))
    optimized = optimize(module, verify=verify_module)
    for m in (module, optimized):
        with pytest.raises(ValueError, match=r"\(3,\) \(4,\)"):
            interpret(m, [np.ones(3), np.ones(4)])


def test_unused_array_op_still_checks_shapes():
    def f(x, y):
        x + y
        return 1

    module = optimize(typed(f, np.ones(2), np.ones(5)))
    with pytest.raises(ValueError, match="broadcast"):
        interpret(module, [np.ones(2), np.ones(5)])


# ---- the fused op itself ----------------------------------------------------------------

def fused_graph():
    x = Value("x", ArrayType(F32, 2))
    s = Value("s", F32)
    kernel = Graph("kernel", [Value("xe", F32), Value("se", F32)])
    prod = kernel.add("mul", kernel.params, types=[F32]).outputs[0]
    kernel.outputs = [prod, kernel.add("gt", [prod, kernel.params[1]], types=[BOOL]).outputs[0]]
    node = Node("fused", [x, s], [Value("p", ArrayType(F32, 2)), Value("b", ArrayType(BOOL, 2))],
                {"fused": Kernel(2, (2, None))}, [kernel])
    g = Graph("g", [x, s], [node])
    g.outputs = [g.add("tuple", node.outputs, types=[None]).outputs[0]]
    from astjit.ir.types import TupleType
    g.outputs[0].type = TupleType((ArrayType(F32, 2), ArrayType(BOOL, 2)))
    return Module({"g": g}, "g"), node


def test_fused_is_structural():
    assert "fused" in STRUCTURAL_OPS and REGION_ROLES["fused"] == ("kernel",)
    assert REGION_ROLES["rowwise"] == ("rows",)  # a row group (tests/passes/test_row_fusion.py)
    module, _ = fused_graph()
    verify_module(module)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    p, b = interpret(module, [x, 2.0])
    assert p.dtype == np.float32 and b.dtype == np.bool_
    np.testing.assert_array_equal(p, x * 2)
    np.testing.assert_array_equal(b, x * 2 > 2)
    insert_array_ownership(module)
    check_array_ownership(module)  # the fused outputs are owned: returned, nothing released


@pytest.mark.parametrize("break_it, message", [
    (lambda n: n.attrs.update(fused=Kernel(2, (1, None))), "plan"),
    (lambda n: n.attrs.update(fused=Kernel(1, (2, None))), "dimensions"),
    (lambda n: n.attrs.update(fused=Kernel(3, (2, None))), "outputs"),
    (lambda n: n.regions[0].params.pop(), "'kernel' parameters"),
    (lambda n: setattr(n.regions[0].params[0], "type", F64), "'kernel' parameters"),
    (lambda n: n.regions[0].outputs.pop(), "'kernel' outputs"),
])
def test_verifier_checks_fused(break_it, message):
    module, node = fused_graph()
    break_it(node)
    with pytest.raises(IRVerificationError, match=message):
        verify_module(module)


def test_fusion_pass_alone_is_idempotent():
    def f(x):
        return np.sqrt(x) * 2.0

    module = fuse_elementwise(typed(f, np.ones(3)))
    text = format_module(module)
    assert format_module(fuse_elementwise(module)) == text
    verify_module(module)


def test_backend_compiles_fused():
    import astjit

    @astjit.jit
    def f(x):
        return x * 2.0

    np.testing.assert_array_equal(f(np.ones(3)), np.full(3, 2.0))  # tests/backend/test_fused_backend.py
