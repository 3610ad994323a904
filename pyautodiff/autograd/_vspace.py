"""autograd's vector spaces: ``vspace(x)`` is the space that x (a float,
an array, or a list, tuple or dict of them) is a vector of, with its
zero, its ones, its standard basis, random vectors, addition, scaling and
the inner product -- what autograd's check_grads and extension code build
on.  Two values have equal vspaces when they have the same structure,
shapes and dtypes.

The arithmetic is plain NumPy, so it also takes traced Values and Arrays
(and is differentiated as any other code: autograd makes add, scalar_mul,
inner_prod and covector primitives for the same purpose).  A traced value's
vspace is its plain value's.  Complex values have a complex vspace as in
autograd: twice the size, 1j in the basis, the real part of <conj x, y> as
the inner product and the conjugate as covector.
"""
import numpy as np

from ..array import Array
from ..complex_array import ComplexArray
from ..value import Value

__all__ = ["VSpace", "vspace"]


class VSpace:
    """A vector space; vspace(value) gives the one of a value, and
    VSpace.register(type, maker) says how to make it for a type of values."""

    mappings = {}
    iscomplex = False

    def __init__(self, value):
        pass

    def zeros(self):
        raise NotImplementedError(f"{type(self).__name__}.zeros")

    def ones(self):
        raise NotImplementedError(f"{type(self).__name__}.ones")

    def standard_basis(self):
        raise NotImplementedError(f"{type(self).__name__}.standard_basis")

    def randn(self):
        raise NotImplementedError(f"{type(self).__name__}.randn")

    def mut_add(self, x_prev, x_new):
        """x_prev + x_new (x_prev None: x_new); autograd may add in place,
        so only the result is to be used."""
        return self._add(self.zeros() if x_prev is None else x_prev, x_new)

    def add(self, x_prev, x_new):
        return self._add(x_prev, x_new)

    def scalar_mul(self, x, a):
        return self._scalar_mul(x, a)

    def inner_prod(self, x, y):
        return self._inner_prod(x, y)

    def covector(self, x):
        return self._covector(x)

    def _add(self, x, y):
        return x + y

    def _scalar_mul(self, x, a):
        return x * a

    def _inner_prod(self, x, y):
        raise NotImplementedError(f"{type(self).__name__}.inner_prod")

    def _covector(self, x):
        return x

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __repr__(self):
        return f"{type(self).__name__}_{self.__dict__}"

    @classmethod
    def register(cls, value_type, vspace_maker=None):
        """vspace(x) for x of exactly value_type is vspace_maker(x) (by
        default this class)."""
        VSpace.mappings[value_type] = vspace_maker or cls


def vspace(value):
    """The vector space of value (see the module's docstring)."""
    maker = VSpace.mappings.get(type(value))
    if maker is not None:
        return maker(value)
    if isinstance(value, (Value, Array, ComplexArray)):
        return vspace(value.data)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return NamedTupleVSpace(value)          # np.linalg's results and the like
    raise TypeError(f"Can't find vector space for value {value!r} of type "
                    f"{type(value)}. Valid types are {list(VSpace.mappings)}")


# -- arrays and numbers ----------------------------------------------------------------

class ArrayVSpace(VSpace):
    """The arrays of one shape and dtype (a float: shape ())."""

    def __init__(self, value):
        value = np.asarray(value)
        self.shape = value.shape
        self.dtype = value.dtype

    @property
    def size(self):
        return int(np.prod(self.shape))

    @property
    def ndim(self):
        return len(self.shape)

    def zeros(self):
        return np.zeros(self.shape, dtype=self.dtype)

    def ones(self):
        return np.ones(self.shape, dtype=self.dtype)

    def standard_basis(self):
        for index in np.ndindex(*self.shape):
            unit = self.zeros()
            unit[index] = 1
            yield unit

    def randn(self):
        return np.asarray(np.random.randn(*self.shape)).astype(self.dtype)

    def _inner_prod(self, x, y):
        return np.dot(np.ravel(x), np.ravel(y))


