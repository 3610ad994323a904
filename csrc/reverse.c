/* reverse.c -- the reverse sweep: adjoints from the seeds down to the leaves.
 *
 * One pass from the highest seed down to entry 0.  An entry takes part only
 * if a seed depends on it (the MARK bit, spread to the operands of every
 * marked entry as the sweep passes it), so backward from a root touches only
 * the root's own graph, however much else the tape holds.
 *
 * An entry whose adjoint is exactly zero propagates nothing: its local
 * derivative is never multiplied in, so a NaN or inf derivative on a branch
 * that does not matter (log at 0 times a zero adjoint, say) never turns into
 * a NaN gradient.                                                          */
#include <math.h>
#include <stdlib.h>

#include "internal.h"
#include "rules.h"

/* micrograd's arithmetic keeps a gradient an int while it only ever adds
 * ints: the table's INT column says how each op hands one down (rules.h).
 * Returns whether entry i hands operand k (0: a, 1: b) a float.  Only the
 * in-place (micrograd) sweep asks.                                        */
static int hands_float(const ad_tape *t, int64_t i, int k)
{
    const uint8_t *f = t->flags;
    if (f[i] & AD_FLAG_GRAD_FLOAT)
        return 1;
/* the INT column's rules: is what the op hands operand k a float? */
#define INT_PASS 0                      /* out.grad itself */
#define INT_TIMES_OTHER                 /* other.data * out.grad */          \
    !(f[k == 0 ? t->b[i] : t->a[i]] & AD_FLAG_VALUE_INT)
#define INT_POWER                       /* c * x**(c-1) * out.grad */        \
    !((f[i] & AD_FLAG_IMM_INT) && (f[t->a[i]] & AD_FLAG_VALUE_INT) &&        \
      t->imm[i] >= 1.0)
#define INT_FLOAT 1
#define INT_CASE(CODE, NAME, AR, KIND, INT) case CODE: return INT_##INT;
#define INT_CASE_EW(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
    INT_CASE(CODE, NAME, AR, KIND, INT)
    switch ((enum ad_op)t->op[i]) {
    AD_OPS(INT_CASE, INT_CASE_EW)
    case AD_NUM_OPS:
        break;
    }
#undef INT_CASE
#undef INT_CASE_EW
#undef INT_PASS
#undef INT_TIMES_OTHER
#undef INT_POWER
#undef INT_FLOAT
    return 1;
}

/* The array kernels: entry i's adjoint block g (adj, or grad in place),
 * its rules once per element, into its operands' adjoint blocks (a
 * broadcast operand's collects every element it fed).  Each op's case
 * in reverse_step below runs one for an array entry whose adjoint is
 * set.  In a fresh (ACCUM) sweep an operand's adjoint block may still be
 * unset (ad_adjoint_claim): a kernel that writes each of its elements
 * once reads the old value as (z ? 0 : old), so the block needs no
 * memset first.                                                           */

/* an array entry's views, adjoints from this sweep's g, and its constant */
#define VIEWS                                                                \
    ad_view o = ad_entry_view(t, i, g);                                      \
    ad_view a = ad_entry_view(t, t->a[i], g);                                \
    const double c = t->imm[i];                                              \
    (void)c
#define CLAIM(j, once) (g != t->grad ? ad_adjoint_claim(t, (j), (once)) : 0)

/* Elementwise ops: a constant operand has no adjoint block, so the loop
 * for a binary op with one leaves it out.  A zero adjoint contributes
 * exactly nothing (ad_azmul), branch-free so the loops vectorise.  An
 * operand of the output's shape (not broadcast) that is not also the
 * other one is written once per element.                                  */
#define NO_KERNEL(CODE, NAME, ARITY, KIND, INT)
#define OPERANDS                                                             \
    const double g = gv[ko], x = xv[ka], y = yv[kb], v = vv[ko];             \
    (void)x; (void)y; (void)v; (void)c
