"""``ad.Array``: a NumPy float64 array whose operations are recorded on the
same tape as scalar Values.

Each operation is one tape entry: its values live in the result's ndarray
(C-contiguous float64, allocated here), and the C core computes them with
the same rules as scalars (csrc/rules.h), broadcasting operands as NumPy
does; the reverse sweep runs the same rules backwards.  A scalar Value in an
array operation is a 0-d operand, so one graph can mix both.
"""
import numbers

import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_tuple
except ImportError:          # NumPy < 2
    from numpy.core.numeric import normalize_axis_tuple

from . import _core
from ._core import TapeError, ffi, lib
from .tape import NO_GRAD, current_tape, recording_tape
from .value import BINARY, UNARY, Value

OPS = _core.OPS


def _as_float_array(data):
    """data as a fresh C-contiguous float64 ndarray; TypeError for data that
    is not real numbers (object, str, complex, ...)."""
    arr = np.asarray(data)
    if arr.dtype.kind not in "biuf":
        raise TypeError("Array() takes real numbers (bool, int or float "
                        f"data), not {arr.dtype} data")
    return np.array(arr, dtype=np.float64, order="C", copy=True)


def _broadcast_shape(op, a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        raise ValueError(f"{op}: operands could not be broadcast together with "
                         f"shapes {a} and {b}") from None


class Array:
    """A float64 array recorded on the current tape (NumPy-compatible)."""

    __slots__ = ("_d", "_i", "_t")
    __array_priority__ = 100    # ndarray <op> Array defers to Array

    def __init__(self, data):
        arr = _as_float_array(data)
        t = recording_tape()
        if t is NO_GRAD:
            t = current_tape()    # inputs are recorded under no_grad too
        _append(t, self, OPS["LEAF"], -1, -1, 0.0, arr)

    # -- NumPy-like attributes -------------------------------------------

    @property
    def data(self):
        return self._d

    @data.setter
    def data(self, value):
        new = _as_float_array(value)
        if new.shape != self._d.shape:
            raise ValueError(f"cannot assign data of shape {new.shape} to an "
                             f"Array of shape {self._d.shape}")
        self._d[...] = new        # in place: the tape holds this buffer

    @property
    def grad(self):
        t = self._t
        shape = self._d.shape
        if t is NO_GRAD or self._i < 0:
            return np.zeros(shape)
        if t.closed:
            return t.frozen_array_grad(self._i, shape)
        if self._i >= t.nflushed:
            return np.zeros(shape)
        p = lib.ad_array_grad(t._c, self._i)
        if p == ffi.NULL:
            return np.zeros(shape)
        return np.frombuffer(ffi.buffer(p, 8 * self._d.size)).reshape(shape).copy()

    @grad.setter
    def grad(self, value):
        if np.any(np.asarray(value) != 0):
            raise ValueError("an Array's grad can only be reset to 0")
        self._t._check_open()
        self._t.flush()
        _core.check(lib.ad_array_zero_grad(self._t._c, self._i), self._t._c)

    def zero_grad(self):
        self.grad = 0

    shape = property(lambda self: self._d.shape)
    ndim = property(lambda self: self._d.ndim)
    size = property(lambda self: self._d.size)
    dtype = property(lambda self: self._d.dtype)

    def __len__(self):
        return len(self._d)

    def item(self):
        return self._d.item()

    def __float__(self):
        return float(self._d)

    def __repr__(self):
        body = np.array2string(self._d, separator=", ", prefix="Array(")
        return f"Array({body})"

    # -- reductions ----------------------------------------------------------

    def sum(self, axis=None, keepdims=False):
        return _reduce(self, axis, keepdims, mean=False)

    def mean(self, axis=None, keepdims=False):
        return _reduce(self, axis, keepdims, mean=True)

    def reshape(self, *shape):
        """The same elements in another shape (NumPy's rules, -1 allowed)."""
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = tuple(shape[0])
        target = np.empty(self._d.shape, dtype=np.uint8).reshape(shape).shape
        t = recording_tape()
        if t is NO_GRAD:
            return _detached(self._d.reshape(target))
        return _new(Array, t, OPS["RESHAPE"], _operand(self, t)[0], -1, 0.0, target)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    # -- backward ------------------------------------------------------------

    def backward(self, grad=None):
        """d(self)/d(node) into every node's grad: self must have one element,
        else pass `grad` (an array of self's shape) to backpropagate
        sum(self * grad)."""
        t = self._t
        if t is NO_GRAD:
            raise TapeError("this Array was computed under no_grad: nothing "
                            "was recorded to differentiate")
        if grad is None:
            if self._d.size != 1:
                raise ValueError("backward() without a grad needs an Array "
                                 f"with one element, not shape {self.shape}; "
                                 "pass backward(grad) with an array of this "
                                 "shape")
            t.backward([self._i], [1.0], _core.SWEEP_ACCUM)
            return
        seed = _as_float_array(grad)
        if seed.shape != self._d.shape:
            raise ValueError(f"backward(grad): grad has shape {seed.shape}, "
                             f"the Array has shape {self.shape}")
        (self * seed).sum().backward()


def _append(t, obj, op, a, b, imm, arr):
    """Record entry (op, a, b, imm) on tape t with values in arr (C computes
    them) as obj, which becomes an Array on t."""
    t._check_open()
    t.flush()                     # entries below must be in C first
    shape = ffi.new("int64_t[]", arr.shape or (0,))
    if arr.size:
        val = ffi.from_buffer("double[]", arr, require_writable=True)
    else:
        val = ffi.new("double[1]")    # a valid pointer that is never read
        t.keep_alive(val)
    _core.check(lib.ad_array_append(t._c, op, a, b, imm, val, arr.ndim, shape), t._c)
    obj._d = arr
    obj._t = t
    obj._i = len(t.nodes)
    t.nodes.append(obj)
    t.nflushed += 1
    if op != OPS["LEAF"]:
        arr.flags.writeable = False   # the tape's record of a result
    return obj


def _new(cls, t, op, a, b, imm, shape):
    return _append(t, object.__new__(cls), op, a, b, imm, np.empty(shape))


def _operand(x, t):
    """x as (entry index, shape) on tape t, recording constants as leaves."""
    if isinstance(x, Array):
        if x._t is not t:
            x._t._check_open()
            raise TapeError("an Array from another tape was used here")
        return x._i, x._d.shape
    if isinstance(x, Value):
        x = t.adopt(x)
        t.flush()
        return x._i, ()
    return Array(x)._i, np.shape(x)


def _binary(self, other, name):
    t = recording_tape()
    if t is NO_GRAD:
        return _detached_binary(self, other, name)
    vv_op, vc_op, cexpr = BINARY[name]
    reflected = vv_op is None
    if isinstance(other, numbers.Real) and not isinstance(other, (bool, np.bool_)):
        c = -float(other) if cexpr == "-other" else float(other)
        return _new(Array, t, OPS[vc_op], _operand(self, t)[0], -1, c, self._d.shape)
    if not isinstance(other, (Array, Value, np.ndarray, list, tuple)):
        return NotImplemented
    a, sa = _operand(self, t)
    b, sb = _operand(other, t)
    if reflected:               # other <op> self, other not a number
        a, b, sa, sb = b, a, sb, sa
        vv_op = BINARY[REFLECTED_OF[name]][0]
    shape = sa if sa == sb else _broadcast_shape(vv_op.lower(), sa, sb)
    return _new(Array, t, OPS[vv_op], a, b, 0.0, shape)


REFLECTED_OF = {"__radd__": "__add__", "__rsub__": "__sub__",
                "__rmul__": "__mul__", "__rtruediv__": "__truediv__",
                "__rpow__": "__pow__"}


def _unary(self, name):
    t = recording_tape()
    if t is NO_GRAD:
        return _detached(_NUMPY_UNARY[name](self._d))
    return _new(Array, t, OPS[UNARY[name]], _operand(self, t)[0], -1, 0.0,
                self._d.shape)


def _reduce(self, axis, keepdims, mean):
    shape = self._d.shape
    axes = tuple(range(len(shape))) if axis is None else \
        normalize_axis_tuple(axis, len(shape))
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    count = float(np.prod([shape[d] for d in axes])) if mean else 1.0
    t = recording_tape()
    if t is NO_GRAD:
        fn = np.mean if mean else np.sum
        return _detached(fn(self._d, axis=axes, keepdims=keepdims))
    out = _new(Array, t, OPS["SUM"], _operand(self, t)[0], -1, count, kept)
    if not keepdims:
        out = out.reshape(tuple(n for d, n in enumerate(shape) if d not in axes))
    return out


def _detached(values):
    out = object.__new__(Array)
    out._d = np.asarray(values, dtype=np.float64)
    out._t = NO_GRAD
    out._i = -1
    return out


def _plain(x):
    return x._d if isinstance(x, Array) else x.data if isinstance(x, Value) else x


_NUMPY_BINARY = {"__add__": np.add, "__sub__": np.subtract, "__mul__": np.multiply,
                 "__truediv__": np.divide, "__pow__": np.power}
_NUMPY_UNARY = {"__neg__": np.negative, "__abs__": np.abs, "exp": np.exp,
                "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos,
                "sqrt": np.sqrt, "relu": lambda x: np.maximum(x, 0.0),
                "sigmoid": lambda x: 0.5 * (1.0 + np.tanh(0.5 * x))}


def _detached_binary(self, other, name):
    if name in REFLECTED_OF:
        return _detached(_NUMPY_BINARY[REFLECTED_OF[name]](_plain(other), self._d))
    return _detached(_NUMPY_BINARY[name](self._d, _plain(other)))


def _install():
    for name in BINARY:
        def method(self, other, _name=name):
            return _binary(self, other, _name)
        method.__name__ = name
        setattr(Array, name, method)
    for name in UNARY:
        def method(self, _name=name):
            return _unary(self, _name)
        method.__name__ = name
        setattr(Array, name, method)


_install()


# -- matrix products: NumPy (BLAS) in both directions, through an extern op --

def _unbroadcast(x, shape):
    """Sum x down to shape (undo NumPy broadcasting)."""
    while x.ndim > len(shape):
        x = x.sum(axis=0)
    for d, n in enumerate(shape):
        if n == 1 and x.shape[d] != 1:
            x = x.sum(axis=d, keepdims=True)
    return x


def _matmul_vjp(g, out, a, b):
    a2 = a[np.newaxis, :] if a.ndim == 1 else a
    b2 = b[:, np.newaxis] if b.ndim == 1 else b
    # g in the shape of the product of the 2-D (or batched) promotions
    g2 = np.reshape(g, np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
                    + (a2.shape[-2], b2.shape[-1]))
    ga = _unbroadcast(g2 @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
    gb = _unbroadcast(np.swapaxes(a2, -1, -2) @ g2, b2.shape).reshape(b.shape)
    return ga, gb


_MATMUL = None


def matmul(a, b):
    """a @ b with NumPy's rules (1-D, 2-D and batched)."""
    global _MATMUL
    from .extern import ExternRule, record_extern
    if _MATMUL is None:
        _MATMUL = ExternRule(np.matmul, _matmul_vjp, "matmul")
    pa, pb = _plain(a), _plain(b)
    try:
        value = np.matmul(pa, pb)
    except ValueError:
        raise ValueError(f"matmul: shapes {np.shape(pa)} and {np.shape(pb)} are "
                         "not aligned") from None
    if recording_tape() is NO_GRAD:
        return _detached(value)
    ops = [x if isinstance(x, (Array, Value)) else Array(x) for x in (a, b)]
    return record_extern(_MATMUL, ops, value)
