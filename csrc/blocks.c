/* blocks.c -- array entries: their blocks, shapes and broadcasting.
 *
 * An array entry is an ordinary tape entry (op, operands, imm) whose aux
 * indexes a block: values (borrowed from the Python Array), adjoints and
 * gradient (allocated here on first use), and shape.  Every shape reaching
 * the tape is checked here, so the sweeps can trust them.                  */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

double *ad_lane_scratch(ad_tape *t, int64_t i, int which, int64_t lane)
{
    if (t->aux[i] < 0) {
        double *base = which == 1 ? t->tan : t->dadj;
        return base ? &base[lane * t->cap + i] : 0;
    }
    ad_block *bk = &t->blk[t->aux[i]];
    double *base = which == 1 ? bk->tan : bk->dadj;
    return base ? base + lane * bk->size : 0;
}

double *ad_entry_scratch(ad_tape *t, int64_t i, int which)
{
    if (i < 0 || i >= ad_len(t) || which < 0 || which > 2)
        return 0;
    if (which != 1)     /* (a second-order extern rule's operand, say) */
        ad_second_settle(t, i);
    if (which > 0)
        return ad_lane_scratch(t, i, which, t->lane);
    if (t->aux[i] < 0)
        return t->adj ? &t->adj[i] : 0;
    ad_adjoint_settle(t, i);
    return t->blk[t->aux[i]].adj;
}

int ad_select_lane(ad_tape *t, int64_t lane)
{
    if (lane < 0 || lane >= t->lanes)
        return ad_fail(t, AD_ERANGE, -1, "lane %lld outside the last tangent "
                       "sweep's %lld", (long long)lane, (long long)t->lanes);
    t->lane = lane;
    return AD_OK;
}

int ad_scratch_zero(ad_tape *t, int64_t i, int which)
{
    if (t->aux[i] < 0) {
        if (which == 0)
            t->adj[i] = 0.0;
        else
            for (int64_t l = 0; l < t->lanes; ++l)
                *ad_lane_scratch(t, i, which, l) = 0.0;
        return AD_OK;
    }
    ad_block *bk = &t->blk[t->aux[i]];
    double **p = which == 0 ? &bk->adj : which == 1 ? &bk->tan : &bk->dadj;
    /* (tan and dadj: the lanes in use zeroed, room for lane_room made) */
    const int64_t count = which == 0 ? bk->size : bk->size * t->lanes;
    if (which == 0)
        bk->adj_unset = 0;
    if (*p)
        memset(*p, 0, (size_t)count * sizeof(double));
    else if (!(*p = ad_block_calloc(which == 0 ? count : bk->size * t->lane_room)))
        return ad_fail(t, AD_ENOMEM, i, "out of memory for tangents");
    return AD_OK;
}

/* Strides (in elements) of a C-contiguous operand of shape oshape, seen
 * from an iteration over nd dimensions, right-aligned as NumPy aligns
 * shapes: 0 where the operand has no such dimension or has it as 1.       */
static void broadcast_strides(int64_t *stride, int nd, const int64_t *shape,
                              int ondim, const int64_t *oshape)
{
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; --d) {
        int od = d - (nd - ondim);
        if (od < 0 || (oshape[od] == 1 && shape[d] != 1)) {
            stride[d] = 0;
        } else {
            stride[d] = s;
        }
        if (od >= 0)
            s *= oshape[od];
    }
}

static int same_shape(const ad_view *v, int nd, const int64_t *shape)
{
    if (v->ndim != nd)
        return 0;
    for (int d = 0; d < nd; ++d)
        if (v->shape[d] != shape[d])
            return 0;
    return 1;
}

int ad_same_shape(const ad_view *x, const ad_view *y)
{
    return same_shape(x, y->ndim, y->shape);
}

/* it over shape with the strides so, sa, sb of its three sides (sb unused
 * unless has_b). */
