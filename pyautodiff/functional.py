"""The functional API: derivatives of plain Python/NumPy functions.

Every transform here is a few lines over one trace and the tape's sweeps:

    grad, value_and_grad, vjp   trace, then a reverse sweep
    jvp, jacobian (tall)        trace, then tangent sweeps
    hvp, hessian                trace, then tangent + second-order sweeps
                                (exact: forward over reverse, in C)

A trace runs ``f`` once on a tape of its own, with a leaf for every float
and ndarray inside the differentiated arguments (``argnum``, an int or a
tuple); results come back in the arguments' structure.  ``grad`` of a
function that itself calls ``grad`` works to second order: the inner
gradient is recorded on the outer tape as one op whose derivative is a
Hessian-vector product.
"""
import itertools

import numpy as np

from . import _core
from .array import Array
from .extern import ExternRule, record_extern
from .pytree import as_leaf, flatten, unflatten
from .tape import ADJ, DADJ, TAN, Tape, state
from .value import Value


def _argnums(argnum):
    return (argnum,) if isinstance(argnum, int) else tuple(argnum)


def _pick(argnum, results):
    """One result per argnum: the result itself for an int argnum."""
    return results[0] if isinstance(argnum, int) else tuple(results)


class Trace:
    """f run once at args on a tape of its own, with a leaf (a Value or an
    Array) for every float and ndarray in the arguments argnums."""

    def __init__(self, f, args, kwargs, argnums, name):
        if not callable(f):
            raise TypeError(f"{name}: {f!r} is not callable")
        for k in argnums:
            if not -len(args) <= k < len(args):
                raise TypeError(f"{name}: argnum {k} but the function got "
                                f"{len(args)} positional arguments")
        self.name = name
        self.argnums = [k % len(args) for k in argnums]
        self.tape = Tape()
        self.structures = []     # per argnum
        self.leaves = []         # per argnum: its leaf nodes
        self.outer = []          # leaves standing for enclosing tapes' nodes
        call_args = list(args)
        saved_no_grad, state.no_grad = state.no_grad, 0
        try:
            with self.tape.recording():
                for k in self.argnums:
                    values, st = flatten(args[k], f"{name}: argument {k}")
                    nodes = [self._leaf(kind, v)
                             for kind, v in zip(st.kinds, values)]
                    self.structures.append(st)
                    self.leaves.append(nodes)
                    call_args[k] = unflatten(st, nodes)
                self.out = f(*call_args, **kwargs)
        finally:
            state.no_grad = saved_no_grad
            state.refresh()

    def _leaf(self, kind, v):
        if isinstance(v, (Value, Array)):       # a derivative inside another
            self.outer.append(v)
            v = v._d
        return Value(float(v)) if kind == "float" else Array(v)

    def release(self):
        self.tape.release()

    # -- the output ----------------------------------------------------------

    def output_entry(self):
        """The output's entry on this tape, or None for a constant output."""
        out = self.out
        if isinstance(out, (Value, Array)) and out._t is self.tape:
            return out._i
        return None

    def output_value(self):
        out = self.out
        if isinstance(out, Value):
            return out.data
        if isinstance(out, Array):
            return out.data.copy()
        if isinstance(out, (list, tuple, dict)):
            raise TypeError(f"{self.name}: the function returned a "
                            f"{type(out).__name__}; it must return one float "
                            "or array")
        return np.asarray(out, dtype=np.float64) if np.ndim(out) else float(out)

    def scalar_output(self):
        """(entry or None, value) of a function that must return a scalar."""
        value = self.output_value()
        if np.size(value) != 1:
            raise TypeError(f"{self.name} needs a function with a scalar "
                            f"output; this one returned shape "
                            f"{np.shape(value)} (use jacobian or vjp)")
        return self.output_entry(), float(np.reshape(value, ()))

    # -- the leaves ------------------------------------------------------------

    def all_leaves(self):
        return list(itertools.chain.from_iterable(self.leaves))

    def read(self, reader):
        """Per argnum, reader(node) for each leaf, in its argument's shape."""
        return [unflatten(st, [as_leaf(kind, reader(node))
                               for kind, node in zip(st.kinds, nodes)])
                for st, nodes in zip(self.structures, self.leaves)]

    def gradients(self):
        return self.read(lambda node: node.grad)

    def zero_gradients(self):
        for node in self.all_leaves():
            node.grad = 0.0

    def scratch_of(self, node, which):
        view = self.tape.scratch(node._i, which)
        return np.zeros(np.shape(node._d)) if view is None else view.copy()

    def directions(self, vectors):
        """Per leaf, the tangent seed from vectors (one per argnum, in its
        argument's structure); ValueError on a structure or shape mismatch."""
        seeds = []
        for k, st, v in zip(self.argnums, self.structures, vectors):
            values, vst = flatten(v, f"{self.name}: the vector for argument {k}")
            if vst.node != st.node or vst.shapes != st.shapes:
                raise ValueError(f"{self.name}: the vector for argument {k} "
                                 f"has shapes {vst.shapes}, the argument "
                                 f"{st.shapes}")
            seeds += [np.asarray(x._d if isinstance(x, (Value, Array)) else x,
                                 dtype=np.float64) for x in values]
        return seeds

    def tangent(self, seeds):
        nodes = self.all_leaves()
        self.tape.tangent([n._i for n in nodes], seeds)

    def reverse(self, idx, seed):
        self.zero_gradients()
        self.tape.backward([idx], [seed], _core.SWEEP_ACCUM)


