/* forward.c -- the forward sweep: recompute every value from the leaves.
 *
 * Used to replay a recorded tape at new inputs (the leaves' imm) without
 * Python.  Each case computes exactly what the Python recording path
 * computes, so a replay at the recorded inputs reproduces the recorded values
 * bit for bit.                                                             */
#include <math.h>

#include "internal.h"

int ad_forward(ad_tape *t, int64_t lo, int64_t hi, int check)
{
    if (lo < 0 || hi > t->n || lo > hi)
        return ad_fail(t, AD_ERANGE, -1, "forward sweep over [%lld, %lld) "
                       "outside the tape's %lld entries", (long long)lo,
                       (long long)hi, (long long)t->n);
    const int32_t *A = t->a, *B = t->b;
    const double *imm = t->imm;
    double *v = t->val;
    for (int64_t i = lo; i < hi; ++i) {
        double x = A[i] >= 0 ? v[A[i]] : 0.0;
        double y = B[i] >= 0 ? v[B[i]] : 0.0;
        double c = imm[i];
        switch ((enum ad_op)t->op[i]) {
        case AD_LEAF:    v[i] = c; break;
        case AD_ADD:     v[i] = x + y; break;
        case AD_SUB:     v[i] = x - y; break;
        case AD_MUL:     v[i] = x * y; break;
        case AD_DIV:     v[i] = x / y; break;
        case AD_POW:     v[i] = pow(x, y); break;
        case AD_ADDC:    v[i] = x + c; break;
        case AD_MULC:    v[i] = x * c; break;
        case AD_DIVC:    v[i] = x / c; break;
        case AD_RSUBC:   v[i] = c - x; break;
        case AD_RDIVC:   v[i] = c / x; break;
        case AD_POWC:    v[i] = pow(x, c); break;
        case AD_RPOWC:   v[i] = pow(c, x); break;
        case AD_NEG:     v[i] = -x; break;
        case AD_ABS:     v[i] = fabs(x); break;
        case AD_RELU:    v[i] = x < 0 ? 0.0 : x; break;
        case AD_TANH:    v[i] = tanh(x); break;
        case AD_EXP:     v[i] = exp(x); break;
        case AD_LOG:     v[i] = log(x); break;
        case AD_SIGMOID: v[i] = ad_sigmoid(x); break;
        case AD_SIN:     v[i] = sin(x); break;
        case AD_COS:     v[i] = cos(x); break;
        case AD_SQRT:    v[i] = sqrt(x); break;
        case AD_NUM_OPS: return ad_fail(t, AD_EINVAL, i, "bad op at %lld",
                                        (long long)i);
        }
        AD_TRACE_STEP("fwd", t, i, 0.0);
        if (check && !isfinite(v[i]))
            return ad_fail(t, AD_ENONFINITE, i, "%s at tape index %lld "
                           "produced %s", ad_op_name(t->op[i]), (long long)i,
                           isnan(v[i]) ? "nan" : "inf");
    }
    return AD_OK;
}
