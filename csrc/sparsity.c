/* sparsity.c -- Jacobian and Hessian sparsity patterns from a tape, and
 * the colourings that evaluate them in few sweeps (sparsity.h).
 *
 * Every op is described once, by the elements each output element
 * depends on (for_each_edge) and by the pairs of operand elements its
 * second partials join (for_each_pair); the passes below only walk those:
 *
 *   1. need, downwards: the elements the result depends on (reachability);
 *   2. index sets, upwards: X(e), the inputs element e depends on;
 *   3. (Hessian) at each pair (p, q) of an element needed: every input in
 *      X(p) interacts with every one in X(q) -- Walther's nonlinear
 *      interaction sets, one per input, which are the Hessian's rows.
 *
 * An entry's index sets are freed after its last reader, so a long chain
 * of array ops holds a few entries' sets at a time.  Time is linear in the
 * edges for sets of bounded size.                                        */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "rules.h"
#include "sparsity.h"

/* -- allocations, with a fault hook for the tests: with
 * ad_sparsity_fail_after = k >= 0, the allocations after the k-th fail
 * (each failure must come back as AD_ENOMEM, nothing leaked or half
 * written); -1, the default, never. ------------------------------------ */
int64_t ad_sparsity_fail_after = -1;

static int sp_fault(void)
{
    if (ad_sparsity_fail_after < 0)
        return 0;
    if (ad_sparsity_fail_after == 0)
        return 1;
    --ad_sparsity_fail_after;
    return 0;
}

static void *sp_malloc(size_t n)
{
    return sp_fault() ? 0 : malloc(n);
}

static void *sp_calloc(size_t n, size_t size)
{
    return sp_fault() ? 0 : calloc(n, size);
}

static void *sp_realloc(void *p, size_t n)
{
    return sp_fault() ? 0 : realloc(p, n);
}

/* -- which first and second partials of an elementwise op can be nonzero:
 * rules.h's formulas, every one but the literal 0.0 -------------------- */
