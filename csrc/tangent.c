/* tangent.c -- the forward-mode sweep: tangents from the leaves up.
 *
 * A tangent is the derivative of an entry's value along one direction in
 * the inputs: seed the leaves' tangents with that direction, and each entry
 * gets  tan = DA * tan[a] + DB * tan[b]  (rules.h's first partials), so one
 * sweep gives a Jacobian-vector product.  Only variables are swept: a
 * constant has tangent 0 and is never read.  A zero tangent contributes
 * nothing, and nor does a zero partial (ad_pzmul): an infinite partial on
 * a branch the direction does not move never turns into a NaN, and nor
 * does a NaN tangent on np.where's branch not taken.
 *
 * One sweep may carry several directions, the tape's lanes (ad.h): an
 * elementwise kernel computes its partials once per element and applies
 * them to every lane, which is most of the work saved; the linear
 * kernels, whose partials are constants, and the rules of scalar and
 * extern entries run once per lane (ad_each_lane).                       */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "rules.h"

/* The array kernels: entry i's tangent block from its operands'.  Each
 * op's case in tangent_step below runs one for an array entry.          */

/* an array entry's views, whether its operands are variables (a
 * constant's tangent is 0 and never read), its block and constant */
#define VIEWS                                                                \
    ad_view o = ad_entry_view(t, i, 0);                                      \
    ad_view a = ad_entry_view(t, t->a[i], 0);                                \
    const ad_block *bk = &t->blk[t->aux[i]];                                 \
    const double c = t->imm[i];                                              \
    (void)bk; (void)c

/* Elementwise ops: DA * dx + DB * dy per element and lane.  As in the
 * second-order sweep, the loop is compiled for each combination of
 * variable operands (AV, BV: constants; a constant's tangent is never
 * read) and has no branch, so it vectorises.                             */
#define NO_KERNEL(CODE, NAME, ARITY, KIND, INT)
#define TANGENT_ELEMENTS(AR, AV, BV, DA, DB)                                 \
    AD_BY_LANES(t, AD_ITERATE(&it, {                                         \
        const double x = a.val[ka], y = b.val[kb], v = o.val[ko];            \
        (void)x; (void)y; (void)v; (void)c;                                  \
        const double da = AV ? DA : 0.0, db = AR == 2 && BV ? DB : 0.0;      \
        (void)da; (void)db;                                                  \
        AD_FOR_LANES(nl, {                                                   \
            const double dx = AV ? a.tan[ka + l * a.ls] : 0.0;               \
            const double dy = AR == 2 && BV ? b.tan[kb + l * b.ls] : 0.0;    \
            (void)dx; (void)dy;                                              \
            o.tan[ko + l * o.ls] = (AV ? ad_pzmul(da, dx) : 0.0)             \
                + (AR == 2 && BV ? ad_pzmul(db, dy) : 0.0);                  \
        });                                                                  \
    }))
#define ELEMENTWISE_KERNEL(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA,    \
                           DAB, DBB)                                         \
    AD_SIMD_CLONES static int tangent_##CODE(ad_tape *t, int64_t i)          \
    {                                                                        \
        VIEWS;                                                               \
        ad_view b = AR == 2 ? ad_entry_view(t, t->b[i], 0) : a;              \
        const int avar = (t->flags[t->a[i]] & AD_FLAG_VARIABLE) != 0;        \
        const int bvar = AR == 2 && (t->flags[t->b[i]] & AD_FLAG_VARIABLE);  \
        ad_iter it;                                                          \
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);                      \
        if (AR == 1 || (avar && bvar))                                       \
            TANGENT_ELEMENTS(AR, 1, 1, DA, DB);                              \
        else if (avar)                                                       \
            TANGENT_ELEMENTS(AR, 1, 0, DA, DB);                              \
        else                                                                 \
            TANGENT_ELEMENTS(AR, 0, 1, DA, DB);                              \
        return AD_OK;                                                        \
    }
AD_OPS(NO_KERNEL, ELEMENTWISE_KERNEL)
#undef ELEMENTWISE_KERNEL
#undef TANGENT_ELEMENTS

/* Reductions iterate over the operand's elements, the output broadcast;
 * a sum's tangent is the sum of the tangents, summed as its value is. */
AD_SIMD_CLONES static int tangent_sum(ad_tape *t, int64_t i)
{
    VIEWS;
    ad_sum_into(o.tan, a.tan, &o, &a, bk->size, c);
    return AD_OK;
}

/* MAX and MIN: the mean tangent of the elements equal to the result: the
 * transpose of the reverse sweep's even split among ties */
