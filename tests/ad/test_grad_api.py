"""The differentiation API: custom rules, jvp, higher order, errors, dumps, interpreter mode."""
import math
import types

import pytest

from astjit import DifferentiationError, check_grad, custom_vjp, grad, jit, jvp, stop_gradient, value_and_grad


@custom_vjp
def clip_gradient(x):
    return x


@clip_gradient.defvjp
def clip_gradient_rule(x, out, g):
    return (max(-1.0, min(1.0, g)),)


def clipped_loss(x):
    return 10.0 * clip_gradient(3.0 * x)


@custom_vjp
def soft_log(x):
    return math.log(x)


@soft_log.defvjp
def soft_log_rule(x, out, g):
    return g / max(x, 1e-3)


def newton_sqrt(x):
    y = x if x > 1.0 else 1.0
    while abs(y * y - x) > 1e-13 * x:
        y = 0.5 * (y + x / y)
    return y


def cubic(x, y):
    return x * x * x * y + math.sin(x * y)


def mixed(n, x):
    return n * x


def test_custom_rule_replaces_the_derivative_in_compiled_gradients():
    assert grad(clipped_loss)(2.0) == 3.0          # 10 clipped to 1, times the inner 3
    assert grad(clip_gradient)(2.0) == 1.0
    assert grad(soft_log)(1e-5) == pytest.approx(1000.0)
    assert jit(clipped_loss)(2.0) == 60.0          # the function itself runs as written


def test_custom_rule_is_not_used_by_forward_mode():
    assert jvp(clipped_loss, (2.0,), (1.0,)) == (60.0, 30.0)


def test_custom_vjp_without_a_rule_is_an_error():
    @custom_vjp
    def bare(x):
        return x

    with pytest.raises(TypeError, match="defvjp"):
        grad(bare)(1.0)


def test_jvp_gives_value_and_directional_derivative():
    value, tangent = jvp(cubic, (1.5, 2.0), (1.0, 0.5))
    dx, dy = grad(cubic, argnums=(0, 1))(1.5, 2.0)
    assert value == cubic(1.5, 2.0)
    assert tangent == pytest.approx(dx * 1.0 + dy * 0.5, rel=1e-12)


def test_hessian_vector_product_by_forward_over_reverse():
    x, v = 1.5, 2.0
    _, hv = jvp(grad(cubic), (x, 2.0), (v, 0.0))
    d2 = 6 * x * 2.0 - 4.0 * math.sin(x * 2.0)   # d2/dx2 of cubic at y = 2
    assert hv == pytest.approx(d2 * v, rel=1e-9)


def test_third_derivative_through_a_loop():
    d3 = grad(grad(grad(newton_sqrt)))(2.0)
    assert d3 == pytest.approx(0.375 * 2.0 ** -2.5, rel=1e-6)


def test_gradient_with_respect_to_an_int_names_the_argument():
    with pytest.raises(DifferentiationError, match="'n'") as info:
        grad(mixed, argnums=0)(3, 2.0)
    assert isinstance(info.value, TypeError)


def test_gradient_of_a_non_float_result_is_an_error():
    def count(x):
        return int(x)

    with pytest.raises(TypeError):
        grad(count)(2.5)


def test_value_and_grad_shapes():
    assert value_and_grad(cubic)(1.0, 1.0) == (cubic(1.0, 1.0), grad(cubic)(1.0, 1.0))
    value, (gx, gy) = value_and_grad(cubic, argnums=(0, 1))(1.0, 1.0)
    assert (gx, gy) == grad(cubic, argnums=(0, 1))(1.0, 1.0)


def test_stop_gradient_inside_compiled_code_and_out():
    def detached(x):
        return x * stop_gradient(x * x)

    assert grad(detached)(3.0) == 9.0
    assert jit(detached)(3.0) == 27.0


def test_check_grad_reports_small_errors():
    report = check_grad(cubic, 1.2, 0.7)
    assert len(report.gradient) == 2 and report.worst < 1e-6


def test_grad_stage_shows_primal_and_gradient_side_by_side():
    text = grad(cubic).ir(1.0, 2.0, stage="grad")
    assert "primal" in text and "gradient" in text
    assert "mul" in text
    with pytest.raises(ValueError, match="derived"):
        jit(cubic).ir(1.0, 2.0, stage="grad")


def test_grad_works_through_the_interpreter_when_jit_is_disabled(monkeypatch):
    expected = grad(newton_sqrt)(2.0)
    second = grad(grad(cubic))(1.0, 2.0)
    monkeypatch.setenv("ASTJIT_DISABLE_JIT", "1")
    fresh_sqrt = types.FunctionType(newton_sqrt.__code__, newton_sqrt.__globals__)
    fresh_cubic = types.FunctionType(cubic.__code__, cubic.__globals__)
    assert grad(fresh_sqrt)(2.0) == pytest.approx(expected, rel=1e-12)
    assert grad(grad(fresh_cubic))(1.0, 2.0) == pytest.approx(second, rel=1e-12)
    assert grad(fresh_sqrt)._entry is None  # nothing was compiled


def training_loop(w, x, target, lr, steps):
    for _ in range(steps):
        w = w - lr * grad(_squared_error)(w, x, target)
    return w


def _squared_error(w, x, target):
    return (w * x - target) ** 2


def test_training_loop_differentiates_inside_compiled_code():
    assert jit(training_loop)(0.0, 2.0, 1.0, 0.05, 300) == pytest.approx(0.5, rel=1e-9)
    assert jit(training_loop)(0.0, 2.0, 1.0, 0.05, 300) == training_loop(0.0, 2.0, 1.0, 0.05, 300)


def _scaled_sine(x, y):
    return x * math.sin(y)


def uses_every_transform(x):
    value, tangent = jvp(_scaled_sine, (x, 2.0), (1.0, 0.0))
    also_value, (gx, gy) = value_and_grad(_scaled_sine, argnums=(0, 1))(x, 2.0)
    return value + tangent + also_value + gx + gy + stop_gradient(x)


def test_every_transform_inside_compiled_code_matches_python():
    assert jit(uses_every_transform)(1.5) == uses_every_transform(1.5)


def _weighted_count(x, n):
    s = 0.0
    for i in range(n):
        s += x * i
    return s


def test_jvp_takes_int_primals_with_ignored_tangents():
    assert jvp(_weighted_count, (2.0, 10), (1.0, 0)) == (90.0, 45.0)
