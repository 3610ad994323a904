"""A tape's sweeps: reverse (and on to the tapes it imported from),
tangent, second order, micrograd's single steps, and their scratch."""
import numpy as np

from . import _core, buffers
from ._core import ffi, lib
from .tape_state import state

# which scratch Tape.scratch reads (ad_entry_scratch)
ADJ, TAN, DADJ = 0, 1, 2


class Sweeps:
    """Tape's sweeps."""

    __slots__ = ()

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
