"""The cuda-sim target: CUDA C kernels run on the host by simulator.py and cuda_sim.h, checked
against NumPy: elementwise kernels, reductions through shared memory, barriers, warp shuffles and
atomics, lane-by-lane shuffle semantics, deadlocks and compile errors, and the disk cache.

Every source in SOURCES must also be real CUDA: test_sources_compile_with_nvrtc compiles each with
NVRTC wherever CuPy's NVRTC binding is installed.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from cuda_checks import compile_to_ptx

from astjit.backend.cuda.simulator import SimCompileError, compile_source

ELEMENTWISE = r"""
template <class T>
__device__ void axpy_exp(const T* __restrict__ x, T* __restrict__ y, T a, long long n) {
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + exp(y[i]);
}
extern "C" __global__ void axpy_exp_f64(const double* __restrict__ x, double* __restrict__ y,
                                        double a, long long n) { axpy_exp(x, y, a, n); }
extern "C" __global__ void axpy_exp_f32(const float* __restrict__ x, float* __restrict__ y,
                                        float a, long long n) { axpy_exp(x, y, a, n); }

extern "C" __global__ void coordinates(int* out) {
    unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int* o = out + 6 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
}
"""
ELEMENTWISE_KERNELS = {
    "axpy_exp_f64": ["const double* __restrict__", "double* __restrict__", "double", "long long"],
    "axpy_exp_f32": ["const float* __restrict__", "float* __restrict__", "float", "long long"],
    "coordinates": ["int*"],
}

REDUCTION = r"""
__device__ double warp_sum(double v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// The block's sum, in thread 0.
__device__ double block_sum(double v) {
    __shared__ double partial[32];
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    v = warp_sum(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < (blockDim.x + warpSize - 1) / warpSize ? partial[lane] : 0.0);
    return v;
}

__device__ double grid_stride_sum(const double* x, long long n) {
    double v = 0.0;
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) v += x[i];
    return block_sum(v);
}

extern "C" __global__ void sum_atomic(const double* x, long long n, double* out) {
    double v = grid_stride_sum(x, n);
    if (threadIdx.x == 0) atomicAdd(out, v);
}