AD_SIMD_CLONES static int tangent_extreme(ad_tape *t, int64_t i)
{
    VIEWS;
    double *ties = ad_ties(t, i);
    if (!ties)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in max/min");
    for (int64_t k = 0; k < bk->size; ++k)
        o.tan[k] = 0.0;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, {
        if (a.val[ka] == o.val[ko])
            o.tan[ko] += a.tan[ka] / ties[ko];
    });
    free(ties);
    return AD_OK;
}

/* LSE: the softmax-weighted sum of the operand's tangents */
AD_SIMD_CLONES static int tangent_lse(ad_tape *t, int64_t i)
{
    VIEWS;
    for (int64_t k = 0; k < bk->size; ++k)
        o.tan[k] = 0.0;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_LSE_EACH(&it, o.val, a.val, o.tan[ko] += ad_pzmul(s, a.tan[ka]));
    return AD_OK;
}

/* PROD: a product's tangent along its group, element after element as
 * its value is multiplied, (p, dp) (x, dx) = (p x, dp x + p dx): no
 * division, so exact where elements are zero */
AD_SIMD_CLONES static int tangent_prod(ad_tape *t, int64_t i)
{
    VIEWS;
    double *run = bk->size ? malloc((size_t)bk->size * sizeof *run) : 0;
    if (bk->size && !run)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in prod");
    for (int64_t k = 0; k < bk->size; ++k) {
        run[k] = 1.0;
        o.tan[k] = 0.0;
    }
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, {
        const double x = a.val[ka], p = run[ko];
        o.tan[ko] = ad_pzmul(x, o.tan[ko]) + ad_pzmul(p, a.tan[ka]);
        run[ko] = p * x;
    });
    free(run);
    return AD_OK;
}

AD_SIMD_CLONES static int tangent_reshape(ad_tape *t, int64_t i)
{
    VIEWS;
    for (int64_t k = 0; k < bk->size; ++k)
        o.tan[k] = a.tan[k];
    return AD_OK;
}

AD_SIMD_CLONES static int tangent_gather(ad_tape *t, int64_t i)
{
    VIEWS;
    AD_GATHER_EACH(bk, o.tan[ko] = a.tan[ks]);
    return AD_OK;
}

AD_SIMD_CLONES static int tangent_scatter(ad_tape *t, int64_t i)
{
    VIEWS;
    for (int64_t k = 0; k < bk->size; ++k)
        o.tan[k] = 0.0;
    for (int64_t k = 0; k < bk->nmap; ++k)
        o.tan[bk->map[k]] += a.tan[k];
    return AD_OK;
}
#undef VIEWS

/* An extern entry's rule for lane t->lane. */
static int tangent_extern(ad_tape *t, int64_t i)
{
    return ad_native_matmul(t, i) ? ad_matmul_tangent(t, i)
                                  : ad_call_extern(t, t->extern_tangent, i,
                                                   "tangent");
}

/* One step of the sweep: entry i's tangent, a scalar's from its operands'
 * tangents in lane t->lane (tan: that lane's), an array's (array:
 * t->aux[i] >= 0) by its kernel in every lane. */
