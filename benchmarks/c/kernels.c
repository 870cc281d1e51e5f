/* The benchmark kernels of ../kernels.py, written in plain C.
 *
 * run.py compiles this file into a shared library and calls the `time_<name>`
 * entry points through ctypes. Each entry runs its kernel `reps` times in a
 * loop inside C, stores the last result in `*out` and returns the elapsed
 * wall time in seconds, measured with clock_gettime: the ctypes call overhead
 * is outside the measurement. Arguments are re-read through volatile copies
 * on every repetition and results written to a volatile sink, so the compiler
 * can neither hoist a kernel out of the loop nor drop it.
 */
#include <stdint.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the kernels ------------------------------------------------------- */

static double pi_sum(int64_t n) {
    double s = 0.0;
    for (int64_t k = 1; k <= n; k++)
        s += 1.0 / (double)(k * k);
    return s;
}

static int64_t escape(double cr, double ci, int64_t max_iter) {
    double zr = 0.0, zi = 0.0;
    int64_t n = 0;
    while (n < max_iter && zr * zr + zi * zi <= 4.0) {
        double next_zr = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = next_zr;
        n++;
    }
    return n;
}

static int64_t mandel_grid(int64_t w, int64_t h, int64_t max_iter) {
    int64_t total = 0;
    for (int64_t y = 0; y < h; y++) {
        double ci = -1.2 + 2.4 * (double)y / (double)h;
        for (int64_t x = 0; x < w; x++) {
            double cr = -2.0 + 3.0 * (double)x / (double)w;
            total += escape(cr, ci, max_iter);
        }
    }
    return total;
}

static int64_t fib(int64_t n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static double newton_sqrt(double x) {
    double y = x > 1.0 ? x : 1.0;
    while (__builtin_fabs(y * y - x) > 1e-12 * x)
        y = 0.5 * (y + x / y);
    return y;
}

static double newton_sum(int64_t n) {
    double s = 0.0;
    for (int64_t i = 1; i <= n; i++)
        s += newton_sqrt((double)i);
    return s;
}

static int64_t collatz(int64_t limit) {
    int64_t total = 0;
    for (int64_t start = 1; start < limit; start++) {
        int64_t n = start;
        while (n != 1) {
            n = (n % 2 == 0) ? n / 2 : 3 * n + 1;
            total++;
        }
    }
    return total;
}

/* The dispatch probe: kept out of line so each repetition is a real call. */
__attribute__((noinline, noipa)) static double add_one(double x) {
    return x + 1;
}

/* ---- the timed entry points -------------------------------------------- */

double time_pi_sum(int64_t n, int64_t reps, double *out) {
    volatile int64_t vn = n;
    volatile double sink = 0.0;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++) sink = pi_sum(vn);
    double t1 = now();
    *out = sink;
    return t1 - t0;
}

double time_mandelbrot(int64_t w, int64_t h, int64_t max_iter, int64_t reps, int64_t *out) {
    volatile int64_t vw = w, vh = h, vmax = max_iter;
    volatile int64_t sink = 0;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++) sink = mandel_grid(vw, vh, vmax);
    double t1 = now();
    *out = sink;
    return t1 - t0;
}

double time_fib(int64_t n, int64_t reps, int64_t *out) {
    volatile int64_t vn = n;
    volatile int64_t sink = 0;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++) sink = fib(vn);
    double t1 = now();
    *out = sink;
    return t1 - t0;
}

double time_newton_sqrt(int64_t n, int64_t reps, double *out) {
    volatile int64_t vn = n;
    volatile double sink = 0.0;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++) sink = newton_sum(vn);
    double t1 = now();
    *out = sink;
    return t1 - t0;
}

double time_collatz(int64_t limit, int64_t reps, int64_t *out) {
    volatile int64_t vlimit = limit;
    volatile int64_t sink = 0;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++) sink = collatz(vlimit);
    double t1 = now();
    *out = sink;
    return t1 - t0;
}

double time_dispatch(double x, int64_t reps, double *out) {
    volatile double vx = x;
    volatile double sink = 0.0;
    double t0 = now();
    for (int64_t r = 0; r < reps; r++) sink = add_one(vx);
    double t1 = now();
    *out = sink;
    return t1 - t0;
}
