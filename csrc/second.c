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
 * for the price of about three sweeps.  Zero factors contribute nothing:
 * a zero adjoint (ad_azmul), as in the reverse sweeps, and a zero partial
 * times a tangent (ad_pzmul), as in the tangent sweep.
 *
 * After a tangent sweep of several lanes, dg and dga have one per lane and
 * g and ga stay one: an elementwise kernel computes its partials and ga
 * once per element, dga in every lane; the rest run once per lane
 * (ad_each_lane), adding into ga in lane 0 only.                        */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rules.h"

/* The chain rule through the first and second partials, for one element:
 * the tangent dga of an operand's adjoint, from the entry's g and dg. */
#define AD_SECOND_TANGENT(D1, D2X, D2Y)                                      \
    (ad_pzmul(D1, dg) + ad_azmul(ad_pzmul(D2X, dx) + ad_pzmul(D2Y, dy), g))

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

/* Elementwise ops: ga += D1 g and dga += AD_SECOND_TANGENT per element,
 * operand and lane.  The loop is compiled for each combination of
 * variable operands (AV, BV: constants) and has no branch, so it
 * vectorises: an element with nothing to hand on adds zeros (ad_azmul),
 * which is cheaper than testing for it.  An operand's blocks still unset
 * (za, zb) are assigned where the loop writes each element once, as in
 * the reverse sweep: no pass of zeros first.                             */
#define NO_KERNEL(CODE, NAME, ARITY, KIND, INT)
#define SECOND_ELEMENTS(AR, AV, BV, DA, DB, DAA, DAB, DBB)                   \
    AD_BY_LANES(t, AD_ITERATE(&it, {                                         \
        const double g = o.adj[ko];                                          \
        const double x = a.val[ka], y = b.val[kb], v = o.val[ko];            \
        (void)x; (void)y; (void)v; (void)c;                                  \
        const double da = DA, daa = DAA, dab = DAB;                          \
        const double db = AR == 2 ? DB : 0.0, dbb = AR == 2 ? DBB : 0.0;     \
        (void)db; (void)dbb;                                                 \
        if (AV)                                                              \
            a.adj[ka] = (za ? 0.0 : a.adj[ka]) + ad_azmul(da, g);            \
        if (AR == 2 && BV)                                                   \
            b.adj[kb] = (zb ? 0.0 : b.adj[kb]) + ad_azmul(db, g);            \
        AD_FOR_LANES(nl, {                                                   \
            const double dg = o.dadj[ko + l * o.ls];                         \
            const double dx = AV ? a.tan[ka + l * a.ls] : 0.0;               \
            const double dy = AR == 2 && BV ? b.tan[kb + l * b.ls] : 0.0;    \
            double *const pa = &a.dadj[ka + l * a.ls];                       \
            double *const pb = &b.dadj[kb + l * b.ls];                       \
            (void)pa; (void)pb;                                              \
            if (AV)                                                          \
                *pa = (za ? 0.0 : *pa) + AD_SECOND_TANGENT(da, daa, dab);    \
            if (AR == 2 && BV)                                               \
                *pb = (zb ? 0.0 : *pb) + AD_SECOND_TANGENT(db, dab, dbb);    \
        });                                                                  \
    }))
#define ELEMENTWISE_KERNEL(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA,    \
                           DAB, DBB)                                         \
    AD_SIMD_CLONES static int second_##CODE(ad_tape *t, int64_t i)           \
    {                                                                        \
        VIEWS;                                                               \
        ad_view b = AR == 2 ? ad_entry_view(t, t->b[i], t->adj) : a;         \
        const int avar = (t->flags[t->a[i]] & AD_FLAG_VARIABLE) != 0;        \
        const int bvar = AR == 2 && (t->flags[t->b[i]] & AD_FLAG_VARIABLE);  \
        const int two = t->a[i] == t->b[i];                                  \
        const int za = avar && ad_second_claim(                              \
            t, t->a[i], !two && ad_same_shape(&a, &o));                      \
        const int zb = bvar && ad_second_claim(                              \
            t, t->b[i], !two && ad_same_shape(&b, &o));                      \
        ad_iter it;                                                          \
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);                      \
        if (AR == 1 || (avar && bvar))                                       \
            SECOND_ELEMENTS(AR, 1, 1, DA, DB, DAA, DAB, DBB);                \
        else if (avar)                                                       \
            SECOND_ELEMENTS(AR, 1, 0, DA, DB, DAA, DAB, DBB);                \
        else                                                                 \
            SECOND_ELEMENTS(AR, 0, 1, DA, DB, DAA, DAB, DBB);                \
        return AD_OK;                                                        \
    }
AD_OPS(NO_KERNEL, ELEMENTWISE_KERNEL)
#undef ELEMENTWISE_KERNEL
#undef SECOND_ELEMENTS