static void iter_merge(ad_iter *it, int nd, const int64_t *shape,
                       const int64_t *so, const int64_t *sa,
                       const int64_t *sb, int has_b)
{
    int64_t size = 1;
    for (int d = 0; d < nd; ++d)
        size *= shape[d];
    it->size = size;
    /* Merge dimension d into the one kept before it where every side steps
     * over the pair as over one dimension; dimensions of size 1 go.      */
    int m = 0;
    for (int d = 0; d < nd; ++d) {
        if (shape[d] == 1)
            continue;
        if (m > 0 && so[d] * shape[d] == it->so[m - 1]
                  && sa[d] * shape[d] == it->sa[m - 1]
                  && sb[d] * shape[d] == it->sb[m - 1]) {
            it->shape[m - 1] *= shape[d];
            it->so[m - 1] = so[d];
            it->sa[m - 1] = sa[d];
            it->sb[m - 1] = sb[d];
            continue;
        }
        it->shape[m] = shape[d];
        it->so[m] = so[d];
        it->sa[m] = sa[d];
        it->sb[m] = sb[d];
        ++m;
    }
    if (m == 0) {               /* one element (or a 0-d array) */
        it->shape[0] = 1;
        it->so[0] = it->sa[0] = it->sb[0] = 0;
        m = 1;
    }
    it->nd = m;
    it->unit = it->so[m - 1] == 1 && it->sa[m - 1] == 1 && it->sb[m - 1] == 1;
    if (!has_b)                 /* no second operand: its offsets are unused */
        it->unit = it->so[m - 1] == 1 && it->sa[m - 1] == 1;
}

void ad_iter_init(ad_iter *it, int nd, const int64_t *shape,
                  const ad_view *o, const ad_view *a, const ad_view *b)
{
    /* Every side of `shape` itself (the common case): one flat loop. */
    int64_t size = 1;
    for (int d = 0; d < nd; ++d)
        size *= shape[d];
    if (same_shape(o, nd, shape) && same_shape(a, nd, shape) &&
        (!b || same_shape(b, nd, shape))) {
        it->nd = 1;
        it->unit = 1;
        it->size = size;
        it->shape[0] = size;
        it->so[0] = it->sa[0] = it->sb[0] = 1;
        return;
    }
    int64_t so[AD_MAXDIM], sa[AD_MAXDIM], sb[AD_MAXDIM];
    broadcast_strides(so, nd, shape, o->ndim, o->shape);
    broadcast_strides(sa, nd, shape, a->ndim, a->shape);
    if (b)
        broadcast_strides(sb, nd, shape, b->ndim, b->shape);
    else
        memset(sb, 0, sizeof sb);
    iter_merge(it, nd, shape, so, sa, sb, b != 0);
}

void ad_iter_gather(ad_iter *it, const ad_block *bk)
{
    int64_t so[AD_MAXDIM], sb[AD_MAXDIM] = {0};
    int64_t s = 1;
    for (int d = bk->ndim - 1; d >= 0; --d) {   /* the output: C order */
        so[d] = s;
        s *= bk->shape[d];
    }
    iter_merge(it, bk->ndim, bk->shape, so, bk->stride, sb, 0);
}

/* Does an operand of shape (ondim, oshape) broadcast to (nd, shape)? */
static int broadcasts_to(int ondim, const int64_t *oshape, int nd,
                         const int64_t *shape)
{
    if (ondim > nd)
        return 0;
    for (int d = 0; d < ondim; ++d) {
        int64_t od = oshape[d], sd = shape[d + nd - ondim];
        if (od != sd && od != 1)
            return 0;
    }
    return 1;
}

static int entry_shape(ad_tape *t, int64_t j, int *ndim, const int64_t **shape)
{
    if (t->aux[j] < 0) {
        *ndim = 0;
        *shape = 0;
    } else {
        *ndim = t->blk[t->aux[j]].ndim;
        *shape = t->blk[t->aux[j]].shape;
    }
    return AD_OK;
}

