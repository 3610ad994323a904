/* blockcache.c -- zeroed blocks of doubles for adjoints and gradients, with
 * freed ones kept for reuse.
 *
 * Memory fresh from the system costs a page fault per 4 KiB the first time
 * it is touched, and a training step that records a new graph allocates the
 * same blocks every step: reusing them (and zeroing with memset) is several
 * times faster than calloc'ing them anew.  The cache is shared by all
 * tapes, so it is guarded by a mutex (sweeps run with the GIL released;
 * some calls hold it, see csrc/build_ffi.py, so nothing holding the
 * mutex may wait for the GIL or call Python).
 * The values of large Arrays come from it too (ad_buffer_alloc): a leaf
 * made or a result computed every step reuses the memory of the last. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Under AddressSanitizer (CI's sanitized build) no block is kept: a block
 * used after its release, or released twice, must go back to free() for
 * ASan to report it; kept, it would be handed out again unnoticed.       */
#if defined(__SANITIZE_ADDRESS__)
#define KEEP_BLOCKS 0
#else
#define KEEP_BLOCKS 1
#endif

#define CACHE_SLOTS 256
#define CACHE_BYTES ((size_t)256 << 20)
/* Smaller blocks are not kept here (a small array's sweep should not pay
 * for the search), but see the small blocks below.                      */
#define CACHE_MIN_BYTES ((size_t)4096)

static struct { double *p; size_t bytes; } cache[CACHE_SLOTS];
static size_t cached_bytes;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* A cached block of exactly this many bytes, or NULL. */
static double *take(size_t bytes)
{
    double *p = 0;
    pthread_mutex_lock(&cache_lock);
    for (int k = 0; k < CACHE_SLOTS; ++k)
        if (cache[k].p && cache[k].bytes == bytes) {
            p = cache[k].p;
            cache[k].p = 0;
            cached_bytes -= bytes;
            break;
        }
    pthread_mutex_unlock(&cache_lock);
    return p;
}

/* Blocks of at most AD_ROW_MAX doubles, a small array's, are the most
 * numerous: a step of operations on small arrays takes an adjoint block
 * per entry and frees them all with its tape, and malloc keeps few freed
 * chunks of one size at hand (7), so most went through its slower bins,
 * at a third of a small operation's backward sweep.  Freed ones are kept
 * here instead, a list per size linked through their first element,
 * SMALL_BYTES in all at most.                                            */
#define SMALL_BYTES ((size_t)4 << 20)

static double *small_list[AD_ROW_MAX + 1];
static size_t small_bytes;

static double *small_take(int64_t count)
{
    double *p;
    pthread_mutex_lock(&cache_lock);
    p = small_list[count];
    if (p) {
        memcpy(&small_list[count], p, sizeof p);
        small_bytes -= (size_t)count * sizeof(double);
    }
    pthread_mutex_unlock(&cache_lock);
    return p;
}

/* Keeps p, a block of count doubles; 0 where the list is full. */
static int small_keep(double *p, int64_t count)
{
    int kept = 0;
    pthread_mutex_lock(&cache_lock);
    size_t bytes = (size_t)count * sizeof(double);
    if (small_bytes + bytes <= SMALL_BYTES) {
        memcpy(p, &small_list[count], sizeof p);
        small_list[count] = p;
        small_bytes += bytes;
        kept = 1;
    }
    pthread_mutex_unlock(&cache_lock);
    return kept;
}

/* A kept block of count (>= 1) doubles, or NULL. */
static double *kept_block(int64_t count)
{
    if (!KEEP_BLOCKS)
        return 0;
    size_t bytes = (size_t)count * sizeof(double);
    return count <= AD_ROW_MAX ? small_take(count)
         : bytes < CACHE_MIN_BYTES ? 0 : take(bytes);
}

double *ad_block_calloc(int64_t count)
{
    if (count < 1)
        count = 1;
    double *p = kept_block(count);
    if (!p)
        return calloc((size_t)count, sizeof(double));
    memset(p, 0, (size_t)count * sizeof(double));
    return p;
}

double *ad_buffer_alloc(int64_t count)
{
    if (count < 1)
        count = 1;
    double *p = kept_block(count);
    return p ? p : malloc((size_t)count * sizeof(double));
}

void ad_buffer_release(double *p, int64_t count)
{
    ad_block_release(p, count);
}

void ad_block_release(double *p, int64_t count)
{
    if (!p)
        return;
    if (count < 1)
        count = 1;
    size_t bytes = (size_t)count * sizeof(double);
    if (!KEEP_BLOCKS) {
        free(p);
        return;
    }
    if (count <= AD_ROW_MAX && small_keep(p, count))
        return;
    if (bytes < CACHE_MIN_BYTES) {
        free(p);
        return;
    }
    pthread_mutex_lock(&cache_lock);
    if (cached_bytes + bytes <= CACHE_BYTES)
        for (int k = 0; k < CACHE_SLOTS; ++k)
            if (!cache[k].p) {
                cache[k].p = p;
                cache[k].bytes = bytes;
                cached_bytes += bytes;
                p = 0;
                break;
            }
    pthread_mutex_unlock(&cache_lock);
    free(p);        /* small, or no room: back to the system */
}

/* The block table of a freed tape, kept for the next tape that records an
 * array: a training step records a tape as long as the last one's, and
 * growing its table again from 64 blocks by doubling copied a third of a
 * kilobyte per entry (ad_block is 336 bytes), a twentieth of a small
 * array's operation.  One table, of at most SPARE_TABLE_MAX blocks. */
#define SPARE_TABLE_MAX ((int64_t)4096)
static ad_block *spare_table;
static int64_t spare_cap;

ad_block *ad_table_take(int64_t *cap)
{
    pthread_mutex_lock(&cache_lock);
    ad_block *blk = spare_table;
    *cap = spare_cap;
    spare_table = 0;
    spare_cap = 0;
    pthread_mutex_unlock(&cache_lock);
    return blk;
}

void ad_table_release(ad_block *blk, int64_t cap)
{
    if (blk && cap <= SPARE_TABLE_MAX) {
        pthread_mutex_lock(&cache_lock);
        if (cap > spare_cap) {      /* keep the larger of the two */
            ad_block *old = spare_table;
            spare_table = blk;
            spare_cap = cap;
            blk = old;
        }
        pthread_mutex_unlock(&cache_lock);
    }
    free(blk);
}