AD_HOT_INLINE int tangent_step(ad_tape *t, int64_t i, const int array,
                               double *tan)
{
    const int32_t a = t->a[i], b = t->b[i];
    const uint8_t *f = t->flags;
    const double x = a >= 0 ? t->val[a] : 0.0, y = b >= 0 ? t->val[b] : 0.0;
    const double dx = a >= 0 && (f[a] & AD_FLAG_VARIABLE) ? tan[a] : 0.0;
    const double dy = b >= 0 && (f[b] & AD_FLAG_VARIABLE) ? tan[b] : 0.0;
    const double v = t->val[i], c = t->imm[i];
    (void)x; (void)y; (void)v; (void)c; (void)dy;
    int status = AD_OK;
/* an array entry runs its kernel (for every lane at once, or once per
 * lane: EACH), a scalar one the rule after this */
#define ARRAY(kernel)                                                        \
    if (array) {                                                             \
        status = kernel(t, i);                                               \
        break;                                                               \
    }
#define EACH(kernel)                                                         \
    if (array) {                                                             \
        status = ad_each_lane(t, i, kernel);                                 \
        break;                                                               \
    }
    switch ((enum ad_op)t->op[i]) {
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
    case CODE:                                                               \
        ARRAY(tangent_##CODE)                                                \
        tan[i] = ad_pzmul(DA, dx) + (AR == 2 ? ad_pzmul(DB, dy) : 0.0);      \
        break;
    AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
    case AD_LEAF:    break;                       /* seeded */
    case AD_SUM:     EACH(tangent_sum) tan[i] = dx / c; break;  /* of one */
    case AD_MAX: case AD_MIN: EACH(tangent_extreme) tan[i] = dx; break;
    case AD_LSE:
        EACH(tangent_lse)
        tan[i] = ad_pzmul(ad_lse_weight(x, v), dx);
        break;
    case AD_PROD:    EACH(tangent_prod) tan[i] = dx; break;      /* of one */
    case AD_RESHAPE: EACH(tangent_reshape) tan[i] = dx; break;
    case AD_GATHER:  EACH(tangent_gather) tan[i] = dx; break;
    case AD_SCATTER: EACH(tangent_scatter) tan[i] = dx; break;
    case AD_EXTERN:  EACH(tangent_extern) status = tangent_extern(t, i); break;
    case AD_NUM_OPS:
        return ad_fail(t, AD_EINVAL, i, "bad op at %lld", (long long)i);
    }
#undef ARRAY
#undef EACH
    AD_TRACE_STEP("tan", t, i, 0, AD_TRACE_TAN);
    return status;
}
#undef NO_KERNEL

AD_NOINLINE static int tangent_array_step(ad_tape *t, int64_t i)
{
    return tangent_step(t, i, 1, t->tan);
}

/* Checks shared by the tangent and second-order sweeps' seeds. */
int ad_check_seeds(ad_tape *t, int64_t nseeds, const int64_t *idx,
                   int leaves_only)
{
    const int64_t n = ad_len(t);
    for (int64_t k = 0; k < nseeds; ++k) {
        if (idx[k] < 0 || idx[k] >= n)
            return ad_fail(t, AD_ERANGE, idx[k], "seed entry %lld outside "
                           "the tape's %lld entries", (long long)idx[k],
                           (long long)n);
        if (leaves_only && t->op[idx[k]] != AD_LEAF)
            return ad_fail(t, AD_EINVAL, idx[k], "a tangent seeds a leaf, "
                           "not entry %lld (%s)", (long long)idx[k],
                           ad_op_name(t->op[idx[k]]));
    }
    return AD_OK;
}

int ad_tangent(ad_tape *t, int64_t hi, int64_t lanes, int64_t nseeds,
               const int64_t *idx, const double *seed,
               const double *const *seed_arrays)
{
    const int64_t n = ad_len(t);
    if (hi < 0 || hi > n)
        return ad_fail(t, AD_ERANGE, -1, "tangent sweep to %lld outside the "
                       "tape's %lld entries", (long long)hi, (long long)n);
    if (lanes < 1 || lanes > AD_MAX_LANES)
        return ad_fail(t, AD_EINVAL, -1, "a tangent sweep carries 1 to %d "
                       "directions, not %lld", AD_MAX_LANES, (long long)lanes);
    int status = ad_check_seeds(t, nseeds, idx, 1);
    if (status != AD_OK)
        return status;
    ad_set_lanes(t, lanes);
    status = ad_tangent_arrays(t, 0);
    /* every variable leaf starts at 0; an operation's tangent is written
     * whole by its rule (its block allocated on first use) */
    for (int64_t i = 0; i < hi && status == AD_OK; ++i) {
        if (!(t->flags[i] & AD_FLAG_VARIABLE))
            continue;
        ad_block *bk = t->aux[i] >= 0 ? &t->blk[t->aux[i]] : 0;
        if (t->op[i] == AD_LEAF || !bk)
            status = ad_scratch_zero(t, i, 1);
        else if (!bk->tan && !(bk->tan = ad_block_calloc(bk->size * t->lane_room)))
            status = ad_fail(t, AD_ENOMEM, i, "out of memory for tangents");
    }
    if (status != AD_OK)
        return status;
    for (int64_t k = 0; k < nseeds; ++k) {
        int64_t size = t->aux[idx[k]] >= 0 ? t->blk[t->aux[idx[k]]].size : 1;
        if (!(t->flags[idx[k]] & AD_FLAG_VARIABLE))
            continue;               /* a constant leaf: nothing moves it */
        const double *sa = seed_arrays ? seed_arrays[k] : 0;
        for (int64_t l = 0; l < lanes; ++l) {
            double *p = ad_lane_scratch(t, idx[k], 1, l);
            for (int64_t e = 0; e < size; ++e)
                p[e] += sa ? sa[l * size + e] : seed[k];
        }
    }
    for (int64_t i = 0; i < hi && status == AD_OK; ++i) {
        if (t->op[i] == AD_LEAF || !(t->flags[i] & AD_FLAG_VARIABLE))
            continue;
        if (t->aux[i] >= 0) {
            status = tangent_array_step(t, i);
        } else if (lanes == 1) {
            status = tangent_step(t, i, 0, t->tan);
        } else {
            for (int64_t l = 0; l < lanes && status == AD_OK; ++l) {
                t->lane = l;
                status = tangent_step(t, i, 0, t->tan + l * t->cap);
            }
            t->lane = 0;
        }
    }
    return status;
}