/* The shape of an entry against its operands', by the op's kind. */
static int check_reduction(ad_tape *t, int op, int and_, const int64_t *ash,
                           int32_t ndim, const int64_t *shape)
{
    /* the output keeps every dimension: 1 where it is reduced over; or,
     * reduced over all of them, it is 0-d (it broadcasts to the operand's
     * every element just the same) */
    if (ndim == 0)
        return AD_OK;
    if (and_ != ndim)
        return ad_fail(t, AD_EINVAL, -1, "%s: output has %d dims, input %d",
                       ad_op_name(op), (int)ndim, and_);
    for (int d = 0; d < ndim; ++d)
        if (shape[d] != ash[d] && shape[d] != 1)
            return ad_fail(t, AD_EINVAL, -1, "%s: output dim %d is %lld, "
                           "input %lld", ad_op_name(op), d,
                           (long long)shape[d], (long long)ash[d]);
    return AD_OK;
}

static int check_reshape(ad_tape *t, int and_, const int64_t *ash,
                         int32_t ndim, const int64_t *shape)
{
    int64_t size = 1, asize = 1;
    for (int d = 0; d < ndim; ++d)
        size *= shape[d];
    for (int d = 0; d < and_; ++d)
        asize *= ash[d];
    if (size != asize)
        return ad_fail(t, AD_EINVAL, -1, "reshape: %lld elements into %lld",
                       (long long)asize, (long long)size);
    return AD_OK;
}

/* elementwise: every operand broadcasts to the output, and the output is
 * no larger than the operands make it */
static int check_broadcast(ad_tape *t, int op, int and_, const int64_t *ash,
                           int64_t b, int32_t ndim, const int64_t *shape)
{
    const int arity = ad_op_arity(op);
    int bnd = 0;
    const int64_t *bsh = 0;
    if (arity == 2)
        entry_shape(t, b, &bnd, &bsh);
    if (!broadcasts_to(and_, ash, ndim, shape) ||
        (arity == 2 && !broadcasts_to(bnd, bsh, ndim, shape)))
        return ad_fail(t, AD_EINVAL, -1, "%s: operand shapes do not "
                       "broadcast to the output", ad_op_name(op));
    for (int d = 0; d < ndim; ++d) {
        int da = d - (ndim - and_), db = d - (ndim - bnd);
        int64_t from_a = da >= 0 ? ash[da] : 1;
        int64_t from_b = arity == 2 && db >= 0 ? bsh[db] : 1;
        int64_t want = from_a == 1 ? from_b : from_a;   /* 1 stretches, 0 too */
        if (shape[d] != want)
            return ad_fail(t, AD_EINVAL, -1, "%s: output dim %d is %lld, the "
                           "operands make it %lld", ad_op_name(op), d,
                           (long long)shape[d], (long long)want);
    }
    return AD_OK;
}

/* op: a checked op code */
static int check_shapes(ad_tape *t, int op, int64_t a, int64_t b,
                        int32_t ndim, const int64_t *shape)
{
    int and_ = 0;
    const int64_t *ash = 0;
    if (a >= 0)
        entry_shape(t, a, &and_, &ash);
    switch ((enum ad_op_kind)ad_ops[op].kind) {
    case AD_KIND_LEAF:
    case AD_KIND_EXTERN:        /* shaped by Python */
        return AD_OK;
    case AD_KIND_MAP:
        return ad_fail(t, AD_EINVAL, -1, "%s needs its index map "
                       "(ad_array_append_map)", ad_op_name(op));
    case AD_KIND_REDUCE:
        return check_reduction(t, op, and_, ash, ndim, shape);
    case AD_KIND_MOVE:
        return check_reshape(t, and_, ash, ndim, shape);
    case AD_KIND_ELEMENTWISE:
    case AD_KIND_COMPARE:
        return check_broadcast(t, op, and_, ash, b, ndim, shape);
    }
    return AD_OK;
}

/* form: a GATHER's or SCATTER's map (map, nmap, or offset and stride,
 * checked by the caller), copied into the new block; NULL for the rest. */
static int append(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                  double *val, int32_t ndim, const int64_t *shape,
                  const ad_block *form);

/* Every array result is checked: a pass over it as long as the op's own,
 * so it gets the AVX2 build too. */
AD_SIMD_CLONES static int64_t count_nonfinite(const double *v, int64_t n)
{
    return ad_count_nonfinite(v, n);
}

