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
import contextlib
import itertools
import math
import os
import struct
import sys
import threading
import weakref
from _thread import get_ident

import numpy as np

from . import _core, buffers
from ._core import TapeError, ffi, lib
from ._generated import link, tape_steps

SPILL_EVERY = 1 << 15      # records buffered in Python before a flush to C
BLOCKS_AHEAD = 256         # array blocks grown ahead of the recording path
COMPACT_MIN = 1 << 16      # entries a tape may grow by before a compaction
COMPACT_MIN_ELEMENTS = 1 << 18   # ... and array elements (2 MiB of values)
# Array elements recorded per entry of the tape before a compaction, so
# that compacting a tape of many entries stays cheap per element.
COMPACT_ELEMENTS_PER_ENTRY = 16
# ... and at least this many more when an explicit tape's block ends (512
# KiB of values: a compaction costs some 20 µs of Python however small the
# tape, a tenth of a step on arrays of 10,000 elements if made every step)
RELEASE_COMPACT_ELEMENTS = 1 << 16

_pack_into = struct.Struct(_core.RECORD_FORMAT).pack_into
RECORD_SHIFT = 5                 # record i starts at byte i << RECORD_SHIFT
assert struct.calcsize(_core.RECORD_FORMAT) == _core.RECORD_SIZE == 1 << RECORD_SHIFT


class _ThreadState(threading.local):
    """This thread's tapes.  `rec` is what the recording path compares
    operands' tapes with: the innermost tape, NO_GRAD inside no_grad(), or
    None until the thread first needs a tape."""

    def __init__(self):
        self.rec = None
        # names this thread as a tape's owner (an ident is reused once a
        # thread ends, while its tape may live on)
        self.thread = object()
        self.default = None      # the thread's own tape, made on first use
        self.stack = []          # explicit tapes entered, innermost last
        self.no_grad = 0
        self.anomaly = 0
        # a user's derivative rule applied by a nested derivative (its
        # name), where a traced value made a plain number is an error
        self.strict_rule = None

    def refresh(self):
        if self.default is None:
            self.default = Tape()
        tape = self.stack[-1] if self.stack else self.default
        self.rec = NO_GRAD if self.no_grad else tape
        return tape


state = _ThreadState()


# One entry on tape t as object `out` (generated: RECORD_STEPS in
# codegen.py, the steps that Value's operators inline).
record_into = link(tape_steps.record_into, globals())
_new = object.__new__


def _refcount_base():
    # What sys.getrefcount reports, mapped over a list, for an object only
    # the list refers to.
    return next(map(sys.getrefcount, [object()]))


_BASE_REFS = _refcount_base()
_LEAF = _core.OPS["LEAF"]


class _Marker:
    __slots__ = ("name",)
    closed = False

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<{self.name}>"


# Stands in for the recording tape inside no_grad().
NO_GRAD = _Marker("no_grad")
# The tape of a Value computed under no_grad: none.  It differs from NO_GRAD
# so that such Values never pass the recording path's `self._t is t` test.
DETACHED = _Marker("detached")


def _array_elements(node):
    """The number of an Array's values; a small result's are counted from
    its pool, without viewing its row."""
    pool = node._p
    return pool.size if pool else node._v.size



# The tapes of the derivatives and recordings under way (trace.py adds a
# trace's tape while it runs f).
DIFFERENTIATING = weakref.WeakSet()


def differentiated(x):
    """Whether x is a Value or Array of a trace under way: a variable of an
    enclosing derivative or recording, which a plain number taken from it
    would silently cut off.  (Values of ordinary tapes are constants to a
    derivative.)"""
    t = getattr(x, "_t", None)
    return t in DIFFERENTIATING and not t.closed


def moves(x):
    """Whether x (a Value or Array) depends on a variable of its open tape,
    so that a derivative may ask for its cotangent."""
    t = getattr(x, "_t", None)
    if not isinstance(t, Tape) or t.closed:
        return False
    t.flush()
    return bool(t._c.flags[x._i] & _core.FLAG_VARIABLE)


@contextlib.contextmanager
def strict_rule(name):
    """While a user's rule (named name) runs on traced values: a traced
    value taken out as a plain number is a NotImplementedError naming the
    rule (refuse_detached)."""
    saved, state.strict_rule = state.strict_rule, name
    try:
        yield
    finally:
        state.strict_rule = saved


