// astjit: complex numbers as NumPy computes them (prelude.py adds this to a source that uses them).
//
// A complex is a pair of its parts, aligned as CUDA's cuDoubleComplex so that one load reads both;
// a complex64 array is NumPy's and CuPy's layout, real part first. Arithmetic mirrors the CPU
// backend's (backend/llvm/complexes.py): `*` schoolbook, `/` Smith's method (NumPy's loops), |z|
// NumPy 2's formula (a fused multiply-add, as NumPy's SIMD loop on a CPU with FMA), np.power
// npymath's npy_cpow, np.sign NumPy 2's. The elementary functions are the C library's on the CPU (glibc's, which NumPy
// calls); a GPU has none, so here: exp, log, sqrt as glibc computes them, the hyperbolic functions
// on the parts, the inverse ones by Kahan's formulas ("Branch cuts for complex elementary
// functions", 1987: no overflow, the signed zeros on the cuts), the trigonometric ones by the
// identities C99 defines them with (sin z = -i sinh(iz)); infinities and NaNs as glibc (C99 Annex
// G). docs/gpu.md says how close they come.
template <typename F> struct astjit_complex;
template <> struct __align__(8) astjit_complex<float> { float re, im; };
template <> struct __align__(16) astjit_complex<double> { double re, im; };
typedef astjit_complex<float> astjit_c64;
typedef astjit_complex<double> astjit_c128;

template <typename F> __device__ __forceinline__ F astjit_inf();
template <> __device__ __forceinline__ float astjit_inf<float>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double astjit_inf<double>() {
    return __longlong_as_double(0x7ff0000000000000LL);
}
template <typename F> __device__ __forceinline__ F astjit_nan() { return astjit_inf<F>() - astjit_inf<F>(); }
template <typename F> struct astjit_limits;  // where a formula's intermediate would over- or underflow
template <> struct astjit_limits<float> {
    static __device__ __forceinline__ float exp() { return 88.0f; }         // exp(x) finite below
    static __device__ __forceinline__ float sum() { return 0x1p125f; }      // |x| + |z| finite below
    static __device__ __forceinline__ float square() { return 0x1p60f; }    // x^2 + y^2 finite below
    static __device__ __forceinline__ float tiny() { return 0x1p-125f; }    // twice the least normal
    static __device__ __forceinline__ int half_digits() { return 12; }      // (mantissa bits + 1) / 2
    static __device__ __forceinline__ float root_eps() { return 0x1p-12f; } // 1 + x^2 is 1 below
};
template <> struct astjit_limits<double> {
    static __device__ __forceinline__ double exp() { return 709.0; }
    static __device__ __forceinline__ double sum() { return 0x1p1021; }
    static __device__ __forceinline__ double square() { return 0x1p508; }
    static __device__ __forceinline__ double tiny() { return 0x1p-1021; }
    static __device__ __forceinline__ int half_digits() { return 27; }
    static __device__ __forceinline__ double root_eps() { return 0x1p-26; }
};

