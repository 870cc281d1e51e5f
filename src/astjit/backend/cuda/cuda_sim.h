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
#pragma once
#include <cmath>
#include <math.h>  // CUDA's math names in the global namespace, float overloads included: exp(float)
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__) && !defined(CUDA_SIM_UCONTEXT)
#define CUDA_SIM_UCONTEXT 1  // elsewhere, switch fibers with swapcontext (slower: a syscall each)
#endif
#ifdef CUDA_SIM_UCONTEXT
#include <ucontext.h>
#endif

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

// The simulator's state. Plain globals (hidden by -fvisibility=hidden, so each loaded module has its
// own), not statics: the compiler must assume a fiber switch changes them, threadIdx above all.
namespace cuda_sim {
constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 64 * 1024;

uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;
}  // namespace cuda_sim

static const uint3& threadIdx = cuda_sim::thread_idx;
static const uint3& blockIdx = cuda_sim::block_idx;
static const dim3& blockDim = cuda_sim::block_dim;
static const dim3& gridDim = cuda_sim::grid_dim;

namespace cuda_sim {

enum class State : unsigned char { ready, at_barrier, at_warp, exited };
enum class Op : unsigned char { syncwarp, shfl_idx, shfl_up, shfl_down, shfl_xor };
const char* const kOpNames[] = {"__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                "__shfl_xor_sync"};

#ifdef CUDA_SIM_UCONTEXT
struct Context { ucontext_t uc; };
#else
struct Context { void* sp; };
#endif

struct Fiber {
  Context context;
  uint3 idx;
  State state;
  int stack;  // index into stacks, -1 until the thread starts
  int line;   // of the barrier or warp operation it waits at
  // Its pending warp operation: what it offers and what it gets.
  Op op;
  unsigned mask, arg;
  int width;
  uint64_t value, result;
};

Fiber fibers[kMaxThreads];
struct Warp { unsigned waiting, exited; };  // lane bit masks: at a warp operation; exited
Warp warps[kMaxThreads / 32];
char* stacks[kMaxThreads];  // allocated on demand, kept for the process's life
int free_stacks[kMaxThreads];
int n_stacks, n_free;
int n_threads, current, live, at_barrier, barrier_line;
bool failed;
char error[1024];
Context scheduler;
void (*body)(void*);  // runs the kernel for the current thread
void* body_context;

// ---- errors ----

void format_error(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(error, sizeof error, format, args);
  va_end(args);
  failed = true;
}

struct Name { char text[48]; };
Name thread_name(int t) {
  Name name;
  snprintf(name.text, sizeof name.text, "thread (%u,%u,%u)", fibers[t].idx.x, fibers[t].idx.y,
           fibers[t].idx.z);
  return name;
}

// ---- fibers ----

[[noreturn]] void fiber_main();

#ifdef CUDA_SIM_UCONTEXT
void start_context(Context& c, char* stack) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = kStackBytes;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, fiber_main, 0);
}
void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#else
// cuda_sim_switch(save, load): push the callee-saved registers, save the stack pointer in *save,
// load `load`, pop the registers it holds and return into that context.
extern "C" void cuda_sim_switch(void** save, void* load);
asm(R"(
  .text
  .globl cuda_sim_switch
  .hidden cuda_sim_switch
  .type cuda_sim_switch, @function
cuda_sim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_sim_switch, .-cuda_sim_switch
)");

// A new stack as cuda_sim_switch leaves one: six zeroed registers, then fiber_main as the return
// address, entered with the stack aligned as after a call; its own return address is null.
void start_context(Context& c, char* stack) {
  void** top = reinterpret_cast<void**>(stack + kStackBytes);
  for (int i = 1; i <= 8; ++i) top[-i] = nullptr;
  top[-2] = reinterpret_cast<void*>(fiber_main);
  c.sp = top - 8;
}
void switch_context(Context& from, Context& to) { cuda_sim_switch(&from.sp, to.sp); }
#endif

int take_stack() {
  if (n_free > 0) return free_stacks[--n_free];
  size_t page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) return -1;
  mprotect(p, page, PROT_NONE);  // the guard page
  stacks[n_stacks] = static_cast<char*>(p) + page;
  return n_stacks++;
}

