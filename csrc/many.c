/* many.c -- one recording replayed at many points, on several threads.
 *
 * A replay writes the tape's values, adjoints and gradients, so threads
 * cannot share one tape: each thread replays on a copy of its own
 * (ad_tape_copy: the columns and every block's values and index map,
 * nothing of the sweeps' scratch), the points split among the threads in
 * contiguous runs.  Each point is ad_replay's, so a row is bit for bit the
 * single replay at that point.  The copy owns its blocks' values, which in
 * the tape are the Python Arrays' memory.  No Python runs here: a tape
 * whose extern entries call Python (custom ops, linalg) is replayed by the
 * caller point by point instead (record.py decides).                    */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static double *copy_doubles(const double *src, int64_t n)
{
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (p && n)
        memcpy(p, src, (size_t)n * sizeof *p);
    return p;
}

void ad_tape_copy_free(ad_tape *c)
{
    if (!c)
        return;
    for (int64_t k = 0; k < c->nblk; ++k) {
        free(c->blk[k].val);            /* the copy's own, not Python's */
        c->blk[k].val = 0;
    }
    ad_tape_free(c);
}

ad_tape *ad_tape_copy(const ad_tape *t)
{
    const int64_t n = ad_len(t), nblk = AD_COUNT_LOAD(t->nblk);
    ad_tape *c = ad_tape_new();
    if (!c)
        return 0;
    if (ad_tape_reserve(c, n ? n : 1) != AD_OK ||
        ad_tape_reserve_blocks(c, nblk ? nblk : 1) != AD_OK) {
        ad_tape_free(c);
        return 0;
    }
    if (n) {
        memcpy(c->op, t->op, (size_t)n * sizeof *c->op);
        memcpy(c->a, t->a, (size_t)n * sizeof *c->a);
        memcpy(c->b, t->b, (size_t)n * sizeof *c->b);
        memcpy(c->aux, t->aux, (size_t)n * sizeof *c->aux);
        memcpy(c->imm, t->imm, (size_t)n * sizeof *c->imm);
        memcpy(c->val, t->val, (size_t)n * sizeof *c->val);
        memcpy(c->variable, t->variable, (size_t)n * sizeof *c->variable);
        for (int64_t i = 0; i < n; ++i)     /* a sweep's marks stay behind */
            c->flags[i] = t->flags[i] & (uint8_t)~(AD_FLAG_MARK | AD_FLAG_HAS_GRAD);
        memset(c->adj, 0, (size_t)n * sizeof *c->adj);
        memset(c->grad, 0, (size_t)n * sizeof *c->grad);
    }
    for (int64_t k = 0; k < nblk; ++k) {
        const ad_block *src = &t->blk[k];
        ad_block *dst = &c->blk[k];
        *dst = *src;
        dst->adj = dst->grad = dst->tan = dst->dadj = 0;
        dst->grad_borrowed = dst->adj_unset = dst->second_unset = 0;
        dst->map = 0;
        dst->val = copy_doubles(src->val, src->size);
        if (dst->val && src->map) {
            dst->map = malloc((size_t)(src->nmap ? src->nmap : 1) * sizeof *dst->map);
            if (dst->map && src->nmap)
                memcpy(dst->map, src->map, (size_t)src->nmap * sizeof *dst->map);
        }
        c->nblk = k + 1;                /* (what the copy's free releases) */
        if (!dst->val || (src->map && !dst->map)) {
            ad_tape_copy_free(c);
            return 0;
        }
    }
    c->n = n;
    return c;
}

/* One thread's share: points lo .. hi - 1 on a copy of the tape. */
typedef struct share {
    const ad_tape *tape;
    const ad_many *m;
    const ad_lanes *lanes;  /* a recording of scalars: AD_POINT_LANES points a
                               replay on the tape itself (lanes.c), or NULL */
    int64_t lo, hi;
    int status;
    char errmsg[sizeof ((ad_tape *)0)->errmsg];
} share;

static void keep_error(share *s, const ad_tape *t)
{
    memcpy(s->errmsg, t->errmsg, sizeof s->errmsg);
}

/* The methods that take the variables. */
static int takes_variables(int mode)
{
    return mode == AD_REPLAY_GRAD || mode == AD_MANY_HVP ||
           mode == AD_MANY_HESSIAN || mode == AD_MANY_JACOBIAN;
}

