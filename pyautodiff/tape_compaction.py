"""A tape's compaction: memory reclaimed from the entries nothing refers to.

A node that only the tape refers to (its reference count says so) and that
no such referenced node depends on is dropped from both ``nodes`` and the C
tape, and the survivors are renumbered.  Values hold no references to each
other (``_prev`` is read from the tape), so the reference count is exact;
micrograd's nodes of the user's own, which do (children, a closure as
derivative rule), are accounted for apart (``_kept_with_rules``).
Compaction runs when the tape has doubled since the last one, so its cost
per recorded operation stays bounded.
"""
import itertools
import sys

import numpy as np

from . import _core
from ._core import ffi, lib
from .tape_buffer import RECORD_SHIFT, SPILL_EVERY

COMPACT_MIN = 1 << 16      # entries a tape may grow by before a compaction
COMPACT_MIN_ELEMENTS = 1 << 18   # ... and array elements (2 MiB of values)
# Array elements recorded per entry of the tape before a compaction, so
# that compacting a tape of many entries stays cheap per element.
COMPACT_ELEMENTS_PER_ENTRY = 16
# ... and at least this many more when an explicit tape's block ends (512
# KiB of values: a compaction costs some 20 µs of Python however small the
# tape, a tenth of a step on arrays of 10,000 elements if made every step)
RELEASE_COMPACT_ELEMENTS = 1 << 16


def _refcount_base():
    # What sys.getrefcount reports, mapped over a list, for an object only
    # the list refers to.
    return next(map(sys.getrefcount, [object()]))


_BASE_REFS = _refcount_base()


def _array_elements(node):
    """The number of an Array's values; a small result's are counted from
    its pool, without viewing its row."""
    pool = node._p
    return pool.size if pool else node._v.size


class Compaction:
    """Tape's compaction (see the module's docstring)."""

    __slots__ = ()

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
