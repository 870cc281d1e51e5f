"""The samples run and reach what they promise (the MLP's accuracy, the closed-form gradients)."""
import importlib.util
import pathlib

import pytest

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"sample_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_linear_mse_gradients_match_the_closed_form(capsys):
    load("linear_mse").main()  # asserts the closed form itself
    assert "dL/dw" in capsys.readouterr().out


def test_conv_relu_compiles_and_differentiates():
    difference, gradient, numeric = load("conv_relu").main()
    assert difference < 1e-12
    assert gradient == pytest.approx(numeric, rel=1e-6)


def test_mlp_on_digits_reaches_95_percent(capsys):
    pytest.importorskip("sklearn")
    accuracy = load("mlp_digits").main(epochs=20)
    assert accuracy >= 0.95
    assert "test accuracy" in capsys.readouterr().out


def test_dask_chunks_sample_maps_a_jitted_function_on_a_cluster(capsys):
    pytest.importorskip("distributed", reason="the 'dist' extra is not installed")
    mean, std = load("dask_chunks").main()  # asserts against NumPy itself
    assert abs(mean - 1.0) < 0.01 and abs(std - 2.0) < 0.01
    assert "worker processes" in capsys.readouterr().out
