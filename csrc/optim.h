/*
 * optim.h -- optimizer steps in C: torch.optim's arithmetic over parameters
 * that live on tapes.
 *
 * The parameters of an optimizer are leaf entries, possibly on several
 * tapes: a scalar Value's data and grad are the entry's val and grad; an
 * Array's are its block's val (the NumPy array's own buffer) and grad.  The
 * optimizer's state is flat: parameter k owns the elements offset[k] ..
 * offset[k] + size of each state vector.
 *
 *   param k:    0        1        2 ...         (nparams)
 *   tape       0        0        1             index into tapes[]
 *   entry      12       13       4             its entry on that tape
 *   size       -1       -1       6             -1: a scalar; else elements
 *   offset     0        1        2             first state element
 *   steps      3        3        2             steps taken (torch's 'step')
 *
 * Python fills the table (pyautodiff/optim.py) and refreshes `entry` when a
 * tape is compacted; every entry is checked here before anything changes,
 * so a stale table is an error, never a wild write.  Read by cffi like ad.h
 * (preprocessor lines dropped).
 */
#ifndef PYAUTODIFF_OPTIM_H
#define PYAUTODIFF_OPTIM_H

#include <stdint.h>

#include "ad.h"

/* The update rules; formulas in csrc/optim.c and README.md. */
enum ad_optim_rule {
    AD_OPTIM_SGD,       /* momentum, dampening, nesterov, weight decay      */
    AD_OPTIM_ADAM,      /* Adam; AdamW when decoupled is set                */
    AD_OPTIM_RMSPROP    /* optionally centered, with momentum               */
};

typedef struct ad_optim {
    int32_t rule;               /* enum ad_optim_rule                        */
    int32_t nesterov;           /* SGD                                       */
    int32_t decoupled;          /* Adam: AdamW's decoupled weight decay      */
    int32_t centered;           /* RMSprop                                   */
    double lr;
    double momentum;            /* SGD, RMSprop                              */
    double dampening;           /* SGD                                       */
    double weight_decay;
    double beta1, beta2;        /* Adam                                      */
    double alpha;               /* RMSprop                                   */
    double eps;                 /* Adam, RMSprop                             */
    int64_t nparams;
    int64_t ntapes;
    ad_tape **tapes;
    const int32_t *tape;        /* per parameter, see the table above        */
    const int64_t *entry;
    const int64_t *size;
    const int64_t *offset;
    double *steps;
    int64_t nstate;             /* elements of each state vector             */
    double *state1;             /* SGD momentum buffer, Adam exp_avg,
                                   RMSprop square_avg                        */
    double *state2;             /* Adam exp_avg_sq, RMSprop momentum buffer  */
    double *state3;             /* RMSprop grad_avg (centered)               */
    double *scalar_data;        /* out: the data of the scalar parameters,
                                   in order, after a step                    */
    int64_t err_index;          /* parameter an error refers to, -1 if none  */
    char errmsg[160];
} ad_optim;

int ad_optim_step(ad_optim *o);
int ad_optim_zero_grad(ad_optim *o, int set_to_none);

#endif
