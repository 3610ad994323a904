/* second.c -- the second-order sweep: forward over reverse.
 *
 * After a tangent sweep (tangent.c) along a direction u, one reverse sweep
 * carries each adjoint g together with its tangent dg (the derivative of g
 * along u).  An entry v = f(x, y) hands its operands
 *
 *     ga  += DA * g
 *     dga += DA * dg + (DAA * dx + DAB * dy) * g
 *
 * (and the same for b with DB, DAB, DBB), rules.h's first and second
 * partials.  Seeded with the gradient of one output, the leaves' dadj are
 * then the Hessian of that output times u: an exact Hessian-vector product
 * for the price of about three sweeps.  Zero factors contribute nothing
 * (ad_azmul), as in the other sweeps.                                      */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "rules.h"

/* The chain rule through the first and second partials, for one element:
 * operand adjoint ga and its tangent dga, from the entry's g and dg. */
#define AD_SECOND_STEP(GA, DGA, D1, D2X, D2Y)                                \
    do {                                                                     \
        GA += ad_azmul(D1, g);                                               \
        DGA += ad_azmul(D1, dg) + ad_azmul(ad_azmul(D2X, dx)                 \
                                           + ad_azmul(D2Y, dy), g);          \
    } while (0)

/* The array kernels: entry i's adjoint and adjoint-tangent blocks into
 * its operands'.  Each op's case in second_step below runs one for an
 * array entry.                                                           */

/* an array entry's views (adjoints: adj), its block and constant */
#define VIEWS                                                                \
    ad_view o = ad_entry_view(t, i, t->adj);                                 \
    ad_view a = ad_entry_view(t, t->a[i], t->adj);                           \
    const ad_block *bk = &t->blk[t->aux[i]];                                 \
    const double c = t->imm[i];                                              \
    (void)bk; (void)c

/* Elementwise ops: AD_SECOND_STEP per element and operand; a constant
 * operand's share goes to a sink. */
#define NO_KERNEL(CODE, NAME, ARITY, KIND, INT)
#define ELEMENTWISE_KERNEL(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA,    \
                           DAB, DBB)                                         \
    AD_SIMD_CLONES static int second_##CODE(ad_tape *t, int64_t i)           \
    {                                                                        \
        VIEWS;                                                               \
        ad_view b = AR == 2 ? ad_entry_view(t, t->b[i], t->adj) : a;         \
        const int avar = (t->flags[t->a[i]] & AD_FLAG_VARIABLE) != 0;        \
        const int bvar = AR == 2 && (t->flags[t->b[i]] & AD_FLAG_VARIABLE);  \
        double sink = 0.0, dsink = 0.0;     /* a constant operand's share */ \
        ad_iter it;                                                          \
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);                      \
        AD_ITERATE(&it, {                                                    \
            double g = o.adj[ko], dg = o.dadj[ko];                           \
            if (g != 0.0 || dg != 0.0) {                                     \
                double x = a.val[ka], y = b.val[kb], v = o.val[ko];          \
                double dx = avar ? a.tan[ka] : 0.0;                          \
                double dy = bvar ? b.tan[kb] : 0.0;                          \
                (void)x; (void)y; (void)v; (void)c;                          \
                AD_SECOND_STEP(*(avar ? &a.adj[ka] : &sink),                 \
                               *(avar ? &a.dadj[ka] : &dsink), DA, DAA, DAB);\
                if (AR == 2)                                                 \
                    AD_SECOND_STEP(*(bvar ? &b.adj[kb] : &sink),             \
                                   *(bvar ? &b.dadj[kb] : &dsink),           \
                                   DB, DAB, DBB);                            \
            }                                                                \
        });                                                                  \
        return AD_OK;                                                        \
    }
AD_OPS(NO_KERNEL, ELEMENTWISE_KERNEL)
#undef ELEMENTWISE_KERNEL

/* LSE: ga += s g with s = exp(a - v), whose tangent along the direction
 * is s (tan_a - tan_v): dga += s dg + s (tan_a - tan_v) g */
AD_SIMD_CLONES static int second_lse(ad_tape *t, int64_t i)
{
    VIEWS;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_LSE_EACH(&it, o.val, a.val, {
        const double g = o.adj[ko], dg = o.dadj[ko];
        a.adj[ka] += ad_azmul(s, g);
        a.dadj[ka] += ad_azmul(s, dg)
                      + ad_azmul(s * (a.tan[ka] - o.tan[ko]), g);
    });
    return AD_OK;
}

/* The rest are linear: adjoints and their tangents go the same way. */
AD_SIMD_CLONES static int second_sum(ad_tape *t, int64_t i)
{
    VIEWS;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, {
        a.adj[ka] += o.adj[ko] / c;
        a.dadj[ka] += o.dadj[ko] / c;
    });
    return AD_OK;
}

AD_SIMD_CLONES static int second_extreme(ad_tape *t, int64_t i)
{
    VIEWS;
    double *ties = ad_ties(t, i);
    if (!ties)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in max/min");
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, {
        if (a.val[ka] == o.val[ko]) {
            a.adj[ka] += ad_azmul(1.0 / ties[ko], o.adj[ko]);
            a.dadj[ka] += ad_azmul(1.0 / ties[ko], o.dadj[ko]);
        }
    });
    free(ties);
    return AD_OK;
}

AD_SIMD_CLONES static int second_reshape(ad_tape *t, int64_t i)
{
    VIEWS;
    for (int64_t k = 0; k < bk->size; ++k) {
        a.adj[k] += o.adj[k];
        a.dadj[k] += o.dadj[k];
    }
    return AD_OK;
}

