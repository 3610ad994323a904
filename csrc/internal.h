/* internal.h -- helpers shared by the C files, not part of the API. */
#ifndef PYAUTODIFF_INTERNAL_H
#define PYAUTODIFF_INTERNAL_H

#include <math.h>

#include "ad.h"

/* Record an error message on the tape and return status. */
int ad_fail(ad_tape *t, int status, int64_t index, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Build with -DAD_TRACE to print every step of a sweep to stderr:
 * direction, index, op, operands, value, adjoint.                          */
#ifdef AD_TRACE
#include <stdio.h>
#define AD_TRACE_STEP(dir, t, i, adjoint)                                    \
    fprintf(stderr, "%s %8lld %-8s %8d %8d %14.6g %14.6g\n", (dir),         \
            (long long)(i), ad_op_name((t)->op[i]), (int)(t)->a[i],          \
            (int)(t)->b[i], (t)->val[i], (adjoint))
#else
#define AD_TRACE_STEP(dir, t, i, adjoint) ((void)0)
#endif

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

#endif