enum { P_DA, P_DB, P_DAA, P_DAB, P_DBB, P_COUNT };
#define SP_NOT_EW(CODE, NAME, ARITY, KIND, INT) {0, 0, 0, 0, 0},
#define SP_EW(CODE, NAME, AR, KIND, INT, VALUE, DA, DB, DAA, DAB, DBB)        \
    {#DA, #DB, #DAA, #DAB, #DBB},
static const char *const partials[AD_NUM_OPS][P_COUNT] = {
    AD_OPS(SP_NOT_EW, SP_EW)
};
#undef SP_NOT_EW
#undef SP_EW

static int partial_nonzero(int op, int which)
{
    const char *s = partials[op][which];
    return s && strcmp(s, "0.0") != 0;
}

/* Whether a partial's formula is 0 wherever z (rules.h's x, y or c) is
 * exactly 0, whatever the rest reads: z itself, "z == 0.0 ? 0.0 : ...",
 * or a mask "z != 0.0 ? ... : 0.0" (one conditional).  Where z is a
 * constant's element that is 0, the partial is no dependence: a product
 * with a constant (x * y, x * c), a select on a constant condition,
 * x ** 0.                                                               */
static int vanishes_with(int op, int which, char z)
{
    const char *f = partials[op][which];
    char zero[] = "? == 0.0 ? 0.0 :", mask[] = "? != 0.0 ? ";
    zero[0] = mask[0] = z;
    if (!f)
        return 0;
    if (f[0] == z && f[1] == 0)
        return 1;
    if (strncmp(f, zero, sizeof zero - 1) == 0)
        return 1;
    const size_t n = strlen(f);
    return strncmp(f, mask, sizeof mask - 1) == 0 && n > 6
           && strcmp(f + n - 6, " : 0.0") == 0 && strchr(f, '?') == strrchr(f, '?');
}

/* -- sorted sets of int64 ---------------------------------------------- */

static int cmp_i64(const void *p, const void *q)
{
    const int64_t a = *(const int64_t *)p, b = *(const int64_t *)q;
    return (a > b) - (a < b);
}

/* v[0..n) sorted, duplicates dropped; returns the new length */
static int64_t sort_unique(int64_t *v, int64_t n)
{
    if (n < 2)
        return n;
    if (n <= 24) {
        for (int64_t k = 1; k < n; ++k) {
            int64_t x = v[k], j = k;
            for (; j > 0 && v[j - 1] > x; --j)
                v[j] = v[j - 1];
            v[j] = x;
        }
    } else {
        qsort(v, (size_t)n, sizeof *v, cmp_i64);
    }
    int64_t m = 1;
    for (int64_t k = 1; k < n; ++k)
        if (v[k] != v[m - 1])
            v[m++] = v[k];
    return m;
}

/* Memory handed out in pieces from big blocks and freed all at once: an
 * interaction set per input would otherwise be a malloc of its own, and a
 * million small mallocs and frees cost more than the pattern's sweeps. */
typedef struct sp_arena {
    int64_t **blocks;
    int64_t nblocks, cap;
    int64_t *next;
    int64_t left;
} sp_arena;

static int64_t *arena_take(sp_arena *a, int64_t n)
{
    if (n > a->left) {
        if (a->nblocks == a->cap) {
            const int64_t cap = a->cap ? 2 * a->cap : 16;
            int64_t **b = sp_realloc(a->blocks, (size_t)cap * sizeof *b);
            if (!b)
                return 0;
            a->blocks = b;
            a->cap = cap;
        }
        const int64_t size = n > (1 << 18) ? n : (1 << 18);
        if (!(a->next = sp_malloc((size_t)size * sizeof *a->next)))
            return 0;
        a->blocks[a->nblocks++] = a->next;
        a->left = size;
    }
    int64_t *p = a->next;
    a->next += n;
    a->left -= n;
    return p;
}

static void arena_free(sp_arena *a)
{
    for (int64_t k = 0; k < a->nblocks; ++k)
        free(a->blocks[k]);
    free(a->blocks);
}

/* A growing set with duplicates dropped when it fills: an input's
 * interaction set.  A clean-up that leaves it more than half full grows it
 * (into a new piece of the arena: the old one stays unused), so each
 * element is sorted O(log) times and copied O(1) times on average.      */
typedef struct sp_vec {
    int64_t *v;
    int64_t len, cap;
} sp_vec;

static int vec_add(sp_arena *arena, sp_vec *s, const int64_t *src, int64_t m)
{
    if (s->len + m > s->cap) {
        s->len = sort_unique(s->v, s->len);
        if (s->len + m > s->cap / 2) {
            int64_t cap = 2 * (s->len + m);
            if (cap < 8)
                cap = 8;
            int64_t *p = arena_take(arena, cap);
            if (!p)
                return 0;
            for (int64_t k = 0; k < s->len; ++k)
                p[k] = s->v[k];
            s->v = p;
            s->cap = cap;
        }
    }
    for (int64_t k = 0; k < m; ++k)     /* a few: no memcpy call */
        s->v[s->len + k] = src[k];
    s->len += m;
    return 1;
}

/* -- the context of one pattern ------------------------------------------ */

/* An entry's index sets: element k's is idx[ptr[k] .. ptr[k+1]). */
typedef struct sp_sets {
    int64_t *ptr;
    int64_t *idx;
} sp_sets;

typedef struct sp_ctx {
    ad_tape *t;
    int64_t n;              /* entries looked at: [0, n)           */
    sp_sets *X;             /* per entry; ptr NULL: all empty      */
    uint8_t **need;         /* per entry and element; NULL: none   */
    int64_t *xsp;           /* per entry: its extern description or -1 */
    uint8_t *fixed;         /* per entry: a constant (fixed_entries) */
    const ad_extern_sparsity *specs;
    int64_t *count;         /* scratch of an entry's set building  */
    int64_t cur;            /* the entry an edge or pair belongs to */
    /* of entry cur and its operands (side 0, 1), set before its edges run:
     * the callbacks run per edge, and look nothing up                    */
    uint8_t *need_cur, *need_op[2];
    sp_sets *x_cur, *x_op[2];
    sp_vec *N;              /* Hessian: per input                  */
    sp_arena arena;         /* the memory of N's sets              */
    int64_t ncols;
    uint8_t *seen;          /* ncols flags, for sets of many elements */
    int64_t *last;          /* per entry: its last reader (pass 2)    */
    int taken;              /* the side whose sets entry cur took over, or -1:
                               its element k's sets are cur's element k's */
    int status;
} sp_ctx;

static int64_t entry_size(const ad_tape *t, int64_t j)
{
    return t->aux[j] < 0 ? 1 : t->blk[t->aux[j]].size;
}

static int is_variable(const ad_tape *t, int64_t j)
{
    return j >= 0 && (t->flags[j] & AD_FLAG_VARIABLE);
}

/* The operand an edge's side names (0: a, 1: b). */
static int64_t operand(const sp_ctx *s, int side)
{
    return side == 0 ? s->t->a[s->cur] : s->t->b[s->cur];
}

/* The values of entry cur's operand side where that operand is a
 * constant (fixed_entries), else NULL.                                  */
static const double *fixed_values(const sp_ctx *s, int side)
{
    const int64_t j = operand(s, side);
    return j >= 0 && s->fixed[j] ? ad_value_view(s->t, j).val : 0;
}

/* Whether operand side of elementwise entry cur can move it: a variable
 * whose partial is not 0, nor 0 by the entry's constant c (x * 0.0,
 * x ** 0).                                                              */
static int ew_moves(const sp_ctx *s, int side)
{
    const ad_tape *t = s->t;
    const int op = t->op[s->cur], which = side ? P_DB : P_DA;
    if ((side && ad_ops[op].arity != 2) || !is_variable(t, operand(s, side))
        || !partial_nonzero(op, which))
        return 0;
    return !(t->imm[s->cur] == 0.0 && vanishes_with(op, which, 'c'));
}

/* The values of the other operand of elementwise entry cur where it is a
 * constant and the partial on side vanishes where it is 0 (x * y, y a
 * constant: no edge from x where y is 0), else NULL.  Read where the
 * other operand's element is read (kb for side 0, ka for side 1).      */
static const double *ew_cut(const sp_ctx *s, int side)
{
    const int op = s->t->op[s->cur];
    if (ad_ops[op].arity != 2 || !vanishes_with(op, side ? P_DB : P_DA, side ? 'x' : 'y'))
        return 0;
    return fixed_values(s, 1 - side);
}

static int fail_nomem(sp_ctx *s);

/* -- the ops' structure ---------------------------------------------------- */

typedef void (*edge_fn)(sp_ctx *s, int64_t ko, int side, int64_t ka);
/* side 2 in a pair: the entry's own output element (its index set) */
typedef void (*pair_fn)(sp_ctx *s, int sp, int64_t kp, int sq, int64_t kq);

/* The matmul of an extern entry: a (..., m, k) or (k,), b (..., k, n) or
 * (k,), batch dimensions broadcast.  fn(ko, ka, kb) for every product
 * a[ka] * b[kb] summed into output element ko.                          */
typedef struct sp_matmul {
    int64_t m, k, n, batch;
    int nb;                             /* batch dimensions */
    int64_t bshape[AD_MAXDIM], sa[AD_MAXDIM], sb[AD_MAXDIM];
} sp_matmul;

static int matmul_plan(sp_ctx *s, sp_matmul *p)
{
    ad_tape *t = s->t;
    const int64_t i = s->cur;
    if (t->b[i] < 0)
        return ad_fail(t, AD_EINVAL, i, "entry %lld: a matrix product with "
                       "one operand", (long long)i);
    ad_view a = ad_value_view(t, t->a[i]), b = ad_value_view(t, t->b[i]),
            o = ad_value_view(t, i);
    if (a.ndim < 1 || b.ndim < 1)
        return ad_fail(t, AD_EINVAL, i, "entry %lld: a matrix product of a "
                       "0-d operand", (long long)i);
    p->m = a.ndim >= 2 ? a.shape[a.ndim - 2] : 1;
    p->k = a.shape[a.ndim - 1];
    p->n = b.ndim >= 2 ? b.shape[b.ndim - 1] : 1;
    const int64_t kb = b.ndim >= 2 ? b.shape[b.ndim - 2] : b.shape[0];
    const int na = a.ndim >= 2 ? a.ndim - 2 : 0, nbb = b.ndim >= 2 ? b.ndim - 2 : 0;
    p->nb = na > nbb ? na : nbb;
    /* the output: the batch, then m (if a is 2-D), then n (if b is) */
    const int ond = p->nb + (a.ndim >= 2) + (b.ndim >= 2);
    int ok = kb == p->k && o.ndim == ond;
    int64_t stra = p->m * p->k, strb = p->k * p->n;
    p->batch = 1;
    for (int d = p->nb - 1; d >= 0 && ok; --d) {
        const int da = d - (p->nb - na), db = d - (p->nb - nbb);
        const int64_t ea = da >= 0 ? a.shape[da] : 1, eb = db >= 0 ? b.shape[db] : 1;
        ok = ea == eb || ea == 1 || eb == 1;
        p->bshape[d] = ea > eb ? ea : eb;
        p->sa[d] = ea == 1 ? 0 : stra;
        p->sb[d] = eb == 1 ? 0 : strb;
        stra *= ea;
        strb *= eb;
        ok = ok && o.shape[d] == p->bshape[d];
        p->batch *= p->bshape[d];
    }
    if (ok && a.ndim >= 2)
        ok = o.shape[p->nb] == p->m;
    if (ok && b.ndim >= 2)
        ok = o.shape[ond - 1] == p->n;
    if (!ok)
        return ad_fail(t, AD_EINVAL, i, "entry %lld: the shapes of a matrix "
                       "product do not match its operands'", (long long)i);
    return AD_OK;
}

/* The offsets of one batch's matrices in a, b and the output: from the
 * first batch on, batch_next steps them through the broadcast batch.  */
typedef struct sp_batch {
    int64_t a, b, o;
    int64_t at[AD_MAXDIM];
} sp_batch;

static void batch_next(const sp_matmul *p, sp_batch *q)
{
    q->o += p->m * p->n;
    for (int d = p->nb - 1; d >= 0; --d) {
        q->a += p->sa[d];
        q->b += p->sb[d];
        if (++q->at[d] < p->bshape[d])
            return;
        q->a -= p->sa[d] * p->bshape[d];
        q->b -= p->sb[d] * p->bshape[d];
        q->at[d] = 0;
    }
}

/* The body runs with ko, ka, kb for every product of matmul plan p. */
#define SP_MATMUL_EACH(p, ...)                                               \
    do {                                                                     \
        sp_batch q_ = {0, 0, 0, {0}};                                        \
        for (int64_t n_ = 0; n_ < (p)->batch; ++n_, batch_next((p), &q_))    \
            for (int64_t r_ = 0; r_ < (p)->m; ++r_)                          \
                for (int64_t c_ = 0; c_ < (p)->n; ++c_)                      \
                    for (int64_t h_ = 0; h_ < (p)->k; ++h_) {                \
                        const int64_t ko = q_.o + r_ * (p)->n + c_;          \
                        const int64_t ka = q_.a + r_ * (p)->k + h_;          \
                        const int64_t kb = q_.b + h_ * (p)->n + c_;          \
                        __VA_ARGS__;                                         \
                    }                                                        \
    } while (0)

/* The edges of matmul plan p into its one variable operand, the other
 * (side 1 - var) a constant: only through the constant's nonzeros, each
 * row of its matrices (b's k rows of n, a's m rows of k) listed once,
 * so the time is the constant's size plus the edges.  A zero of a
 * constant multiplies its partner's element into nothing.             */
static int matmul_edges_fixed(sp_ctx *s, const sp_matmul *p, int var, edge_fn fn)
{
    const double *c = fixed_values(s, 1 - var);
    const int64_t len = var ? p->k : p->n;       /* the constant's row length */
    const int64_t size = entry_size(s->t, operand(s, 1 - var));
    if (size == 0 || len == 0 || p->m == 0)
        return AD_OK;
    const int64_t rows = size / len;
    int64_t *ptr = sp_malloc((size_t)(rows + 1) * sizeof *ptr);
    int64_t *col = sp_malloc((size_t)size * sizeof *col);
    if (!ptr || !col) {
        free(ptr);
        free(col);
        return fail_nomem(s);
    }
    int64_t top = 0;
    for (int64_t r = 0; r < rows; ++r) {
        ptr[r] = top;
        for (int64_t e = 0; e < len; ++e)
            if (c[r * len + e] != 0.0)
                col[top++] = e;
    }
    ptr[rows] = top;
    sp_batch q = {0, 0, 0, {0}};
    for (int64_t n = 0; n < p->batch; ++n, batch_next(p, &q))
        for (int64_t r = 0; r < p->m; ++r) {
            if (var == 0) {             /* a[r, h] on out[r, c] where b[h, c] != 0 */
                for (int64_t h = 0; h < p->k; ++h) {
                    const int64_t row = q.b / p->n + h;
                    for (int64_t e = ptr[row]; e < ptr[row + 1]; ++e)
                        fn(s, q.o + r * p->n + col[e], 0, q.a + r * p->k + h);
                }
            } else {                    /* b[h, c] on out[r, c] where a[r, h] != 0 */
                const int64_t row = q.a / p->k + r;
                for (int64_t e = ptr[row]; e < ptr[row + 1]; ++e)
                    for (int64_t cc = 0; cc < p->n; ++cc)
                        fn(s, q.o + r * p->n + cc, 1, q.b + col[e] * p->n + cc);
            }
        }
    free(ptr);
    free(col);
    return AD_OK;
}

/* An explicit extern pattern: in range and ordered. */
static int explicit_check(sp_ctx *s, const ad_extern_sparsity *x,
                          int64_t so, int64_t sab)
{
    if (!x->ptr || x->ptr[0] != 0)
        return ad_fail(s->t, AD_EINVAL, s->cur, "entry %lld: a malformed "
                       "extern sparsity pattern", (long long)s->cur);
    for (int64_t k = 0; k < so; ++k)
        if (x->ptr[k + 1] < x->ptr[k])
            return ad_fail(s->t, AD_EINVAL, s->cur, "entry %lld: a malformed "
                           "extern sparsity pattern", (long long)s->cur);
    if (!x->idx && x->ptr[so] > 0)      /* (none: no nonzeros, no idx) */
        return ad_fail(s->t, AD_EINVAL, s->cur, "entry %lld: a malformed "
                       "extern sparsity pattern", (long long)s->cur);
    for (int64_t p = 0; p < x->ptr[so]; ++p)
        if (x->idx[p] < 0 || x->idx[p] >= sab)
            return ad_fail(s->t, AD_EINVAL, s->cur, "entry %lld: an extern "
                           "sparsity pattern names operand element %lld of "
                           "%lld", (long long)s->cur, (long long)x->idx[p],
                           (long long)sab);
    return AD_OK;
}

static const ad_extern_sparsity *extern_of(const sp_ctx *s)
{
    const int64_t k = s->xsp[s->cur];
    return k >= 0 ? &s->specs[k] : 0;
}

/* Every (ko, side, ka): output element ko of entry s->cur depends on
 * element ka of operand side, a variable.                               */
static int for_each_edge(sp_ctx *s, edge_fn fn)
{
    ad_tape *t = s->t;
    const int64_t i = s->cur;
    const int op = t->op[i];
    const int avar = is_variable(t, t->a[i]), bvar = is_variable(t, t->b[i]);
    ad_view o = ad_value_view(t, i);
    switch ((enum ad_op_kind)ad_ops[op].kind) {
    case AD_KIND_LEAF:
    case AD_KIND_COMPARE:
        return AD_OK;
    case AD_KIND_ELEMENTWISE: {
        const int ea = ew_moves(s, 0), eb = ew_moves(s, 1);
        const double *cut_a = ea ? ew_cut(s, 0) : 0, *cut_b = eb ? ew_cut(s, 1) : 0;
        ad_view a = ad_value_view(t, t->a[i]);
        ad_view b = ad_ops[op].arity == 2 ? ad_value_view(t, t->b[i]) : a;
        ad_iter it;
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);
        if (!cut_a && !cut_b) {         /* (no constant's zeros: most ops) */
            AD_ITERATE(&it, {
                if (ea)
                    fn(s, ko, 0, ka);
                if (eb)
                    fn(s, ko, 1, kb);
            });
            return AD_OK;
        }
        AD_ITERATE(&it, {
            if (ea && !(cut_a && cut_a[kb] == 0.0))
                fn(s, ko, 0, ka);
            if (eb && !(cut_b && cut_b[ka] == 0.0))
                fn(s, ko, 1, kb);
        });
        return AD_OK;
    }
    case AD_KIND_REDUCE: {
        if (!avar)
            return AD_OK;
        ad_view a = ad_value_view(t, t->a[i]);
        ad_iter it;
        ad_iter_init(&it, a.ndim, a.shape, &o, &a, 0);
        AD_ITERATE(&it, fn(s, ko, 0, ka));
        return AD_OK;
    }
    case AD_KIND_MOVE:
        if (avar)
            for (int64_t k = 0; k < entry_size(t, i); ++k)
                fn(s, k, 0, k);
        return AD_OK;
    case AD_KIND_MAP: {
        if (!avar)
            return AD_OK;
        if (t->aux[i] < 0) {                /* a scalar's: itself */
            fn(s, 0, 0, 0);
            return AD_OK;
        }
        const ad_block *bk = &t->blk[t->aux[i]];
        if (op == AD_GATHER)
            AD_GATHER_EACH(bk, fn(s, ko, 0, ks));
        else
            for (int64_t k = 0; k < bk->nmap; ++k)
                fn(s, bk->map[k], 0, k);
        return AD_OK;
    }
    case AD_KIND_EXTERN: {
        const ad_extern_sparsity *x = extern_of(s);
        const int64_t so = entry_size(t, i), sa = entry_size(t, t->a[i]);
        const int64_t sb = t->b[i] >= 0 ? entry_size(t, t->b[i]) : 0;
        if (x && x->kind == AD_XSP_MATMUL) {
            sp_matmul p;
            int status = matmul_plan(s, &p);
            if (status != AD_OK || !(avar || bvar))
                return status;
            if (avar != bvar && fixed_values(s, avar))
                return matmul_edges_fixed(s, &p, !avar, fn);
            SP_MATMUL_EACH(&p, {
                if (avar)
                    fn(s, ko, 0, ka);
                if (bvar)
                    fn(s, ko, 1, kb);
            });
            return AD_OK;
        }
        if (x && x->kind == AD_XSP_EXPLICIT) {
            int status = explicit_check(s, x, so, sa + sb);
            if (status != AD_OK)
                return status;
            for (int64_t ko = 0; ko < so; ++ko)
                for (int64_t p = x->ptr[ko]; p < x->ptr[ko + 1]; ++p) {
                    const int side = x->idx[p] >= sa;
                    if (side ? bvar : avar)
                        fn(s, ko, side, x->idx[p] - (side ? sa : 0));
                }
            return AD_OK;
        }
        if (x && x->kind != AD_XSP_DENSE)
            return ad_fail(t, AD_EINVAL, i, "entry %lld: unknown extern "
                           "sparsity kind %d", (long long)i, (int)x->kind);
        for (int64_t ko = 0; ko < so; ++ko) {
            for (int64_t k = 0; avar && k < sa; ++k)
                fn(s, ko, 0, k);
            for (int64_t k = 0; bvar && k < sb; ++k)
                fn(s, ko, 1, k);
        }
        return AD_OK;
    }
    }
    return ad_fail(t, AD_EINVAL, i, "entry %lld: bad op %d", (long long)i, op);
}

