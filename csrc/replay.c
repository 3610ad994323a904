/* replay.c -- a recorded function replayed at new inputs, in one call.
 *
 * Write the leaves, run the forward sweep, check the guards, run the
 * reverse sweep, read the gradients (ad.h, ad_replay_plan).  ad.record's
 * replays, its one-call value_and_grad and the C minimizer's evaluations
 * are all this function, so a replay means one thing, and a guard one
 * comparison, wherever it runs.  The plan comes from Python (or from a
 * file through it): every index in it is checked before anything is
 * written, so a stale or malformed plan is an error, never a wild write. */
#include <math.h>
#include <string.h>

#include "internal.h"

/* The numbers entry e holds: 1 for a scalar, its block's size for an
 * array (e and its aux checked by the caller). */
static int64_t entry_size(const ad_tape *t, int64_t e)
{
    return t->aux[e] < 0 ? 1 : t->blk[t->aux[e]].size;
}

static int is_entry(const ad_tape *t, int64_t e)
{
    return e >= 0 && e < ad_len(t) && t->aux[e] < AD_COUNT_LOAD(t->nblk);
}

int ad_replay_check(ad_tape *t, const ad_replay_plan *p, int64_t *n)
{
    if (!p)
        return ad_fail(t, AD_EINVAL, -1, "no replay plan");
    if (p->nleaves < 0 || (p->nleaves && !p->leaf))
        return ad_fail(t, AD_EINVAL, -1, "no variables");
    int64_t total = 0;
    for (int64_t k = 0; k < p->nleaves; ++k) {
        int64_t e = p->leaf[k];
        if (!is_entry(t, e) || t->op[e] != AD_LEAF)
            return ad_fail(t, AD_EINVAL, -1, "variable %lld: entry %lld is "
                           "not a leaf of the tape", (long long)k, (long long)e);
        total += entry_size(t, e);
    }
    if (p->nguards < 0 || p->nexpected < 0 ||
        (p->nguards && (!p->guard || (p->nexpected && !p->expected))))
        return ad_fail(t, AD_EINVAL, -1, "guards not set");
    int64_t want = 0;
    for (int64_t k = 0; k < p->nguards; ++k) {
        int64_t e = p->guard[k];
        if (!is_entry(t, e))
            return ad_fail(t, AD_EINVAL, -1, "guard %lld: entry %lld is not "
                           "an entry of the tape", (long long)k, (long long)e);
        want += entry_size(t, e);
    }
    if (want != p->nexpected)
        return ad_fail(t, AD_EINVAL, -1, "the guards' entries hold %lld "
                       "numbers, %lld expected ones given", (long long)want,
                       (long long)p->nexpected);
    if (p->output >= 0 && (!is_entry(t, p->output) ||
                           entry_size(t, p->output) != 1))
        return ad_fail(t, AD_EINVAL, -1, "objective entry %lld is not one "
                       "number of the tape's %lld entries",
                       (long long)p->output, (long long)ad_len(t));
    *n = total;
    return AD_OK;
}

/* The first guard that does not hold, or -1. */
static int64_t flipped_guard(const ad_tape *t, const ad_replay_plan *p)
{
    const double *want = p->expected;
    for (int64_t k = 0; k < p->nguards; ++k) {
        int64_t e = p->guard[k];
        if (t->aux[e] < 0) {
            if (!ad_same_number(t->val[e], *want++))
                return k;
            continue;
        }
        const ad_block *bk = &t->blk[t->aux[e]];
        for (int64_t i = 0; i < bk->size; ++i)
            if (!ad_same_number(bk->val[i], want[i]))
                return k;
        want += bk->size;
    }
    return -1;
}

void ad_write_leaves(ad_tape *t, const ad_replay_plan *p, const double *x,
                     const uint8_t *mask, int want)
{
    for (int64_t k = 0; k < p->nleaves; ++k) {
        if (mask && mask[k] != want)
            continue;
        int64_t e = p->leaf[k];
        if (t->aux[e] < 0) {
            t->imm[e] = *x++;           /* the forward sweep sets val = imm */
            continue;
        }
        ad_block *bk = &t->blk[t->aux[e]];
        if (bk->size > 0)
            memcpy(bk->val, x, (size_t)bk->size * sizeof *x);
        x += bk->size;
    }
}

/* The gradients of entries idx[0 .. n - 1] start from zero: what a sweep
 * adds is the gradient of this replay alone. */
int ad_zero_grads(ad_tape *t, int64_t n, const int64_t *idx)
{
    for (int64_t k = 0; k < n; ++k) {
        int64_t e = idx[k];
        if (t->aux[e] < 0) {
            t->grad[e] = 0.0;
            continue;
        }
        int status = ad_array_zero_grad(t, e);
        if (status != AD_OK)
            return status;
    }
    return AD_OK;
}

/* The gradients of entries idx[0 .. n - 1] into g, one after another; an
 * entry the sweep did not reach has none (the output does not depend on
 * it): zeros. */
void ad_read_grads(ad_tape *t, int64_t n, const int64_t *idx, double *g)
{
    for (int64_t k = 0; k < n; ++k) {
        int64_t e = idx[k];
        if (t->aux[e] < 0) {
            *g++ = t->grad[e];
            continue;
        }
        int64_t size = t->blk[t->aux[e]].size;
        const double *src = ad_array_grad(t, e);
        if (size > 0 && src)
            memcpy(g, src, (size_t)size * sizeof *g);
        else
            for (int64_t i = 0; i < size; ++i)
                g[i] = 0.0;
        g += size;
    }
}

int ad_replay(ad_tape *t, const ad_replay_plan *p, const double *x, int mode,
              int check, double *f, double *g, int64_t *flipped)
{
    int64_t n;
    int status = ad_replay_check(t, p, &n);
    if (status != AD_OK)
        return status;
    if (!flipped)
        return ad_fail(t, AD_EINVAL, -1, "replay: no room for the guard's result");
    if (mode != AD_REPLAY_VALUES && (p->output < 0 || !f || (n && !g)))
        return ad_fail(t, AD_EINVAL, -1, "replay: a gradient needs an "
                       "objective entry and room for the value and gradient");
    *flipped = -1;
    if (x)          /* NULL: the caller has written the leaves itself */
        ad_write_leaves(t, p, x, 0, 0);
    if ((status = ad_forward(t, 0, ad_len(t), 0)) != AD_OK)
        return status;
    if ((*flipped = flipped_guard(t, p)) >= 0 || mode == AD_REPLAY_VALUES)
        return AD_OK;
    int32_t aux = t->aux[p->output];
    *f = aux < 0 ? t->val[p->output] : t->blk[aux].val[0];
    if (mode == AD_REPLAY_GRAD_FINITE && !isfinite(*f))
        return AD_OK;
    if ((status = ad_zero_grads(t, p->nleaves, p->leaf)) != AD_OK)
        return status;
    const double one = 1.0;
    status = ad_backward_arrays(t, 1, &p->output, &one, 0, AD_SWEEP_LEAVES,
                                check);
    if (status != AD_OK)
        return status;
    ad_read_grads(t, p->nleaves, p->leaf, g);
    return AD_OK;
}
