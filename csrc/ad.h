/*
 * ad.h -- the pyautodiff tape: one op enum, one Wengert list.
 *
 * A tape is a flat list of entries in recording order.  Entry i was computed
 * from entries with smaller indices only, so the tape order is a topological
 * order: the forward sweep walks it upwards, the reverse sweep downwards, with
 * no graph search and no recursion.
 *
 *   entry:    0      1      2      3      4  ...      n-1     (cap: allocated)
 *   op      LEAF   LEAF   MUL    TANH   ADDC ...
 *   a        -1     -1     0      2      3        first operand (entry index)
 *   b        -1     -1     1     -1     -1        second operand
 *   imm     2.0    3.0     .      .     1.5       leaf value / constant c
 *   val     2.0    3.0    6.0   .99    2.49       value of the entry
 *   grad     .      .      .      .      .        gradient seen as `.grad`
 *   aux      -1     -1    -1     -1     -1        block of an array entry
 *
 * The arrays are a struct of arrays so each sweep streams through memory.
 * `adj` is scratch for one reverse sweep; `grad` accumulates across sweeps
 * (what the user reads as `.grad`).  `tan` (a tangent: the derivative of
 * `val` along one input direction) and `dadj` (the tangent of `adj`) are
 * scratch of the forward-mode and second-order sweeps, allocated when one
 * first runs.  `aux` gives an entry a block of values
 * instead of one double: an array entry's aux indexes `blk`, whose block
 * holds its values, adjoints, gradient and shape, so scalars and arrays
 * share one tape and one set of ops (an elementwise op on array operands
 * broadcasts them as NumPy does; a scalar operand is a 0-d array).  Scalar
 * entries keep aux = -1.
 *
 * This file is also read by cffi (csrc/build_ffi.py) to declare the API to
 * Python, so it holds only declarations cffi understands; the preprocessor
 * lines are dropped there.
 */
#ifndef PYAUTODIFF_AD_H
#define PYAUTODIFF_AD_H

#include <stdint.h>

/* Op codes: enum ad_op, AD_LEAF ... AD_NUM_OPS.  Each op is one row of
 * the table in rules.h (its name, arity, kind and derivative rules);
 * opcodes.h is the enum written out from it for cffi, which expands no
 * macros.                                                               */
#include "opcodes.h"

/* What kind of op an op is (rules.h says what each means). */
enum ad_op_kind {
    AD_KIND_LEAF,
    AD_KIND_ELEMENTWISE,
    AD_KIND_COMPARE,
    AD_KIND_REDUCE,
    AD_KIND_MOVE,
    AD_KIND_MAP,
    AD_KIND_EXTERN
};

/* Error codes returned by the functions below; details in tape->errmsg. */
enum ad_status {
    AD_OK = 0,
    AD_ENOMEM,      /* allocation failed                      -> MemoryError */
    AD_EINVAL,      /* malformed record or argument           -> ValueError  */
    AD_ERANGE,      /* index out of range / tape full         -> IndexError  */
    AD_ENONFINITE,  /* detect_anomaly: a NaN or inf appeared  -> FloatingPointError */
    AD_ECALLBACK    /* an extern op's Python rule raised (re-raised in Python) */
};

/* An AD_EXTERN entry with this imm is a product of two matrices, which
 * the sweeps compute in C (matmul.c) rather than by calling back into
 * Python; the recording makes one where the product takes at most
 * AD_MATMUL_NATIVE_MAX multiply-adds (pyautodiff/matmul.py).  Every other
 * extern entry has imm 0.                                               */
#define AD_EXTERN_MATMUL 1
#define AD_MATMUL_NATIVE_MAX 4096

/* Rules of AD_EXTERN entries, supplied by the Python side: called with the
 * tape's extern_ctx and the entry's index; nonzero return stops the sweep. */
typedef int (*ad_extern_fn)(void *ctx, int64_t entry);

/* Sweep modes of ad_backward. */
enum ad_sweep_mode {
    AD_SWEEP_ACCUM = 0,   /* fresh adjoints; grad += this sweep's adjoints     */
    AD_SWEEP_INPLACE = 1, /* micrograd: propagate through grad itself, the
                             root's grad set to the seed                        */
    AD_SWEEP_LEAVES = 2   /* as ACCUM, but only leaves' grads are added to: a
                             derivative of a function reads nothing else, and
                             the others' adjoint blocks stay for the next
                             sweep instead of becoming their gradients      */
};