/* Every pair of elements whose index sets interact through the second
 * partials of output element ko (for which need says the result depends
 * on it).                                                               */
static int for_each_pair(sp_ctx *s, pair_fn fn)
{
    ad_tape *t = s->t;
    const int64_t i = s->cur;
    const int op = t->op[i];
    const uint8_t *need = s->need[i];
    const int avar = is_variable(t, t->a[i]), bvar = is_variable(t, t->b[i]);
    ad_view o = ad_value_view(t, i);
    switch ((enum ad_op_kind)ad_ops[op].kind) {
    case AD_KIND_ELEMENTWISE: {
        const int two = ad_ops[op].arity == 2;
        const int aa = avar && partial_nonzero(op, P_DAA);
        const int ab = two && avar && bvar && partial_nonzero(op, P_DAB);
        const int bb = two && bvar && partial_nonzero(op, P_DBB);
        if (!aa && !ab && !bb)
            return AD_OK;               /* linear: nothing */
        ad_view a = ad_value_view(t, t->a[i]);
        ad_view b = two ? ad_value_view(t, t->b[i]) : a;
        ad_iter it;
        ad_iter_init(&it, o.ndim, o.shape, &o, &a, &b);
        AD_ITERATE(&it, {
            if (need[ko]) {
                if (aa)
                    fn(s, 0, ka, 0, ka);
                if (ab)
                    fn(s, 0, ka, 1, kb);
                if (bb)
                    fn(s, 1, kb, 1, kb);
            }
        });
        return AD_OK;
    }
    case AD_KIND_REDUCE:
        if (op == AD_LSE || op == AD_PROD)  /* every pair of its group */
            for (int64_t k = 0; k < entry_size(t, i); ++k)
                if (need[k])
                    fn(s, 2, k, 2, k);
        return AD_OK;                   /* sums, max and min: linear */
    case AD_KIND_EXTERN: {
        const ad_extern_sparsity *x = extern_of(s);
        if (x && x->kind == AD_XSP_MATMUL) {
            if (!avar || !bvar)
                return AD_OK;           /* a constant factor: linear */
            sp_matmul p;
            int status = matmul_plan(s, &p);
            if (status != AD_OK)
                return status;
            SP_MATMUL_EACH(&p, {
                if (need[ko])
                    fn(s, 0, ka, 1, kb);
            });
            return AD_OK;
        }
        if (x && x->second == AD_XSP_LINEAR)
            return AD_OK;
        for (int64_t k = 0; k < entry_size(t, i); ++k)
            if (need[k])
                fn(s, 2, k, 2, k);
        return AD_OK;
    }
    case AD_KIND_LEAF:
    case AD_KIND_COMPARE:
    case AD_KIND_MOVE:
    case AD_KIND_MAP:
        return AD_OK;
    }
    return ad_fail(t, AD_EINVAL, i, "entry %lld: bad op %d", (long long)i, op);
}

