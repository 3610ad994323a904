/* lbfgs.c -- L-BFGS with a strong Wolfe line search, run on a recorded tape.
 *
 * Nocedal & Wright, Numerical Optimization (2nd ed.):
 *   direction   the two-loop recursion (their Algorithm 7.4) over the last
 *               m pairs, with H0 = (s.y / y.y) I from the newest pair; with
 *               no pair, -g scaled so the first move has length 1 (as
 *               L-BFGS-B starts).
 *   step        bracketing (Algorithm 3.5) and zoom (3.6) for the strong
 *               Wolfe conditions, c1 = 1e-4, c2 = 0.9; the zoom tries the
 *               minimizer of the cubic through both ends' values and
 *               slopes, or bisects when that is not inside the middle 80%
 *               of the bracket.
 *   pairs       kept only when s.y > eps * y.y, so H stays positive
 *               definite however the line search ended.
 *
 * A trial point where f or its gradient is NaN or inf counts as a step too
 * long: the bracket shrinks towards the iterate.  When the evaluations run
 * out, the best point with sufficient decrease found is taken; with none,
 * the history is dropped and the search tried once more along -g (as
 * L-BFGS-B does) before giving up.  The iterate only ever moves to a point
 * where f and the gradient are finite.                                   */
#define _POSIX_C_SOURCE 200809L  /* clock_gettime */

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "lbfgs.h"

#define C1 1e-4             /* sufficient decrease */
#define C2 0.9              /* curvature (0.9: the usual choice for quasi-Newton) */
#define MAX_FIRST_STEP 1e10 /* when |g| is tiny, 1/|g| is not a sane step */
#define FLAT 1e-10          /* f's relative noise, for flat_and_level */

enum phase { START, ITERATE, RESUME };
enum search_result { LS_ACCEPT, LS_FAIL, LS_GUARD };

/* A point on the line x + a d: the step, f there, and its slope g.d. */
typedef struct lspoint {
    double a, f, d;
} lspoint;

static int fail(ad_lbfgs *o, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int fail(ad_lbfgs *o, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->errmsg, sizeof o->errmsg, fmt, ap);
    va_end(ap);
    return status;
}

/* A sweep failed: its message is on the tape. */
static int sweep_failed(ad_lbfgs *o, int status)
{
    snprintf(o->errmsg, sizeof o->errmsg, "%s", o->tape->errmsg);
    return status;
}

/* Four partial sums: with one, every add waits for the one before, and the
 * two-loop recursion is mostly dot products. */
static double dot(const double *u, const double *v, int64_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += u[i] * v[i];
        s1 += u[i + 1] * v[i + 1];
        s2 += u[i + 2] * v[i + 2];
        s3 += u[i + 3] * v[i + 3];
    }
    for (; i < n; ++i)
        s0 += u[i] * v[i];
    return (s0 + s1) + (s2 + s3);
}

/* The largest |v_i| of a finite v. */
static double max_abs(const double *v, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double a = fabs(v[i]);
        m = a > m ? a : m;
    }
    return m;
}

static int all_finite(const double *v, int64_t n)
{
    /* (integer tests, which vectorise: a sum of v[i] * 0.0, NaN for a NaN
     * or an infinity, is one chain of dependent additions, a tenth of a
     * Rosenbrock gradient's evaluation at n = 10,000) */
    return ad_count_nonfinite(v, n) == 0;
}