#define ELEMENTWISE_KERNEL(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA,    \
                           DAB, DBB)                                         \
    AD_SIMD_CLONES static int reverse_##CODE(ad_tape *t, double *g,          \
                                             int64_t i)                      \
    {                                                                        \
        VIEWS;                                                               \
        ad_view b = AR == 2 ? ad_entry_view(t, t->b[i], g) : a;              \
        const int avar = (t->flags[t->a[i]] & AD_FLAG_VARIABLE) != 0;        \
        const int bvar = AR == 2 && (t->flags[t->b[i]] & AD_FLAG_VARIABLE);  \
        const int two = t->a[i] == t->b[i];                                  \
        const int za =                                                       \
            avar ? CLAIM(t->a[i], !two && ad_same_shape(&a, &o)) : 0;        \
        const int zb =                                                       \
            bvar ? CLAIM(t->b[i], !two && ad_same_shape(&b, &o)) : 0;        \
        ad_iter it;                                                          \
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);                      \
        double *const ga = a.adj, *const gb = b.adj;                         \
        const double *const gv = o.adj, *const xv = a.val, *const yv = b.val, \
                     *const vv = o.val;                                      \
        if (AR == 1 || (avar && bvar))                                       \
            AD_ITERATE(&it, {                                                \
                OPERANDS;                                                    \
                ga[ka] = (za ? 0.0 : ga[ka]) + ad_azmul((DA), g);            \
                if (AR == 2)                                                 \
                    gb[kb] = (zb ? 0.0 : gb[kb]) + ad_azmul((DB), g);        \
            });                                                              \
        else if (avar)                                                       \
            AD_ITERATE(&it, {                                                \
                OPERANDS;                                                    \
                ga[ka] = (za ? 0.0 : ga[ka]) + ad_azmul((DA), g);            \
            });                                                              \
        else                                                                 \
            AD_ITERATE(&it, {                                                \
                OPERANDS;                                                    \
                gb[kb] = (zb ? 0.0 : gb[kb]) + ad_azmul((DB), g);            \
            });                                                              \
        return AD_OK;                                                        \
    }
AD_OPS(NO_KERNEL, ELEMENTWISE_KERNEL)
#undef ELEMENTWISE_KERNEL
#undef OPERANDS

/* Reductions iterate over the operand's elements, the output broadcast. */
AD_SIMD_CLONES static int reverse_sum(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    const int za = CLAIM(t->a[i], 1);     /* each element written once */
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    int64_t n;
    if (ad_iter_rows(&it, &n)) {
        /* the share divided out once per row (the strided loop with a
         * division per element was a fifth of a large array's reverse
         * sweep) */
        AD_ITERATE(&it, {
            const double share = o.adj[ko] / c;
            double *const row = a.adj + ka;
            for (int64_t r = 0; r < n; ++r)
                row[r] = (za ? 0.0 : row[r]) + share;
        });
    } else {
        AD_ITERATE(&it, a.adj[ka] = (za ? 0.0 : a.adj[ka]) + o.adj[ko] / c);
    }
    return AD_OK;
}

/* MAX and MIN: the gradient goes to the elements equal to the result,
 * split evenly among ties; the others (and NaN results) get nothing */
AD_SIMD_CLONES static int reverse_extreme(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    CLAIM(t->a[i], 0);
    double *ties = ad_ties(t, i);
    if (!ties)
        return ad_fail(t, AD_ENOMEM, i, "out of memory in max/min");
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, {
        if (a.val[ka] == o.val[ko] && o.adj[ko] != 0.0)
            a.adj[ka] += o.adj[ko] / ties[ko];
    });
    free(ties);
    return AD_OK;
}

/* LSE: the softmax times g, into each operand element once */
AD_SIMD_CLONES static int reverse_lse(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    const int za = CLAIM(t->a[i], 1);
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_LSE_EACH(&it, o.val, a.val,
                a.adj[ka] = (za ? 0.0 : a.adj[ka]) + ad_azmul(s, o.adj[ko]));
    return AD_OK;
}

