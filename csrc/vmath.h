/* vmath.h -- exp and tanh for array elements, written so that a loop
 * calling them vectorises (SSE2 at the baseline x86-64 flags).
 *
 * libm's exp and tanh are calls per element, with branches inside; an
 * array of tanh is then as slow as a Python-free loop can be.  These are
 * branch-free: every special case is a select on the element, and the
 * only integer work is 64-bit adds and left shifts on the bits of a
 * double, which SSE2 does two at a time.  Every result is within 2 ulp of
 * the correctly rounded one (tests/test_vmath.py measures it), where
 * libm's is within 1: array entries use these, scalar entries keep libm
 * (Python's math module is libm, and a replayed scalar tape reproduces
 * its recording bit for bit).  An array entry is computed by the same
 * code when it is recorded and when it is replayed, so its replay
 * reproduces it too.
 *
 * The method is the textbook one (fdlibm's, Tang's): x = k ln2 + r with
 * k = round(x / ln2) and |r| <= ln2 / 2, r kept as the exact hi minus a
 * small lo (Cody and Waite's split of ln2); expm1(r) by a polynomial; then
 * a scaling by 2^k, built in the exponent bits.                          */
#ifndef PYAUTODIFF_VMATH_H
#define PYAUTODIFF_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The bits of a double and back (memcpy: defined, and free once inlined). */
static inline uint64_t ad_vm_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static inline double ad_vm_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* 2^j for an integer j in [-1022, 1023], given as its two's complement in
 * 64 bits: the exponent field is j + 1023, the mantissa 0.               */
static inline double ad_vm_pow2(uint64_t j)
{
    return ad_vm_double((j + 1023u) << 52);
}

/* Adding 1.5 * 2^52 rounds a double of magnitude below 2^51 to an integer
 * (in the current rounding mode: to nearest), whose two's complement is
 * then the low bits of the sum's bits: no float-to-int conversion, which
 * SSE2 has no packed form of for 64-bit integers.                        */
#define AD_VM_ROUNDER 0x1.8p52

/* x = k ln2 + (hi - lo): k returned as a double, *kbits its two's
 * complement, hi exact (ln2's high part has 32 significant bits and
 * |k| < 2^11), lo tiny.  Needs |x| < 2^10 or so.                          */
static inline double ad_vm_reduce(double x, uint64_t *kbits, double *hi,
                                  double *lo)
{
    const double shifted = x * 0x1.71547652b82fep0 + AD_VM_ROUNDER;
    const double k = shifted - AD_VM_ROUNDER;
    *kbits = ad_vm_bits(shifted) - ad_vm_bits(AD_VM_ROUNDER);
    *hi = x - k * 0x1.62e42fee00000p-1;       /* ln2, high 32 bits */
    *lo = k * 0x1.a39ef35793c76p-33;           /* ln2 - its high part */
    return k;
}

/* P(r) for expm1(r) = r + r^2 P(r), |r| <= ln2 / 2: a Chebyshev fit of
 * (expm1(r) - r) / r^2 on [-0.35, 0.35], off by under 2e-18, so the error
 * of expm1 is the rounding of the additions.  Callers add r as hi - lo
 * last, keeping the rounding of r itself out of the result.              */
static inline double ad_vm_expm1_poly(double r)
{
    /* Estrin's scheme: a shallow tree of independent products rather
     * than Horner's chain of 20 dependent operations, which is what
     * would bound the loop otherwise */
    const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const double p01 = 0.5 + r * 0x1.5555555555557p-3;
    const double p23 = 0x1.5555555555556p-5 + r * 0x1.111111110ff8bp-7;
    const double p45 = 0x1.6c16c16c16214p-10 + r * 0x1.a01a01ac9de9ep-13;
    const double p67 = 0x1.a01a01a74077ap-16 + r * 0x1.71ddfff6573d6p-19;
    const double p89 = 0x1.27e4da1e12fb1p-22 + r * 0x1.af5282aacdb2ep-26;
    const double p0_3 = p01 + r2 * p23, p4_7 = p45 + r2 * p67;
    const double p8_10 = p89 + r2 * 0x1.1f75a3caadff5p-29;
    return (p0_3 + r4 * p4_7) + r8 * p8_10;
}

