"""NumPy calls on Arrays: ``np.exp(a)``, ``ndarray * a``, ``np.sum(a, axis=0)``
and friends are recorded like the equivalent pyautodiff calls; those that
need no derivative (``np.shape``, ``np.isnan``, ``np.argmax``, ``np.floor``
...) give NumPy's own result; a NumPy function with no derivative rule
here raises TypeError naming it."""
import sys

import numpy as np

from . import array as _array, linalg, numpy_elementwise, numpy_shapes, products
from . import complex_array, fourier, numpy_reductions
from . import scipy_own, scipy_special
from .array import Array
from .complex_array import ComplexArray, is_complex
from .guards import decide as _decide, takes_guards
from .matmul import matmul
from .ops import ELEMENTWISE, REFLECTED
from .detach import differentiated, refuse_detached
from .value import Value, stepped

# NumPy's ufunc of each operator and unary method of the op table's: the
# method records it (the ops whose NumPy function is no ufunc, relu and
# sigmoid, NumPy cannot dispatch)
_BINARY_UFUNCS = {op.numpy: op.method for op in ELEMENTWISE if op.reflected}
_UNARY_UFUNCS = {op.numpy: op.method for op in ELEMENTWISE
                 if op.method and not op.reflected and isinstance(op.numpy, np.ufunc)}
_OTHER_UFUNCS = {np.maximum: _array.maximum, np.minimum: _array.minimum,
                 np.matmul: matmul,
                 # comparisons: masks of 1.0/0.0, recorded, no gradient
                 np.less: lambda x, y: _array.comparison("LT", x, y),
                 np.less_equal: lambda x, y: _array.comparison("LE", x, y),
                 np.greater: lambda x, y: _array.comparison("LT", y, x),
                 np.greater_equal: lambda x, y: _array.comparison("LE", y, x),
                 np.equal: lambda x, y: _array.comparison("EQ", x, y),
                 np.not_equal: lambda x, y: _array.comparison("NE", x, y),
                 # ndarray & mask ...: the mask's logical operators
                 np.bitwise_and: lambda x, y: _logical("__and__", x, y),
                 np.bitwise_or: lambda x, y: _logical("__or__", x, y),
                 np.bitwise_xor: lambda x, y: _logical("__xor__", x, y),
                 np.invert: lambda x: _logical("__invert__", x),
                 np.remainder: lambda x, y: _remainder(x, y),
                 np.fmod: lambda x, y: _remainder(x, y, "numpy.fmod"),
                 np.divmod: lambda x, y: (np.floor_divide(x, y), _remainder(x, y))}
_OTHER_UFUNCS.update(numpy_elementwise.NUMPY_UFUNCS)
_OTHER_UFUNCS = scipy_special.with_scipy_ufuncs(_OTHER_UFUNCS)


def _remainder(x, y, name="numpy.remainder"):
    """np.remainder (x % y) and np.fmod of Arrays: NumPy's values,
    differentiated as x - q*y with q the integer quotient (floor(x/y) for
    remainder, trunc(x/y) for fmod), a step function of x and y and so a
    constant: the derivative is 1 in x and -q in y, as HIPS autograd's.
    Inside ad.record the traced operands are guarded (q depends on them)."""
    xv, yv = (np.asarray(_array._plain(v), dtype=np.float64) for v in (x, y))
    r = (np.fmod if name == "numpy.fmod" else np.remainder)(xv, yv)
    with np.errstate(all="ignore"):
        q = np.round((xv - r) / yv)     # an integer, exactly: x - r is q*y
    q = np.where(np.isfinite(q), q, 0.0)
    for v in _traced([x, y]):
        _decide(v, r, name)
    # q*y only where q is not 0: 0 * inf would be NaN there
    with np.errstate(all="ignore"):
        qy = q * (y if isinstance(y, (Array, Value)) else yv)
    if not q.all():
        qy = np.where(q != 0.0, qy, 0.0)
    out = x - qy
    if not isinstance(out, (Array, Value)):     # (x a constant, q*y a 0)
        return _array._constant_result(r)
    # the recorded x - q*y may differ from r in its last bits, and is not r
    # where r is not finite: a constant makes the values NumPy's
    with np.errstate(all="ignore"):
        shift = r - _array._plain(out)
    finite = np.isfinite(r)
    if finite.all():
        return out + shift if shift.any() else out
    # where r is not finite (x infinite, y 0 or NaN), NumPy's r, no gradient
    return _array.where(finite, out + np.where(finite, shift, 0.0), r)