class DetachError(TypeError):
    """A value that a derivative or a recording is tracing was made a plain
    number (float(x), math.sin(x), np.float64(x), writing it into an
    ndarray, np.asarray(x, dtype=float)): no derivative would flow through
    that number, so the derivative would silently miss its terms."""


# What a plain float of a traced value comes from, besides float() itself,
# and what to write instead: the message of every DetachError.
_DETACH_FIX = (
    "no derivative would flow through that number, so the derivative would "
    "silently miss its terms. float(x), math.sin(x), np.float64(x), writing "
    "x into an ndarray (g = np.zeros(n); g[i] = x) and np.asarray(x, "
    "dtype=float) all make one. Compute with the value itself (np.sin(x) "
    "rather than math.sin(x)); build arrays with np.stack, np.array([...]) "
    "without dtype= or np.concatenate rather than writing into a float "
    "array; or detach on purpose with ad.stop_gradient(x) or x.item()")


def refuse_detached(x, what):
    """Raise DetachError where x, traced by a derivative or a recording,
    would leave it as a plain number (what names the conversion) while it
    carries a derivative: a comparison's mask or a step function's result
    (float(x > 0), float(np.floor(x))) has none to lose."""
    if differentiated(x) and moves(x):
        if state.strict_rule is not None:
            raise NotImplementedError(
                f"{state.strict_rule}: inside another derivative, its rule "
                f"took {what} of a traced value: a plain number, whose "
                "dependence the enclosing derivative would miss. Write the "
                "rule with NumPy functions (or pyautodiff's) applied to the "
                "values it is given, so that it can be differentiated in turn")
        raise DetachError(f"{what} of a value that a derivative is tracing: "
                          + _DETACH_FIX)


class _ThreadHooks:
    """threads.py's functions (threads inside a derivative), which record
    operations and so import the modules that import this one and
    trace.py: it installs them here when pyautodiff is imported."""
    join = transplant = tracing = lift = release_joined = None


thread_hooks = _ThreadHooks()


