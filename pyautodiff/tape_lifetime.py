"""A tape's end: released (its Values keep their gradients) or discarded."""
from . import _core, buffers
from ._core import TapeError, ffi, lib
from .tape_compaction import COMPACT_ELEMENTS_PER_ENTRY, RELEASE_COMPACT_ELEMENTS


class Lifetime:
    """Tape's release."""

    __slots__ = ()

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