def _logical(name, x, *other):
    """A logical operator (symmetric) of a mask, whichever side it is on."""
    if other and not _array.is_mask(x):
        x, other = other[0], (x,)
    if not _array.is_mask(x):
        raise TypeError(f"{name.strip('_')} of an Array that is not a mask "
                        "(a comparison's result): an Array holds real numbers")
    return getattr(x, name)(*other)


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


def _public_name(fn):
    """fn's name with its public module: numpy.linalg.norm, scipy.special.expit."""
    module = getattr(fn, "__module__", None)
    if module is None:            # a ufunc: NumPy's or SciPy's
        special = sys.modules.get("scipy.special")
        module = "scipy.special" if special is not None and \
            getattr(special, fn.__name__, None) is fn else "numpy"
    public = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        public.append(part)
    # an ndarray method (astype, tolist) by its class: numpy.ndarray.tolist
    name = getattr(fn, "__qualname__", fn.__name__) if \
        getattr(fn, "__objclass__", None) is np.ndarray else fn.__name__
    return ".".join(public + [name])


def _no_rule(what):
    return TypeError(f"pyautodiff has no derivative rule for {what}; "
                     "use ad.custom_op to give it one")


def _in_place(what):
    return TypeError(f"{what} writes into an ndarray (out=, or an in-place "
                     "operator such as ndarray += Array): in-place NumPy "
                     "operations on an ndarray cannot record a derivative; "
                     "write `x = x + a` instead of `x += a`")


# -- functions that need no derivative (HIPS autograd's nograd functions) ----
# Queries whose answer does not depend on the values: NumPy's, no guard.
_QUERIES = frozenset({np.shape, np.ndim, np.size, np.result_type,
                      np.iscomplexobj, np.isrealobj, np.isreal, np.iscomplex,
                      np.zeros_like, np.ones_like, np.imag})
# Integer- or bool-valued: NumPy's result on the values (plain ndarrays and
# Python values, exactly what NumPy returns).
_DISCRETE = frozenset({
    np.isnan, np.isfinite, np.isinf, np.isposinf, np.isneginf, np.signbit,
    np.logical_and, np.logical_or, np.logical_not, np.logical_xor,
    np.argmax, np.argmin, np.argsort, np.argpartition, np.argwhere,
    np.nonzero, np.flatnonzero, np.count_nonzero, np.searchsorted,
    np.digitize, np.array_equal, np.array_equiv, np.allclose, np.isclose})
# Float-valued and piecewise constant: a constant Array of NumPy's result
# (a zero derivative, as HIPS autograd gives them).
_PIECEWISE_CONSTANT = frozenset({np.sign, np.floor, np.ceil, np.rint,
                                 np.round, np.around, np.trunc, np.fix,
                                 np.floor_divide, np.heaviside, np.angle})


# Inside ad.record, a function of one Array that reads only where it is
# NaN, infinite or nonzero is guarded by masks of those, recorded on the
# tape (a replay recomputes them): the guard holds exactly while the result
# does.  Any other guards the values it read.
_INF = float("inf")
_NONZERO = lambda x: [x != 0.0]                 # noqa: E731
_INFINITE = lambda x: [x < _INF, -_INF < x]     # noqa: E731  (both 0: NaN)
_WITNESSES = {np.isnan: lambda x: [x != x], np.isinf: _INFINITE,
              np.isfinite: _INFINITE, np.isposinf: lambda x: [x == _INF],
              np.isneginf: lambda x: [x == -_INF], np.nonzero: _NONZERO,
              np.flatnonzero: _NONZERO, np.argwhere: _NONZERO,
              np.count_nonzero: _NONZERO}

_NO_DERIVATIVE_UFUNCS = frozenset(f for f in _DISCRETE | _PIECEWISE_CONSTANT
                                  if isinstance(f, np.ufunc))


def _values(x):
    """x with the values of the Values and Arrays in it (lists, tuples)."""
    if isinstance(x, (list, tuple)):
        return type(x)(_values(e) for e in x)
    return _array._plain(x)


