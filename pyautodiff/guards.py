"""Decisions taken on recorded values: a Python bool, int or list made from
a Value's or an Array's numbers (if x > 0, int(a), a.tolist()).  Inside
ad.record each one is a guard, so that a replay where the values decide
otherwise raises BranchError instead of reusing the recorded choice."""
from .tape_state import DETACHED, NO_GRAD
from .value import Value


class BranchError(RuntimeError):
    """A replay reached a decision (a comparison, a truth value, a boolean
    mask) that goes the other way than when the function was recorded, or
    a number the function took out of a traced value (x.item()) that is
    not what it was."""


def takes_guards(a):
    """Is a (an Array or a Value) recorded by ad.record, which keeps guards?"""
    t = a._t
    return t is not NO_GRAD and t is not DETACHED and not t.closed and \
        t.guards is not None and a._i >= 0


def decide(a, result, what):
    """result, a decision taken on the values of a (an Array, or a Value):
    inside ad.record a guard, so a replay where they differ raises
    BranchError."""
    if takes_guards(a):
        kind, expected = ("a Value", a._d) if isinstance(a, Value) \
            else ("an Array", a._d.copy())
        a._t.guard(a, expected, f"{what} of {kind} (recorded as {result})")
    return result