/* Bits of tape->flags (one byte per entry).  The last three let the
 * micrograd layer type its gradients as micrograd does: a grad stays a
 * Python int while every contribution to it is an int.                    */
enum ad_flag {
    AD_FLAG_MARK = 1,        /* scratch: reached by the current sweep          */
    AD_FLAG_GRAD_FLOAT = 2,  /* the grad is a float (else an int)              */
    AD_FLAG_VALUE_INT = 4,   /* the value was a Python int when recorded       */
    AD_FLAG_IMM_INT = 8,     /* the immediate was a Python int                 */
    AD_FLAG_VARIABLE = 16,   /* a leaf the user made, or an entry depending on
                                one: only these take part in a reverse sweep
                                (an ndarray used as an operand is a constant) */
    AD_FLAG_HAS_GRAD = 32    /* a sweep reached the entry or its grad was set:
                                optimizers skip parameters without one, as
                                torch skips a parameter whose grad is None  */
};

/* One recorded operation as the Python side packs it ("iiiidd").  flags may
 * carry AD_FLAG_VALUE_INT, AD_FLAG_IMM_INT and, for a leaf,
 * AD_FLAG_VARIABLE (an operation's entry inherits it from its operands).  */
typedef struct ad_record {
    int32_t op;
    int32_t a;
    int32_t b;
    int32_t flags;
    double imm;
    double val;
} ad_record;

/* Most dimensions of an array entry. */
#define AD_MAXDIM 16

/* The block of an array entry.  Its values belong to the Python Array (the
 * tape's node list keeps it alive); adjoints and gradient are allocated here
 * when a sweep first needs them, unless the gradient is borrowed (below).  */
typedef struct ad_block {
    double *val;
    double *adj;
    double *grad;
    double *tan;        /* tangent sweeps' scratch, allocated on use */
    double *dadj;
    int64_t *map;       /* GATHER/SCATTER: flat indices, owned */
    int64_t nmap;
    int32_t grad_borrowed; /* grad is Python's memory (ad_array_borrow_grad):
                              added into and zeroed in place, never freed,
                              handed over or replaced here               */
    /* A GATHER with map NULL is strided: the element at index (i_0, ...)
     * is the operand's element offset + sum_d i_d * stride[d] (strides in
     * elements, negative for a reversed slice).  Basic indexing and
     * transposes give such maps; keeping them as numbers, not as a map,
     * makes the sweeps strided copies with no index array to build.
     * It stays a GATHER, not an op of its own: it means the same and has
     * the same rules (scalar cases, flags, names, saved op codes); only
     * the four array kernels choose between the two forms of the map.   */
    int64_t offset;
    int64_t stride[AD_MAXDIM];
    int64_t size;
    int32_t ndim;
    int32_t adj_unset;  /* adj handed to this sweep and not yet written: it
                           reads as zeros, and its first writer may assign
                           instead of adding to a memset block          */
    int32_t second_unset; /* the same for the second-order sweep's adj and
                             dadj (every lane), together; set only while
                             that sweep runs                             */
    int64_t shape[AD_MAXDIM];
} ad_block;

