"""autograd.extend: functions with derivative rules of their own.

    @primitive
    def logsumexp(x):
        ...                                   # plain NumPy
    defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))

``primitive(f)`` called on plain numbers is ``f``.  Called with Values or
Arrays among its positional arguments (what a derivative traces), it runs
``f`` on their plain numbers and records the call as one op of the tape
(``ad.custom_op``), whose rules are the ones registered here, with
autograd's conventions:

    defvjp(f, vjpmaker0, vjpmaker1, ..., argnums=...)
        vjpmaker_k(ans, *args, **kwargs) -> (g -> cotangent of args[k])
    defvjp_argnum(f, vjpmaker)    vjpmaker(argnum, ans, args, kwargs) -> vjp
    defvjp_argnums(f, vjpmaker)   vjpmaker(argnums, ans, args, kwargs)
                                  -> (g -> one cotangent per argnum)
    defjvp(f, jvp0, jvp1, ..., argnums=...)
        jvp_k(g, ans, *args, **kwargs) -> the output's tangent ('same': f
        itself, for an f linear in args[k])
    defjvp_argnum(f, jvpmaker)    jvpmaker(argnum, g, ans, args, kwargs)
    defjvp_argnums(f, jvpmaker)   jvpmaker(argnums, gs, ans, args, kwargs)
    def_linear(f)                 f is linear in each argument (its jvps)

The rules live where autograd keeps them: ``primitive_vjps[f]`` and
``primitive_jvps[f]`` (also in autograd.core) hold a primitive's rules in
their joint forms (defvjp_argnums's and defjvp_argnums's); assigning or
popping there is defining or removing them.

A ``None`` rule says the argument has no derivative (a zero, as autograd
reads it).  An argument that the derivative needs but no rule covers
raises NotImplementedError naming the primitive and the argument: a
missing rule is never taken for a zero.

The rules are called on plain numbers at first order and on traced
values inside another derivative, so a primitive whose rules use NumPy
on their arguments has derivatives of every order, as in autograd.  A
primitive returns one float or array (autograd's boxes of tuples are not
there).  There is no Box class: Values and Arrays are the boxes.
``vspace(x)`` is the vector space of x (a float, an array or a nest of
them), as autograd's.
"""
import functools
import weakref

import numpy as np

from .. import array as _array
from ..extern import custom_op
from ..value import Value
from ._vspace import VSpace, vspace  # noqa: F401  (autograd.extend's names)

__all__ = ["primitive", "notrace_primitive", "defvjp", "defvjp_argnum",
           "defvjp_argnums", "defjvp", "defjvp_argnum", "defjvp_argnums",
           "def_linear", "vspace", "VSpace"]

# The rules of each primitive, keyed by it: primitive_vjps[f](argnums, ans,
# args, kwargs) -> (g -> one cotangent per argnum); primitive_jvps[f](argnums,
# gs, ans, args, kwargs) -> the output's tangent.  Weak keys: a primitive
# made on the fly (checkpoint's) goes with its rules.  A rule must not hold
# its own primitive (or the entry would live for ever): rules reach the raw
# function, f.fun.
primitive_vjps = weakref.WeakKeyDictionary()
primitive_jvps = weakref.WeakKeyDictionary()


def _traced(x):
    return isinstance(x, (Value, _array.Array))


def _plain(x):
    return x.data if _traced(x) else x


def _name(f):
    return getattr(f, "__name__", repr(f))


def primitive(f_raw):
    """f_raw as an op of its own: see the module's docstring."""
    @functools.wraps(f_raw)
    def f_wrapped(*args, **kwargs):
        traced = [k for k, x in enumerate(args) if _traced(x)]
        if not traced:
            return f_raw(*args, **kwargs)
        return _record(f_wrapped, args, kwargs, traced)

    f_wrapped.fun = f_raw
    f_wrapped._is_autograd_primitive = True
    return f_wrapped


def notrace_primitive(f_raw):
    """f_raw called on the plain numbers of its positional arguments: its
    result is a constant to every derivative (shapes, types, decisions)."""
    @functools.wraps(f_raw)
    def f_wrapped(*args, **kwargs):
        return f_raw(*[_plain(x) for x in args], **kwargs)
    f_wrapped.fun = f_raw
    return f_wrapped


# -- one call of a primitive on traced arguments ---------------------------------