/* Does for_each_pair name entry s->cur's own sets (side 2)? */
static int own_pairs(const sp_ctx *s)
{
    const int op = s->t->op[s->cur];
    const ad_extern_sparsity *x = extern_of(s);
    return op == AD_LSE || op == AD_PROD
           || (op == AD_EXTERN && !(x && (x->kind == AD_XSP_MATMUL
                                          || x->second == AD_XSP_LINEAR)));
}

/* -- pass 1: what the result depends on ------------------------------------ */

static int fail_nomem(sp_ctx *s)
{
    return ad_fail(s->t, AD_ENOMEM, s->cur, "out of memory for the sparsity "
                   "pattern at entry %lld", (long long)s->cur);
}

static uint8_t *need_of(sp_ctx *s, int64_t j)
{
    if (!s->need[j] && !(s->need[j] = sp_calloc((size_t)entry_size(s->t, j), 1)))
        s->status = AD_ENOMEM;
    return s->need[j];
}

static void mark_edge(sp_ctx *s, int64_t ko, int side, int64_t ka)
{
    if (s->need_cur[ko])
        s->need_op[side][ka] = 1;
}

/* The pointers mark_edge uses, for entry s->cur: its operands' need
 * arrays made (a variable's; an edge only ever names a variable).      */
static int prepare_marks(sp_ctx *s)
{
    s->need_cur = s->need[s->cur];
    for (int side = 0; side < 2; ++side) {
        const int64_t j = operand(s, side);
        s->need_op[side] = is_variable(s->t, j) ? need_of(s, j) : 0;
        if (is_variable(s->t, j) && !s->need_op[side])
            return fail_nomem(s);
    }
    return AD_OK;
}

/* The same for the set passes. */
static void prepare_sets(sp_ctx *s)
{
    s->need_cur = s->need[s->cur];
    s->x_cur = &s->X[s->cur];
    for (int side = 0; side < 2; ++side) {
        const int64_t j = operand(s, side);
        s->x_op[side] = j >= 0 ? &s->X[j] : 0;
    }
}

/* -- pass 2: index sets ---------------------------------------------------- */

static int64_t set_len(const sp_sets *x, int64_t k)
{
    return x->ptr ? x->ptr[k + 1] - x->ptr[k] : 0;
}

static void count_edge(sp_ctx *s, int64_t ko, int side, int64_t ka)
{
    if (s->need_cur[ko])
        s->count[ko + 1] += set_len(s->x_op[side], ka);
}

static void fill_edge(sp_ctx *s, int64_t ko, int side, int64_t ka)
{
    const sp_sets *x = s->x_op[side];
    if (!s->need_cur[ko] || !x->ptr)
        return;
    int64_t *dst = s->x_cur->idx + s->count[ko];
    const int64_t *src = x->idx + x->ptr[ka];
    const int64_t m = x->ptr[ka + 1] - x->ptr[ka];
    for (int64_t k = 0; k < m; ++k)     /* a few: no memcpy call */
        dst[k] = src[k];
    s->count[ko] += m;
}

/* v[0..m) sorted and unique, where m is large against the columns (a
 * reduction's set): by flags over the columns, not a sort.  -1: out of
 * memory.                                                               */