int ad_array_append(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                    double *val, int32_t ndim, const int64_t *shape)
{
    int64_t same[AD_MAXDIM];
    if (ndim == -1) {           /* the shape of operand a */
        if (a < 0 || a >= t->n)
            return ad_fail(t, AD_EINVAL, t->n, "no operand to take a shape "
                           "from");
        const ad_block *ab = t->aux[a] >= 0 ? &t->blk[t->aux[a]] : 0;
        ndim = ab ? ab->ndim : 0;
        for (int d = 0; d < ndim; ++d)  /* a copy: blk may move on append */
            same[d] = ab->shape[d];
        shape = same;
    }
    int status = append(t, op, a, b, imm, val, ndim, shape, 0);
    if (status != AD_OK)
        return status;
    const ad_block *bk = &t->blk[t->aux[t->n - 1]];
    t->last_nonfinite = count_nonfinite(bk->val, bk->size);
    return AD_OK;
}

int ad_array_op(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                double *val)
{
    int status = ad_array_append(t, op, a, b, imm, val, -1, 0);
    return status == AD_OK && t->last_nonfinite ? -1 : status;
}

int ad_array_row(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                 double *rows, int64_t row)
{
    if (a < 0 || a >= t->n)
        return ad_fail(t, AD_EINVAL, t->n, "no operand to take a shape "
                       "from");
    int64_t size = t->aux[a] >= 0 ? t->blk[t->aux[a]].size : 1;
    if (size > AD_ROW_MAX || row < 0)
        return ad_fail(t, AD_EINVAL, t->n, "row %lld of %lld elements: rows "
                       "hold at most %d", (long long)row, (long long)size,
                       AD_ROW_MAX);
    return ad_array_op(t, op, a, b, imm, rows + row * size);
}

/* A rank and shape a block can hold: its size in bytes fits an int64.
 * *elements: its number of elements. */
static int check_shape(ad_tape *t, int32_t ndim, const int64_t *shape,
                       int64_t *elements)
{
    if (ndim < 0 || ndim > AD_MAXDIM)
        return ad_fail(t, AD_EINVAL, t->n, "bad array rank %d: arrays have "
                       "at most %d dimensions", (int)ndim, AD_MAXDIM);
    int64_t size = 1;
    for (int d = 0; d < ndim; ++d) {
        if (shape[d] < 0 || (shape[d] > 0 && size > INT64_MAX / 8 / shape[d]))
            return ad_fail(t, AD_EINVAL, t->n, "bad array shape");
        size *= shape[d];
    }
    *elements = size;
    return AD_OK;
}

/* What every array entry must be, whatever its form: a known op, a shape
 * (check_shape), and earlier entries as its operands, -1 where the op
 * has none.                                                             */
static int check_entry(ad_tape *t, int op, int64_t a, int64_t b,
                       int32_t ndim, const int64_t *shape, int64_t *size)
{
    int arity = ad_op_arity(op);
    int64_t i = t->n;
    if (arity < 0)
        return ad_fail(t, AD_EINVAL, i, "unknown op code %d", op);
    int status = check_shape(t, ndim, shape, size);
    if (status != AD_OK)
        return status;
    int bad_a = arity >= 1 ? (a < 0 || a >= i) : a != -1;
    int bad_b = arity >= 2 ? (b < 0 || b >= i) : b != -1;
    if (op == AD_EXTERN && b == -1)
        bad_b = 0;                      /* an extern op may take one operand */
    if (bad_a || bad_b)
        return ad_fail(t, AD_EINVAL, i, "entry %lld (%s): operands %lld, %lld "
                       "must be earlier entries", (long long)i,
                       ad_op_name(op), (long long)a, (long long)b);
    return AD_OK;
}

/* GATHER: nmap == the output's size, entries index the operand.
 * SCATTER: nmap == the operand's size, entries index the output. */
