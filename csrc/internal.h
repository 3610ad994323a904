/* internal.h -- helpers shared by the C files, not part of the API. */
#ifndef PYAUTODIFF_INTERNAL_H
#define PYAUTODIFF_INTERNAL_H

#include <math.h>
#include <string.h>

#include "ad.h"
#include "vmath.h"

/* For the per-entry step of a sweep, inlined into the sweep's loop even
 * where the compiler would rather not (it is called from two places). */
#if defined(__GNUC__)
#define AD_HOT_INLINE static inline __attribute__((always_inline))
#else
#define AD_HOT_INLINE static inline
#endif

/* A sweep's step is compiled twice from its one switch: inlined, with
 * array 0, into the loop where scalar entries run (no case then tests for
 * arrays), and once out of line for array entries, which keeps their
 * kernels' calls out of that loop (inlined there too, they made the
 * scalar tangent and micrograd sweeps about a tenth slower).            */
#if defined(__GNUC__)
#define AD_NOINLINE __attribute__((noinline))
#else
#define AD_NOINLINE
#endif

/* For the kernels of array entries: built for plain x86-64 and again for
 * AVX2, and the loader picks the one the CPU runs (a GNU ifunc), as NumPy
 * picks its loops at run time.  The AVX2 build does each elementwise loop
 * four doubles at a time instead of two.  No FMA: -ffp-contract=off keeps
 * every operation rounded on its own, so both builds give the same bits.  */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&    \
    defined(__linux__) && !defined(AD_NO_CLONES)
#define AD_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AD_SIMD_CLONES
#endif