/* ... and those that need a seeds buffer per thread */
static int seeds_tangents(int mode)
{
    return mode == AD_MANY_HVP || mode == AD_MANY_HESSIAN || mode == AD_MANY_JACOBIAN;
}

/* Point k's batched leaves written (a thread's copy holds the shared ones
 * already), then ad_replay's forward sweep and guards. */
static int replay_point(ad_tape *c, const ad_many *m, int64_t k)
{
    double fk;
    ad_write_leaves(c, m->plan, m->nx ? m->x + k * m->nx : 0, m->batched, 1);
    return ad_replay(c, m->plan, 0, AD_REPLAY_VALUES, 0, &fk, 0, &m->flipped[k]);
}

/* The value, or the value and gradient, at point k: ad_replay's, the
 * sweep's gradients read for the variables alone.                        */
static int first_order_point(ad_tape *c, const ad_many *m, int64_t k)
{
    int status = replay_point(c, m, k);
    if (status != AD_OK || m->flipped[k] >= 0)
        return status;
    if (m->mode == AD_REPLAY_GRAD) {
        const int64_t out = m->plan->output;
        const double one = 1.0;
        m->f[k] = c->aux[out] < 0 ? c->val[out] : c->blk[c->aux[out]].val[0];
        if ((status = ad_zero_grads(c, m->nvar, m->var)) != AD_OK ||
            (status = ad_backward_arrays(c, 1, &out, &one, 0, AD_SWEEP_LEAVES,
                                         0)) != AD_OK)
            return status;
        ad_read_grads(c, m->nvar, m->var, m->nv ? m->g + k * m->nv : 0);
    } else if (c->aux[m->out] < 0) {
        m->f[k * m->nout] = c->val[m->out];
    } else {
        memcpy(m->f + k * m->nout, c->blk[c->aux[m->out]].val,
               (size_t)m->nout * sizeof *m->f);
    }
    return AD_OK;
}

static int64_t entry_size(const ad_tape *t, int64_t i)
{
    return t->aux[i] < 0 ? 1 : t->blk[t->aux[i]].size;
}

/* The variables' dadj (of the selected lane), flat, every stride-th
 * number of out from out[0]: zeros where the sweep reached none.       */
static void read_dadj(ad_tape *c, const ad_many *m, double *out, int64_t stride)
{
    for (int64_t j = 0; j < m->nvar; ++j) {
        const int64_t size = entry_size(c, m->var[j]);
        const double *d = ad_entry_scratch(c, m->var[j], 2);
        for (int64_t e = 0; e < size; ++e, out += stride)
            *out = d ? d[e] : 0.0;
    }
}

/* A tangent sweep along the unit directions lo .. lo + lanes - 1 of the
 * variables' nv numbers: each variable's seed lane after lane (the
 * layout of ad_tangent) in seeds, pointed to by ptrs.                    */
static int unit_tangents(ad_tape *c, const ad_many *m, int64_t lo, int64_t lanes,
                         double *seeds, const double **ptrs)
{
    const double zero = 0.0;
    memset(seeds, 0, (size_t)(lanes * m->nv) * sizeof *seeds);
    for (int64_t j = 0, at = 0; j < m->nvar; ++j) {
        const int64_t size = entry_size(c, m->var[j]);
        double *s = seeds + lanes * at;
        ptrs[j] = s;
        for (int64_t l = 0; l < lanes; ++l)
            if (lo + l >= at && lo + l < at + size)
                s[l * size + (lo + l - at)] = 1.0;
        at += size;
    }
    return ad_tangent(c, ad_len(c), lanes, m->nvar, m->var, &zero, ptrs);
}

/* A Hessian-vector product, or the Hessian, at point k.  seeds: room for
 * AD_MAX_LANES * nv numbers; ptrs: for nvar pointers.                   */
