"""autograd.core: the unary vjp and jvp makers, the rule registries and the
vector spaces, with autograd.core's signatures and meanings:

    make_vjp(fun, x) -> (vjp, fun(x))    vjp(g) is g times fun's Jacobian at x
    make_jvp(fun, x) -> jvp              jvp(v) -> (fun(x), the Jacobian times v)

fun is a function of the one argument x (a float, an array or a nest of
them); the package's make_vjp(fun, argnum=0) and make_jvp are their n-ary
forms (``make_vjp(fun)(x)`` is ``core.make_vjp(fun, x)``), as
wrap_util.unary_to_nary makes them.  primitive_vjps and primitive_jvps are
the rules of the functions made by primitive() (extend's registries;
NumPy's functions are not there: their rules are pyautodiff's own),
vspace and VSpace the vector spaces, getval and isbox tracer's.  ``primitive`` is autograd.core's:
extend's, with the deprecated rule methods of autograd's first API
(``f.defvjp(...)``, ``f.defgrad(...)``, ``f.defvjp_is_zero(...)``).

autograd.core's tracing machinery (trace, Node, VJPNode, JVPNode,
backward_pass, Box and the sparse gradient objects) has no counterpart:
pyautodiff records on a tape and sweeps it in C.
"""
import functools
import warnings

from ..functional import trace_of
from ._vspace import VSpace, vspace
from .extend import (def_linear, defjvp, defjvp_argnum, defjvp_argnums, defvjp,
                     defvjp_argnum, defvjp_argnums, primitive_jvps, primitive_vjps)
from .extend import primitive as _primitive
from .tracer import getval, isbox

__all__ = ["make_vjp", "make_jvp", "vspace", "VSpace", "primitive",
           "primitive_vjps", "primitive_jvps", "defvjp", "defvjp_argnum",
           "defvjp_argnums", "defjvp", "defjvp_argnum", "defjvp_argnums",
           "def_linear", "sum_outgrads", "getval", "isbox"]


def make_vjp(fun, x):
    """(vjp, fun(x)): vjp(g) is g times fun's Jacobian at x, a cotangent
    shaped like x."""
    tr = trace_of(fun, (x,), {}, 0, "make_vjp")
    return tr.vjp, tr.output_value()


def make_jvp(fun, x):
    """jvp: jvp(v) -> (fun(x), fun's Jacobian at x times v), v shaped like
    x."""
    return trace_of(fun, (x,), {}, 0, "make_jvp").jvp


def sum_outgrads(gs):
    """The sum of the vectors gs (of one vector space; at least one)."""
    return functools.reduce(lambda total, g: vspace(g).add(total, g), gs)


# -- autograd's first rule API, deprecated ---------------------------------------------

def primitive(f_raw):
    """extend.primitive(f_raw), which also takes its VJP rules the old
    way, each call adding the rule of one argument (with a
    DeprecationWarning):

        f.defvjp(vjp, argnum=0)        vjp(g, ans, vs, gvs, *args, **kwargs)
                                       -> the cotangent (vs, gvs: the
                                       argument's and g's vspaces)
        f.defgrad(vjpmaker, argnum=0)  vjpmaker(ans, *args, **kwargs) -> vjp
        f.defvjp_is_zero(argnums=(0,)) no derivative in these arguments
    """
    f = _primitive(f_raw)
    makers = {}          # argnum -> extend.defvjp's rule

    def define(new, how):
        warnings.warn(f"{how} is deprecated: give the rules with "
                      "pyautodiff.autograd.extend.defvjp(f, ...)",
                      DeprecationWarning, stacklevel=3)
        makers.update(new)
        argnums = sorted(makers)
        defvjp(f, *[makers[k] for k in argnums], argnums=argnums)

    def old_defvjp(vjp, argnum=0):
        def maker(ans, *args, **kwargs):
            return lambda g: vjp(g, ans, vspace(args[argnum]), vspace(g),
                                 *args, **kwargs)
        define({argnum: maker}, "f.defvjp(vjp, argnum)")

    def defgrad(vjpmaker, argnum=0):
        define({argnum: vjpmaker}, "f.defgrad(vjpmaker, argnum)")

    def defvjp_is_zero(argnums=(0,)):
        define(dict.fromkeys(argnums), "f.defvjp_is_zero(argnums)")

    f.defvjp, f.defgrad, f.defvjp_is_zero = old_defvjp, defgrad, defvjp_is_zero
    return f
