/* tape.c -- allocation, growth, bulk append and compaction of a tape. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* op, a, b, aux; imm, val, adj, grad; flags, variable */
#define BYTES_PER_ENTRY ((int64_t)(4 * sizeof(int32_t) + 4 * sizeof(double) + 2))

int ad_fail(ad_tape *t, int status, int64_t index, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->errmsg, sizeof t->errmsg, fmt, ap);
    va_end(ap);
    t->err_index = index;
    return status;
}

ad_tape *ad_tape_new(void)
{
    ad_tape *t = calloc(1, sizeof *t);
    if (t) {
        t->err_index = -1;
        t->max_entries = AD_MAX_ENTRIES;
        t->max_bytes = -1;
        t->lanes = t->lane_room = 1;
    }
    return t;
}

/* A block's tangent scratch: room for a copy per lane. */
static void free_lanes(const ad_tape *t, ad_block *bk)
{
    ad_block_release(bk->tan, bk->size * t->lane_room);
    ad_block_release(bk->dadj, bk->size * t->lane_room);
    bk->tan = bk->dadj = 0;
}

static void free_block(const ad_tape *t, ad_block *bk)
{
    ad_block_release(bk->adj, bk->size);
    if (!bk->grad_borrowed)     /* Python's: it outlives the entry */
        ad_block_release(bk->grad, bk->size);
    free_lanes(t, bk);
    free(bk->map);
    bk->adj = bk->grad = bk->tan = bk->dadj = 0;
    bk->map = 0;
    bk->grad_borrowed = 0;
}

void ad_drop_tangent_arrays(ad_tape *t)
{
    free(t->tan);
    free(t->dadj);
    t->tan = t->dadj = 0;
}

int ad_tangent_arrays(ad_tape *t, int second)
{
    const size_t count = (size_t)(t->cap ? t->cap : 1) * (size_t)t->lane_room;
    if (!t->tan && !(t->tan = malloc(count * sizeof *t->tan)))
        return ad_fail(t, AD_ENOMEM, -1, "out of memory for tangents");
    if (second && !t->dadj && !(t->dadj = malloc(count * sizeof *t->dadj)))
        return ad_fail(t, AD_ENOMEM, -1, "out of memory for tangents");
    return AD_OK;
}

void ad_set_lanes(ad_tape *t, int64_t lanes)
{
    if (lanes > t->lane_room) {     /* the scratch again, with more room */
        for (int64_t k = 0; k < AD_COUNT_LOAD(t->nblk); ++k)
            free_lanes(t, &t->blk[k]);
        ad_drop_tangent_arrays(t);
        t->lane_room = lanes;
    }
    t->lanes = lanes;
    t->lane = 0;        /* (ad_select_lane's, for reading, may be another) */
}

void ad_tape_free(ad_tape *t)
{
    if (!t)
        return;
    free(t->op);
    free(t->a);
    free(t->b);
    free(t->aux);
    free(t->imm);
    free(t->val);
    free(t->adj);
    free(t->grad);
    free(t->flags);
    free(t->variable);
    ad_drop_tangent_arrays(t);
    for (int64_t k = 0; k < t->nblk; ++k)
        free_block(t, &t->blk[k]);
    ad_table_release(t->blk, t->blk_cap);
    free(t);
}

/* Grow one array to cap elements.  On failure the old block stays valid, so
 * a failed reserve leaves the tape as it was (cap is raised only when every
 * array has grown). */
static int grow(void **p, int64_t cap, size_t size)
{
    void *q = realloc(*p, (size_t)cap * size);
    if (!q)
        return 0;
    *p = q;
    return 1;
}

int ad_tape_reserve(ad_tape *t, int64_t cap)
{
    if (cap <= t->cap)
        return AD_OK;
    if (cap > t->max_entries)
        return ad_fail(t, AD_ERANGE, -1, "tape is full: more than %lld "
                       "entries", (long long)t->max_entries);
    int64_t want = t->cap ? t->cap : 1024;
    while (want < cap)
        want *= 2;
    if (want > t->max_entries)
        want = t->max_entries;
    if (t->max_bytes >= 0 && want * BYTES_PER_ENTRY > t->max_bytes)
        return ad_fail(t, AD_ENOMEM, -1, "out of memory growing the tape to "
                       "%lld entries (allocation cap)", (long long)want);
    if (!grow((void **)&t->op, want, sizeof *t->op) ||
        !grow((void **)&t->a, want, sizeof *t->a) ||
        !grow((void **)&t->b, want, sizeof *t->b) ||
        !grow((void **)&t->aux, want, sizeof *t->aux) ||
        !grow((void **)&t->imm, want, sizeof *t->imm) ||
        !grow((void **)&t->val, want, sizeof *t->val) ||
        !grow((void **)&t->adj, want, sizeof *t->adj) ||
        !grow((void **)&t->grad, want, sizeof *t->grad) ||
        !grow((void **)&t->flags, want, sizeof *t->flags) ||
        !grow((void **)&t->variable, want, sizeof *t->variable))
        return ad_fail(t, AD_ENOMEM, -1,
                       "out of memory growing the tape to %lld entries",
                       (long long)want);
    t->cap = want;
    ad_drop_tangent_arrays(t);
    return AD_OK;
}

/* Append records packed by the Python side.  Every record is checked before
 * any is stored, so a bad batch leaves the tape unchanged. */
