"""Complex numbers in traced computations: ``ComplexArray``, a complex array
held as two real Arrays of one shape, its real and imaginary parts, and
NumPy's functions of complex numbers on it.

Complex numbers enter a traced computation where a differentiated
argument is complex (pytree.py gives the function a ComplexArray whose
parts are that argument's leaves), where a traced real value meets a
complex constant (``x * 1j``, ``np.exp(1j * x)``: ops.complex_operator)
and where NumPy makes them of real ones (``np.fft.fft(x)``: fourier.py).
Every operation on a ComplexArray is real operations on its parts
(complex_math.py) recorded as any others, so sweeps, replays and nested
derivatives of every order need nothing of their own.

The derivative of a real f with respect to the parts, (df/dx, df/dy),
is read as autograd's gradient df/dx - i df/dy (pytree's conjugate
flatten and unflatten): the gradient of |z|**2 is 2 conj(z)... as
autograd gives it, and the derivative of a holomorphic f is the gradient
of its real part.

NumPy's protocols reach ComplexArray through numpy_interop.py, which
dispatches a call with a complex operand to the tables at the end of
this module (and fourier.py's); a NumPy function that has no entry there
raises TypeError naming it.
"""
import numbers

import numpy as np

from . import complex_math as cm
from .array import Array, _asarray, _constant_result, _holds_traced, is_mask
from .detach import refuse_detached
from .ops import is_complex_constant
from .value import Value


