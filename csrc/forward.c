/* forward.c -- the forward sweep: recompute every value from the leaves.
 *
 * Used to replay a recorded tape at new inputs (the leaves' imm, and the
 * values of leaf arrays) without Python, and to compute an array entry when
 * it is recorded.  A scalar case computes exactly what the Python recording
 * path computes, so a replay at the recorded inputs reproduces the recorded
 * values bit for bit.  The expressions are rules.h's, written once.
 * Array elements take exp and tanh from vmath.h: the same code records
 * and replays them, so a replay reproduces an array entry bit for bit too. */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "rules.h"
#include "vmath.h"

/* The sum of n contiguous doubles, pairwise as NumPy sums: runs of up to
 * 128 by eight interleaved accumulators, longer ones as the sum of their
 * halves.  The error grows with log n, not n as a serial sum's does, and
 * the eight chains run in parallel (a serial sum waits on each addition). */
AD_SIMD_CLONES double ad_sum_pairwise(const double *x, int64_t n)
{
    if (n < 8) {
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k)
            s += x[k];
        return s;
    }
    if (n <= 128) {
        /* locals, not an array: they stay in registers */
        double r0 = x[0], r1 = x[1], r2 = x[2], r3 = x[3],
               r4 = x[4], r5 = x[5], r6 = x[6], r7 = x[7];
        int64_t k = 8;
        for (; k + 8 <= n; k += 8) {
            r0 += x[k];     r1 += x[k + 1]; r2 += x[k + 2]; r3 += x[k + 3];
            r4 += x[k + 4]; r5 += x[k + 5]; r6 += x[k + 6]; r7 += x[k + 7];
        }
        double s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7));
        for (; k < n; ++k)
            s += x[k];
        return s;
    }
    int64_t half = n / 2;
    half -= half % 8;
    return ad_sum_pairwise(x, half) + ad_sum_pairwise(x + half, n - half);
}

/* sum(exp(x[k] - m)) over n contiguous doubles: the exponentials of up
 * to 128 at a time in a loop that vectorises, summed pairwise. */
static double sum_exp_shifted(const double *x, int64_t n, double m)
{
    if (n > 128) {
        int64_t half = n / 2;
        half -= half % 8;
        return sum_exp_shifted(x, half, m) + sum_exp_shifted(x + half, n - half, m);
    }
    double e[128];
    for (int64_t k = 0; k < n; ++k)
        e[k] = ad_vexp(x[k] - m);
    return ad_sum_pairwise(e, n);
}

/* The shift of a log-sum-exp: the max m of its elements (a NaN wins), or
 * 0 where m is not finite.  Then m + log(sum(exp(x - m))) never overflows,
 * an all -inf (or empty) reduction is -inf, one with +inf is +inf, and a
 * NaN is NaN: scipy.special.logsumexp's rule.                           */
static inline double lse_shift(double m)
{
    return isfinite(m) ? m : 0.0;
}

static double lse_row(const double *x, int64_t n)
{
    double m = -INFINITY;
    for (int64_t k = 0; k < n; ++k)
        if (x[k] > m || isnan(x[k]))
            m = x[k];
    m = lse_shift(m);
    return m + log(sum_exp_shifted(x, n, m));
}

/* The array kernels: entry i's block from its operands'.  Each op's
 * case in forward_step below runs one for an array entry.              */

/* an array entry's views: its own and its operands' values */
#define VIEWS                                                                \
    ad_view o = ad_value_view(t, i);                                         \
    ad_view a = ad_value_view(t, t->a[i])

/* Elementwise ops: the table's VALUE per element, operands broadcast. */
#define AD_EXP_OF ad_vexp
#define AD_TANH_OF ad_vtanh
#define NO_KERNEL(CODE, NAME, ARITY, KIND, INT)
#define ELEMENTWISE_KERNEL(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA,    \
                           DAB, DBB)                                         \
    AD_SIMD_CLONES static int forward_##CODE(ad_tape *t, int64_t i)          \
    {                                                                        \
        VIEWS;                                                               \
        ad_view b = AR == 2 ? ad_value_view(t, t->b[i]) : a;                 \
        const double c = t->imm[i];                                          \
        ad_iter it;                                                          \
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);                      \
        AD_ITERATE(&it, {                                                    \
            double x = a.val[ka], y = b.val[kb];                             \
            (void)x; (void)y; (void)c;                                       \
            o.val[ko] = (VALUE);                                             \
        });                                                                  \
        return AD_OK;                                                        \
    }
