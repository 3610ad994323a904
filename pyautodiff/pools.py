"""Pools of small array results: the memory of an Array of a few elements.

Small results are rows of a read-only block of POOL_ROWS of one shape: one
block costs less than an array, its memory address, and making it read-only
for each result, and C finds a row from the block's address and the row's
number.  A result views its row only when its values are first read
(Array._d): most results of small operations are only ever operands, read
by C.  A row keeps its block alive, so only small results (at most
AD_ROW_MAX elements) are pooled.  A tape keeps its pools by shape
(Tape.pools); the recording steps (codegen.py) take rows from them.
"""
import numpy as np

from ._core import ffi, lib

POOL_ROWS = 64
POOL_MAX = lib.AD_ROW_MAX

_DOUBLES = ffi.typeof("double[]")
_from_buffer = ffi.from_buffer


class Pool:
    """A tape's small results of one shape: the rows of its current block
    are handed out in turn.  Each result keeps its pool (Array._p), so an
    operation on it finds the pool without making its shape's tuple and
    looking that up, and two results with the same pool have the same
    shape.  Its blocks count towards compacting tape t as they are made
    (a block at a time: the memory they take; a compaction counts again
    the rows still alive)."""

    __slots__ = ("shape", "size", "block", "base", "next")

    def __init__(self, t, shape, size):
        self.shape = shape
        self.size = size          # elements of a row
        self._new_block()
        # (counted, not compacted: the pool is made before the operation
        # that asks for it has read its operands' entries)
        t.array_elems += self.block.size

    def _new_block(self):
        block = np.empty((POOL_ROWS,) + self.shape)
        block.setflags(write=False)       # C writes through the address only
        self.block = block
        self.base = _from_buffer(_DOUBLES, block)
        self.next = 0

    def refill(self, t):
        """A fresh block, once the last row of this one has been recorded
        (then compacting t, which renumbers entries, is safe)."""
        self._new_block()
        t.count_elements(self.block.size)


def pool_of(t, shape):
    """t's pool of results of this shape, or False where a row would be too
    big to pool (or would hold nothing)."""
    pool = t.pools.get(shape)
    if pool is None:
        size = 1
        for n in shape:
            size *= n
        pool = Pool(t, shape, size) if shape and 0 < size <= POOL_MAX else False
        t.pools[shape] = pool
    return pool
