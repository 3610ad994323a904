"""A tape's record buffer: how an operation is recorded without calling
into C, and how the records reach the C tape.

An operation packs one record (op, operands, flags, immediate, value)
into the bytearray ``Tape.buf`` at offset 32*i and appends its result
object to ``Tape.nodes`` as entry i; the records reach the C tape in bulk
(``flush``) before a sweep or every ``SPILL_EVERY`` records, when the
recording path calls ``spill``.  A record is written at its entry's own
offset, so an operation interrupted between the two steps
(KeyboardInterrupt) leaves only a record that the next operation
overwrites.
"""
import math
import os
import struct
import sys

import numpy as np

from . import _core
from ._core import TapeError, ffi, lib
from ._generated import link, tape_steps
from .tape_state import state

SPILL_EVERY = 1 << 15      # records buffered in Python before a flush to C
BLOCKS_AHEAD = 256         # array blocks grown ahead of the recording path

_pack_into = struct.Struct(_core.RECORD_FORMAT).pack_into
RECORD_SHIFT = 5                 # record i starts at byte i << RECORD_SHIFT
assert struct.calcsize(_core.RECORD_FORMAT) == _core.RECORD_SIZE == 1 << RECORD_SHIFT

# One entry on tape t as object `out` (generated: RECORD_STEPS in
# codegen.py, the steps that Value's operators inline).
record_into = link(tape_steps.record_into, globals())
_new = object.__new__
_LEAF = _core.OPS["LEAF"]
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class RecordBuffer:
    """Tape's recording: the buffer, its spills and flushes, the guards of
    a recording, and what the C tape points into."""

    __slots__ = ()

    def _update_limit(self):
        # The recording path calls spill() once an index reaches `limit`;
        # detect_anomaly sets it to -1 so every result is checked there.
        # An array entry also takes a block, so the arrays' path compares
        # with array_limit, which counts every entry against the blocks
        # left; scalars' records take none, and a scalar graph spills only
        # as often as its buffer needs.
        if state.anomaly:
            self.limit = self.array_limit = -1
        else:
            # at the latest, the last record that still fits in buf, or
            # whose entry fits in the C tape
            c = self._c
            n = len(self.nodes)
            self.limit = min(n + SPILL_EVERY,
                             (len(self.buf) >> RECORD_SHIFT) - 1,
                             c.max_entries - 1, c.cap - 1)
            self.array_limit = min(self.limit, n + c.blk_cap - c.nblk - 1)

    def spill(self, out=None):
        """Called by the recording path at `limit`: anomaly checks, flushing
        the buffer, compaction, growing the C tape ahead, and the
        entry-count limit."""
        if out is not None and state.anomaly and not math.isfinite(out._d):
            op = struct.unpack_from("i", self.buf, out._i << RECORD_SHIFT)[0]
            if op != _LEAF:             # inputs may be anything; results not
                raise FloatingPointError(
                    f"{_core.OP_NAMES[op]} at tape index {out._i} produced "
                    f"{'nan' if math.isnan(out._d) else 'inf'}")
        with self.lock:
            if len(self.nodes) >= self.compact_at:
                self.compact()
            elif len(self.nodes) - self.nflushed >= SPILL_EVERY:
                self.flush()
            self._reserve(len(self.nodes) + 2)
            if len(self.nodes) > self._c.max_entries:
                # operand indices are int32: refuse the entry, keep the rest
                self.nodes.pop()
                raise TapeError(f"tape is full: {self._c.max_entries} entries "
                                "(operand indices are 32-bit); run each step in "
                                "'with ad.Tape():' or drop references to old graphs")
            self._grow_ahead()
            self._update_limit()

    def _grow_ahead(self):
        """Room in the C tape for the next entries and their blocks, made
        here under the lock rather than by the recording path (see the
        module's docstring); doubling, as the C side grows.  Where memory
        is short, nothing is grown: the append that needs the room grows
        it then, or fails with a MemoryError for that entry."""
        c = self._c
        n = len(self.nodes)
        if c.cap - 1 <= n and c.cap < c.max_entries:
            lib.ad_tape_reserve(c, min(n + 2, c.max_entries))
        # (the limit counts every record against the blocks left, scalars
        # too: room for a few hundred keeps spills rare on scalar graphs)
        if c.blk_cap - c.nblk < BLOCKS_AHEAD:
            lib.ad_tape_reserve_blocks(c, c.nblk + BLOCKS_AHEAD)

    def record(self, cls, op, a, b, imm, d, flags=0):
        """Append one entry and return its new object of class cls (the
        generated operators of Value's inline the same steps)."""
        self._check_open()
        return record_into(self, _new(cls), op, a, b, imm, d, flags)

    def _reserve(self, n):
        """Room in buf for the records of entries below n."""
        have = len(self.buf) >> RECORD_SHIFT
        if n > have:
            self.buf += bytes((max(n, 2 * have) - have) << RECORD_SHIFT)

    def flush(self):
        """Append the buffered records to the C tape."""
        self._check_open()
        if len(self.nodes) <= self.nflushed:
            return
        with self.lock:
            # (less than none while an array's entry, in C, is being kept)
            count = len(self.nodes) - self.nflushed
            if count <= 0:
                return
            recs = ffi.from_buffer("ad_record[]", self.buf)
            try:
                _core.check(lib.ad_tape_append(self._c, recs + self.nflushed,
                                               count), self._c)
            finally:
                ffi.release(recs)
            self.nflushed += count

    def count_elements(self, n):
        """n more array values on the tape (a result's, a pool's block):
        big arrays fill memory before entries do, so past a mark the tape
        is compacted.  Only where compacting, which renumbers entries, is
        safe: after the entry just recorded is kept."""
        self.array_elems += n
        if self.array_elems > self.compact_elems:
            self.compact()

    def drop_unkept(self, n):
        """An operation on arrays stopped (an error from C, a
        KeyboardInterrupt between two steps) after C may have appended its
        entry and before Python kept it as node n: drop whatever either
        side holds from n on, so that they agree again.  (The operation
        flushed before its C call, so the entries below n are in C.)"""
        with self.lock:
            self._drop_unkept(n)

    def _drop_unkept(self, n):
        del self.nodes[n:]
        self.nflushed = n
        if self.grads:
            self.grads = {i: g for i, g in self.grads.items() if i < n}
        c = self._c
        if c is not None and c.n > n:
            keep = np.zeros(c.n, np.uint8)
            keep[:n] = 1              # entries below n stay where they are
            _core.check(lib.ad_tape_compact(
                c, c.n, ffi.from_buffer("uint8_t[]", keep),
                ffi.from_buffer("int64_t[]", np.empty(c.n, np.int64))), c)

    def guard(self, node, expected, what):
        """While recording a function: node (a comparison's result, or a
        mask) must hold expected in every replay; `what` says where it was
        made, for the BranchError of a replay where it does not."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            frame = frame.f_back          # the user's line, not ours
        where = f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame else ""
        self.guards.append((node, expected, what + where))

    def keep_alive(self, obj):
        """Hold obj (memory the C tape points into) as long as the tape."""
        self._kept.append(obj)