/* The rest run once per lane: their adjoints in lane 0 only (ADJ and
 * DADJ: what an element hands on to each), by the iteration EACH over the
 * arguments after them. */
#define ADJ_THEN_DADJ(EACH, ADJ, DADJ, ...)                                  \
    do {                                                                     \
        if (t->lane == 0) {                                                  \
            EACH(__VA_ARGS__, { ADJ; DADJ; });                               \
        } else {                                                             \
            EACH(__VA_ARGS__, DADJ);                                         \
        }                                                                    \
    } while (0)
#define EACH_ELEMENT(n, ...)                                                 \
    for (int64_t k = 0; k < (n); ++k) {                                      \
        __VA_ARGS__;                                                         \
    }

/* LSE: ga += s g with s = exp(a - v), whose tangent along the direction
 * is s (tan_a - tan_v): dga += s dg + s (tan_a - tan_v) g */
AD_SIMD_CLONES static int second_lse(ad_tape *t, int64_t i)
{
    VIEWS;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    ADJ_THEN_DADJ(AD_LSE_EACH, a.adj[ka] += ad_azmul(s, o.adj[ko]),
                  a.dadj[ka] += ad_pzmul(s, o.dadj[ko])
                      + ad_azmul(ad_pzmul(s, a.tan[ka] - o.tan[ko]), o.adj[ko]),
                  &it, o.val, a.val);
    return AD_OK;
}

/* PROD: ga += r g and dga += r dg + dr g, r the product of the other
 * elements of the group and dr its tangent along the direction.  r is the
 * reverse sweep's, the product of the elements before the element times
 * the one of those after it, each carried with its tangent as a dual
 * number, (p, dp) (x, dx) = (p x, dp x + p dx): exact where elements are
 * zero.  A first pass keeps each element's (p, dp) before it, a second, in
 * reverse order, multiplies in the (s, ds) after it. */
AD_SIMD_CLONES static int second_prod(ad_tape *t, int64_t i)
{
    VIEWS;
    const int first = t->lane == 0;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    if (it.size == 0)
        return AD_OK;
    double *run = malloc(2 * (size_t)bk->size * sizeof *run);
    double *before = malloc(2 * (size_t)it.size * sizeof *before);
    if (!run || !before) {
        free(run);
        free(before);
        return ad_fail(t, AD_ENOMEM, i, "out of memory in prod");
    }
    double *const drun = run + bk->size, *const dbefore = before + it.size;
    for (int64_t k = 0; k < bk->size; ++k) {
        run[k] = 1.0;
        drun[k] = 0.0;
    }
    AD_ITERATE(&it, {
        const double x = a.val[ka], p = run[ko], dp = drun[ko];
        before[ka] = p;
        dbefore[ka] = dp;
        run[ko] = p * x;
        drun[ko] = ad_pzmul(x, dp) + ad_pzmul(p, a.tan[ka]);
    });
    for (int64_t k = 0; k < bk->size; ++k) {
        run[k] = 1.0;
        drun[k] = 0.0;
    }
    int64_t lo, la;
    ad_iter_last(&it, &lo, &la);
    AD_ITERATE(&it, {
        const int64_t ro = lo - ko, ra = la - ka;
        const double x = a.val[ra], s = run[ro], ds = drun[ro];
        const double r = before[ra] * s;
        const double dr = ad_pzmul(s, dbefore[ra]) + ad_pzmul(before[ra], ds);
        const double g = o.adj[ro];
        if (first)
            a.adj[ra] += ad_azmul(r, g);
        a.dadj[ra] += ad_pzmul(r, o.dadj[ro]) + ad_azmul(dr, g);
        run[ro] = s * x;
        drun[ro] = ad_pzmul(x, ds) + ad_pzmul(s, a.tan[ra]);
    });
    free(run);
    free(before);
    return AD_OK;
}

/* The rest are linear: adjoints and their tangents go the same way.  A
 * sum whose operand ends in contiguous rows, each into one output element,
 * goes a row at a time: its share g / c divided once, added in a loop
 * that vectorises. */
#define SPREAD(dst, share)                                                   \
    do {                                                                     \
        const double q_ = (share);                                           \
        for (int64_t r_ = 0; r_ < n; ++r_)                                   \
            dst[ka + r_] += q_;                                              \
    } while (0)
AD_SIMD_CLONES static int second_sum(ad_tape *t, int64_t i)
{
    VIEWS;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    int64_t n;
    if (ad_iter_rows(&it, &n))
        ADJ_THEN_DADJ(AD_ITERATE, SPREAD(a.adj, o.adj[ko] / c),
                      SPREAD(a.dadj, o.dadj[ko] / c), &it);
    else
        ADJ_THEN_DADJ(AD_ITERATE, a.adj[ka] += o.adj[ko] / c,
                      a.dadj[ka] += o.dadj[ko] / c, &it);
    return AD_OK;
}
#undef SPREAD

