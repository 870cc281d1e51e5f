#!/usr/bin/env bash
# The GPU checks on a machine with a CUDA GPU, its driver, Python and pip (no CUDA toolkit):
#
#   benchmarks/gpu_check.sh            # venv in benchmarks/_build/gpu-venv (gitignored)
#   GPU_VENV=/tmp/v benchmarks/gpu_check.sh
#   GPU_CHECK_JAX=1 benchmarks/gpu_check.sh    # also installs jax[cuda13] for gpu_run.py's JAX column
#   GPU_CHECK_PYTHON=python3 benchmarks/gpu_check.sh
#       # no venv, nothing installed: that Python already has CuPy, llvmlite, NumPy, pytest
#       # and pytest-xdist (an offline machine's image), astjit imported from src/
#
# 1. creates a venv and installs astjit with its test and gpu extras (`.[test,gpu]`; where
#    pyproject has no `gpu` extra yet, `.[test]` and cupy-cuda13x), and the CUDA libraries
#    CuPy needs (cuda-toolkit wheels: cudart, NVRTC, cuBLAS) if a probe finds them missing;
# 2. then, within 5 minutes together (GPU_CHECK_SECONDS), runs the GPU tests
#    (`pytest -m gpu ../shared/acceptance/test_gpu.py` where ../shared exists, and the
#    project's tests on target="gpu": `pytest -k gpu tests/backend/cuda`, the corpus, the
#    gradients and the rest, which CI runs on the simulator) and benchmarks/gpu_run.py --quick.
# Every step runs even if one before it failed; the exit status is 1 if any failed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
VENV=${GPU_VENV:-benchmarks/_build/gpu-venv}
PYTHON=${PYTHON:-python3}
SECONDS_FOR_CHECKS=${GPU_CHECK_SECONDS:-300}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
if [ -n "${GPU_CHECK_PYTHON:-}" ]; then
    echo "== setup: $GPU_CHECK_PYTHON as it is, astjit from src/"
    PY=$GPU_CHECK_PYTHON
    export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "== setup: $VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV" || exit 1
    # shellcheck disable=SC1091
    . "$VENV/bin/activate"
    PY=python
    python -m pip install -q --upgrade pip || exit 1
    if grep -Eq '^gpu *= *\[' pyproject.toml; then
        python -m pip install -q -e '.[test,gpu]' || exit 1
    else
        echo "pyproject.toml has no gpu extra: installing cupy-cuda13x beside .[test]"
        python -m pip install -q -e '.[test]' cupy-cuda13x || exit 1
    fi
fi

probe() {  # a kernel through NVRTC and a matmul through cuBLAS
    "$PY" - <<'EOF'
import cupy
kernel = cupy.RawKernel(r'extern "C" __global__ void twice(float* a) { a[threadIdx.x] *= 2; }', "twice")
a = cupy.ones(32, dtype=cupy.float32)
kernel((1,), (32,), (a,))
m = cupy.ones((64, 64), dtype=cupy.float32)
assert float((m @ m)[0, 0]) == 64.0 and float(a.sum()) == 64.0
print("cupy", cupy.__version__, "on", cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
EOF
}
if ! probe; then
    if [ -n "${GPU_CHECK_PYTHON:-}" ]; then
        echo "CuPy cannot run a kernel with $GPU_CHECK_PYTHON"
        exit 1
    fi
    echo "CuPy cannot reach NVRTC/cuBLAS/cudart: installing the CUDA 13 library wheels"
    python -m pip install -q 'cuda-toolkit[cudart,nvrtc,cublas]==13.*' || exit 1
    probe || { echo "CuPy still cannot run a kernel on this machine"; exit 1; }
fi
if [ -n "${GPU_CHECK_JAX:-}" ] && [ -z "${GPU_CHECK_PYTHON:-}" ]; then
    python -m pip install -q 'jax[cuda13]' || echo "jax[cuda13] did not install: no JAX column"
fi

echo "== checks (at most ${SECONDS_FOR_CHECKS} s)"
DEADLINE=$((SECONDS + SECONDS_FOR_CHECKS))
FAILED=()
step() {  # step NAME COMMAND...: run with what is left of the deadline
    local name=$1 left=$((DEADLINE - SECONDS))
    shift
    if [ "$left" -le 0 ]; then
        echo "== $name: skipped, no time left"
        FAILED+=("$name (no time left)")
        return
    fi
    echo "== $name (${left} s left)"
    timeout --kill-after=10 "$left" "$@"
    local status=$?
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        FAILED+=("$name (timed out)")
    elif [ "$status" -ne 0 ]; then
        FAILED+=("$name (exit $status)")
    fi
}

if [ -d ../shared/acceptance ]; then
    step "acceptance GPU tests" "$PY" -m pytest -q -m gpu ../shared/acceptance/test_gpu.py
else
    echo "== acceptance GPU tests: ../shared/acceptance not found, skipped"
fi
step "tests/backend/cuda on the device" "$PY" -m pytest -p no:benchmark -k gpu tests/backend/cuda
step "gpu_run.py" "$PY" benchmarks/gpu_run.py --quick

if [ ${#FAILED[@]} -ne 0 ]; then
    printf '== failed: %s\n' "${FAILED[@]}"
    exit 1
fi
echo "== all GPU checks passed in $((SECONDS_FOR_CHECKS - (DEADLINE - SECONDS))) s"
