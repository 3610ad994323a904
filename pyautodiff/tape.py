"""The Python side of a tape: recording buffers, node objects and tape control.

Recording must be cheap, so an operation never calls into C.  It packs one
record (op, operands, flags, immediate, value) into the bytearray
``Tape.buf`` at offset 32*i and then appends the result object to
``Tape.nodes`` as entry i; the records reach the C tape in bulk (``flush``)
before a sweep or every ``SPILL_EVERY`` records.  Entry ``i`` of the C tape
is ``nodes[i]``.  A record is written at its entry's own offset, so an
operation interrupted between the two steps (KeyboardInterrupt) leaves only
a record that the next operation overwrites.

Memory is reclaimed by compaction: a node that only the tape refers to (its
reference count says so) and that no such referenced node depends on is
dropped from both ``nodes`` and the C tape, and the survivors are renumbered.
Values hold no references to each other (``_prev`` is read from the tape), so
the reference count is exact; micrograd's nodes of the user's own, which do
(children, a closure as derivative rule), are accounted for apart
(``Tape._kept_with_rules``).  Compaction runs when the tape has doubled
since the last one, so its cost per recorded operation stays bounded.

Tape state is per thread (``threading.local``): each thread records on its
own tape; ``with Tape():`` pushes an explicit one, ``no_grad()`` stops
recording, ``detect_anomaly()`` checks every result.

Threads.  A Value or Array of another thread's tape (or of a finished
thread's, which lives as long as its Values) used in an operation is
imported as a leaf, as an enclosing tape's is, and a backward sweep adds
what reached that leaf into the original's gradient on its own tape
(``receive_grads``).  Every tape has a lock, held by whatever touches its C
tape or renumbers its entries except the recording path itself: sweeps,
flushes, compactions, gradient reads and writes -- from the recording thread
too, since a sweep from another thread writes this tape's gradients with the
GIL released.  A C sweep runs with the lock held and the GIL released.  The
recording path stays lock-free because what it does in C never meets what
such a sweep does: it moves no memory another thread may be reading (the C
tape's arrays only grow in ``spill``, under the lock, ahead of the entries
recorded until the next spill); it writes only its new entry, and the counts
of entries and blocks, which other threads load as relaxed atomics
(csrc/internal.h); and of the earlier entries it reads only their shapes,
their values (which change only where the program assigns them) and whether
they are variables, from a column written only when they are recorded
(ad_tape.variable in csrc/ad.h), while sweeps and gradient assignments write
their flags.  An Array's ``.grad`` is the ndarray sweeps add into: read while
another thread's backward may reach it, it can hold that sweep's additions
in part -- join such threads first.  Locks are held one at a time, or an
inner tape's then an enclosing one's, so that no two threads wait for each
other.
"""
import threading
from _thread import get_ident

from . import _core, tape_compaction, tape_state
from ._core import TapeError, lib
from .tape_buffer import RECORD_SHIFT, RecordBuffer
from .tape_compaction import Compaction
from .tape_grads import GradientStore
from .tape_lifetime import Lifetime
from .tape_nesting import Nesting
from .tape_state import state
from .tape_sweeps import Sweeps