ad_lbfgs *ad_lbfgs_new(int64_t n, int64_t m, int64_t max_bytes)
{
    if (n < 1 || m < 1)
        return 0;
    /* x g d xt gt, s and y (m rows each), rho alpha; counted in double
     * first so a huge m cannot overflow the size */
    double want = 8.0 * ((double)n * (5.0 + 2.0 * (double)m) + 2.0 * (double)m);
    if (want > (double)(INT64_MAX / 2) || (max_bytes >= 0 && want > (double)max_bytes))
        return 0;
    ad_lbfgs *o = calloc(1, sizeof *o);
    if (!o)
        return 0;
    size_t count = (size_t)(n * (5 + 2 * m) + 2 * m);
    double *w = malloc(count * sizeof *w);
    if (!w) {
        free(o);
        return 0;
    }
    o->work = w;
    o->n = n;
    o->m = m;
    o->x = w;
    o->g = w + n;
    o->d = w + 2 * n;
    o->xt = w + 3 * n;
    o->gt = w + 4 * n;
    o->s = w + 5 * n;
    o->y = o->s + m * n;
    o->rho = o->y + m * n;
    o->alpha = o->rho + m;
    memset(w, 0, count * sizeof *w);
    o->newest = m - 1;          /* the first pair goes to row 0 */
    o->maxiter = 15000;         /* L-BFGS-B's defaults in scipy */
    o->maxls = 20;
    o->gtol = 1e-5;
    o->ftol = 2.220446049250313e-09;
    o->pause = INFINITY;
    o->guard = -1;
    return o;
}

void ad_lbfgs_free(ad_lbfgs *o)
{
    if (o) {
        free(o->work);
        free(o);
    }
}

/* Every index the run will follow is in range: a stale or malformed
 * problem is an error, never a wild read. */
static int check(ad_lbfgs *o)
{
    ad_tape *t = o->tape;
    if (!t)
        return fail(o, AD_EINVAL, "no tape to minimize on");
    int64_t total;
    int status = ad_replay_check(t, o->replay, &total);
    if (status != AD_OK)
        return sweep_failed(o, status);
    if (o->replay->output < 0)
        return fail(o, AD_EINVAL, "no objective entry");
    if (o->replay->nleaves < 1)
        return fail(o, AD_EINVAL, "no variables");
    if (total != o->n)
        return fail(o, AD_EINVAL, "the leaves hold %lld numbers, the "
                    "minimizer was made for %lld", (long long)total,
                    (long long)o->n);
    if (o->maxiter < 0 || o->maxls < 1 || !(o->gtol >= 0.0) ||
        !(o->ftol >= 0.0) || !(o->pause >= 0.0))
        return fail(o, AD_EINVAL, "bad options: maxiter %lld, maxls %lld, "
                    "gtol %g, ftol %g, pause %g", (long long)o->maxiter,
                    (long long)o->maxls, o->gtol, o->ftol, o->pause);
    if (o->phase < START || o->phase > RESUME || o->npairs < 0 ||
        o->npairs > o->m || o->newest < 0 || o->newest >= o->m)
        return fail(o, AD_EINVAL, "corrupt minimizer state");
    return AD_OK;
}

/* -- one evaluation: f and its gradient at x, one replay --------------- */

static int evaluate(ad_lbfgs *o, const double *x, double *f, double *g,
                    int *outcome)
{
    o->nfev++;
    int64_t flipped;
    int status = ad_replay(o->tape, o->replay, x, AD_REPLAY_GRAD_FINITE, 0,
                           f, g, &flipped);
    if (status != AD_OK)
        return sweep_failed(o, status);
    if (flipped >= 0) {
        o->guard = flipped;
        *outcome = AD_EVAL_GUARD;
    } else if (!isfinite(*f) || !all_finite(g, o->n)) {
        *outcome = AD_EVAL_NONFINITE;
    } else {
        *outcome = AD_EVAL_OK;
    }
    return AD_OK;
}

int ad_lbfgs_evaluate(ad_lbfgs *o, const double *x, double *f, double *g,
                      int32_t *outcome)
{
    int status = check(o);
    if (status != AD_OK)
        return status;
    int result;
    if ((status = evaluate(o, x, f, g, &result)) != AD_OK)
        return status;
    if (result == AD_EVAL_GUARD)
        *f = NAN;
    if (result == AD_EVAL_GUARD || !isfinite(*f))
        for (int64_t i = 0; i < o->n; ++i)
            g[i] = NAN;         /* not computed */
    *outcome = result;
    return AD_OK;
}

