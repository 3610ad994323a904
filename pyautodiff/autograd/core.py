"""autograd.core: the names of it that programs import -- the vjp and jvp
makers and the primitive decorators (autograd.extend's).  autograd's
vector spaces (vspace, VSpace) and its rule registries are not there: the
rules of a primitive are set with defvjp and defjvp.
"""
from . import make_jvp, make_vjp
from .extend import (defjvp, defjvp_argnum, defjvp_argnums, defvjp, defvjp_argnum,
                     defvjp_argnums, notrace_primitive, primitive)

__all__ = ["make_vjp", "make_jvp", "primitive", "notrace_primitive", "defvjp",
           "defvjp_argnum", "defvjp_argnums", "defjvp", "defjvp_argnum",
           "defjvp_argnums"]
