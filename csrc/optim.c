/* optim.c -- one optimizer step over every parameter, in C.
 *
 * The arithmetic is torch.optim's single-tensor ("foreach=False") code,
 * operation for operation, so trajectories agree to the last bits where
 * torch's own kernels round the same way.  Notation per element: p the
 * parameter, g its gradient, t the parameter's step count (from 1), lr,
 * wd the weight decay.  torch's kernels compute add(x, y, alpha) as
 * x + alpha*y, addcmul(x, y, z, value) as x + (value*y)*z and
 * addcdiv(x, y, z, value) as x + (value*y)/z; the lines below keep those
 * groupings.  The build turns off floating-point contraction (no fused
 * multiply-add), so each operation rounds on its own, as the formulas say.
 *
 *   SGD      g = g + wd*p
 *            b = g on the first step, else b*momentum + (1-dampening)*g
 *            g = g + momentum*b (nesterov) or b (momentum != 0)
 *            p = p + (-lr)*g
 *   Adam     p = p*(1 - lr*wd)                     (AdamW, decoupled)
 *            g = g + wd*p                          (Adam, coupled)
 *            m = lerp(m, g, 1-beta1)
 *            v = v*beta2 + ((1-beta2)*g)*g
 *            denom = sqrt(v) / sqrt(1 - beta2^t) + eps
 *            p = p + (-(lr / (1 - beta1^t))*m) / denom
 *   RMSprop  g = g + wd*p
 *            s = s*alpha + ((1-alpha)*g)*g
 *            a = lerp(a, g, 1-alpha); avg = sqrt(s + (-a)*a) + eps  (centered)
 *            avg = sqrt(s) + eps                                   (otherwise)
 *            b = b*momentum + g/avg; p = p + (-lr)*b          (momentum > 0)
 *            p = p + ((-lr)*g) / avg                          (otherwise)
 *
 * lerp is torch's: x + w*(y - x) for |w| < 0.5, else y - (y - x)*(1 - w).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "optim.h"

static int optim_fail(ad_optim *o, int status, int64_t k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int optim_fail(ad_optim *o, int status, int64_t k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->errmsg, sizeof o->errmsg, fmt, ap);
    va_end(ap);
    o->err_index = k;
    return status;
}

static inline double lerp(double x, double y, double w)
{
    return fabs(w) < 0.5 ? x + w * (y - x) : y - (y - x) * (1.0 - w);
}

/* Parameter k's row of the table, checked against its tape: an entry that
 * is not the leaf it should be means the table is stale. */
static int check_param(ad_optim *o, int64_t k)
{
    int32_t tk = o->tape[k];
    if (tk < 0 || tk >= o->ntapes || !o->tapes[tk])
        return optim_fail(o, AD_EINVAL, k, "parameter %lld: no such tape",
                          (long long)k);
    const ad_tape *t = o->tapes[tk];
    int64_t i = o->entry[k];
    if (i < 0 || i >= ad_len(t) || t->op[i] != AD_LEAF)
        return optim_fail(o, AD_EINVAL, k, "parameter %lld: entry %lld is not "
                          "a leaf of its tape", (long long)k, (long long)i);
    int64_t want = o->size[k];
    int32_t aux = t->aux[i];
    int64_t n = aux < 0 ? -1 : aux < AD_COUNT_LOAD(t->nblk) ? t->blk[aux].size : -2;
    if (n != want)
        return optim_fail(o, AD_EINVAL, k, "parameter %lld: entry %lld has "
                          "%lld elements, not %lld", (long long)k,
                          (long long)i, (long long)n, (long long)want);
    if (o->offset[k] < 0 || o->offset[k] > o->nstate - (want < 0 ? 1 : want))
        return optim_fail(o, AD_EINVAL, k, "parameter %lld: state offset "
                          "%lld out of range", (long long)k,
                          (long long)o->offset[k]);
    return AD_OK;
}

/* Parameter k's values and gradient (checked by check_param): n elements,
 * n = 0 when it has no gradient and is skipped. */