/* -- the line search along d from the iterate (x, f, g) ------------------- */

/* Where f is flat to rounding, the sufficient decrease c1 a d0 is below
 * the noise in f and only the slope still tells progress: a point whose f
 * is no higher than f0 beyond that noise and whose slope meets the strong
 * curvature condition is taken (Hager and Zhang's approximate Wolfe
 * conditions, with their 1e-6 tightened to 1e-10).  Without this, a tight
 * gtol fails in the line search near the minimum of f ~ 1.               */
static int flat_and_level(const lspoint *p, double f0, double d0)
{
    return p->f <= f0 + FLAT * fabs(f0) && fabs(p->d) <= -C2 * d0;
}

/* Evaluate at x + a d into xt, gt. */
static int trial(ad_lbfgs *o, double a, lspoint *p, int *outcome)
{
    const int64_t n = o->n;
    for (int64_t i = 0; i < n; ++i)
        o->xt[i] = o->x[i] + a * o->d[i];
    o->ls_evals++;
    p->a = a;
    int status = evaluate(o, o->xt, &p->f, o->gt, outcome);
    if (status == AD_OK && *outcome == AD_EVAL_NONFINITE) {
        p->f = INFINITY;                /* a step too long */
        p->d = NAN;
    } else if (status == AD_OK && *outcome == AD_EVAL_OK) {
        p->d = dot(o->gt, o->d, n);
    }
    return status;
}

/* A step inside the bracket [lo, hi] (either order): the cubic's minimizer
 * or the midpoint.  lo is always a finite point. */
static double interpolate(const lspoint *lo, const lspoint *hi)
{
    const double mid = 0.5 * (lo->a + hi->a);
    if (!isfinite(hi->f) || !isfinite(hi->d))
        return mid;
    double d1 = lo->d + hi->d - 3.0 * (lo->f - hi->f) / (lo->a - hi->a);
    double r = d1 * d1 - lo->d * hi->d;
    if (!(r >= 0.0))
        return mid;                     /* no real minimizer */
    double d2 = copysign(sqrt(r), hi->a - lo->a);
    double a = hi->a - (hi->a - lo->a) * (hi->d + d2 - d1)
                                       / (hi->d - lo->d + 2.0 * d2);
    double left = fmin(lo->a, hi->a), right = fmax(lo->a, hi->a);
    double margin = 0.1 * (right - left);
    if (!(a >= left + margin && a <= right - margin))
        return mid;
    return a;
}

/* One trial step a of either phase of the line search, and what ends the
 * search whatever the phase: a guard that flipped (the caller records
 * again at a), or a level point where f is flat to rounding.  *done says
 * whether *result is settled. */
static int try_step(ad_lbfgs *o, double a, lspoint *p, double f0, double d0,
                    double *ft, int *result, int *done)
{
    int outcome;
    int status = trial(o, a, p, &outcome);
    *done = 0;
    if (status != AD_OK)
        return status;
    if (outcome == AD_EVAL_GUARD) {
        o->step = a;
        *result = LS_GUARD;
        *done = 1;
    } else if (outcome == AD_EVAL_OK && flat_and_level(p, f0, d0)) {
        *ft = p->f;
        *result = LS_ACCEPT;
        *done = 1;
    }
    return AD_OK;
}

/* The evaluations ran out (or the bracket shrank to nothing): take best,
 * the lowest point with sufficient decrease, if the search found one.  It
 * is evaluated again so xt and gt hold it (the same tape at the same point
 * gives the same numbers). */
static int settle(ad_lbfgs *o, const lspoint *best, double *ft, int *result)
{
    *result = LS_FAIL;
    if (!(best->a > 0.0))
        return AD_OK;
    lspoint p;
    int outcome;
    int status = trial(o, best->a, &p, &outcome);
    if (status == AD_OK && outcome == AD_EVAL_OK) {
        *ft = p.f;
        *result = LS_ACCEPT;
    }
    return status;
}

