"""Which tape each thread records on: the thread's state (its own tape, the
explicit tapes entered, no_grad and detect_anomaly), and the markers that
stand for "no tape".

Tape state is per thread (``threading.local``): each thread records on its
own tape, made on first use; ``with Tape():`` pushes an explicit one,
``no_grad()`` stops recording, ``detect_anomaly()`` checks every result.
"""
import contextlib
import threading


def new_tape():
    """A new Tape: tape.py installs its class here (it imports this module)."""
    raise RuntimeError("pyautodiff.tape is not imported")


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
            self.default = new_tape()
        tape = self.stack[-1] if self.stack else self.default
        self.rec = NO_GRAD if self.no_grad else tape
        return tape


state = _ThreadState()


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