static int64_t wide_unique(sp_ctx *s, int64_t *v, int64_t m)
{
    if (!s->seen && !(s->seen = sp_calloc((size_t)s->ncols + 1, 1)))
        return -1;
    for (int64_t k = 0; k < m; ++k)
        s->seen[v[k]] = 1;
    int64_t top = 0;
    for (int64_t c = 0; c < s->ncols; ++c)
        if (s->seen[c]) {
            v[top++] = c;
            s->seen[c] = 0;
        }
    return top;
}

/* An elementwise entry whose operands have its shape, element k on
 * their elements k: its sets are theirs merged (they are sorted), with
 * no counting pass and no sort -- most entries of array programs.
 * Returns 0 (the general way then) for any other entry.                */
static int elementwise_merge(sp_ctx *s, int *status)
{
    ad_tape *t = s->t;
    const int64_t i = s->cur, size = entry_size(t, i);
    const int op = t->op[i];
    if (ad_ops[op].kind != AD_KIND_ELEMENTWISE)
        return 0;
    const int two = ad_ops[op].arity == 2;
    const int ea = ew_moves(s, 0), eb = ew_moves(s, 1);
    const double *cut_a = ea ? ew_cut(s, 0) : 0, *cut_b = eb ? ew_cut(s, 1) : 0;
    ad_view o = ad_value_view(t, i), a = ad_value_view(t, t->a[i]);
    ad_view b = two ? ad_value_view(t, t->b[i]) : a;
    if (!ad_same_shape(&o, &a) || !ad_same_shape(&o, &b))
        return 0;
    const sp_sets *xa = ea && s->x_op[0]->ptr ? s->x_op[0] : 0;
    const sp_sets *xb = eb && s->x_op[1]->ptr ? s->x_op[1] : 0;
    const int64_t total = (xa ? xa->ptr[size] : 0) + (xb ? xb->ptr[size] : 0);
    sp_sets *x = s->x_cur;
    if (!(x->ptr = sp_malloc((size_t)(size + 1) * sizeof *x->ptr)) ||
        !(x->idx = sp_malloc((size_t)(total ? total : 1) * sizeof *x->idx))) {
        *status = fail_nomem(s);
        return 1;
    }
    const uint8_t *need = s->need_cur;
    int64_t top = 0;
    for (int64_t k = 0; k < size; ++k) {
        x->ptr[k] = top;
        if (!need[k])
            continue;
        const int64_t *p = xa ? xa->idx + xa->ptr[k] : 0;
        const int64_t *pe = xa ? xa->idx + xa->ptr[k + 1] : 0;
        const int64_t *q = xb ? xb->idx + xb->ptr[k] : 0;
        const int64_t *qe = xb ? xb->idx + xb->ptr[k + 1] : 0;
        if (cut_a && cut_a[k] == 0.0)   /* a constant factor's 0: nothing */
            p = pe;
        if (cut_b && cut_b[k] == 0.0)
            q = qe;
        while (p < pe && q < qe) {
            const int64_t v = *p < *q ? *p : *q;
            p += *p == v;
            q += *q == v;
            x->idx[top++] = v;
        }
        while (p < pe)
            x->idx[top++] = *p++;
        while (q < qe)
            x->idx[top++] = *q++;
    }
    x->ptr[size] = top;
    int64_t *shrunk = sp_realloc(x->idx, (size_t)(top ? top : 1) * sizeof *shrunk);
    if (shrunk)
        x->idx = shrunk;
    *status = AD_OK;
    return 1;
}

/* An entry whose every element has the sets of the same element of one
 * operand read here for the last time (a unary function, a product with
 * a constant, a reshape) takes that operand's sets over: no copy.  1 if
 * it did.                                                               */
static int take_over(sp_ctx *s)
{
    ad_tape *t = s->t;
    const int64_t i = s->cur;
    const int op = t->op[i], kind = ad_ops[op].kind;
    int side = -1;
    if (kind == AD_KIND_MOVE) {
        side = 0;
    } else if (kind == AD_KIND_ELEMENTWISE) {
        const int ea = ew_moves(s, 0), eb = ew_moves(s, 1);
        side = ea && !eb ? 0 : eb && !ea ? 1 : -1;
        if (side >= 0 && ew_cut(s, side))
            side = -1;              /* not every element: a constant's zeros */
        if (side >= 0) {
            ad_view o = ad_value_view(t, i), x = ad_value_view(t, operand(s, side));
            if (!ad_same_shape(&o, &x))
                side = -1;
        }
    }
    if (side < 0 || !is_variable(t, operand(s, side)))
        return 0;
    const int64_t j = operand(s, side);
    if (s->last[j] != i || !s->X[j].ptr || entry_size(t, j) != entry_size(t, i))
        return 0;
    s->X[i] = s->X[j];
    s->X[j].ptr = s->X[j].idx = 0;
    s->taken = side;
    return 1;
}

/* Entry s->cur's index sets from its operands' (by its edges). */
static int build_sets(sp_ctx *s)
{
    const int64_t size = entry_size(s->t, s->cur);
    sp_sets *x = &s->X[s->cur];
    int status;
    if (take_over(s))
        return AD_OK;
    prepare_sets(s);
    if (elementwise_merge(s, &status))
        return status;
    int64_t *cnt = s->count;
    memset(cnt, 0, (size_t)(size + 1) * sizeof *cnt);
    status = for_each_edge(s, count_edge);
    if (status != AD_OK)
        return status;
    for (int64_t k = 0; k < size; ++k)
        cnt[k + 1] += cnt[k];
    if (!(x->ptr = sp_malloc((size_t)(size + 1) * sizeof *x->ptr)) ||
        !(x->idx = sp_malloc((size_t)(cnt[size] ? cnt[size] : 1) * sizeof *x->idx)))
        return fail_nomem(s);
    memcpy(x->ptr, cnt, (size_t)(size + 1) * sizeof *cnt);
    status = for_each_edge(s, fill_edge);   /* cnt[k]: where k's set goes on */
    if (status != AD_OK)
        return status;
    /* each element's set sorted and unique, moved down in place */
    int64_t top = 0;
    for (int64_t k = 0; k < size; ++k) {
        const int64_t lo = x->ptr[k], m = x->ptr[k + 1] - lo;
        int64_t *v = x->idx;
        x->ptr[k] = top;
        for (int64_t e = 0; e < m; ++e)     /* down: top <= lo */
            v[top + e] = v[lo + e];
        if (m > 64 && 16 * m > s->ncols) {
            const int64_t u = wide_unique(s, v + top, m);
            if (u < 0)
                return fail_nomem(s);
            top += u;
        } else {
            top += m > 1 ? sort_unique(v + top, m) : m;
        }
    }
    x->ptr[size] = top;
    int64_t *shrunk = sp_realloc(x->idx, (size_t)(top ? top : 1) * sizeof *shrunk);
    if (shrunk)
        x->idx = shrunk;
    return AD_OK;
}

/* -- pass 3: interactions -------------------------------------------------- */

static void element_set(const sp_ctx *s, int side, int64_t k,
                        const int64_t **v, int64_t *m)
{
    const int own = side == 2 || side == s->taken;
    const sp_sets *x = &s->X[own ? s->cur : operand(s, side)];
    *v = x->ptr ? x->idx + x->ptr[k] : 0;
    *m = x->ptr ? x->ptr[k + 1] - x->ptr[k] : 0;
}