typedef struct param_view {
    ad_tape *t;
    int64_t i;
    double *p;
    double *g;
    int64_t n;
    int scalar;
} param_view;

static inline param_view view_param(const ad_optim *o, int64_t k)
{
    param_view v;
    v.t = o->tapes[o->tape[k]];
    v.i = o->entry[k];
    v.scalar = o->size[k] < 0;
    if (v.scalar) {
        v.p = &v.t->val[v.i];
        v.g = &v.t->grad[v.i];
        v.n = 1;
    } else {
        ad_block *bk = &v.t->blk[v.t->aux[v.i]];
        v.p = bk->val;
        v.g = bk->grad;
        v.n = bk->grad ? bk->size : 0;
    }
    if (!(v.t->flags[v.i] & AD_FLAG_HAS_GRAD))
        v.n = 0;
    return v;
}

static void sgd(const ad_optim *o, double *p, const double *grad, int64_t n,
                double *buf, int first)
{
    const double lr = o->lr, wd = o->weight_decay, mom = o->momentum;
    const double keep = 1.0 - o->dampening;
    for (int64_t e = 0; e < n; ++e) {
        double g = grad[e];
        if (wd != 0.0)
            g = g + wd * p[e];
        if (mom != 0.0) {
            buf[e] = first ? g : buf[e] * mom + keep * g;
            g = o->nesterov ? g + mom * buf[e] : buf[e];
        }
        p[e] = p[e] + (-lr) * g;
    }
}

/* Adam's bias corrections at step t, computed once per distinct t: the
 * parameters of a step mostly share their step count. */
typedef struct adam_scale {
    double step;
    double step_size;       /* lr / (1 - beta1^t) */
    double bc2_sqrt;        /* sqrt(1 - beta2^t)  */
} adam_scale;

static void adam(const ad_optim *o, double *p, const double *grad, int64_t n,
                 double *m, double *v, adam_scale *sc, double step)
{
    const double lr = o->lr, wd = o->weight_decay;
    const double b1 = o->beta1, b2 = o->beta2, eps = o->eps;
    const double w1 = 1.0 - b1, w2 = 1.0 - b2;
    const double shrink = 1.0 - lr * wd;
    if (sc->step != step) {
        sc->step = step;
        sc->step_size = lr / (1.0 - pow(b1, step));
        sc->bc2_sqrt = sqrt(1.0 - pow(b2, step));
    }
    const double step_size = sc->step_size, bc2_sqrt = sc->bc2_sqrt;
    for (int64_t e = 0; e < n; ++e) {
        double g = grad[e];
        if (o->decoupled)
            p[e] = p[e] * shrink;
        else if (wd != 0.0)
            g = g + wd * p[e];
        m[e] = lerp(m[e], g, w1);
        v[e] = v[e] * b2 + (w2 * g) * g;
        double denom = sqrt(v[e]) / bc2_sqrt + eps;
        p[e] = p[e] + ((-step_size) * m[e]) / denom;
    }
}

static void rmsprop(const ad_optim *o, double *p, const double *grad,
                    int64_t n, double *sq, double *buf, double *avg_g)
{
    const double lr = o->lr, wd = o->weight_decay, mom = o->momentum;
    const double alpha = o->alpha, w = 1.0 - alpha, eps = o->eps;
    for (int64_t e = 0; e < n; ++e) {
        double g = grad[e];
        if (wd != 0.0)
            g = g + wd * p[e];
        sq[e] = sq[e] * alpha + (w * g) * g;
        double avg;
        if (o->centered) {
            avg_g[e] = lerp(avg_g[e], g, w);
            avg = sqrt(sq[e] + (-avg_g[e]) * avg_g[e]);
        } else {
            avg = sqrt(sq[e]);
        }
        avg = avg + eps;
        if (mom > 0.0) {
            buf[e] = buf[e] * mom + g / avg;
            p[e] = p[e] + (-lr) * buf[e];
        } else {
            p[e] = p[e] + ((-lr) * g) / avg;
        }
    }
}