AD_SIMD_CLONES static int second_extreme(ad_tape *t, int64_t i)
{
    VIEWS;
    double *ties = ad_ties(t, i);
    if (!ties)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in max/min");
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    ADJ_THEN_DADJ(AD_ITERATE,
                  if (a.val[ka] == o.val[ko])
                      a.adj[ka] += ad_azmul(1.0 / ties[ko], o.adj[ko]),
                  if (a.val[ka] == o.val[ko])
                      a.dadj[ka] += ad_azmul(1.0 / ties[ko], o.dadj[ko]),
                  &it);
    free(ties);
    return AD_OK;
}

AD_SIMD_CLONES static int second_reshape(ad_tape *t, int64_t i)
{
    VIEWS;
    ADJ_THEN_DADJ(EACH_ELEMENT, a.adj[k] += o.adj[k], a.dadj[k] += o.dadj[k],
                  bk->size);
    return AD_OK;
}

AD_SIMD_CLONES static int second_gather(ad_tape *t, int64_t i)
{
    VIEWS;
    ADJ_THEN_DADJ(AD_GATHER_EACH, a.adj[ks] += o.adj[ko],
                  a.dadj[ks] += o.dadj[ko], bk);
    return AD_OK;
}

AD_SIMD_CLONES static int second_scatter(ad_tape *t, int64_t i)
{
    VIEWS;
    ADJ_THEN_DADJ(EACH_ELEMENT, a.adj[k] += o.adj[bk->map[k]],
                  a.dadj[k] += o.dadj[bk->map[k]], bk->nmap);
    return AD_OK;
}
#undef ADJ_THEN_DADJ
#undef EACH_ELEMENT
#undef VIEWS

/* An extern entry's rule for lane t->lane. */
static int second_extern(ad_tape *t, int64_t i)
{
    if (t->aux[i] >= 0 && ad_native_matmul(t, i))
        return ad_matmul_second(t, i);
    return ad_call_extern(t, t->extern_second, i, "second-order");
}

/* One step of the sweep: entry i's adjoint and its tangent into its
 * operands', a scalar's by the rules below in lane t->lane (tan and dadj:
 * that lane's; the adjoints in lane 0 only), an array's (array:
 * t->aux[i] >= 0) by its kernel in every lane. */