static int second_order_point(ad_tape *c, const ad_many *m, int64_t k,
                              double *seeds, const double **ptrs)
{
    int status = replay_point(c, m, k);
    if (status != AD_OK || m->flipped[k] >= 0)
        return status;
    const double one = 1.0, zero = 0.0;
    const int64_t nv = m->nv, len = ad_len(c), out = m->plan->output;
    if (m->mode == AD_MANY_HVP) {
        const double *v = m->v + k * nv;
        for (int64_t j = 0; j < m->nvar; v += entry_size(c, m->var[j]), ++j)
            ptrs[j] = v;
        if ((status = ad_tangent(c, len, 1, m->nvar, m->var, &zero, ptrs)) != AD_OK ||
            (status = ad_second_order(c, 1, &out, &one, 0)) != AD_OK)
            return status;
        read_dadj(c, m, m->g + k * nv, 1);
        return AD_OK;
    }
    double *h = m->g + k * nv * nv;
    for (int64_t lo = 0; lo < nv && status == AD_OK; lo += AD_MAX_LANES) {
        const int64_t lanes = nv - lo < AD_MAX_LANES ? nv - lo : AD_MAX_LANES;
        status = unit_tangents(c, m, lo, lanes, seeds, ptrs);
        if (status == AD_OK)
            status = ad_second_order(c, 1, &out, &one, 0);
        for (int64_t l = 0; l < lanes && status == AD_OK; ++l)
            if ((status = ad_select_lane(c, l)) == AD_OK)
                read_dadj(c, m, h + lo + l, nv);
    }
    if (status == AD_OK)
        status = ad_select_lane(c, 0);
    return status;
}

/* The Jacobian of entry m->out (nout numbers) at point k, as the single
 * call takes it (trace.py): a reverse sweep per row where it has no more
 * rows than columns, else tangent sweeps along AD_MAX_LANES columns at a
 * time.                                                                  */
static int jacobian_point(ad_tape *c, const ad_many *m, int64_t k,
                          double *seeds, const double **ptrs)
{
    int status = replay_point(c, m, k);
    if (status != AD_OK || m->flipped[k] >= 0)
        return status;
    const int64_t nv = m->nv, rows = m->nout, out = m->out;
    double *jac = m->g + k * rows * nv;
    if (rows <= nv) {
        const int scalar = c->aux[out] < 0;
        for (int64_t r = 0; r < rows && status == AD_OK; ++r) {
            const double seed = scalar ? 1.0 : 0.0;
            const double *unit = seeds;
            if (!scalar) {
                memset(seeds, 0, (size_t)rows * sizeof *seeds);
                seeds[r] = 1.0;
            }
            if ((status = ad_zero_grads(c, m->nvar, m->var)) == AD_OK &&
                (status = ad_backward_arrays(c, 1, &out, &seed, scalar ? 0 : &unit,
                                             AD_SWEEP_LEAVES, 0)) == AD_OK)
                ad_read_grads(c, m->nvar, m->var, jac + r * nv);
        }
        return status;
    }
    for (int64_t lo = 0; lo < nv && status == AD_OK; lo += AD_MAX_LANES) {
        const int64_t lanes = nv - lo < AD_MAX_LANES ? nv - lo : AD_MAX_LANES;
        status = unit_tangents(c, m, lo, lanes, seeds, ptrs);
        for (int64_t l = 0; l < lanes && status == AD_OK; ++l) {
            if ((status = ad_select_lane(c, l)) != AD_OK)
                break;
            const double *d = ad_entry_scratch(c, out, 1);
            for (int64_t r = 0; r < rows; ++r)
                jac[r * nv + lo + l] = d ? d[r] : 0.0;
        }
    }
    if (status == AD_OK)
        status = ad_select_lane(c, 0);
    return status;
}

/* The share's points AD_POINT_LANES at a time (lanes.c): no copy of the
 * tape, whose columns are only read; each thread its values and
 * adjoints.                                                              */
static void replay_lanes(share *s)
{
    const ad_many *m = s->m;
    const ad_tape *t = s->tape;
    const int64_t n = ad_len(t);
    const int grad = m->mode == AD_REPLAY_GRAD;
    const int64_t out = grad ? m->plan->output : m->out;
    double *val = malloc((size_t)(n * AD_POINT_LANES) * sizeof *val);
    double *adj = grad ? malloc((size_t)(n * AD_POINT_LANES) * sizeof *adj) : 0;
    if (!val || (grad && !adj)) {
        s->status = AD_ENOMEM;
        snprintf(s->errmsg, sizeof s->errmsg, "out of memory for a thread "
                 "of map");
    }
    for (int64_t k = s->lo; k < s->hi && s->status == AD_OK; k += AD_POINT_LANES) {
        const int count = (int)(s->hi - k < AD_POINT_LANES ? s->hi - k : AD_POINT_LANES);
        double f[AD_POINT_LANES], *g = grad ? m->g + k * m->nv : 0;
        const double *x = m->nx ? m->x + k * m->nx : 0;
        int status = ad_lanes_replay(t, s->lanes, m, x, count, out, val, adj, f,
                                     g, &m->flipped[k]);
        if (status != AD_OK) {
            s->status = status;
            snprintf(s->errmsg, sizeof s->errmsg, "map: a bad op in a "
                     "recording of scalars");
            break;
        }
        for (int l = 0; l < count; ++l)
            if (m->flipped[k + l] < 0)
                m->f[k + l] = f[l];     /* (a row's gradient as it was: unread) */
    }
    free(val);
    free(adj);
}