static void interact(sp_ctx *s, int sp, int64_t kp, int sq, int64_t kq)
{
    const int64_t *P, *Q;
    int64_t mp, mq;
    element_set(s, sp, kp, &P, &mp);
    element_set(s, sq, kq, &Q, &mq);
    if (!mp || !mq || s->status != AD_OK)
        return;
    for (int64_t k = 0; k < mp; ++k)
        if (!vec_add(&s->arena, &s->N[P[k]], Q, mq))
            s->status = AD_ENOMEM;
    if (P != Q)
        for (int64_t k = 0; k < mq; ++k)
            if (!vec_add(&s->arena, &s->N[Q[k]], P, mp))
                s->status = AD_ENOMEM;
}

/* -- the passes together ------------------------------------------------- */

static void ctx_free(sp_ctx *s)
{
    for (int64_t j = 0; j < s->n; ++j) {
        if (s->X) {
            free(s->X[j].ptr);
            free(s->X[j].idx);
        }
        if (s->need)
            free(s->need[j]);
    }
    free(s->X);
    free(s->need);
    free(s->xsp);
    free(s->fixed);
    free(s->count);
    free(s->seen);
    arena_free(&s->arena);
    free(s->N);
}

/* Which of the entries [0, n) are constants (fixed[j]): their values are
 * the same wherever the recording holds, so a zero among them is
 * structural.  A constant leaf (an ndarray operand, or a number taken
 * from a variable, which a recording guards), and an op of constants --
 * not a comparison of variables, whose mask a replay recomputes, nor an
 * extern op other than a matrix product (xsp: each entry's description
 * or -1), whose Python rule is not known to compute the same each time.
 * A variable never is: its zeros are where x happens to be.            */
static void fixed_entries(const ad_tape *t, int64_t n, const int64_t *xsp,
                          const ad_extern_sparsity *specs, uint8_t *fixed)
{
    for (int64_t j = 0; j < n; ++j) {
        const int64_t a = t->a[j], b = t->b[j];
        int c = !is_variable(t, j);
        if (c && t->op[j] == AD_EXTERN)
            c = xsp[j] >= 0 && specs[xsp[j]].kind == AD_XSP_MATMUL;
        if (c && t->op[j] != AD_LEAF)
            c = (a < 0 || fixed[a]) && (b < 0 || fixed[b]);
        fixed[j] = (uint8_t)c;
    }
}

/* xsp[j]: which of the nxsp descriptions specs is entry j's, or -1, for
 * the entries [0, n); AD_EINVAL for one of no extern entry.            */
static int map_specs(ad_tape *t, int64_t n, int64_t nxsp,
                     const ad_extern_sparsity *specs, int64_t *xsp)
{
    const int64_t len = ad_len(t);
    for (int64_t j = 0; j < n; ++j)
        xsp[j] = -1;
    for (int64_t k = 0; k < nxsp; ++k) {
        const int64_t e = specs[k].entry;
        if (e < 0 || e >= len || t->op[e] != AD_EXTERN)
            return ad_fail(t, AD_EINVAL, e, "an extern sparsity description "
                           "for entry %lld, which is no extern entry",
                           (long long)e);
        if (e < n)
            xsp[e] = k;
    }
    return AD_OK;
}

int ad_sparsity_constants(ad_tape *t, int64_t n, int64_t nxsp,
                          const ad_extern_sparsity *xsp, uint8_t *fixed)
{
    if (n < 0 || n > ad_len(t))
        return ad_fail(t, AD_ERANGE, n, "%lld entries asked of a tape of %lld",
                       (long long)n, (long long)ad_len(t));
    int64_t *map = sp_malloc((size_t)(n ? n : 1) * sizeof *map);
    if (!map)
        return ad_fail(t, AD_ENOMEM, -1, "out of memory for the constants of "
                       "the sparsity pattern");
    int status = map_specs(t, n, nxsp, xsp, map);
    if (status == AD_OK)
        fixed_entries(t, n, map, xsp, fixed);
    free(map);
    return status;
}

/* Checks, and the inputs' index sets: input element e is column
 * offset(leaf) + e.  *ncols: how many columns.                           */
static int setup(sp_ctx *s, ad_tape *t, int64_t nin, const int64_t *in,
                 int64_t nout, const int64_t *out, int64_t nxsp,
                 const ad_extern_sparsity *xsp, int64_t *ncols)
{
    memset(s, 0, sizeof *s);
    s->t = t;
    s->specs = xsp;
    s->cur = -1;
    const int64_t len = ad_len(t);
    int64_t top = -1;
    for (int64_t k = 0; k < nout; ++k) {
        if (out[k] < 0 || out[k] >= len)
            return ad_fail(t, AD_ERANGE, out[k], "output entry %lld outside "
                           "the tape's %lld entries", (long long)out[k],
                           (long long)len);
        top = out[k] > top ? out[k] : top;
    }
    int status = ad_check_seeds(t, nin, in, 1);
    if (status != AD_OK)
        return status;
    for (int64_t k = 0; k < nin; ++k)
        top = in[k] > top ? in[k] : top;
    s->n = top + 1;
    int64_t maxsize = 1;
    for (int64_t j = 0; j < s->n; ++j)
        maxsize = entry_size(t, j) > maxsize ? entry_size(t, j) : maxsize;
    s->X = sp_calloc((size_t)(s->n ? s->n : 1), sizeof *s->X);
    s->need = sp_calloc((size_t)(s->n ? s->n : 1), sizeof *s->need);
    s->xsp = sp_malloc((size_t)(s->n ? s->n : 1) * sizeof *s->xsp);
    s->fixed = sp_malloc((size_t)(s->n ? s->n : 1));
    s->count = sp_malloc((size_t)(maxsize + 1) * sizeof *s->count);
    if (!s->X || !s->need || !s->xsp || !s->fixed || !s->count)
        return fail_nomem(s);
    if ((status = map_specs(t, s->n, nxsp, xsp, s->xsp)) != AD_OK)
        return status;
    fixed_entries(t, s->n, s->xsp, xsp, s->fixed);
    int64_t col = 0;
    for (int64_t k = 0; k < nin; ++k) {
        const int64_t j = in[k], size = entry_size(t, j);
        sp_sets *x = &s->X[j];
        if (x->ptr)
            return ad_fail(t, AD_EINVAL, j, "input entry %lld given twice",
                           (long long)j);
        if (!(x->ptr = sp_malloc((size_t)(size + 1) * sizeof *x->ptr)) ||
            !(x->idx = sp_malloc((size_t)size * sizeof *x->idx + 1)))
            return fail_nomem(s);
        /* a constant leaf moves nothing: its sets stay empty */
        const int var = is_variable(t, j);
        for (int64_t e = 0; e < size; ++e) {
            x->ptr[e] = var ? e : 0;
            x->idx[e] = col + e;
        }
        x->ptr[size] = var ? size : 0;
        col += size;
    }
    *ncols = s->ncols = col;
    return AD_OK;
}

/* Passes 1 to 3 over the entries below the outputs; the outputs' sets
 * (keep_outputs: a Jacobian's rows) and, with N, the interactions are
 * what is left.                                                          */