AD_HOT_INLINE int second_step(ad_tape *t, int64_t i, const int array,
                              const double *tan, double *dadj)
{
    double *adj = t->adj, sink = 0.0;
    const int first = t->lane == 0;
    const double g = adj[i], dg = dadj[i];
    AD_TRACE_STEP("2nd", t, i, adj, AD_TRACE_ADJ | AD_TRACE_DADJ);
    if (!array && g == 0.0 && dg == 0.0)
        return AD_OK;
    const int32_t a = t->a[i], b = t->b[i];
    const uint8_t *f = t->flags;
    const double x = a >= 0 ? t->val[a] : 0.0, y = b >= 0 ? t->val[b] : 0.0;
    const double dx = a >= 0 && (f[a] & AD_FLAG_VARIABLE) ? tan[a] : 0.0;
    const double dy = b >= 0 && (f[b] & AD_FLAG_VARIABLE) ? tan[b] : 0.0;
    const double v = t->val[i], c = t->imm[i];
    (void)x; (void)y; (void)v; (void)c;
/* the adjoint of operand j (in lane 0; elsewhere a sink) */
#define GA(j) (*(first ? &adj[j] : &sink))
/* an array entry runs its kernel (for every lane at once, or once per
 * lane: EACH), a scalar one the rule after this */
#define ARRAY(kernel)                                                        \
    if (array)                                                               \
        return kernel(t, i);
#define EACH(kernel)                                                         \
    if (array) {                                                             \
        ad_second_settle(t, a);                                              \
        ad_second_settle(t, b);                                              \
        return ad_each_lane(t, i, kernel);                                   \
    }
    switch ((enum ad_op)t->op[i]) {
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
    case CODE:                                                               \
        ARRAY(second_##CODE)                                                 \
        GA(a) += ad_azmul(DA, g);                                            \
        dadj[a] += AD_SECOND_TANGENT(DA, DAA, DAB);                          \
        if (AR == 2) {                                                       \
            GA(b) += ad_azmul(DB, g);                                        \
            dadj[b] += AD_SECOND_TANGENT(DB, DAB, DBB);                      \
        }                                                                    \
        break;
    AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
    case AD_LEAF:    break;
    case AD_SUM:
        EACH(second_sum)
        GA(a) += g / c; dadj[a] += dg / c;
        break;
    case AD_MAX: case AD_MIN:
        EACH(second_extreme)
        GA(a) += g; dadj[a] += dg;
        break;
    case AD_LSE: {                                      /* of one */
        EACH(second_lse)
        const double w = ad_lse_weight(x, v);
        GA(a) += ad_azmul(w, g);
        dadj[a] += ad_pzmul(w, dg) + ad_azmul(ad_pzmul(w, dx - tan[i]), g);
        break;
    }
    case AD_PROD:                                       /* of one */
        EACH(second_prod)
        GA(a) += g; dadj[a] += dg;
        break;
    case AD_RESHAPE: EACH(second_reshape) GA(a) += g; dadj[a] += dg; break;
    case AD_GATHER:  EACH(second_gather) GA(a) += g; dadj[a] += dg; break;
    case AD_SCATTER: EACH(second_scatter) GA(a) += g; dadj[a] += dg; break;
    case AD_EXTERN:  EACH(second_extern) return second_extern(t, i);
    case AD_NUM_OPS:
        return ad_fail(t, AD_EINVAL, i, "bad op at %lld", (long long)i);
    }
#undef ARRAY
#undef EACH
#undef GA
    return AD_OK;
}
#undef NO_KERNEL

AD_NOINLINE static int second_array_step(ad_tape *t, int64_t i)
{
    return second_step(t, i, 1, t->tan, t->dadj);
}

int ad_second_order(ad_tape *t, int64_t nseeds, const int64_t *idx,
                    const double *seed, const double *const *seed_arrays)
{
    int status = ad_check_seeds(t, nseeds, idx, 0);
    if (status != AD_OK)
        return status;
    t->lane = 0;        /* (ad_select_lane's, for reading, may be another) */
    if (!t->tan)
        return ad_fail(t, AD_EINVAL, -1, "a second-order sweep needs a "
                       "tangent sweep first");
    if ((status = ad_tangent_arrays(t, 1)) != AD_OK)
        return status;
    int64_t top = -1;
    for (int64_t k = 0; k < nseeds; ++k)
        top = idx[k] > top ? idx[k] : top;
    /* fresh adjoints and adjoint tangents for every variable below the
     * seeds: a scalar's zeroed, an array's blocks unset (second_unset)
     * until their first writer; an entry whose blocks nothing wrote has
     * nothing to hand on and is skipped */
    for (int64_t i = 0; i <= top; ++i) {
        if (!(t->flags[i] & AD_FLAG_VARIABLE))
            continue;
        if (t->aux[i] < 0) {
            if ((status = ad_scratch_zero(t, i, 0)) != AD_OK ||
                (status = ad_scratch_zero(t, i, 2)) != AD_OK)
                return status;
            continue;
        }
        ad_block *bk = &t->blk[t->aux[i]];
        if ((!bk->adj && !(bk->adj = ad_buffer_alloc(bk->size))) ||
            (!bk->dadj &&
             !(bk->dadj = ad_buffer_alloc(bk->size * t->lane_room)))) {
            if (bk->adj)        /* (read after the failure: zeros) */
                memset(bk->adj, 0, (size_t)bk->size * sizeof(double));
            status = ad_fail(t, AD_ENOMEM, i, "out of memory for tangents");
            break;
        }
        bk->adj_unset = 0;
        bk->second_unset = 1;
    }
    for (int64_t k = 0; k < nseeds && status == AD_OK; ++k) {
        double *p = ad_entry_scratch(t, idx[k], 0);     /* (settled) */
        int64_t size = t->aux[idx[k]] >= 0 ? t->blk[t->aux[idx[k]]].size : 1;
        if (!(t->flags[idx[k]] & AD_FLAG_VARIABLE) || !p)
            continue;
        const double *sa = seed_arrays ? seed_arrays[k] : 0;
        for (int64_t e = 0; e < size; ++e)
            p[e] += sa ? sa[e] : seed[k];
    }
    for (int64_t i = top; i >= 0 && status == AD_OK; --i) {
        if (t->op[i] == AD_LEAF || !(t->flags[i] & AD_FLAG_VARIABLE))
            continue;
        if (t->aux[i] >= 0) {
            if (!t->blk[t->aux[i]].second_unset)
                status = second_array_step(t, i);
        } else if (t->lanes == 1) {
            status = second_step(t, i, 0, t->tan, t->dadj);
        } else {
            for (int64_t l = 0; l < t->lanes && status == AD_OK; ++l) {
                t->lane = l;
                status = second_step(t, i, 0, t->tan + l * t->cap,
                                     t->dadj + l * t->cap);
            }
            t->lane = 0;
        }
    }
    /* what nothing reached (or a failed sweep left) reads as zeros */
    for (int64_t i = 0; i <= top; ++i)
        if (t->flags[i] & AD_FLAG_VARIABLE)
            ad_second_settle(t, i);
    return status;
}