class Tape:
    """A Wengert list.  ``with ad.Tape() as t:`` records on a tape of its own
    whose entries are freed on exit; ``ad.current_tape()`` is the thread's."""

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
        self.compact_at = COMPACT_MIN
        self.array_elems = 0     # elements of the array entries on the tape
        self.compact_elems = COMPACT_MIN_ELEMENTS
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

    # -- recording ---------------------------------------------------------

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

    def compact(self):
        """Drop the entries nothing refers to any more; renumber the rest."""
        with self.lock:       # other threads may be reading entry numbers
            self._compact()

    def _compact(self):
        self.flush()
        nodes = self.nodes
        n = len(nodes)
        keep = self._in_use()
        newidx = np.empty(n, np.int64)
        _core.check(lib.ad_tape_compact(
            self._c, n, ffi.from_buffer("uint8_t[]", keep),
            ffi.from_buffer("int64_t[]", newidx)), self._c)
        dropped = (newidx < 0).nonzero()[0]
        if self.imports:      # what no entry left stands for needs no routing
            self.imports = {k: imp for k, imp in self.imports.items()
                            if newidx[imp[1]._i] >= 0}
        if len(dropped):
            # entries below the first dropped one keep their index
            first = int(dropped[0])
            moved = [nodes[k] for k in ((newidx[first:] >= 0).nonzero()[0]
                                        + first).tolist()]
            for i, node in enumerate(moved, first):
                node._i = i
            del nodes[first:]
            nodes += moved
        self.generation += 1
        if self.externs:
            self.externs = {int(newidx[i]): rule for i, rule in self.externs.items()
                            if newidx[i] >= 0}
        if self.grads:      # (a dropped entry's C block no longer points here)
            self.grads = {int(newidx[i]): g for i, g in self.grads.items()
                          if newidx[i] >= 0}
        self.nflushed = len(nodes)
        if self.custom:       # some may be gone now
            self.custom = sum(getattr(n, "_bw", None) is not None for n in nodes)
        self.compact_at = max(2 * len(nodes), len(nodes) + COMPACT_MIN)
        lent = {id(proxy) for _, proxy in self.imports.values()}  # not ours
        arrays = np.frombuffer(ffi.buffer(self._c.aux, 4 * len(nodes)), np.int32) >= 0
        self.array_elems = sum(_array_elements(nodes[k])
                               for k in arrays.nonzero()[0].tolist()
                               if id(nodes[k]) not in lent)
        # soon enough that the arrays nothing holds go back to the block
        # cache (and the next step's arrays reuse them) before many pile up
        self.live_elems = self.array_elems
        self.compact_elems = max(2 * self.array_elems, self.array_elems + max(
            COMPACT_MIN_ELEMENTS, COMPACT_ELEMENTS_PER_ENTRY * len(nodes)))
        del self.buf[(len(nodes) + 2 * SPILL_EVERY) << RECORD_SHIFT:]
        self._update_limit()

    def _in_use(self):
        """Which nodes (a uint8 mask) something besides the tape refers to,
        by their reference counts; where derivative rules are Python code,
        what those nodes hold or depend on too, and the rules of the others
        are let go (see _kept_with_rules)."""
        nodes = self.nodes
        refs = np.fromiter(map(sys.getrefcount, nodes), np.intp, len(nodes))
        for _, proxy in self.imports.values():
            refs[proxy._i] -= 1   # imports' own hold: a use only as an operand
        if not self.custom:
            return (refs > _BASE_REFS).astype(np.uint8)
        keep = self._kept_with_rules(refs)
        for k in (keep == 0).nonzero()[0].tolist():
            # nothing outside can reach it: break its rule's cycle so that
            # it is freed with its entry, not by the collector
            if getattr(nodes[k], "_bw", None) is not None:
                nodes[k]._bw = None
        return keep

    def _kept_with_rules(self, refs):
        """_in_use() on a tape with derivative rules in Python
        (micrograd's ``out._backward = closure``): such a closure refers to
        its own node, so by reference counts alone the node would be used
        for good.  References a node alone holds (node._held(): its
        children, its rule's captured variables) are not counted as uses
        of their targets; instead everything a used node holds, or depends
        on on the tape, is kept with it."""
        nodes = self.nodes
        where = {id(node): i for i, node in enumerate(nodes)}
        edges = {}
        for i, node in enumerate(nodes):
            held = getattr(node, "_held", None)
            targets = [where[id(x)] for x in held() if id(x) in where] if held else ()
            if targets:
                edges[i] = targets
                for j in targets:
                    refs[j] -= 1
        keep = (refs > _BASE_REFS).astype(np.uint8)
        n = len(nodes)
        a = np.frombuffer(ffi.buffer(self._c.a, 4 * n), np.int32).tolist()
        b = np.frombuffer(ffi.buffer(self._c.b, 4 * n), np.int32).tolist()
        todo = keep.nonzero()[0].tolist()
        while todo:
            i = todo.pop()
            for j in itertools.chain(edges.get(i, ()), (a[i], b[i])):
                if j >= 0 and not keep[j]:
                    keep[j] = 1
                    todo.append(j)
        return keep

    # -- reading entries ---------------------------------------------------

    def _check_open(self):
        if self.closed:
            raise TapeError("this Value belongs to a tape that was released "
                            "(its 'with ad.Tape()' block has ended)")

    # Reads of an entry take the lock in every thread: in another than the
    # one recording here, so that the entry's number stays put meanwhile;
    # in that one too, because another thread's sweep (receive_grads)
    # writes this tape's gradients with the GIL released.  acquire() and
    # release() rather than `with`, which costs more than twice as much
    # on an RLock: .grad is read for every parameter at every step.

    def grad_of(self, node):
        lock = self.lock
        lock.acquire()
        try:
            return self._grad_of(node._i)
        finally:
            lock.release()

    def _grad_of(self, i):
        if self._frozen is not None:
            return self._frozen.get(i, 0.0)
        if i >= self.nflushed:
            return 0.0          # no sweep has reached a buffered entry
        return self._c.grad[i]

    def flags_of(self, node):
        lock = self.lock
        lock.acquire()
        try:
            return self._flags_of(node._i)
        finally:
            lock.release()

    def grad_and_flags_of(self, node):
        """(grad_of(node), flags_of(node)) as of one moment: a sweep may
        come between two reads, and change both."""
        lock = self.lock
        lock.acquire()
        try:
            return self._grad_of(node._i), self._flags_of(node._i)
        finally:
            lock.release()

    def _flags_of(self, i):
        if self._frozen is not None or i >= self.nflushed:
            return 0
        return self._c.flags[i]

    def set_grad(self, node, g, is_float=None):
        """Assign node's grad; is_float (micrograd's typing) says whether
        it now reads as a float or an int."""
        self._check_open()
        with self.lock:
            self.flush()
            i = node._i
            self._c.grad[i] = g
            flags = self._c.flags[i] | _core.FLAG_HAS_GRAD
            if is_float is not None:
                bit = _core.FLAG_GRAD_FLOAT
                flags = (flags & ~bit) | (bit if is_float else 0)
            self._c.flags[i] = flags

    def has_grad(self, node):
        """Whether node has a gradient (a sweep reached it, or it was
        assigned): optimizers skip a parameter without one, so a copy of
        it must not get one."""
        if self._frozen is not None:
            return node._i in self._frozen or node._i in self._frozen_arrays
        return bool(self.flags_of(node) & _core.FLAG_HAS_GRAD)

    def zero_grads(self, nodes):
        """Set the gradients of these nodes (Values and Arrays) to 0."""
        self._check_open()
        with self.lock:
            self.flush()
            c = self._c
            for node in nodes:
                i = node._i
                if c.aux[i] < 0:
                    c.grad[i] = 0.0
                else:
                    _core.check(lib.ad_array_zero_grad(c, i), c)

    def take_grads(self, nodes):
        """The gradients of these nodes, taken off the tape: floats, and
        ndarrays of the Arrays' shapes.  An Array's gradient block itself
        becomes the ndarray (no copy), and the Array has none left; the
        next sweep's adjoint becomes its next one.  For derivatives, whose
        leaves are the trace's own."""
        with self.lock:
            c = self._c
            out = []
            taken = {}      # a node listed again (argnum=(0, 0)) gets a copy
            for node in nodes:
                i = node._i
                if c.aux[i] < 0:
                    out.append(c.grad[i])
                    continue
                if i in taken:
                    out.append(taken[i].copy())
                    continue
                if i in self.grads:     # the Array's own .grad: C does not own it
                    taken[i] = g = self.grads[i].copy()
                    _core.check(lib.ad_array_zero_grad(c, i), c)
                    out.append(g)
                    continue
                p = lib.ad_array_grad_take(c, i)
                d = node._d
                taken[i] = g = (np.zeros(d.shape) if p == ffi.NULL else
                                buffers.adopt(p, d.shape, d.size))
                out.append(g)
            return out

    def set_value(self, node, d, is_int=False):
        """A new value for node's entry (its .data assigned).  A leaf's
        value is also its input for a replay; another entry keeps its
        constant."""
        self._check_open()
        with self.lock:
            self.flush()
            c = self._c
            i = node._i
            c.val[i] = d
            if c.op[i] == _LEAF:
                c.imm[i] = d
            bit = _core.FLAG_VALUE_INT
            c.flags[i] = (c.flags[i] & ~bit) | (bit if is_int else 0)

    def entry(self, node):
        """(op, a, b, imm, val) of node's entry."""
        self._check_open()
        with self.lock:
            self.flush()
            c = self._c
            i = node._i
            return c.op[i], c.a[i], c.b[i], c.imm[i], c.val[i]

    # -- sweeps ------------------------------------------------------------

    def backward(self, idx, seeds, mode, route_imports=True):
        """Reverse sweep from entries idx with adjoints seeds (a number, or
        an array for an Array's entry), then on to the enclosing tapes and
        other threads' tapes through the Values and Arrays this tape
        imported (unless route_imports is false: then they are constants
        here)."""
        self._check_open()
        with self.lock:
            others = self._backward(idx, seeds, mode, route_imports)
        # other threads' tapes once this one's lock is let go: a thread
        # never waits for another's tape while holding its own
        for tape, nodes, grads in others:
            tape.receive_grads(nodes, grads)

    def backward_from(self, node, seed, mode):
        """backward() from node's entry, read under the lock (another
        thread may be renumbering it)."""
        with self.lock:
            i = node._i
        self.backward([i], [seed], mode)

    def receive_grads(self, nodes, grads):
        """Add grads, what another tape's sweep gave its leaves standing
        for these nodes of this tape, into their gradients here, and on
        along this tape's graph (an accumulating sweep from them).  The
        lock makes two threads' contributions to one leaf add up."""
        self._check_open()
        with self.lock:
            others = self._backward([node._i for node in nodes], grads,
                                    _core.SWEEP_ACCUM, True)
        for tape, nodes, grads in others:
            tape.receive_grads(nodes, grads)

    def _backward(self, idx, seeds, mode, route_imports):
        """backward() with the lock held, as far as this thread's tapes go;
        returns what goes on to other threads' tapes, as (tape, nodes,
        grads) for their receive_grads."""
        self.flush()
        imports = [proxy for _, proxy in self.imports.values()] if route_imports else []
        if imports:
            # what this sweep adds to the imported leaves' grads is routed on
            before = [self._grad_now(p) for p in imports]
        self.sweep_mode = mode
        _core.check(lib.ad_backward_arrays(
            self._c, *_seed_arguments(idx, seeds), mode,
            1 if state.anomaly else 0), self._c, self)
        if not imports:
            return []
        # an Array's first gradient is what this sweep gave it: its
        # block itself is the seed (no copy, no difference)
        swept = [self._grad_now(p, copy=False) if b is None else
                 self._grad_now(p) - b for p, b in zip(imports, before)]
        return self._backward_imports(max(idx), swept,
                                      [b is None for b in before])

    def tangent(self, idx, seeds, hi=None, lanes=1):
        """Forward-mode sweep over entries [0, hi): the leaves idx move
        along seeds, every other leaf stays.  Read with scratch(j, TAN).
        With lanes > 1, along that many directions at once: each seed is
        then an array of (lanes,) + the leaf's shape, and select_lane picks
        the direction scratch shows."""
        self._check_open()
        with self.lock:
            self.flush()
            hi = len(self.nodes) if hi is None else hi
            for j, s in zip(idx, seeds):       # the C sweep reads this many
                want = lanes * int(np.prod(np.shape(self.nodes[j]._d)))
                if lanes >= 1 and np.ndim(s) and np.size(s) != want:
                    raise ValueError(f"a tangent sweep of {lanes} lane"
                                     f"{'s' if lanes > 1 else ''} seeds entry {j} with "
                                     f"{want} numbers, not {np.size(s)}")
            _core.check(lib.ad_tangent(self._c, hi, lanes,
                                       *_seed_arguments(idx, seeds)),
                        self._c, self)

    def select_lane(self, lane):
        """The direction of the last tangent sweep that scratch(j, TAN)
        and scratch(j, DADJ) show."""
        with self.lock:
            _core.check(lib.ad_select_lane(self._c, lane), self._c, self)

    def second_order(self, idx, seeds):
        """After tangent(): adjoints from the seeds and their tangents; the
        leaves' scratch(j, DADJ) is then a Hessian-vector product."""
        self._check_open()
        with self.lock:
            _core.check(lib.ad_second_order(self._c, *_seed_arguments(idx, seeds)),
                        self._c, self)

    def scratch(self, j, which):
        """Entry j's adjoint (ADJ), tangent (TAN) or adjoint tangent (DADJ)
        from the last sweep, as a writable array of its shape (0-d for a
        scalar), or None where that sweep did not reach it."""
        p = lib.ad_entry_scratch(self._c, j, which)
        if p == ffi.NULL:
            return None
        shape = np.shape(self.nodes[j]._d)
        size = int(np.prod(shape)) if shape else 1
        return np.frombuffer(ffi.buffer(p, 8 * size)).reshape(shape)

    def _grad_now(self, node, copy=True):
        """node's gradient as stored now: a float, an Array's gradient (a
        copy, or with copy=False its block itself), or None for an Array
        that has none yet."""
        if node._i >= self.nflushed:
            return 0.0
        if self._c.aux[node._i] < 0:
            return self._c.grad[node._i]
        p = lib.ad_array_grad(self._c, node._i)
        if p == ffi.NULL:
            return None
        d = node._d
        g = np.frombuffer(ffi.buffer(p, 8 * d.size)).reshape(d.shape)
        return buffers.copy(g) if copy else g

    def entry_value(self, j):
        """Entry j's value as the C tape has it (a replay may have changed
        it since it was recorded): a float, or the Array's ndarray, which is
        the C block itself."""
        if self._c.aux[j] < 0:
            return self._c.val[j]
        return self.nodes[j]._d

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

    def array_grad(self, node):
        """An Array's gradient itself: an ndarray that C adds into, zeroes
        and reads in place (ad_array_borrow_grad), the same one at every
        read.  Its memory is Python's, so a reference kept to it stays valid
        whatever becomes of the entry.  After the tape is released, the
        gradient as it was then, which nothing reads or writes any more."""
        with self.lock:         # (another thread may renumber or add)
            return self._array_grad(node)

    def _array_grad(self, node):
        i = node._i
        g = self.grads.get(i)
        if g is not None:
            return g
        shape = node._d.shape
        if self.closed:
            g = self._frozen_arrays.get(i)
            if g is None:
                g = self._frozen_arrays[i] = np.zeros(shape)
            return g
        if i >= self.nflushed:
            self.flush()
        # at least one double, so that C's block is never NULL
        flat = buffers.empty((max(node._d.size, 1),))
        _core.check(lib.ad_array_borrow_grad(
            self._c, i, ffi.from_buffer("double[]", flat)), self._c)
        g = self.grads[i] = flat[:node._d.size].reshape(shape)
        return g

    def mark_grad(self, node, present=True):
        """node has a gradient (it was assigned) or, present false, none:
        optimizers skip it, as torch skips a parameter whose grad is None."""
        self._check_open()
        with self.lock:
            i, bit = node._i, _core.FLAG_HAS_GRAD
            self._c.flags[i] = (self._c.flags[i] & ~bit) | (bit if present else 0)

    def reverse_step(self, i):
        """Apply entry i's derivative rule once, in place on grad
        (micrograd's node._backward())."""
        self._check_open()
        with self.lock:
            self.flush()
            self.sweep_mode = _core.SWEEP_INPLACE
            _core.check(lib.ad_reverse_step(self._c, i), self._c, self)

    def _backward_imports(self, top, swept, whole):
        """Carry what this sweep gave the imported leaves (swept, in the
        order of self.imports) on to the tapes the originals live on: the
        enclosing ones now, with their locks taken after this one's; for
        other threads' tapes, returned as (tape, nodes, grads).  A leaf's
        gradient goes with it: the leaf keeps none, so that what the next
        sweep gives it is its whole gradient then (no difference, which
        would round).  Where that is a whole gradient block (whole), the
        block itself moves on (no copy): to an enclosing tape as the seed
        of its sweep, to another thread's as the ndarray passed."""
        by_tape = {}
        c = self._c
        for (outer, proxy), g, block in zip(self.imports.values(), swept, whole):
            j = proxy._i
            # (an Array's gradient is passed on as it is: checking it for
            # zeros would cost a pass over it)
            if j <= top and c.flags[j] & lib.AD_FLAG_MARK and \
                    (isinstance(g, np.ndarray) or g != 0.0):
                nodes, grads, takes = by_tape.setdefault(outer._t, ([], [], []))
                nodes.append(outer)
                grads.append(g)
                takes.append(j if block and isinstance(g, np.ndarray) else -1)
                if c.aux[j] < 0:
                    c.grad[j] = 0.0
                elif not block:
                    _core.check(lib.ad_array_zero_grad(c, j), c)
        others = []
        for tape, (nodes, grads, takes) in by_tape.items():
            if tape.thread is not self.thread:
                for k, j in enumerate(takes):
                    if j >= 0:
                        d = self.nodes[j]._d
                        grads[k] = buffers.adopt(lib.ad_array_grad_take(c, j),
                                                 d.shape, d.size)
                others.append((tape, nodes, grads))
                continue
            tape._check_open()
            with tape.lock:
                for node, j in zip(nodes, takes):
                    if j >= 0:
                        lib.ad_adjoint_take(tape._c, node._i, c, j)
                others += tape._backward([node._i for node in nodes], grads,
                                         _core.SWEEP_ACCUM, True)
        return others

    def adopt(self, v):
        """v itself if it is recorded here, else its leaf on this tape when v
        comes from an enclosing tape or another thread's (a finished
        thread's too); TapeError for a released tape, or another tape of
        this thread's."""
        owner = v._t
        if owner is self:
            return v
        if owner.__class__ is _Marker:
            # computed under no_grad: a constant leaf with its values as
            # they are now, at each use, as an ndarray operand gets.  Not
            # kept in imports: no gradient goes back to it, its values may
            # be assigned between uses, and the thread's own tape would
            # keep every step's such result for good.
            return v._constant_on(self)
        # by identity: an Array's == is elementwise (and it has no hash);
        # the entry keeps v alive, so its id is not reused meanwhile
        imported = self.imports.get(id(v))
        if imported is None or owner.closed or imported[1]._d is not v._d:
            imported = self._import(v)
        return imported[1]

    def _import(self, v):
        """(v, its new leaf here) for v of another tape, kept in imports.
        Inside a derivative, a value of a thread's tape that joined it is
        transplanted here instead, and a thread's tape taking in the
        derivative's value joins it (threads.py)."""
        owner = v._t
        owner._check_open()
        if owner.joined is self:
            return v, thread_hooks.transplant(v, self)
        if owner in DIFFERENTIATING and owner.thread is not self.thread \
                and self not in DIFFERENTIATING:
            thread_hooks.join(self, owner.joined or owner)
        if owner.thread is self.thread and not self._encloses(owner):
            raise TapeError("a Value from another tape was used here; Values "
                            "from an enclosing tape can be used in a 'with "
                            "ad.Tape()' block, others cannot")
        old = self.imports.get(id(v))
        if old is not None:
            # a Value's data was assigned since (an Array's leaf shares its
            # values): a new leaf, the old one still routing what the
            # graphs recorded with it receive
            self.imports[id(old[1])] = old
        imported = self.imports[id(v)] = (v, v._import_to(self))
        return imported

    def _encloses(self, tape):
        outer = self.parent
        while outer is not None and outer is not tape:
            outer = outer.parent
        return outer is not None

    # -- explicit tapes ----------------------------------------------------

    def __enter__(self):
        if self._entered or self.closed:
            raise TapeError("a Tape can be entered once")
        if current_tape().guards is not None:
            # nothing the block computes is on the recording: a number or
            # decision taken there would be baked into every replay
            raise NotImplementedError(
                "'with ad.Tape()' inside a function being recorded (ad.record, "
                "@ad.function, ad.minimize) is not supported")
        self._push()
        return self

    def __exit__(self, *exc):
        self._check_entered_here()
        self._pop()
        self.release()
        return False

    def _check_entered_here(self):
        # before anything changes: the entering thread's stack would still
        # record on a tape freed under it
        if self._entered and self.thread is not state.thread:
            raise TapeError("this tape was entered in another thread: its "
                            "'with' block ends in that thread")

    def _push(self):
        """Record on this tape from now on (inside the current one)."""
        self.parent = current_tape()
        self.tid = get_ident()
        self.thread = state.thread
        self._entered = True
        state.stack.append(self)
        state.refresh()
        self._update_limit()

    def _pop(self):
        # also when blocks end out of order (a generator closed later)
        if self in state.stack:
            state.stack.remove(self)
        state.refresh()
        self._entered = False

    @contextlib.contextmanager
    def recording(self):
        """Record on this tape inside the block, and keep it open after
        (the functional API and ad.record sweep it afterwards)."""
        self._push()
        try:
            yield self
        finally:
            self._pop()

    def release(self, keep_grads=True):
        """Free the C tape.  Values recorded here keep their data and grad
        (unless keep_grads is false: the functional API's private tapes
        have read what they need); using them in an operation or backward
        raises TapeError."""
        if self.closed:
            return
        self._check_entered_here()
        if self._entered:
            raise TapeError("this tape is in use: it is released when its "
                            "'with' block ends")
        with self.lock:       # not while another thread reads its entries
            self._frozen = {}
            if keep_grads:
                self._freeze_grads()
            parent = self.parent
            self.discard()
        # A step's block often ends here, and the arrays made outside it
        # (parameters, inputs) that the last step dropped lie on the
        # enclosing tape: reclaim them now, while that costs little per
        # element, so the next step reuses their memory.
        if parent is not None and not parent.closed and \
                parent.array_elems - parent.live_elems >= max(
                    RELEASE_COMPACT_ELEMENTS,
                    COMPACT_ELEMENTS_PER_ENTRY * len(parent.nodes)):
            parent.compact()

    def _freeze_grads(self):
        """Keep the gradients of the Values and Arrays someone still holds
        (the leaves standing for imported ones are this tape's own)."""
        self.flush()
        self.imports = {}
        nodes = self.nodes
        c = self._c
        for i in self._in_use().nonzero()[0].tolist():
            if c.aux[i] < 0:
                # one no sweep reached reads as 0 without an entry here,
                # and has_grad() (a copy's gradient) stays false for it
                if c.grad[i] != 0.0 or c.flags[i] & _core.FLAG_HAS_GRAD:
                    self._frozen[i] = c.grad[i]
                continue
            if i in self.grads:                   # an .grad someone read
                self._frozen_arrays[i] = self.grads[i]
                continue
            p = lib.ad_array_grad_take(c, i)      # handed over, not copied
            if p != ffi.NULL:
                d = nodes[i]._d
                self._frozen_arrays[i] = buffers.adopt(p, d.shape, d.size)

    def discard(self):
        """Free the C tape and let go of the entries, keeping nothing: the
        nodes refer back to the tape, so until then the tape and its nodes
        are a reference cycle.  Safe from any thread (a trace collected
        there): it touches no other tape."""
        self.closed = True
        if self._frozen is None:
            self._frozen = {}       # no gradients kept: they read as 0
        self.nodes = []
        self.buf = bytearray()
        self.imports = {}
        self.externs = {}
        self.pools = {}
        self.guards = None
        self.parent = None
        self._c = None
        self.grads = {}     # after: the C tape never frees them
        self.limit = -1
        self.array_limit = -1

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


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# which scratch Tape.scratch reads (ad_entry_scratch)
ADJ, TAN, DADJ = 0, 1, 2


