/* matmul.c -- products of small matrices, run by the sweeps themselves.
 *
 * A matrix product is an AD_EXTERN entry (its rules are Python's,
 * pyautodiff/matmul.py, for derivatives that nest and for saving).  One
 * of two 2-D operands whose product is small (AD_MATMUL_NATIVE_MAX
 * multiply-adds) is recorded with imm AD_EXTERN_MATMUL instead: then each
 * sweep computes it here, a plain loop, with no call back into Python --
 * for a 2x2 product, that call cost twenty times the arithmetic.  Large
 * products keep the callback, which runs NumPy's BLAS.
 *
 *   v = x y            (m x k) (k x n)
 *   reverse:   gx += g y^T            gy += x^T g
 *   tangent:   dv  = dx y + x dy
 *   second:    dgx += dg y^T + g dy^T  dgy += x^T dg + dx^T g
 *              (per lane of a sweep of several; gx and gy in lane 0)
 *
 * An adjoint or tangent of exactly zero contributes nothing (ad_azmul),
 * as in every other rule, even where the other factor is infinite.     */
#include "internal.h"

/* The operands of product entry i: m, k, n and the three views. */
typedef struct product_views {
    ad_view o, x, y;
    int64_t m, k, n;
    int xvar, yvar;
} product_views;

static product_views views(ad_tape *t, int64_t i, double *scalar_adj)
{
    product_views p;
    p.o = ad_entry_view(t, i, scalar_adj);
    p.x = ad_entry_view(t, t->a[i], scalar_adj);
    p.y = ad_entry_view(t, t->b[i], scalar_adj);
    p.m = p.x.shape[0];
    p.k = p.x.shape[1];
    p.n = p.y.shape[1];
    p.xvar = (t->flags[t->a[i]] & AD_FLAG_VARIABLE) != 0;
    p.yvar = (t->flags[t->b[i]] & AD_FLAG_VARIABLE) != 0;
    return p;
}

/* out (rows x cols, C order) = (add ? out : 0) + X Y, where X (rows x
 * inner) has element (r, s) at x[r * xr + s * xs] and Y (inner x cols)
 * element (s, q) at y[s * yr + q * ys]: the strides give a transpose for
 * free.  seed says which factor is an adjoint or a tangent (1: X, 2: Y,
 * 0: neither), whose zeros contribute exactly nothing.                  */
static void product(double *out, int add, int64_t rows, int64_t inner,
                    int64_t cols, const double *x, int64_t xr, int64_t xs,
                    const double *y, int64_t yr, int64_t ys, int seed)
{
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q) {
            double s = add ? out[r * cols + q] : 0.0;
            for (int64_t j = 0; j < inner; ++j) {
                const double u = x[r * xr + j * xs], w = y[j * yr + q * ys];
                s += seed == 1 ? ad_azmul(w, u)
                   : seed == 2 ? ad_azmul(u, w) : u * w;
            }
            out[r * cols + q] = s;
        }
}

/* The four products of the rules above, each into out, added when add:
 * g y^T (m x k), x^T g (k x n), dx y and x dy (m x n).  g is m x n.     */
static void g_yt(double *out, int add, const product_views *p, const double *g,
                 const double *y)
{
    product(out, add, p->m, p->n, p->k, g, p->n, 1, y, 1, p->n, 1);
}

static void xt_g(double *out, int add, const product_views *p, const double *x,
                 const double *g)
{
    product(out, add, p->k, p->m, p->n, x, 1, p->k, g, p->n, 1, 2);
}

int ad_matmul_forward(ad_tape *t, int64_t i)
{
    product_views p = views(t, i, 0);
    product(p.o.val, 0, p.m, p.k, p.n, p.x.val, p.k, 1, p.y.val, p.n, 1, 0);
    return AD_OK;
}

int ad_matmul_reverse(ad_tape *t, double *adj, int64_t i)
{
    product_views p = views(t, i, adj);
    const int same = t->a[i] == t->b[i];     /* x x: one block, added twice */
    if (p.xvar) {
        /* an unset adjoint block is assigned (each element written once) */
        const int fresh = adj != t->grad && ad_adjoint_claim(t, t->a[i], !same);
        g_yt(p.x.adj, !fresh, &p, p.o.adj, p.y.val);
    }
    if (p.yvar) {
        const int fresh = adj != t->grad && ad_adjoint_claim(t, t->b[i], !same);
        xt_g(p.y.adj, !fresh, &p, p.x.val, p.o.adj);
    }
    return AD_OK;
}

int ad_matmul_tangent(ad_tape *t, int64_t i)
{
    product_views p = views(t, i, 0);
    int add = 0;
    if (p.xvar) {           /* dx y */
        product(p.o.tan, 0, p.m, p.k, p.n, p.x.tan, p.k, 1, p.y.val, p.n, 1, 1);
        add = 1;
    }
    if (p.yvar)             /* x dy */
        product(p.o.tan, add, p.m, p.k, p.n, p.x.val, p.k, 1, p.y.tan, p.n, 1, 2);
    return AD_OK;
}

int ad_matmul_second(ad_tape *t, int64_t i)
{
    /* (the sweep settles the operands' blocks first: adding is right) */
    product_views p = views(t, i, t->adj);
    const int first = t->lane == 0;     /* the adjoints once, in lane 0 */
    if (p.xvar) {
        if (first)
            g_yt(p.x.adj, 1, &p, p.o.adj, p.y.val);
        g_yt(p.x.dadj, 1, &p, p.o.dadj, p.y.val);
        if (p.yvar)
            g_yt(p.x.dadj, 1, &p, p.o.adj, p.y.tan);
    }
    if (p.yvar) {
        if (first)
            xt_g(p.y.adj, 1, &p, p.x.val, p.o.adj);
        xt_g(p.y.dadj, 1, &p, p.x.val, p.o.dadj);
        if (p.xvar)
            xt_g(p.y.dadj, 1, &p, p.x.tan, p.o.adj);
    }
    return AD_OK;
}

int ad_matmul_check(ad_tape *t, int64_t a, int64_t b, int32_t ndim,
                    const int64_t *shape)
{
    const ad_block *x = a >= 0 && t->aux[a] >= 0 ? &t->blk[t->aux[a]] : 0;
    const ad_block *y = b >= 0 && t->aux[b] >= 0 ? &t->blk[t->aux[b]] : 0;
    if (!x || !y || x->ndim != 2 || y->ndim != 2)
        return ad_fail(t, AD_EINVAL, t->n, "matmul in C: the operands must "
                       "be two matrices");
    if (x->shape[1] != y->shape[0] || ndim != 2 ||
        shape[0] != x->shape[0] || shape[1] != y->shape[1])
        return ad_fail(t, AD_EINVAL, t->n, "matmul in C: shapes (%lld, %lld) "
                       "and (%lld, %lld) do not make the output's",
                       (long long)x->shape[0], (long long)x->shape[1],
                       (long long)y->shape[0], (long long)y->shape[1]);
    return AD_OK;
}