// Suspends the current thread until the scheduler resumes it.
void wait(State state, int line) {
  Fiber& f = fibers[current];
  f.state = state;
  f.line = line;
  switch_context(f.context, scheduler);
}

// Leaves the current thread for good: once it exited, or to end the launch after format_error.
[[noreturn]] void leave() {
  switch_context(fibers[current].context, scheduler);
  __builtin_unreachable();
}

void release_barrier() {
  for (int t = 0; t < n_threads; ++t)
    if (fibers[t].state == State::at_barrier) fibers[t].state = State::ready;
  at_barrier = 0;
}

[[noreturn]] void fiber_main() {
  body(body_context);
  Fiber& f = fibers[current];
  f.state = State::exited;
  warps[current / 32].exited |= 1u << current % 32;
  free_stacks[n_free++] = f.stack;  // reused only once this fiber has switched away
  if (--live > 0 && at_barrier == live) release_barrier();
  leave();
}

// ---- barriers and warp operations ----

void syncthreads(int line) {
  if (at_barrier > 0 && line != barrier_line) {
    format_error("%s waits at __syncthreads() on line %d while other threads wait at the one on line %d",
                 thread_name(current).text, line, barrier_line);
    leave();
  }
  barrier_line = line;
  if (++at_barrier == live) return release_barrier();
  wait(State::at_barrier, line);
}

// The lane whose value `lane` gets, as PTX's shfl.sync computes it (segment width `width`).
unsigned source_lane(Op op, unsigned lane, unsigned arg, int width) {
  unsigned segment = 32 - width, b = arg & 31;
  unsigned min_lane = lane & segment, max_lane = min_lane | (31 & ~segment);
  switch (op) {
    case Op::shfl_idx: return min_lane | (b & ~segment);
    case Op::shfl_up: return int(lane - b) >= int(min_lane) ? lane - b : lane;
    case Op::shfl_down: return lane + b <= max_lane ? lane + b : lane;
    case Op::shfl_xor: return (lane ^ b) <= max_lane ? lane ^ b : lane;
    default: return lane;
  }
}

// Called by the last lane of `mask` to arrive: hands every lane its result and readies it.
void exchange(int base, unsigned mask) {
  for (unsigned m = mask; m; m &= m - 1) {
    unsigned lane = __builtin_ctz(m);
    Fiber& f = fibers[base + lane];
    unsigned source = source_lane(f.op, lane, f.arg, f.width);
    if (!(mask >> source & 1)) {
      format_error("%s on line %d: lane %u reads lane %u, outside the mask 0x%08x", kOpNames[int(f.op)],
                   f.line, lane, source, mask);
      leave();
    }
    f.result = fibers[base + source].value;
    if (base + int(lane) != current) f.state = State::ready;
  }
  warps[base / 32].waiting &= ~mask;
}

uint64_t warp_op(Op op, unsigned mask, uint64_t value, unsigned arg, int width, int line) {
  int lane = current % 32, base = current - lane;
  Warp& warp = warps[current / 32];
  const char* name = kOpNames[int(op)];
  unsigned present = n_threads - base >= 32 ? ~0u : (1u << (n_threads - base)) - 1;
  unsigned missing = mask & (warp.exited | ~present);
  if (!(mask >> lane & 1) || missing) {
    int named = missing ? __builtin_ctz(missing) : lane;
    format_error("%s on line %d: %s passes mask 0x%08x, %s lane %d%s", name, line,
                 thread_name(current).text, mask, missing ? "naming" : "leaving out its own", named,
                 !missing ? "" : warp.exited >> named & 1 ? ", which has exited" : ", which does not exist");
    leave();
  }
  if (width < 1 || width > 32 || (width & (width - 1))) {
    format_error("%s on line %d: width %d is not a power of two up to 32", name, line, width);
    leave();
  }
  Fiber& f = fibers[current];
  f.line = line;
  f.op = op;
  f.mask = mask;
  f.value = value;
  f.arg = arg;
  f.width = width;
  bool complete = ((warp.waiting | 1u << lane) & mask) == mask;
  for (unsigned m = mask; complete && m; m &= m - 1) {
    const Fiber& other = fibers[base + __builtin_ctz(m)];
    complete = other.op == op && other.mask == mask;
  }
  if (complete) {
    exchange(base, mask);
  } else {
    warp.waiting |= 1u << lane;
    wait(State::at_warp, line);
  }
  return f.result;
}

