"""Tapes within tapes: a value of an enclosing tape, another thread's or a
derivative's used here becomes a leaf of this tape (adopt), and explicit
tapes are entered and left (``with ad.Tape():``) on the thread's stack."""
import contextlib
from _thread import get_ident

from ._core import TapeError
from .detach import DIFFERENTIATING
from .tape_state import _Marker, current_tape, state


class _ThreadHooks:
    """threads.py's functions (threads inside a derivative), which record
    operations and so import the modules that import this one and
    trace.py: it installs them here when pyautodiff is imported."""
    join = transplant = tracing = lift = release_joined = None


thread_hooks = _ThreadHooks()


class Nesting:
    """Tape's imports from other tapes and its place on the thread's stack."""

    __slots__ = ()

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
