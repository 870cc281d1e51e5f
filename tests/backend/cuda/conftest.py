"""The `launches` fixture of the GPU backend's tests: the kernels the simulator launched."""
import pytest
from cuda_checks import count_launches


@pytest.fixture
def launches(monkeypatch):
    return count_launches(monkeypatch)
