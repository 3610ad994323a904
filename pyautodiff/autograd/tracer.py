"""autograd.tracer: the names of it that programs import.

``primitive`` and ``notrace_primitive`` are autograd.extend's.  The boxes
are pyautodiff's traced values (Values and Arrays): ``isbox(x)`` says
whether x is one, and ``getval(x)`` is its plain number (a float or an
ndarray; anything else as it is), as autograd's getval unboxes.  The
tracing machinery itself (trace, Node, Box, new_box) is not there.
"""
from .extend import _plain, _traced, notrace_primitive, primitive

__all__ = ["primitive", "notrace_primitive", "getval", "isbox"]


def isbox(x):
    return _traced(x)


def getval(x):
    return _plain(x)
