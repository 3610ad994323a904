"""autograd.test_util: derivatives checked against central differences.

    check_grads(f, modes=['fwd', 'rev'], order=2)(*args)

checks f's forward-mode (core.make_jvp) and reverse-mode (core.make_vjp)
derivatives at args in a random direction against central differences of
f, and, for order > 1, the derivatives of those derivatives (the jvp and
vjp as functions of the point and the direction) the same way.  Arguments
and results may be nests of lists, tuples and dicts of floats and arrays,
whose arithmetic is their vspace's (core.vspace).  A mismatch raises
AssertionError with both numbers.  The directions come from numpy.random
(seed it for a repeatable check).
"""
import itertools

from ..pytree import flatten
from .core import make_jvp, make_vjp, vspace
from .wrap_util import unary_to_nary

__all__ = ["check_grads", "combo_check", "check_vjp", "check_jvp",
           "check_equivalent", "make_numerical_jvp", "scalar_close"]

TOL = 1e-6
RTOL = 1e-6
EPS = 1e-6


def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _name(f):
    return getattr(f, "__name__", "[unknown name]")


def _same_space(x, y, what):
    """x and y are nests of the same structure and shapes.  (Not their
    vspaces' equality, which also compares dtypes: pyautodiff's
    derivatives are float64 whatever the real dtype of the argument.)"""
    sx, sy = flatten(x, what)[1], flatten(y, what)[1]
    if sx.node != sy.node or sx.shapes != sy.shapes:
        raise AssertionError(f"{what}: the nests differ ({sx.shapes} vs "
                             f"{sy.shapes})")


# -- the checks ---------------------------------------------------------------------

def make_numerical_jvp(f, x):
    """v -> (f(x + v eps/2) - f(x - v eps/2)) / eps."""
    x_vs, y_vs = vspace(x), vspace(f(x))

    def jvp(v):
        plus = f(x_vs.add(x, x_vs.scalar_mul(v, EPS / 2)))
        minus = f(x_vs.add(x, x_vs.scalar_mul(v, -EPS / 2)))
        return y_vs.scalar_mul(y_vs.add(plus, y_vs.scalar_mul(minus, -1.0)), 1.0 / EPS)
    return jvp


def check_vjp(f, x):
    """<x_v, vjp(y_v)> against <y_v, J x_v> by central differences."""
    vjp, y = make_vjp(f, x)
    x_vs, y_vs = vspace(x), vspace(y)
    x_v, y_v = x_vs.randn(), y_vs.randn()
    vjp_y = x_vs.covector(vjp(y_vs.covector(y_v)))
    _same_space(vjp_y, x, f"VJP of {_name(f)} against its argument")
    exact = x_vs.inner_prod(x_v, vjp_y)
    numeric = y_vs.inner_prod(y_v, make_numerical_jvp(f, x)(x_v))
    if not scalar_close(numeric, exact):
        raise AssertionError(f"Derivative (VJP) check of {_name(f)} failed with "
                             f"arg {x}:\nanalytic: {exact}\nnumeric:  {numeric}")


def check_jvp(f, x):
    """jvp(x_v) against central differences in the direction x_v."""
    x_v = vspace(x).randn()
    exact = make_jvp(f, x)(x_v)[1]
    numeric = make_numerical_jvp(f, x)(x_v)
    try:
        check_equivalent(exact, numeric)
    except AssertionError as exc:
        raise AssertionError(f"Derivative (JVP) check of {_name(f)} failed with "
                             f"arg {x}: {exc}") from None


def check_equivalent(x, y):
    """x and y have the same nest, and agree in a random direction."""
    _same_space(x, y, "check_equivalent")
    x_vs = vspace(x)
    v = x_vs.randn()
    a, b = x_vs.inner_prod(x, v), x_vs.inner_prod(y, v)
    if not scalar_close(a, b):
        raise AssertionError(f"Value mismatch:\nx: {x}\ny: {y}\n"
                             f"(in a random direction: {a} vs {b})")


def check_grads(fun, argnum=0, modes=("fwd", "rev"), order=2):
    """g(*args, **kwargs) checks fun's derivatives at args (see the module's
    docstring); argnum is an int or a tuple, as for grad."""
    if not all(m in ("fwd", "rev") for m in modes):
        raise ValueError(f"check_grads: modes are 'fwd' and 'rev', got {modes!r}")
    return unary_to_nary(_check_grads)(fun, argnum, modes, order)


def _check_grads(f, x, modes, order):
    if "fwd" in modes:
        check_jvp(f, x)
        if order > 1:
            def jvp_f(x, v):
                return make_jvp(f, x)(v)[1]
            jvp_f.__name__ = f"jvp_{_name(f)}"
            check_grads(jvp_f, (0, 1), modes, order - 1)(x, vspace(x).randn())
    if "rev" in modes:
        check_vjp(f, x)
        if order > 1:
            def vjp_f(x, v):
                return make_vjp(f, x)[0](v)
            vjp_f.__name__ = f"vjp_{_name(f)}"
            check_grads(vjp_f, (0, 1), modes, order - 1)(x, vspace(f(x)).randn())


def combo_check(fun, *args, **kwargs):
    """g(*arg_choices, **kwarg_choices) runs check_grads(fun, *args,
    **kwargs) at every combination of the choices (each a list)."""
    def checker(*arg_choices, **kwarg_choices):
        keyed = [[(k, v) for v in vs] for k, vs in kwarg_choices.items()]
        for chosen_args in itertools.product(*arg_choices):
            for chosen_kwargs in itertools.product(*keyed):
                check_grads(fun, *args, **kwargs)(*chosen_args, **dict(chosen_kwargs))
    return checker
