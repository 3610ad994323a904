"""The functional API: derivatives of plain Python/NumPy functions.

Each transform traces ``f`` at its arguments on a tape of its own (a
``Trace``, trace.py), asks the trace for the derivative (one or a few C
sweeps) and frees the tape.  ``argnum`` is an int or a tuple; gradients
come back in their arguments' types and structures.

``grad`` of a function that itself calls ``grad`` works to second order:
the inner gradient is recorded on the outer tape as one op whose
derivative is an exact Hessian-vector product.  Every other nesting
raises NotImplementedError: its plain-number result would silently cut
off the enclosing derivative's variables.
"""
import numpy as np

from .array import Array
from .extern import ExternRule, record_extern
from .trace import Trace, checked, differentiated
from .value import Value


def _transform(f, argnum, name, derivative, takes_vector=False):
    """g(*args) = derivative(trace of f at args[, vector]): the vector, if
    any, is g's last positional argument."""
    argnum = checked(f, argnum, name)       # at once, not at the first call

    def g(*args, **kwargs):
        vector = ()
        if takes_vector:
            if not args:
                raise TypeError(f"{name} takes the function's arguments, "
                                "then the vector")
            args, vector = args[:-1], (args[-1],)
        tr = Trace(f, args, kwargs, argnum, name)
        try:
            _check_closure(tr, name)
            result = derivative(tr, *vector)
            if tr.outer:
                result = _nested(f, args, kwargs, argnum, tr, name, result)
            return result
        finally:
            tr.release()
    g.__name__ = f"{name}_{getattr(f, '__name__', 'f')}"
    g.__doc__ = f"{name} of {getattr(f, '__name__', 'f')}"
    return g


def value_and_grad(f, argnum=0):
    """g(*args) -> (f(*args), gradient of scalar f w.r.t. args[argnum])."""
    return _transform(f, argnum, "value_and_grad", Trace.value_and_grad)


def grad(f, argnum=0):
    """The gradient of a scalar function f with respect to args[argnum]
    (an int or a tuple), in the arguments' types and shapes."""
    return _transform(f, argnum, "grad", lambda tr: tr.value_and_grad()[1])


def jvp(f, argnum=0):
    """g(*args, v) -> (f(*args), J v): the Jacobian of f times v (v shaped
    like args[argnum]), by one forward-mode sweep."""
    return _transform(f, argnum, "jvp", Trace.jvp, takes_vector=True)


def hvp(f, argnum=0):
    """g(*args, v) -> H v, the exact Hessian of scalar f times v: a tangent
    sweep and a second-order sweep."""
    return _transform(f, argnum, "hvp", Trace.hvp, takes_vector=True)


def jacobian(f, argnum=0):
    """The Jacobian of f w.r.t. args[argnum] (a float or ndarray), of shape
    f(x).shape + x.shape."""
    return _transform(f, argnum, "jacobian", Trace.jacobian)


def hessian(f, argnum=0):
    """The exact Hessian of scalar f w.r.t. args[argnum] (a float or
    ndarray), of shape x.shape + x.shape."""
    return _transform(f, argnum, "hessian", Trace.hessian)


def vjp(f, argnum=0):
    """g(*args) -> (f(*args), vjp_fn): vjp_fn(v) is v times the Jacobian of
    f at args (v shaped like the output).  The trace lives as long as
    vjp_fn."""
    argnum = checked(f, argnum, "vjp")

    def vjp_f(*args, **kwargs):
        tr = first_order_trace(f, args, kwargs, argnum, "vjp")
        return tr.output_value(), tr.vjp
    return vjp_f


# -- a gradient inside a gradient ------------------------------------------------

def first_order_trace(f, args, kwargs, argnum, name):
    """The trace of f at args for a derivative that does not nest (vjp and
    the like, whose results are plain numbers): NotImplementedError where
    its arguments or f's closure hold variables of an enclosing derivative,
    which those plain numbers would silently cut off."""
    tr = Trace(f, args, kwargs, argnum, name)
    try:
        _check_closure(tr, name)
        if any(differentiated(x) for x in tr.outer):
            raise _nesting_error(name)
    except BaseException:
        tr.release()
        raise
    return tr


def _check_closure(tr, name):
    """A variable of an enclosing derivative used inside f (not passed as
    an argument) would be a constant here, and the enclosing derivative
    silently wrong: refuse.  Values of ordinary tapes are constants."""
    if any(differentiated(outer) for outer, _ in tr.tape.imports.values()):
        raise NotImplementedError(
            f"{name}: the function uses a variable of an enclosing derivative "
            "that this derivative does not differentiate (it is closed over, "
            "or passed as an argument outside argnum); derivatives of such "
            "mixed functions are not supported yet: differentiate with "
            "respect to every variable at once (e.g. ad.hessian with a tuple "
            "argnum), or pass it inside argnum")


def _nesting_error(name):
    return NotImplementedError(
        f"{name} inside another derivative or a recording is not supported "
        "yet (its result would not follow the enclosing derivative's "
        "variables); grad and value_and_grad inside a first-order "
        "derivative are (to second order)")


def _nested(f, args, kwargs, argnum, tr, name, result):
    """A derivative whose argument is a Value or Array of an enclosing tape:
    record its result there as ops whose derivatives are exact (the value
    of f has f's gradient, the gradient has the Hessian-vector product)."""
    if name not in ("grad", "value_and_grad"):
        raise _nesting_error(name)
    x = args[argnum] if isinstance(argnum, int) else None
    if not isinstance(x, (Value, Array)) or len(tr.outer) != 1:
        raise NotImplementedError(
            "a derivative of a derivative needs the inner function's argument "
            "to be one float or array")

    def at(xv):
        return [xv if k == argnum else a for k, a in enumerate(args)]

    fname = getattr(f, "__name__", "f")
    gradient_rule = ExternRule(
        lambda xv: grad(f, argnum)(*at(xv), **kwargs),
        lambda g, out, xv: (hvp(f, argnum)(*at(xv), g, **kwargs),),
        f"grad of {fname}",
        jvp=lambda ts, out, xv: hvp(f, argnum)(*at(xv), ts[0], **kwargs))
    if name == "grad":
        return record_extern(gradient_rule, [x], result)
    value, gradient = result
    value_rule = ExternRule(
        lambda xv: value_and_grad(f, argnum)(*at(xv), **kwargs)[0],
        lambda g, out, xv: (np.asarray(g) * grad(f, argnum)(*at(xv), **kwargs),),
        fname,
        jvp=lambda ts, out, xv: float(np.vdot(grad(f, argnum)(*at(xv), **kwargs),
                                              ts[0])))
    return (record_extern(value_rule, [x], value),
            record_extern(gradient_rule, [x], gradient))
