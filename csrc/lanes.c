/* lanes.c -- a recording of scalars replayed at AD_POINT_LANES points at
 * once, for map.
 *
 * A scalar entry's replay is a few nanoseconds of arithmetic and as many
 * of dispatch (the op's case, its operands' loads).  Over a batch of
 * points, each entry's case runs once for AD_POINT_LANES points here, its
 * values and adjoints lane after lane (entry i's at val[i * L + l]), so the
 * dispatch is paid once per L points and the loops over the lanes
 * vectorise.  Each lane's arithmetic is the one replay's: the same
 * expressions of rules.h in the same order, libm's exp and tanh as the
 * scalar forward sweep takes them, a zero adjoint skipped as the scalar
 * reverse step skips it, so each point's row is bit for bit ad_replay's.
 * The tape itself is only read (threads share it): the values and
 * adjoints live in each thread's buffers.  Only tapes of scalars with no
 * extern entry qualify (ad_lanes_plan says which).                      */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rules.h"

#define L AD_POINT_LANES

struct ad_lanes {
    int64_t n;              /* the entries replayed: 0 .. n - 1 */
    int64_t *leafpos;       /* per entry: a batched leaf's number in a
                               point's row of x, or -1 */
    double *leafval;        /* per entry: any other leaf's value (a shared
                               leaf's, or the one recorded) */
    int64_t nrev;           /* the reverse sweep's entries, top down */
    int64_t *rev;
    uint8_t *reached;       /* per entry: the reverse sweep reaches it */
};

void ad_lanes_free(ad_lanes *lp)
{
    if (!lp)
        return;
    free(lp->leafpos);
    free(lp->leafval);
    free(lp->rev);
    free(lp->reached);
    free(lp);
}

ad_lanes *ad_lanes_plan(const ad_tape *t, const ad_many *m, int64_t out, int grad)
{
    const ad_replay_plan *p = m->plan;
    const int64_t n = ad_len(t);
    for (int64_t i = 0; i < n; ++i)
        if (t->aux[i] >= 0 || t->op[i] == AD_EXTERN)
            return 0;               /* arrays and externs: point by point */
    if (out < 0 || out >= n)
        return 0;
    ad_lanes *lp = calloc(1, sizeof *lp);
    if (!lp)
        return 0;
    lp->n = n;
    lp->leafpos = malloc((size_t)(n ? n : 1) * sizeof *lp->leafpos);
    lp->leafval = malloc((size_t)(n ? n : 1) * sizeof *lp->leafval);
    lp->rev = malloc((size_t)(n ? n : 1) * sizeof *lp->rev);
    lp->reached = calloc((size_t)(n ? n : 1), 1);
    if (!lp->leafpos || !lp->leafval || !lp->rev || !lp->reached) {
        ad_lanes_free(lp);
        return 0;
    }
    for (int64_t i = 0; i < n; ++i) {
        lp->leafpos[i] = -1;
        lp->leafval[i] = t->imm[i];
    }
    /* (every leaf a scalar: one number each) */
    for (int64_t k = 0, row = 0, shared = 0; k < p->nleaves; ++k) {
        if (m->batched[k])
            lp->leafpos[p->leaf[k]] = row++;
        else
            lp->leafval[p->leaf[k]] = m->shared[shared++];
    }
    if (!grad)
        return lp;
    /* the entries ad_backward_arrays marks from the output, and the ones
     * it runs a step for (marked variables), in its order */
    const uint8_t *f = t->flags;
    lp->reached[out] = 1;
    for (int64_t i = out; i >= 0; --i) {
        if (!lp->reached[i] || !(f[i] & AD_FLAG_VARIABLE))
            continue;
        const int32_t ab[2] = {t->a[i], t->b[i]};
        for (int k = 0; k < 2; ++k)
            if (ab[k] >= 0 && (f[ab[k]] & AD_FLAG_VARIABLE))
                lp->reached[ab[k]] = 1;
        lp->rev[lp->nrev++] = i;
    }
    return lp;
}

/* The guard ad_replay's flipped_guard finds first in lane l, or -1. */
static int64_t flipped_lane(const ad_replay_plan *p, const double *val, int l)
{
    for (int64_t k = 0; k < p->nguards; ++k)
        if (!ad_same_number(val[p->guard[k] * L + l], p->expected[k]))
            return k;
    return -1;
}

#define NO_KERNEL(CODE, NAME, ARITY, KIND, INT)