class _Layout:
    """Where the traced arguments go in the op's inputs.  A custom op takes
    at most two traced inputs, so three or more travel as one flat vector
    (a concatenation on the tape, whose derivative splits the cotangent)."""

    def __init__(self, args, traced):
        self.args = [_plain(x) for x in args]
        self.traced = traced
        self.shapes = [np.shape(self.args[k]) for k in traced]
        self.packed = len(traced) > 2
        if self.packed:
            pieces = [args[k] if isinstance(args[k], _array.Array)
                      else _array.stack([args[k]]) for k in traced]
            self.inputs = [_array.concatenate([p.reshape((-1,)) for p in pieces])]
            self.sizes = [int(np.prod(s)) for s in self.shapes]
        else:
            self.inputs = [args[k] for k in traced]

    def per_argnum(self, values):
        """The op's input values (or tangents) -> one per traced argument."""
        if not self.packed:
            return list(values)
        flat, out, at = values[0], [], 0
        for shape, n in zip(self.shapes, self.sizes):
            part = np.reshape(flat[at:at + n], shape)
            out.append(float(part) if shape == () else part)
            at += n
        return out

    def full_args(self, values):
        args = list(self.args)
        for k, v in zip(self.traced, self.per_argnum(values)):
            args[k] = v
        return args

    def op_cotangents(self, cts):
        """One cotangent per traced argument -> one per op input."""
        if not self.packed:
            return cts
        return [np.concatenate([np.reshape(ct, -1) for ct in cts])]


def _record(f, args, kwargs, traced):
    f_raw, name = f.fun, _name(f.fun)
    layout = _Layout(args, traced)

    def forward(*values):
        out = f_raw(*layout.full_args(values), **kwargs)
        if isinstance(out, (list, tuple, dict)):
            raise TypeError(f"primitive {name} returned a {type(out).__name__}; "
                            "a primitive called on traced values must return "
                            "one float or array")
        return out
    forward.__name__ = name

    def vjp(g, ans, *values):
        full = layout.full_args(values)
        rule = primitive_vjps.get(f)
        if rule is None:
            raise _undefined(name, "VJP", traced, "defvjp")
        if np.ndim(g) == 0 and not _traced(g):
            g = float(g)          # (a traced one is a derivative's, nested)
        cts = list(rule(tuple(traced), ans, full, kwargs)(g))
        if len(cts) != len(traced):
            raise ValueError(f"the VJP of {name} gave {len(cts)} cotangents for "
                             f"arguments {', '.join(map(str, traced))}")
        return layout.op_cotangents([_checked(ct, name, k, shape) for ct, k, shape
                                     in zip(cts, traced, layout.shapes)])

    def jvp(tangents, ans, *values):
        full = layout.full_args(values)
        per = layout.per_argnum([np.zeros(np.shape(v)) if t is None else t
                                 for t, v in zip(tangents, values)])
        # a tangent that is zero adds nothing (each rule is linear in it):
        # constants need no rule
        moving = [(k, t) for k, t in zip(traced, per)
                  if _traced(t) or np.any(t)]
        if not moving:
            return np.zeros(np.shape(ans))
        rule = primitive_jvps.get(f)
        if rule is None:
            raise _undefined(name, "JVP", [k for k, _ in moving], "defjvp")
        argnums, gs = zip(*moving)
        out = rule(argnums, list(gs), ans, full, kwargs)
        if np.shape(ans) != () and np.ndim(out) == 0:
            return out * np.ones(np.shape(ans))
        return out

    return custom_op(forward, vjp, jvp)(*layout.inputs)


def _checked(ct, name, k, shape):
    """A rule's cotangent for argument k: real numbers of the argument's
    shape (a broadcast one would be summed wrongly by nobody)."""
    if ct is None:
        raise TypeError(f"the VJP of {name} for argument {k} returned None")
    if np.shape(ct) != shape:
        raise ValueError(f"the VJP of {name} for argument {k} has shape "
                         f"{np.shape(ct)}, the argument {shape}")
    return ct


def _undefined(name, kind, argnums, how):
    """The error for a derivative no rule covers (never a zero)."""
    which = ", ".join(map(str, argnums))
    return NotImplementedError(
        f"{kind} of {name} with respect to argument"
        f"{'' if len(argnums) == 1 else 's'} {which} is not defined (give "
        f"it with {how})")


# -- registering rules -------------------------------------------------------------

def _raw(fun, who):
    """The function a primitive wraps (the rules reach fun through it, not
    through the primitive: see primitive_vjps)."""
    if not getattr(fun, "_is_autograd_primitive", False):
        raise TypeError(f"{who} needs a function made by primitive(), "
                        f"got {_name(fun)}")
    return fun.fun


def _zero_like(x):
    return 0.0 if np.ndim(x) == 0 else np.zeros(np.shape(x))