/* Record an error message on the tape and return status. */
int ad_fail(ad_tape *t, int status, int64_t index, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* A tape's counts of entries and blocks (n, nblk), for code that may run
 * on another thread than the one recording there.  That thread appends
 * without the tape's lock (every other writer of the counts holds it), so
 * the appends store the counts and everything else loads them as relaxed
 * atomics: defined, and plain moves.  Relaxed is enough: another thread
 * names only entries it learnt of through Python after their appends
 * (the GIL orders that), all below any count it can read.               */
#define AD_COUNT_LOAD(count) __atomic_load_n(&(count), __ATOMIC_RELAXED)
#define AD_COUNT_STORE(count, v) __atomic_store_n(&(count), (v), __ATOMIC_RELAXED)

static inline int64_t ad_len(const ad_tape *t)
{
    return AD_COUNT_LOAD(t->n);
}

/* An op's row of the op table (rules.h) as opinfo.c expands it, indexed
 * by op code (checked by whoever takes the op from outside).             */
typedef struct ad_op_info {
    const char *name;
    int8_t arity;
    uint8_t kind;           /* enum ad_op_kind */
} ad_op_info;
extern const ad_op_info ad_ops[AD_NUM_OPS];

/* The logistic function, split by sign so exp never overflows. */
static inline double ad_sigmoid(double x)
{
    double e;
    if (x >= 0) {
        e = exp(-x);
        return 1.0 / (1.0 + e);
    }
    e = exp(x);
    return e / (1.0 + e);
}

/* log(exp(x) + exp(y)) as NumPy's logaddexp: the larger plus log1p of the
 * smaller's exp relative to it, so nothing overflows; equal operands
 * (infinities too, where x - y is NaN) give x + log 2, and a NaN, NaN. */
static inline double ad_logaddexp(double x, double y)
{
    double d;
    if (x == y)
        return x + 0.693147180559945309417232121458176568;
    d = x - y;
    if (d > 0)
        return x + log1p(exp(-d));
    if (d <= 0)
        return y + log1p(exp(d));
    return d;
}

/* Broadcast iteration over an array entry's elements.  The loop runs over
 * `shape` (the output's shape for elementwise ops, the operand's for a
 * reduction) with three running offsets: into the output (ko) and into the
 * operands (ka, kb).  A stride of 0 repeats an element along a dimension:
 * that is broadcasting, and for a reduction's output, accumulation.
 *
 * ad_iter_init merges dimensions that every side steps through as one (a
 * C-contiguous array of any rank is one dimension), so the innermost loop
 * is as long as it can be; where it steps by one element on every side
 * ("unit") the compiler gets a plain indexed loop it can vectorise.       */
typedef struct ad_iter {
    int nd;                 /* dimensions after merging, at least 1 */
    int unit;               /* the innermost dimension has stride 1 everywhere */
    int64_t size;
    int64_t shape[AD_MAXDIM];
    int64_t so[AD_MAXDIM], sa[AD_MAXDIM], sb[AD_MAXDIM];
} ad_iter;

/* An entry's values and adjoints as an array: a scalar entry is 0-d. */
typedef struct ad_view {
    double *val;
    double *adj;
    double *tan;        /* tangent and adjoint tangent: NULL outside the */
    double *dadj;       /* tangent and second-order sweeps               */
    int64_t ls;         /* from one lane of tan and dadj to the next      */
    int32_t ndim;
    const int64_t *shape;
} ad_view;

/* Entry j's values alone, as the forward rules read them.  Appends run
 * those rules without the tape's lock (see ad_tape.variable), so they read
 * none of the adjoint and tangent pointers a sweep on another thread sets. */
static inline ad_view ad_value_view(const ad_tape *t, int64_t j)
{
    ad_view v;
    v.adj = v.tan = v.dadj = 0;
    v.ls = 0;
    if (t->aux[j] < 0) {
        v.val = &t->val[j];
        v.ndim = 0;
        v.shape = 0;
    } else {
        const ad_block *bk = &t->blk[t->aux[j]];
        v.val = bk->val;
        v.ndim = bk->ndim;
        v.shape = bk->shape;
    }
    return v;
}

/* Entry j's memory: a scalar's one double, or an array's block (adj is
 * grad when scalar_adj is the tape's grad: a sweep in place), tan and
 * dadj of lane t->lane, ls further on the next lane's.  Inline: every
 * array kernel takes three. */
static inline ad_view ad_entry_view(ad_tape *t, int64_t j, double *scalar_adj)
{
    ad_view v = ad_value_view(t, j);
    if (t->aux[j] < 0) {
        v.ls = t->cap;
        v.adj = scalar_adj ? &scalar_adj[j] : 0;
        v.tan = t->tan ? &t->tan[t->lane * v.ls + j] : 0;
        v.dadj = t->dadj ? &t->dadj[t->lane * v.ls + j] : 0;
    } else {
        ad_block *bk = &t->blk[t->aux[j]];
        v.ls = bk->size;
        v.adj = scalar_adj == t->grad ? bk->grad : bk->adj;
        v.tan = bk->tan ? bk->tan + t->lane * v.ls : 0;
        v.dadj = bk->dadj ? bk->dadj + t->lane * v.ls : 0;
    }
    return v;
}

/* Build with -DAD_TRACE (PYAUTODIFF_CFLAGS=-DAD_TRACE) to print every step
 * of every sweep to stderr, one line per entry the sweep computes:
 *
 *   sweep index op a b [(shape)] val ... [adj ...] [tan ...] [dadj ...]
 *
 * sweep is fwd, rev, tan or 2nd; an array entry shows its shape and its
 * first elements.  The reverse sweeps print an entry's adjoint before
 * handing it down (scalar_adj: the sweep's adjoints, adj or grad), the
 * others what the step computed.  Without the switch it is no code.      */
enum { AD_TRACE_ADJ = 1, AD_TRACE_TAN = 2, AD_TRACE_DADJ = 4 };
#ifdef AD_TRACE
#include <stdio.h>
static inline void ad_trace_field(const char *label, const double *p,
                                  int64_t n)
{
    fprintf(stderr, "  %s", label);
    if (!p) {                   /* not allocated or unset: zeros */
        fprintf(stderr, " 0");
        return;
    }
    for (int64_t k = 0; k < n && k < 4; ++k)
        fprintf(stderr, " %.6g", p[k]);
    if (n > 4)
        fprintf(stderr, " ...");
}

static inline void ad_trace(ad_tape *t, int64_t i, const char *sweep,
                            double *scalar_adj, int what)
{
    ad_view e = ad_entry_view(t, i, scalar_adj);
    int64_t n = 1;
    fprintf(stderr, "%s %8lld %-8s %8d %8d", sweep, (long long)i,
            ad_op_name(t->op[i]), (int)t->a[i], (int)t->b[i]);
    if (t->aux[i] >= 0) {
        const ad_block *bk = &t->blk[t->aux[i]];
        n = bk->size;
        fprintf(stderr, "  (");
        for (int d = 0; d < bk->ndim; ++d)
            fprintf(stderr, "%s%lld", d ? "," : "", (long long)bk->shape[d]);
        fprintf(stderr, ")");
        if (scalar_adj && scalar_adj != t->grad &&
            (bk->adj_unset || bk->second_unset))
            e.adj = 0;          /* nothing reached it yet: zeros */
        if (bk->second_unset)
            e.dadj = 0;
    }
    ad_trace_field("val", e.val, n);
    if (what & AD_TRACE_ADJ)
        ad_trace_field("adj", e.adj, n);
    if (what & AD_TRACE_TAN)
        ad_trace_field("tan", e.tan, n);
    if (what & AD_TRACE_DADJ)
        ad_trace_field("dadj", e.dadj, n);
    fputc('\n', stderr);
}
#define AD_TRACE_STEP(sweep, t, i, scalar_adj, what)                         \
    ad_trace((t), (i), (sweep), (scalar_adj), (what))
#else
#define AD_TRACE_STEP(sweep, t, i, scalar_adj, what) ((void)0)
#endif

int ad_same_shape(const ad_view *x, const ad_view *y);
void ad_iter_init(ad_iter *it, int nd, const int64_t *shape,
                  const ad_view *o, const ad_view *a, const ad_view *b);

/* Iterations of a unit loop write and read element j_ of each side only,
 * so no iteration depends on another even where two sides are one array
 * (x * x): the vectoriser may skip its overlap checks.                   */
#if defined(__GNUC__) && !defined(__clang__)
#define AD_IVDEP _Pragma("GCC ivdep")
#else
#define AD_IVDEP
#endif

/* The body (the macro's last argument) runs once per element with ko, ka,
 * kb set; it must not `continue` or `break`.  Rows of the innermost
 * dimension run in a tight loop; an odometer steps the outer ones.       */
#define AD_ITERATE(it, ...)                                                  \
    do {                                                                     \
        const ad_iter *it_ = (it);                                           \
        if (it_->size == 0)                                                  \
            break;                                                           \
        const int in_ = it_->nd - 1;                                         \
        const int64_t n_ = it_->shape[in_];                                  \
        const int64_t so_ = it_->so[in_], sa_ = it_->sa[in_],                \
                      sb_ = it_->sb[in_];                                    \
        int64_t idx_[AD_MAXDIM]; /* the outer dims' (zeroing all 16 costs \
                                    more than a small array's loop)  */      \
        for (int z_ = 0; z_ < in_; ++z_)                                     \
            idx_[z_] = 0;                                                    \
        int64_t bo_ = 0, ba_ = 0, bb_ = 0;                                   \
        (void)sa_; (void)sb_;                                                \
        for (;;) {                                                           \
            if (it_->unit) {                                                 \
                AD_IVDEP                                                     \
                for (int64_t j_ = 0; j_ < n_; ++j_) {                        \
                    const int64_t ko = bo_ + j_, ka = ba_ + j_,              \
                                  kb = bb_ + j_;                             \
                    (void)ka; (void)kb;                                      \
                    __VA_ARGS__;                                             \
                }                                                            \
            } else {                                                         \
                for (int64_t j_ = 0; j_ < n_; ++j_) {                        \
                    const int64_t ko = bo_ + j_ * so_, ka = ba_ + j_ * sa_,  \
                                  kb = bb_ + j_ * sb_;                       \
                    (void)ka; (void)kb;                                      \
                    __VA_ARGS__;                                             \
                }                                                            \
            }                                                                \
            int d_ = in_ - 1;                                                \
            for (; d_ >= 0; --d_) {                                          \
                if (++idx_[d_] < it_->shape[d_]) {                           \
                    bo_ += it_->so[d_]; ba_ += it_->sa[d_];                  \
                    bb_ += it_->sb[d_];                                      \
                    break;                                                   \
                }                                                            \
                bo_ -= it_->so[d_] * (it_->shape[d_] - 1);                   \
                ba_ -= it_->sa[d_] * (it_->shape[d_] - 1);                   \
                bb_ -= it_->sb[d_] * (it_->shape[d_] - 1);                   \
                idx_[d_] = 0;                                                \
            }                                                                \
            if (d_ < 0)                                                      \
                break;                                                       \
        }                                                                    \
    } while (0)

/* Does reduction iteration it (over the operand, the output broadcast)
 * end in contiguous rows of the operand, each into one output element (a
 * whole array, or along its last axes)?  Then *n is a row's length and it
 * steps from row to row (its last dimension collapsed to 1): a row is
 * then one plain loop, which vectorises, with its output element read
 * once.  Sums and logsumexp take their rows this way.                   */
static inline int ad_iter_rows(ad_iter *it, int64_t *n)
{
    const int in = it->nd - 1;
    if (it->so[in] != 0 || it->sa[in] != 1)
        return 0;
    *n = it->shape[in];
    it->shape[in] = 1;
    return 1;
}

/* A reduction's iteration it visits the operand's elements in C order, ka
 * from 0 up, each with its output element ko.  The element visited at
 * step k from the end is then (*last_o - ko, *last_a - ka) of the one
 * visited at step k: the same elements, each group's too, in reverse
 * order (PROD's products of the elements after each one).               */
static inline void ad_iter_last(const ad_iter *it, int64_t *last_o,
                                int64_t *last_a)
{
    *last_o = *last_a = 0;
    for (int d = 0; d < it->nd; ++d) {
        *last_o += it->so[d] * (it->shape[d] - 1);
        *last_a += it->sa[d] * (it->shape[d] - 1);
    }
}

/* The iteration of a strided GATHER (its block bk): over the output's
 * shape, ko into the output and ka (before the offset) into the operand. */
void ad_iter_gather(ad_iter *it, const ad_block *bk);

/* The body runs once per element of GATHER block bk's output, with ko
 * its index and ks the index of the operand element it reads, whichever
 * form the map has: the sweeps' gather kernels are this loop.           */
#define AD_GATHER_EACH(bk, ...)                                              \
    do {                                                                     \
        const ad_block *gb_ = (bk);                                          \
        if (gb_->map) {                                                      \
            for (int64_t ko = 0; ko < gb_->nmap; ++ko) {                     \
                const int64_t ks = gb_->map[ko];                             \
                __VA_ARGS__;                                                 \
            }                                                                \
        } else {                                                             \
            ad_iter gi_;                                                     \
            ad_iter_gather(&gi_, gb_);                                       \
            const int64_t off_ = gb_->offset;                                \
            AD_ITERATE(&gi_, {                                               \
                const int64_t ks = off_ + ka;                                \
                __VA_ARGS__;                                                 \
            });                                                              \
        }                                                                    \
    } while (0)

int ad_forward_entry(ad_tape *t, int64_t i, int check);

/* The sum of n contiguous doubles, pairwise as NumPy sums (forward.c). */
double ad_sum_pairwise(const double *x, int64_t n);
/* A SUM entry's rule on one array of its operand's (x: values or
 * tangents, laid out as operand a) into out, laid out as its result o
 * (size elements): the sums over the dims reduced, divided by c.  The
 * forward and tangent sweeps' kernel, so both sum alike.                */
void ad_sum_into(double *out, const double *x, const ad_view *o,
                 const ad_view *a, int64_t size, double c);

/* Run extern entry i's Python rule for one sweep (the tape's callback
 * rule; what names it in the error).  A missing or failing rule stops
 * the sweep with AD_ECALLBACK; Python re-raises the rule's exception. */
static inline int ad_call_extern(ad_tape *t, ad_extern_fn rule, int64_t i,
                                 const char *what)
{
    if (!rule || rule(t->extern_ctx, i) != 0)
        return ad_fail(t, AD_ECALLBACK, i, "the Python %s rule of entry %lld "
                       "failed", what, (long long)i);
    return AD_OK;
}

/* Matrix products the sweeps compute themselves (matmul.c): an EXTERN
 * entry whose imm is AD_EXTERN_MATMUL, of two matrix entries.  Its rule
 * in each sweep, and the check of its shapes when it is appended.       */
int ad_matmul_forward(ad_tape *t, int64_t i);
int ad_matmul_reverse(ad_tape *t, double *adj, int64_t i);
int ad_matmul_tangent(ad_tape *t, int64_t i);
int ad_matmul_second(ad_tape *t, int64_t i);
int ad_matmul_check(ad_tape *t, int64_t a, int64_t b, int32_t ndim,
                    const int64_t *shape);
static inline int ad_native_matmul(const ad_tape *t, int64_t i)
{
    return t->aux[i] >= 0 && t->imm[i] == AD_EXTERN_MATMUL;
}

/* d * t where a zero tangent or adjoint t contributes exactly nothing,
 * even where the partial d is infinite or NaN (CppAD's azmul). */
static inline double ad_azmul(double d, double t)
{
    /* the product first, then a select: no branch, so loops vectorise */
    const double p = d * t;
    return t == 0.0 ? 0.0 : p;
}

/* d * t in the tangent and second-order sweeps, where a partial d of
 * exactly zero also contributes nothing, whatever the tangent t: the
 * select of np.where's branch not taken, whose tangent may be a NaN (the
 * sqrt of a negative there), or a flat relu.  The reverse sweeps meet that
 * branch's zero adjoint before its partials (ad_azmul then suffices); a
 * tangent reaches the select from the other side, so without this a
 * Hessian there was NaN where the gradient is a number.                 */
static inline double ad_pzmul(double d, double t)
{
    const double p = d * t;
    return d == 0.0 || t == 0.0 ? 0.0 : p;
}

/* LSE: d out / d x for an operand element x of output out, its softmax
 * weight exp(x - out), in [0, 1].  An output of -inf (every element -inf,
 * or none) weighs nothing, where x - out would be -inf - -inf = NaN.  The
 * reverse, tangent and second-order rules are this weight times the
 * adjoint or the tangent; vexp keeps their loops vectorisable.           */
static inline double ad_lse_weight(double x, double out)
{
    const double s = ad_vexp(x - out);
    return out == -INFINITY ? 0.0 : s;
}

/* The body runs once per element of LSE operand a (its values aval; the
 * output's oval), with ko and ka as in AD_ITERATE and s its weight.  it
 * iterates over a's shape with the output broadcast (as a reduction's
 * does).  Where that ends in contiguous rows each into one output
 * element (the last axis: the common case), a row is one plain loop with
 * the output's value read once.                                          */
#define AD_LSE_EACH(it, oval, aval, ...)                                     \
    do {                                                                     \
        ad_iter lr_ = *(it);                                                 \
        int64_t ln_;                                                         \
        const double *const lo_ = (oval), *const la_ = (aval);               \
        if (ad_iter_rows(&lr_, &ln_)) {                                      \
            AD_ITERATE(&lr_, {                                               \
                const double out_ = lo_[ko];                                 \
                const int64_t row_ = ka;                                     \
                for (int64_t r_ = 0; r_ < ln_; ++r_) {                       \
                    const int64_t ka = row_ + r_;   /* the row's element */  \
                    const double s = ad_lse_weight(la_[ka], out_);           \
                    __VA_ARGS__;                                             \
                }                                                            \
            });                                                              \
        } else {                                                             \
            AD_ITERATE(&lr_, {                                               \
                const double s = ad_lse_weight(la_[ka], lo_[ko]);            \
                __VA_ARGS__;                                                 \
            });                                                              \
        }                                                                    \
    } while (0)

/* Scratch blocks of the tangent and second-order sweeps (blocks.c):
 * make entry i's adj (0), tan (1) or dadj (2) exist, zeroed.  A scalar's
 * is its slot in the tape's arrays of the same names.                    */
int ad_scratch_zero(ad_tape *t, int64_t i, int which);
/* The tape's per-entry tan (and, if second, dadj) arrays, allocated to
 * its capacity; they are scratch, dropped when the tape grows or compacts. */
int ad_tangent_arrays(ad_tape *t, int second);
void ad_drop_tangent_arrays(ad_tape *t);
/* Entry i's lane of tan or dadj (which 1 or 2), NULL if not allocated. */
double *ad_lane_scratch(ad_tape *t, int64_t i, int which, int64_t lane);
/* The lanes of the next sweeps; more than the scratch has room for drops
 * it all (it is made again with room for them).                         */
void ad_set_lanes(ad_tape *t, int64_t lanes);

/* A rule that runs for one lane at a time (t->lane) over every lane, for
 * an array entry i; t->lane is 0 again afterwards.                      */
static inline int ad_each_lane(ad_tape *t, int64_t i,
                               int (*rule)(ad_tape *, int64_t))
{
    int status = AD_OK;
    for (int64_t l = 0; l < t->lanes && status == AD_OK; ++l) {
        t->lane = l;
        status = rule(t, i);
    }
    t->lane = 0;
    return status;
}

/* The body runs with nl the number of lanes as a constant, 1 to
 * AD_MAX_LANES, so that the lanes' code is written out for each count
 * (AD_FOR_LANES) and the element loop around it vectorises; for one lane
 * it is the loop of a sweep without lanes.                               */
#define AD_BY_LANES(t, ...)                                                  \
    do {                                                                     \
        switch ((t)->lanes) {                                                \
        case 2: { const int64_t nl = 2; __VA_ARGS__; break; }                \
        case 3: { const int64_t nl = 3; __VA_ARGS__; break; }                \
        case 4: { const int64_t nl = 4; __VA_ARGS__; break; }                \
        default: { const int64_t nl = 1; __VA_ARGS__; break; }               \
        }                                                                    \
    } while (0)

/* The body once per lane l < nl, written out, not a loop: at -O2 a loop
 * there is not unrolled, and the element loop around it does not
 * vectorise.                                                            */
#define AD_FOR_LANES(nl, ...)                                                \
    do {                                                                     \
        { const int64_t l = 0; __VA_ARGS__; }                                \
        if ((nl) > 1) { const int64_t l = 1; __VA_ARGS__; }                  \
        if ((nl) > 2) { const int64_t l = 2; __VA_ARGS__; }                  \
        if ((nl) > 3) { const int64_t l = 3; __VA_ARGS__; }                  \
    } while (0)
/* Seeds of a sweep: in range, and leaves if leaves_only (tangent.c). */
int ad_check_seeds(ad_tape *t, int64_t nseeds, const int64_t *idx,
                   int leaves_only);
/* For MAX/MIN entry i: how many operand elements equal each output
 * element (a gradient is split evenly among ties).  Caller frees; NULL
 * when out of memory.                                                    */
double *ad_ties(ad_tape *t, int64_t i);

/* How many of v[0..n) are NaN or infinite: those whose exponent field is
 * all ones, found with integer operations only, so the loop vectorises
 * (a float compare per element does not; every array result is checked). */
static inline int64_t ad_count_nonfinite(const double *v, int64_t n)
{
    uint64_t bad = 0;
    for (int64_t k = 0; k < n; ++k) {
        uint64_t u;
        memcpy(&u, &v[k], sizeof u);
        bad += (((u >> 52) & 0x7ff) + 1) >> 11;     /* 1 iff 0x7ff */
    }
    return (int64_t)bad;
}

/* Zeroed blocks of count doubles for adjoints and gradients (blockcache.c);
 * give them back with ad_block_release. */
double *ad_block_calloc(int64_t count);
void ad_block_release(double *p, int64_t count);
/* A freed tape's table of array blocks (cap of them; NULL, cap 0 if none)
 * for a new tape, and the table of a tape being freed (blockcache.c). */
ad_block *ad_table_take(int64_t *cap);
void ad_table_release(ad_block *blk, int64_t cap);

/* An operation's entry is a variable when an operand is; a comparison's
 * 1.0 or 0.0 never is (it has no derivative).  op: a checked op code.
 * The operands' bits are read from t->variable, not t->flags: appends
 * take no lock (see ad_tape).                                             */
static inline uint8_t ad_inherited_flags(const ad_tape *t, int op, int64_t a,
                                         int64_t b)
{
    uint8_t f = 0;
    if (ad_ops[op].kind == AD_KIND_COMPARE)
        return 0;
    if (a >= 0)
        f |= t->variable[a];
    if (b >= 0)
        f |= t->variable[b];
    return f;
}
int ad_block_prepare(ad_tape *t, int64_t i, int mode);
/* Before a reverse kernel adds into entry j's adjoint block: returns 1
 * when the block is still unset and the kernel writes each of its
 * elements exactly once (can_assign), which then reads the old value as
 * 0 without loading it; otherwise zeroes an unset block now and returns
 * 0.  Scalar entries (their adjoints are zeroed per sweep): 0.          */
int ad_adjoint_claim(ad_tape *t, int64_t j, int can_assign);
/* Entry j's adjoint zeroed if it is still unset, for readers. */
void ad_adjoint_settle(ad_tape *t, int64_t j);
/* The same for the second-order sweep, whose adj and dadj blocks are
 * unset together (second_unset): a kernel that writes every element of
 * both in every lane once may assign.                                   */
int ad_second_claim(ad_tape *t, int64_t j, int can_assign);
void ad_second_settle(ad_tape *t, int64_t j);

/* A guard's number as it was: bit for bit, but any NaN matches any NaN. */
static inline int ad_same_number(double v, double want)
{
    if (isnan(v) || isnan(want))
        return isnan(v) && isnan(want);
    return v == want && !signbit(v) == !signbit(want);
}

/* A recording of scalars replayed at AD_POINT_LANES points at once
 * (lanes.c): ad_lanes_plan says whether t qualifies (every entry a scalar,
 * none an extern; NULL otherwise, or where memory is short) and plans the
 * sweeps of map's batch m for the result entry out (its gradient too, with
 * grad).  ad_lanes_replay then replays at count (<= AD_POINT_LANES)
 * points, point l's batched inputs at x[l * m->nx ...]: the values of
 * entry out into f[l], with grad the variables' gradients into
 * g[l * m->nv ...], the first guard that does not hold into flipped[l]
 * (or -1); val and adj hold AD_POINT_LANES numbers per entry.  Each lane
 * is bit for bit ad_replay's at its point.                               */
#define AD_POINT_LANES 8
typedef struct ad_lanes ad_lanes;
ad_lanes *ad_lanes_plan(const ad_tape *t, const ad_many *m, int64_t out, int grad);
void ad_lanes_free(ad_lanes *lp);
int ad_lanes_replay(const ad_tape *t, const ad_lanes *lp, const ad_many *m,
                    const double *x, int count, int64_t out, double *val,
                    double *adj, double *f, double *g, int64_t *flipped);

/* The plan's leaves k with mask[k] == want (every leaf, mask NULL) take
 * their numbers from x, one after another (replay.c).                    */
void ad_write_leaves(ad_tape *t, const ad_replay_plan *p, const double *x,
                     const uint8_t *mask, int want);

/* The gradients of entries idx[0 .. n - 1] (replay.c): set to zero before
 * a sweep, read after it one after another into g (zeros where the sweep
 * reached none).                                                         */
int ad_zero_grads(ad_tape *t, int64_t n, const int64_t *idx);
void ad_read_grads(ad_tape *t, int64_t n, const int64_t *idx, double *g);

#endif
