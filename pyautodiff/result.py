"""The result of ``ad.minimize`` (scipy's OptimizeResult where scipy is
importable, for every method; the class here, with the same fields read as
attributes, without it) and scipy's rule for a callback's form, shared by
minimize.py and ipopt.py."""
import inspect

import numpy as np


class OptimizeResult(dict):
    """ad.minimize's result where scipy is not importable, with scipy's
    field names, read as attributes: x, fun, jac, nit, status, success,
    message (and each method's own: nfev and njev; multipliers ...)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    __setattr__ = dict.__setitem__

    def __repr__(self):
        width = max(map(len, self)) + 1
        return "\n".join(f"{k:>{width}}: {_short(v)}" for k, v in self.items())

    def __dir__(self):
        return list(self)


def _short(v):
    if isinstance(v, np.ndarray):
        return np.array2string(v, threshold=8, edgeitems=3)
    return repr(v)


def optimize_result(**fields):
    """A result of ad.minimize: scipy's OptimizeResult where scipy is
    importable, so that every method (scipy's, 'lbfgs', 'ipopt') returns
    the one type; the class above where it is not ('lbfgs' needs no
    scipy)."""
    try:
        from scipy.optimize import OptimizeResult as result_class
    except ImportError:
        result_class = OptimizeResult
    return result_class(**fields)


def takes_intermediate_result(callback):
    # scipy's rule: a callback whose one parameter has this name gets an
    # OptimizeResult, any other gets x
    try:
        return set(inspect.signature(callback).parameters) == {"intermediate_result"}
    except (TypeError, ValueError):
        return False
