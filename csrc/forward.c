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
AD_SIMD_CLONES static double sum_pairwise(const double *x, int64_t n)
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
    return sum_pairwise(x, half) + sum_pairwise(x + half, n - half);
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
    return sum_pairwise(e, n);
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

/* LSE entry i (output o, operand a): a reduction over contiguous rows
 * (the last axes) a row at a time; any other in three passes (max, sum of the
 * shifted exponentials, log) over a broadcast iteration. */
static int forward_lse(ad_tape *t, int64_t i, const ad_view *o, const ad_view *a)
{
    const int64_t size = t->blk[t->aux[i]].size;
    for (int64_t k = 0; k < size; ++k)
        o->val[k] = -INFINITY;          /* what an empty reduction gives */
    ad_iter it;
    ad_iter_init(&it, a->ndim, a->shape, o, a, 0);
    ad_iter rows = it;
    int64_t n;
    if (ad_iter_rows(&rows, &n) && n * size == it.size) {
        /* each output element is one contiguous row's */
        AD_ITERATE(&rows, o->val[ko] = lse_row(a->val + ka, n));
        return AD_OK;
    }
    if (size == 0)
        return AD_OK;
    double *sum = calloc((size_t)size, sizeof *sum);
    if (!sum)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in logsumexp");
    AD_ITERATE(&it, { double x = a->val[ka];
                      if (x > o->val[ko] || isnan(x)) o->val[ko] = x; });
    for (int64_t k = 0; k < size; ++k)
        o->val[k] = lse_shift(o->val[k]);
    AD_ITERATE(&it, sum[ko] += ad_vexp(a->val[ka] - o->val[ko]));
    for (int64_t k = 0; k < size; ++k)
        o->val[k] += log(sum[k]);
    free(sum);
    return AD_OK;
}

/* Entry i when it is an array: its elements, operands broadcast. */
AD_SIMD_CLONES static int forward_array(ad_tape *t, int64_t i)
{
    ad_view o = ad_value_view(t, i);
    int op = t->op[i];
    if (op == AD_LEAF)
        return AD_OK;
    if (op == AD_EXTERN)
        return ad_call_extern(t, t->extern_forward, i, "forward");
    ad_view a = ad_value_view(t, t->a[i]);
    ad_view b = t->b[i] >= 0 ? ad_value_view(t, t->b[i]) : a;
    const double c = t->imm[i];
    ad_iter it;
    if (op == AD_SUM) {
        /* over the operand's elements; the output is the broadcast side */
        int64_t size = t->blk[t->aux[i]].size;
        for (int64_t k = 0; k < size; ++k)
            o.val[k] = 0.0;
        ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
        int64_t n;
        if (ad_iter_rows(&it, &n)) {    /* pairwise, a row at a time */
            AD_ITERATE(&it, o.val[ko] += sum_pairwise(a.val + ka, n));
        } else {
            AD_ITERATE(&it, o.val[ko] += a.val[ka]);
        }
        for (int64_t k = 0; k < size; ++k)
            o.val[k] /= c;
        return AD_OK;
    }
    if (op == AD_MAX || op == AD_MIN) {
        int64_t size = t->blk[t->aux[i]].size;
        for (int64_t k = 0; k < size; ++k)
            o.val[k] = op == AD_MAX ? -INFINITY : INFINITY;
        ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
        if (op == AD_MAX)       /* a NaN wins, as in NumPy */
            AD_ITERATE(&it, { double x = a.val[ka];
                              if (x > o.val[ko] || isnan(x)) o.val[ko] = x; });
        else
            AD_ITERATE(&it, { double x = a.val[ka];
                              if (x < o.val[ko] || isnan(x)) o.val[ko] = x; });
        return AD_OK;
    }
    if (op == AD_LSE)
        return forward_lse(t, i, &o, &a);
    if (op == AD_RESHAPE) {
        int64_t size = t->blk[t->aux[i]].size;
        for (int64_t k = 0; k < size; ++k)
            o.val[k] = a.val[k];
        return AD_OK;
    }
    if (op == AD_GATHER || op == AD_SCATTER) {
        const ad_block *bk = &t->blk[t->aux[i]];
        if (op == AD_GATHER) {
            AD_GATHER_EACH(bk, o.val[ko] = a.val[ks]);
        } else {
            for (int64_t k = 0; k < bk->size; ++k)
                o.val[k] = 0.0;
            for (int64_t k = 0; k < bk->nmap; ++k)
                o.val[bk->map[k]] += a.val[k];
        }
        return AD_OK;
    }
    ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);
    switch ((enum ad_op)op) {
#define AD_EXP_OF ad_vexp
#define AD_TANH_OF ad_vtanh
#define ARRAY_CASE(OP, AR, EXPR, DA, DB, DAA, DAB, DBB)                      \
    case OP:                                                                 \
        AD_ITERATE(&it, {                                                    \
            double x = a.val[ka], y = b.val[kb];                             \
            (void)x; (void)y; (void)c;                                       \
            o.val[ko] = (EXPR);                                              \
        });                                                                  \
        break;
    AD_ELEMENTWISE_RULES(ARRAY_CASE)
#undef ARRAY_CASE
#undef AD_EXP_OF
#undef AD_TANH_OF
    case AD_LEAF: case AD_SUM: case AD_MAX: case AD_MIN: case AD_RESHAPE:
    case AD_GATHER: case AD_SCATTER: case AD_EXTERN: case AD_LSE:
    case AD_NUM_OPS:
        break;
    }
    return AD_OK;
}

