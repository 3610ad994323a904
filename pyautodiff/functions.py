"""Module-level math: ``ad.exp(x)`` and friends.

A Value or Array gives a recorded Value or Array; a plain number or
ndarray gives NumPy's result, so the same function serves differentiated
and plain code.
"""
import numpy as np

from .array import NUMPY_UNARY, Array, unary_function
from .value import Traced, Value


def _make(name):
    method = "__abs__" if name == "abs" else name
    numpy_fn = NUMPY_UNARY[method]

    def otherwise(x):
        if isinstance(x, (Value, Array)):       # a subclass
            return getattr(x, method)()
        return numpy_fn(x)

    # the recording method by exact class (the common cases, looked up once;
    # a traced scalar is what ad.grad & co. pass)
    fn = unary_function(name, method, {Array: getattr(Array, method),
                                       Value: getattr(Value, method),
                                       Traced: getattr(Traced, method)}, otherwise)
    fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__doc__ = (f"{name}(x): a recorded Value for a Value, else NumPy's "
                  f"{name} of x.")
    return fn


def _reduction(name):
    numpy_fn = getattr(np, name)

    def fn(a, axis=None, keepdims=False):
        if isinstance(a, Array):
            return getattr(a, name)(axis=axis, keepdims=keepdims)
        return numpy_fn(a, axis=axis, keepdims=keepdims)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name}(a, axis=None, keepdims=False): recorded for an "
                  f"Array, else NumPy's {name}.")
    return fn


sum = _reduction("sum")
mean = _reduction("mean")
max = _reduction("max")
min = _reduction("min")

abs = _make("abs")
cos = _make("cos")
exp = _make("exp")
log = _make("log")
relu = _make("relu")
sigmoid = _make("sigmoid")
sin = _make("sin")
sqrt = _make("sqrt")
tanh = _make("tanh")