// ---- arithmetic ----
template <typename F> __device__ __forceinline__ astjit_complex<F> operator+(astjit_complex<F> a, astjit_complex<F> b) {
    return {a.re + b.re, a.im + b.im};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> operator-(astjit_complex<F> a, astjit_complex<F> b) {
    return {a.re - b.re, a.im - b.im};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> operator-(astjit_complex<F> a) {
    return {-a.re, -a.im};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> operator*(astjit_complex<F> a, astjit_complex<F> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> operator/(astjit_complex<F> a, astjit_complex<F> b) {
    // Smith's: scale by the divisor's larger part; a zero divisor divides each part by 0
    const F abs_r = fabs(b.re), abs_i = fabs(b.im);
    if (abs_r == (F)0 && abs_i == (F)0) return {a.re / abs_r, a.im / abs_i};
    if (abs_r >= abs_i) {
        const F rat = b.im / b.re, scl = (F)1 / (b.re + b.im * rat);
        return {(a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl};
    }
    const F rat = b.re / b.im, scl = (F)1 / (b.im + b.re * rat);
    return {(a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> operator/(astjit_complex<F> a, F n) {
    return {a.re / n, a.im / n};  // np.mean's division by the count, part by part
}
template <typename F> __device__ __forceinline__ bool operator==(astjit_complex<F> a, astjit_complex<F> b) {
    return a.re == b.re && a.im == b.im;
}
template <typename F> __device__ __forceinline__ bool operator!=(astjit_complex<F> a, astjit_complex<F> b) {
    return a.re != b.re || a.im != b.im;
}
template <typename F> __device__ __forceinline__ astjit_complex<F> astjit_shfl_down(astjit_complex<F> v, int delta) {
    return {__shfl_down_sync(0xffffffffu, v.re, delta), __shfl_down_sync(0xffffffffu, v.im, delta)};
}

// ---- conversions (astype): a real x is x + 0i; a complex to a real keeps its real part, as NumPy's ----
template <typename F> struct astjit_to<astjit_complex<F> > {
    template <typename From> static __device__ __forceinline__ astjit_complex<F> from(From x) {
        return {(F)x, (F)0};
    }
};
template <typename To> struct astjit_complex_to {
    template <typename F> static __device__ __forceinline__ To from(astjit_complex<F> z) {
        return astjit_to<To>::from(z.re);
    }
};
template <typename G> struct astjit_complex_to<astjit_complex<G> > {
    template <typename F> static __device__ __forceinline__ astjit_complex<G> from(astjit_complex<F> z) {
        return {(G)z.re, (G)z.im};
    }
};
template <> struct astjit_complex_to<bool> {
    template <typename F> static __device__ __forceinline__ bool from(astjit_complex<F> z) {
        return z.re != (F)0 || z.im != (F)0;
    }
};

// ---- parts, np.abs, np.angle, predicates ----
template <typename F> __device__ __forceinline__ F astjit_real(astjit_complex<F> z) { return z.re; }
template <typename F> __device__ __forceinline__ F astjit_imag(astjit_complex<F> z) { return z.im; }
template <typename F> __device__ __forceinline__ astjit_complex<F> astjit_conj(astjit_complex<F> z) {
    return {z.re, -z.im};
}
template <typename F> __device__ __forceinline__ F astjit_angle(astjit_complex<F> z) { return atan2(z.im, z.re); }
template <typename F> __device__ __forceinline__ F astjit_cabs(astjit_complex<F> z) {
    const F inf = astjit_inf<F>();
    F re = fabs(z.re), im = fabs(z.im);
    if (re == inf) im = inf;  // an infinite part gives inf, a NaN beside it too
    if (im == inf) re = inf;
    const bool re_number = re == re, im_number = im == im;
    if (!re_number) im = astjit_nan<F>();
    if (!im_number) re = astjit_nan<F>();
    const F larger = re > im ? re : im, smaller = im < re ? im : re;
    const F ratio = (larger == (F)0 || smaller == inf) ? (F)0 : smaller / larger;
    return sqrt(fma(ratio, ratio, (F)1)) * larger;
}
template <typename F> __device__ astjit_complex<F> astjit_csign(astjit_complex<F> z) {
    // NumPy 2's: the parts over hypot of them; of an infinite magnitude +-1 along an infinite real
    // part (NaN where both parts are infinite), else 0 +- 1i; of a NaN one NaN; of a zero one 0
    const F magnitude = hypot(z.re, z.im), nan = astjit_nan<F>();
    if (isnan(magnitude) || (isinf(z.re) && isinf(z.im))) return {nan, nan};
    if (isinf(magnitude)) {
        if (isinf(z.re)) return {z.re > (F)0 ? (F)1 : (F)-1, (F)0};
        return {(F)0, z.im > (F)0 ? (F)1 : (F)-1};
    }
    if (magnitude == (F)0) return {(F)0, (F)0};
    return {z.re / magnitude, z.im / magnitude};
}
// ---- a Python complex's abs, / and ** (vectorize's device functions): CPython's complexobject.c ----
template <typename F> __device__ astjit_complex<F> astjit_py_cdiv(astjit_complex<F> a, astjit_complex<F> b) {
    // _Py_c_quot: divide through by b's part of larger magnitude; a NaN part of b gives NaN,
    // NaN; a zero b 0 (the caller raises ZeroDivisionError: astjit_cis_zero)
    const F abs_r = fabs(b.re), abs_i = fabs(b.im);
    if (abs_r >= abs_i) {
        if (abs_r == (F)0) return {(F)0, (F)0};
        const F ratio = b.im / b.re, denom = b.re + b.im * ratio;
        return {(a.re + a.im * ratio) / denom, (a.im - a.re * ratio) / denom};
    }
    if (abs_i >= abs_r) {
        const F ratio = b.re / b.im, denom = b.re * ratio + b.im;
        return {(a.re * ratio + a.im) / denom, (a.im * ratio - a.re) / denom};
    }
    return {astjit_nan<F>(), astjit_nan<F>()};
}
template <typename F> __device__ __forceinline__ F astjit_py_cabs(astjit_complex<F> z) {
    // _Py_c_abs: an infinite part gives inf, else a NaN part NaN, else hypot (the caller
    // raises OverflowError where finite parts overflowed it)
    if (isinf(z.re) || isinf(z.im)) return astjit_inf<F>();
    if (isnan(z.re) || isnan(z.im)) return astjit_nan<F>();
    return hypot(z.re, z.im);
}
template <typename F> __device__ __forceinline__ bool astjit_cis_zero(astjit_complex<F> z) {
    return z.re == (F)0 && z.im == (F)0;
}
template <typename F> __device__ astjit_complex<F> astjit_py_cpow(astjit_complex<F> a, astjit_complex<F> b,
                                                 int* astjit_error) {
    // complex_pow: an exponent with no imaginary part and an integral real part of magnitude <= 100
    // multiplies (c_powi: square and multiply from 1 + 0j, every product made; 1 / that for a
    // negative one), any other takes _Py_c_pow's polar form. Records an error (the CPU's rerun
    // raises CPython's) where CPython's errno ends EDOM (0 to a negative or complex power, a
    // negative power's product 0, an infinite angle: ZeroDivisionError) or a part is infinite
    // (OverflowError)
    const astjit_complex<F> one = {(F)1, (F)0};
    astjit_complex<F> r = one;
    bool edom;
    if (b.im == (F)0 && b.re == floor(b.re) && fabs(b.re) <= (F)100) {
        const long long n = (long long)b.re, m = n < 0 ? -n : n;
        astjit_complex<F> p = a;
        for (long long mask = 1; m >= mask; mask <<= 1) {
            if (m & mask) r = r * p;
            p = p * p;
        }
        edom = n < 0 && astjit_cis_zero(r);
        if (n < 0) r = astjit_py_cdiv(one, r);
    } else if (astjit_cis_zero(b)) {
        edom = false;
    } else if (astjit_cis_zero(a)) {
        r = {(F)0, (F)0};
        edom = b.im != (F)0 || b.re < (F)0;
    } else {
        const F vabs = hypot(a.re, a.im), at = atan2(a.im, a.re);
        F length = pow(vabs, b.re), phase = at * b.re;
        if (b.im != (F)0) {
            length /= exp(at * b.im);
            phase += b.im * log(vabs);
        }
        r = {length * cos(phase), length * sin(phase)};
        edom = isinf(phase);  // cos and sin of an infinity set errno to EDOM
    }
    if (edom || isinf(r.re) || isinf(r.im)) astjit_error[0] = 1;
    return r;
}
template <typename F> __device__ __forceinline__ bool astjit_cisnan(astjit_complex<F> z) {
    return isnan(z.re) || isnan(z.im);
}
template <typename F> __device__ __forceinline__ bool astjit_cisinf(astjit_complex<F> z) {
    return isinf(z.re) || isinf(z.im);
}
template <typename F> __device__ __forceinline__ bool astjit_cisfinite(astjit_complex<F> z) {
    return isfinite(z.re) && isfinite(z.im);
}

// ---- exp, log, sqrt ----
template <typename F> __device__ astjit_complex<F> astjit_cexp(astjit_complex<F> z) {
    if (z.im == (F)0) return {exp(z.re), z.im};  // exp(x + 0i) = exp(x) + 0i, NaN x too
    if (!isfinite(z.im)) {
        if (z.re == -astjit_inf<F>()) return {(F)0, copysign((F)0, z.im)};
        if (z.re == astjit_inf<F>()) return {z.re, astjit_nan<F>()};
        return {astjit_nan<F>(), astjit_nan<F>()};
    }
    const F c = cos(z.im), s = sin(z.im);
    if (z.re > astjit_limits<F>::exp()) {  // exp(x) overflows where exp(x) cos(y) may not
        const F half = exp(z.re / (F)2);
        return {c * half * half, s * half * half};
    }
    const F e = exp(z.re);
    return {e * c, e * s};
}
template <typename F> __device__ __forceinline__ void astjit_two_sum(F& sum, F& error, F term) {
    const F s = sum + term, back = s - term;  // Knuth's: s + the rounding error is sum + term
    error += (sum - back) + (term - (s - back));
    sum = s;
}
template <typename F> __device__ F astjit_norm_minus_one(F x, F y) {
    // x^2 + y^2 - 1 without cancellation near the unit circle: exact squares (fma), a compensated sum
    const F xx = x * x, yy = y * y;
    F sum = (F)-1, error = (F)0;
    astjit_two_sum(sum, error, xx);
    astjit_two_sum(sum, error, yy);
    astjit_two_sum(sum, error, fma(x, x, -xx));
    astjit_two_sum(sum, error, fma(y, y, -yy));
    return sum + error;
}
template <typename F> __device__ astjit_complex<F> astjit_clog(astjit_complex<F> z) {
    const F larger = fmax(fabs(z.re), fabs(z.im));
    const F angle = atan2(z.im, z.re);
    if (larger >= (F)0.5 && larger < (F)2)  // |z| near 1: log|z| = log1p(|z|^2 - 1) / 2
        return {log1p(astjit_norm_minus_one(z.re, z.im)) / (F)2, angle};
    return {log(hypot(z.re, z.im)), angle};  // log 0 = -inf; hypot(inf, NaN) = inf
}
template <typename F> __device__ astjit_complex<F> astjit_csqrt(astjit_complex<F> z) {
    // glibc's: 2 Re Im = Im z gives the smaller part without cancellation in |z| -+ Re z
    const F x = z.re, y = z.im, inf = astjit_inf<F>();
    if (isinf(y)) return {inf, y};
    if (isnan(x)) return {x, astjit_nan<F>()};
    if (isinf(x)) {
        if (x > (F)0) return {x, isnan(y) ? y : copysign((F)0, y)};
        return {isnan(y) ? y : (F)0, copysign(inf, y)};  // NaN y: NaN, +-inf i
    }
    if (y == (F)0) {
        if (x < (F)0) return {(F)0, copysign(sqrt(-x), y)};
        return {fabs(sqrt(x)), copysign((F)0, y)};
    }
    if (x == (F)0) {
        const F r = fabs(y) >= astjit_limits<F>::tiny() ? sqrt((F)0.5 * fabs(y))
                                                        : (F)0.5 * sqrt((F)2 * fabs(y));
        return {r, copysign(r, y)};
    }
    int scale = 0;  // |z| + |x| would overflow, or the parts lose digits as subnormals: scaled by 4^k
    F sx = x, sy = y;
    if (fabs(x) > astjit_limits<F>::sum() || fabs(y) > astjit_limits<F>::sum()) {
        scale = 1;
        sx = x * (F)0.25;
        sy = y * (F)0.25;
    } else if (fabs(x) < astjit_limits<F>::tiny() && fabs(y) < astjit_limits<F>::tiny()) {
        scale = -astjit_limits<F>::half_digits();
        sx = ldexp(x, -2 * scale);
        sy = ldexp(y, -2 * scale);
    }
    const F d = hypot(sx, sy);
    F r, s;
    if (sx > (F)0) {
        r = sqrt((F)0.5 * (d + sx));
        s = (F)0.5 * (sy / r);
    } else {
        s = sqrt((F)0.5 * (d - sx));
        r = fabs((F)0.5 * (sy / s));
    }
    return {ldexp(r, scale), copysign(ldexp(s, scale), y)};
}

// ---- hyperbolic and trigonometric functions: sin z = -i sinh(iz), cos z = cosh(iz) ----
template <typename F> __device__ __forceinline__ astjit_complex<F> astjit_times_i(astjit_complex<F> z) {
    return {-z.im, z.re};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> astjit_times_minus_i(astjit_complex<F> z) {
    return {z.im, -z.re};
}
template <typename F> __device__ __forceinline__ astjit_complex<F> astjit_exp_half(F x, F c, F s) {
    // e^|x| / 2 times (c, s), where e^|x| overflows but the products may not
    const F half = exp(fabs(x) / (F)2);
    return {c / (F)2 * half * half, s / (F)2 * half * half};
}
template <typename F> __device__ astjit_complex<F> astjit_csinh(astjit_complex<F> z) {
    if (z.im == (F)0) return {sinh(z.re), z.im};
    if (!isfinite(z.im) && z.re == (F)0) return {z.re, z.im - z.im};
    if (!isfinite(z.im) && isinf(z.re)) return {astjit_inf<F>(), z.im - z.im};
    if (fabs(z.re) > astjit_limits<F>::exp() && isfinite(z.re))  // sinh x ~ cosh x ~ sign(x) e^|x| / 2
        return astjit_exp_half(z.re, signbit(z.re) ? -cos(z.im) : cos(z.im), sin(z.im));
    return {sinh(z.re) * cos(z.im), cosh(z.re) * sin(z.im)};
}
template <typename F> __device__ astjit_complex<F> astjit_ccosh(astjit_complex<F> z) {
    if (z.im == (F)0)  // sinh(x) 0, but no NaN of an infinite x, no sign of a NaN's
        return {cosh(z.re), isnan(z.re) ? z.im : copysign((F)0, z.re) * z.im};
    if (!isfinite(z.im) && z.re == (F)0) return {z.im - z.im, (F)0};
    if (!isfinite(z.im) && isinf(z.re)) return {astjit_inf<F>(), z.im - z.im};
    if (fabs(z.re) > astjit_limits<F>::exp() && isfinite(z.re))
        return astjit_exp_half(z.re, cos(z.im), signbit(z.re) ? -sin(z.im) : sin(z.im));
    return {cosh(z.re) * cos(z.im), sinh(z.re) * sin(z.im)};
}
template <typename F> __device__ astjit_complex<F> astjit_ctanh(astjit_complex<F> z) {
    const F x = z.re, y = z.im;
    if (y == (F)0) return {tanh(x), y};
    if (!isfinite(y)) {
        if (x == (F)0) return {x, y - y};
        if (isinf(x)) return {copysign((F)1, x), copysign((F)0, y)};
    }
    if (fabs(x) > astjit_limits<F>::exp() / (F)2) {  // sinh^2 overflows: tanh is +-1 to the last bit
        const F e = exp((F)-2 * fabs(x));
        return {copysign((F)1, x), (F)4 * sin(y) * cos(y) * e};
    }
    const F sh = sinh(x), ch = cosh(x), s = sin(y), c = cos(y);
    const F den = sh * sh + c * c;
    return {sh * ch / den, s * c / den};
}
template <typename F> __device__ astjit_complex<F> astjit_csin(astjit_complex<F> z) {
    if (isinf(z.im) && !isfinite(z.re)) return {z.re - z.re, astjit_inf<F>()};  // glibc's choice of sign
    return astjit_times_minus_i(astjit_csinh(astjit_times_i(z)));
}
template <typename F> __device__ astjit_complex<F> astjit_ccos(astjit_complex<F> z) {
    return astjit_ccosh(astjit_times_i(z));
}
template <typename F> __device__ astjit_complex<F> astjit_ctan(astjit_complex<F> z) {
    return astjit_times_minus_i(astjit_ctanh(astjit_times_i(z)));
}

// ---- inverse functions: Kahan's on finite operands, glibc's (Annex G's) values on the others ----
template <typename F> __device__ __forceinline__ F astjit_half_pi() { return (F)1.5707963267948966; }
template <typename F> __device__ __forceinline__ F astjit_quarter_pi() { return (F)0.7853981633974483; }

template <typename F> __device__ astjit_complex<F> astjit_kahan_asin(astjit_complex<F> z) {
    const astjit_complex<F> a = astjit_csqrt<F>({(F)1 - z.re, -z.im});  // sqrt(1 - z)
    const astjit_complex<F> b = astjit_csqrt<F>({(F)1 + z.re, z.im});   // sqrt(1 + z)
    return {atan2(z.re, a.re * b.re - a.im * b.im), asinh(a.re * b.im - a.im * b.re)};
}
template <typename F> __device__ astjit_complex<F> astjit_casinh(astjit_complex<F> z) {
    const F x = z.re, y = z.im;
    if (isinf(y))
        return {copysign(astjit_inf<F>(), x),
                isnan(x) ? x : copysign(isfinite(x) ? astjit_half_pi<F>() : astjit_quarter_pi<F>(), y)};
    if (!isfinite(x)) {
        const bool zero = (isinf(x) && isfinite(y)) || (isnan(x) && y == (F)0);
        return {x, zero ? copysign((F)0, y) : astjit_nan<F>()};
    }
    if (isnan(y)) return {y, y};
    return astjit_times_minus_i(astjit_kahan_asin(astjit_times_i(z)));  // asinh z = -i asin(iz)
}
template <typename F> __device__ astjit_complex<F> astjit_casin(astjit_complex<F> z) {
    return astjit_times_minus_i(astjit_casinh(astjit_times_i(z)));
}
template <typename F> __device__ astjit_complex<F> astjit_cacos(astjit_complex<F> z) {
    if (!isfinite(z.re) || !isfinite(z.im)) {  // pi/2 - asin z
        const astjit_complex<F> w = astjit_casin(z);
        return {astjit_half_pi<F>() - w.re, -w.im};
    }
    const astjit_complex<F> a = astjit_csqrt<F>({(F)1 - z.re, -z.im});  // sqrt(1 - z)
    const astjit_complex<F> b = astjit_csqrt<F>({(F)1 + z.re, z.im});   // sqrt(1 + z)
    return {(F)2 * atan2(a.re, b.re), asinh(b.re * a.im - b.im * a.re)};
}
template <typename F> __device__ astjit_complex<F> astjit_cacosh(astjit_complex<F> z) {
    const F x = z.re, y = z.im, inf = astjit_inf<F>();
    if (isinf(y)) {
        const F angle = isinf(x) ? (x < (F)0 ? (F)3 * astjit_quarter_pi<F>() : astjit_quarter_pi<F>())
                                 : astjit_half_pi<F>();
        return {inf, isnan(x) ? x : copysign(angle, y)};
    }
    if (isinf(x)) return {inf, isnan(y) ? y : copysign(signbit(x) ? (F)2 * astjit_half_pi<F>() : (F)0, y)};
    if (isnan(x) || isnan(y)) return {astjit_nan<F>(), x == (F)0 ? astjit_half_pi<F>() : astjit_nan<F>()};
    const astjit_complex<F> a = astjit_csqrt<F>({x - (F)1, y});  // sqrt(z - 1)
    const astjit_complex<F> b = astjit_csqrt<F>({x + (F)1, y});  // sqrt(z + 1)
    return {asinh(a.re * b.re + a.im * b.im), (F)2 * atan2(a.im, b.re)};
}
template <typename F> __device__ astjit_complex<F> astjit_catanh(astjit_complex<F> z) {
    const F x = z.re, y = z.im;
    if (isinf(y)) return {copysign((F)0, x), copysign(astjit_half_pi<F>(), y)};
    if (isinf(x) || (x == (F)0 && isnan(y)))
        return {copysign((F)0, x), isnan(y) ? y : copysign(astjit_half_pi<F>(), y)};
    if (isnan(x) || isnan(y)) return {astjit_nan<F>(), astjit_nan<F>()};
    if (signbit(x)) {  // atanh(-z) = -atanh(z): log1p's argument near -1 would cancel
        const astjit_complex<F> w = astjit_catanh<F>({-x, -y});
        return {-w.re, -w.im};
    }
    if (x > astjit_limits<F>::square() || fabs(y) > astjit_limits<F>::square()) {  // ~ 1/z + i pi/2
        const F h = hypot(x, y);
        return {(x / h) / h, copysign(astjit_half_pi<F>(), y)};
    }
    const F one_minus = (F)1 - x, distance = hypot(one_minus, y);  // |1 - z|
    const F re = distance < astjit_limits<F>::root_eps()  // 4x / |1 - z|^2 underflows or swamps 1
        ? log((F)4 * x) / (F)4 - log(distance) / (F)2
        : log1p((F)4 * x / (one_minus * one_minus + y * y)) / (F)4;
    return {re, atan2((F)2 * y, one_minus * ((F)1 + x) - y * y) / (F)2};
}
template <typename F> __device__ astjit_complex<F> astjit_catan(astjit_complex<F> z) {
    return astjit_times_minus_i(astjit_catanh(astjit_times_i(z)));  // atan z = -i atanh(iz)
}

// ---- NumPy's own formulas (umath's nc_log2, nc_log10, nc_exp2, nc_log1p, nc_expm1) ----
template <typename F> __device__ __forceinline__ astjit_complex<F> astjit_scaled(astjit_complex<F> z, F k) {
    return {z.re * k, z.im * k};
}
template <typename F> __device__ astjit_complex<F> astjit_clog2(astjit_complex<F> z) {
    return astjit_scaled(astjit_clog(z), (F)1.4426950408889634);  // log2(e)
}
template <typename F> __device__ astjit_complex<F> astjit_clog10(astjit_complex<F> z) {
    return astjit_scaled(astjit_clog(z), (F)0.4342944819032518);  // log10(e)
}
template <typename F> __device__ astjit_complex<F> astjit_cexp2(astjit_complex<F> z) {
    return astjit_cexp(astjit_scaled(z, (F)0.6931471805599453));  // ln 2
}
template <typename F> __device__ astjit_complex<F> astjit_clog1p(astjit_complex<F> z) {
    const F shifted = z.re + (F)1;
    return {log(hypot(shifted, z.im)), atan2(z.im, shifted)};
}
template <typename F> __device__ astjit_complex<F> astjit_cexpm1(astjit_complex<F> z) {
    const F half = sin(z.im / (F)2);
    return {expm1(z.re) * cos(z.im) - (F)2 * half * half, exp(z.re) * sin(z.im)};
}

// ---- np.power: npymath's npy_cpow ----
template <typename F> __device__ astjit_complex<F> astjit_cpow(astjit_complex<F> a, astjit_complex<F> b,
                                                              int uniform) {
    const astjit_complex<F> one = {(F)1, (F)0};
    if (uniform && b.re == (F)0.5 && b.im == (F)0) return astjit_csqrt(a);  // `z ** 0.5`
    if (b.re == (F)0 && b.im == (F)0) return one;
    if (a.re == (F)0 && a.im == (F)0) {
        if (b.re > (F)0) return {(F)0, (F)0};
        return {astjit_nan<F>(), astjit_nan<F>()};
    }
    if (b.im == (F)0 && b.re > (F)-100 && b.re < (F)100 && (F)(long long)b.re == b.re) {
        const long long n = (long long)b.re;  // a small integer power: square and multiply
        if (n == 1) return a;
        if (n == 2) return a * a;
        if (n == 3) return a * (a * a);
        const long long count = n < 0 ? -n : n;
        astjit_complex<F> acc = one, base = a;
        for (long long mask = 1; mask <= count; mask <<= 1) {
            if (count & mask) acc = acc * base;
            base = base * base;
        }
        return n < 0 ? one / acc : acc;
    }
    return astjit_cexp(b * astjit_clog(a));  // the C library's cpow
}
