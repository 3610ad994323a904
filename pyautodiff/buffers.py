"""Memory for the values of large arrays, from the C core's cache of freed
blocks (``ad_buffer_alloc``).

A fresh page from the system costs a page fault the first time it is
touched, and a training step that makes the same big arrays every time
(leaves, products, gradients read back) would take fresh pages for each of
them.  Arrays made here give their memory back to the cache when they are
collected, so the next step's arrays reuse it.  Smaller arrays come from
NumPy: below glibc's threshold for mapping memory of its own (128 KiB),
malloc reuses freed memory well, and costs less than the cache's call
through cffi (measured on the Rosenbrock gradient at n = 10,000).
"""
import numpy as np

from ._core import ffi, lib

BUFFER_MIN = 16384    # elements (128 KiB) from which values come from the cache


def empty(shape):
    """An uninitialised C-contiguous float64 array of this shape."""
    size = 1
    for n in shape:
        size *= n
    if size < BUFFER_MIN:
        return np.empty(shape)
    p = lib.ad_buffer_alloc(size)
    if p == ffi.NULL:
        raise MemoryError(f"out of memory for an array of shape {tuple(shape)}")
    return adopt(p, shape, size)


def adopt(p, shape, size):
    """The C block p of size doubles as an array of this shape, which gives
    the block back to the cache when it is collected."""
    p = ffi.gc(p, lambda q: lib.ad_buffer_release(q, size), 8 * size)
    return np.frombuffer(ffi.buffer(p, 8 * size)).reshape(shape)


def copy(x):
    """A copy of the float64 array x, C-contiguous."""
    out = empty(np.shape(x))
    np.copyto(out, x, casting="unsafe")
    return out