typedef struct ad_tape {
    int64_t n;          /* entries in use                          */
    int64_t cap;        /* entries allocated                       */
    int32_t *op;        /* enum ad_op                              */
    int32_t *a;         /* first operand, -1 if none               */
    int32_t *b;         /* second operand, -1 if none              */
    int32_t *aux;       /* array block of the entry, -1 for scalars */
    double *imm;        /* leaf value or constant of a fused op    */
    double *val;        /* value                                   */
    double *adj;        /* scratch adjoint of one reverse sweep    */
    double *grad;       /* accumulated gradient                    */
    double *tan;        /* tangent of val (NULL until a tangent sweep) */
    double *dadj;       /* tangent of adj (NULL until a second-order sweep) */
    uint8_t *flags;     /* enum ad_flag bits                       */
    /* AD_FLAG_VARIABLE of flags again (or 0), for the appends: a thread
     * records on its tape without the tape's lock, reading its operands'
     * bit, while a sweep from another thread (holding the lock) writes
     * their flags.  This byte is written only when its entry is recorded
     * (and moved by compactions, which the recording thread runs), so the
     * two never touch one memory location.  The sweeps go on reading the
     * bit in flags: one byte per entry in their loops, not two.        */
    uint8_t *variable;
    ad_block *blk;      /* blocks of array entries, by aux         */
    int64_t nblk;       /* blocks in use                           */
    int64_t blk_cap;    /* blocks allocated                        */
    ad_extern_fn extern_forward;  /* AD_EXTERN rules: forward and reverse */
    ad_extern_fn extern_reverse;
    ad_extern_fn extern_tangent;  /* ... and of the tangent and second-order */
    ad_extern_fn extern_second;   /*     sweeps                              */
    void *extern_ctx;
    int64_t max_entries; /* AD_MAX_ENTRIES; lower it to test the limit */
    int64_t max_bytes;  /* allocation cap (fault injection), -1: none */
    int64_t last_nonfinite; /* NaNs and infs in the last array appended */
    int64_t err_index;  /* entry an error refers to, -1 if none    */
    /* Lanes: a tangent sweep may carry several directions at once (up to
     * AD_MAX_LANES), each elementwise partial computed once for all of
     * them.  tan and dadj then hold `lanes` copies, lane after lane: a
     * block's lane l at tan + l * size, a scalar's at tan[l * cap + i].
     * adj stays one: the adjoints do not depend on the direction.  `lane`
     * is the lane ad_entry_scratch shows (ad_select_lane) and the one a
     * rule run for one lane at a time (an extern's) reads and writes.
     * The scratch has room for lane_room lanes (the most a sweep on the
     * tape has carried), so that fewer take no new allocation.          */
    int64_t lanes;
    int64_t lane;
    int64_t lane_room;
    char errmsg[160];
} ad_tape;

/* Most directions one tangent sweep carries: each count's kernels are
 * compiled on their own (internal.h), and each lane is a copy of the
 * tangent scratch. */
#define AD_MAX_LANES 4

/* Largest number of entries: operand indices are int32. */
#define AD_MAX_ENTRIES 2147483647

const char *ad_version(void);
/* "?", -1 and -1 for an unknown op. */
const char *ad_op_name(int op);
int ad_op_arity(int op);
int ad_op_kind(int op);

ad_tape *ad_tape_new(void);
void ad_tape_free(ad_tape *t);
int ad_tape_reserve(ad_tape *t, int64_t cap);
/* Room for cap array blocks.  Appending grows the tape's arrays as it
 * needs; the Python side grows them ahead (both calls) so that a
 * recording thread moves nothing another thread's sweep may be reading. */
int ad_tape_reserve_blocks(ad_tape *t, int64_t cap);
int ad_tape_append(ad_tape *t, const ad_record *recs, int64_t count);
int ad_tape_compact(ad_tape *t, int64_t n, const uint8_t *keep,
                    int64_t *newidx);
int64_t ad_tape_nbytes(const ad_tape *t);

/* ndim -1 (shape unused): the output has operand a's shape. */
int ad_array_append(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                    double *val, int32_t ndim, const int64_t *shape);
/* The same with the output in operand a's shape: the recording path's
 * common case, with fewer arguments (each costs a conversion in cffi),
 * returning -1 instead of AD_OK when the result holds a NaN or an
 * infinity (what else reads last_nonfinite).                            */
int ad_array_op(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                double *val);
/* The same for a small result (at most AD_ROW_MAX elements), written to
 * row `row` of a block of such results, rows + row * (a's size): the
 * block's address is made once for all its rows.  Python calls it without
 * releasing the GIL (csrc/build_ffi.py): for so few elements, releasing
 * and taking back the GIL cost more than the operation.                 */
#define AD_ROW_MAX 64
int ad_array_row(ad_tape *t, int op, int64_t a, int64_t b, double imm,
                 double *rows, int64_t row);
int ad_array_leaf(ad_tape *t, double *val, int32_t ndim, const int64_t *shape,
                  int variable);
int ad_array_append_map(ad_tape *t, int op, int64_t a, double *val,
                        int32_t ndim, const int64_t *shape,
                        const int64_t *map, int64_t nmap);
/* A strided GATHER (see ad_block.offset); every element it reaches must
 * lie inside operand a.                                                  */
int ad_array_append_strided(ad_tape *t, int64_t a, double *val,
                            int32_t ndim, const int64_t *shape,
                            int64_t offset, const int64_t *stride);
/* Would the appends above take this entry?  Their checks, with nothing
 * appended: a saved recording's entries are checked before their values
 * are allocated (an edited shape must not become a huge allocation).
 * map (nmap indices): a GATHER's or SCATTER's index map; stride (and
 * offset): a strided GATHER; for the other ops, NULL.                    */