/* A scalar entry: its rule, on the values of its operands.  Inlined into
 * the sweep's loop, where replays spend their time. */
AD_HOT_INLINE int forward_scalar(ad_tape *t, int64_t i)
{
    double *v = t->val;
    const int32_t a = t->a[i], b = t->b[i];
    const double x = a >= 0 ? v[a] : 0.0, y = b >= 0 ? v[b] : 0.0;
    const double c = t->imm[i];
    switch ((enum ad_op)t->op[i]) {
#define AD_EXP_OF exp
#define AD_TANH_OF tanh
#define SCALAR_CASE(OP, AR, EXPR, DA, DB, DAA, DAB, DBB)                     \
    case OP: v[i] = (EXPR); break;
    AD_ELEMENTWISE_RULES(SCALAR_CASE)
#undef SCALAR_CASE
#undef AD_EXP_OF
#undef AD_TANH_OF
    case AD_LEAF: v[i] = c; break;
    case AD_SUM:  v[i] = x / c; break;   /* the sum of one scalar */
    /* a scalar entry of these reduces, reshapes or picks one number */
    case AD_MAX: case AD_MIN: case AD_RESHAPE: case AD_GATHER: case AD_SCATTER:
    case AD_LSE:    /* log(exp(x)) is x: its shift is x, or 0 when not finite */
        v[i] = x; break;
    case AD_EXTERN:
        return ad_call_extern(t, t->extern_forward, i, "forward");
    case AD_NUM_OPS:
        return ad_fail(t, AD_EINVAL, i, "bad op at %lld", (long long)i);
    }
    AD_TRACE_STEP("fwd", t, i, 0.0);
    return AD_OK;
}

static int nonfinite(ad_tape *t, int64_t i, double value)
{
    return ad_fail(t, AD_ENONFINITE, i, "%s at tape index %lld produced %s",
                   ad_op_name(t->op[i]), (long long)i, isnan(value) ? "nan"
                                                                    : "inf");
}

int ad_forward_entry(ad_tape *t, int64_t i, int check)
{
    if (t->aux[i] >= 0) {
        int status = forward_array(t, i);
        if (status != AD_OK || !check)
            return status;
        ad_block *bk = &t->blk[t->aux[i]];
        if (ad_count_nonfinite(bk->val, bk->size))
            for (int64_t k = 0; k < bk->size; ++k)
                if (!isfinite(bk->val[k]))
                    return nonfinite(t, i, bk->val[k]);
        return AD_OK;
    }
    int status = forward_scalar(t, i);
    if (status == AD_OK && check && !isfinite(t->val[i]))
        return nonfinite(t, i, t->val[i]);
    return status;
}

int ad_forward(ad_tape *t, int64_t lo, int64_t hi, int check)
{
    const int64_t n = ad_len(t);
    if (lo < 0 || hi > n || lo > hi)
        return ad_fail(t, AD_ERANGE, -1, "forward sweep over [%lld, %lld) "
                       "outside the tape's %lld entries", (long long)lo,
                       (long long)hi, (long long)n);
    for (int64_t i = lo; i < hi; ++i) {
        int status = t->aux[i] < 0 && !check ? forward_scalar(t, i)
                                             : ad_forward_entry(t, i, check);
        if (status != AD_OK)
            return status;
    }
    return AD_OK;
}

int64_t ad_check_guards(const ad_tape *t, int64_t n, const int64_t *idx,
                        const double *expected)
{
    const int64_t len = ad_len(t);
    for (int64_t k = 0; k < n; ++k) {
        int64_t i = idx[k];
        double v = i >= 0 && i < len && t->aux[i] < 0 ? t->val[i] : NAN;
        /* bitwise: a guard on a value used as a plain float holds only
         * where that value is exactly what it was (-0.0 is not 0.0 there:
         * format() and copysign() show the sign; a NaN matches a NaN) */
        int same = isnan(v) ? isnan(expected[k]) != 0
                            : v == expected[k] && !signbit(v) == !signbit(expected[k]);
        if (!same)
            return k;
    }
    return -1;
}