def _traced(f, args, kwargs, argnum, name):
    return Trace(f, args, kwargs, _argnums(argnum), name)


# -- reverse mode ------------------------------------------------------------

def value_and_grad(f, argnum=0):
    """g(*args) -> (f(*args), gradient of f with respect to args[argnum])."""
    def value_and_grad_f(*args, **kwargs):
        tr = _traced(f, args, kwargs, argnum, "value_and_grad")
        try:
            idx, value = tr.scalar_output()
            if idx is not None:
                tr.tape.backward([idx], [1.0], _core.SWEEP_ACCUM)
            grads = _pick(argnum, tr.gradients())
            if tr.outer:
                grads = _nested(f, args, kwargs, argnum, tr, grads)
            return value, grads
        finally:
            tr.release()
    value_and_grad_f.__name__ = f"value_and_grad_{getattr(f, '__name__', 'f')}"
    return value_and_grad_f


def grad(f, argnum=0):
    """The gradient of a scalar function f with respect to args[argnum]
    (an int or a tuple), in the arguments' types and shapes."""
    vg = value_and_grad(f, argnum)

    def grad_f(*args, **kwargs):
        return vg(*args, **kwargs)[1]
    grad_f.__name__ = f"grad_{getattr(f, '__name__', 'f')}"
    return grad_f


def vjp(f, argnum=0):
    """g(*args) -> (f(*args), vjp_fn): vjp_fn(v) is v times the Jacobian of
    f at args (v in the output's shape), in the argument's shape."""
    def vjp_f(*args, **kwargs):
        tr = _traced(f, args, kwargs, argnum, "vjp")
        value = tr.output_value()
        idx = tr.output_entry()

        def vjp_fn(v):
            seed = np.asarray(v._d if isinstance(v, (Value, Array)) else v,
                              dtype=np.float64)
            if seed.shape != np.shape(value):
                raise ValueError(f"vjp: the cotangent has shape {seed.shape}, "
                                 f"the output {np.shape(value)}")
            if idx is None:
                return _pick(argnum, tr.read(lambda n: np.zeros(np.shape(n._d))))
            tr.reverse(idx, seed if seed.ndim else float(seed))
            return _pick(argnum, tr.gradients())
        return value, vjp_fn
    return vjp_f


# -- forward mode --------------------------------------------------------------