int ad_array_check(ad_tape *t, int op, int64_t a, int64_t b, int32_t ndim,
                   const int64_t *shape, const int64_t *map, int64_t nmap,
                   const int64_t *stride, int64_t offset);
double *ad_array_grad(ad_tape *t, int64_t i);
double *ad_entry_adjoint(ad_tape *t, int64_t i, int mode);
/* For an extern rule about to add into entry i's adjoint: the block, with
 * *unset = 1 when nothing was written to it yet this sweep (it holds no
 * zeros: the caller must assign every element), else 0 (add).           */
double *ad_entry_adjoint_claim(ad_tape *t, int64_t i, int mode, int *unset);
int ad_array_zero_grad(ad_tape *t, int64_t i);
/* Array entry i's gradient from now on lives in buf (its size in doubles,
 * memory the caller keeps valid as long as the entry exists): what the
 * entry had is copied there (zeros if none) and its own block released.
 * Sweeps add into buf, zero_grad zeroes it, optimizers read it, so that an
 * Array's .grad, an ndarray over buf, is the gradient itself.           */
int ad_array_borrow_grad(ad_tape *t, int64_t i, double *buf);
/* Entry j's gradient block on tape `from` becomes entry i's adjoint block
 * on tape t, to be the seed of t's next sweep with no copy (an inner
 * tape's gradient of an imported Array, passed on to the tape the Array
 * lives on); entry j has no gradient after.  Returns the block, or NULL
 * (nothing moved) unless both are arrays of one size and j has a gradient
 * of its own (not borrowed). */
double *ad_adjoint_take(ad_tape *t, int64_t i, ad_tape *from, int64_t j);
/* Array entry i's gradient block, which the caller now owns (give it back
 * with ad_buffer_release): the entry has no gradient after.  NULL when it
 * has none or when it is borrowed (the caller owns that one already).  A tape being released hands its held Arrays' gradients over
 * this way instead of copying them. */
double *ad_array_grad_take(ad_tape *t, int64_t i);
/* Memory for the values of a large Array (count doubles, uninitialised),
 * from the cache of freed blocks, so that a buffer made anew every step
 * costs no page faults; NULL when out of memory.  Give it back with
 * ad_buffer_release and the same count.                                  */
double *ad_buffer_alloc(int64_t count);
void ad_buffer_release(double *p, int64_t count);

int ad_forward(ad_tape *t, int64_t lo, int64_t hi, int check);
int ad_backward(ad_tape *t, int64_t nseeds, const int64_t *idx,
                const double *seed, int mode, int check);
int ad_backward_arrays(ad_tape *t, int64_t nseeds, const int64_t *idx,
                       const double *seed, const double *const *seed_arrays,
                       int mode, int check);
int ad_reverse_step(ad_tape *t, int64_t i);

/* Forward mode (tangent.c): tangents of entries [0, hi) along `lanes`
 * directions at once, from the tangents of the leaves idx[k] (seed[k] on
 * every element of every lane, or seed_arrays[k]: lanes times the leaf's
 * size, lane after lane); every other leaf's tangent is 0.  The values
 * must be current (ad_forward).                                          */
int ad_tangent(ad_tape *t, int64_t hi, int64_t lanes, int64_t nseeds,
               const int64_t *idx, const double *seed,
               const double *const *seed_arrays);
/* Second order (second.c), after ad_tangent: one reverse sweep computing
 * adjoints from the seeds (as ad_backward_arrays) and, with them, their
 * tangents along each of the tangent sweep's lanes, so the leaves' dadj
 * hold a Hessian-vector product per lane.  Leaves no gradient behind.    */
int ad_second_order(ad_tape *t, int64_t nseeds, const int64_t *idx,
                    const double *seed, const double *const *seed_arrays);
/* Scratch of those sweeps for entry i (a scalar's one double or a block):
 * which is 0 for adj, 1 for tan, 2 for dadj (of the selected lane).  NULL
 * if not allocated.                                                       */
double *ad_entry_scratch(ad_tape *t, int64_t i, int which);
/* The lane ad_entry_scratch shows: 0 <= lane < the last sweep's lanes.  */
int ad_select_lane(ad_tape *t, int64_t lane);