static int run(sp_ctx *s, int64_t nout, const int64_t *out, int keep_outputs)
{
    ad_tape *t = s->t;
    for (int64_t k = 0; k < nout; ++k) {
        if (!is_variable(t, out[k]))
            continue;
        uint8_t *n = need_of(s, out[k]);
        if (!n)
            return fail_nomem(s);
        memset(n, 1, (size_t)entry_size(t, out[k]));
    }
    int64_t *last = sp_malloc((size_t)(s->n ? s->n : 1) * sizeof *last);
    if (!last)
        return fail_nomem(s);
    for (int64_t j = 0; j < s->n; ++j)
        last[j] = -1;
    int status = AD_OK;
    for (s->cur = s->n - 1; s->cur >= 0 && status == AD_OK; --s->cur) {
        const int64_t i = s->cur;
        if (!s->need[i] || !is_variable(t, i) || t->op[i] == AD_LEAF)
            continue;
        status = prepare_marks(s);
        if (status == AD_OK)
            status = for_each_edge(s, mark_edge);
        if (t->a[i] >= 0 && last[t->a[i]] < 0)
            last[t->a[i]] = i;
        if (t->b[i] >= 0 && last[t->b[i]] < 0)
            last[t->b[i]] = i;
    }
    for (int64_t k = 0; k < nout && keep_outputs; ++k)
        last[out[k]] = s->n;            /* read at the end */
    s->last = last;
    for (s->cur = 0; s->cur < s->n && status == AD_OK; ++s->cur) {
        const int64_t i = s->cur;
        if (!s->need[i] || !is_variable(t, i) || t->op[i] == AD_LEAF)
            continue;
        /* sets that nothing reads are not made (the Hessian's result, a
         * sum of everything, where the interactions are all it adds) */
        s->taken = -1;
        if (last[i] >= 0 || (s->N && own_pairs(s)))
            status = build_sets(s);
        if (status == AD_OK && s->N) {
            status = for_each_pair(s, interact);
            if (status == AD_OK && s->status != AD_OK)
                status = fail_nomem(s);
        }
        /* operands read for the last time: their sets go */
        for (int side = 0; side < 2; ++side) {
            const int64_t j = side ? t->b[i] : t->a[i];
            if (j >= 0 && last[j] == i) {
                free(s->X[j].ptr);
                free(s->X[j].idx);
                s->X[j].ptr = s->X[j].idx = 0;
            }
        }
    }
    free(last);
    s->last = 0;
    return status;
}

int ad_jacobian_sparsity(ad_tape *t, int64_t nin, const int64_t *in,
                         int64_t nout, const int64_t *out,
                         int64_t nxsp, const ad_extern_sparsity *xsp,
                         int64_t **ptr, int64_t **idx, int64_t *nnz)
{
    sp_ctx s;
    int64_t ncols;
    *ptr = *idx = 0;
    *nnz = 0;
    int status = setup(&s, t, nin, in, nout, out, nxsp, xsp, &ncols);
    if (status == AD_OK)
        status = run(&s, nout, out, 1);
    int64_t rows = 0, total = 0;
    for (int64_t k = 0; k < nout && status == AD_OK; ++k) {
        rows += entry_size(t, out[k]);
        const sp_sets *x = &s.X[out[k]];
        if (x->ptr)
            total += x->ptr[entry_size(t, out[k])];
    }
    int64_t *p = 0, *q = 0;
    if (status == AD_OK && (!(p = sp_malloc((size_t)(rows + 1) * sizeof *p)) ||
                            !(q = sp_malloc((size_t)(total ? total : 1) * sizeof *q)))) {
        s.cur = -1;
        status = fail_nomem(&s);
    }
    if (status == AD_OK) {
        int64_t r = 0, top = 0;
        for (int64_t k = 0; k < nout; ++k) {
            const int64_t size = entry_size(t, out[k]);
            const sp_sets *x = &s.X[out[k]];
            for (int64_t e = 0; e < size; ++e) {
                p[r++] = top;
                const int64_t m = set_len(x, e);
                if (m)
                    memcpy(q + top, x->idx + x->ptr[e], (size_t)m * sizeof *q);
                top += m;
            }
        }
        p[rows] = top;
        *ptr = p;
        *idx = q;
        *nnz = top;
        p = q = 0;
    }
    free(p);
    free(q);
    ctx_free(&s);
    return status;
}

int ad_hessian_sparsity(ad_tape *t, int64_t nin, const int64_t *in,
                        int64_t out, int64_t nxsp,
                        const ad_extern_sparsity *xsp,
                        int64_t **ptr, int64_t **idx, int64_t *nnz)
{
    sp_ctx s;
    int64_t ncols = 0;
    *ptr = *idx = 0;
    *nnz = 0;
    int status = setup(&s, t, nin, in, 1, &out, nxsp, xsp, &ncols);
    if (status == AD_OK && !(s.N = sp_calloc((size_t)(ncols ? ncols : 1), sizeof *s.N))) {
        s.cur = -1;
        status = fail_nomem(&s);
    }
    if (status == AD_OK)
        status = run(&s, 1, &out, 0);
    int64_t total = 0;
    for (int64_t k = 0; k < ncols && status == AD_OK; ++k)
        total += (s.N[k].len = sort_unique(s.N[k].v, s.N[k].len));
    int64_t *p = 0, *q = 0;
    if (status == AD_OK && (!(p = sp_malloc((size_t)(ncols + 1) * sizeof *p)) ||
                            !(q = sp_malloc((size_t)(total ? total : 1) * sizeof *q)))) {
        s.cur = -1;
        status = fail_nomem(&s);
    }
    if (status == AD_OK) {
        int64_t top = 0;
        for (int64_t k = 0; k < ncols; ++k) {
            p[k] = top;
            if (s.N[k].len)
                memcpy(q + top, s.N[k].v, (size_t)s.N[k].len * sizeof *q);
            top += s.N[k].len;
        }
        p[ncols] = top;
        *ptr = p;
        *idx = q;
        *nnz = top;
        p = q = 0;
    }
    free(p);
    free(q);
    ctx_free(&s);
    return status;
}

void ad_sparsity_free(void *p)
{
    free(p);
}

/* -- colourings ------------------------------------------------------------ */

static int check_pattern(int64_t nrows, int64_t ncols, const int64_t *ptr,
                         const int64_t *idx)
{
    if (nrows < 0 || ncols < 0 || ptr[0] != 0)
        return AD_EINVAL;
    for (int64_t r = 0; r < nrows; ++r) {
        if (ptr[r + 1] < ptr[r])
            return AD_EINVAL;
        for (int64_t p = ptr[r]; p < ptr[r + 1]; ++p)
            if (idx[p] < 0 || idx[p] >= ncols)
                return AD_EINVAL;
    }
    return AD_OK;
}

/* The transpose of a pattern (ncols rows), allocated. */
static int transpose(int64_t nrows, int64_t ncols, const int64_t *ptr,
                     const int64_t *idx, int64_t **tptr, int64_t **tidx)
{
    const int64_t nnz = ptr[nrows];
    int64_t *p = sp_calloc((size_t)ncols + 2, sizeof *p);
    int64_t *q = sp_malloc((size_t)(nnz ? nnz : 1) * sizeof *q);
    if (!p || !q) {
        free(p);
        free(q);
        return AD_ENOMEM;
    }
    for (int64_t k = 0; k < nnz; ++k)
        ++p[idx[k] + 2];
    for (int64_t c = 0; c < ncols; ++c)
        p[c + 2] += p[c + 1];
    for (int64_t r = 0; r < nrows; ++r)
        for (int64_t k = ptr[r]; k < ptr[r + 1]; ++k)
            q[p[idx[k] + 1]++] = r;
    *tptr = p;
    *tidx = q;
    return AD_OK;
}

/* The order vertices are coloured in: natural, or by degree (deg[v],
 * largest first; ties in natural order), a counting sort.             */