/* PROD: g times the product of the other elements of the group, into each
 * operand element once.  That product is the one of the elements before
 * it (a first pass keeps it per element) times the one of those after it
 * (a second pass, in reverse order): exact where elements are zero, which
 * the product divided by the element is not. */
AD_SIMD_CLONES static int reverse_prod(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    const int64_t size = t->blk[t->aux[i]].size;
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    if (it.size == 0)
        return AD_OK;
    double *run = malloc((size_t)size * sizeof *run);
    double *before = malloc((size_t)it.size * sizeof *before);
    if (!run || !before) {
        free(run);
        free(before);
        return ad_fail(t, AD_ENOMEM, i, "out of memory in prod");
    }
    const int za = CLAIM(t->a[i], 1);
    for (int64_t k = 0; k < size; ++k)
        run[k] = 1.0;
    AD_ITERATE(&it, { before[ka] = run[ko]; run[ko] *= a.val[ka]; });
    for (int64_t k = 0; k < size; ++k)
        run[k] = 1.0;
    int64_t lo, la;
    ad_iter_last(&it, &lo, &la);
    AD_ITERATE(&it, {
        const int64_t ro = lo - ko, ra = la - ka;
        a.adj[ra] = (za ? 0.0 : a.adj[ra])
                    + ad_azmul(before[ra] * run[ro], o.adj[ro]);
        run[ro] *= a.val[ra];
    });
    free(run);
    free(before);
    return AD_OK;
}

AD_SIMD_CLONES static int reverse_reshape(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    const int64_t size = t->blk[t->aux[i]].size;
    const int za = CLAIM(t->a[i], 1);
    for (int64_t k = 0; k < size; ++k)
        a.adj[k] = (za ? 0.0 : a.adj[k]) + o.adj[k];
    return AD_OK;
}

/* repeated indices accumulate */
AD_SIMD_CLONES static int reverse_gather(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    CLAIM(t->a[i], 0);
    AD_GATHER_EACH(&t->blk[t->aux[i]], a.adj[ks] += o.adj[ko]);
    return AD_OK;
}

/* a scatter's operand is written once per element */
AD_SIMD_CLONES static int reverse_scatter(ad_tape *t, double *g, int64_t i)
{
    VIEWS;
    const ad_block *bk = &t->blk[t->aux[i]];
    const int za = CLAIM(t->a[i], 1);
    for (int64_t k = 0; k < bk->nmap; ++k)
        a.adj[k] = (za ? 0.0 : a.adj[k]) + o.adj[bk->map[k]];
    return AD_OK;
}
#undef VIEWS
#undef CLAIM

/* detect_anomaly after array entry i's kernel: its variable operands'
 * adjoints are finite (a constant operand has no adjoint block). */
static int check_adjoints(ad_tape *t, double *g, int64_t i)
{
    const int32_t opnd[2] = {t->a[i], t->b[i]};
    for (int k = 0; k < 2; ++k) {
        if (opnd[k] < 0 || !(t->flags[opnd[k]] & AD_FLAG_VARIABLE))
            continue;
        ad_view e = ad_entry_view(t, opnd[k], g);
        int64_t size = 1;
        for (int d = 0; d < e.ndim; ++d)
            size *= e.shape[d];
        for (int64_t j = 0; j < size; ++j)
            if (!isfinite(e.adj[j]))
                return ad_fail(t, AD_ENONFINITE, i, "backward of %s at tape "
                               "index %lld produced %s", ad_op_name(t->op[i]),
                               (long long)i, isnan(e.adj[j]) ? "nan" : "inf");
    }
    return AD_OK;
}

