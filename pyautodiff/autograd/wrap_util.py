"""autograd.wrap_util: n-ary operators from unary ones.

    @unary_to_nary
    def grad(fun, x):              # fun: a function of x alone
        vjp, _ = make_vjp(fun, x)  # (pyautodiff.autograd.core's)
        return vjp(1.0)

    grad(f, argnum=1)(a, b)        # the gradient of f in b, at (a, b)

``unary_to_nary(op)`` is ``nary(fun, argnum=0, *op_args, **op_kwargs)``:
a function of fun's arguments that applies ``op(unary_fun, x, *op_args,
**op_kwargs)``, where x is the argument at argnum (a tuple of them for a
tuple argnum) and unary_fun is fun as a function of x, its other arguments
held at the call's.  Named after op and fun as autograd names them
(``grad_of_f_wrt_argnum_1``).
"""
from ..trace import checked

__all__ = ["unary_to_nary", "wraps", "wrap_nary_f", "get_name", "get_doc"]


def get_name(f):
    return getattr(f, "__name__", "[unknown name]")


def get_doc(f):
    return getattr(f, "__doc__", "")


def wraps(fun, namestr="{fun}", docstr="{doc}", **kwargs):
    """A decorator naming a function after fun: __name__ and __doc__ are
    namestr and docstr formatted with fun's name, fun's doc and kwargs
    (left as they are where that fails, as for a builtin)."""
    def named(f):
        try:
            f.__name__ = namestr.format(fun=get_name(fun), **kwargs)
            f.__doc__ = docstr.format(fun=get_name(fun), doc=get_doc(fun), **kwargs)
        except (AttributeError, KeyError, TypeError):
            pass
        return f
    return named


def wrap_nary_f(fun, op, argnum):
    """The name and doc of op applied to fun with respect to argnum."""
    return wraps(fun, "{op}_of_{fun}_wrt_argnum_{argnum}",
                 "    {op} of function {fun} with respect to argument number "
                 "{argnum}: takes {fun}'s arguments and returns its {op}.\n",
                 op=get_name(op), argnum=argnum)


def unary_to_nary(unary_operator):
    """The n-ary form of unary_operator (see the module's docstring)."""
    @wraps(unary_operator)
    def nary_operator(fun, argnum=0, *nary_op_args, **nary_op_kwargs):
        argnum = checked(fun, argnum, get_name(unary_operator))
        many = isinstance(argnum, tuple)

        @wrap_nary_f(fun, unary_operator, argnum)
        def nary_f(*args, **kwargs):
            @wraps(fun)
            def unary_f(x):
                new_args = list(args)
                for k, v in zip(argnum, x) if many else [(argnum, x)]:
                    new_args[k] = v
                return fun(*new_args, **kwargs)

            x = tuple(args[k] for k in argnum) if many else args[argnum]
            return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)
        return nary_f
    return nary_operator