AD_SIMD_CLONES static int second_gather(ad_tape *t, int64_t i)
{
    VIEWS;
    AD_GATHER_EACH(bk, { a.adj[ks] += o.adj[ko]; a.dadj[ks] += o.dadj[ko]; });
    return AD_OK;
}

AD_SIMD_CLONES static int second_scatter(ad_tape *t, int64_t i)
{
    VIEWS;
    for (int64_t k = 0; k < bk->nmap; ++k) {
        a.adj[k] += o.adj[bk->map[k]];
        a.dadj[k] += o.dadj[bk->map[k]];
    }
    return AD_OK;
}
#undef VIEWS

/* One step of the sweep: entry i's adjoint and its tangent into its
 * operands', a scalar's by the rules below, an array's (array:
 * t->aux[i] >= 0) by its kernel. */
AD_HOT_INLINE int second_step(ad_tape *t, int64_t i, const int array)
{
    double *adj = t->adj, *dadj = t->dadj;
    const double g = adj[i], dg = dadj[i];
    AD_TRACE_STEP("2nd", t, i, adj, AD_TRACE_ADJ | AD_TRACE_DADJ);
    if (!array && g == 0.0 && dg == 0.0)
        return AD_OK;
    const int32_t a = t->a[i], b = t->b[i];
    const uint8_t *f = t->flags;
    const double x = a >= 0 ? t->val[a] : 0.0, y = b >= 0 ? t->val[b] : 0.0;
    const double dx = a >= 0 && (f[a] & AD_FLAG_VARIABLE) ? t->tan[a] : 0.0;
    const double dy = b >= 0 && (f[b] & AD_FLAG_VARIABLE) ? t->tan[b] : 0.0;
    const double v = t->val[i], c = t->imm[i];
    (void)x; (void)y; (void)v; (void)c;
/* an array entry runs its kernel, a scalar one the rule after this */
#define ARRAY(kernel)                                                        \
    if (array)                                                               \
        return kernel(t, i);
    switch ((enum ad_op)t->op[i]) {
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
    case CODE:                                                               \
        ARRAY(second_##CODE)                                                 \
        AD_SECOND_STEP(adj[a], dadj[a], DA, DAA, DAB);                       \
        if (AR == 2)                                                         \
            AD_SECOND_STEP(adj[b], dadj[b], DB, DAB, DBB);                   \
        break;
    AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
    case AD_LEAF:    break;
    case AD_SUM:
        ARRAY(second_sum)
        adj[a] += g / c; dadj[a] += dg / c;
        break;
    case AD_MAX: case AD_MIN:
        ARRAY(second_extreme)
        adj[a] += g; dadj[a] += dg;
        break;
    case AD_LSE: {                                      /* of one */
        ARRAY(second_lse)
        const double w = ad_lse_weight(x, v);
        adj[a] += ad_azmul(w, g);
        dadj[a] += ad_azmul(w, dg) + ad_azmul(w * (dx - t->tan[i]), g);
        break;
    }
    case AD_RESHAPE: ARRAY(second_reshape) adj[a] += g; dadj[a] += dg; break;
    case AD_GATHER:  ARRAY(second_gather) adj[a] += g; dadj[a] += dg; break;
    case AD_SCATTER: ARRAY(second_scatter) adj[a] += g; dadj[a] += dg; break;
    case AD_EXTERN:
        if (array && ad_native_matmul(t, i))
            return ad_matmul_second(t, i);
        return ad_call_extern(t, t->extern_second, i, "second-order");
    case AD_NUM_OPS:
        return ad_fail(t, AD_EINVAL, i, "bad op at %lld", (long long)i);
    }
#undef ARRAY
    return AD_OK;
}
#undef NO_KERNEL

AD_NOINLINE static int second_array_step(ad_tape *t, int64_t i)
{
    return second_step(t, i, 1);
}

int ad_second_order(ad_tape *t, int64_t nseeds, const int64_t *idx,
                    const double *seed, const double *const *seed_arrays)
{
    int status = ad_check_seeds(t, nseeds, idx, 0);
    if (status != AD_OK)
        return status;
    if (!t->tan)
        return ad_fail(t, AD_EINVAL, -1, "a second-order sweep needs a "
                       "tangent sweep first");
    if ((status = ad_tangent_arrays(t, 1)) != AD_OK)
        return status;
    int64_t top = -1;
    for (int64_t k = 0; k < nseeds; ++k)
        top = idx[k] > top ? idx[k] : top;
    /* fresh adjoints and adjoint tangents for every variable below the
     * seeds; entries no seed depends on keep zeros and are skipped */
    for (int64_t i = 0; i <= top; ++i) {
        if (!(t->flags[i] & AD_FLAG_VARIABLE))
            continue;
        if ((status = ad_scratch_zero(t, i, 0)) != AD_OK ||
            (status = ad_scratch_zero(t, i, 2)) != AD_OK)
            return status;
    }
    for (int64_t k = 0; k < nseeds; ++k) {
        double *p = ad_entry_scratch(t, idx[k], 0);
        int64_t size = t->aux[idx[k]] >= 0 ? t->blk[t->aux[idx[k]]].size : 1;
        if (!(t->flags[idx[k]] & AD_FLAG_VARIABLE) || !p)
            continue;
        const double *sa = seed_arrays ? seed_arrays[k] : 0;
        for (int64_t e = 0; e < size; ++e)
            p[e] += sa ? sa[e] : seed[k];
    }
    for (int64_t i = top; i >= 0; --i) {
        if (t->op[i] == AD_LEAF || !(t->flags[i] & AD_FLAG_VARIABLE))
            continue;
        status = t->aux[i] < 0 ? second_step(t, i, 0)
                               : second_array_step(t, i);
        if (status != AD_OK)
            return status;
    }
    return AD_OK;
}
