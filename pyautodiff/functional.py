"""The functional API: derivatives of plain Python/NumPy functions.

Each transform traces ``f`` at its arguments on a tape of its own (a
``Trace``, trace.py), asks the trace for the derivative (one or a few C
sweeps) and frees the tape.  ``argnum`` is an int or a tuple; gradients
come back in their arguments' types and structures.

Inside another derivative or a recording (``ad.grad(ad.grad(f))``), a
transform traces f on the tape already being recorded and records its
derivative there (nested.py): it nests to any order.
"""
import numpy as np

from .nested import NestedTrace, nesting
from .pytree import flatten
from .trace import Trace, checked, differentiated


def _transform(f, argnum, name, derivative, takes_vector=False, nested=None):
    """g(*args) = derivative(trace of f at args[, vector]): the vector, if
    any, is g's last positional argument.  A second-order derivative
    whose trace holds ops with rules of first order only (custom ops with
    no jvp) takes nested() instead: the same derivative as a derivative
    of the recorded gradient, which differentiates those rules."""
    argnum = checked(f, argnum, name)       # at once, not at the first call

    def g(*args, **kwargs):
        vector = ()
        if takes_vector:
            if not args:
                raise TypeError(f"{name} takes the function's arguments, "
                                "then the vector")
            args, vector = args[:-1], (args[-1],)
        if nesting():
            return derivative(NestedTrace(f, args, kwargs, argnum, name), *vector)
        tr = Trace(f, args, kwargs, argnum, name)
        try:
            _check_closure(tr, name)
            if any(differentiated(x) for x in tr.outer):
                raise _outside_error(name)
            if nested is not None and not tr.second_order_rules():
                tr.release()
                return nested(*args, *vector, **kwargs)
            try:
                return derivative(tr, *vector)
            except NotImplementedError:
                # a custom op's vjp, differentiated forward in the one-sweep
                # product, holding an op with no jvp: reverse over reverse
                if nested is None or tr.second_order_rules(builtin=True):
                    raise
            tr.release()
            return nested(*args, *vector, **kwargs)
        finally:
            tr.release()
    g.__name__ = f"{name}_{getattr(f, '__name__', 'f')}"
    g.__doc__ = f"{name} of {getattr(f, '__name__', 'f')}"
    return g


def value_and_grad(f, argnum=0):
    """g(*args) -> (f(*args), gradient of scalar f w.r.t. args[argnum])."""
    return _transform(f, argnum, "value_and_grad", lambda tr: tr.value_and_grad())


def grad(f, argnum=0):
    """The gradient of a scalar function f with respect to args[argnum]
    (an int or a tuple), in the arguments' types and shapes."""
    return _transform(f, argnum, "grad", lambda tr: tr.value_and_grad()[1])


def jvp(f, argnum=0):
    """g(*args, v) -> (f(*args), J v): the Jacobian of f times v (v shaped
    like args[argnum]), by one forward-mode sweep."""
    return _transform(f, argnum, "jvp", lambda tr, v: tr.jvp(v), takes_vector=True)


def hvp(f, argnum=0):
    """g(*args, v) -> H v, the exact Hessian of scalar f times v: a tangent
    sweep and a second-order sweep."""
    def nested(*args, **kwargs):
        # reverse over reverse: a reverse sweep passes by the ops that only
        # have a vjp, where a tangent sweep would need their jvp
        *xs, v = args
        return grad(lambda *a: _vdot(grad(f, argnum)(*a, **kwargs), v), argnum)(*xs)
    return _transform(f, argnum, "hvp", lambda tr, v: tr.hvp(v), takes_vector=True,
                      nested=nested)


def jacobian(f, argnum=0):
    """The Jacobian of f w.r.t. args[argnum] (a float or ndarray), of shape
    f(x).shape + x.shape."""
    return _transform(f, argnum, "jacobian", lambda tr: tr.jacobian())


def hessian(f, argnum=0):
    """The exact Hessian of scalar f w.r.t. args[argnum] (a float or
    ndarray), of shape x.shape + x.shape."""
    def nested(*args, **kwargs):
        return jacobian(grad(f, argnum), argnum)(*args, **kwargs)
    return _transform(f, argnum, "hessian", lambda tr: tr.hessian(), nested=nested)


def _vdot(a, b):
    """The sum of the elementwise products of the leaves of a and b."""
    pairs = zip(flatten(a, "a gradient")[0], flatten(b, "the vector")[0])
    return sum(np.sum(x * y) for x, y in pairs)


def vjp(f, argnum=0):
    """g(*args) -> (f(*args), vjp_fn): vjp_fn(v) is v times the Jacobian of
    f at args (v shaped like the output).  The trace lives as long as
    vjp_fn."""
    argnum = checked(f, argnum, "vjp")

    def vjp_f(*args, **kwargs):
        tr = trace_of(f, args, kwargs, argnum, "vjp")
        return tr.output_value(), tr.vjp
    return vjp_f


# -- where the function is traced --------------------------------------------------

def trace_of(f, args, kwargs, argnum, name):
    """The trace of f at args for a derivative that keeps it (vjp and the
    like): on the tape of the derivative under way, if any (nested.py)."""
    if nesting():
        return NestedTrace(f, args, kwargs, argnum, name)
    tr = Trace(f, args, kwargs, argnum, name)
    try:
        _check_closure(tr, name)
        if any(differentiated(x) for x in tr.outer):
            raise _outside_error(name)
    except BaseException:
        tr.release()
        raise
    return tr


def _check_closure(tr, name):
    """Outside any derivative's function, a variable of a derivative still
    under way (kept from it, or from a vjp's trace) used inside f would be
    a constant here, and that derivative silently wrong: refuse.  Values
    of ordinary tapes are constants."""
    if any(differentiated(outer) for outer, _ in tr.tape.imports.values()):
        raise _outside_error(name)


def _outside_error(name):
    return NotImplementedError(
        f"{name}: the function uses a value traced by a derivative that is "
        "not under way here (kept from its function, or from a vjp's trace); "
        "take derivatives inside the function being differentiated, or of "
        "plain numbers")
