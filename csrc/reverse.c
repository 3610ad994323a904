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
 * ints: out.grad through +, relu and * by int data, and c * x**(c-1) for
 * int x and int c >= 1.  Returns whether entry i hands operand k (0: a,
 * 1: b) a float.  Only the in-place (micrograd) sweep asks.               */
static int hands_float(const ad_tape *t, int64_t i, int k)
{
    const uint8_t *f = t->flags;
    if (f[i] & AD_FLAG_GRAD_FLOAT)
        return 1;
    switch ((enum ad_op)t->op[i]) {
    case AD_ADD: case AD_RELU:
        return 0;
    case AD_MUL:
        return !(f[k == 0 ? t->b[i] : t->a[i]] & AD_FLAG_VALUE_INT);
    case AD_POWC:
        return !((f[i] & AD_FLAG_IMM_INT) && (f[t->a[i]] & AD_FLAG_VALUE_INT)
                 && t->imm[i] >= 1.0);
    case AD_LEAF: case AD_SUB: case AD_DIV: case AD_POW: case AD_ADDC:
    case AD_MULC: case AD_DIVC: case AD_RSUBC: case AD_RDIVC: case AD_RPOWC:
    case AD_NEG: case AD_ABS: case AD_TANH: case AD_EXP: case AD_LOG:
    case AD_SIGMOID: case AD_SIN: case AD_COS: case AD_SQRT: case AD_SUM:
    case AD_RESHAPE: case AD_EXTERN: case AD_MAXIMUM: case AD_MINIMUM:
    case AD_SELECT: case AD_MAX: case AD_MIN: case AD_GATHER: case AD_SCATTER:
    case AD_LT: case AD_LE: case AD_EQ: case AD_NE: case AD_SQUARE:
    case AD_LSE: case AD_NUM_OPS:
        return 1;
    }
    return 1;
}

/* Entry i as an array: the rules once per element, operands broadcast
 * (a broadcast operand's adjoint collects every element it fed).  g is the
 * adjoint array of this sweep: adj, or grad in place.  In a fresh (ACCUM)
 * sweep an operand's adjoint block may still be unset (ad_adjoint_claim):
 * a kernel that writes each of its elements once reads the old value as
 * (z ? 0 : old), so the block needs no memset first.                      */
