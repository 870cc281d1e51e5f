"""The device functions every generated CUDA source starts with: NumPy's semantics where
C's differ (floor division and modulo, integer powers, maximum/minimum with NaN,
float-to-int conversion), which the ops' `CExpr` lowerings call (ir/ops/table.py).

Each mirrors the CPU backend's NumPy-semantics routine of the same op
(backend/llvm/fused.py, divmod_power.py), so the two backends agree bit for bit on
these ops. A kernel that can fail (an integer power with a negative exponent) records
the first error code in `astjit_error[0]`; the host raises it after the launch.

Complex numbers (complexes.h, C++ kept in a file of its own) follow where kernels compute
with them (`prelude_for`): other sources, and NVRTC's and the simulator's caches of them,
stay as they were.
"""
import functools
from pathlib import Path

COMPLEX_TYPES = ("astjit_c64", "astjit_c128")
"""The C types of complex64 and complex128 (complexes.h)."""

PRELUDE = r"""// astjit: NumPy's semantics where C's differ
template <typename T> __device__ __forceinline__ T astjit_maximum(T a, T b) {
    return (a > b || a != a) ? a : b;  // NaN if a is NaN; b on a tie, as np.maximum
}
template <typename T> __device__ __forceinline__ T astjit_minimum(T a, T b) {
    return (a < b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T astjit_reduce_max(T a, T b) {
    return (a != a || a > b) ? a : ((b != b) ? b : (a >= b ? a : b));  // NaN wins
}
template <typename T> __device__ __forceinline__ T astjit_reduce_min(T a, T b) {
    return (a != a || a < b) ? a : ((b != b) ? b : (a <= b ? a : b));
}
template <typename T> __device__ __forceinline__ T astjit_floordiv_float(T a, T b) {
    if (b == (T)0) return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != (T)0 && ((b < (T)0) != (mod < (T)0))) div -= (T)1;
    if (div != (T)0) {
        T whole = floor(div);
        return (div - whole > (T)0.5) ? whole + (T)1 : whole;
    }
    return copysign((T)0, a / b);
}
template <typename T> __device__ __forceinline__ T astjit_mod_float(T a, T b) {
    if (b == (T)0) return fmod(a, b);
    T mod = fmod(a, b);
    if (mod != (T)0) {
        if ((b < (T)0) != (mod < (T)0)) mod += b;
        return mod;
    }
    return copysign((T)0, b);
}
template <typename T> __device__ __forceinline__ T astjit_floordiv_int(T a, T b) {
    if (b == 0) return 0;
    if (b == -1) return (T)(0ULL - (unsigned long long)a);
    T q = a / b, r = a % b;
    return (r != 0 && ((r ^ b) < 0)) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T astjit_fmod_int(T a, T b) {
    if (b == 0 || ((T)-1 < (T)0 && b == (T)-1)) return 0;
    return a % b;
}
template <typename T> __device__ __forceinline__ T astjit_mod_int(T a, T b) {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    return (r != 0 && ((r ^ b) < 0)) ? r + b : r;
}
template <typename T> __device__ __forceinline__ T astjit_abs_int(T a) {
    return a < 0 ? (T)(0ULL - (unsigned long long)a) : a;
}
// NumPy's shifts (npy_lshift, npy_rshift): a count read as unsigned at or past the width
// gives 0, or for >> of a negative signed value -1.
template <typename T> __device__ __forceinline__ T astjit_lshift(T a, T b) {
    return (unsigned long long)b < sizeof(T) * 8 ? (T)((unsigned long long)a << b) : (T)0;
}
template <typename T> __device__ __forceinline__ T astjit_rshift(T a, T b) {
    if ((unsigned long long)b < sizeof(T) * 8) return (T)(a >> b);
    return a < (T)0 ? (T)-1 : (T)0;
}
// NumPy's float power: sqrt where the exponent is one number for every element and is 0.5
// (NumPy's loop's fast path: -0.0 ** 0.5 is -0.0, -inf ** 0.5 NaN), else C pow.
template <typename T> __device__ __forceinline__ T astjit_pow_float(T a, T b, int uniform) {
    return (uniform && b == (T)0.5) ? sqrt(a) : pow(a, b);
}
__device__ __forceinline__ long long astjit_pow_int(long long a, long long b, int* error) {
    if (b < 0) {
        atomicCAS(error, 0, 1);  // NumPy: integers to negative integer powers
        return 0;
    }
    unsigned long long result = 1, base = (unsigned long long)a;
    for (unsigned long long e = (unsigned long long)b; e; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
    }
    return (long long)result;
}
template <typename T> __device__ __forceinline__ T astjit_shfl_down(T v, int delta) {
    return __shfl_down_sync(0xffffffffu, v, delta);
}
__device__ __forceinline__ bool astjit_shfl_down(bool v, int delta) {
    return __shfl_down_sync(0xffffffffu, (int)v, delta) != 0;  // CUDA shuffles no bools
}
template <typename T> __device__ __forceinline__ long long astjit_float_to_int(T x) {
    // x86's conversion, as NumPy's on the CPU: NaN and out-of-range give INT64_MIN.
    if (!(x >= (T)-9.2233720368547758e18 && x < (T)9.2233720368547758e18))
        return (-9223372036854775807LL - 1);
    return (long long)x;
}
template <typename To> struct astjit_to {  // NumPy's conversions (astype)
    template <typename From> static __device__ __forceinline__ To from(From x) { return (To)x; }
};
template <> struct astjit_to<bool> {
    template <typename From> static __device__ __forceinline__ bool from(From x) { return x != (From)0; }
};
template <> struct astjit_to<long long> {
    static __device__ __forceinline__ long long from(double x) { return astjit_float_to_int(x); }
    static __device__ __forceinline__ long long from(float x) { return astjit_float_to_int(x); }
    static __device__ __forceinline__ long long from(long long x) { return x; }
    static __device__ __forceinline__ long long from(int x) { return x; }
    static __device__ __forceinline__ long long from(bool x) { return x; }
};
"""

ERROR_MESSAGES = {1: ("ValueError", "Integers to negative integer powers are not allowed.")}
"""The codes kernels record in `astjit_error`, and the exception each one raises."""



CHECKS = r"""// astjit: where Python's semantics raise (scalar_functions.raise_check's conditions)
template <typename T> __device__ __forceinline__ bool astjit_is_nan(T x) { return x != x; }
template <typename T> __device__ __forceinline__ bool astjit_is_finite(T x) { return x - x == x - x; }
"""


def prelude_for(kernels: str) -> str:
    """The device functions to put before `kernels` (C source): PRELUDE, the complex
    numbers' where a kernel computes with them, CHECKS where it tests Python's errors."""
    complexes = _complexes() if any(name in kernels for name in COMPLEX_TYPES) else ""
    checks = CHECKS if "astjit_is_nan(" in kernels or "astjit_is_finite(" in kernels else ""
    return PRELUDE + complexes + checks


@functools.cache
def _complexes() -> str:
    return Path(__file__).with_name("complexes.h").read_text()