AD_OPS(NO_KERNEL, ELEMENTWISE_KERNEL)
#undef ELEMENTWISE_KERNEL
#undef AD_EXP_OF
#undef AD_TANH_OF

/* Reductions iterate over the operand's elements; the output is the
 * broadcast side. */
AD_SIMD_CLONES void ad_sum_into(double *out, const double *x, const ad_view *o,
                                const ad_view *a, int64_t size, double c)
{
    for (int64_t k = 0; k < size; ++k)
        out[k] = 0.0;
    ad_iter it;
    ad_iter_init(&it, a->ndim, a->shape, o, a, 0);
    int64_t n;
    if (ad_iter_rows(&it, &n)) {    /* pairwise, a row at a time */
        AD_ITERATE(&it, out[ko] += ad_sum_pairwise(x + ka, n));
    } else {
        AD_ITERATE(&it, out[ko] += x[ka]);
    }
    for (int64_t k = 0; k < size; ++k)
        out[k] /= c;
}

AD_SIMD_CLONES static int forward_sum(ad_tape *t, int64_t i)
{
    VIEWS;
    ad_sum_into(o.val, a.val, &o, &a, t->blk[t->aux[i]].size, t->imm[i]);
    return AD_OK;
}

/* MAX and MIN: a NaN wins, as in NumPy */
AD_SIMD_CLONES static int forward_extreme(ad_tape *t, int64_t i)
{
    VIEWS;
    const int max = t->op[i] == AD_MAX;
    const int64_t size = t->blk[t->aux[i]].size;
    for (int64_t k = 0; k < size; ++k)
        o.val[k] = max ? -INFINITY : INFINITY;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    if (max)
        AD_ITERATE(&it, { double x = a.val[ka];
                          if (x > o.val[ko] || isnan(x)) o.val[ko] = x; });
    else
        AD_ITERATE(&it, { double x = a.val[ka];
                          if (x < o.val[ko] || isnan(x)) o.val[ko] = x; });
    return AD_OK;
}

/* LSE: a reduction over contiguous rows (the last axes) a row at a time;
 * any other in three passes (max, sum of the shifted exponentials, log)
 * over a broadcast iteration. */
AD_SIMD_CLONES static int forward_lse(ad_tape *t, int64_t i)
{
    VIEWS;
    const int64_t size = t->blk[t->aux[i]].size;
    for (int64_t k = 0; k < size; ++k)
        o.val[k] = -INFINITY;           /* what an empty reduction gives */
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    ad_iter rows = it;
    int64_t n;
    if (ad_iter_rows(&rows, &n) && n * size == it.size) {
        /* each output element is one contiguous row's */
        AD_ITERATE(&rows, o.val[ko] = lse_row(a.val + ka, n));
        return AD_OK;
    }
    if (size == 0)
        return AD_OK;
    double *sum = calloc((size_t)size, sizeof *sum);
    if (!sum)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in logsumexp");
    AD_ITERATE(&it, { double x = a.val[ka];
                      if (x > o.val[ko] || isnan(x)) o.val[ko] = x; });
    for (int64_t k = 0; k < size; ++k)
        o.val[k] = lse_shift(o.val[k]);
    AD_ITERATE(&it, sum[ko] += ad_vexp(a.val[ka] - o.val[ko]));
    for (int64_t k = 0; k < size; ++k)
        o.val[k] += log(sum[k]);
    free(sum);
    return AD_OK;
}

/* PROD: the elements of each group multiplied in C order, one after the
 * other, as NumPy's multiply.reduce does */
AD_SIMD_CLONES static int forward_prod(ad_tape *t, int64_t i)
{
    VIEWS;
    const int64_t size = t->blk[t->aux[i]].size;
    for (int64_t k = 0; k < size; ++k)
        o.val[k] = 1.0;                 /* what an empty reduction gives */
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, o.val[ko] *= a.val[ka]);
    return AD_OK;
}

AD_SIMD_CLONES static int forward_reshape(ad_tape *t, int64_t i)
{
    VIEWS;
    const int64_t size = t->blk[t->aux[i]].size;
    for (int64_t k = 0; k < size; ++k)
        o.val[k] = a.val[k];
    return AD_OK;
}

AD_SIMD_CLONES static int forward_gather(ad_tape *t, int64_t i)
{
    VIEWS;
    AD_GATHER_EACH(&t->blk[t->aux[i]], o.val[ko] = a.val[ks]);
    return AD_OK;
}

