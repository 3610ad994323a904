"""pyautodiff's functional API computed by jets (taylor.py): a reference for
derivatives of derivatives that shares no code with the tape.

``grad``, ``value_and_grad``, ``jvp``, ``vjp``, ``hvp``, ``jacobian`` and
``hessian`` take and give what ``ad.*`` do (one argument, argnum 0), and
``sigmoid``, ``relu`` and ``logsumexp`` stand in for ``ad.*``'s, so a
program written against ``ad`` runs on the reference with this module
bound to that name.  Their arguments may be jets of enclosing derivatives
(and the functions may close over them): each derivative seeds a variable
of its own, inner to all that exist, so the results are jets of the outer
variables again, and derivatives nest to any order.

First derivatives take one order-1 jet per input element (the column
D f(x)[e_i]); second ones polarize an order-2 jet:
D^2 f(x)[u, w] = (D^2 f(x)[u + w] - D^2 f(x)[u - w]) / 4, with
D^2 f(x)[w] = 2 c_2 of f(x + t w).
"""
import numpy as np

from . import taylor
from .taylor import Jet, coefficient, logsumexp, relu, seed, sigmoid

__all__ = ["grad", "value_and_grad", "jvp", "vjp", "hvp", "jacobian", "hessian",
           "sigmoid", "relu", "logsumexp"]


def _shape(x):
    return np.shape(taylor.base(x))


def _basis(shape):
    """The unit directions of an argument of this shape, in C order."""
    n = int(np.prod(shape))
    for i in range(n):
        e = np.zeros(n)
        e[i] = 1.0
        yield e.reshape(shape)


def _assemble(items, shape):
    """Derivatives (numbers, ndarrays or jets of outer variables), in C
    order, as one array of `shape`."""
    if not any(isinstance(x, Jet) for x in items):
        return np.reshape(np.array([np.asarray(x, float) for x in items]), shape)
    return np.reshape(np.stack(items), shape)


class Transforms:
    """The functional API on two primitives, ``first`` and ``bilinear``
    (and ``value``, f itself); a subclass may compute them otherwise (the
    tests' central differences).  An instance is a namespace for the
    programs: ``ad.sigmoid`` and the like are its attributes too."""

    sigmoid = staticmethod(sigmoid)
    relu = staticmethod(relu)
    logsumexp = staticmethod(logsumexp)

    def value(self, f, x):
        return f(x)

    def first(self, f, x, v):
        """(f(x), D f(x)[v]) by an order-1 jet."""
        t = taylor.new_tag()
        y = f(seed(x, v, 1, t))
        return coefficient(y, t, 0), coefficient(y, t, 1)

    def bilinear(self, f, x, u, w):
        """D^2 f(x)[u, w], polarized."""
        return (_second(f, x, u + w) - _second(f, x, u - w)) * 0.25

    def columns(self, f, x):
        return [self.first(f, x, e)[1] for e in _basis(_shape(x))]

    def grad(self, f, argnum=0):
        _only_argnum_0(argnum, "grad")
        return lambda x: _assemble(self.columns(f, x), _shape(x))

    def value_and_grad(self, f, argnum=0):
        _only_argnum_0(argnum, "value_and_grad")
        return lambda x: (self.value(f, x), self.grad(f)(x))

    def jacobian(self, f, argnum=0):
        """Of shape f(x).shape + x.shape."""
        _only_argnum_0(argnum, "jacobian")

        def jac(x):
            cols = self.columns(f, x)
            out = _shape(cols[0])
            return _moved(_assemble(cols, (len(cols),) + out), out, _shape(x))
        return jac

    def jvp(self, f, argnum=0):
        _only_argnum_0(argnum, "jvp")
        return lambda x, v: self.first(f, x, v)

    def vjp(self, f, argnum=0):
        """(f(x), back): back(u) = u times the Jacobian, from its columns."""
        _only_argnum_0(argnum, "vjp")

        def vjp_f(x):
            cols = self.columns(f, x)
            return self.value(f, x), lambda u: _assemble([np.sum(u * c) for c in cols],
                                                         _shape(x))
        return vjp_f

    def hvp(self, f, argnum=0):
        _only_argnum_0(argnum, "hvp")
        return lambda x, v: _assemble([self.bilinear(f, x, e, v)
                                       for e in _basis(_shape(x))], _shape(x))

    def hessian(self, f, argnum=0):
        _only_argnum_0(argnum, "hessian")

        def hess(x):
            shape = _shape(x)
            basis = list(_basis(shape))
            return _assemble([self.bilinear(f, x, a, b) for a in basis for b in basis],
                             shape + shape)
        return hess


def _second(f, x, w):
    """D^2 f(x)[w] by an order-2 jet."""
    t = taylor.new_tag()
    return 2.0 * coefficient(f(seed(x, w, 2, t)), t, 2)


def _moved(stacked, out, shape):
    """(n,) + out -> out + shape: the input's axis last."""
    if out:
        stacked = np.moveaxis(stacked, 0, -1)
    return np.reshape(stacked, out + shape)


def _only_argnum_0(argnum, name):
    if argnum != 0:
        raise NotImplementedError(f"taylor_api.{name}: argnum other than 0")


_JETS = Transforms()
grad = _JETS.grad
value_and_grad = _JETS.value_and_grad
jvp = _JETS.jvp
vjp = _JETS.vjp
hvp = _JETS.hvp
jacobian = _JETS.jacobian
hessian = _JETS.hessian


class CentralDifferences(Transforms):
    """The same API with the derivatives taken at nesting depth `depth`
    (1: the outermost) by central differences of step h, the others by
    jets: a check of the jets themselves, level by level (at a depth
    inside, the differences run on jets of the outer variables).  Second
    derivatives there are differences of the jets' first ones."""

    def __init__(self, depth, h=1e-5):
        self.at = depth
        self.h = h
        self.depth = 0

    def _here(self, fn, jets, *args):
        self.depth += 1
        try:
            return (fn if self.depth == self.at else jets)(*args)
        finally:
            self.depth -= 1

    def value(self, f, x):
        return self._here(f, f, x)

    def first(self, f, x, v):
        def differences(f, x, v):
            h = self.h
            return f(x), (f(x + h * v) - f(x - h * v)) * (0.5 / h)
        return self._here(differences, super().first, f, x, v)

    def bilinear(self, f, x, u, w):
        def differences(f, x, u, w):
            h = self.h
            return (Transforms.first(self, f, x + h * w, u)[1]
                    - Transforms.first(self, f, x - h * w, u)[1]) * (0.5 / h)
        return self._here(differences, super().bilinear, f, x, u, w)