static int forward_lanes(const ad_tape *t, const ad_lanes *lp, const double *x,
                         int64_t nx, int count, double *val)
{
    static const double zeros[L];
    for (int64_t i = 0; i < lp->n; ++i) {
        const int32_t a = t->a[i], b = t->b[i];
        const double *va = a >= 0 ? val + a * L : zeros;
        const double *vb = b >= 0 ? val + b * L : zeros;
        const double c = t->imm[i];
        double *o = val + i * L;
        switch ((enum ad_op)t->op[i]) {
#define AD_EXP_OF exp
#define AD_TANH_OF tanh
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
        case CODE:                                                           \
            for (int l = 0; l < L; ++l) {                                    \
                const double x = va[l], y = vb[l];                           \
                (void)x; (void)y; (void)c;                                   \
                o[l] = (VALUE);                                              \
            }                                                                \
            break;
        AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
#undef AD_EXP_OF
#undef AD_TANH_OF
        case AD_LEAF:
            /* a point's input; lanes past count repeat the last point */
            for (int l = 0; l < L; ++l)
                o[l] = lp->leafpos[i] < 0 ? lp->leafval[i]
                     : x[(l < count ? l : count - 1) * nx + lp->leafpos[i]];
            break;
        case AD_SUM:
            for (int l = 0; l < L; ++l)
                o[l] = va[l] / c;                   /* (a sum of one) */
            break;
        case AD_MAX: case AD_MIN: case AD_LSE: case AD_PROD: case AD_RESHAPE:
        case AD_GATHER: case AD_SCATTER:
            for (int l = 0; l < L; ++l)             /* of one number */
                o[l] = va[l];
            break;
        case AD_EXTERN:
        case AD_NUM_OPS:
            return AD_EINVAL;                       /* (ad_lanes_plan) */
        }
    }
    return AD_OK;
}

static int reverse_lanes(const ad_tape *t, const ad_lanes *lp, const double *val,
                         double *adj)
{
    for (int64_t r = 0; r < lp->nrev; ++r) {
        const int64_t i = lp->rev[r];
        const int32_t a = t->a[i], b = t->b[i];
        const double *g = adj + i * L, *vi = val + i * L;
        static const double zeros[L];
        const double *va = a >= 0 ? val + a * L : zeros;
        const double *vb = b >= 0 ? val + b * L : zeros;
        double *ga = a >= 0 ? adj + a * L : 0, *gb = b >= 0 ? adj + b * L : 0;
        const double c = t->imm[i];
        (void)c;
        switch ((enum ad_op)t->op[i]) {
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
        case CODE:                                                           \
            for (int l = 0; l < L; ++l) {                                    \
                if (g[l] == 0.0)                                             \
                    continue;       /* (reverse_step hands nothing down) */  \
                const double x = va[l], y = vb[l], v = vi[l];                \
                (void)x; (void)y; (void)v;                                   \
                ga[l] += (DA) * g[l];                                        \
                if (AR == 2)                                                 \
                    gb[l] += (DB) * g[l];                                    \
            }                                                                \
            break;
        AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
        case AD_LEAF:
            break;
        case AD_SUM:
            for (int l = 0; l < L; ++l)
                if (g[l] != 0.0)
                    ga[l] += g[l] / c;
            break;
        case AD_LSE:
            for (int l = 0; l < L; ++l)
                if (g[l] != 0.0)
                    ga[l] += ad_lse_weight(va[l], vi[l]) * g[l];
            break;
        case AD_MAX: case AD_MIN: case AD_PROD: case AD_RESHAPE: case AD_GATHER:
        case AD_SCATTER:
            for (int l = 0; l < L; ++l)
                if (g[l] != 0.0)
                    ga[l] += g[l];
            break;
        case AD_EXTERN:
        case AD_NUM_OPS:
            return AD_EINVAL;
        }
    }
    return AD_OK;
}
#undef NO_KERNEL

int ad_lanes_replay(const ad_tape *t, const ad_lanes *lp, const ad_many *m,
                    const double *x, int count, int64_t out, double *val,
                    double *adj, double *f, double *g, int64_t *flipped)
{
    int status = forward_lanes(t, lp, x, m->nx, count, val);
    if (status != AD_OK)
        return status;
    for (int l = 0; l < count; ++l)
        flipped[l] = flipped_lane(m->plan, val, l);
    for (int l = 0; l < count; ++l)
        f[l] = val[out * L + l];
    if (!g)
        return AD_OK;
    /* the adjoints start at zero, the output's at 0.0 + 1.0 */
    memset(adj, 0, (size_t)(out + 1) * L * sizeof *adj);
    for (int l = 0; l < L; ++l)
        adj[out * L + l] += 1.0;
    if ((status = reverse_lanes(t, lp, val, adj)) != AD_OK)
        return status;
    /* a reached leaf's gradient is 0.0 plus its adjoint; others 0.0 */
    for (int64_t j = 0; j < m->nvar; ++j) {
        const int64_t e = m->var[j];
        for (int l = 0; l < count; ++l)
            g[l * m->nv + j] = lp->reached[e] ? 0.0 + adj[e * L + l] : 0.0;
    }
    return AD_OK;
}