def _seed_arguments(idx, seeds):
    """(count, entries, scalar seeds, seed arrays) for the C sweeps: a seed
    is a number (every element of its entry) or an array."""
    if all(s.__class__ is float for s in seeds):    # derivatives of a scalar
        return (len(idx), ffi.new("int64_t[]", idx), ffi.new("double[]", seeds),
                ffi.NULL)
    arrays = [np.ascontiguousarray(s, dtype=np.float64) if np.ndim(s) else None
              for s in seeds]
    scalars = [0.0 if a is not None else float(s) for a, s in zip(arrays, seeds)]
    buffers = [ffi.from_buffer("double[]", a) if a is not None and a.size
               else ffi.NULL for a in arrays]
    return (len(idx), ffi.new("int64_t[]", list(idx)),
            ffi.new("double[]", scalars), ffi.new("double *[]", buffers))


_CONST_OPS = {_core.OPS[k] for k in ("ADDC", "MULC", "DIVC", "RSUBC", "RDIVC",
                                    "POWC", "RPOWC")}


@contextlib.contextmanager
def holding(tapes):
    """The locks of these tapes, taken in one order (by id), so that two
    threads taking several never wait for each other."""
    with contextlib.ExitStack() as stack:
        for tape in sorted(tapes, key=id):
            stack.enter_context(tape.lock)
        yield


def current_tape():
    """The tape this thread records on (the innermost explicit one, else the
    thread's own, created on first use)."""
    return state.refresh()


def recording_tape():
    """The tape operations record on now, or NO_GRAD."""
    if state.rec is None:
        state.refresh()
    return state.rec


class no_grad:
    """``with ad.no_grad():`` computes without recording."""

    def __enter__(self):
        state.no_grad += 1
        state.refresh()
        return self

    def __exit__(self, *exc):
        state.no_grad -= 1
        state.refresh()
        return False


class detect_anomaly:
    """``with ad.detect_anomaly():`` the first operation or backward step that
    produces a NaN or infinity raises FloatingPointError naming it."""

    def __enter__(self):
        state.anomaly += 1
        current_tape()._update_limit()
        return self

    def __exit__(self, *exc):
        state.anomaly -= 1
        current_tape()._update_limit()
        return False
