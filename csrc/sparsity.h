/*
 * sparsity.h -- sparsity patterns of Jacobians and Hessians read off a
 * tape, and the colourings that turn them into a few sweeps
 * (csrc/sparsity.c).  Read by cffi too (csrc/build_ffi.py): declarations
 * only.
 *
 * The inputs are the elements of nin leaf entries in[k], numbered in
 * order (a scalar leaf is one element): the columns.  A pattern is
 * structural: an entry is in it where the derivative can be nonzero at
 * some point where the recording holds (both sides of a maximum, every
 * element of a max reduction), found element by element through every op.
 * A constant's exact zeros are structural: a product with one (a matrix
 * product's, x * c, a select on a constant mask) is no dependence.
 * Patterns come back in compressed sparse rows, ptr (rows + 1) and idx
 * (column indices, increasing in each row), allocated here: release them
 * with ad_sparsity_free.
 */
#ifndef PYAUTODIFF_SPARSITY_H
#define PYAUTODIFF_SPARSITY_H

#include <stdint.h>

#include "ad.h"

/* How an extern entry's outputs depend on its operands (kind). */
enum ad_extern_sparsity_kind {
    AD_XSP_DENSE = 0,    /* every output element on every operand element */
    AD_XSP_MATMUL = 1,   /* NumPy's matmul of a and b (1-D, 2-D, batched):
                            exact (through a constant operand's nonzeros
                            only), and bilinear for the Hessian           */
    AD_XSP_EXPLICIT = 2  /* output element k on the operand elements
                            idx[ptr[k] .. ptr[k+1]), numbered through a's
                            elements, then b's                              */
};

/* Its second derivatives (second; ignored for AD_XSP_MATMUL). */
enum ad_extern_sparsity_second {
    AD_XSP_NONLINEAR = 0, /* an output element's operands may all interact */
    AD_XSP_LINEAR = 1     /* no second partials                            */
};

/* The structure of one extern entry; an extern entry with none is taken
 * as AD_XSP_DENSE and AD_XSP_NONLINEAR.                                   */
typedef struct ad_extern_sparsity {
    int64_t entry;
    int32_t kind;
    int32_t second;
    const int64_t *ptr;     /* AD_XSP_EXPLICIT: output size + 1 offsets */
    const int64_t *idx;
} ad_extern_sparsity;

/* The Jacobian pattern of the nout entries out[k] (their elements in
 * order: the rows) with respect to the inputs.                           */
int ad_jacobian_sparsity(ad_tape *t, int64_t nin, const int64_t *in,
                         int64_t nout, const int64_t *out,
                         int64_t nxsp, const ad_extern_sparsity *xsp,
                         int64_t **ptr, int64_t **idx, int64_t *nnz);
/* The Hessian pattern of entry out (its elements summed: a scalar's
 * Hessian) with respect to the inputs: symmetric, by Walther's method --
 * index sets forward, and at each nonlinear op an output element the
 * result depends on, its operands' index sets interacting.               */
int ad_hessian_sparsity(ad_tape *t, int64_t nin, const int64_t *in,
                        int64_t out, int64_t nxsp,
                        const ad_extern_sparsity *xsp,
                        int64_t **ptr, int64_t **idx, int64_t *nnz);
/* fixed[j] for the entries j < n: whether entry j is a constant, whose
 * exact zeros the patterns take as no dependence (one that depends on no
 * variable, through the tape's own ops and matrix products only): for a
 * bilinear extern rule's own pattern through a constant operand.        */
int ad_sparsity_constants(ad_tape *t, int64_t n, int64_t nxsp,
                          const ad_extern_sparsity *xsp, uint8_t *fixed);
void ad_sparsity_free(void *p);
/* Tests only: the allocations here after this many fail (-1: none do). */
extern int64_t ad_sparsity_fail_after;

/* Colourings of a pattern given in compressed rows (nrows, ncols, ptr,
 * idx); color gets one colour (0, 1, ...) per vertex, *ncolors how many.
 * order 0: natural order; 1: largest degree first.  They return AD_OK,
 * AD_ENOMEM, or AD_EINVAL for a malformed pattern.                        */

/* Columns: two columns with a nonzero in one row differ (a distance-2
 * colouring of the column intersection graph), so each colour's columns
 * are one forward sweep.  For rows (reverse sweeps), colour the columns
 * of the transpose.                                                       */
int ad_color_columns(int64_t nrows, int64_t ncols, const int64_t *ptr,
                     const int64_t *idx, int order, int64_t *color,
                     int64_t *ncolors);
/* A symmetric n x n pattern: a star colouring of its graph (no edge
 * between two vertices of one colour, and every path on four vertices
 * has three colours), which recovers the Hessian directly from one
 * Hessian-vector product per colour.                                      */
int ad_color_star(int64_t n, const int64_t *ptr, const int64_t *idx,
                  int order, int64_t *color, int64_t *ncolors);

/* The nonzeros (data, in the pattern's order) from the products B of the
 * seed matrices, B[r * ncolors + c] (row-major, a row per vertex):
 * columns: B is J S (nrows x ncolors), by_rows: B is the transposed
 * product J^T S (ncols x ncolors) of a row colouring color (by row).    */
int ad_recover_jacobian(int64_t nrows, const int64_t *ptr, const int64_t *idx,
                        const int64_t *color, int64_t ncolors, int by_rows,
                        const double *B, double *data);
/* Star colouring: B is H S (n x ncolors).                                */
int ad_recover_hessian(int64_t n, const int64_t *ptr, const int64_t *idx,
                       const int64_t *color, int64_t ncolors,
                       const double *B, double *data);

#endif
