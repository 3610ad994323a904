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