static int zoom(ad_lbfgs *o, lspoint lo, lspoint hi, double f0, double d0,
                double *ft, int *result)
{
    for (;;) {
        double width = fabs(hi.a - lo.a);
        if (o->ls_evals >= o->maxls ||
            !(width > 4.0 * DBL_EPSILON * fmax(lo.a, hi.a)))
            return settle(o, &lo, ft, result);
        double a = interpolate(&lo, &hi);
        lspoint p;
        int done, status = try_step(o, a, &p, f0, d0, ft, result, &done);
        if (status != AD_OK || done)
            return status;
        if (p.f > f0 + C1 * a * d0 || p.f >= lo.f) {
            hi = p;
            continue;
        }
        if (fabs(p.d) <= -C2 * d0) {
            *ft = p.f;
            *result = LS_ACCEPT;
            return AD_OK;
        }
        if (p.d * (hi.a - lo.a) >= 0.0)
            hi = lo;
        lo = p;
    }
}

/* Search along d from step a; on LS_ACCEPT, xt and gt hold the new point
 * and *ft its value.  Steps grow by 2 until the minimum is bracketed. */
static int line_search(ad_lbfgs *o, double a, double *ft, int *result)
{
    const double f0 = o->f, d0 = dot(o->g, o->d, o->n);
    lspoint prev = {0.0, f0, d0};
    for (int first = 1;; first = 0) {
        if (o->ls_evals >= o->maxls)
            return settle(o, &prev, ft, result);
        lspoint p;
        int done, status = try_step(o, a, &p, f0, d0, ft, result, &done);
        if (status != AD_OK || done)
            return status;
        if (p.f > f0 + C1 * a * d0 || (!first && p.f >= prev.f))
            return zoom(o, prev, p, f0, d0, ft, result);
        if (fabs(p.d) <= -C2 * d0) {
            *ft = p.f;
            *result = LS_ACCEPT;
            return AD_OK;
        }
        if (p.d >= 0.0)
            return zoom(o, p, prev, f0, d0, ft, result);
        prev = p;
        a *= 2.0;
    }
}

/* -- the direction and the history ----------------------------------------- */

/* d = -H g by the two-loop recursion over the pairs, newest first. */
static void direction(ad_lbfgs *o)
{
    const int64_t n = o->n, m = o->m;
    double *d = o->d;
    for (int64_t i = 0; i < n; ++i)
        d[i] = -o->g[i];
    int64_t j = o->newest;
    for (int64_t k = 0; k < o->npairs; ++k, j = (j + m - 1) % m) {
        const double *s = o->s + j * n, *y = o->y + j * n;
        double a = o->rho[j] * dot(s, d, n);
        o->alpha[j] = a;
        for (int64_t i = 0; i < n; ++i)
            d[i] -= a * y[i];
    }
    if (o->npairs == 0)
        return;
    for (int64_t i = 0; i < n; ++i)
        d[i] *= o->gamma;
    j = (o->newest - o->npairs + 1 + m) % m;    /* the oldest pair */
    for (int64_t k = 0; k < o->npairs; ++k, j = (j + 1) % m) {
        const double *sj = o->s + j * n, *yj = o->y + j * n;
        double b = o->rho[j] * dot(yj, d, n);
        for (int64_t i = 0; i < n; ++i)
            d[i] += (o->alpha[j] - b) * sj[i];
    }
}

/* The direction for a new iteration and the step to try first. */
static double start_direction(ad_lbfgs *o)
{
    direction(o);
    if (o->npairs > 0 && !(dot(o->g, o->d, o->n) < 0.0)) {
        o->npairs = 0;          /* rounding spoiled H: steepest descent */
        direction(o);
    }
    if (o->npairs > 0)
        return 1.0;
    return fmin(1.0 / sqrt(dot(o->g, o->g, o->n)), MAX_FIRST_STEP);
}

