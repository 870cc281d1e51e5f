/* The array cases of ../array_run.py, written in plain C.
 *
 * array_run.py compiles this file twice: strictly (`-O3 -march=native`: IEEE
 * semantics, libm's scalar functions, sums added in order) and with
 * `-ffast-math -fopenmp-simd`, under which glibc's <math.h> declares its
 * functions `simd` and gcc calls libmvec's vector variants (`_ZGVdN4v_sin` ...)
 * in the vectorized loop, and the `omp simd reduction`s may reassociate.
 *
 * Every input `in[k]` is a C-contiguous float64 array shaped like the first:
 * `rows` x `cols` (a 1-D input of n elements is 1 x n). A case is either
 *
 *   void   <name>(const double *const *in, int64_t rows, int64_t cols, double *out)
 *          an array result of the inputs' shape, or
 *   double <name>(const double *const *in, int64_t rows, int64_t cols)
 *          a scalar result.
 *
 * `TIMED(name)` / `TIMED_SCALAR(name)` add
 * `double time_<name>(in, rows, cols, reps)`, which repeats the case `reps`
 * times and returns the seconds per repetition (clock_gettime, so ctypes is
 * outside the time). An array case allocates its result on every repetition,
 * as NumPy, Numba, JAX and astjit return a new array per call: all go through
 * malloc, so all pay the same page faults where glibc maps a large block afresh.
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

#define TIMED(name)                                                                       \
    double time_##name(const double *const *in, int64_t rows, int64_t cols, int64_t reps) { \
        int64_t n = rows * cols;                                                          \
        double start = now();                                                             \
        for (int64_t r = 0; r < reps; r++) {                                              \
            double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));               \
            name(in, rows, cols, out);                                                    \
            sink = out[n / 2];                                                            \
            free(out);                                                                    \
        }                                                                                 \
        return (now() - start) / (double)reps;                                            \
    }

#define TIMED_SCALAR(name)                                                                \
    double time_##name(const double *const *in, int64_t rows, int64_t cols, int64_t reps) { \
        double start = now();                                                             \
        for (int64_t r = 0; r < reps; r++)                                                \
            sink = name(in, rows, cols);                                                  \
        return (now() - start) / (double)reps;                                            \
    }

/* ---- the cases ----------------------------------------------------------- */

/* exp(-x*x) * sin(3x) + tanh(y) / (1 + x*x) */
void expression(const double *const *in, int64_t rows, int64_t cols, double *out) {
    const double *restrict x = in[0];
    const double *restrict y = in[1];
    double *restrict o = out;
    int64_t n = rows * cols;
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        double xi = x[i];
        o[i] = exp(-xi * xi) * sin(3.0 * xi) + tanh(y[i]) / (1.0 + xi * xi);
    }
}
TIMED(expression)

/* np.sum(x * x): strict C adds in order (one dependent add per element). */
double sum_squares(const double *const *in, int64_t rows, int64_t cols) {
    const double *restrict x = in[0];
    int64_t n = rows * cols;
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}
TIMED_SCALAR(sum_squares)

/* e = exp(x - max(x, axis=1)); e / sum(e, axis=1), row by row. */
void softmax(const double *const *in, int64_t rows, int64_t cols, double *out) {
    for (int64_t r = 0; r < rows; r++) {
        const double *restrict x = in[0] + r * cols;
        double *restrict o = out + r * cols;
        double m = x[0];
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < cols; j++)
            m = x[j] > m ? x[j] : m;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = 0; j < cols; j++) {
            o[j] = exp(x[j] - m);
            s += o[j];
        }
#pragma omp simd
        for (int64_t j = 0; j < cols; j++)
            o[j] = o[j] / s;
    }
}
TIMED(softmax)