AD_SIMD_CLONES static int reverse_array(ad_tape *t, double *g, int64_t i, int check)
{
    int op = t->op[i];
    const int accum = g != t->grad;
    if (op == AD_LEAF)
        return AD_OK;
    if (accum && t->blk[t->aux[i]].adj_unset)
        return AD_OK;           /* nothing reached it: a zero adjoint */
    if (op == AD_EXTERN)
        return ad_call_extern(t, t->extern_reverse, i, "reverse");
    ad_view o = ad_entry_view(t, i, g);
    ad_view a = ad_entry_view(t, t->a[i], g);
    ad_view b = t->b[i] >= 0 ? ad_entry_view(t, t->b[i], g) : a;
    const double c = t->imm[i];
    ad_iter it;
#define CLAIM(j, once) (accum ? ad_adjoint_claim(t, (j), (once)) : 0)
    if (op == AD_SUM) {
        /* over the operand's elements: each written once */
        const int za = CLAIM(t->a[i], 1);
        ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
        int64_t n;
        if (ad_iter_rows(&it, &n)) {
            /* the share divided out once per row (the strided loop with a
             * division per element was a fifth of a large array's
             * reverse sweep) */
            AD_ITERATE(&it, {
                const double share = o.adj[ko] / c;
                double *const row = a.adj + ka;
                for (int64_t r = 0; r < n; ++r)
                    row[r] = (za ? 0.0 : row[r]) + share;
            });
        } else {
            AD_ITERATE(&it, a.adj[ka] = (za ? 0.0 : a.adj[ka]) + o.adj[ko] / c);
        }
    } else if (op == AD_MAX || op == AD_MIN) {
        CLAIM(t->a[i], 0);
        /* the gradient goes to the elements equal to the result, split
         * evenly among ties; the others (and NaN results) get nothing */
        double *ties = ad_ties(t, i);
        if (!ties)
            return ad_fail(t, AD_ENOMEM, i, "out of memory in max/min");
        ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
        AD_ITERATE(&it, {
            if (a.val[ka] == o.val[ko] && o.adj[ko] != 0.0)
                a.adj[ka] += o.adj[ko] / ties[ko];
        });
        free(ties);
    } else if (op == AD_LSE) {
        /* the softmax times g, into each operand element once */
        const int za = CLAIM(t->a[i], 1);
        ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
        AD_LSE_EACH(&it, o.val, a.val,
                    a.adj[ka] = (za ? 0.0 : a.adj[ka]) + ad_azmul(s, o.adj[ko]));
    } else if (op == AD_RESHAPE) {
        int64_t size = t->blk[t->aux[i]].size;
        const int za = CLAIM(t->a[i], 1);
        for (int64_t k = 0; k < size; ++k)
            a.adj[k] = (za ? 0.0 : a.adj[k]) + o.adj[k];
    } else if (op == AD_GATHER || op == AD_SCATTER) {
        /* repeated indices accumulate; a scatter's operand is written
         * once per element */
        const ad_block *bk = &t->blk[t->aux[i]];
        const int za = CLAIM(t->a[i], op == AD_SCATTER);
        if (op == AD_GATHER)
            AD_GATHER_EACH(bk, a.adj[ks] += o.adj[ko]);
        else
            for (int64_t k = 0; k < bk->nmap; ++k)
                a.adj[k] = (za ? 0.0 : a.adj[k]) + o.adj[bk->map[k]];
    } else {
        /* A constant operand has no adjoint block: the loop for a binary
         * op with one leaves it out.  A zero adjoint contributes exactly
         * nothing (ad_azmul), branch-free so the loops vectorise.         */
        const int avar = (t->flags[t->a[i]] & AD_FLAG_VARIABLE) != 0;
        const int bvar = t->b[i] >= 0 && (t->flags[t->b[i]] & AD_FLAG_VARIABLE);
        /* an operand of the output's shape (not broadcast) that is not
         * also the other one is written once per element */
        const int two = t->a[i] == t->b[i];
        const int za = avar ? CLAIM(t->a[i], !two && ad_same_shape(&a, &o)) : 0;
        const int zb = bvar ? CLAIM(t->b[i], !two && ad_same_shape(&b, &o)) : 0;
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);
        double *const ga = a.adj, *const gb = b.adj;
        const double *const gv = o.adj, *const xv = a.val, *const yv = b.val,
                     *const vv = o.val;
        switch ((enum ad_op)op) {
#define OPERANDS                                                             \
            const double g = gv[ko], x = xv[ka], y = yv[kb], v = vv[ko];     \
            (void)x; (void)y; (void)v; (void)c
#define ARRAY_CASE(OP, AR, EXPR, DA, DB, DAA, DAB, DBB)                      \
        case OP:                                                             \
            if (AR == 1 || (avar && bvar))                                   \
                AD_ITERATE(&it, {                                            \
                    OPERANDS;                                                \
                    ga[ka] = (za ? 0.0 : ga[ka]) + ad_azmul((DA), g);        \
                    if (AR == 2)                                             \
                        gb[kb] = (zb ? 0.0 : gb[kb]) + ad_azmul((DB), g);    \
                });                                                          \
            else if (avar)                                                   \
                AD_ITERATE(&it, {                                            \
                    OPERANDS;                                                \
                    ga[ka] = (za ? 0.0 : ga[ka]) + ad_azmul((DA), g);        \
                });                                                          \
            else                                                             \
                AD_ITERATE(&it, {                                            \
                    OPERANDS;                                                \
                    gb[kb] = (zb ? 0.0 : gb[kb]) + ad_azmul((DB), g);        \
                });                                                          \
            break;
        AD_ELEMENTWISE_RULES(ARRAY_CASE)
#undef ARRAY_CASE
#undef OPERANDS
#undef CLAIM
        case AD_LEAF: case AD_SUM: case AD_MAX: case AD_MIN: case AD_RESHAPE:
        case AD_GATHER: case AD_SCATTER: case AD_EXTERN: case AD_LSE:
        case AD_NUM_OPS:
            break;
        }
    }
    if (check) {
        /* a constant operand has no adjoint block: nothing to check */
        const int32_t opnd[2] = {t->a[i], t->b[i]};
        ad_view *ops[2] = {&a, &b};
        for (int k = 0; k < 2; ++k) {
            if (opnd[k] < 0 || !(t->flags[opnd[k]] & AD_FLAG_VARIABLE))
                continue;
            int64_t size = 1;
            for (int d = 0; d < ops[k]->ndim; ++d)
                size *= ops[k]->shape[d];
            for (int64_t e = 0; e < size; ++e)
                if (!isfinite(ops[k]->adj[e]))
                    return ad_fail(t, AD_ENONFINITE, i, "backward of %s at "
                                   "tape index %lld produced %s",
                                   ad_op_name(op), (long long)i,
                                   isnan(ops[k]->adj[e]) ? "nan" : "inf");
        }
    }
    return AD_OK;
}

