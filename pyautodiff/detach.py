"""A traced value made a plain number: DetachError, and the tests of
whether a value is traced (differentiated) and carries a derivative
(moves)."""
import contextlib
import weakref

from . import _core
from .tape_state import _Marker, state


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
    if t is None or t.__class__ is _Marker or t.closed:
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