static int check_state(ad_optim *o)
{
    if (o->nparams < 0 || o->ntapes < 0 || o->nstate < 0)
        return optim_fail(o, AD_EINVAL, -1, "negative optimizer sizes");
    if (o->nparams && (!o->tape || !o->entry || !o->size || !o->offset ||
                       !o->steps || !o->scalar_data))
        return optim_fail(o, AD_EINVAL, -1, "optimizer table not set");
    if (o->nstate && (!o->state1 || !o->state2 || !o->state3))
        return optim_fail(o, AD_EINVAL, -1, "optimizer state not set");
    switch ((enum ad_optim_rule)o->rule) {
    case AD_OPTIM_SGD: case AD_OPTIM_ADAM: case AD_OPTIM_RMSPROP:
        return AD_OK;
    }
    return optim_fail(o, AD_EINVAL, -1, "unknown optimizer rule %d",
                      (int)o->rule);
}

/* The optimizer's state and every parameter, checked before anything is
 * changed: a bad table changes nothing. */
static int check_table(ad_optim *o)
{
    int status = check_state(o);
    for (int64_t k = 0; status == AD_OK && k < o->nparams; ++k)
        status = check_param(o, k);
    return status;
}

int ad_optim_step(ad_optim *o)
{
    int status = check_table(o);
    if (status != AD_OK)
        return status;
    /* an Array whose grad was reset to 0 has no block until a sweep gives
     * it one; it still takes a step (weight decay, momentum), as a zero
     * gradient does in torch */
    for (int64_t k = 0; k < o->nparams; ++k) {
        param_view v = view_param(o, k);
        if (!v.scalar && !v.g && (v.t->flags[v.i] & AD_FLAG_HAS_GRAD) &&
            !ad_entry_adjoint(v.t, v.i, AD_SWEEP_INPLACE))    /* zeroed */
            return optim_fail(o, AD_ENOMEM, k, "out of memory for gradients");
    }
    int64_t ns = 0;
    adam_scale sc = {0.0, 0.0, 0.0};    /* steps count from 1: not cached */
    for (int64_t k = 0; k < o->nparams; ++k) {
        param_view v = view_param(o, k);
        if (v.n > 0) {
            /* torch counts steps per parameter: the skipped ones keep theirs */
            double step = o->steps[k] + 1.0;
            o->steps[k] = step;
            int64_t off = o->offset[k];
            switch ((enum ad_optim_rule)o->rule) {
            case AD_OPTIM_SGD:
                sgd(o, v.p, v.g, v.n, o->state1 + off, step == 1.0);
                break;
            case AD_OPTIM_ADAM:
                adam(o, v.p, v.g, v.n, o->state1 + off, o->state2 + off, &sc,
                     step);
                break;
            case AD_OPTIM_RMSPROP:
                rmsprop(o, v.p, v.g, v.n, o->state1 + off, o->state2 + off,
                        o->state3 + off);
                break;
            }
        }
        if (v.scalar) {
            /* a leaf's value is also its input for a replay; the data is a
             * float now (micrograd's Values type it) */
            v.t->imm[v.i] = *v.p;
            if (v.n > 0)
                v.t->flags[v.i] &= (uint8_t)~AD_FLAG_VALUE_INT;
            o->scalar_data[ns++] = *v.p;
        }
    }
    return AD_OK;
}

int ad_optim_zero_grad(ad_optim *o, int set_to_none)
{
    int status = check_table(o);
    if (status != AD_OK)
        return status;
    const uint8_t clear = (uint8_t)(AD_FLAG_GRAD_FLOAT |
                                    (set_to_none ? AD_FLAG_HAS_GRAD : 0));
    for (int64_t k = 0; k < o->nparams; ++k) {
        param_view v = view_param(o, k);
        if (v.scalar)
            *v.g = 0.0;
        else if (set_to_none)
            ad_array_zero_grad(v.t, v.i);   /* cannot fail: an array */
        else if (v.g)
            memset(v.g, 0, (size_t)o->size[k] * sizeof(double));
        v.t->flags[v.i] &= (uint8_t)~clear;
    }
    return AD_OK;
}