def _traced(x):
    """The Values and Arrays in x (lists, tuples)."""
    if isinstance(x, (Array, Value)):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for e in x for t in _traced(e)]
    return []


def as_ndarray(a, dtype=None, copy=None):
    """np.asarray(a) of an Array (its __array__, with NumPy 2's arguments):
    the float64 ndarray of its values, a number taken out of the tape (in
    a recording, pinned: a guard on the values, as float(x) of a traced
    scalar is).  An Array that a derivative or a recording is tracing
    stays traced where no dtype is asked for: an object array of its
    elements (0-d Arrays), as np.array([x, y]) of traced scalars is one,
    so that np.array([a, b]) of traced Arrays records instead of silently
    cutting their derivatives off."""
    if _array.is_mask(a):               # no derivative: NumPy's bool array
        return _nondifferentiable(np.asarray, (a,), {"dtype": dtype})
    if dtype is None and differentiated(a):
        out = np.empty(a.shape, dtype=object)
        for index in np.ndindex(a.shape):
            out[index] = a[index] if a.ndim else a
        return out
    scipy_own.refuse(a, 2)     # SciPy's Python functions would drop its derivative
    refuse_detached(a, f"numpy.asarray(dtype={np.dtype(dtype).name})")
    values = _nondifferentiable(np.asarray, (a,), {"dtype": dtype})
    if values is not a._d:              # converted to another dtype
        if copy is False:
            raise ValueError(f"numpy.asarray(copy=False): an Array's float64 "
                             f"values cannot become {values.dtype} without a copy")
        return values
    return values.copy() if copy else values


# The piecewise-constant functions that are C ops (ops.STEPS): of one
# traced Array or Value, an entry of that op (no derivative, recomputed by a
# replay, so a recording stays valid wherever the values are); np.round's
# with decimals=0 only.
_STEP_OPS = {np.floor: "FLOOR", np.ceil: "CEIL", np.trunc: "TRUNC", np.fix: "TRUNC",
             np.rint: "RINT", np.sign: "SIGN", np.round: "RINT", np.around: "RINT"}


def _step_op(fn, args, kwargs):
    """The op of fn(*args, **kwargs) as a step entry (see _STEP_OPS), or
    None where the call is not one of them (other arguments, out=, ...)."""
    op = _STEP_OPS.get(fn)
    if op is None or len(args) != 1 or not isinstance(args[0], (Array, Value)):
        return None
    if fn in (np.round, np.around):
        if set(kwargs) - {"decimals"} or kwargs.get("decimals", 0) != 0:
            return None
    elif kwargs:
        return None
    return op


def _nondifferentiable(fn, args, kwargs):
    """fn's result on the values of its arguments.  It depends on them off
    the tape, so inside ad.record every Array or Value it read is a guard
    (a mask's values, when fn reads a mask; the masks of _WITNESSES where
    they tell all fn reads): a replay where they differ raises
    BranchError."""
    op = _step_op(fn, args, kwargs)
    if op is not None:
        x = args[0]
        if isinstance(x, Array):
            return x._step(op)
        result = fn(x._d)           # a Value's: NumPy's scalar, guarded
        stepped(x, op, _public_name(fn), integral=False)
        return result
    result = fn(*_values(args), **{k: _values(v) for k, v in kwargs.items()})
    traced = _traced(args) + _traced(list(kwargs.values()))
    if fn not in _QUERIES and any(map(takes_guards, traced)):
        guarded = traced
        if fn in _WITNESSES and len(traced) == 1 and args[0] is traced[0] \
                and isinstance(traced[0], Array):
            guarded = _WITNESSES[fn](traced[0])
        for x in guarded:
            _decide(x, result, _public_name(fn))
    if fn in _PIECEWISE_CONSTANT and any(isinstance(x, Array) for x in traced):
        return _array._constant_result(result)
    return result


