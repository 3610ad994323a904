"""autograd.test_util: derivatives checked against central differences.

    check_grads(f, modes=['fwd', 'rev'], order=2)(*args)

checks f's forward-mode (ad.jvp: autograd's make_jvp) and reverse-mode
(ad.vjp: make_vjp) derivatives at args in a random direction against
central differences of f, and, for order > 1, the derivatives of those derivatives (the jvp and
vjp as functions of the point and the direction) the same way.  Arguments
and results may be nests of lists, tuples and dicts of floats and arrays.
A mismatch raises AssertionError with both numbers.  The directions come
from numpy.random (seed it for a repeatable check).
"""
import itertools

import numpy as np

from ..functional import jvp, vjp
from ..pytree import flatten, unflatten

__all__ = ["check_grads", "combo_check", "check_vjp", "check_jvp",
           "check_equivalent", "make_numerical_jvp", "scalar_close"]

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _name(f):
    return getattr(f, "__name__", "[unknown name]")


# -- nests as vectors -------------------------------------------------------------

def _parts(x):
    leaves, structure = flatten(x, "check_grads")
    return [np.asarray(leaf, dtype=np.float64) for leaf in leaves], structure


def _rebuilt(structure, arrays):
    return unflatten(structure, [float(a) if kind == "float" else a
                                 for kind, a in zip(structure.kinds, arrays)])


def _randn_like(x):
    _, structure = _parts(x)
    return _rebuilt(structure, [np.random.randn(*shape) for shape in structure.shapes])


def _inner(x, y):
    (xs, _), (ys, _) = _parts(x), _parts(y)
    return float(sum(np.vdot(a, b) for a, b in zip(xs, ys)))


def _combined(a, x, b, y):
    """a x + b y, in x's nest."""
    (xs, structure), (ys, _) = _parts(x), _parts(y)
    return _rebuilt(structure, [a * u + b * v for u, v in zip(xs, ys)])


def _same_space(x, y, what):
    # (a float and a 0-d array are the same space, as for autograd)
    sx, sy = _parts(x)[1], _parts(y)[1]
    if sx.node != sy.node or sx.shapes != sy.shapes:
        raise AssertionError(f"{what}: the nests differ ({sx.shapes} vs "
                             f"{sy.shapes})")


# -- the checks ---------------------------------------------------------------------

def make_numerical_jvp(f, x):
    """v -> (f(x + v eps/2) - f(x - v eps/2)) / eps."""
    def jvp(v):
        plus = f(_combined(1.0, x, EPS / 2, v))
        minus = f(_combined(1.0, x, -EPS / 2, v))
        return _combined(1.0 / EPS, plus, -1.0 / EPS, minus)
    return jvp


def check_vjp(f, x):
    """<x_v, vjp(y_v)> against <y_v, J x_v> by central differences."""
    y, vjp_fn = vjp(f)(x)
    x_v, y_v = _randn_like(x), _randn_like(y)
    vjp_y = vjp_fn(y_v)
    _same_space(vjp_y, x, f"VJP of {_name(f)} against its argument")
    exact = _inner(x_v, vjp_y)
    numeric = _inner(y_v, make_numerical_jvp(f, x)(x_v))
    if not scalar_close(numeric, exact):
        raise AssertionError(f"Derivative (VJP) check of {_name(f)} failed with "
                             f"arg {x}:\nanalytic: {exact}\nnumeric:  {numeric}")


def check_jvp(f, x):
    """jvp(x_v) against central differences in the direction x_v."""
    x_v = _randn_like(x)
    _, exact = jvp(f)(x, x_v)
    numeric = make_numerical_jvp(f, x)(x_v)
    try:
        check_equivalent(exact, numeric)
    except AssertionError as exc:
        raise AssertionError(f"Derivative (JVP) check of {_name(f)} failed with "
                             f"arg {x}: {exc}") from None


def check_equivalent(x, y):
    """x and y have the same nest, and agree in a random direction."""
    _same_space(x, y, "check_equivalent")
    v = _randn_like(x)
    a, b = _inner(x, v), _inner(y, v)
    if not scalar_close(a, b):
        raise AssertionError(f"Value mismatch:\nx: {x}\ny: {y}\n"
                             f"(in a random direction: {a} vs {b})")


def _unary(fun, argnum, args, kwargs):
    """(f, x): fun as a function of args[argnum] alone (of the tuple of
    them for a tuple argnum), and its value there."""
    many = not isinstance(argnum, int)

    def f(x):
        new = list(args)
        for k, v in zip(argnum, x) if many else [(argnum, x)]:
            new[k] = v
        return fun(*new, **kwargs)
    f.__name__ = _name(fun)
    x = tuple(args[k] for k in argnum) if many else args[argnum]
    return f, x


def check_grads(fun, argnum=0, modes=("fwd", "rev"), order=2):
    """g(*args, **kwargs) checks fun's derivatives at args (see the module's
    docstring); argnum is an int or a tuple, as for grad."""
    if not all(m in ("fwd", "rev") for m in modes):
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', got {modes!r}")

    def checker(*args, **kwargs):
        f, x = _unary(fun, argnum, args, kwargs)
        if "fwd" in modes:
            check_jvp(f, x)
            if order > 1:
                def jvp_f(x, v):
                    return jvp(f)(x, v)[1]
                jvp_f.__name__ = f"jvp_{_name(f)}"
                check_grads(jvp_f, (0, 1), modes, order - 1)(x, _randn_like(x))
        if "rev" in modes:
            check_vjp(f, x)
            if order > 1:
                def vjp_f(x, v):
                    return vjp(f)(x)[1](v)
                vjp_f.__name__ = f"vjp_{_name(f)}"
                check_grads(vjp_f, (0, 1), modes, order - 1)(x, _randn_like(f(x)))
    return checker


def combo_check(fun, *args, **kwargs):
    """g(*arg_choices, **kwarg_choices) runs check_grads(fun, *args,
    **kwargs) at every combination of the choices (each a list)."""
    def checker(*arg_choices, **kwarg_choices):
        keyed = [[(k, v) for v in vs] for k, vs in kwarg_choices.items()]
        for chosen_args in itertools.product(*arg_choices):
            for chosen_kwargs in itertools.product(*keyed):
                check_grads(fun, *args, **kwargs)(*chosen_args, **dict(chosen_kwargs))
    return checker