template <class T> T shuffle(Op op, unsigned mask, T value, unsigned arg, int width, int line) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffled values are at most 8 bytes");
  uint64_t bits = 0;
  memcpy(&bits, &value, sizeof value);
  bits = warp_op(op, mask, bits, arg, width, line);
  memcpy(&value, &bits, sizeof value);
  return value;
}

// ---- the scheduler ----

void describe_deadlock() {
  int counts[4] = {}, waiter = -1;
  for (int t = 0; t < n_threads; ++t) {
    counts[int(fibers[t].state)]++;
    if (waiter < 0 && fibers[t].state == State::at_warp) waiter = t;
  }
  int n = snprintf(error, sizeof error,
                   "deadlock: %d thread(s) wait at __syncthreads(), %d at warp operations, %d exited",
                   counts[int(State::at_barrier)], counts[int(State::at_warp)],
                   counts[int(State::exited)]);
  failed = true;
  if (waiter < 0) return;
  // Name a lane that the first thread waiting at a warp operation waits for.
  const Fiber& f = fibers[waiter];
  int base = waiter - waiter % 32;
  for (unsigned m = f.mask; m; m &= m - 1) {
    const Fiber& g = fibers[base + __builtin_ctz(m)];
    if (g.state == State::at_warp && g.op == f.op && g.mask == f.mask) continue;
    char which[96] = "has exited";
    if (g.state == State::at_barrier)
      snprintf(which, sizeof which, "waits at __syncthreads() (line %d)", g.line);
    if (g.state == State::at_warp)
      snprintf(which, sizeof which, "waits at %s (line %d, mask 0x%08x)", kOpNames[int(g.op)], g.line,
               g.mask);
    snprintf(error + n, sizeof error - n, "; %s waits at %s (line %d, mask 0x%08x) for lane %d, which %s",
             thread_name(waiter).text, kOpNames[int(f.op)], f.line, f.mask, __builtin_ctz(m), which);
    return;
  }
}

bool resume(int t) {
  Fiber& f = fibers[t];
  current = t;
  thread_idx = f.idx;
  if (f.stack < 0) {
    f.stack = take_stack();
    if (f.stack < 0) {
      format_error("out of memory for thread stacks");
      return false;
    }
    start_context(f.context, stacks[f.stack]);
  }
  switch_context(scheduler, f.context);
  return !failed;
}

bool run_block() {
  for (int t = 0; t < n_threads; ++t) {
    fibers[t].state = State::ready;
    fibers[t].stack = -1;
  }
  live = n_threads;
  at_barrier = 0;
  memset(warps, 0, sizeof warps);
  for (n_free = 0; n_free < n_stacks; ++n_free) free_stacks[n_free] = n_free;
  while (live > 0) {
    bool progressed = false;
    for (int t = 0; t < n_threads; ++t) {
      if (fibers[t].state != State::ready) continue;
      if (!resume(t)) return false;
      progressed = true;
    }
    if (!progressed) {
      describe_deadlock();
      return false;
    }
  }
  return true;
}

int run_grid(const unsigned* grid, const unsigned* block, void (*run)(void*), void* context) {
  failed = false;
  grid_dim = {grid[0], grid[1], grid[2]};
  block_dim = {block[0], block[1], block[2]};
  n_threads = block[0] * block[1] * block[2];
  if (n_threads < 1 || n_threads > kMaxThreads || grid[0] * grid[1] * grid[2] == 0) {
    format_error("bad launch: grid (%u,%u,%u), block (%u,%u,%u)", grid[0], grid[1], grid[2], block[0],
                 block[1], block[2]);
    return 1;
  }
  body = run;
  body_context = context;
  for (int t = 0; t < n_threads; ++t)
    fibers[t].idx = {t % block[0], t / block[0] % block[1], t / (block[0] * block[1])};
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        block_idx = {x, y, z};
        if (run_block()) continue;
        char message[sizeof error];
        snprintf(message, sizeof message, "block (%u,%u,%u): %s", x, y, z, error);
        memcpy(error, message, sizeof error);
        return 1;
      }
  return 0;
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

CUDA_SIM_EXPORT const char* astjit_sim_error() { return cuda_sim::error; }

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
