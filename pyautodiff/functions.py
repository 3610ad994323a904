"""Module-level math: ``ad.exp(x)`` and friends, one for each row of the op
table (ops.py) that names a function, and the reductions.

A Value or Array gives a recorded Value or Array; a plain number or
ndarray gives NumPy's result, so the same function serves differentiated
and plain code.
"""
import numpy as np

from . import ops
from .array import NUMPY_UNARY, Array, unary_function
from .value import Traced, Value


def _make(name, method):
    numpy_fn = NUMPY_UNARY[method]

    def otherwise(x):
        if isinstance(x, (Value, Array)):       # a subclass
            return getattr(x, method)()
        return numpy_fn(x)

    # the recording method by exact class (the common cases, looked up once;
    # a traced scalar is what ad.grad & co. pass)
    fn = unary_function(name, {Array: getattr(Array, method, None),
                               Value: getattr(Value, method, None),
                               Traced: getattr(Traced, method, None)}, otherwise)
    if fn is None:
        return None
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


def _elementwise():
    """ad.abs, ad.exp ...: the rows' functions.  (A row newer than the
    generated code has none until `python -m pyautodiff.codegen` runs:
    tests/test_codegen.py fails, and the package still imports, for the
    generator.)"""
    made = {}
    for op in ops.ELEMENTWISE:
        if op.function:
            fn = _make(op.function, op.method)
            if fn is not None:
                made[op.function] = fn
    return made


_FUNCTIONS = _elementwise()
globals().update(_FUNCTIONS)
# the names of the elementwise functions, for pyautodiff.__all__
ELEMENTWISE = tuple(_FUNCTIONS)

__all__ = list(ELEMENTWISE) + ["sum", "mean", "max", "min", "stop_gradient"]


def stop_gradient(x):
    """x's value with no derivative through it (JAX's stop_gradient): the
    way to detach a traced value on purpose, where float(x) would raise
    DetachError.  A Value or Array gives an entry of the tape that a replay
    recomputes (so a recording stays valid at other inputs) and that every
    derivative treats as a constant; lists, tuples and dicts are mapped;
    a plain number or ndarray is returned as it is."""
    if isinstance(x, (Value, Array)):
        return x._step("STOP")
    if isinstance(x, (list, tuple)):
        return type(x)(stop_gradient(v) for v in x)
    if isinstance(x, dict):
        return {k: stop_gradient(v) for k, v in x.items()}
    return x
