"""NumPy calls on Arrays: ``np.exp(a)``, ``ndarray * a``, ``np.sum(a, axis=0)``
and friends are recorded like the equivalent pyautodiff calls; a NumPy
function with no derivative rule here raises TypeError naming it."""
import numpy as np

from . import array as _array
from .array import Array
from .value import REFLECTED, Value

_BINARY_UFUNCS = {np.add: "__add__", np.subtract: "__sub__",
                  np.multiply: "__mul__", np.divide: "__truediv__",
                  np.power: "__pow__"}
_UNARY_UFUNCS = {np.negative: "__neg__", np.absolute: "__abs__", np.exp: "exp",
                 np.log: "log", np.tanh: "tanh", np.sin: "sin", np.cos: "cos",
                 np.sqrt: "sqrt"}
_OTHER_UFUNCS = {np.maximum: _array.maximum, np.minimum: _array.minimum,
                 np.matmul: _array.matmul,
                 # comparisons: masks of 1.0/0.0, recorded, no gradient
                 np.less: lambda x, y: _array._binary_op("LT", x, y),
                 np.less_equal: lambda x, y: _array._binary_op("LE", x, y),
                 np.greater: lambda x, y: _array._binary_op("LT", y, x),
                 np.greater_equal: lambda x, y: _array._binary_op("LE", y, x),
                 np.equal: lambda x, y: _array._binary_op("EQ", x, y),
                 np.not_equal: lambda x, y: _array._binary_op("NE", x, y)}


def _binary(name, x, y):
    if isinstance(x, (Array, Value)):
        out = getattr(x, name)(y)
        if out is not NotImplemented:
            return out
    return getattr(y, REFLECTED[name])(x)


def _operands(inputs):
    """NumPy scalars as Python numbers (an int64 stays an int, as micrograd
    sees it); with a Value and no Array among the inputs, ndarrays as
    constant Arrays (a Value is then a 0-d array operand)."""
    out = [x.item() if isinstance(x, np.generic) or
           (isinstance(x, np.ndarray) and x.ndim == 0) else x for x in inputs]
    if not any(isinstance(x, Array) for x in out):
        out = [_array._constant(x) if isinstance(x, (np.ndarray, list)) else x
               for x in out]
    return out


def _no_rule(what):
    return TypeError(f"pyautodiff has no derivative rule for numpy.{what}; "
                     "use ad.custom_op to give it one")


def apply_ufunc(ufunc, method, inputs, kwargs):
    if method != "__call__" or kwargs.get("out") is not None:
        raise _no_rule(f"{ufunc.__name__}.{method}" if method != "__call__"
                       else f"{ufunc.__name__} with out=")
    inputs = _operands(inputs)
    if ufunc in _BINARY_UFUNCS:
        return _binary(_BINARY_UFUNCS[ufunc], *inputs)
    if ufunc in _UNARY_UFUNCS:
        return getattr(inputs[0], _UNARY_UFUNCS[ufunc])()
    if ufunc in _OTHER_UFUNCS:
        return _OTHER_UFUNCS[ufunc](*inputs)
    raise _no_rule(ufunc.__name__)


def _reduction(name):
    def reduce(a, axis=None, keepdims=False, **kwargs):
        if kwargs.get("out") is not None:
            raise _no_rule(f"{name} with out=")
        return getattr(_array._asarray(a), name)(axis=axis, keepdims=keepdims)
    return reduce


def _dot(a, b):
    if np.ndim(_array._plain(a)) == 0 or np.ndim(_array._plain(b)) == 0:
        return _binary("__mul__", *_operands([a, b]))    # NumPy multiplies
    if np.ndim(_array._plain(a)) > 2 or np.ndim(_array._plain(b)) > 2:
        raise _no_rule("dot of arrays with more than 2 dimensions (use matmul)")
    return _array.matmul(a, b)


_FUNCTIONS = {
    np.sum: _reduction("sum"), np.mean: _reduction("mean"),
    np.max: _reduction("max"), np.min: _reduction("min"),
    np.amax: _reduction("max"), np.amin: _reduction("min"),
    np.dot: _dot, np.matmul: _array.matmul,
    np.reshape: lambda a, shape, **kw: _array.reshape(a, shape),
    np.transpose: lambda a, axes=None: _array.transpose(a, axes),
    np.expand_dims: _array.expand_dims, np.squeeze: _array.squeeze,
    np.concatenate: lambda arrays, axis=0: _array.concatenate(arrays, axis),
    np.stack: lambda arrays, axis=0: _array.stack(arrays, axis),
    np.where: _array.where, np.clip: _array.clip,
    np.maximum: _array.maximum, np.minimum: _array.minimum,
    # decisions: Python bools, guards inside ad.record
    np.any: lambda a, axis=None, **kw: _decision(a, "any", axis, kw),
    np.all: lambda a, axis=None, **kw: _decision(a, "all", axis, kw),
}


def _decision(a, name, axis, kwargs):
    if axis is not None or kwargs:
        raise _no_rule(f"{name} with axis or other arguments")
    return getattr(_array._asarray(a), name)()


def apply_function(func, args, kwargs):
    fn = _FUNCTIONS.get(func)
    if fn is None:
        raise _no_rule(func.__name__)
    return fn(*args, **kwargs)
