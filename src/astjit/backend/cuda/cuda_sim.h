// cuda_sim.h: runs astjit's generated CUDA C kernels on the host (the "cuda-sim" target).
//
// CI has no GPU, yet every GPU kernel's arithmetic must be checked. simulator.py compiles the very
// source NVRTC would take, after this header, with the host C++ compiler. The header supplies what
// NVRTC supplies (the CUDA keywords, threadIdx & co, warp shuffles, atomics, CUDA's math overloads)
// and runs a grid faithfully:
//
// - Blocks run one after another. So a `__shared__` array may be a plain `static`: one instance,
//   used by one block at a time (it keeps the previous block's values; CUDA leaves it undefined).
// - Within a block every CUDA thread is a cooperative fiber on its own stack (kStackBytes, with a
//   guard page below: a kernel needing more stack crashes instead of corrupting memory). A fiber
//   runs until it exits or waits at a barrier, so a kernel without barriers runs each thread to
//   completion in turn; stacks are reused as threads exit.
// - `__syncthreads()` waits until every thread of the block that has not exited arrives (as GPUs
//   behave in practice after an early `return`). Threads waiting at different `__syncthreads()`
//   call sites are an error, as are threads all waiting with none able to go on (a deadlock).
// - Warp operations (`__shfl*_sync`, `__syncwarp`) wait for all lanes named by the mask (lane =
//   linear thread index % 32), then exchange values with PTX's shfl semantics. A mask naming an
//   exited or missing lane, or a lane reading a lane outside the mask, is an error.
// - Atomics are plain read-modify-writes: only one fiber runs at a time.
//
// Errors leave the launch at once; astjit_sim_error() tells why (without the kernel's name, which
// the driver adds). One launch at a time per loaded module: the driver holds a lock.
//
// This header is what a module's source sees: the CUDA names, and the declarations of the
// scheduler's entry points. The scheduler itself (cuda_sim_runtime.cpp) is compiled once per
// cache folder into an object that every module links, so a module's build compiles its own
// kernels and no more.
#pragma once
#include <cmath>
#include <math.h>  // CUDA's math names in the global namespace, float overloads included: exp(float)
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n)  // a host array is aligned to its element (NumPy's), not to a pair of floats
#define __shared__ static
#define CUDA_SIM_EXPORT extern "C" __attribute__((visibility("default")))

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
static constexpr int warpSize = 32;

// The simulator's state, defined in cuda_sim_runtime.cpp. Plain globals (hidden by
// -fvisibility=hidden, so each loaded module has its own copy of the runtime's), not statics: the
// compiler must assume a fiber switch changes them, threadIdx above all.
namespace cuda_sim {
extern uint3 thread_idx, block_idx;
extern dim3 block_dim, grid_dim;
}  // namespace cuda_sim

static const uint3& threadIdx = cuda_sim::thread_idx;
static const uint3& blockIdx = cuda_sim::block_idx;
static const dim3& blockDim = cuda_sim::block_dim;
static const dim3& gridDim = cuda_sim::grid_dim;

namespace cuda_sim {

enum class Op : unsigned char { syncwarp, shfl_idx, shfl_up, shfl_down, shfl_xor };

// The runtime's entry points (cuda_sim_runtime.cpp).
void syncthreads(int line);
uint64_t warp_op(Op op, unsigned mask, uint64_t value, unsigned arg, int width, int line);
int run_grid(const unsigned* grid, const unsigned* block, void (*run)(void*), void* context);

template <class T> T shuffle(Op op, unsigned mask, T value, unsigned arg, int width, int line) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffled values are at most 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &value, sizeof value);
  bits = warp_op(op, mask, bits, arg, width, line);
  memcpy(&value, &bits, sizeof value);
  return value;
}

// Runs `kernel` (a callable running the kernel for the current thread) over the grid: 0, or 1 and
// an error.
template <class F> int launch(const unsigned* grid, const unsigned* block, F kernel) {
  return run_grid(grid, block, [](void* k) { (*static_cast<F*>(k))(); }, &kernel);
}

template <class To, class From> To bit_cast(From x) {
  To to;
  memcpy(&to, &x, sizeof to);
  return to;
}

}  // namespace cuda_sim

// ---- CUDA's built-ins ----
// The line number default arguments say where a thread waits, for errors.

