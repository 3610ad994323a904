"""A drop-in for HIPS autograd: change the imports of an autograd program,

    from pyautodiff.autograd import grad, elementwise_grad, hessian
    import pyautodiff.autograd.numpy as np

and it runs unchanged, with autograd's call conventions (argnum, return
orders), on pyautodiff's C tape.  Each function here is pyautodiff's
functional API under autograd's name.  Derivatives nest to second order
(grad of grad); every nesting that would not be exact (a third level,
make_vjp or make_jvp inside a derivative) raises NotImplementedError.
"""
import numpy as _np

from ..array import Array
from ..functional import (trace_of, grad, hessian, hvp, jacobian,
                          value_and_grad)
from ..trace import checked
from ..value import Value

__all__ = ["grad", "value_and_grad", "elementwise_grad", "jacobian",
           "hessian", "hessian_vector_product", "make_vjp", "make_jvp",
           "grad_and_aux", "deriv", "make_hvp"]

deriv = grad


def elementwise_grad(fun, argnum=0):
    """The sum of the Jacobian's rows: for an elementwise fun, each
    element's derivative (the gradient of sum(fun))."""
    argnum = checked(fun, argnum, "elementwise_grad")

    def summed(*args, **kwargs):
        out = fun(*args, **kwargs)
        return out.sum() if isinstance(out, Array) else _np.sum(out)
    summed.__name__ = getattr(fun, "__name__", "fun")
    return grad(summed, argnum)


def hessian_vector_product(fun, argnum=0):
    """g(*args, vector) -> the Hessian of fun at args times vector."""
    return hvp(fun, argnum)


def make_vjp(fun, argnum=0):
    """g(*args) -> (vjp, fun(*args)): vjp(v) is v times the Jacobian."""
    argnum = checked(fun, argnum, "make_vjp")

    def vjp_maker(*args, **kwargs):
        tr = trace_of(fun, args, kwargs, argnum, "make_vjp")
        return tr.vjp, tr.output_value()
    return vjp_maker


def make_jvp(fun, argnum=0):
    """g(*args) -> jvp: jvp(v) -> (fun(*args), Jacobian times v)."""
    argnum = checked(fun, argnum, "make_jvp")

    def jvp_maker(*args, **kwargs):
        return trace_of(fun, args, kwargs, argnum, "make_jvp").jvp
    return jvp_maker


def make_hvp(fun, argnum=0):
    """g(*args) -> (hvp, fun(*args)): hvp(v) is the Hessian times v."""
    argnum = checked(fun, argnum, "make_hvp")

    def hvp_maker(*args, **kwargs):
        tr = trace_of(fun, args, kwargs, argnum, "make_hvp")
        return tr.hvp, tr.scalar_output()[1]
    return hvp_maker


def grad_and_aux(fun, argnum=0):
    """fun returns (value, aux): g(*args) -> (gradient of value, aux), aux
    with its traced numbers turned into plain ones."""
    argnum = checked(fun, argnum, "grad_and_aux")
    aux = []

    def value_only(*args, **kwargs):
        value, extra = fun(*args, **kwargs)
        aux.append(extra)
        return value
    value_only.__name__ = getattr(fun, "__name__", "fun")
    gradient = grad(value_only, argnum)

    def grad_and_aux_fun(*args, **kwargs):
        aux.clear()
        g = gradient(*args, **kwargs)
        return g, _plain(aux[-1])
    return grad_and_aux_fun


def _plain(x):
    if isinstance(x, Value):
        return x.data
    if isinstance(x, Array):
        return x.data.copy()
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(e) for e in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x