class Tape(RecordBuffer, Compaction, GradientStore, Sweeps, Nesting, Lifetime):
    """A Wengert list.  ``with ad.Tape() as t:`` records on a tape of its own
    whose entries are freed on exit; ``ad.current_tape()`` is the thread's.

    Its jobs live in the modules of its bases: recording (tape_buffer),
    compaction (tape_compaction), gradients (tape_grads), sweeps
    (tape_sweeps), other tapes and the thread's stack (tape_nesting), its
    end (tape_lifetime)."""

    __slots__ = ("_c", "nodes", "buf", "limit", "array_limit", "nflushed", "tid", "closed",
                 "parent", "imports", "compact_at", "_tokens", "_frozen",
                 "custom", "_entered", "_kept", "array_elems", "compact_elems",
                 "live_elems",
                 "_frozen_arrays", "externs", "sweep_mode", "callback_error",
                 "guards", "generation", "pools", "callbacks_routed", "grads", "thread",
                 "lock", "joined", "joiners", "transplanted",
                 "__weakref__")

    def __init__(self):
        self._c = _core.new_tape()
        self.nodes = []          # nodes[i] is the object of entry i
        self.buf = bytearray(64 << RECORD_SHIFT)    # record i at i << 5; grows
        self.nflushed = 0        # entries already in the C tape
        self.tid = get_ident()
        self.thread = state.thread   # the thread recording here
        self.lock = threading.RLock()
        self.closed = False
        self.parent = None       # enclosing tape while an explicit one is open
        self.imports = {}        # id(outer Value or Array) -> (it, its leaf here)
        self.compact_at = tape_compaction.COMPACT_MIN
        self.array_elems = 0     # elements of the array entries on the tape
        self.compact_elems = tape_compaction.COMPACT_MIN_ELEMENTS
        self.live_elems = 0      # array elements left by the last compaction
        self.custom = 0          # nodes whose derivative rule is Python code
        self._kept = []          # cdata the C tape points into
        self.pools = {}          # shape -> block of small results (array.py)
        self._frozen_arrays = {}
        # entry -> an Array's .grad, the ndarray its C gradient block is
        # (ad_array_borrow_grad): held here as long as the entry exists
        self.grads = {}
        self.externs = {}        # entry -> rule of an AD_EXTERN entry (extern.py)
        self.sweep_mode = _core.SWEEP_ACCUM
        self.callback_error = None
        self.guards = None       # ad.record: the decisions a replay must repeat
        self.callbacks_routed = False   # extern.py's callbacks (on first use)
        self._entered = False
        self._frozen = None      # grads kept after release, by entry
        # Threads inside a derivative (threads.py): the derivative's tape
        # whose values this thread's tape took in, while it traces; on a
        # derivative's tape while it traces its function, the tapes that
        # joined it (None otherwise), and what it took from them (id(their
        # node) -> (it, its node here))
        self.joined = None
        self.joiners = None
        self.transplanted = {}
        self.generation = 0      # compactions so far: entry numbers changed
        self._update_limit()

    def _check_open(self):
        if self.closed:
            raise TapeError("this Value belongs to a tape that was released "
                            "(its 'with ad.Tape()' block has ended)")

    # -- inspection --------------------------------------------------------

    def __len__(self):
        return len(self.nodes)

    @property
    def nbytes(self):
        """Bytes held by the C tape and the record buffer."""
        if self.closed:
            return 8 * len(self._frozen) + sum(g.nbytes for g in
                                               self._frozen_arrays.values())
        return int(lib.ad_tape_nbytes(self._c)) + len(self.buf)

    def __repr__(self):
        state = "released" if self.closed else f"{len(self)} entries"
        return f"<pyautodiff.Tape {state}>"

    def __str__(self):
        """The Wengert list: index, op, operands, value, adjoint."""
        if self.closed:
            return repr(self)
        with self.lock:         # (other threads' sweeps write the gradients)
            self.flush()
            c = self._c
            lines = [f"{'index':>7} {'op':<8} {'operands':<16} {'value':>14} "
                     f"{'adjoint':>14}"]
            for i in range(self.nflushed):
                op, a, b = c.op[i], c.a[i], c.b[i]
                args = ", ".join(str(k) for k in (a, b) if k >= 0)
                if _core.OP_ARITY[op] < 2 and op != _core.OPS["LEAF"]:
                    args += f", c={c.imm[i]:.6g}" if op in _CONST_OPS else ""
                lines.append(f"{i:>7} {_core.OP_NAMES[op]:<8} {args:<16} "
                             f"{c.val[i]:>14.6g} {c.grad[i]:>14.6g}")
        return "\n".join(lines)



_CONST_OPS = {_core.OPS[k] for k in ("ADDC", "MULC", "DIVC", "RSUBC", "RDIVC",
                                    "POWC", "RPOWC")}



tape_state.new_tape = Tape
