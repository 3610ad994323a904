"""NumPy for autograd programs (``import pyautodiff.autograd.numpy as np``).

pyautodiff's Arrays take part in NumPy's own dispatch (``__array_ufunc__``,
``__array_function__``), so this module is NumPy itself, plus what that
dispatch cannot reach: ``np.array([x, y])`` of traced numbers builds a
traced array (autograd programs write this often), and so do ``np.r_[a, b]``
and ``np.c_[a, b]`` of traced pieces; every function and ufunc takes lists
of traced numbers where NumPy takes lists of numbers (``np.mean([x, y])``,
see _lists.py); and ``msort``, which autograd has and NumPy 2 has not.
Called on plain
inputs, every function here returns exactly what NumPy returns, so the
module's own helpers keep private names: a public one would shadow NumPy's
(an imported ``stack`` returns an Array even for ndarrays, and so would
turn a plain call of a loss into an Array).
"""
import builtins as _builtins
import inspect as _inspect

import numpy as _np
from numpy import *          # noqa: F401,F403  NumPy's namespace
from . import fft, linalg, random  # noqa: F401  (as packages: import ...numpy.random)

from ._lists import _holds_traced, lift_namespace as _lift_namespace, \
    lifting as _lifting, stacked as _stacked

# from here on, NumPy's names (any, sum, max ...) shadow the builtins


def array(A, *args, **kwargs):
    """numpy.array, or for a (nested) list holding Values or Arrays, the
    traced array they stack into."""
    if _holds_traced(A):
        return _stacked(A)
    return _np.array(A, *args, **kwargs)


def asarray(a, *args, **kwargs):
    """numpy.asarray, or for a (nested) list holding Values or Arrays, the
    traced array they stack into (a traced value itself is returned as it
    is)."""
    if isinstance(a, (list, tuple)) and _holds_traced(a):
        return _stacked(a)
    if _holds_traced(a) and not args and kwargs.get("dtype") is None:
        return a                    # autograd's asarray of a box is the box
    return _np.asarray(a, *args, **kwargs)


asarray.__signature__ = _inspect.signature(_np.asarray)   # (it takes np.asarray's arguments)

# np.r_[a, b] and np.c_[a, b] of traced pieces: one traced Array (NumPy's
# own r_ and c_ are objects that no dispatch reaches)
from ...numpy_shapes import r_, c_  # noqa: E402,F811


def where(condition, *args, **kwargs):
    """numpy.where, which also takes x and y by keyword as autograd's does
    (NumPy's takes them by position only)."""
    if len(args) > 2:
        raise TypeError(f"where() takes at most 3 arguments ({len(args) + 1} given)")
    chosen = dict(zip(("x", "y"), args))
    for name, value in kwargs.items():
        if name not in ("x", "y"):
            raise TypeError(f"where() got an unexpected keyword argument {name!r}")
        if name in chosen:
            raise TypeError(f"where() got multiple values for argument {name!r}")
        chosen[name] = value
    if len(chosen) == 1:
        raise ValueError("either both or neither of x and y should be given")
    return _np.where(condition, *(chosen[name] for name in ("x", "y") if name in chosen))


def make_diagonal(D, offset=0, axis1=0, axis2=1):
    """autograd's complement of np.diagonal: an array with one more
    dimension whose diagonal along axes axis1 and axis2 is D (the last axis
    of D), zero elsewhere, so that np.diagonal(make_diagonal(D, 0, a1, a2),
    0, a1, a2) is D."""
    if offset != 0:
        raise NotImplementedError("make_diagonal: only the main diagonal (offset=0)")
    D = asarray(D)
    nd = ndim(D) + 1
    if nd == 1:
        raise ValueError("make_diagonal: D must have at least one dimension")
    if not (-nd <= axis1 < nd and -nd <= axis2 < nd):
        raise _np.exceptions.AxisError(f"make_diagonal: axes {axis1}, {axis2} out of "
                                       f"bounds for a result of {nd} dimensions")
    a1, a2 = axis1 % nd, axis2 % nd
    if a1 == a2:
        raise ValueError("make_diagonal: axis1 and axis2 cannot be the same")
    square = D[..., None] * eye(shape(D)[-1])
    return moveaxis(square, [-2, -1], [a1, a2])


# every NumPy function and ufunc here takes lists of traced numbers (_lists.py)
_lift_namespace(globals(), [name for name in dir(_np) if not name.startswith("_")])
where = _lifting(where)


# NumPy's reductions, scans and sorts read their first argument as one
# array, and their dispatchers do not look into a list: a list holding
# traced Arrays there (np.std([x, x + 2]) of Arrays x) is stacked too, where
# _lists leaves a sequence of arrays to NumPy's dispatch (concatenate's)
def _one_array_first(lifted, numpy_fn):
    def fn(a, *args, **kwargs):
        if isinstance(a, (list, tuple)) and _holds_traced(a):
            a = _stacked(a)
        return lifted(a, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = numpy_fn.__name__
    fn.__doc__ = numpy_fn.__doc__
    fn.__wrapped__ = numpy_fn
    return fn


for _name in ("sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin",
              "ptp", "average", "median", "nansum", "nanmean", "cumsum",
              "cumprod", "diff", "gradient", "sort", "partition"):
    globals()[_name] = _one_array_first(globals()[_name], getattr(_np, _name))


def msort(a):
    """a sorted along its first axis: NumPy's msort before NumPy 2 removed
    it (autograd programs call it), np.sort(a, axis=0)."""
    return sort(a, axis=0)