static int check_map(ad_tape *t, int op, int64_t a, int32_t ndim,
                     const int64_t *shape, const int64_t *map, int64_t nmap)
{
    if (ad_op_kind(op) != AD_KIND_MAP)
        return ad_fail(t, AD_EINVAL, -1, "%s takes no index map",
                       ad_op_name(op));
    if (a < 0 || a >= t->n)
        return ad_fail(t, AD_EINVAL, t->n, "%s: operand %lld is not an "
                       "earlier entry", ad_op_name(op), (long long)a);
    int64_t out_size;
    int status = check_shape(t, ndim, shape, &out_size);
    if (status != AD_OK)
        return status;
    int64_t in_size = t->aux[a] >= 0 ? t->blk[t->aux[a]].size : 1;
    int64_t want = op == AD_GATHER ? out_size : in_size;
    int64_t bound = op == AD_GATHER ? in_size : out_size;
    if (nmap != want)
        return ad_fail(t, AD_EINVAL, t->n, "%s: %lld indices for %lld "
                       "elements", ad_op_name(op), (long long)nmap,
                       (long long)want);
    for (int64_t k = 0; k < nmap; ++k)
        if (map[k] < 0 || map[k] >= bound)
            return ad_fail(t, AD_EINVAL, t->n, "%s: index %lld out of range "
                           "for %lld elements", ad_op_name(op),
                           (long long)map[k], (long long)bound);
    return AD_OK;
}

int ad_array_append_map(ad_tape *t, int op, int64_t a, double *val,
                        int32_t ndim, const int64_t *shape,
                        const int64_t *map, int64_t nmap)
{
    int status = check_map(t, op, a, ndim, shape, map, nmap);
    if (status != AD_OK)
        return status;
    int64_t *own = malloc((size_t)(nmap ? nmap : 1) * sizeof *own);
    if (!own)
        return ad_fail(t, AD_ENOMEM, t->n, "out of memory for an index map");
    if (nmap)                   /* map may be NULL for an empty selection */
        memcpy(own, map, (size_t)nmap * sizeof *own);
    ad_block form = {.map = own, .nmap = nmap};
    status = append(t, op, a, -1, 0.0, val, ndim, shape, &form);
    if (status != AD_OK && (t->n == 0 || t->aux[t->n - 1] < 0 ||
                            t->blk[t->aux[t->n - 1]].map != own))
        free(own);          /* not stored: an error before the entry existed */
    return status;
}

int ad_tape_reserve_blocks(ad_tape *t, int64_t cap)
{
    if (cap <= t->blk_cap)
        return AD_OK;
    if (!t->blk) {
        int64_t spare = 0;
        ad_block *nb = ad_table_take(&spare);
        if (nb) {
            t->blk = nb;
            t->blk_cap = spare;
            if (cap <= spare)
                return AD_OK;
        }
    }
    int64_t want = t->blk_cap ? t->blk_cap : 64;
    while (want < cap)
        want *= 2;
    ad_block *nb = realloc(t->blk, (size_t)want * sizeof *nb);
    if (!nb)
        return ad_fail(t, AD_ENOMEM, t->n, "out of memory for array blocks");
    t->blk = nb;
    t->blk_cap = want;
    return AD_OK;
}

