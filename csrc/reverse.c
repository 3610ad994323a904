/* reverse.c -- the reverse sweep: adjoints from the seeds down to the leaves.
 *
 * One pass from the highest seed down to entry 0.  An entry takes part only
 * if a seed depends on it (the MARK bit, spread to the operands of every
 * marked entry as the sweep passes it), so backward from a root touches only
 * the root's own graph, however much else the tape holds.
 *
 * An entry whose adjoint is exactly zero propagates nothing: its local
 * derivative is never multiplied in, so a NaN or inf derivative on a branch
 * that does not matter (log at 0 times a zero adjoint, say) never turns into
 * a NaN gradient.                                                          */
#include <math.h>

#include "internal.h"

/* micrograd's arithmetic keeps a gradient an int while it only ever adds
 * ints: out.grad through +, relu and * by int data, and c * x**(c-1) for
 * int x and int c >= 1.  Returns whether entry i hands operand k (0: a,
 * 1: b) a float.  Only the in-place (micrograd) sweep asks.               */
static int hands_float(const ad_tape *t, int64_t i, int k)
{
    const uint8_t *f = t->flags;
    if (f[i] & AD_FLAG_GRAD_FLOAT)
        return 1;
    switch ((enum ad_op)t->op[i]) {
    case AD_ADD: case AD_RELU:
        return 0;
    case AD_MUL:
        return !(f[k == 0 ? t->b[i] : t->a[i]] & AD_FLAG_VALUE_INT);
    case AD_POWC:
        return !((f[i] & AD_FLAG_IMM_INT) && (f[t->a[i]] & AD_FLAG_VALUE_INT)
                 && t->imm[i] >= 1.0);
    case AD_LEAF: case AD_SUB: case AD_DIV: case AD_POW: case AD_ADDC:
    case AD_MULC: case AD_DIVC: case AD_RSUBC: case AD_RDIVC: case AD_RPOWC:
    case AD_NEG: case AD_ABS: case AD_TANH: case AD_EXP: case AD_LOG:
    case AD_SIGMOID: case AD_SIN: case AD_COS: case AD_SQRT: case AD_NUM_OPS:
        return 1;
    }
    return 1;
}

/* Entry i's derivative rule: add its adjoint g[i], times the local
 * derivatives, into the adjoints of its operands.  The one switch of the
 * reverse sweep; ad_backward runs it down the tape, ad_reverse_step on one
 * entry (micrograd's node._backward()).                                    */
static int reverse_entry(ad_tape *t, double *g, int64_t i, int mode, int check)
{
    int32_t a = t->a[i], b = t->b[i];
    if (mode == AD_SWEEP_INPLACE) {
        /* micrograd calls every reached node's _backward, zero or not */
        if (a >= 0 && hands_float(t, i, 0))
            t->flags[a] |= AD_FLAG_GRAD_FLOAT;
        if (b >= 0 && hands_float(t, i, 1))
            t->flags[b] |= AD_FLAG_GRAD_FLOAT;
    }
    double gi = g[i];
    AD_TRACE_STEP("rev", t, i, gi);
    if (gi == 0.0)
        return AD_OK;
    const double *v = t->val;
    double x = a >= 0 ? v[a] : 0.0, y = b >= 0 ? v[b] : 0.0;
    double vi = v[i], c = t->imm[i];
    switch ((enum ad_op)t->op[i]) {
    case AD_LEAF:    break;
    case AD_ADD:     g[a] += gi; g[b] += gi; break;
    case AD_SUB:     g[a] += gi; g[b] -= gi; break;
    case AD_MUL:     g[a] += y * gi; g[b] += x * gi; break;
    case AD_DIV:     g[a] += gi / y; g[b] -= gi * vi / y; break;
    case AD_POW:
        /* d/dx is 0 for exponent 0 and d/dy is 0 where x**y is 0, as the
         * limits say, rather than 0*inf. */
        g[a] += (y == 0.0 ? 0.0 : y * pow(x, y - 1.0)) * gi;
        g[b] += (vi == 0.0 ? 0.0 : vi * log(x)) * gi;
        break;
    case AD_ADDC:    g[a] += gi; break;
    case AD_MULC:    g[a] += c * gi; break;
    case AD_DIVC:    g[a] += gi / c; break;
    case AD_RSUBC:   g[a] -= gi; break;
    case AD_RDIVC:   g[a] -= gi * vi / x; break;
    case AD_POWC:    g[a] += (c == 0.0 ? 0.0 : c * pow(x, c - 1.0)) * gi; break;
    case AD_RPOWC:   g[a] += (vi == 0.0 ? 0.0 : vi * log(c)) * gi; break;
    case AD_NEG:     g[a] -= gi; break;
    case AD_ABS:     g[a] += x > 0 ? gi : x < 0 ? -gi : 0.0; break;
    case AD_RELU:    g[a] += (vi > 0) * gi; break;
    case AD_TANH:    g[a] += (1.0 - vi * vi) * gi; break;
    case AD_EXP:     g[a] += vi * gi; break;
    case AD_LOG:     g[a] += gi / x; break;
    case AD_SIGMOID: g[a] += vi * (1.0 - vi) * gi; break;
    case AD_SIN:     g[a] += cos(x) * gi; break;
    case AD_COS:     g[a] -= sin(x) * gi; break;
    case AD_SQRT:    g[a] += gi / (2.0 * vi); break;
    case AD_NUM_OPS: return ad_fail(t, AD_EINVAL, i, "bad op at %lld",
                                    (long long)i);
    }
    if (check && ((a >= 0 && !isfinite(g[a])) || (b >= 0 && !isfinite(g[b]))))
        return ad_fail(t, AD_ENONFINITE, i, "backward of %s at tape index "
                       "%lld produced %s", ad_op_name(t->op[i]), (long long)i,
                       isnan(a >= 0 && !isfinite(g[a]) ? g[a] : g[b])
                           ? "nan" : "inf");
    return AD_OK;
}