AD_SIMD_CLONES static int forward_scatter(ad_tape *t, int64_t i)
{
    VIEWS;
    const ad_block *bk = &t->blk[t->aux[i]];
    for (int64_t k = 0; k < bk->size; ++k)
        o.val[k] = 0.0;
    for (int64_t k = 0; k < bk->nmap; ++k)
        o.val[bk->map[k]] += a.val[k];
    return AD_OK;
}
#undef VIEWS

/* One step of the sweep: entry i's value, a scalar's from its operands'
 * values, an array's (array: t->aux[i] >= 0) by its kernel. */
AD_HOT_INLINE int forward_step(ad_tape *t, int64_t i, const int array)
{
    double *v = t->val;
    const int32_t a = t->a[i], b = t->b[i];
    const double x = a >= 0 ? v[a] : 0.0, y = b >= 0 ? v[b] : 0.0;
    const double c = t->imm[i];
    int status = AD_OK;
/* an array entry runs its kernel, a scalar one the rule after this */
#define ARRAY(kernel)                                                        \
    if (array) {                                                             \
        status = kernel(t, i);                                               \
        break;                                                               \
    }
    switch ((enum ad_op)t->op[i]) {
#define AD_EXP_OF exp
#define AD_TANH_OF tanh
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
    case CODE: ARRAY(forward_##CODE) v[i] = (VALUE); break;
    AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
#undef AD_EXP_OF
#undef AD_TANH_OF
    /* an array leaf's values are the Python Array's */
    case AD_LEAF:    if (!array) v[i] = c; break;
    case AD_SUM:     ARRAY(forward_sum) v[i] = x / c; break;  /* of one */
    /* a scalar entry of these reduces, reshapes or picks one number; a
     * scalar's log(exp(x)) is x: its shift is x, or 0 when not finite */
    case AD_MAX: case AD_MIN: ARRAY(forward_extreme) v[i] = x; break;
    case AD_LSE:     ARRAY(forward_lse) v[i] = x; break;
    case AD_PROD:    ARRAY(forward_prod) v[i] = x; break;
    case AD_RESHAPE: ARRAY(forward_reshape) v[i] = x; break;
    case AD_GATHER:  ARRAY(forward_gather) v[i] = x; break;
    case AD_SCATTER: ARRAY(forward_scatter) v[i] = x; break;
    case AD_EXTERN:
        status = array && ad_native_matmul(t, i)
                     ? ad_matmul_forward(t, i)
                     : ad_call_extern(t, t->extern_forward, i, "forward");
        break;
    case AD_NUM_OPS:
        return ad_fail(t, AD_EINVAL, i, "bad op at %lld", (long long)i);
    }
#undef ARRAY
    AD_TRACE_STEP("fwd", t, i, 0, 0);
    return status;
}
#undef NO_KERNEL

AD_NOINLINE static int forward_array_step(ad_tape *t, int64_t i)
{
    return forward_step(t, i, 1);
}

/* the step of entry i, scalar or array (AD_NOINLINE) */
AD_HOT_INLINE int forward_split(ad_tape *t, int64_t i)
{
    return t->aux[i] < 0 ? forward_step(t, i, 0) : forward_array_step(t, i);
}

static int nonfinite(ad_tape *t, int64_t i, double value)
{
    return ad_fail(t, AD_ENONFINITE, i, "%s at tape index %lld produced %s",
                   ad_op_name(t->op[i]), (long long)i, isnan(value) ? "nan"
                                                                    : "inf");
}

int ad_forward_entry(ad_tape *t, int64_t i, int check)
{
    int status = forward_split(t, i);
    if (status != AD_OK || !check)
        return status;
    if (t->aux[i] >= 0) {
        ad_block *bk = &t->blk[t->aux[i]];
        if (ad_count_nonfinite(bk->val, bk->size))
            for (int64_t k = 0; k < bk->size; ++k)
                if (!isfinite(bk->val[k]))
                    return nonfinite(t, i, bk->val[k]);
        return AD_OK;
    }
    if (!isfinite(t->val[i]))
        return nonfinite(t, i, t->val[i]);
    return AD_OK;
}

int ad_forward(ad_tape *t, int64_t lo, int64_t hi, int check)
{
    const int64_t n = ad_len(t);
    if (lo < 0 || hi > n || lo > hi)
        return ad_fail(t, AD_ERANGE, -1, "forward sweep over [%lld, %lld) "
                       "outside the tape's %lld entries", (long long)lo,
                       (long long)hi, (long long)n);
    for (int64_t i = lo; i < hi; ++i) {
        int status = check ? ad_forward_entry(t, i, 1) : forward_split(t, i);
        if (status != AD_OK)
            return status;
    }
    return AD_OK;
}