/* A replay of a recorded function (replay.c): write x into the leaves,
 * run the forward sweep, check the guards and, for a gradient, run the
 * reverse sweep from the output and read the leaves' gradients.  The one
 * way a recording is replayed: ad.record's replays, its one-call
 * value_and_grad and the C minimizer (lbfgs.c) all make this call.
 *
 *   x:       x[0]   x[1] ... x[6]   x[7] ...
 *   leaf     0      1               2          the k-th entry of `leaf`
 *   holds    a scalar leaf's imm    an array leaf's block (6 elements)
 *
 * The gradient g is laid out as x.  The guards are in recording order:
 * entry guard[k] must hold the next numbers of expected (one for a scalar
 * entry, its size for an array's), compared bit for bit but for NaN: a
 * NaN matches a NaN, -0.0 is not 0.0 (format() and copysign() tell them
 * apart).                                                                */
typedef struct ad_replay_plan {
    int64_t nleaves;
    const int64_t *leaf;
    int64_t nguards;
    const int64_t *guard;
    int64_t nexpected;
    const double *expected;
    int64_t output;     /* the result: one number; -1 if it is no entry */
} ad_replay_plan;

/* What ad_replay computes after the forward sweep and the guards. */
enum ad_replay_mode {
    AD_REPLAY_VALUES = 0,   /* nothing more: the caller reads the entries */
    AD_REPLAY_GRAD = 1,     /* *f and g                                    */
    AD_REPLAY_GRAD_FINITE = 2 /* *f, and g only where *f is finite (else g
                                 is left as it was): a minimizer takes such
                                 a point as a failed step anyway          */
};

/* Every index of the plan is an entry of the right kind and expected holds
 * what the guards need; *n: the numbers x holds.  AD_EINVAL otherwise.  */
int ad_replay_check(ad_tape *t, const ad_replay_plan *p, int64_t *n);
/* The replay at x (p checked first; x NULL: the leaves hold the inputs
 * already, written by the caller, which saves a copy of big arguments).  *flipped: the first guard that does
 * not hold (then nothing after the guards is computed), or -1.  check:
 * detect_anomaly's check in the reverse sweep.  Returns an enum ad_status. */
int ad_replay(ad_tape *t, const ad_replay_plan *p, const double *x, int mode,
              int check, double *f, double *g, int64_t *flipped);

/* One recording replayed at many points (csrc/many.c).  The plan's leaves
 * are batched (batched[k] 1: point k's numbers of them at x[k * nx ...],
 * in the plan's order) or shared by every point (0: their nshared numbers
 * once in shared).  AD_REPLAY_VALUES: entry out's nout values into
 * f[k * nout ...]; AD_REPLAY_GRAD: the objective into f[k] and the
 * variables' gradients into g[k * nv ...].  flipped[k]: the first guard
 * that does not hold at point k (its row is left as it was), or -1.  The
 * points are split among nthreads threads, each replaying on a copy of
 * the tape (ad_tape_copy), so t itself is left as it was; no extern entry
 * may call Python.  Each row is bit for bit ad_replay's at its point.    */
typedef struct ad_many {
    const ad_replay_plan *plan;
    int64_t npoints;
    const double *x;
    int64_t nx;
    int mode;               /* an ad_replay_mode or an ad_many_mode       */
    int64_t out;
    int64_t nout;
    double *f;
    double *g;
    int64_t *flipped;
    int nthreads;
    const uint8_t *batched;
    const double *shared;
    int64_t nshared;
    /* AD_REPLAY_GRAD and AD_MANY_*: the variables (leaves, in order), nv
     * numbers in all; hvp's direction at point k is v[k * nv ...] and its
     * product goes to g[k * nv ...], the Hessian to g[k * nv * nv ...]
     * (row-major).  The objective is the plan's output.                 */
    int64_t nvar;
    const int64_t *var;
    int64_t nv;
    const double *v;
} ad_many;

/* The derivatives of map that take the variables: each point's
 * Hessian-vector product (ad_tangent, then ad_second_order from the
 * plan's output), its Hessian, AD_MAX_LANES columns a sweep, or the
 * Jacobian of entry out (nout numbers; into g[k * nout * nv ...],
 * row-major), in the order and lanes the single call takes (trace.py),
 * so each row is bit for bit its.                                        */
enum ad_many_mode {
    AD_MANY_HVP = 16,
    AD_MANY_HESSIAN = 17,
    AD_MANY_JACOBIAN = 18
};

int ad_replay_many(ad_tape *t, ad_many *m);
/* A copy of t that replays on its own (columns, blocks' values and maps;
 * no extern callbacks), or NULL where memory is short; freed by
 * ad_tape_copy_free. */
ad_tape *ad_tape_copy(const ad_tape *t);
void ad_tape_copy_free(ad_tape *c);

#endif
