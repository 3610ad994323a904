"""NumPy for autograd programs (``import pyautodiff.autograd.numpy as np``).

pyautodiff's Arrays take part in NumPy's own dispatch (``__array_ufunc__``,
``__array_function__``), so this module is NumPy itself, plus what that
dispatch cannot reach: ``np.array([x, y])`` of traced numbers builds a
traced array (autograd programs write this often), and so do ``np.r_[a, b]``
and ``np.c_[a, b]`` of traced pieces.  Called on plain
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