class ComplexArray:
    """A complex128 array recorded on the tape as its real and imaginary
    parts, two real Arrays of one shape (``z.real``, ``z.imag``)."""

    __slots__ = ("_re", "_im")

    # == is elementwise, as an ndarray's: no hash
    __hash__ = None

    def __init__(self, real, imag=None):
        re = _part(real)
        im = _part(np.zeros(re.shape) if imag is None else imag)
        if re.shape != im.shape:
            shape = np.broadcast_shapes(re.shape, im.shape)
            re, im = np.broadcast_to(re, shape), np.broadcast_to(im, shape)
        self._re, self._im = re, im

    # -- what NumPy's complex arrays have -----------------------------------------

    real = property(lambda self: self._re)
    imag = property(lambda self: self._im)
    shape = property(lambda self: self._re.shape)
    ndim = property(lambda self: self._re.ndim)
    size = property(lambda self: self._re.size)
    dtype = np.dtype(np.complex128)
    T = property(lambda self: self.transpose())

    @property
    def data(self):
        """The values, a new complex ndarray (no derivative)."""
        return self._re.data + 1j * self._im.data

    def __len__(self):
        return len(self._re)

    def __repr__(self):
        body = np.array2string(self.data, separator=", ", prefix="ComplexArray(")
        return f"ComplexArray({body})"

    def __array__(self, dtype=None, copy=None):
        for part in (self._re, self._im):
            refuse_detached(part, "numpy.asarray of a complex array")
        return np.asarray(self.data, dtype=dtype)

    def item(self):
        """The value as a Python complex (inside ad.record, a guard)."""
        return complex(self._re.item(), self._im.item())

    def __complex__(self):
        for part in (self._re, self._im):
            refuse_detached(part, "complex()")
        return self.item()

    def __float__(self):
        raise TypeError("float() of a complex number: take np.real, np.imag "
                        "or np.abs of it")

    def __bool__(self):
        return bool(self._re) or bool(self._im)

    # -- arithmetic (complex_math.py on the parts) ------------------------------------

    def __add__(self, other):
        return _binary(cm.add, self, other)

    def __radd__(self, other):
        return _binary(cm.add, other, self)

    def __sub__(self, other):
        return _binary(cm.subtract, self, other)

    def __rsub__(self, other):
        return _binary(cm.subtract, other, self)

    def __mul__(self, other):
        return _binary(cm.multiply, self, other)

    def __rmul__(self, other):
        return _binary(cm.multiply, other, self)

    def __truediv__(self, other):
        return _binary(cm.divide, self, other)

    def __rtruediv__(self, other):
        return _binary(cm.divide, other, self)

    def __pow__(self, other):
        return _binary(cm.power, self, other)

    def __rpow__(self, other):
        return _binary(cm.power, other, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return ComplexArray(-self._re, -self._im)

    def __pos__(self):
        return self

    def __abs__(self):
        return cm.absolute(pair_of(self))

    def __eq__(self, other):
        return equal(self, other)

    def __ne__(self, other):
        return not_equal(self, other)

    def conjugate(self):
        return ComplexArray(self._re, -self._im)

    conj = conjugate

    # -- reductions and layout: the same on each part -----------------------------------

    def sum(self, axis=None, keepdims=False):
        return ComplexArray(self._re.sum(axis, keepdims), self._im.sum(axis, keepdims))

    def mean(self, axis=None, keepdims=False):
        return ComplexArray(self._re.mean(axis, keepdims), self._im.mean(axis, keepdims))

    def reshape(self, *shape):
        return ComplexArray(self._re.reshape(*shape), self._im.reshape(*shape))

    def transpose(self, *axes):
        return ComplexArray(self._re.transpose(*axes), self._im.transpose(*axes))

    def swapaxes(self, axis1, axis2):
        return ComplexArray(self._re.swapaxes(axis1, axis2),
                            self._im.swapaxes(axis1, axis2))

    def squeeze(self, axis=None):
        return ComplexArray(self._re.squeeze(axis), self._im.squeeze(axis))

    def ravel(self, order="C"):
        return ComplexArray(self._re.ravel(order), self._im.ravel(order))

    flatten = ravel

    def copy(self):
        return ComplexArray(self._re.copy(), self._im.copy())

    def __getitem__(self, index):
        return ComplexArray(self._re[index], self._im[index])

    def dot(self, other):
        return dot(self, other)

    def astype(self, dtype, copy=True):
        """A complex dtype keeps the array; a real one would drop the
        imaginary part (NumPy warns and drops it): TypeError."""
        if np.dtype(dtype).kind != "c":
            raise TypeError(f"astype({np.dtype(dtype).name}) of a complex array "
                            "would drop its imaginary part: take np.real(z)")
        return self.copy() if copy else self


def _part(p):
    """A part as a real Array: a Value as a 0-d one, a plain number or
    ndarray as a constant."""
    if isinstance(p, Array):
        return p + 0.0 if is_mask(p) else p
    if isinstance(p, Value):
        return _asarray(p)
    return _constant_result(np.asarray(p, dtype=np.float64))


_COMPLEX_NUMBERS = (ComplexArray, complex, np.complexfloating)


def is_complex(x):
    """Whether x is a complex traced array or a complex constant."""
    return isinstance(x, _COMPLEX_NUMBERS) or \
        (isinstance(x, np.ndarray) and x.dtype.kind == "c")


def pair_of(x):
    """(real part, imaginary part) of an operand, the imaginary part None
    for a real one; None for what is not a number or an array."""
    if isinstance(x, ComplexArray):
        return x._re, x._im
    if isinstance(x, Array):
        return x, None
    if isinstance(x, Value):
        return _asarray(x), None
    if is_complex_constant(x):
        return np.real(x), np.imag(x)
    if isinstance(x, (list, tuple)):
        if _holds_traced(x):
            return _asarray(x), None
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf" or \
            isinstance(x, numbers.Real):
        return x, None
    if isinstance(x, np.ndarray) and x.dtype.kind == "c":
        return x.real, x.imag
    return None


def complex_value(real, imag):
    """The complex number or array with these parts: a ComplexArray for
    traced parts, else a Python complex (of floats) or a complex ndarray."""
    if isinstance(real, (Array, Value)) or isinstance(imag, (Array, Value)):
        return ComplexArray(real, imag)
    if isinstance(real, float) and isinstance(imag, float):
        return complex(real, imag)
    return np.asarray(real) + 1j * np.asarray(imag)


def _complex(pair):
    return ComplexArray(*pair)


def _binary(fn, a, b):
    za, zb = pair_of(a), pair_of(b)
    if za is None or zb is None:
        return NotImplemented
    return _complex(fn(za, zb))


# -- NumPy's functions of complex numbers ------------------------------------------------

def _unary(fn):
    def apply(z):
        return _complex(fn(pair_of(z)))
    apply.__name__ = fn.__name__
    return apply


def _binary_ufunc(fn):
    def apply(a, b):
        return _binary(fn, a, b)
    apply.__name__ = fn.__name__
    return apply


def _product(numpy_fn):
    """numpy_fn, a real bilinear product (np.dot, np.inner ...), of
    complex operands: complex_math.bilinear."""
    def apply(a, b, *args, **kwargs):
        product = lambda u, v: numpy_fn(u, v, *args, **kwargs)     # noqa: E731
        return _complex(cm.bilinear(product, pair_of(a), pair_of(b)))
    apply.__name__ = numpy_fn.__name__
    return apply


dot = _product(np.dot)
matmul = _product(np.matmul)


def vdot(a, b):
    """np.vdot: the first operand conjugated, both flattened."""
    return dot(np.ravel(np.conjugate(a)), np.ravel(b))


def real(z):
    return pair_of(z)[0]


def imag(z):
    x, y = pair_of(z)
    return _constant_result(np.zeros(np.shape(x))) if y is None else y


def angle(z, deg=False):
    a = cm.angle(pair_of(z))
    return a * (180.0 / np.pi) if deg else a


def real_if_close(z, tol=100):
    """NumPy's: the real part where every imaginary part is within tol
    machine epsilons of 0 (a decision on the values: inside ad.record a
    guard), else z."""
    if not isinstance(z, ComplexArray):
        return np.real_if_close(z, tol)
    if tol > 1:
        tol = tol * np.finfo(np.float64).eps
    return z.real if (np.abs(z.imag) < tol).all() else z


def equal(a, b):
    (x, y), (u, v) = pair_of(a), pair_of(b)
    return (x == u) & (_zero_if_none(y, x) == _zero_if_none(v, u))


def not_equal(a, b):
    (x, y), (u, v) = pair_of(a), pair_of(b)
    return (x != u) | (_zero_if_none(y, x) != _zero_if_none(v, u))


def _zero_if_none(y, like):
    return np.zeros(np.shape(like)) if y is None else y


# Linear functions whose coefficients are real numbers (sums, layouts):
# the function of each part.  Which arguments are the data (the rest are
# axes, shapes, indices ...): the first by default.

def _part_of(x, k):
    """Part k (0 real, 1 imaginary) of a data argument: of a sequence of
    arrays (np.concatenate's), each one's."""
    if isinstance(x, (list, tuple)) and not _holds_numbers(x):
        return type(x)(_part_of(e, k) for e in x)
    pair = pair_of(x)
    if pair is None:
        raise TypeError(f"{type(x).__name__} where a number or array was expected")
    return pair[k] if k == 0 or pair[1] is not None else np.zeros(np.shape(pair[0]))


def _holds_numbers(x):
    return all(isinstance(e, numbers.Number) for e in x)


def _joined(re, im):
    if isinstance(re, (list, tuple)):
        return type(re)(ComplexArray(r, i) for r, i in zip(re, im))
    return ComplexArray(re, im)


def per_part(numpy_fn, data=(0,), data_keywords=("constant_values",)):
    """numpy_fn of each part, for a function linear in its data
    arguments (positions `data`, and the keywords data_keywords) with real
    coefficients."""
    def apply(*args, **kwargs):
        parts = []
        for k in (0, 1):
            a = [_part_of(x, k) if i in data else x for i, x in enumerate(args)]
            kw = {key: _part_of(v, k) if key in data_keywords else v
                  for key, v in kwargs.items()}
            parts.append(numpy_fn(*a, **kw))
        return _joined(*parts)
    apply.__name__ = numpy_fn.__name__
    return apply


def on_values(numpy_fn):
    """numpy_fn of the values (queries: np.shape, np.iscomplexobj, and
    np.zeros_like, whose result does not depend on them)."""
    def apply(*args, **kwargs):
        plain = [x.data if isinstance(x, ComplexArray) else x for x in args]
        return numpy_fn(*plain, **kwargs)
    apply.__name__ = numpy_fn.__name__
    return apply


# ufunc: its complex version (operands as numpy_interop passes them: NumPy
# scalars as Python numbers, at least one complex)
NUMPY_UFUNCS = {
    np.add: _binary_ufunc(cm.add), np.subtract: _binary_ufunc(cm.subtract),
    np.multiply: _binary_ufunc(cm.multiply), np.divide: _binary_ufunc(cm.divide),
    np.power: _binary_ufunc(cm.power), np.matmul: matmul,
    np.negative: _unary(cm.negative), np.positive: lambda z: z,
    np.conjugate: _unary(cm.conjugate),
    np.absolute: lambda z: cm.absolute(pair_of(z)),
    np.square: _unary(cm.square), np.reciprocal: _unary(cm.reciprocal),
    np.exp: _unary(cm.exp), np.log: _unary(cm.log), np.sqrt: _unary(cm.sqrt),
    np.exp2: _unary(cm.exp2), np.log2: _unary(cm.log2), np.log10: _unary(cm.log10),
    np.sin: _unary(cm.sin), np.cos: _unary(cm.cos), np.tan: _unary(cm.tan),
    np.sinh: _unary(cm.sinh), np.cosh: _unary(cm.cosh), np.tanh: _unary(cm.tanh),
    np.equal: equal, np.not_equal: not_equal,
}

# function: its version with complex arguments
NUMPY_FUNCTIONS = {
    np.real: real, np.imag: imag, np.angle: angle, np.real_if_close: real_if_close,
    np.dot: dot, np.vdot: vdot, np.inner: _product(np.inner),
    np.outer: _product(np.outer), np.tensordot: _product(np.tensordot),
    np.kron: _product(np.kron),
    np.where: per_part(np.where, data=(1, 2)),
}
NUMPY_FUNCTIONS.update({fn: per_part(fn) for fn in (
    np.sum, np.mean, np.trace, np.cumsum, np.copy,
    np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.rollaxis,
    np.expand_dims, np.squeeze, np.flip, np.fliplr, np.flipud, np.roll, np.rot90,
    np.broadcast_to, np.tile, np.repeat, np.diagonal, np.diag, np.tril, np.triu,
    np.take, np.pad, np.concatenate, np.stack, np.vstack, np.hstack, np.dstack,
    np.column_stack, np.split, np.array_split, np.hsplit, np.vsplit,
    np.fft.fftshift, np.fft.ifftshift)})
NUMPY_FUNCTIONS.update({fn: on_values(fn) for fn in (
    np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj, np.result_type,
    np.zeros_like, np.ones_like, np.empty_like)})
