/*
 * lbfgs.h -- L-BFGS on a recorded tape, with no Python per iteration.
 *
 * ad_lbfgs_run minimizes a tape's scalar output entry over its leaves.  An
 * evaluation is one replay of the recording (ad_replay, replay.c: x into
 * the leaves, the forward sweep, the guards, the reverse sweep); the
 * search direction comes from the last m steps (two-loop recursion) and
 * the step length from a line search for the strong Wolfe conditions
 * (Nocedal & Wright's bracketing and zoom, cubic interpolation).
 *
 * The variables are one flat vector x, laid out in the leaves as the
 * replay plan says (ad.h).
 *
 * The state (iterate, history, counters) lives in the struct between calls,
 * so a run can pause at the end of an iteration and go on: Python gets
 * control back there to call a callback and to run its signal handlers
 * (Ctrl-C), which cannot run while C holds the thread.  The run can also
 * move to a new recording of the same function: when a guard flips at a
 * trial point the run stops with AD_LBFGS_GUARD, the caller records the
 * function again at xt, points `tape` & co. at the new recording and
 * calls again; the line search restarts at the same step.
 * Read by cffi like ad.h (preprocessor lines dropped).
 */
#ifndef PYAUTODIFF_LBFGS_H
#define PYAUTODIFF_LBFGS_H

#include <stdint.h>

#include "ad.h"

/* Why ad_lbfgs_run returned (the struct's `status`). */
enum ad_lbfgs_status {
    AD_LBFGS_RUNNING,    /* paused after `pause` seconds: call again           */
    AD_LBFGS_GTOL,       /* converged: max |g_i| <= gtol                        */
    AD_LBFGS_FTOL,       /* converged: f_prev - f <= ftol * max(|f_prev|, |f|, 1) */
    AD_LBFGS_MAXITER,    /* maxiter iterations done                             */
    AD_LBFGS_LINESEARCH, /* no step met the Wolfe conditions in maxls
                            evaluations, along -g too                           */
    AD_LBFGS_NONFINITE,  /* f or its gradient is NaN or inf at the start        */
    AD_LBFGS_GUARD       /* guard `guard` flipped at xt: record again there     */
};

/* What one evaluation found. */
enum ad_lbfgs_eval {
    AD_EVAL_OK,          /* f and its gradient, both finite                     */
    AD_EVAL_NONFINITE,   /* f or the gradient is NaN or inf                     */
    AD_EVAL_GUARD        /* guard `guard` flipped: the recording does not hold  */
};

typedef struct ad_lbfgs {
    /* the problem: a recording; set again after each new recording */
    ad_tape *tape;
    const ad_replay_plan *replay;   /* its leaves, guards and objective */
    /* options */
    int64_t maxiter;
    int64_t maxls;              /* evaluations per line search                */
    double gtol;
    double ftol;
    double pause;               /* seconds: return at an iteration's end
                                   once this long (to about twice) after the
                                   call began; 0: after each one, inf: never */
    /* the state; n and m fixed by ad_lbfgs_new */
    int64_t n;
    int64_t m;                  /* pairs (s, y) kept                          */
    double *work;               /* the one allocation the arrays point into   */
    double *x;                  /* the iterate (set x before the first run)   */
    double *g;                  /* its gradient                               */
    double f;                   /* its value                                  */
    double *d;                  /* the search direction                       */
    double *xt;                 /* the trial point and its gradient           */
    double *gt;
    double *s;                  /* m steps x_{k+1} - x_k, a ring of rows      */
    double *y;                  /* m gradient changes g_{k+1} - g_k           */
    double *rho;                /* 1 / (s . y) per pair                       */
    double gamma;               /* H0 = gamma I: s.y / y.y of the newest pair */
    double *alpha;              /* scratch of the two-loop recursion          */
    int64_t npairs;             /* pairs in the ring                          */
    int64_t newest;             /* row of the newest pair                     */
    int32_t phase;              /* 0: evaluate x first; 1: at an iterate;
                                   2: resume the line search at `step`        */
    double step;
    int64_t ls_evals;           /* evaluations in the current line search     */
    int64_t nit;                /* iterations (accepted steps)                */
    int64_t nfev;               /* evaluations (value and gradient)           */
    int32_t status;             /* enum ad_lbfgs_status                       */
    int64_t guard;              /* the guard that flipped            */
    char errmsg[160];
} ad_lbfgs;

/* A minimizer for n variables keeping m pairs, NULL if the memory (capped
 * at max_bytes when that is >= 0, for fault injection) is not there.     */
ad_lbfgs *ad_lbfgs_new(int64_t n, int64_t m, int64_t max_bytes);
void ad_lbfgs_free(ad_lbfgs *o);
/* One evaluation at x (n doubles) on the problem set in o: f, and its
 * gradient into g (NaN where it was not computed).  What scipy's methods
 * call for each point.  Returns an enum ad_status like ad_lbfgs_run.     */
int ad_lbfgs_evaluate(ad_lbfgs *o, const double *x, double *f, double *g,
                      int32_t *outcome);
/* Run until a status other than RUNNING, or `pause` seconds.  Returns
 * an enum ad_status: a sweep's failure, or AD_EINVAL for a bad problem.  */
int ad_lbfgs_run(ad_lbfgs *o);

#endif