static void *replay_share(void *arg)
{
    share *s = arg;
    const ad_many *m = s->m;
    if (s->lanes) {
        replay_lanes(s);
        return 0;
    }
    const int second = seeds_tangents(m->mode);
    ad_tape *c = ad_tape_copy(s->tape);
    if (c)                              /* the same at every point */
        ad_write_leaves(c, m->plan, m->shared, m->batched, 0);
    /* room for AD_MAX_LANES unit directions, or a unit seed of the result */
    const int64_t room = AD_MAX_LANES * m->nv > m->nout ? AD_MAX_LANES * m->nv : m->nout;
    double *seeds = second ? malloc((size_t)(room + 1) * sizeof *seeds) : 0;
    const double **ptrs = second ? malloc((size_t)(m->nvar + 1) * sizeof *ptrs) : 0;
    if (!c || (second && (!seeds || !ptrs))) {
        s->status = AD_ENOMEM;
        snprintf(s->errmsg, sizeof s->errmsg, "out of memory copying the "
                 "recording for a thread of map");
    }
    for (int64_t k = s->lo; k < s->hi && s->status == AD_OK; ++k) {
        int status = m->mode == AD_MANY_JACOBIAN ? jacobian_point(c, m, k, seeds, ptrs)
                   : second ? second_order_point(c, m, k, seeds, ptrs)
                   : first_order_point(c, m, k);
        if (status != AD_OK) {
            s->status = status;
            keep_error(s, c);
        }
    }
    free(seeds);
    free(ptrs);
    ad_tape_copy_free(c);
    return 0;
}

/* The second-order methods' variables: entries of the tape (leaves,
 * none twice), nv numbers in all; an objective; room for the results.  */
static int check_variables(ad_tape *t, const ad_many *m)
{
    const int64_t n = ad_len(t);
    int64_t nv = 0;
    if ((m->mode != AD_MANY_JACOBIAN && m->plan->output < 0) || m->nvar < 0 ||
        (m->nvar && !m->var))
        return ad_fail(t, AD_EINVAL, -1, "map: a gradient or Hessian needs an "
                       "objective entry, and every derivative the variables");
    for (int64_t j = 0; j < m->nvar; ++j) {
        const int64_t e = m->var[j];
        if (e < 0 || e >= n || t->op[e] != AD_LEAF)
            return ad_fail(t, AD_EINVAL, e, "map: variable %lld is not a leaf "
                           "of the recording", (long long)j);
        for (int64_t i = 0; i < j; ++i)
            if (m->var[i] == e)
                return ad_fail(t, AD_EINVAL, e, "map: variable %lld repeats "
                               "entry %lld", (long long)j, (long long)e);
        nv += entry_size(t, e);
    }
    if (nv != m->nv || (m->npoints && nv && !m->g) ||
        (m->mode == AD_MANY_HVP && m->npoints && nv && !m->v))
        return ad_fail(t, AD_EINVAL, -1, "map: the variables hold %lld numbers, "
                       "not %lld, or there is no room for the results",
                       (long long)nv, (long long)m->nv);
    return AD_OK;
}

/* The numbers of the plan's batched leaves (*nx) and shared ones. */
static int split_leaves(ad_tape *t, const ad_many *m, int64_t *nx, int64_t *ns)
{
    const ad_replay_plan *p = m->plan;
    *nx = *ns = 0;
    if (p->nleaves && !m->batched)
        return ad_fail(t, AD_EINVAL, -1, "map: which leaves are batched is "
                       "not given");
    for (int64_t k = 0; k < p->nleaves; ++k)
        *(m->batched[k] ? nx : ns) += entry_size(t, p->leaf[k]);
    return AD_OK;
}