static int append(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                  double *val, int32_t ndim, const int64_t *shape,
                  const ad_block *form)
{
    int64_t i = t->n;
    if (!val)
        return ad_fail(t, AD_EINVAL, i, "no values for an array entry");
    int64_t size;
    int status = check_entry(t, op, a, b, ndim, shape, &size);
    if (status == AD_OK && !form)
        status = check_shapes(t, op, a, b, ndim, shape);
    if (status == AD_OK && op == AD_EXTERN && imm == AD_EXTERN_MATMUL)
        status = ad_matmul_check(t, a, b, ndim, shape);
    if (status != AD_OK)
        return status;
    status = ad_tape_reserve(t, i + 1);
    if (status != AD_OK)
        return status;
    status = ad_tape_reserve_blocks(t, t->nblk + 1);
    if (status != AD_OK)
        return status;
    ad_block *bk = &t->blk[t->nblk];
    /* the fields before the strides; the strides and the shape are set
     * below as far as ndim (zeroing all of them cost more than the rest of
     * a small array's entry) */
    memset(bk, 0, offsetof(ad_block, stride));
    bk->adj_unset = 0;
    bk->second_unset = 0;
    if (form) {
        bk->map = form->map;
        bk->nmap = form->nmap;
        bk->offset = form->offset;
        for (int d = 0; d < ndim; ++d)
            bk->stride[d] = form->stride[d];
    }
    bk->val = val;
    bk->size = size;
    bk->ndim = ndim;
    for (int d = 0; d < ndim; ++d)
        bk->shape[d] = shape[d];
    t->op[i] = op;
    t->a[i] = (int32_t)a;
    t->b[i] = (int32_t)b;
    t->aux[i] = (int32_t)t->nblk;
    t->imm[i] = imm;
    t->val[i] = 0.0;
    t->adj[i] = 0.0;
    t->grad[i] = 0.0;
    t->flags[i] = op == AD_LEAF ? 0 : ad_inherited_flags(t, op, a, b);
    t->variable[i] = t->flags[i];
    AD_COUNT_STORE(t->nblk, t->nblk + 1);
    AD_COUNT_STORE(t->n, i + 1);
    if (op == AD_EXTERN && imm != AD_EXTERN_MATMUL)
        return AD_OK;       /* Python computed its values when recording it */
    return ad_forward_entry(t, i, 0);
}

/* Every element a strided GATHER reaches lies in its operand: the lowest
 * and highest reachable indices are checked, one dimension at a time, in
 * an order that cannot overflow (each dimension's span is first bounded
 * by the operand's size).  An empty output reaches nothing.              */
static int check_strided(ad_tape *t, int64_t a, int32_t ndim,
                         const int64_t *shape, int64_t offset,
                         const int64_t *stride)
{
    if (a < 0 || a >= t->n)
        return ad_fail(t, AD_EINVAL, t->n, "gather: operand %lld is not an "
                       "earlier entry", (long long)a);
    int64_t size;
    int status = check_shape(t, ndim, shape, &size);
    if (status != AD_OK)
        return status;
    const int empty = size == 0;
    int64_t in_size = t->aux[a] >= 0 ? t->blk[t->aux[a]].size : 1;
    if (!empty) {
        if (offset < 0 || offset >= in_size)
            return ad_fail(t, AD_EINVAL, t->n, "gather: offset %lld outside "
                           "the operand's %lld elements", (long long)offset,
                           (long long)in_size);
        int64_t lo = offset, hi = offset;
        for (int d = 0; d < ndim; ++d) {
            if (shape[d] < 2)
                continue;       /* one index: the stride is never taken */
            int64_t most = (in_size - 1) / (shape[d] - 1);
            if (stride[d] > most || stride[d] < -most)
                return ad_fail(t, AD_EINVAL, t->n, "gather: stride %lld of "
                               "dim %d reaches outside the operand's %lld "
                               "elements", (long long)stride[d], d,
                               (long long)in_size);
            int64_t span = stride[d] * (shape[d] - 1);
            if (span > 0)
                hi += span;
            else
                lo += span;
            if (lo < 0 || hi >= in_size)
                return ad_fail(t, AD_EINVAL, t->n, "gather: offset %lld and "
                               "strides reach element %lld of %lld",
                               (long long)offset, (long long)(lo < 0 ? lo : hi),
                               (long long)in_size);
        }
    }
    return AD_OK;
}

int ad_array_append_strided(ad_tape *t, int64_t a, double *val,
                            int32_t ndim, const int64_t *shape,
                            int64_t offset, const int64_t *stride)
{
    int status = check_strided(t, a, ndim, shape, offset, stride);
    if (status != AD_OK)
        return status;
    ad_block form = {.offset = offset};
    for (int d = 0; d < ndim; ++d)
        form.stride[d] = stride[d];
    return append(t, AD_GATHER, a, -1, 0.0, val, ndim, shape, &form);
}