def apply_ufunc(ufunc, method, inputs, kwargs):
    for x in inputs:
        if x.__class__ not in _REAL and is_complex(x):
            return _complex_ufunc(ufunc, method, inputs, kwargs)
    if (ufunc, method) in numpy_reductions.NUMPY_UFUNC_METHODS:     # np.add.reduce ...
        return numpy_reductions.NUMPY_UFUNC_METHODS[ufunc, method](*inputs, **kwargs)
    if method != "__call__" or kwargs.get("out") is not None:
        if method == "__call__" and ufunc in _NO_DERIVATIVE_UFUNCS:
            return _nondifferentiable(ufunc, inputs, kwargs)    # into out=
        if method != "__call__":
            raise _no_rule(f"{_public_name(ufunc)}.{method}")
        raise _in_place(_public_name(ufunc))
    if ufunc not in _NO_DERIVATIVE_UFUNCS:
        _check_ufunc_arguments(ufunc, kwargs)
    if ufunc in _BINARY_UFUNCS:
        return _binary(_BINARY_UFUNCS[ufunc], *_operands(inputs))
    if ufunc in _UNARY_UFUNCS:
        return getattr(_operands(inputs)[0], _UNARY_UFUNCS[ufunc])()
    if ufunc in _OTHER_UFUNCS:
        return _OTHER_UFUNCS[ufunc](*_operands(inputs))
    if ufunc in _NO_DERIVATIVE_UFUNCS:      # (their inputs as they came)
        return _nondifferentiable(ufunc, inputs, kwargs)
    raise _no_rule(_public_name(ufunc))


def _complex_ufunc(ufunc, method, inputs, kwargs):
    """A ufunc with a complex operand (a ComplexArray, or a complex
    constant with a traced value): complex_array's version."""
    if method != "__call__":
        raise _no_rule(f"{_public_name(ufunc)}.{method} of complex numbers")
    if kwargs.get("out") is not None:
        raise _in_place(_public_name(ufunc))
    fn = complex_array.NUMPY_UFUNCS.get(ufunc)
    if fn is None:
        raise _no_rule(f"{_public_name(ufunc)} of complex numbers")
    _check_ufunc_arguments(ufunc, kwargs, np.complex128)
    return fn(*[x.item() if isinstance(x, np.generic) or
                (isinstance(x, np.ndarray) and x.ndim == 0) else x for x in inputs])


def _check_ufunc_arguments(ufunc, kwargs, dtype=np.float64):
    """A recorded ufunc computes in float64 (complex128) everywhere:
    where= (other than True), another dtype, or any other argument raises
    instead of being silently ignored."""
    for key, value in kwargs.items():
        if key == "out" and value is None or key == "where" and value is True:
            continue
        if key == "dtype" and (value is None or np.dtype(value) == dtype):
            continue
        raise TypeError(f"{_public_name(ufunc)}({key}=...) of traced values: "
                        f"pyautodiff has no derivative rule for the argument {key}")


def _reduction(name):
    def reduce(a, axis=None, keepdims=False, **kwargs):
        if kwargs.get("out") is not None:
            raise _in_place(f"numpy.{name}")
        return getattr(_array._asarray(a), name)(axis=axis, keepdims=keepdims)
    return reduce


def _method(name):
    """NumPy's np.NAME(a, ...) as the Array method a.NAME(...)."""
    return lambda a, *args, **kwargs: getattr(_array._asarray(a), name)(*args, **kwargs)


_FUNCTIONS = {
    np.sum: _reduction("sum"), np.mean: _reduction("mean"),
    np.max: _reduction("max"), np.min: _reduction("min"),
    np.amax: _reduction("max"), np.amin: _reduction("min"),
    np.matmul: matmul,
    np.reshape: lambda a, shape, **kw: _array.reshape(a, shape),
    np.transpose: lambda a, axes=None: _array.transpose(a, axes),
    np.expand_dims: _array.expand_dims, np.squeeze: _array.squeeze,
    np.concatenate: lambda arrays, axis=0: _array.concatenate(arrays, axis),
    np.stack: lambda arrays, axis=0: _array.stack(arrays, axis),
    np.where: _array.where, np.clip: _array.clip,
    np.prod: _method("prod"), np.cumsum: _method("cumsum"),
    np.var: _method("var"), np.std: _method("std"), np.ravel: _method("ravel"),
    np.swapaxes: _method("swapaxes"), np.repeat: _method("repeat"),
    np.copy: _method("copy"),
    np.maximum: _array.maximum, np.minimum: _array.minimum,
    # decisions: Python bools, guards inside ad.record
    np.any: lambda a, axis=None, **kw: _decision(a, "any", axis, kw),
    np.all: lambda a, axis=None, **kw: _decision(a, "all", axis, kw),
}
_FUNCTIONS.update(numpy_shapes.NUMPY_FUNCTIONS)
_FUNCTIONS.update(numpy_elementwise.NUMPY_FUNCTIONS)
_FUNCTIONS.update(products.NUMPY_FUNCTIONS)
_FUNCTIONS.update(linalg.NUMPY_FUNCTIONS)
_FUNCTIONS.update(numpy_reductions.NUMPY_FUNCTIONS)
_FUNCTIONS.update(fourier.NUMPY_FUNCTIONS)

