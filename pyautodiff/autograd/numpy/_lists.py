"""Lists of traced numbers as arguments of the drop-in's NumPy functions.

NumPy's dispatch (``__array_function__``, ``__array_ufunc__``) looks at the
arguments themselves and at the arrays in a sequence argument, never at
the numbers inside a list: ``np.mean([x, x + 2])`` with a traced x would
make an object array and lose the derivative.  autograd programs write
that, so the drop-in's functions stack such a list into one traced Array
first, as ``np.array([x, y])`` does, and then call NumPy's function, which
dispatches.  Plain arguments go straight to NumPy: the same result, to the
bit and the type.
"""
import builtins
import functools

import numpy as np

from ...array import Array, stack
from ...complex_array import ComplexArray, is_complex
from ...value import Value

_TRACED = (Value, Array, ComplexArray)


def _holds_traced(obj):
    if isinstance(obj, _TRACED):
        return True
    if isinstance(obj, (list, tuple)):
        return builtins.any(_holds_traced(e) for e in obj)
    return False


def stacked(obj):
    """A (nested) list or tuple of numbers, Values and Arrays as one Array
    (of complex ones, one ComplexArray)."""
    if isinstance(obj, (list, tuple)):
        parts = [stacked(e) for e in obj]
        return np.stack(parts) if builtins.any(map(is_complex, parts)) else stack(parts)
    return obj


def _lifted(arg):
    """arg, or the traced Array(s) NumPy would have made of it."""
    if not isinstance(arg, (list, tuple)) or not _holds_traced(arg):
        return arg
    if builtins.any(isinstance(e, (Array, ComplexArray)) for e in arg):
        return arg              # a sequence of arrays: NumPy dispatches on it
    try:
        return stacked(arg)
    except ValueError:          # ragged: a sequence of array-likes (concatenate's)
        return type(arg)(_lifted(e) if isinstance(e, (list, tuple)) else e for e in arg)


def _lift_all(args, kwargs):
    return ([_lifted(a) for a in args], {k: _lifted(v) for k, v in kwargs.items()})


def _needs_lifting(args, kwargs):
    return builtins.any(isinstance(a, (list, tuple)) and _holds_traced(a)
                        for a in (*args, *kwargs.values()))


def lifting(fn):
    """fn, taking (nested) lists of traced numbers as NumPy takes lists of
    numbers."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _needs_lifting(args, kwargs):
            args, kwargs = _lift_all(args, kwargs)
        return fn(*args, **kwargs)
    return call


class LiftingUfunc:
    """A NumPy ufunc whose call and methods (reduce, accumulate, outer ...)
    take lists of traced numbers; every other attribute is the ufunc's."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__wrapped__ = ufunc        # (its signature is the ufunc's)
        self.__name__ = ufunc.__name__
        self.__doc__ = ufunc.__doc__

    def __call__(self, *args, **kwargs):
        if _needs_lifting(args, kwargs):
            args, kwargs = _lift_all(args, kwargs)
        return self._ufunc(*args, **kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        return lifting(attr) if callable(attr) else attr

    def __repr__(self):
        return repr(self._ufunc)


def lift_namespace(namespace, names):
    """Replace the NumPy functions and ufuncs among names in namespace (a
    module's globals) by their lifting forms."""
    for name in names:
        obj = namespace.get(name)
        if isinstance(obj, np.ufunc):
            namespace[name] = LiftingUfunc(obj)
        elif type(obj).__name__ == "_ArrayFunctionDispatcher":
            namespace[name] = lifting(obj)
