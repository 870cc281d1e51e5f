// cuda_sim_runtime.cpp: the cuda-sim target's scheduler, behind cuda_sim.h's entry points (the
// header says how a grid runs). simulator.py compiles it once per cache folder, with the modules'
// flags, into an object linked into every module: each loaded module has its own state.
#include "cuda_sim.h"

#include <cstdarg>
#include <cstdio>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__) && !defined(CUDA_SIM_UCONTEXT)
#define CUDA_SIM_UCONTEXT 1  // elsewhere, switch fibers with swapcontext (slower: a syscall each)
#endif
#ifdef CUDA_SIM_UCONTEXT
#include <ucontext.h>
#endif

namespace cuda_sim {

constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 64 * 1024;

uint3 thread_idx, block_idx;
dim3 block_dim, grid_dim;

enum class State : unsigned char { ready, at_barrier, at_warp, exited };
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

}  // namespace cuda_sim

CUDA_SIM_EXPORT const char* astjit_sim_error() { return cuda_sim::error; }