# with a complex argument: complex_array's version (np.fft's in fourier.py)
_COMPLEX_FUNCTIONS = dict(complex_array.NUMPY_FUNCTIONS)
_COMPLEX_FUNCTIONS.update(fourier.NUMPY_FUNCTIONS)


def _decision(a, name, axis, kwargs):
    if axis is not None or kwargs:          # bool arrays, as NumPy's
        return _nondifferentiable(getattr(np, name), (a,), dict(kwargs, axis=axis))
    return getattr(_array._asarray(a), name)()


# the common operands, which no call needs to look into for complex numbers
_REAL = frozenset({Array, float, int, bool, type(None), str})


def _holds_complex(args, kwargs):
    """Whether a complex array or number is among the arguments (or in a
    list of them, np.concatenate's)."""
    for x in args:
        cls = x.__class__
        if cls in _REAL:
            continue
        if is_complex(x) or (cls is list or cls is tuple) and any(map(is_complex, x)):
            return True
    return bool(kwargs) and _holds_complex(kwargs.values(), None)


def apply_function(func, args, kwargs):
    if _holds_complex(args, kwargs):
        fn = _COMPLEX_FUNCTIONS.get(func)
        if fn is None:
            raise _no_rule(f"{_public_name(func)} of complex numbers")
        return fn(*args, **kwargs)
    fn = _FUNCTIONS.get(func)
    if fn is not None:
        return fn(*args, **kwargs)
    if func in _QUERIES or func in _DISCRETE or func in _PIECEWISE_CONSTANT:
        return _nondifferentiable(func, args, kwargs)
    raise _no_rule(_public_name(func))


# -- what NumPy calls on Values and Arrays, given to their classes here -------

class ArrayMethods:
    """NumPy's protocols (np.exp(a), ndarray * a, np.sum(a, axis=0) ...
    land here), and the methods whose result is NumPy's."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return apply_function(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        return as_ndarray(self, dtype, copy)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """A float dtype keeps the Array (differentiable: an Array holds
        float64 whatever float type is asked for); an integer or bool dtype
        gives NumPy's plain ndarray of the values, which has no derivative."""
        kind = np.dtype(dtype).kind
        if kind == "f":
            return self.copy() if copy else self
        if kind not in "biu":
            raise TypeError(f"astype: an Array holds real numbers; it cannot "
                            f"become {np.dtype(dtype)}")
        return _nondifferentiable(np.ndarray.astype, (self, dtype),
                          dict(order=order, casting=casting, copy=copy))

    def tolist(self):
        """The values as (nested lists of) Python floats: plain numbers,
        no longer recorded (inside ad.record, a guard on the values)."""
        return _nondifferentiable(np.ndarray.tolist, (self,), {})


def _mask_array(self, dtype=None, copy=None):
    """A mask is NumPy's bool array of its values."""
    return as_ndarray(self, bool if dtype is None else dtype, copy)


for _name in ("__array_ufunc__", "__array_function__", "__array__", "astype", "tolist"):
    setattr(Array, _name, vars(ArrayMethods)[_name])
_array.Mask.__array__ = _mask_array
# np.exp(v), np.float64 * v, ndarray * v (an Array); np.sum(v), np.where(c,
# v, w) ... as on a 0-d Array
Value.__array_ufunc__ = ArrayMethods.__array_ufunc__
Value.__array_function__ = ArrayMethods.__array_function__
# np.exp(z), ndarray * z, np.fft.fft(z) ...: the complex tables above
ComplexArray.__array_ufunc__ = ArrayMethods.__array_ufunc__
ComplexArray.__array_function__ = ArrayMethods.__array_function__
