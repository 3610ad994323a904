"""A tape's gradients and entries as Python reads and writes them: Values'
grads, Arrays' gradient blocks (lent to NumPy), flags, assigned values."""
import numpy as np

from . import _core, buffers
from ._core import ffi, lib
from .tape_buffer import _LEAF


class GradientStore:
    """Tape's reads and writes of gradients, flags and values."""

    __slots__ = ()

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