int ad_array_check(ad_tape *t, int op, int64_t a, int64_t b, int32_t ndim,
                   const int64_t *shape, const int64_t *map, int64_t nmap,
                   const int64_t *stride, int64_t offset)
{
    int64_t size;
    int status = check_entry(t, op, a, b, ndim, shape, &size);
    if (status != AD_OK)
        return status;
    if (stride)
        return op == AD_GATHER ? check_strided(t, a, ndim, shape, offset, stride)
                               : ad_fail(t, AD_EINVAL, t->n, "%s cannot be "
                                         "strided", ad_op_name(op));
    if (map || ad_ops[op].kind == AD_KIND_MAP)
        return check_map(t, op, a, ndim, shape, map, nmap);
    return check_shapes(t, op, a, b, ndim, shape);
}

/* A leaf array: a variable (gradients wanted) or a constant. */
int ad_array_leaf(ad_tape *t, double *val, int32_t ndim, const int64_t *shape,
                  int variable)
{
    int status = append(t, AD_LEAF, -1, -1, 0.0, val, ndim, shape, 0);
    if (status == AD_OK && variable) {
        t->flags[t->n - 1] |= AD_FLAG_VARIABLE;
        t->variable[t->n - 1] = AD_FLAG_VARIABLE;
    }
    return status;
}

double *ad_entry_adjoint(ad_tape *t, int64_t i, int mode)
{
    if (i < 0 || i >= ad_len(t))
        return 0;
    if (t->aux[i] < 0)
        return mode == AD_SWEEP_INPLACE ? &t->grad[i] : &t->adj[i];
    ad_block *bk = &t->blk[t->aux[i]];
    double *p = mode == AD_SWEEP_INPLACE ? bk->grad : bk->adj;
    if (!p && ad_block_prepare(t, i, mode) != AD_OK)
        return 0;
    if (mode == AD_SWEEP_INPLACE)
        return bk->grad;
    ad_adjoint_settle(t, i);
    return bk->adj;
}

double *ad_entry_adjoint_claim(ad_tape *t, int64_t i, int mode, int *unset)
{
    *unset = 0;
    if (i < 0 || i >= ad_len(t))
        return 0;
    if (t->aux[i] < 0 || mode == AD_SWEEP_INPLACE)
        return ad_entry_adjoint(t, i, mode);
    ad_block *bk = &t->blk[t->aux[i]];
    if (!bk->adj && ad_block_prepare(t, i, mode) != AD_OK)
        return 0;
    *unset = ad_adjoint_claim(t, i, 1);
    return bk->adj;
}

/* The adjoint and gradient blocks of array entry i, allocated on first
 * use; a fresh sweep (ACCUM) starts with the adjoints unset (zero).        */
int ad_block_prepare(ad_tape *t, int64_t i, int mode)
{
    if (t->aux[i] < 0)
        return AD_OK;
    ad_block *bk = &t->blk[t->aux[i]];
    if (mode == AD_SWEEP_INPLACE) {
        /* in place, the sweep runs through grad itself */
        if (!bk->grad && !(bk->grad = ad_block_calloc(bk->size)))
            return ad_fail(t, AD_ENOMEM, i, "out of memory for gradients");
        return AD_OK;
    }
    /* not zeroed here: the first kernel to write it zeroes it or, where
     * it writes every element, assigns (ad_adjoint_claim) */
    if (!bk->adj && !(bk->adj = ad_buffer_alloc(bk->size)))
        return ad_fail(t, AD_ENOMEM, i, "out of memory for adjoints");
    bk->adj_unset = 1;
    return AD_OK;
}

/* The claims of the reverse sweep (adj, its flag adj_unset) and of the
 * second-order sweep (adj and every lane of dadj, second_unset). */
static int claim(ad_tape *t, int64_t j, int can_assign, int second)
{
    if (j < 0 || j >= ad_len(t) || t->aux[j] < 0)
        return 0;
    ad_block *bk = &t->blk[t->aux[j]];
    int32_t *unset = second ? &bk->second_unset : &bk->adj_unset;
    if (!*unset)
        return 0;
    *unset = 0;
    if (can_assign)
        return 1;
    memset(bk->adj, 0, (size_t)bk->size * sizeof(double));
    if (second)
        memset(bk->dadj, 0, (size_t)(bk->size * t->lanes) * sizeof(double));
    return 0;
}

