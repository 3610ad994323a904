"""NumPy for autograd programs (``import pyautodiff.autograd.numpy as np``).

pyautodiff's Arrays take part in NumPy's own dispatch (``__array_ufunc__``,
``__array_function__``), so this module is NumPy itself, plus what that
dispatch cannot reach: ``np.array([x, y])`` of traced numbers builds a
traced array (autograd programs write this often), and so do ``np.r_[a, b]``
and ``np.c_[a, b]`` of traced pieces, and the reductions of a list holding
traced values (``np.std([x, x + 2])``); and ``msort``, which autograd has
and NumPy 2 has not.  Called on plain
inputs, every function here returns exactly what NumPy returns, so the
module's own helpers keep private names: a public one would shadow NumPy's
(an imported ``stack`` returns an Array even for ndarrays, and so would
turn a plain call of a loss into an Array).
"""
import builtins as _builtins

import numpy as _np
from numpy import *          # noqa: F401,F403  NumPy's namespace
from . import fft, linalg, random  # noqa: F401  (as packages: import ...numpy.random)

from ...array import Array as _Array, stack as _stack
from ...value import Value as _Value

# from here on, NumPy's names (any, sum, max ...) shadow the builtins


def _traced(obj):
    if isinstance(obj, (_Value, _Array)):
        return True
    if isinstance(obj, (list, tuple)):
        return _builtins.any(_traced(e) for e in obj)   # not numpy's any
    return False


def _stacked(obj):
    if isinstance(obj, (list, tuple)):
        return _stack([_stacked(e) for e in obj])
    return obj


def array(obj, *args, **kwargs):
    """numpy.array, or for a (nested) list holding Values or Arrays, the
    traced array they stack into."""
    if _traced(obj):
        return _stacked(obj)
    return _np.array(obj, *args, **kwargs)


# np.r_[a, b] and np.c_[a, b] of traced pieces: one traced Array (NumPy's
# own r_ and c_ are objects that no dispatch reaches)
from ...numpy_shapes import r_, c_  # noqa: E402,F811


# NumPy's reductions, scans and sorts of a list or tuple holding traced
# values (np.std([x, x + 2]), np.mean((a, b), axis=0)): stacked into one
# traced Array first, as autograd programs expect.  NumPy itself (which
# does not dispatch on a list) reduces an object array of them element by
# element, and makes a whole reduction's result a float; on plain inputs
# these are NumPy's own functions.
def _stacking_first(numpy_fn):
    def fn(a, *args, **kwargs):
        return numpy_fn(_stacked(a) if _traced(a) else a, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = numpy_fn.__name__
    fn.__doc__ = numpy_fn.__doc__
    return fn


for _name in ("sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin",
              "ptp", "average", "median", "nansum", "nanmean", "cumsum",
              "cumprod", "diff", "gradient", "sort", "partition"):
    globals()[_name] = _stacking_first(getattr(_np, _name))


def msort(a):
    """a sorted along its first axis: NumPy's msort before NumPy 2 removed
    it (autograd programs call it), np.sort(a, axis=0)."""
    return sort(a, axis=0)