static int64_t *vertex_order(int64_t n, const int64_t *deg, int order)
{
    int64_t *v = sp_malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        return 0;
    if (order == 0 || n == 0) {
        for (int64_t k = 0; k < n; ++k)
            v[k] = k;
        return v;
    }
    int64_t maxd = 0;
    for (int64_t k = 0; k < n; ++k)
        maxd = deg[k] > maxd ? deg[k] : maxd;
    int64_t *start = sp_calloc((size_t)maxd + 2, sizeof *start);
    if (!start) {
        free(v);
        return 0;
    }
    for (int64_t k = 0; k < n; ++k)
        ++start[maxd - deg[k] + 1];
    for (int64_t d = 0; d <= maxd; ++d)
        start[d + 1] += start[d];
    for (int64_t k = 0; k < n; ++k)
        v[start[maxd - deg[k]]++] = k;
    free(start);
    return v;
}

/* The smallest colour not forbidden for vertex v (forbidden[c] == v). */
static int64_t first_free(const int64_t *forbidden, int64_t v)
{
    int64_t c = 0;
    while (forbidden[c] == v)
        ++c;
    return c;
}

int ad_color_columns(int64_t nrows, int64_t ncols, const int64_t *ptr,
                     const int64_t *idx, int order, int64_t *color,
                     int64_t *ncolors)
{
    if (check_pattern(nrows, ncols, ptr, idx) != AD_OK)
        return AD_EINVAL;
    int64_t *cptr, *cidx;
    if (transpose(nrows, ncols, ptr, idx, &cptr, &cidx) != AD_OK)
        return AD_ENOMEM;
    int64_t *deg = sp_calloc((size_t)ncols + 1, sizeof *deg);
    int64_t *forbidden = sp_malloc(((size_t)ncols + 1) * sizeof *forbidden);
    int64_t *v = 0;
    int status = AD_ENOMEM;
    if (deg && forbidden) {
        for (int64_t j = 0; j < ncols; ++j)        /* distance-2 degree, at most */
            for (int64_t k = cptr[j]; k < cptr[j + 1]; ++k)
                deg[j] += ptr[cidx[k] + 1] - ptr[cidx[k]];
        v = vertex_order(ncols, deg, order);
    }
    if (v) {
        int64_t used = 0;
        for (int64_t j = 0; j < ncols; ++j) {
            color[j] = -1;
            forbidden[j] = -1;
        }
        forbidden[ncols] = -1;
        for (int64_t q = 0; q < ncols; ++q) {
            const int64_t j = v[q];
            for (int64_t k = cptr[j]; k < cptr[j + 1]; ++k) {
                const int64_t r = cidx[k];
                for (int64_t p = ptr[r]; p < ptr[r + 1]; ++p)
                    if (color[idx[p]] >= 0)
                        forbidden[color[idx[p]]] = j;
            }
            color[j] = first_free(forbidden, j);
            used = color[j] + 1 > used ? color[j] + 1 : used;
        }
        *ncolors = used;
        status = AD_OK;
    }
    free(v);
    free(deg);
    free(forbidden);
    free(cptr);
    free(cidx);
    return status;
}

/* Gebremedhin, Manne and Pothen's greedy star colouring: vertex v may not
 * take a neighbour's colour (distance 1), nor the colour of a vertex x
 * two steps away through an uncoloured neighbour w, nor, through a
 * coloured w, the colour of an x which has a neighbour y != w of w's
 * colour (v - w - x - y would be a path on two colours).  The diagonal
 * is no edge.                                                           */
int ad_color_star(int64_t n, const int64_t *ptr, const int64_t *idx,
                  int order, int64_t *color, int64_t *ncolors)
{
    if (check_pattern(n, n, ptr, idx) != AD_OK)
        return AD_EINVAL;
    int64_t *deg = sp_calloc((size_t)n + 1, sizeof *deg);
    int64_t *forbidden = sp_malloc(((size_t)n + 1) * sizeof *forbidden);
    int64_t *v = 0;
    int status = AD_ENOMEM;
    if (deg && forbidden) {
        for (int64_t k = 0; k < n; ++k)
            deg[k] = ptr[k + 1] - ptr[k];
        v = vertex_order(n, deg, order);
    }
    if (v) {
        int64_t used = 0;
        for (int64_t k = 0; k <= n; ++k)
            forbidden[k] = -1;
        for (int64_t k = 0; k < n; ++k)
            color[k] = -1;
        for (int64_t q = 0; q < n; ++q) {
            const int64_t vi = v[q];
            for (int64_t p = ptr[vi]; p < ptr[vi + 1]; ++p) {
                const int64_t w = idx[p];
                if (w == vi)
                    continue;
                if (color[w] >= 0)
                    forbidden[color[w]] = vi;
                for (int64_t r = ptr[w]; r < ptr[w + 1]; ++r) {
                    const int64_t x = idx[r];
                    if (x == w || x == vi || color[x] < 0)
                        continue;
                    if (color[w] < 0) {
                        forbidden[color[x]] = vi;
                        continue;
                    }
                    for (int64_t u = ptr[x]; u < ptr[x + 1]; ++u) {
                        const int64_t y = idx[u];
                        if (y != w && y != x && color[y] == color[w]) {
                            forbidden[color[x]] = vi;
                            break;
                        }
                    }
                }
            }
            color[vi] = first_free(forbidden, vi);
            used = color[vi] + 1 > used ? color[vi] + 1 : used;
        }
        *ncolors = used;
        status = AD_OK;
    }
    free(v);
    free(deg);
    free(forbidden);
    return status;
}

/* -- recovery -------------------------------------------------------------- */

int ad_recover_jacobian(int64_t nrows, const int64_t *ptr, const int64_t *idx,
                        const int64_t *color, int64_t ncolors, int by_rows,
                        const double *B, double *data)
{
    for (int64_t r = 0; r < nrows; ++r)
        for (int64_t p = ptr[r]; p < ptr[r + 1]; ++p) {
            const int64_t j = idx[p];
            const int64_t c = by_rows ? color[r] : color[j];
            if (c < 0 || c >= ncolors)
                return AD_EINVAL;
            data[p] = by_rows ? B[j * ncolors + c] : B[r * ncolors + c];
        }
    return AD_OK;
}

/* H[i][j] is B[i][color j] where j is i's only neighbour of its colour;
 * else (a star colouring) i is j's only neighbour of i's colour, and it
 * is B[j][color i].  A diagonal element is B[i][color i]: no neighbour
 * shares i's colour.                                                    */
int ad_recover_hessian(int64_t n, const int64_t *ptr, const int64_t *idx,
                       const int64_t *color, int64_t ncolors,
                       const double *B, double *data)
{
    int64_t *seen = sp_malloc(((size_t)ncolors + 1) * sizeof *seen);
    int64_t *times = sp_malloc(((size_t)ncolors + 1) * sizeof *times);
    if (!seen || !times) {
        free(seen);
        free(times);
        return AD_ENOMEM;
    }
    for (int64_t c = 0; c <= ncolors; ++c)
        seen[c] = -1;
    int status = AD_OK;
    for (int64_t i = 0; i < n && status == AD_OK; ++i) {
        for (int64_t p = ptr[i]; p < ptr[i + 1]; ++p) {
            const int64_t c = color[idx[p]];
            if (c < 0 || c >= ncolors) {
                status = AD_EINVAL;
                break;
            }
            if (idx[p] == i)
                continue;
            if (seen[c] != i) {
                seen[c] = i;
                times[c] = 0;
            }
            ++times[c];
        }
        for (int64_t p = ptr[i]; p < ptr[i + 1] && status == AD_OK; ++p) {
            const int64_t j = idx[p], c = color[j];
            if (j == i || times[c] == 1)
                data[p] = B[i * ncolors + c];
            else
                data[p] = B[j * ncolors + color[i]];
        }
    }
    free(seen);
    free(times);
    return status;
}
