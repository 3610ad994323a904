"""A drop-in for HIPS autograd: change the imports of an autograd program,

    from pyautodiff.autograd import grad, elementwise_grad, hessian
    import pyautodiff.autograd.numpy as np

and it runs unchanged, with autograd's call conventions (argnum, return
orders), on pyautodiff's C tape.  Each function here is pyautodiff's
functional API under autograd's name.  Derivatives nest to any order, as
autograd's do: grad of grad of grad, make_vjp inside make_jvp, a function
closing over the enclosing one's variables.

The rest of autograd's API is in the submodules of the same names:
extend (primitive, defvjp, defjvp ...), core (the unary make_vjp(fun, x)
and make_jvp(fun, x), vspace, the rule registries), wrap_util
(unary_to_nary), builtins, misc (flatten, const_graph), misc.optimizers
(sgd, rmsprop, adam) and test_util (check_grads), each name with
autograd's signature.
"""
import builtins as _py
import inspect as _inspect
import warnings as _warnings

import numpy as _np

from .. import functional as _functional
from ..array import Array
from ..complex_array import ComplexArray
from ..functional import hvp, trace_of
from ..pytree import flatten as _flatten, unflatten as _unflatten
from ..trace import checked
from ..value import Value
# autograd's names for these (this module's code uses Python's own, as _py.*)
from .builtins import dict, isinstance, list, tuple, type   # noqa: A001
from .extend import (defjvp_argnums as _defjvp_argnums,
                     defvjp_argnums as _defvjp_argnums, primitive)
from . import builtins, extend, misc, numpy, test_util   # noqa: F401  autograd's submodules

__all__ = ["grad", "value_and_grad", "elementwise_grad", "jacobian",
           "hessian", "hessian_vector_product", "hessian_tensor_product",
           "make_vjp", "make_jvp", "grad_and_aux", "deriv", "make_hvp",
           "tensor_jacobian_product", "vector_jacobian_product",
           "make_ggnvp", "grad_named", "multigrad_dict", "checkpoint", "holomorphic_grad",
           "primitive", "dict", "isinstance", "list", "tuple", "type"]


# pyautodiff's operators under autograd's parameter names (fun, not f)

def grad(fun, argnum=0):
    """The gradient of scalar fun in argument argnum (ad.grad)."""
    return _functional.grad(fun, argnum)


def value_and_grad(fun, argnum=0):
    """g(*args) -> (fun(*args), its gradient) (ad.value_and_grad)."""
    return _functional.value_and_grad(fun, argnum)


def jacobian(fun, argnum=0):
    """fun's Jacobian, of shape fun's output's + the argument's
    (ad.jacobian)."""
    return _functional.jacobian(fun, argnum)


def hessian(fun, argnum=0):
    """The Hessian of scalar fun, exact (ad.hessian)."""
    return _functional.hessian(fun, argnum)


def deriv(fun, argnum=0):
    """fun's derivative in the direction of ones (for a function of one
    float: its derivative, of any output shape), by one forward sweep."""
    jvp_maker = make_jvp(fun, argnum)

    def derivative(*args, **kwargs):
        argnums = (argnum,) if _py.isinstance(argnum, int) else argnum
        ones = [_ones_like(args[k]) for k in argnums]
        direction = ones[0] if _py.isinstance(argnum, int) else _py.tuple(ones)
        return jvp_maker(*args, **kwargs)(direction)[1]
    return derivative


def _ones_like(x):
    leaves, structure = _flatten(x, "deriv")
    return _unflatten(structure, [1.0 if kind == "float" else _np.ones(shape)
                                  for kind, shape in zip(structure.kinds,
                                                         structure.shapes)])


def elementwise_grad(fun, argnum=0):
    """The sum of the Jacobian's rows: for an elementwise fun, each
    element's derivative (the gradient of sum(fun)); a complex fun raises
    TypeError, as autograd's does."""
    argnum = checked(fun, argnum, "elementwise_grad")

    def summed(*args, **kwargs):
        out = fun(*args, **kwargs)
        if _np.iscomplexobj(out):
            raise TypeError("Elementwise_grad only applies to real-output functions.")
        return out.sum() if _py.isinstance(out, Array) else _np.sum(out)
    summed.__name__ = getattr(fun, "__name__", "fun")
    return grad(summed, argnum)


def hessian_tensor_product(fun, argnum=0):
    """g(*args, tensor) -> the Hessian of fun at args times tensor (shaped
    like args[argnum]), exact: a tangent and a second-order sweep."""
    return hvp(fun, argnum)


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """g(*args, tensor) -> tensor times the Jacobian of fun at args,
    contracting tensor's axes with the leading axes of fun's output (all
    of them: one reverse sweep; fewer: one per remaining output element)."""
    argnum = checked(fun, argnum, "tensor_jacobian_product")

    def product(*args, **kwargs):
        args, tensor = args[:-1], args[-1]
        vjp, out = make_vjp(fun, argnum)(*args, **kwargs)
        k = _np.ndim(tensor)
        if _np.shape(out)[:k] != _np.shape(tensor):
            raise ValueError(f"tensor_jacobian_product: the tensor has shape "
                             f"{_np.shape(tensor)}, which does not lead the "
                             f"output's shape {_np.shape(out)}")
        rest = _np.shape(out)[k:]
        if not rest:
            return vjp(tensor)
        rows = []
        for r in _np.ndindex(*rest):
            unit = _np.zeros(rest)
            unit[r] = 1.0
            rows.append(vjp(_np.multiply.outer(tensor, unit)))
        if _np.ndim(argnum) == 0:
            return _np.reshape(rows, rest + _np.shape(rows[0]))
        return _py.tuple(_np.reshape([row[j] for row in rows],
                                           rest + _np.shape(rows[0][j]))
                               for j in range(len(argnum)))
    return product