def _per_argnum(fun, makers, kwargs, who):
    """{argnum: rule} from the rules and the keyword argnums (autograd's
    only keyword; any other is a mistake, not ignored)."""
    argnums = kwargs.pop("argnums", None)
    if kwargs:
        raise TypeError(f"{who}() got an unexpected keyword argument "
                        f"{next(iter(kwargs))!r}")
    argnums = range(len(makers)) if argnums is None else tuple(argnums)
    table = dict(zip(argnums, makers))
    for k, maker in table.items():
        if maker is not None and maker != "same" and not callable(maker):
            raise TypeError(f"{who}({_name(fun)}): the rule for argument {k} "
                            f"is {maker!r}, not a function or None")
    return table


def defvjp(fun, *vjpmakers, **kwargs):
    """vjpmakers[i](ans, *args, **kwargs) -> vjp for argument argnums[i]
    (the keyword argnums defaults to 0, 1, ...); None: that argument has no
    derivative.  Replaces the primitive's earlier VJP rules."""
    name = _name(_raw(fun, "defvjp"))
    table = _per_argnum(fun, vjpmakers, kwargs, "defvjp")
    if "same" in table.values():
        raise TypeError(f"defvjp({name}): 'same' is a JVP rule")

    def joint(argnums, ans, args, kwargs):
        vjps = []
        for k in argnums:
            if k not in table:
                raise _undefined(name, "VJP", [k], "defvjp")
            maker = table[k]
            zero = _zero_like(args[k])
            vjps.append((lambda g, z=zero: z) if maker is None
                        else maker(ans, *args, **kwargs))
        return lambda g: [vjp(g) for vjp in vjps]
    primitive_vjps[fun] = joint


def defvjp_argnum(fun, vjpmaker):
    """vjpmaker(argnum, ans, args, kwargs) -> vjp for that argument."""
    _raw(fun, "defvjp_argnum")

    def joint(argnums, ans, args, kwargs):
        vjps = [vjpmaker(k, ans, args, kwargs) for k in argnums]
        return lambda g: [vjp(g) for vjp in vjps]
    primitive_vjps[fun] = joint


def defvjp_argnums(fun, vjpmaker):
    """vjpmaker(argnums, ans, args, kwargs) -> (g -> one cotangent per
    argnum)."""
    _raw(fun, "defvjp_argnums")
    primitive_vjps[fun] = vjpmaker


def defjvp(fun, *jvpfuns, **kwargs):
    """jvpfuns[i](g, ans, *args, **kwargs) -> the output's tangent for a
    tangent g of argument argnums[i] (the keyword argnums defaults to 0, 1,
    ...); None: no derivative; 'same': fun itself applied with g in the
    argument's place (fun is linear in it)."""
    raw = _raw(fun, "defjvp")
    name = _name(raw)
    table = _per_argnum(fun, jvpfuns, kwargs, "defjvp")

    def one(k, g, ans, args, kwargs):
        if k not in table:
            raise _undefined(name, "JVP", [k], "defjvp")
        rule = table[k]
        if rule is None:
            return _zero_like(ans)
        if rule == "same":
            return raw(*_replaced(args, k, g), **kwargs)
        return rule(g, ans, *args, **kwargs)

    primitive_jvps[fun] = lambda argnums, gs, ans, args, kwargs: _summed(
        one(k, g, ans, args, kwargs) for k, g in zip(argnums, gs))


def defjvp_argnum(fun, jvpmaker):
    """jvpmaker(argnum, g, ans, args, kwargs) -> the output's tangent."""
    _raw(fun, "defjvp_argnum")
    primitive_jvps[fun] = lambda argnums, gs, ans, args, kwargs: _summed(
        jvpmaker(k, g, ans, args, kwargs) for k, g in zip(argnums, gs))


def defjvp_argnums(fun, jvpmaker):
    """jvpmaker(argnums, gs, ans, args, kwargs) -> the output's tangent."""
    _raw(fun, "defjvp_argnums")
    primitive_jvps[fun] = jvpmaker


def def_linear(fun):
    """fun is linear in each of its arguments: its JVPs are fun itself."""
    raw = _raw(fun, "def_linear")
    primitive_jvps[fun] = lambda argnums, gs, ans, args, kwargs: _summed(
        raw(*_replaced(args, k, g), **kwargs) for k, g in zip(argnums, gs))


def _replaced(args, k, value):
    args = list(args)
    args[k] = value
    return args


def _summed(parts):
    total = None
    for p in parts:
        total = p if total is None else total + p
    return total