/* Entry i's derivative rules (rules.h): add its adjoint g[i], times the
 * local derivatives, into the adjoints of its operands.  ad_backward runs
 * this down the tape, ad_reverse_step on one entry (micrograd's
 * node._backward()).                                                       */
/* A scalar entry's rule: adjoint g times the local derivatives into its
 * operands' adjoints.  Inlined into the sweep's loop, where replays spend
 * their time. */
AD_HOT_INLINE int reverse_scalar(ad_tape *t, double *adj, int64_t i)
{
    const double g = adj[i];
    AD_TRACE_STEP("rev", t, i, g);
    if (g == 0.0)
        return AD_OK;
    const int32_t a = t->a[i], b = t->b[i];
    const double *val = t->val;
    const double x = a >= 0 ? val[a] : 0.0, y = b >= 0 ? val[b] : 0.0;
    const double v = val[i], c = t->imm[i];
    (void)x; (void)y; (void)v; (void)c;
    switch ((enum ad_op)t->op[i]) {
#define SCALAR_CASE(OP, AR, EXPR, DA, DB, DAA, DAB, DBB)                     \
    case OP:                                                                 \
        adj[a] += (DA) * g;                                                  \
        if (AR == 2)                                                         \
            adj[b] += (DB) * g;                                              \
        break;
    AD_ELEMENTWISE_RULES(SCALAR_CASE)
#undef SCALAR_CASE
    case AD_LEAF:    break;
    case AD_SUM:     adj[a] += g / c; break;     /* the sum of one scalar */
    case AD_MAX: case AD_MIN: case AD_RESHAPE: case AD_GATHER: case AD_SCATTER:
        adj[a] += g; break;
    case AD_LSE:     adj[a] += ad_lse_weight(x, v) * g; break;  /* of one */
    case AD_EXTERN:  return ad_call_extern(t, t->extern_reverse, i, "reverse");
    case AD_NUM_OPS: return ad_fail(t, AD_EINVAL, i, "bad op at %lld",
                                    (long long)i);
    }
    return AD_OK;
}

/* Entry i's derivative rules (rules.h): add its adjoint g[i], times the
 * local derivatives, into the adjoints of its operands.  ad_backward runs
 * this down the tape, ad_reverse_step on one entry (micrograd's
 * node._backward()).                                                       */
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
        return reverse_array(t, adj, i, check);
    int status = reverse_scalar(t, adj, i);
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
        status = mode != AD_SWEEP_INPLACE && !check && t->aux[i] < 0
                     ? reverse_scalar(t, g, i)
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
