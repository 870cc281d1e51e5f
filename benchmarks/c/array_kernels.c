/* The array cases of ../array_run.py, written in plain C.
 *
 * array_run.py compiles this file twice: strictly (`-O3 -march=native`: IEEE
 * semantics, libm's scalar functions) and with `-ffast-math -fopenmp-simd`,
 * under which glibc's <math.h> declares its functions `simd` and gcc calls
 * libmvec's vector variants (`_ZGVdN4v_sin` ...) in the vectorized loop.
 *
 * Every case is `void <name>(const double *const *in, double *out, int64_t n)`;
 * `TIMED(name)` adds `double time_<name>(in, n, reps)`, which repeats
 * "allocate the result, compute it, free it" `reps` times and returns the
 * seconds per repetition (clock_gettime, so ctypes is outside the time). The
 * result is allocated per call, as NumPy, Numba, JAX and astjit return a new
 * array per call: both go through malloc, so both pay the same page faults
 * where glibc maps a large block afresh.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

volatile double sink;

#define TIMED(name)                                                         \
    double time_##name(const double *const *in, int64_t n, int64_t reps) { \
        double start = now();                                               \
        for (int64_t r = 0; r < reps; r++) {                                \
            double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double)); \
            name(in, out, n);                                               \
            sink = out[n / 2];                                              \
            free(out);                                                      \
        }                                                                   \
        return (now() - start) / (double)reps;                              \
    }

/* ---- the cases ----------------------------------------------------------- */

/* exp(-x*x) * sin(3x) + tanh(y) / (1 + x*x) */
void expression(const double *const *in, double *out, int64_t n) {
    const double *restrict x = in[0];
    const double *restrict y = in[1];
    double *restrict o = out;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        double xi = x[i];
        o[i] = exp(-xi * xi) * sin(3.0 * xi) + tanh(y[i]) / (1.0 + xi * xi);
    }
}
TIMED(expression)