int ad_tape_append(ad_tape *t, const ad_record *recs, int64_t count)
{
    if (count < 0)
        return ad_fail(t, AD_EINVAL, -1, "negative record count");
    if (count > t->max_entries - t->n)
        return ad_fail(t, AD_ERANGE, -1, "tape is full: more than %lld "
                       "entries", (long long)t->max_entries);
    for (int64_t k = 0; k < count; ++k) {
        const ad_record *r = &recs[k];
        int64_t i = t->n + k;
        int arity = ad_op_arity(r->op);
        if (arity < 0)
            return ad_fail(t, AD_EINVAL, i, "entry %lld: unknown op code %d",
                           (long long)i, (int)r->op);
        int bad_a = arity >= 1 ? (r->a < 0 || r->a >= i) : r->a != -1;
        int bad_b = arity >= 2 ? (r->b < 0 || r->b >= i) : r->b != -1;
        if (r->op == AD_EXTERN && r->b == -1)
            bad_b = 0;                  /* an extern op may take one operand */
        if (bad_a || bad_b)
            return ad_fail(t, AD_EINVAL, i,
                           "entry %lld (%s): operands %d, %d must be earlier "
                           "entries", (long long)i, ad_op_name(r->op),
                           (int)r->a, (int)r->b);
    }
    int status = ad_tape_reserve(t, t->n + count);
    if (status != AD_OK)
        return status;
    for (int64_t k = 0; k < count; ++k) {
        int64_t i = t->n + k;
        t->op[i] = recs[k].op;
        t->a[i] = recs[k].a;
        t->b[i] = recs[k].b;
        t->aux[i] = -1;
        t->imm[i] = recs[k].imm;
        t->val[i] = recs[k].val;
        t->adj[i] = 0.0;
        t->grad[i] = 0.0;
        uint8_t keep = AD_FLAG_VALUE_INT | AD_FLAG_IMM_INT;
        if (recs[k].op == AD_LEAF)
            keep |= AD_FLAG_VARIABLE;
        const uint8_t f = (uint8_t)((recs[k].flags & keep) |
                                    ad_inherited_flags(t, recs[k].op,
                                                       recs[k].a, recs[k].b));
        t->flags[i] = f;
        t->variable[i] = f & AD_FLAG_VARIABLE;
    }
    AD_COUNT_STORE(t->n, t->n + count);
    return AD_OK;
}

/* Give back memory when the tape holds far fewer entries than allocated;
 * a failed shrink just keeps the larger blocks. */
static void shrink(ad_tape *t)
{
    int64_t want = t->n < 1024 ? 1024 : 2 * t->n;
    if (4 * t->n >= t->cap || want >= t->cap)
        return;
    grow((void **)&t->op, want, sizeof *t->op);
    grow((void **)&t->a, want, sizeof *t->a);
    grow((void **)&t->b, want, sizeof *t->b);
    grow((void **)&t->aux, want, sizeof *t->aux);
    grow((void **)&t->imm, want, sizeof *t->imm);
    grow((void **)&t->val, want, sizeof *t->val);
    grow((void **)&t->adj, want, sizeof *t->adj);
    grow((void **)&t->grad, want, sizeof *t->grad);
    grow((void **)&t->flags, want, sizeof *t->flags);
    grow((void **)&t->variable, want, sizeof *t->variable);
    /* blocks that did not shrink are larger: still valid for `want` */
    t->cap = want;
}

int ad_tape_compact(ad_tape *t, int64_t n, const uint8_t *keep,
                    int64_t *newidx)
{
    /* keep and newidx are n long: they must describe this tape exactly */
    if (n != t->n)
        return ad_fail(t, AD_EINVAL, -1, "compaction of %lld entries on a "
                       "tape of %lld", (long long)n, (long long)t->n);
    for (int64_t i = 0; i < n; ++i)
        t->flags[i] = (uint8_t)((t->flags[i] & ~AD_FLAG_MARK) |
                                (keep[i] ? AD_FLAG_MARK : 0));
    for (int64_t i = n - 1; i >= 0; --i) {
        if (!(t->flags[i] & AD_FLAG_MARK))
            continue;
        if (t->a[i] >= 0)
            t->flags[t->a[i]] |= AD_FLAG_MARK;
        if (t->b[i] >= 0)
            t->flags[t->b[i]] |= AD_FLAG_MARK;
    }
    int64_t j = 0, nb = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!(t->flags[i] & AD_FLAG_MARK)) {
            newidx[i] = -1;
            if (t->aux[i] >= 0)
                free_block(t, &t->blk[t->aux[i]]);
            continue;
        }
        if (t->aux[i] >= 0) {            /* blocks keep their order too */
            t->blk[nb] = t->blk[t->aux[i]];
            t->aux[i] = (int32_t)nb++;
        }
        newidx[i] = j;
        t->op[j] = t->op[i];
        /* operands are earlier entries, already renumbered */
        t->a[j] = t->a[i] >= 0 ? (int32_t)newidx[t->a[i]] : -1;
        t->b[j] = t->b[i] >= 0 ? (int32_t)newidx[t->b[i]] : -1;
        t->aux[j] = t->aux[i];
        t->imm[j] = t->imm[i];
        t->val[j] = t->val[i];
        t->adj[j] = t->adj[i];
        t->grad[j] = t->grad[i];
        t->flags[j] = (uint8_t)(t->flags[i] & ~AD_FLAG_MARK);
        t->variable[j] = t->variable[i];
        ++j;
    }
    AD_COUNT_STORE(t->n, j);
    AD_COUNT_STORE(t->nblk, nb);
    ad_drop_tangent_arrays(t);
    shrink(t);
    return AD_OK;
}

int64_t ad_tape_nbytes(const ad_tape *t)
{
    return (int64_t)sizeof *t + t->cap * BYTES_PER_ENTRY;
}