def _split_vector(args, name):
    if not args:
        raise TypeError(f"{name} takes the function's arguments and then "
                        "the vector")
    return args[:-1], args[-1]


def jvp(f, argnum=0):
    """g(*args, v) -> (f(*args), J v): the Jacobian of f at args times v
    (v in the shape of args[argnum]; a tuple of them for a tuple argnum),
    by one forward-mode sweep."""
    def jvp_f(*args, **kwargs):
        args, v = _split_vector(args, "jvp")
        tr = _traced(f, args, kwargs, argnum, "jvp")
        try:
            vectors = [v] if isinstance(argnum, int) else list(v)
            tr.tangent(tr.directions(vectors))
            value = tr.output_value()
            idx = tr.output_entry()
            if idx is None:
                return value, as_leaf("float" if np.ndim(value) == 0 else "array",
                                      np.zeros(np.shape(value)))
            tangent = tr.scratch_of(tr.out, TAN)
            return value, float(tangent) if np.ndim(value) == 0 else tangent
        finally:
            tr.release()
    return jvp_f


def hvp(f, argnum=0):
    """g(*args, v) -> H v: the exact Hessian of scalar f at args times v
    (one tangent sweep and one second-order sweep)."""
    def hvp_f(*args, **kwargs):
        args, v = _split_vector(args, "hvp")
        tr = _traced(f, args, kwargs, argnum, "hvp")
        try:
            idx, _ = tr.scalar_output()
            vectors = [v] if isinstance(argnum, int) else list(v)
            seeds = tr.directions(vectors)
            if idx is None:
                return _pick(argnum, tr.read(lambda n: np.zeros(np.shape(n._d))))
            tr.tangent(seeds)
            tr.tape.second_order([idx], [1.0])
            return _pick(argnum, tr.read(lambda n: tr.scratch_of(n, DADJ)))
        finally:
            tr.release()
    return hvp_f


# -- whole matrices ------------------------------------------------------------

def _single_leaf(tr, what):
    if len(tr.argnums) != 1 or tr.structures[0].node is not None:
        raise TypeError(f"{what}: the argument must be one float or ndarray "
                        "(use jvp, vjp or hvp for nested arguments)")
    return tr.leaves[0][0], tr.structures[0].shapes[0]


def jacobian(f, argnum=0):
    """The Jacobian of f with respect to args[argnum] (a float or ndarray),
    of shape f(x).shape + x.shape: by reverse sweeps, one per output
    element, or by tangent sweeps, one per input element, whichever are
    fewer."""
    def jacobian_f(*args, **kwargs):
        tr = _traced(f, args, kwargs, argnum, "jacobian")
        try:
            leaf, xshape = _single_leaf(tr, "jacobian")
            value = tr.output_value()
            oshape = np.shape(value)
            m, n = int(np.prod(oshape)), int(np.prod(xshape))
            jac = np.zeros((m, n))
            idx = tr.output_entry()
            if idx is not None and m <= n:
                for r in range(m):
                    seed = np.zeros(m)
                    seed[r] = 1.0
                    tr.reverse(idx, seed.reshape(oshape) if oshape else 1.0)
                    jac[r] = np.reshape(leaf.grad, -1)
            elif idx is not None:
                for k in range(n):
                    seed = np.zeros(n)
                    seed[k] = 1.0
                    tr.tangent([seed.reshape(xshape)])
                    jac[:, k] = np.reshape(tr.scratch_of(tr.out, TAN), -1)
            jac = jac.reshape(oshape + xshape)
            return float(jac) if jac.ndim == 0 else jac
        finally:
            tr.release()
    return jacobian_f