/* One step of the sweep: entry i's adjoint (adj[i], or its block), times
 * the local derivatives, into its operands' adjoints; for an array entry
 * (array: t->aux[i] >= 0) by its kernel, then, with check, their adjoints
 * are checked.  ad_backward runs this down the tape, ad_reverse_step on
 * one entry (micrograd's node._backward()).                               */
AD_HOT_INLINE int reverse_step(ad_tape *t, double *adj, int64_t i, int check,
                               const int array)
{
    AD_TRACE_STEP("rev", t, i, adj, AD_TRACE_ADJ);
    /* a zero adjoint hands nothing down (an unset block is one) */
    if (array ? adj != t->grad && t->blk[t->aux[i]].adj_unset : adj[i] == 0.0)
        return AD_OK;
    const double g = adj[i];
    const int32_t a = t->a[i], b = t->b[i];
    const double *val = t->val;
    const double x = a >= 0 ? val[a] : 0.0, y = b >= 0 ? val[b] : 0.0;
    const double v = val[i], c = t->imm[i];
    (void)x; (void)y; (void)v; (void)c;
    int status = AD_OK;
/* an array entry runs its kernel, a scalar one the rule after this */
#define ARRAY(kernel)                                                        \
    if (array) {                                                             \
        status = kernel(t, adj, i);                                          \
        break;                                                               \
    }
    switch ((enum ad_op)t->op[i]) {
#define ELEMENTWISE(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB) \
    case CODE:                                                               \
        ARRAY(reverse_##CODE)                                                \
        adj[a] += (DA) * g;                                                  \
        if (AR == 2)                                                         \
            adj[b] += (DB) * g;                                              \
        break;
    AD_OPS(NO_KERNEL, ELEMENTWISE)
#undef ELEMENTWISE
    case AD_LEAF:    return AD_OK;
    case AD_SUM:     ARRAY(reverse_sum) adj[a] += g / c; break;  /* of one */
    case AD_MAX: case AD_MIN: ARRAY(reverse_extreme) adj[a] += g; break;
    case AD_LSE:
        ARRAY(reverse_lse)
        adj[a] += ad_lse_weight(x, v) * g;
        break;
    case AD_PROD:    ARRAY(reverse_prod) adj[a] += g; break;     /* of one */
    case AD_RESHAPE: ARRAY(reverse_reshape) adj[a] += g; break;
    case AD_GATHER:  ARRAY(reverse_gather) adj[a] += g; break;
    case AD_SCATTER: ARRAY(reverse_scatter) adj[a] += g; break;
    case AD_EXTERN:
        if (array && ad_native_matmul(t, i)) {
            status = ad_matmul_reverse(t, adj, i);
            break;
        }
        return ad_call_extern(t, t->extern_reverse, i, "reverse");
    case AD_NUM_OPS: return ad_fail(t, AD_EINVAL, i, "bad op at %lld",
                                    (long long)i);
    }
#undef ARRAY
    return status == AD_OK && array && check ? check_adjoints(t, adj, i)
                                             : status;
}
#undef NO_KERNEL

AD_NOINLINE static int reverse_array_step(ad_tape *t, double *adj,
                                          int64_t i, int check)
{
    return reverse_step(t, adj, i, check, 1);
}

/* the step of entry i, scalar or array (AD_NOINLINE) */
AD_HOT_INLINE int reverse_split(ad_tape *t, double *adj, int64_t i, int check)
{
    return t->aux[i] < 0 ? reverse_step(t, adj, i, check, 0)
                         : reverse_array_step(t, adj, i, check);
}

/* reverse_step with what the plain sweep leaves out: micrograd's integer
 * typing of gradients (in place) and, with check, a scalar entry's
 * operands' adjoints checked.                                             */
static int reverse_entry(ad_tape *t, double *adj, int64_t i, int mode,
                         int check)
{
    int32_t a = t->a[i], b = t->b[i];
    if (mode == AD_SWEEP_INPLACE) {
        /* micrograd calls every reached node's _backward, zero or not */
        if (a >= 0 && hands_float(t, i, 0))
            t->flags[a] |= AD_FLAG_GRAD_FLOAT;
        if (b >= 0 && hands_float(t, i, 1))
            t->flags[b] |= AD_FLAG_GRAD_FLOAT;
    }
    if (t->aux[i] >= 0)
        return reverse_array_step(t, adj, i, check);
    int status = reverse_step(t, adj, i, check, 0);
    if (status == AD_OK && check && ((a >= 0 && !isfinite(adj[a])) ||
                                     (b >= 0 && !isfinite(adj[b]))))
        return ad_fail(t, AD_ENONFINITE, i, "backward of %s at tape index "
                       "%lld produced %s", ad_op_name(t->op[i]), (long long)i,
                       isnan(a >= 0 && !isfinite(adj[a]) ? adj[a] : adj[b])
                           ? "nan" : "inf");
    return status;
}

int ad_backward(ad_tape *t, int64_t nseeds, const int64_t *idx,
                const double *seed, int mode, int check)
{
    return ad_backward_arrays(t, nseeds, idx, seed, 0, mode, check);
}

/* Seeds: entry idx[k] gets adjoint seed[k] (every element of an array), or
 * for an array with seed_arrays[k] non-NULL, that array (its size). */
int ad_backward_arrays(ad_tape *t, int64_t nseeds, const int64_t *idx,
                       const double *seed, const double *const *seed_arrays,
                       int mode, int check)
{
    if (mode != AD_SWEEP_ACCUM && mode != AD_SWEEP_INPLACE &&
        mode != AD_SWEEP_LEAVES)
        return ad_fail(t, AD_EINVAL, -1, "unknown sweep mode %d", mode);
    int64_t top = -1;
    const int64_t n = ad_len(t);
    for (int64_t k = 0; k < nseeds; ++k) {
        if (idx[k] < 0 || idx[k] >= n)
            return ad_fail(t, AD_ERANGE, idx[k], "backward from entry %lld "
                           "outside the tape's %lld entries",
                           (long long)idx[k], (long long)n);
        if (idx[k] > top)
            top = idx[k];
    }
    const int32_t *A = t->a, *B = t->b;
    uint8_t *f = t->flags;
    /* In place (micrograd) the sweep runs through grad itself, so gradients
     * left by an earlier backward are propagated again, as micrograd does. */
    double *g = mode == AD_SWEEP_INPLACE ? t->grad : t->adj;

    int status = AD_OK;
    if (mode != AD_SWEEP_INPLACE)
        for (int64_t i = 0; i <= top; ++i) {
            f[i] &= (uint8_t)~AD_FLAG_MARK;
            g[i] = 0.0;
        }
    else
        for (int64_t i = 0; i <= top; ++i)
            f[i] &= (uint8_t)~AD_FLAG_MARK;
    for (int64_t k = 0; k < nseeds; ++k) {
        if (!(f[idx[k]] & AD_FLAG_MARK)) {
            /* a reached entry has a gradient (optimizers skip the others) */
            f[idx[k]] |= AD_FLAG_MARK | AD_FLAG_HAS_GRAD;
            if ((status = ad_block_prepare(t, idx[k], mode)) != AD_OK)
                return status;
        }
        if (t->aux[idx[k]] >= 0) {
            ad_block *bk = &t->blk[t->aux[idx[k]]];
            double *ga = mode == AD_SWEEP_INPLACE ? bk->grad : bk->adj;
            const double *sa = seed_arrays ? seed_arrays[k] : 0;
            const int z = mode != AD_SWEEP_INPLACE && ad_adjoint_claim(t, idx[k], 1);
            const double s = seed[k];
            const int64_t size = bk->size;
            if (sa == ga && z)
                ;                   /* the seed is the block (ad_adjoint_take) */
            else if (sa)
                for (int64_t e = 0; e < size; ++e)
                    ga[e] = (z ? 0.0 : ga[e]) + sa[e];
            else
                for (int64_t e = 0; e < size; ++e)
                    ga[e] = (z ? 0.0 : ga[e]) + s;
        } else if (mode == AD_SWEEP_INPLACE) {
            g[idx[k]] = seed[k];        /* micrograd: self.grad = 1 */
            f[idx[k]] &= (uint8_t)~AD_FLAG_GRAD_FLOAT;
        } else {
            g[idx[k]] += seed[k];
        }
    }

    for (int64_t i = top; i >= 0; --i) {
        /* Only variables pass adjoints down.  Every other marked entry is
         * a seed that depends on no variable (a comparison's mask, or a
         * sum of one): its operands are constants, which have no adjoint
         * blocks to write into (a comparison of variables, the one
         * exception, has zero derivatives).                               */
        if ((f[i] & (AD_FLAG_MARK | AD_FLAG_VARIABLE))
                != (AD_FLAG_MARK | AD_FLAG_VARIABLE))
            continue;
        /* constants (operands depending on no variable) are not swept;
         * an array operand gets its (zeroed) adjoint block when first
         * reached, so a sweep costs what the root's graph costs */
#define REACH(j)                                                             \
        if ((j) >= 0 && (f[j] & (AD_FLAG_VARIABLE | AD_FLAG_MARK))           \
                            == AD_FLAG_VARIABLE) {                           \
            f[j] |= AD_FLAG_MARK | AD_FLAG_HAS_GRAD;                         \
            if (t->aux[j] >= 0 &&                                            \
                (status = ad_block_prepare(t, (j), mode)) != AD_OK)          \
                return status;                                               \
        }
        REACH(A[i])
        REACH(B[i])
#undef REACH
        status = mode != AD_SWEEP_INPLACE && !check
                     ? reverse_split(t, g, i, 0)
                     : reverse_entry(t, g, i, mode, check);
        if (status != AD_OK)
            return status;
    }

    /* accumulated gradients are floats (micrograd's Values reached from an
     * explicit tape's sweep are accumulated this way too) */
    if (mode != AD_SWEEP_INPLACE)
        for (int64_t i = 0; i <= top; ++i) {
            if (!(f[i] & AD_FLAG_MARK) ||
                (mode == AD_SWEEP_LEAVES && t->op[i] != AD_LEAF))
                continue;
            f[i] |= AD_FLAG_GRAD_FLOAT;
            if (t->aux[i] < 0) {
                t->grad[i] += g[i];
                continue;
            }
            ad_block *bk = &t->blk[t->aux[i]];
            if (bk->adj_unset && bk->grad)
                continue;               /* this sweep gave it nothing */
            ad_adjoint_settle(t, i);
            if (!bk->grad) {
                /* the first gradient is this sweep's adjoint: keep the
                 * block instead of copying it (a new one comes next sweep) */
                bk->grad = bk->adj;
                bk->adj = 0;
                continue;
            }
            double *gr = bk->grad;
            const double *ad = bk->adj;
            const int64_t size = bk->size;
            for (int64_t e = 0; e < size; ++e)
                gr[e] += ad[e];
        }
    return AD_OK;
}

int ad_reverse_step(ad_tape *t, int64_t i)
{
    const int64_t n = ad_len(t);
    if (i < 0 || i >= n)
        return ad_fail(t, AD_ERANGE, i, "entry %lld outside the tape's %lld "
                       "entries", (long long)i, (long long)n);
    int64_t touched[3] = {i, t->a[i], t->b[i]};
    for (int k = 0; k < 3; ++k) {
        if (touched[k] < 0)
            continue;
        int status = ad_block_prepare(t, touched[k], AD_SWEEP_INPLACE);
        if (status != AD_OK)
            return status;
        t->flags[touched[k]] |= AD_FLAG_HAS_GRAD;
    }
    return reverse_entry(t, t->grad, i, AD_SWEEP_INPLACE, 0);
}