/* exp(x).  Beyond [-746, 709.8] the result is 0 or inf, so x is clamped
 * there (a NaN passes both selects) and the scaling itself rounds to 0 or
 * overflows to inf.  2^k is applied as two factors 2^k1 * 2^k2, each a
 * normal double, so results down in the subnormals round once, correctly,
 * in the last multiplication.                                            */
static inline double ad_vexp(double x)
{
    double xc = x > 709.8 ? 709.8 : x;
    xc = xc < -746.0 ? -746.0 : xc;
    uint64_t kbits;
    double hi, lo;
    const double k = ad_vm_reduce(xc, &kbits, &hi, &lo);
    /* 1 + expm1(r), its two additions' rounding errors recovered
     * (Fast2Sum) and added back: within a hair of half an ulp */
    const double r = hi - lo;
    const double c = r * r * ad_vm_expm1_poly(r) - lo;
    const double em = hi + c, em_err = (hi - em) + c;
    const double one_em = 1.0 + em;
    const double p = one_em + (((1.0 - one_em) + em) + em_err);
    /* k1 = round(k / 2), k2 = k - k1: both within [-539, 513] */
    const uint64_t k1 = ad_vm_bits(k * 0.5 + AD_VM_ROUNDER)
                        - ad_vm_bits(AD_VM_ROUNDER);
    return p * ad_vm_pow2(k1) * ad_vm_pow2(kbits - k1);
}

/* expm1(s) for -40 <= s <= 0 as an unevaluated sum *hi + *lo, good to
 * far below an ulp: 2^k expm1(r) + (2^k - 1), k <= 0, where for k = 0 the
 * sum is expm1(r) itself, with no cancellation near 0.  The rounding
 * errors of the last additions (and of 2^k - 1, past k = -53) are
 * recovered exactly into *lo by Fast2Sum: each adds a number to one at
 * least as large.                                                        */
static inline void ad_vm_expm1_neg(double s, double *hi, double *lo)
{
    uint64_t kbits;
    double rhi, rlo;
    (void)ad_vm_reduce(s, &kbits, &rhi, &rlo);
    const double r = rhi - rlo;
    const double c = r * r * ad_vm_expm1_poly(r) - rlo;
    const double em = rhi + c, em_err = (rhi - em) + c;
    const double scale = ad_vm_pow2(kbits);
    const double whole = scale - 1.0, whole_err = scale - (whole + 1.0);
    const double t = whole + scale * em;
    *hi = t;
    *lo = (((whole - t) + scale * em) + scale * em_err) + whole_err;
}

/* tanh(x), odd: computed for a = |x| and given x's sign (tanh(-0) = -0,
 * tanh(nan) = nan) as -e / (2 + e) with e = expm1(-2a), which has no
 * cancellation near 0 (down in the subnormals it is a / 1 exactly).  An
 * error in e is amplified up to 2 times as a grows, so the low parts of
 * e and of 2 + e correct the quotient to first order.  From 19.5 up tanh
 * is 1 to the last bit (and e would leave the range of the reduction).  */
static inline double ad_vtanh(double x)
{
    const double a = fabs(x);
    double e, e_lo;
    ad_vm_expm1_neg(-2.0 * a, &e, &e_lo);
    const double d = 2.0 + e, d_lo = ((2.0 - d) + e) + e_lo;
    const double q = -e / d;
    /* -(e + e_lo) / (d + d_lo) = q - (e_lo + q d_lo) / d, to first order */
    double z = q - (e_lo + q * d_lo) / d;
    z = a > 19.5 ? 1.0 : z;
    return copysign(z, x);
}

#endif