def hessian(f, argnum=0):
    """The exact Hessian of scalar f with respect to args[argnum] (a float
    or ndarray), of shape x.shape + x.shape: one Hessian-vector product per
    input element, each a tangent and a second-order sweep in C."""
    def hessian_f(*args, **kwargs):
        tr = _traced(f, args, kwargs, argnum, "hessian")
        try:
            leaf, xshape = _single_leaf(tr, "hessian")
            idx, _ = tr.scalar_output()
            n = int(np.prod(xshape))
            hess = np.zeros((n, n))
            if idx is not None:
                for k in range(n):
                    seed = np.zeros(n)
                    seed[k] = 1.0
                    tr.tangent([seed.reshape(xshape)])
                    tr.tape.second_order([idx], [1.0])
                    hess[:, k] = np.reshape(tr.scratch_of(leaf, DADJ), -1)
            hess = hess.reshape(xshape + xshape)
            return float(hess) if hess.ndim == 0 else hess
        finally:
            tr.release()
    return hessian_f


# -- a gradient inside a gradient ------------------------------------------------

def _nested(f, args, kwargs, argnum, tr, grads):
    """The gradient of an inner grad() whose argument is a Value or Array of
    an enclosing tape: record it there as one op whose derivative is the
    Hessian-vector product, so the outer derivative is exact."""
    x = args[argnum] if isinstance(argnum, int) else None
    if x is None or not isinstance(x, (Value, Array)) or len(tr.outer) != 1 \
            or tr.tape.imports:
        raise NotImplementedError(
            "a derivative of a derivative needs the inner function's "
            "argument to be one float or array, and the inner function must "
            "not use other variables of the outer derivative")

    def at(xv):
        return [xv if k == argnum else a for k, a in enumerate(args)]

    def forward(xv):
        return grad(f, argnum)(*at(xv), **kwargs)

    def vjp_rule(g, out, xv):
        return (hvp(f, argnum)(*at(xv), g, **kwargs),)

    def jvp_rule(tangents, out, xv):
        return hvp(f, argnum)(*at(xv), tangents[0], **kwargs)

    rule = ExternRule(forward, vjp_rule, f"grad of {getattr(f, '__name__', 'f')}",
                      jvp=jvp_rule)
    return record_extern(rule, [x], grads)


# -- checking ------------------------------------------------------------------

def check_grad(f, *args, eps=1e-6, rtol=1e-5, atol=1e-8):
    """Compare the gradient of scalar f at args (with respect to every
    argument) with central differences; AssertionError naming the worst
    entry if any differs by more than atol + rtol * |numeric|."""
    argnums = tuple(range(len(args)))
    grads = grad(f, argnums)(*args)
    worst = None
    for k in argnums:
        values, st = flatten(args[k], f"check_grad: argument {k}")
        g_leaves, _ = flatten(grads[k])
        for leaf_no, (x, g) in enumerate(zip(values, g_leaves)):
            base = np.array(x, dtype=np.float64)
            g = np.asarray(g, dtype=np.float64)
            for pos in np.ndindex(base.shape):
                def at(delta):
                    moved = base.copy()
                    moved[pos] += delta
                    leaves = list(values)
                    leaves[leaf_no] = float(moved) if st.kinds[leaf_no] == "float" \
                        else moved
                    call = list(args)
                    call[k] = unflatten(st, leaves)
                    return float(np.reshape(_plain_value(f(*call)), ()))
                numeric = (at(eps) - at(-eps)) / (2 * eps)
                analytic = float(g[pos])
                excess = abs(analytic - numeric) - (atol + rtol * abs(numeric))
                if excess > 0 and (worst is None or excess > worst[0]):
                    where = f"argument {k}" + (f", leaf {leaf_no}" if len(values) > 1
                                               else "") + (f", index {pos}" if pos else "")
                    worst = (excess, where, analytic, numeric)
    if worst is not None:
        _, where, analytic, numeric = worst
        raise AssertionError(f"check_grad: {where}: gradient {analytic!r}, "
                             f"central difference {numeric!r} (difference "
                             f"{abs(analytic - numeric):.3g})")


def _plain_value(out):
    if isinstance(out, Value):
        return out.data
    if isinstance(out, Array):
        return out.data
    return out
