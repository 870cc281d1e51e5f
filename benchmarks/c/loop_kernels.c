/* The element loops of ../boundscheck.py in plain C (no bounds checks), called through
 * ctypes once per sample call: the call costs well under 1% of a loop over 10^6 elements. */
#include <stdint.h>

double prefix_sum(const double *x, int64_t n, double *out) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += x[i];
        out[i] = acc;
    }
    return acc;
}

void matvec(const double *a, int64_t n, int64_t m, const double *x, double *y) {
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0;
        for (int64_t j = 0; j < m; j++)
            s += a[i * m + j] * x[j];
        y[i] = s;
    }
}

void histogram(const double *x, int64_t n, int64_t *counts, int64_t nbins) {
    for (int64_t i = 0; i < n; i++)
        counts[(int64_t)(x[i] * (double)nbins)] += 1;
}

void stencil(const double *x, int64_t n, double *y) {
    for (int64_t i = 1; i < n - 1; i++)
        y[i] = x[i - 1] - 2.0 * x[i] + x[i + 1];
}