extern "C" __global__ void sum_partials(const double* x, long long n, double* partials) {
    double v = grid_stride_sum(x, n);
    if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

// Reverses each block's slice of x; the threads past n return at once, and the barrier does not
// wait for them.
extern "C" __global__ void reverse_blocks(const double* x, double* y, int n) {
    __shared__ double tile[1024];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    tile[threadIdx.x] = x[i];
    __syncthreads();
    int valid = min((int)blockDim.x, n - (int)(blockIdx.x * blockDim.x));
    y[i] = tile[valid - 1 - threadIdx.x];
}
"""
REDUCTION_KERNELS = {
    "sum_atomic": ["const double*", "long long", "double*"],
    "sum_partials": ["const double*", "long long", "double*"],
    "reverse_blocks": ["const double*", "double*", "int"],
}

SHUFFLES = r"""
template <class T>
__device__ void shuffles(T* out, T value, int delta, int width) {
    unsigned full = 0xffffffffu;
    int t = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
    out[t] = __shfl_down_sync(full, value, delta, width);
    out[n + t] = __shfl_up_sync(full, value, delta, width);
    out[2 * n + t] = __shfl_xor_sync(full, value, delta, width);
    out[3 * n + t] = __shfl_sync(full, value, delta, width);
}
#define T_ID (blockIdx.x * blockDim.x + threadIdx.x)
extern "C" __global__ void shuffles_f64(double* out, int d, int w) { shuffles(out, T_ID + 0.25, d, w); }
extern "C" __global__ void shuffles_f32(float* out, int d, int w) { shuffles(out, T_ID * 0.5f, d, w); }
extern "C" __global__ void shuffles_i64(long long* out, int d, int w) {
    shuffles(out, (long long)T_ID << 33 | T_ID, d, w);
}
extern "C" __global__ void shuffles_i32(int* out, int d, int w) { shuffles(out, -(int)T_ID, d, w); }
extern "C" __global__ void shuffles_u32(unsigned* out, int d, int w) { shuffles(out, ~T_ID, d, w); }
extern "C" __global__ void shuffles_bool(bool* out, int d, int w) {
    bool v = T_ID % 3 == 0;
    int t = T_ID, n = gridDim.x * blockDim.x;
    out[t] = __shfl_down_sync(0xffffffffu, v, d, w);
    out[n + t] = __shfl_up_sync(0xffffffffu, v, d, w);
    out[2 * n + t] = __shfl_xor_sync(0xffffffffu, v, d, w);
    out[3 * n + t] = __shfl_sync(0xffffffffu, v, d, w);
}
"""
SHUFFLE_VALUES = {  # kernel -> (C type, dtype, the value of global thread t)
    "shuffles_f64": ("double", np.float64, lambda t: t + 0.25),
    "shuffles_f32": ("float", np.float32, lambda t: t * 0.5),
    "shuffles_i64": ("long long", np.int64, lambda t: t << 33 | t),
    "shuffles_i32": ("int", np.int32, lambda t: -t),
    "shuffles_u32": ("unsigned", np.uint32, lambda t: ~t & 0xFFFFFFFF),
    "shuffles_bool": ("bool", np.bool_, lambda t: t % 3 == 0),
}
SHUFFLE_KERNELS = {name: [f"{c_type}*", "int", "int"] for name, (c_type, _, _) in SHUFFLE_VALUES.items()}

MISUSE = r"""
extern "C" __global__ void split_barrier(double* x) {
    if (threadIdx.x < 16) {
        x[threadIdx.x] += 1.0;
        __syncthreads();
    } else {
        __syncthreads();
        x[threadIdx.x] -= 1.0;
    }
}
extern "C" __global__ void shuffle_after_exit(double* x) {
    if (threadIdx.x == 5) return;
    x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, x[threadIdx.x], 1);
}
extern "C" __global__ void barrier_against_warp(double* x) {
    if (threadIdx.x == 0) __syncthreads();
    else __syncwarp();
    x[threadIdx.x] = 1.0;
}
extern "C" __global__ void read_outside_mask(double* x) {
    if (threadIdx.x < 16) x[threadIdx.x] = __shfl_down_sync(0x0000ffffu, x[threadIdx.x], 8);
}
extern "C" __global__ void well_behaved(double* x) {
    __syncthreads();
    x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, threadIdx.x * 1.0, 1);
}
"""
MISUSE_KERNELS = {name: ["double*"] for name in ("split_barrier", "shuffle_after_exit",
                                                 "barrier_against_warp", "read_outside_mask", "well_behaved")}

ATOMICS = r"""
extern "C" __global__ void atomics(const int* x, int n, int* histogram, long long* extremes,
                                   unsigned long long* count, float* total) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        atomicAdd(&histogram[x[i] & 15], 1);
        atomicMax(&extremes[0], (long long)x[i]);
        atomicMin(&extremes[1], (long long)x[i]);
        atomicAdd(count, 1ull);
        int* bits = (int*)total;  // a float add as a compare-and-swap loop
        int old = *bits, assumed;
        do {
            assumed = old;
            old = atomicCAS(bits, assumed, __float_as_int(__int_as_float(assumed) + 1.0f));
        } while (old != assumed);
    }
}
"""
ATOMICS_KERNELS = {"atomics": ["const int*", "int", "int*", "long long*", "unsigned long long*", "float*"]}

SOURCES = {"elementwise": ELEMENTWISE, "reduction": REDUCTION, "shuffles": SHUFFLES, "misuse": MISUSE,
           "atomics": ATOMICS}


@pytest.fixture(scope="module", autouse=True)
def sim_cache(tmp_path_factory):
    """Compile into a fresh cache: the tests exercise the compiler, and leave ~/.cache alone."""
    before = os.environ.get("ASTJIT_SIM_CACHE")
    os.environ["ASTJIT_SIM_CACHE"] = str(tmp_path_factory.mktemp("cuda-sim"))
    yield os.environ["ASTJIT_SIM_CACHE"]
    if before is None:
        del os.environ["ASTJIT_SIM_CACHE"]
    else:
        os.environ["ASTJIT_SIM_CACHE"] = before


@pytest.mark.parametrize("grid, block", [(1, 32), (3, 64), (16, 256), (40, 96), ((2,), (1024,))])
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-14), (np.float32, 1e-6)])
def test_grid_stride_elementwise(grid, block, dtype, rtol):
    module = compile_source(ELEMENTWISE, ELEMENTWISE_KERNELS)
    rng = np.random.default_rng(0)
    n = 10_007
    x, y = rng.random(n).astype(dtype), rng.uniform(-1, 1, n).astype(dtype)  # no cancellation
    a = dtype(1.5)
    expected = a * x + np.exp(y)
    module.launch(f"axpy_exp_f{np.dtype(dtype).itemsize * 8}", grid, block, [x, y, a, n])
    np.testing.assert_allclose(y, expected, rtol=rtol)


def test_thread_and_block_coordinates():
    module = compile_source(ELEMENTWISE, ELEMENTWISE_KERNELS)
    grid, block = (2, 3, 2), (4, 2, 3)
    out = np.full((*grid[::-1], *block[::-1], 6), -1, np.int32)
    module.launch("coordinates", grid, block, [out])
    bz, by, bx, tz, ty, tx = np.indices(out.shape[:-1])
    np.testing.assert_array_equal(out, np.stack([tx, ty, tz, bx, by, bz], axis=-1))


@pytest.mark.parametrize("grid, block", [(1, 32), (7, 64), (16, 256), (64, 256), (3, 1024)])
def test_block_reduction_with_atomic_add(grid, block):
    module = compile_source(REDUCTION, REDUCTION_KERNELS)
    x = np.random.default_rng(1).standard_normal(10_000)
    out = np.zeros(1)
    module.launch("sum_atomic", grid, block, [x, x.size, out])
    np.testing.assert_allclose(out[0], x.sum(), rtol=1e-12)


@pytest.mark.parametrize("grid, block", [(1, 32), (5, 128), (64, 256)])
def test_two_pass_reduction(grid, block):
    module = compile_source(REDUCTION, REDUCTION_KERNELS)
    x = np.random.default_rng(2).standard_normal(10_000)
    partials, total = np.zeros(grid), np.zeros(1)
    module.launch("sum_partials", grid, block, [x, x.size, partials])
    module.launch("sum_partials", 1, block, [partials, grid, total])
    block_of = np.arange(x.size) // block % grid  # the block whose threads read x[i]
    np.testing.assert_allclose(partials, np.bincount(block_of, weights=x, minlength=grid), rtol=1e-12)
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-12)


def test_barrier_does_not_wait_for_exited_threads():
    module = compile_source(REDUCTION, REDUCTION_KERNELS)
    x, y = np.arange(1000.0), np.zeros(1000)
    module.launch("reverse_blocks", 4, 256, [x, y, x.size])
    np.testing.assert_array_equal(y, np.concatenate([x[i:i + 256][::-1] for i in range(0, 1000, 256)]))


def test_atomics():
    module = compile_source(ATOMICS, ATOMICS_KERNELS)
    x = np.random.default_rng(3).integers(-10**6, 10**6, 5000, dtype=np.int32)
    histogram, extremes = np.zeros(16, np.int32), np.array([-2**63, 2**63 - 1])
    count, total = np.zeros(1, np.uint64), np.zeros(1, np.float32)
    module.launch("atomics", 6, 128, [x, x.size, histogram, extremes, count, total])
    np.testing.assert_array_equal(histogram, np.bincount(x & 15, minlength=16))
    assert list(extremes) == [x.max(), x.min()] and count[0] == total[0] == x.size


def _source_lane(op, lane, delta, width):
    """The lane whose value `lane` receives, as the CUDA programming guide describes it."""
    group = lane // width * width
    if op == "down":
        return lane + delta if lane - group + delta < width else lane
    if op == "up":
        return lane - delta if lane - group >= delta else lane
    if op == "xor":
        return lane ^ delta if lane ^ delta < group + width else lane
    return group + delta % width


@pytest.mark.parametrize("delta, width", [(1, 32), (3, 32), (16, 32), (0, 32), (31, 32), (5, 8),
                                          (1, 4), (7, 16), (5, 4), (9, 8), (2, 1)])
@pytest.mark.parametrize("kernel", sorted(SHUFFLE_VALUES))
def test_shuffles_lane_by_lane(kernel, delta, width):
    module = compile_source(SHUFFLES, SHUFFLE_KERNELS)
    _, dtype, value = SHUFFLE_VALUES[kernel]
    grid, block = 2, 64
    n = grid * block
    out = np.zeros(4 * n, dtype)
    module.launch(kernel, grid, block, [out, delta, width])
    for k, op in enumerate(["down", "up", "xor", "idx"]):
        expected = [value(t - t % 32 + _source_lane(op, t % 32, delta, width)) for t in range(n)]
        np.testing.assert_array_equal(out[k * n:(k + 1) * n], np.array(expected).astype(dtype), err_msg=op)


@pytest.mark.parametrize("kernel, message", [
    ("split_barrier", r"waits at __syncthreads\(\) on line 7 while other threads wait at the one on line 5"),
    ("shuffle_after_exit", r"__shfl_xor_sync on line 13: .* lane 5, which has exited"),
    ("barrier_against_warp", r"deadlock: 1 thread\(s\) wait at __syncthreads\(\), 31 at warp operations"
                             r".*__syncwarp \(line 17.* for lane 0,"
                             r" which waits at __syncthreads\(\) \(line 16\)"),
    ("read_outside_mask", r"__shfl_down_sync on line 21: lane 8 reads lane 16, outside the mask 0x0000ffff"),
])
def test_misuse_raises_naming_the_kernel(kernel, message):
    module = compile_source(MISUSE, MISUSE_KERNELS)
    with pytest.raises(RuntimeError, match=rf"kernel '{kernel}', block \(0,0,0\): .*{message}"):
        module.launch(kernel, 1, 32, [np.zeros(32)])
    x = np.zeros(64)  # the module is fine after the failed launch
    module.launch("well_behaved", 1, 64, [x])
    np.testing.assert_array_equal(x, np.arange(64) ^ 1)


def test_compile_error_shows_compiler_message_and_numbered_source():
    source = 'extern "C" __global__ void broken(double* x) {\n    x[0] = undefined_name;\n}\n'
    with pytest.raises(SimCompileError, match=r"(?s)kernel.cu:2:.*undefined_name.*   2 \|     x\[0\]"):
        compile_source(source, {"broken": ["double*"]})


def test_arguments_are_checked():
    module = compile_source(ELEMENTWISE, ELEMENTWISE_KERNELS)
    x, y = np.zeros(4), np.zeros(4)
    with pytest.raises(TypeError, match=r"argument 1 \(double\* __restrict__\) must be an array of float64"):
        module.launch("axpy_exp_f64", 1, 32, [x, y.astype(np.float32), 1.0, 4])
    with pytest.raises(TypeError, match="must be a NumPy array, not list"):
        module.launch("axpy_exp_f64", 1, 32, [x, [0.0], 1.0, 4])
    with pytest.raises(TypeError):
        module.launch("axpy_exp_f64", 1, 32, [x, y, 1.0, 4.0])
    with pytest.raises(OverflowError):
        module.launch("axpy_exp_f64", 1, 32, [x, y, 1.0, 2**63])
    with pytest.raises(ValueError, match="at most 1024 threads"):
        module.launch("axpy_exp_f64", 1, (64, 32), [x, y, 1.0, 4])
    with pytest.raises(ValueError, match="no kernel"):
        module.launch("nope", 1, 32, [])
    module.launch("axpy_exp_f64", np.int64(1), (32,), [x, y, np.float32(2), np.int32(4)])
    np.testing.assert_array_equal(y, np.ones(4))


def test_concurrent_launches_from_python_threads():
    module = compile_source(REDUCTION, REDUCTION_KERNELS)
    xs = [np.random.default_rng(seed).standard_normal(5000) for seed in range(8)]
    outs = [np.zeros(1) for _ in xs]
    threads = [threading.Thread(target=module.launch, args=("sum_atomic", 8, 128, [x, x.size, out]))
               for x, out in zip(xs, outs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    np.testing.assert_allclose([out[0] for out in outs], [x.sum() for x in xs], rtol=1e-12)


def test_modules_are_cached_in_process_and_on_disk(tmp_path):
    assert compile_source(REDUCTION, REDUCTION_KERNELS) is compile_source(REDUCTION, REDUCTION_KERNELS)
    script = ("import sys; from astjit.backend.cuda.simulator import compile_source; "
              "print(compile_source(sys.argv[1], {'fill': ['double*']}).compiled)")
    source = 'extern "C" __global__ void fill(double* x) { x[threadIdx.x] = 7.0; }'
    env = {**os.environ, "ASTJIT_SIM_CACHE": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script, source], env=env, capture_output=True,
                           text=True, check=True).stdout.strip() for _ in range(2)]
    assert runs == ["True", "False"]
    assert [p.suffix for p in tmp_path.iterdir() if p.is_file()] == [".so"]
    # beside it, what the first run built for all modules: the header precompiled and the
    # scheduler's object (and only that: no partial files left)
    [shared] = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert sorted(p.name for p in shared.iterdir()) == ["cuda_sim.h", "cuda_sim.h.gch",
                                                        "cuda_sim_runtime.o"]


def test_a_precompiled_header_that_does_not_fit_is_read_past(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTJIT_SIM_CACHE", str(tmp_path))
    fill = 'extern "C" __global__ void fill(double* x) {{ x[threadIdx.x] = {}; }}'
    compile_source(fill.format(6.25), {"fill": ["double*"]})
    [gch] = tmp_path.glob("*/cuda_sim.h.gch")
    gch.write_bytes(b"not a precompiled header")  # as one of another g++ would be
    x = np.zeros(3)
    compile_source(fill.format(6.5), {"fill": ["double*"]}).launch("fill", 1, 3, [x])
    np.testing.assert_array_equal(x, 6.5)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_sources_compile_with_nvrtc(name):
    assert b".entry" in compile_to_ptx(SOURCES[name])