vector_jacobian_product = tensor_jacobian_product


def make_ggnvp(f, g=lambda y: 0.5 * _np.sum(y ** 2, axis=-1), f_argnum=0):
    """h(*args) -> ggnvp: ggnvp(v) = J^T H J v, the generalized Gauss-Newton
    matrix of g(f(x)) (J: f's Jacobian at x = args[f_argnum], H: g's
    Hessian at f(x)) times v; f is traced once for both J v and J^T."""
    f_argnum = checked(f, f_argnum, "make_ggnvp")

    def ggnvp_maker(*args, **kwargs):
        tr = trace_of(f, args, kwargs, f_argnum, "make_ggnvp")
        g_hvp, _ = make_hvp(g)(tr.output_value())

        def ggnvp(v):
            return tr.vjp(g_hvp(tr.jvp(v)[1]))
        return ggnvp
    return ggnvp_maker


def grad_named(fun, argname):
    """grad with respect to the argument named argname (not *args or
    **kwargs)."""
    names = _inspect.getfullargspec(fun).args
    if argname not in names:
        raise ValueError(f"grad_named: {getattr(fun, '__name__', fun)} has no "
                         f"argument named {argname!r} (it has {names})")
    return grad(fun, names.index(argname))


def multigrad_dict(fun):
    """g(*args, **kwargs) -> {name: gradient} of scalar fun with respect to
    every one of its arguments at once (defaults included; *args as a
    tuple, **kwargs as a dict), keyed by the signature's names in order."""
    sig = _inspect.signature(fun)
    kinds = {name: p.kind for name, p in sig.parameters.items()}

    def call(arguments):
        args, kwargs = [], {}
        for name, value in arguments.items():
            kind = kinds[name]
            if kind == _inspect.Parameter.VAR_POSITIONAL:
                args.extend(value)
            elif kind == _inspect.Parameter.VAR_KEYWORD:
                kwargs.update(value)
            elif kind == _inspect.Parameter.KEYWORD_ONLY:
                kwargs[name] = value
            else:
                args.append(value)
        return fun(*args, **kwargs)

    def gradfun(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = {name: (_py.tuple(v) if kinds[name] == _inspect.Parameter.VAR_POSITIONAL
                            else v) for name, v in bound.arguments.items()}
        return grad(call)(arguments)
    gradfun.__name__ = f"multigrad_dict_{getattr(fun, '__name__', 'fun')}"
    return gradfun


def checkpoint(fun):
    """fun as one op that keeps none of its intermediate values: its
    derivatives run fun again (traced) at the op's arguments."""
    def vjps(argnums, ans, args, kwargs):
        vjp, _ = make_vjp(fun, argnums)(*args, **kwargs)
        return vjp

    def jvps(argnums, gs, ans, args, kwargs):
        return make_jvp(fun, argnums)(*args, **kwargs)(_py.tuple(gs))[1]

    wrapped = primitive(fun)
    _defvjp_argnums(wrapped, vjps)
    _defjvp_argnums(wrapped, jvps)
    return wrapped


def holomorphic_grad(fun, argnum=0):
    """The complex derivative f'(z) of a holomorphic fun: the gradient of
    its real part (autograd's definition), with autograd's warning where
    the input is not complex."""
    def real_part(*args, **kwargs):
        return _np.real(fun(*args, **kwargs))
    real_part.__name__ = getattr(fun, "__name__", "fun")
    gradient = grad(real_part, argnum)

    def holomorphic(*args, **kwargs):
        # (autograd's test is of the argument's vector space: a list or a
        # tuple of arguments is never a complex one)
        x = args[argnum] if _np.ndim(argnum) == 0 else None
        if _py.isinstance(x, (_py.list, _py.tuple, _py.dict)) or not _np.iscomplexobj(x):
            _warnings.warn("Input to holomorphic_grad is not complex", stacklevel=2)
        return gradient(*args, **kwargs)
    return holomorphic


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
    """g(*args) -> (hvp, gradient of fun at args): hvp(v) is the Hessian
    times v (autograd's make_hvp is the vjp of grad(fun), so its second
    result is the gradient, not fun's value)."""
    argnum = checked(fun, argnum, "make_hvp")

    def hvp_maker(*args, **kwargs):
        tr = trace_of(fun, args, kwargs, argnum, "make_hvp")
        return tr.hvp, tr.value_and_grad()[1]
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
    if _py.isinstance(x, Value):
        return x.data
    if _py.isinstance(x, (Array, ComplexArray)):
        return x.data.copy()
    if _py.isinstance(x, (_py.list, _py.tuple)):
        return _py.type(x)(_plain(e) for e in x)
    if _py.isinstance(x, _py.dict):
        return {k: _plain(v) for k, v in x.items()}
    return x