int ad_replay_many(ad_tape *t, ad_many *m)
{
    int64_t all, nx, ns;
    int status = ad_replay_check(t, m->plan, &all);
    if (status == AD_OK)
        status = split_leaves(t, m, &nx, &ns);
    if (status != AD_OK)
        return status;
    if (m->npoints < 0 || m->nthreads < 1 || nx != m->nx || ns != m->nshared ||
        !m->flipped || (ns && !m->shared) || (m->npoints && (!m->f || (nx && !m->x))))
        return ad_fail(t, AD_EINVAL, -1, "map: a bad batch (%lld points of "
                       "%lld numbers and %lld shared ones, the recording takes "
                       "%lld and %lld)", (long long)m->npoints, (long long)m->nx,
                       (long long)m->nshared, (long long)nx, (long long)ns);
    if (m->mode == AD_REPLAY_VALUES || m->mode == AD_MANY_JACOBIAN) {
        if (m->out < 0 || m->out >= ad_len(t) || t->aux[m->out] >= AD_COUNT_LOAD(t->nblk) ||
            m->nout != (t->aux[m->out] < 0 ? 1 : t->blk[t->aux[m->out]].size))
            return ad_fail(t, AD_EINVAL, -1, "map: the result entry %lld does "
                           "not hold %lld numbers", (long long)m->out,
                           (long long)m->nout);
    }
    if (takes_variables(m->mode)) {
        status = check_variables(t, m);
        if (status != AD_OK)
            return status;
    } else if (m->mode != AD_REPLAY_VALUES) {
        return ad_fail(t, AD_EINVAL, -1, "map: no method %d", m->mode);
    }
    for (int64_t i = 0; i < ad_len(t); ++i)
        if (t->op[i] == AD_EXTERN && !ad_native_matmul(t, i))
            return ad_fail(t, AD_EINVAL, i, "map: entry %lld is an extern op "
                           "whose rules are Python code, which threads "
                           "without Python cannot run", (long long)i);
    int nthreads = m->nthreads;
    if (nthreads > m->npoints)
        nthreads = m->npoints ? (int)m->npoints : 1;
    share *shares = calloc((size_t)nthreads, sizeof *shares);
    pthread_t *ids = calloc((size_t)nthreads, sizeof *ids);
    if (!shares || !ids) {
        free(shares);
        free(ids);
        return ad_fail(t, AD_ENOMEM, -1, "out of memory for map's threads");
    }
    /* a recording of scalars, of no more than some 64 MiB of values and
     * adjoints a thread, runs AD_POINT_LANES points at a time */
    ad_lanes *lanes = 0;
    if ((m->mode == AD_REPLAY_VALUES || m->mode == AD_REPLAY_GRAD) &&
        ad_len(t) <= ((int64_t)4 << 20) / AD_POINT_LANES)
        lanes = ad_lanes_plan(t, m, m->mode == AD_REPLAY_VALUES ? m->out
                                                                : m->plan->output,
                              m->mode != AD_REPLAY_VALUES);
    int64_t per = m->npoints / nthreads, extra = m->npoints % nthreads, lo = 0;
    int started = 0;
    for (int k = 0; k < nthreads; ++k) {
        shares[k].tape = t;
        shares[k].lanes = lanes;
        shares[k].m = m;
        shares[k].lo = lo;
        lo += per + (k < extra);
        shares[k].hi = lo;
    }
    /* the caller's thread takes the first share: one thread starts none */
    for (int k = 1; k < nthreads; ++k) {
        if (pthread_create(&ids[k], 0, replay_share, &shares[k]) != 0) {
            shares[k].status = AD_ENOMEM;
            snprintf(shares[k].errmsg, sizeof shares[k].errmsg,
                     "map: could not start a thread");
            break;
        }
        started = k;
    }
    replay_share(&shares[0]);
    for (int k = 1; k <= started; ++k)
        pthread_join(ids[k], 0);
    status = AD_OK;
    for (int k = 0; k < nthreads && status == AD_OK; ++k) {
        if (shares[k].status != AD_OK) {
            status = shares[k].status;
            memcpy(t->errmsg, shares[k].errmsg, sizeof t->errmsg);
            t->err_index = -1;
        }
    }
    /* a thread that could not start leaves its points undone: an error */
    if (status == AD_OK && started + 1 < nthreads && m->npoints)
        status = ad_fail(t, AD_ENOMEM, -1, "map: could not start a thread");
    ad_lanes_free(lanes);
    free(shares);
    free(ids);
    return status;
}