/* The pair of the step from (x, g) to (xt, gt), if its curvature s.y is
 * positive enough; else the history stays as it is. */
static void remember(ad_lbfgs *o)
{
    const int64_t n = o->n;
    double sy = 0.0, yy = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double si = o->xt[i] - o->x[i], yi = o->gt[i] - o->g[i];
        sy += si * yi;
        yy += yi * yi;
    }
    if (!(sy > DBL_EPSILON * yy))
        return;
    int64_t j = (o->newest + 1) % o->m;
    double *s = o->s + j * n, *y = o->y + j * n;
    for (int64_t i = 0; i < n; ++i) {
        s[i] = o->xt[i] - o->x[i];
        y[i] = o->gt[i] - o->g[i];
    }
    o->rho[j] = 1.0 / sy;
    o->gamma = sy / yy;
    o->newest = j;
    if (o->npairs < o->m)
        o->npairs++;
}

/* Seconds on a clock that never goes back (a pause of 0 must pause). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int stop(ad_lbfgs *o, int status)
{
    o->status = status;
    return AD_OK;
}

int ad_lbfgs_run(ad_lbfgs *o)
{
    int status = check(o);
    if (status != AD_OK)
        return status;
    const int64_t n = o->n;
    const double began = now();
    o->status = AD_LBFGS_RUNNING;
    if (o->phase == START) {
        int outcome;
        memcpy(o->xt, o->x, (size_t)n * sizeof *o->x);  /* where a flip is */
        if ((status = evaluate(o, o->x, &o->f, o->g, &outcome)) != AD_OK)
            return status;
        if (outcome == AD_EVAL_GUARD) {
            o->step = 0.0;
            return stop(o, AD_LBFGS_GUARD);
        }
        if (outcome == AD_EVAL_NONFINITE)
            return stop(o, AD_LBFGS_NONFINITE);
        o->phase = ITERATE;
        if (max_abs(o->g, n) <= o->gtol)
            return stop(o, AD_LBFGS_GTOL);
    }
    for (int64_t done = 0;;) {
        double a;
        if (o->phase == RESUME) {
            a = o->step;        /* the line search again, on a new recording */
        } else {
            if (o->nit >= o->maxiter)
                return stop(o, AD_LBFGS_MAXITER);
            /* Between iterations the struct holds the whole state: the
             * next call goes on exactly as this one would have.  The clock
             * is read after 1, 2, 4, 8 ... iterations only, as a read costs
             * as much as a small problem's iteration; the pause comes at
             * most about twice `pause` into the call. */
            if (done > 0 && (done & (done - 1)) == 0 &&
                now() - began >= o->pause)
                return stop(o, AD_LBFGS_RUNNING);
            a = start_direction(o);
            o->ls_evals = 0;
        }
        o->phase = ITERATE;
        double ft = 0.0;
        int result;
        if ((status = line_search(o, a, &ft, &result)) != AD_OK)
            return status;
        if (result == LS_GUARD) {
            o->phase = RESUME;
            return stop(o, AD_LBFGS_GUARD);
        }
        if (result == LS_FAIL) {
            if (o->npairs == 0)
                return stop(o, AD_LBFGS_LINESEARCH);
            o->npairs = 0;      /* forget the history, try along -g */
            continue;
        }
        remember(o);
        double fprev = o->f;
        memcpy(o->x, o->xt, (size_t)n * sizeof *o->x);
        memcpy(o->g, o->gt, (size_t)n * sizeof *o->g);
        o->f = ft;
        o->nit++;
        done++;
        if (max_abs(o->g, n) <= o->gtol)
            return stop(o, AD_LBFGS_GTOL);
        if (fprev - o->f <= o->ftol * fmax(fmax(fabs(fprev), fabs(o->f)), 1.0))
            return stop(o, AD_LBFGS_FTOL);
    }
}