class ComplexArrayVSpace(ArrayVSpace):
    """Complex arrays as real vectors of twice the size: the real and the
    imaginary part of each element are coordinates of their own."""

    iscomplex = True

    @property
    def size(self):
        return 2 * int(np.prod(self.shape))

    def ones(self):
        return super().ones() * (1.0 + 1.0j)

    def standard_basis(self):
        for index in np.ndindex(*self.shape):
            for unit_value in (1.0, 1.0j):
                unit = self.zeros()
                unit[index] = unit_value
                yield unit

    def randn(self):
        real, imag = super().randn(), super().randn()
        return real + 1.0j * imag

    def _inner_prod(self, x, y):
        return np.real(np.dot(np.conj(np.ravel(x)), np.ravel(y)))

    def _covector(self, x):
        return np.conj(x)


def _array_vspace(x):
    return ComplexArrayVSpace(x) if np.iscomplexobj(x) else ArrayVSpace(x)


for _type in (np.ndarray, float, complex, np.float16, np.float32, np.float64,
              np.longdouble, np.complex64, np.complex128, np.clongdouble):
    VSpace.register(_type, _array_vspace)


# -- containers ---------------------------------------------------------------------

class ContainerVSpace(VSpace):
    """A container's space: the product of its elements' spaces (shape is
    the container of those spaces)."""

    def __init__(self, value):
        self.shape = self._map(vspace, value)

    @property
    def size(self):
        return sum(vs.size for vs in self._values(self.shape))

    def zeros(self):
        return self._map(lambda vs: vs.zeros(), self.shape)

    def ones(self):
        return self._map(lambda vs: vs.ones(), self.shape)

    def randn(self):
        return self._map(lambda vs: vs.randn(), self.shape)

    def standard_basis(self):
        for key, vs in self._items(self.shape):
            for unit in vs.standard_basis():
                yield self._replaced(self.zeros(), key, unit)

    def _add(self, xs, ys):
        return self._map(lambda vs, x, y: vs._add(x, y), self.shape, xs, ys)

    def _scalar_mul(self, xs, a):
        return self._map(lambda vs, x: vs._scalar_mul(x, a), self.shape, xs)

    def _inner_prod(self, xs, ys):
        return sum(self._values(self._map(lambda vs, x, y: vs._inner_prod(x, y),
                                          self.shape, xs, ys)))

    def _covector(self, xs):
        return self._map(lambda vs, x: vs._covector(x), self.shape, xs)


class SequenceVSpace(ContainerVSpace):
    seq_type = None

    def _values(self, xs):
        return xs

    def _items(self, xs):
        return enumerate(xs)

    def _map(self, f, *columns):
        return self._make(f(*row) for row in zip(*columns))

    def _make(self, elements):
        return self.seq_type(elements)

    def _replaced(self, xs, i, x):
        elements = list(xs)
        elements[i] = x
        return self._make(elements)


class ListVSpace(SequenceVSpace):
    seq_type = list


class TupleVSpace(SequenceVSpace):
    seq_type = tuple


class NamedTupleVSpace(SequenceVSpace):
    """A named tuple's space (np.linalg.eigh's result and the like)."""

    def __init__(self, value):
        self.seq_type = type(value)
        super().__init__(value)

    def _make(self, elements):
        return self.seq_type(*elements)


class DictVSpace(ContainerVSpace):
    def _values(self, xs):
        return xs.values()

    def _items(self, xs):
        return xs.items()

    def _map(self, f, first, *rest):
        return {k: f(v, *[x[k] for x in rest]) for k, v in first.items()}

    def _replaced(self, xs, key, x):
        return {**xs, key: x}


ListVSpace.register(list)
TupleVSpace.register(tuple)
DictVSpace.register(dict)