int ad_backward(ad_tape *t, int64_t nseeds, const int64_t *idx,
                const double *seed, int mode, int check)
{
    if (mode != AD_SWEEP_ACCUM && mode != AD_SWEEP_INPLACE)
        return ad_fail(t, AD_EINVAL, -1, "unknown sweep mode %d", mode);
    int64_t top = -1;
    for (int64_t k = 0; k < nseeds; ++k) {
        if (idx[k] < 0 || idx[k] >= t->n)
            return ad_fail(t, AD_ERANGE, idx[k], "backward from entry %lld "
                           "outside the tape's %lld entries",
                           (long long)idx[k], (long long)t->n);
        if (idx[k] > top)
            top = idx[k];
    }
    const int32_t *A = t->a, *B = t->b;
    uint8_t *f = t->flags;
    /* In place (micrograd) the sweep runs through grad itself, so gradients
     * left by an earlier backward are propagated again, as micrograd does. */
    double *g = mode == AD_SWEEP_INPLACE ? t->grad : t->adj;

    for (int64_t i = 0; i <= top; ++i)
        f[i] &= (uint8_t)~AD_FLAG_MARK;
    if (mode == AD_SWEEP_ACCUM)
        for (int64_t i = 0; i <= top; ++i)
            g[i] = 0.0;
    for (int64_t k = 0; k < nseeds; ++k) {
        f[idx[k]] |= AD_FLAG_MARK;
        if (mode == AD_SWEEP_INPLACE) {
            g[idx[k]] = seed[k];        /* micrograd: self.grad = 1 */
            f[idx[k]] &= (uint8_t)~AD_FLAG_GRAD_FLOAT;
        } else {
            g[idx[k]] += seed[k];
        }
    }

    for (int64_t i = top; i >= 0; --i) {
        if (!(f[i] & AD_FLAG_MARK))
            continue;
        if (A[i] >= 0)
            f[A[i]] |= AD_FLAG_MARK;
        if (B[i] >= 0)
            f[B[i]] |= AD_FLAG_MARK;
        int status = reverse_entry(t, g, i, mode, check);
        if (status != AD_OK)
            return status;
    }

    /* accumulated gradients are floats (micrograd's Values reached from an
     * explicit tape's sweep are accumulated this way too) */
    if (mode == AD_SWEEP_ACCUM)
        for (int64_t i = 0; i <= top; ++i)
            if (f[i] & AD_FLAG_MARK) {
                t->grad[i] += g[i];
                f[i] |= AD_FLAG_GRAD_FLOAT;
            }
    return AD_OK;
}

int ad_reverse_step(ad_tape *t, int64_t i)
{
    if (i < 0 || i >= t->n)
        return ad_fail(t, AD_ERANGE, i, "entry %lld outside the tape's %lld "
                       "entries", (long long)i, (long long)t->n);
    return reverse_entry(t, t->grad, i, AD_SWEEP_INPLACE, 0);
}