int ad_adjoint_claim(ad_tape *t, int64_t j, int can_assign)
{
    return claim(t, j, can_assign, 0);
}

void ad_adjoint_settle(ad_tape *t, int64_t j)
{
    (void)claim(t, j, 0, 0);
}

int ad_second_claim(ad_tape *t, int64_t j, int can_assign)
{
    return claim(t, j, can_assign, 1);
}

void ad_second_settle(ad_tape *t, int64_t j)
{
    (void)claim(t, j, 0, 1);
}

double *ad_array_grad(ad_tape *t, int64_t i)
{
    if (i < 0 || i >= ad_len(t) || t->aux[i] < 0)
        return 0;
    return t->blk[t->aux[i]].grad;
}

int ad_array_zero_grad(ad_tape *t, int64_t i)
{
    if (i < 0 || i >= ad_len(t) || t->aux[i] < 0)
        return ad_fail(t, AD_ERANGE, i, "entry %lld is not an array",
                       (long long)i);
    ad_block *bk = &t->blk[t->aux[i]];
    if (bk->grad_borrowed) {    /* an .grad someone may hold: zeroed in place */
        memset(bk->grad, 0, (size_t)bk->size * sizeof(double));
        return AD_OK;
    }
    /* no gradient is a zero one: the block goes back to the cache, and
     * the next sweep's adjoint becomes the gradient without a copy (or a
     * pass of zeros now and one of additions then) */
    ad_block_release(bk->grad, bk->size);
    bk->grad = 0;
    return AD_OK;
}

int ad_array_borrow_grad(ad_tape *t, int64_t i, double *buf)
{
    if (i < 0 || i >= ad_len(t) || t->aux[i] < 0)
        return ad_fail(t, AD_ERANGE, i, "entry %lld is not an array",
                       (long long)i);
    ad_block *bk = &t->blk[t->aux[i]];
    if (bk->grad_borrowed || !buf)
        return ad_fail(t, AD_EINVAL, i, "entry %lld: its gradient has a "
                       "buffer already", (long long)i);
    if (bk->grad)
        memcpy(buf, bk->grad, (size_t)bk->size * sizeof(double));
    else
        memset(buf, 0, (size_t)bk->size * sizeof(double));
    ad_block_release(bk->grad, bk->size);
    bk->grad = buf;
    bk->grad_borrowed = 1;
    return AD_OK;
}

double *ad_array_grad_take(ad_tape *t, int64_t i)
{
    if (i < 0 || i >= ad_len(t) || t->aux[i] < 0)
        return 0;
    ad_block *bk = &t->blk[t->aux[i]];
    if (bk->grad_borrowed)
        return 0;
    double *p = bk->grad;
    bk->grad = 0;
    return p;
}

double *ad_adjoint_take(ad_tape *t, int64_t i, ad_tape *from, int64_t j)
{
    if (!t || !from || t == from || i < 0 || i >= ad_len(t) || j < 0 ||
        j >= ad_len(from) || t->aux[i] < 0 || from->aux[j] < 0)
        return 0;
    ad_block *dst = &t->blk[t->aux[i]], *src = &from->blk[from->aux[j]];
    if (!src->grad || src->grad_borrowed || dst->size != src->size)
        return 0;
    ad_block_release(dst->adj, dst->size);
    dst->adj = src->grad;
    src->grad = 0;
    return dst->adj;
}

double *ad_ties(ad_tape *t, int64_t i)
{
    const ad_block *bk = &t->blk[t->aux[i]];
    double *ties = calloc((size_t)(bk->size ? bk->size : 1), sizeof *ties);
    if (!ties)
        return 0;
    ad_view o = ad_value_view(t, i);
    ad_view a = ad_value_view(t, t->a[i]);
    ad_iter it;
    ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
    AD_ITERATE(&it, ties[ko] += a.val[ka] == o.val[ko]);
    return ties;
}