inline void __syncthreads(int line = __builtin_LINE()) { cuda_sim::syncthreads(line); }
inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
  cuda_sim::warp_op(cuda_sim::Op::syncwarp, mask, 0, 0, 32, line);
}
inline void __threadfence() {}

#define CUDA_SIM_SHUFFLES(T)                                                                        \
  inline T __shfl_sync(unsigned mask, T v, int lane, int width = warpSize, int line = __builtin_LINE()) { \
    return cuda_sim::shuffle(cuda_sim::Op::shfl_idx, mask, v, lane, width, line);                  \
  }                                                                                                 \
  inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize,                 \
                          int line = __builtin_LINE()) {                                            \
    return cuda_sim::shuffle(cuda_sim::Op::shfl_up, mask, v, delta, width, line);                  \
  }                                                                                                 \
  inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize,               \
                            int line = __builtin_LINE()) {                                          \
    return cuda_sim::shuffle(cuda_sim::Op::shfl_down, mask, v, delta, width, line);                \
  }                                                                                                 \
  inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize,                 \
                           int line = __builtin_LINE()) {                                           \
    return cuda_sim::shuffle(cuda_sim::Op::shfl_xor, mask, v, lane_mask, width, line);             \
  }
CUDA_SIM_SHUFFLES(int) CUDA_SIM_SHUFFLES(unsigned) CUDA_SIM_SHUFFLES(long) CUDA_SIM_SHUFFLES(unsigned long)
CUDA_SIM_SHUFFLES(long long) CUDA_SIM_SHUFFLES(unsigned long long)
CUDA_SIM_SHUFFLES(float) CUDA_SIM_SHUFFLES(double)
#undef CUDA_SIM_SHUFFLES

// Atomics: a fiber is never interrupted between the read and the write.
// The overloads CUDA has, no more: NVRTC would reject the others.
#define CUDA_SIM_ATOMIC(name, T, update) \
  inline T name(T* p, T v) { T old = *p; *p = (update); return old; }
#define CUDA_SIM_ADD_EXCH(T) CUDA_SIM_ATOMIC(atomicAdd, T, old + v) CUDA_SIM_ATOMIC(atomicExch, T, v)
#define CUDA_SIM_ATOMIC_MIN_MAX(T) \
  CUDA_SIM_ATOMIC(atomicMax, T, old > v ? old : v) CUDA_SIM_ATOMIC(atomicMin, T, old < v ? old : v)
#define CUDA_SIM_CAS(T) \
  inline T atomicCAS(T* p, T compare, T v) { T old = *p; if (old == compare) *p = v; return old; }
CUDA_SIM_ADD_EXCH(int) CUDA_SIM_ADD_EXCH(unsigned) CUDA_SIM_ADD_EXCH(unsigned long long)
CUDA_SIM_ADD_EXCH(float) CUDA_SIM_ATOMIC(atomicAdd, double, old + v)
CUDA_SIM_ATOMIC_MIN_MAX(int) CUDA_SIM_ATOMIC_MIN_MAX(unsigned)
CUDA_SIM_ATOMIC_MIN_MAX(long long) CUDA_SIM_ATOMIC_MIN_MAX(unsigned long long)
CUDA_SIM_CAS(int) CUDA_SIM_CAS(unsigned) CUDA_SIM_CAS(unsigned long long)
#undef CUDA_SIM_ATOMIC
#undef CUDA_SIM_ADD_EXCH
#undef CUDA_SIM_ATOMIC_MIN_MAX
#undef CUDA_SIM_CAS

// min and max: CUDA's device overloads (the floating ones are fmin and fmax).
#define CUDA_SIM_MIN_MAX(T)                            \
  inline T min(T a, T b) { return a < b ? a : b; } \
  inline T max(T a, T b) { return a > b ? a : b; }
CUDA_SIM_MIN_MAX(int) CUDA_SIM_MIN_MAX(unsigned) CUDA_SIM_MIN_MAX(long) CUDA_SIM_MIN_MAX(unsigned long)
CUDA_SIM_MIN_MAX(long long) CUDA_SIM_MIN_MAX(unsigned long long)
#undef CUDA_SIM_MIN_MAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

inline double __longlong_as_double(long long x) { return cuda_sim::bit_cast<double>(x); }
inline long long __double_as_longlong(double x) { return cuda_sim::bit_cast<long long>(x); }
inline float __int_as_float(int x) { return cuda_sim::bit_cast<float>(x); }
inline int __float_as_int(float x) { return cuda_sim::bit_cast<int>(x); }
